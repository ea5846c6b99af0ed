"""Evidence for the measurement engine on a real GPU (run on the H200; see
docs/performance.md). Prints a short table; writes JSON to the path given as argv[1].

1. accuracy: the engine behind `gpu_benchmark` vs a plain CUDA-event loop vs triton's
   do_bench, on an 8192^3 bf16 matmul and a 1 GiB fp32->bf16 cast; pytest-benchmark's
   default timer (perf_counter, no synchronisation) and our synchronised timer for contrast
2. cost: wall time the engine spends per benchmark vs a fixed 100-repeat loop
3. overhead: a ~10 us kernel timed by the engine vs CUDA-graph replay of 1000 launches
"""

import json
import statistics
import sys
import time

import torch

from pytest_gpuperf.core.settings import resolve
from pytest_gpuperf.measure.clock import synchronized_perf_counter
from pytest_gpuperf.measure.timing import measure


def event_loop(fn, calls=100, reps=5):
    for _ in range(10):
        fn()
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / 1e3 / calls)
    return statistics.median(out)


def perf_counter_min(fn, timer, calls=100):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(calls):
        t0 = timer()
        fn()
        best = min(best, timer() - t0)
    torch.cuda.synchronize()
    return best


def graph_per_call(fn, calls=1000):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3 / calls)
    return statistics.median(ts)


def engine(fn, work, unit, **kw):
    cfg = resolve("cuda", kw)
    t0 = time.perf_counter()
    r = measure(fn, work=work, unit=unit, cfg=cfg, backend="cuda")
    return r, time.perf_counter() - t0


def do_bench(fn):
    import triton.testing

    return triton.testing.do_bench(fn, warmup=100, rep=500, return_mode="median") / 1e3


def heat(fn, seconds=2.0):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()


def accuracy(name, fn, work, unit, rounds=3):
    """Interleave the engine with a plain event loop and do_bench, after heating the GPU to
    its steady (power-capped) state, so that all three see the same clocks."""
    heat(fn)
    per_call = event_loop(fn, calls=10, reps=1)
    calls = max(10, int(0.5 / per_call))
    rows = []
    for _ in range(rounds):
        before = event_loop(fn, calls=calls, reps=1)
        r, wall = engine(fn, work, unit)
        after = event_loop(fn, calls=calls, reps=1)
        db = do_bench(fn)
        rows.append(
            dict(
                engine=r.time.median,
                events=(before + after) / 2,
                do_bench=db,
                wall=wall,
                n=r.time.n,
                stop=r.stop_reason,
                busy=r.busy_fraction,
                calls=r.calls_total + r.warmup_calls,
                per_call=r.time.median,
                ci=(r.time.ci_low, r.time.ci_high),
                throttled=r.throttled,
                clock=(r.telemetry or {}).get("sm_clock_median_mhz"),
                power=(r.telemetry or {}).get("power_mean_w"),
                j_per_unit=r.energy_per_unit_j,
                headline=r.headline(),
            )
        )
    unsynced = perf_counter_min(fn, time.perf_counter)
    synced = perf_counter_min(fn, synchronized_perf_counter)
    return dict(name=name, rounds=rows, pb_default_min=unsynced, pb_synced_min=synced)


def overhead():
    x = torch.randn(6 << 20, device="cuda")  # 24 MiB read + 24 MiB written: ~11 us
    fn = lambda: x.mul_(1.0)  # noqa: E731
    work = x.nbytes * 2
    heat(fn, 1.0)
    g = graph_per_call(fn)
    rows = []
    for _ in range(3):
        plain = event_loop(fn, calls=2000, reps=1)
        eng, _ = engine(fn, work, "bytes")
        one, _ = engine(fn, work, "bytes", min_sample_time=1e-7)
        graph_eng, _ = engine(fn, work, "bytes", cuda_graph=True)
        rows.append(
            dict(
                plain=plain,
                engine=eng.time.median,
                k=eng.calls_per_sample,
                one_per_sample=one.time.median,
                engine_graph=graph_eng.time.median,
                k_graph=graph_eng.calls_per_sample,
                busy=eng.busy_fraction,
                graph_busy=graph_eng.busy_fraction,
            )
        )
    return dict(graph_per_call=g, rounds=rows)


def main():
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn((1 << 30) // 4, device="cuda")
    y = torch.empty_like(x, dtype=torch.bfloat16)
    out["accuracy"] = [
        accuracy("matmul bf16 8192^3", lambda: torch.matmul(a, b), 2 * n**3, "flop"),
        accuracy("cast fp32->bf16 1 GiB", lambda: y.copy_(x), x.numel() * 6, "bytes"),
    ]
    out["overhead"] = overhead()
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=2, default=str)
    for case in out["accuracy"]:
        print(
            case["name"],
            f"pytest-benchmark default timer min {case['pb_default_min'] * 1e3:.4f} ms,"
            f" synchronised timer min {case['pb_synced_min'] * 1e3:.4f} ms",
        )
        for r in case["rounds"]:
            print(
                f"  engine {r['engine'] * 1e3:.4f} ms  events {r['events'] * 1e3:.4f} ms "
                f"({(r['engine'] / r['events'] - 1) * 100:+.2f}%)  do_bench {r['do_bench'] * 1e3:.4f} ms "
                f"({(r['engine'] / r['do_bench'] - 1) * 100:+.2f}%)  n={r['n']} calls={r['calls']} "
                f"wall={r['wall']:.2f}s 100x={100 * r['events']:.3f}s stop={r['stop']} busy={r['busy']:.2f} "
                f"clock={r['clock']} MHz power={r['power']} W throttled={r['throttled']} J/unit={r['j_per_unit']}"
            )
    o = out["overhead"]
    print(f"~11 us kernel: CUDA-graph replay {o['graph_per_call'] * 1e6:.2f} us per kernel")
    for r in o["rounds"]:
        print(
            f"  plain event loop {r['plain'] * 1e6:.2f} us/call; engine {r['engine'] * 1e6:.2f} us/call "
            f"(k={r['k']}, busy {r['busy']:.2f}); engine with one call per sample "
            f"{r['one_per_sample'] * 1e6:.2f} us; engine cuda_graph {r['engine_graph'] * 1e6:.2f} us/call "
            f"(k={r['k_graph']}, busy {r['graph_busy']:.2f})"
        )


if __name__ == "__main__":
    main()
