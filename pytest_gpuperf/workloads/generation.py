"""Text generation with a fixed output length (greedy, min_new_tokens == max_new_tokens).

`generate_eager` is Hugging Face's own `generate()`: at batch 1 it is launch-bound (the
host issues hundreds of small kernels per token), and the benchmarks say so. Time to first
token (prefill) and time per output token (decode) are separated by timing one new token
and n new tokens: decode per token = (t(n) - t(1)) / (n - 1).
"""

from __future__ import annotations

from typing import Any

from .data import fixed_batch
from .models import WorkloadError


def prompt(batch: int, prompt_len: int, vocab: int, device: Any, seed: int = 0) -> Any:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise WorkloadError(f"batch size must be a whole number >= 1, got {batch!r}")
    return fixed_batch(batch, prompt_len, vocab, device, seed=seed)


def generate_eager(model: Any, input_ids: Any, new_tokens: int) -> Any:
    """Greedy generation of exactly `new_tokens` tokens per sequence with HF generate()."""
    import torch

    if isinstance(new_tokens, bool) or not isinstance(new_tokens, int) or new_tokens < 1:
        raise WorkloadError(f"new_tokens must be a whole number >= 1, got {new_tokens!r}")
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            use_cache=True,
            pad_token_id=0,
            eos_token_id=None,
        )
    if out.shape[1] != input_ids.shape[1] + new_tokens:
        raise WorkloadError(
            f"generate() returned {out.shape[1] - input_ids.shape[1]} new tokens, "
            f"expected {new_tokens}"
        )
    return out


def decode_split(t_one: float, t_n: float, n: int) -> tuple[float, float]:
    """(time to first token, time per output token after it) from t(1) and t(n)."""
    if n < 2:
        raise WorkloadError("decode time needs at least 2 new tokens")
    return t_one, max(0.0, (t_n - t_one) / (n - 1))


class StaticGreedyDecoder:
    """Greedy decoding with a static KV cache and our own loop, for GPU-bound generation.

    HF's `generate()` does per-token work on the host (logits processing, stopping checks,
    cache bookkeeping) that leaves a GPU idle most of the time at small batch. Here the
    prompt is prefilled once; each further token is one forward of one token at a static
    cache position. On CUDA that one-token forward (and its argmax) is captured in a CUDA
    graph and replayed, so the host issues one launch per token. If capture fails (a model
    version with host synchronisation inside its forward), the loop runs eagerly and
    `graph_error` says why.
    """

    def __init__(
        self,
        model: Any,
        batch: int,
        prompt_len: int,
        max_new_tokens: int,
        use_graph: bool = True,
        compile: bool = False,
        compile_mode: str | None = None,
    ) -> None:
        import torch

        from ..core.extras import needs

        with needs("workloads"):
            from transformers import StaticCache

        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
            raise WorkloadError(f"max_new_tokens must be a whole number, got {max_new_tokens!r}")
        if max_new_tokens < 1:
            raise WorkloadError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.model = model.eval()
        self.device = next(model.parameters()).device
        self.prompt_len = prompt_len
        self.max_new = max_new_tokens
        self.cache = StaticCache(config=model.config, max_cache_len=prompt_len + max_new_tokens)
        self.tok = torch.zeros((batch, 1), dtype=torch.long, device=self.device)
        self.pos = torch.zeros((1,), dtype=torch.long, device=self.device)
        self.next = torch.zeros((batch, 1), dtype=torch.long, device=self.device)
        self.graph: Any = None
        self.graph_error: str | None = None
        self._want_graph = use_graph and self.device.type == "cuda"
        # transformers 5.2x renamed forward's past_key_values to cache (the old name warns);
        # 5.17, on our GPU runner, knows only the old one
        import inspect

        params = inspect.signature(type(model).forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        # compile: the one-token step through torch.compile (fixed shapes: a static cache and
        # one token), fusing the many small kernels of a decoder layer; on CUDA the compiled
        # step is then captured in our own CUDA graph (modes "default" and
        # "max-autotune-no-cudagraphs" leave graphs to us). The default mode is the default
        # here: max-autotune's kernel choices, made by timing candidates while compiling,
        # differ between sessions, and so do its figures. Compile time is measured by
        # warm(), never inside a timed figure.
        self.compile_s: float | None = None
        self.compile_error: str | None = None
        self._step_forward = self._forward
        self.compile_mode: str | None = None
        if compile:
            self.compile_mode = compile_mode or "default"
            self._step_forward = torch.compile(
                self._forward, mode=self.compile_mode, dynamic=False, fullgraph=False
            )
        self.compiled = compile

    def _forward(self, ids: Any, positions: Any) -> Any:
        out = self.model(
            input_ids=ids, **{self._cache_kw: self.cache}, cache_position=positions, use_cache=True
        )
        return out.logits[:, -1].argmax(-1, keepdim=True)

    def _step(self) -> None:
        self.next.copy_(self._step_forward(self.tok, self.pos))

    def warm(self, input_ids: Any) -> None:
        """Everything that must not be timed: compiling the step (its time in `compile_s`),
        then capturing the CUDA graph. A step that fails to compile falls back to the
        uncompiled one, and `compile_error` says why."""
        import time

        import torch

        if self.compiled and self.compile_s is None and self.compile_error is None:
            want_graph, self._want_graph = self._want_graph, False
            t0 = time.perf_counter()
            try:
                self.generate(input_ids, min(3, self.max_new))
                if self.device.type == "cuda":
                    torch.cuda.synchronize()
                self.compile_s = time.perf_counter() - t0
            except Exception as exc:  # a model the compiler cannot handle: run uncompiled
                self.compile_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
                self._step_forward = self._forward
                self.compiled = False
            finally:
                self._want_graph = want_graph
                self.cache.reset()
        self.generate(input_ids, min(3, self.max_new))  # captures the graph on CUDA

    def describe(self) -> str:
        """How the decode step runs, for the benchmark's note."""
        how = "eager kernels"
        if self.compiled:
            how = f"torch.compile ({self.compile_mode})"
        if self.compile_error:
            how += f" (compile failed: {self.compile_error})"
        if self.graph is not None:
            return f"{how} in a CUDA graph"
        return f"{how}, {'no CUDA graph: ' + self.graph_error if self.graph_error else 'no CUDA'}"

    def _capture(self, ids: Any) -> None:
        import torch

        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.no_grad():
                self.tok.copy_(self._forward(ids, torch.arange(ids.shape[1], device=self.device)))
                self.pos.fill_(ids.shape[1])
                for _ in range(2):
                    self._step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph), torch.no_grad():
                self._step()
            self.graph = graph
        except Exception as exc:  # fall back to the eager loop, and say so
            self.graph_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            torch.cuda.synchronize()
        finally:
            self.cache.reset()

    def generate(self, input_ids: Any, new_tokens: int | None = None) -> Any:
        """(batch, new_tokens) greedy tokens after `input_ids` (batch, prompt_len)."""
        import torch

        n = self.max_new if new_tokens is None else new_tokens
        if not 1 <= n <= self.max_new:
            raise WorkloadError(f"new_tokens must be in 1..{self.max_new}, got {n}")
        if tuple(input_ids.shape) != (self.tok.shape[0], self.prompt_len):
            raise WorkloadError(
                f"input_ids must be {(self.tok.shape[0], self.prompt_len)}, "
                f"got {tuple(input_ids.shape)}"
            )
        if self._want_graph and self.graph is None and self.graph_error is None:
            self._capture(input_ids)
        self.cache.reset()
        out = []
        with torch.no_grad():
            first = self._forward(input_ids, torch.arange(self.prompt_len, device=self.device))
            self.tok.copy_(first)
            out.append(first.clone())
            for i in range(n - 1):
                self.pos.fill_(self.prompt_len + i)
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self._step()
                self.tok.copy_(self.next)
                out.append(self.next.clone())
        return torch.cat(out, dim=1)


def weight_bytes(model: Any) -> int:
    """Bytes of parameters and buffers a decode step reads at least once; for bitsandbytes
    4-bit weights, the packed weights (their parameters) plus their quantization constants
    (absmax, and its own constants under double quantization), which are not parameters."""
    total = 0
    for t in list(model.parameters()) + list(model.buffers()):
        total += t.numel() * t.element_size()
    for module in model.modules():
        state = getattr(getattr(module, "weight", None), "quant_state", None)
        while state is not None:
            absmax = getattr(state, "absmax", None)
            if absmax is not None:
                total += absmax.numel() * absmax.element_size()
            code = getattr(state, "code", None)
            if code is not None:
                total += code.numel() * code.element_size()
            state = getattr(state, "state2", None)
    return total
