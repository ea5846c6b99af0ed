"""Baselines, one owner per job: `store` (the file on disk: find, read, lock, write),
`schema` (the file's format: validation, merging, what a result saves), `history`
(sessions and their ids, comparable environments), `noise` (noise classes, per-session
class offsets, pooled spread), `judge` (verdicts of a whole run, class-wide shifts),
`busy` (the busy-host rule judge applies), `confirmation` (a regression re-measured),
`explain` (failure lines, missing entries), `paired` (A/B rounds) and `run` (one pytest
run's baseline: find, judge, save). pytest, `gpuperf compare` and `gpuperf ab` call these;
nothing else judges. No pytest imports here."""
