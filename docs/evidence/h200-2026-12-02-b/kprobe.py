"""Probe: kernel time of 10 bf16 matmuls at batch 256 (test_v_sweep[256]) vs the SM clock
read by NVML around each traced chunk; once cold, then after 3 s of a heavy matmul load."""
import json, sys, time
import pynvml, torch
from pytest_gpuperf.measure import kernels
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
clk = lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
a = torch.randn(256, 4096, device="cuda").to(torch.bfloat16)
w = torch.randn(4096, 4096, device="cuda").to(torch.bfloat16)
big = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
def work():
    for _ in range(10): a @ w
for _ in range(50): work()
torch.cuda.synchronize()
out = []
for phase in ("cold", "heated", "cold2"):
    if phase == "heated":
        t = time.time()
        while time.time() - t < 3: big @ big
        torch.cuda.synchronize()
    if phase == "cold2": time.sleep(3)
    for rep in range(3):
        c0 = clk()
        traced = kernels.profile_chunks(torch, lambda: [work() for _ in range(5)], None, 20, 10.0)
        c1 = clk()
        s = kernels.kernel_summary(traced, 5, 0.95)
        out.append(dict(phase=phase, rep=rep, kern_us=s.median * 1e6, lo=s.ci_low * 1e6, hi=s.ci_high * 1e6, clk0=c0, clk1=c1))
        print(json.dumps(out[-1]), flush=True)
json.dump(out, open(sys.argv[1], "w"))
