"""Judging, pure (no I/O): the verdict rule (`verdict`), the noise model (`noise`), the
run-wide gate (`judge`, with `offsets` for class offsets and lines), the busy-host rule
(`busy`), merging a confirmation (`confirmation`), failure lines (`explain`) and A/B rounds
(`paired`)."""
