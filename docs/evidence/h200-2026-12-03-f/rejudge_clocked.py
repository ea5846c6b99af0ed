"""Runs 3 and 4's paired stages (and the own file's 5% runs at d864213) judged again on
the CPU with the paired stage's clock rule of 6380181 (stage2.clocked: the time decides,
the per-clock figure only vetoes a change). Those runs' JSON keep each re-measured
throughput's rounds of both builds but not its per-clock twin's (kept since 0808363), so
this judges the time alone: under the new rule that is the verdict wherever the time is
not changed (a change could still be vetoed by cycles that decidedly disagree). Each look
as the run judged it: the figures with their rounds (both looks' where a second look
ran), pooled per class over the figures of the part that have the same rounds count, at
the confidence each figure's paired record names, by stage2.judge_paired itself (its
pool, per-process screen and interval). From the repository root:
python docs/evidence/h200-2026-12-03-f/rejudge_clocked.py"""

import json
import math
from pathlib import Path

from pytest_gpuperf.core.figures import metrics_of
from pytest_gpuperf.core.results import Result
from pytest_gpuperf.judging.stage2 import PairedFigure, judge_paired

E = Path(__file__).parent.parent
PARTS = {
    "run 3": ["h200-2026-12-03-d/a/s/compare-finetune-135538.json",
              "h200-2026-12-03-d/b/s/compare-finetune-140227.json",
              "h200-2026-12-03-d/c/s/compare-generate-140856.json",
              "h200-2026-12-03-d/a/s/compare-dtype-135843.json"],
    "run 4": ["h200-2026-12-03-e/a/s/compare-finetune-161421.json",
              "h200-2026-12-03-e/c/s/compare-finetune-163237.json",
              "h200-2026-12-03-e/c/s/compare-generate-163551.json",
              "h200-2026-12-03-e/b/s/compare-dtype-162130.json"],
    "own 5%": ["h200-2026-12-03-e/own/c1/slow5-1.json", "h200-2026-12-03-e/own/c2/slow5-2.json",
               "h200-2026-12-03-e/own/c2/slow5-3.json"],
}  # fmt: skip
for run, files in PARTS.items():
    for f in files:
        data = json.loads((E / f).read_text())
        figs, rec = [], {}
        for d in data["results"]:
            r = Result.from_dict(d)
            for metric, v in (r.verdicts or {}).items():
                p = v.get("paired")
                if not p or not p.get("base_rounds") or "_per_clock" in metric:
                    continue
                cls = (metrics_of(r).get(metric) or {}).get("noise_class") or "?"
                fig = PairedFigure(r.key, metric, cls, r.higher_is_better,
                                   tuple(p["base_rounds"]), tuple(p["head_rounds"]),
                                   tuple(p["round_pairs"]))  # fmt: skip
                figs.append(fig)
                rec[(r.key, metric)] = (v, p, r.bound)
        # one look's figures: the same rounds and the same confidence (the run's record)
        looks: dict[tuple[int, float], list[PairedFigure]] = {}
        for fig in figs:
            looks.setdefault((len(fig.base), rec[(fig.key, fig.metric)][1]["confidence"]),
                             []).append(fig)  # fmt: skip
        for (_, conf), group in looks.items():
            tol = {fig.key: rec[(fig.key, fig.metric)][0]["tolerance"] for fig in group}
            # the look's own rule (pool, per-process screen, interval) at the recorded
            # confidence: judge_paired with a count of 1 judges each figure at 1 - its share
            verdicts, _ = judge_paired(group, tol, 1 - conf, count=1)
            for fig in group:
                v, _, bound = rec[(fig.key, fig.metric)]
                new = verdicts[(fig.key, fig.metric)]
                if new.change is None or new.uncertainty is None:
                    print(f"{run} {Path(f).name[:16]:16} {fig.key.split('::')[-1][:44]:44} "
                          f"{fig.metric[:18]:18} written {v['status']:12} time alone "
                          f"{new.status}: {new.reason}")  # fmt: skip
                    continue
                name = fig.key.split("::")[-1][:44]
                print(f"{run} {Path(f).name[:16]:16} {name:44} {fig.metric[:18]:18} "
                      f"{bound or '-':8} written {v['status']:12} time alone {new.status:12} "
                      f"{new.change * 100:+.2f}% ±{math.expm1(new.uncertainty) * 100:.2f}% "
                      f"({new.basis.split('(')[-1].rstrip(')')}, "
                      f"{len(fig.base)} rounds)")  # fmt: skip
