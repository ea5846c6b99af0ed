"""Baselines, one owner per job: `store` (the file: read, validate, lock, write, and what a
result saves into it), `history` (sessions and their ids, comparable environments),
`noise` (noise classes, per-session class offsets, pooled spread), `judge` (verdicts of a
whole run, class-wide shifts, confirmation, failure lines) and `run` (one pytest run's
baseline: find, judge, save). pytest, `gpuperf compare` and `gpuperf ab` call these;
nothing else judges. No pytest imports here."""
