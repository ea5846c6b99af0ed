# device call 2026-11-30 23:59 UTC, nvidia-h200 (one GPU): for s in 0..5: python3 castmodes.py $s
"""Why do the fp16->fp32 and bf16->fp16 casts run at one of two speeds from process to process?
One process: several allocations of source and destination at different offsets, each timed
with CUDA events; prints GB/s with the pointers' offsets modulo 2 MiB and 1 GiB."""
import json
import sys

import torch

seed = int(sys.argv[1])
torch.manual_seed(seed)
out = []
pads = []
for trial in range(6):
    pad = torch.empty((seed * 7 + trial * 3) * (1 << 20) + trial * 4096, dtype=torch.uint8, device="cuda")
    pads.append(pad)
    for src_t, dst_t in ((torch.bfloat16, torch.float16), (torch.float16, torch.float32), (torch.float32, torch.float16)):
        n = (1 << 30) // src_t.itemsize
        x = torch.randn(n, device="cuda").to(src_t)
        y = torch.empty(n, dtype=dst_t, device="cuda")
        for _ in range(5):
            y.copy_(x)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20):
            y.copy_(x)
        e.record()
        torch.cuda.synchronize()
        t = s.elapsed_time(e) / 1000 / 20
        gbs = (x.nbytes + y.nbytes) / t / 1e9
        out.append({"seed": seed, "trial": trial, "cast": f"{src_t}->{dst_t}".replace("torch.", ""),
                    "gbs": round(gbs, 1), "x_mod2M": x.data_ptr() % (2 << 20), "y_mod2M": y.data_ptr() % (2 << 20),
                    "x_mod1G": x.data_ptr() % (1 << 30), "y_mod1G": y.data_ptr() % (1 << 30)})
        del x, y
print(json.dumps(out))
