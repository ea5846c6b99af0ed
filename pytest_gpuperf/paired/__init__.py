"""The paired stage (stage 2 of the gate): the figures the first stage left inconclusive or
found changed, re-measured in rounds against a build of the baseline's commit on this
machine and judged on the paired differences. Its modules, in the order a run meets them:
which figures and what the run's budget affords (`plan`), the base build's check against
the baseline's sessions (`basecheck`), the rounds in long-lived processes of two builds
(`rounds`, with the plugin each process runs, `worker`), the looks that measure them
(`looks`), the figures they give (`figures`), their judge (`judge`), a shift of the
environment (`envshift`), and the stage as a run drives it, writing its verdicts
(`stage`)."""
