"""One fresh process: the README example's 256x256 matmul (one torch thread), 400 samples
of 12 calls; per sample its wall time, its run-queue wait (schedstat) and its thread CPU
time. Prints one JSON line of candidate figures (us a call)."""
import json, os, statistics, time
import torch
torch.set_num_threads(1)
a = torch.randn(256, 256)
fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
def wait(): return int(os.pread(fd, 100, 0).split()[1]) / 1e9
K = 12
for _ in range(100): a @ a
W, D, C = [], [], []
for _ in range(400):
    r0 = wait(); t0 = time.perf_counter(); c0 = time.thread_time()
    for _ in range(K): a @ a
    c1 = time.thread_time(); t1 = time.perf_counter(); r1 = wait()
    W.append((t1 - t0) / K); D.append((r1 - r0) / K); C.append((c1 - c0) / K)
q = lambda x, p: sorted(x)[int(p * (len(x) - 1))]
U = [w - d for w, d in zip(W, D)]
ok = [w for w, d in zip(W, D) if d <= 0.01 * w]
us = lambda x: round(x * 1e6, 2)
print(json.dumps({
    "load": os.getloadavg()[0], "kept": len(ok),
    "kept_median": us(statistics.median(ok)) if ok else None,
    "kept_min": us(min(ok)) if ok else None,
    "kept_p10": us(q(ok, 0.1)) if ok else None,
    "unwaited_min": us(min(U)), "unwaited_p10": us(q(U, 0.1)), "unwaited_median": us(q(U, 0.5)),
    "cpu_min": us(min(C)), "cpu_p10": us(q(C, 0.1)), "cpu_median": us(q(C, 0.5)),
    "wall_median": us(q(W, 0.5)),
}), flush=True)
