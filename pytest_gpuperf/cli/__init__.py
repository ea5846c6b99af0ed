"""The `gpuperf` command: compare and report (`main`), A/B (`ab`, with its base worktree in
`abtree` and the plugin each round runs in `abprobe`)."""
