"""The `gpuperf` command: compare and report (`main`), A/B (`ab`; its base worktree and
rounds' probe are fresh/abtree and fresh/abprobe, shared with the paired stage)."""
