"""What reading the profiler costs on the shipped suite's own work (the nightly-gate issue,
#31): one traced call of the 1B static-cache decoder (256 new tokens, graph-replayed, as
benchmarks/test_generate.py builds it) and one 1B LoRA step (batch 8, 512 tokens), each read
both ways: kernels.traced_spans (torch's raw kineto result) and kernels.device_spans over
prof.events() (every event parsed into a FunctionEvent and a tree). Prints one JSON line per
work: events, both reading times, and whether both give the same spans. On a GPU machine:
python tests/gpu/parse_probe.py OUT.json"""

import json
import sys
import time

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from pytest_gpuperf.measure import kernels
from pytest_gpuperf.workloads.data import fixed_batch
from pytest_gpuperf.workloads.finetune import make_trainer
from pytest_gpuperf.workloads.generation import StaticGreedyDecoder, prompt
from pytest_gpuperf.workloads.models import build_model


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def read_both(name, fn):
    fn()
    sync()
    t0 = time.perf_counter()
    on_gpu = torch.cuda.is_available()  # a try on the CPU reads its CPU ops instead
    kind = DeviceType.CUDA if on_gpu else DeviceType.CPU
    with profile(activities=[ProfilerActivity.CUDA if on_gpu else ProfilerActivity.CPU]) as prof:
        fn()
        sync()
    t1 = time.perf_counter()
    raw = kernels.traced_spans(prof, kind)
    t2 = time.perf_counter()
    parsed = kernels.device_spans(prof.events(), kind)
    t3 = time.perf_counter()
    same = len(raw) == len(parsed) and all(
        abs(a[0] - b[0]) < 1e-3 and abs(a[1] - b[1]) < 1e-3
        for a, b in zip(sorted(raw), sorted(parsed), strict=True)
    )
    line = {"work": name, "device_events": len(raw), "traced_call_s": round(t1 - t0, 3),
            "raw_read_s": round(t2 - t1, 4), "events_parse_s": round(t3 - t2, 3),
            "same_spans": same, "union_us_raw": kernels.union_length(raw),
            "union_us_parsed": kernels.union_length(parsed)}  # fmt: skip
    print(json.dumps(line), flush=True)
    return line


def main(out, preset="llama-1b", where="cuda"):
    lines = []
    dev = torch.device(where)
    built = build_model(preset, device=dev, dtype=torch.bfloat16)
    model = built.model.eval()
    ids = prompt(1, 128, model.config.vocab_size, dev)
    dec = StaticGreedyDecoder(model, 1, 128, 256, compile=False, compile_mode=None)
    dec.warm(ids)
    lines.append(read_both("decoder llama-1b b1 256 tokens", lambda: dec.generate(ids, 256)))
    dec = model = built = None  # freed before the trainer is built
    sync()
    tr = make_trainer(preset, device=dev, quantization=None, seq_len=512,
                      gradient_checkpointing=True)  # fmt: skip
    batch = fixed_batch(8, 512, tr.model.config.vocab_size, dev)
    lines.append(read_both("LoRA step llama-1b b8 512", lambda: tr.step(batch)))
    with open(out, "w") as f:
        json.dump(lines, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])  # OUT.json [PRESET DEVICE]: "tiny cpu" tries the script here
