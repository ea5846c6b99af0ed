"""Probe (a GPU only; not a test): is the kernel time of test_v_sweep[256]'s matmuls drawn per
process, per allocation, or by the card's state? On the H200 a session's figure sat at one of
two levels, 136-143 or 147-150 us per call of 10 matmuls (docs/performance.md, 2026-12-02,
third session). One process here: 4 allocations of the operands in turn (each kept alive, so
each is at a new address), each timed 3 times by the plugin's own profiler pass
(measure/kernels.py), with NVML's SM clock around each pass; one JSON line per pass.

    for i in 1 2 3 4 5 6; do python3 tests/gpu/kernel_levels.py $i; done > levels.jsonl

Levels that change between the allocations of one process: the placement in memory; one
level per process: the process (a library's choice at start); neither: the card's state.
On 2026-12-02 (fourth session) they changed at every allocation (271-308 us for 20 matmuls,
each allocation within 0.2%; docs/performance.md). A second argument tells placement from
values: `values` keeps one allocation and copies new random values into it each step,
`place` allocates anew each step but copies in the same values each time, `both` (the
default) does both, as the first probe did. On 2026-12-02 (fifth session) both moved it:
new values in one allocation sd 1.89%, the same values in new allocations sd 3.28%.
`own` gives each of the 20 matmuls a weight of its own (20 allocations a step, new values):
if the levels of the allocations are independent, one call's sum spreads about sqrt(20)
times less between steps than one shared weight's, and a benchmark written so would need
that many fewer paired rounds."""

from __future__ import annotations

import json
import sys
import time

import pynvml
import torch

from pytest_gpuperf.measure import kernels

CALLS = 20  # as test_v_sweep[256] since 2026-12-02 (third session)


def main(proc: str, mode: str = "both") -> None:
    if mode not in ("both", "values", "place", "own"):
        raise SystemExit(f"mode must be both, values, place or own, not {mode!r}")
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)

    def clock() -> int:
        return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))

    g = torch.Generator(device="cuda").manual_seed(0)
    fixed = (torch.randn(256, 4096, device="cuda", generator=g).to(torch.bfloat16),
             torch.randn(4096, 4096, device="cuda", generator=g).to(torch.bfloat16))  # fmt: skip
    kept = []
    for alloc in range(4):
        if mode == "values" and kept:  # the same storage, new values
            a, w = kept[0]
            a.copy_(torch.randn(256, 4096, device="cuda"))
            w.copy_(torch.randn(4096, 4096, device="cuda"))
        elif mode == "place":  # new storage, the same values
            a, w = fixed[0].clone(), fixed[1].clone()
        else:
            a = torch.randn(256, 4096, device="cuda").to(torch.bfloat16)
            w = torch.randn(4096, 4096, device="cuda").to(torch.bfloat16)
        kept.append((a, w))
        ws = [w] * CALLS
        if mode == "own":  # a weight of its own for each matmul
            ws = [torch.randn(4096, 4096, device="cuda").to(torch.bfloat16) for _ in range(CALLS)]
            kept.append((a, ws))

        def work(a=a, ws=ws) -> None:
            for w_i in ws:
                a @ w_i

        for _ in range(50):
            work()
        torch.cuda.synchronize()
        for rep in range(3):
            c0 = clock()
            traced = kernels.profile_chunks(torch, work, None, 20, 10.0)
            c1 = clock()
            s = kernels.kernel_summary(traced, 1, 0.95) if not isinstance(traced, str) else traced
            line = {"proc": proc, "mode": mode, "alloc": alloc, "rep": rep, "w_ptr_mod_2mib": w.data_ptr() % (2 << 20),
                    "clk0": c0, "clk1": c1, "t": round(time.time(), 2)}  # fmt: skip
            if isinstance(s, str):
                line["error"] = s
            else:
                line.update(kern_us=s.median * 1e6, lo_us=s.ci_low * 1e6, hi_us=s.ci_high * 1e6)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "1", sys.argv[2] if len(sys.argv) > 2 else "both")
