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

from pytest_gpuperf.settings import resolve
from pytest_gpuperf.timing import measure, synchronized_perf_counter


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


def main():
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn((1 << 30) // 4, device="cuda")
    y = torch.empty_like(x, dtype=torch.bfloat16)
    cases = {
        "matmul bf16 8192^3": (lambda: torch.matmul(a, b), 2 * n**3, "flop"),
        "cast fp32->bf16 1 GiB": (lambda: y.copy_(x), x.numel() * 6, "bytes"),
    }
    rows = []
    for name, (fn, work, unit) in cases.items():
        r, wall = engine(fn, work, unit)
        plain = event_loop(fn)
        try:
            import triton.testing

            do_bench = triton.testing.do_bench(fn, return_mode="median") / 1e3
        except Exception as exc:  # pragma: no cover
            do_bench = float("nan")
            print("do_bench failed:", exc)
        unsynced = perf_counter_min(fn, time.perf_counter)
        synced = perf_counter_min(fn, synchronized_perf_counter)
        fixed100 = 100 * plain
        rows.append(
            dict(
                name=name,
                engine_ms=r.time.median * 1e3,
                engine_ci=[r.time.ci_low * 1e3, r.time.ci_high * 1e3],
                event_loop_ms=plain * 1e3,
                do_bench_ms=do_bench * 1e3,
                engine_vs_event_pct=(r.time.median / plain - 1) * 100,
                engine_vs_do_bench_pct=(r.time.median / do_bench - 1) * 100,
                pb_default_timer_min_ms=unsynced * 1e3,
                pb_synced_timer_min_ms=synced * 1e3,
                engine_wall_s=wall,
                engine_samples=r.time.n,
                calls=r.calls_total + r.warmup_calls,
                warmup_calls=r.warmup_calls,
                stop=r.stop_reason,
                fixed100_s=fixed100,
                busy=r.busy_fraction,
                throughput=r.throughput.format(),
                telemetry=r.telemetry,
                energy_per_unit_j=r.energy_per_unit_j,
                notes=r.notes,
            )
        )
    out["accuracy"] = rows

    small = torch.randn(4 << 20, device="cuda")  # 16 MiB: read + write ~ 10 us
    fn = lambda: small.mul_(1.0)  # noqa: E731
    r, wall = engine(fn, small.nbytes * 2, "bytes")
    g = graph_per_call(fn)
    ev = event_loop(fn, calls=1000)
    r1, _ = engine(fn, small.nbytes * 2, "bytes", min_sample_time=1e-6)  # one call per sample
    out["overhead"] = dict(
        kernel_graph_us=g * 1e6,
        event_loop_us=ev * 1e6,
        engine_us=r.time.median * 1e6,
        engine_calls_per_sample=r.calls_per_sample,
        engine_vs_graph_pct=(r.time.median / g - 1) * 100,
        one_call_per_sample_us=r1.time.median * 1e6,
        per_sample_overhead_us=(r1.time.median - g) * 1e6,
        engine_wall_s=wall,
    )
    json.dump(out, open(sys.argv[1], "w"), indent=2, default=str)
    print(
        f"{'case':24} {'engine ms':>10} {'events ms':>10} {'do_bench':>10} {'Δev %':>7} "
        f"{'Δdb %':>7} {'pb-default':>10} {'pb-synced':>10} {'wall s':>7} {'100x s':>7}"
    )
    for row in rows:
        print(
            f"{row['name']:24} {row['engine_ms']:10.4f} {row['event_loop_ms']:10.4f} "
            f"{row['do_bench_ms']:10.4f} {row['engine_vs_event_pct']:7.2f} "
            f"{row['engine_vs_do_bench_pct']:7.2f} {row['pb_default_timer_min_ms']:10.4f} "
            f"{row['pb_synced_timer_min_ms']:10.4f} {row['engine_wall_s']:7.2f} {row['fixed100_s']:7.3f}"
        )
        print(
            "   ",
            row["throughput"],
            "busy",
            row["busy"],
            "stop",
            row["stop"],
            "n",
            row["engine_samples"],
        )
    o = out["overhead"]
    print(
        f"~10us kernel: graph {o['kernel_graph_us']:.2f} us, event loop {o['event_loop_us']:.2f} us, "
        f"engine {o['engine_us']:.2f} us (k={o['engine_calls_per_sample']}, {o['engine_vs_graph_pct']:+.1f}% vs graph), "
        f"one call per sample {o['one_call_per_sample_us']:.2f} us"
    )


if __name__ == "__main__":
    main()
