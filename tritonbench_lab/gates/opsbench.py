"""The benchmark of what user code calls: tritonbench_lab.ops against the PyTorch op, on shapes
nobody tuned, on a GPU, in one run.

Per shape: the ops result against float64 (the kernel's tolerance); GPU time of ops and of the
PyTorch op, timed like the sweeps (do_bench, L2 flushed) and under CUDA-graph replay (launch
cost gone); the time of a call in a loop of eager calls (back to back, finished: the longer of
host and GPU time), of ops, of the PyTorch op and of what ops.bind returns for the shape (the
PyTorch op itself where ops calls it), in turns (each ratio the median of its rounds'); and the
host time of one call (calls queued back to back, no waiting on the GPU): of ops, and of the
launcher ops bound for that shape (or of the PyTorch op where ops chose it), so that what ops
itself adds is their difference. Speed targets live here, not in tests.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton.testing

from tritonbench_lab import ops
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.kernels.rope import rotate_half_rope
from tritonbench_lab.measure.timing import (
    bound_verdict,
    host_rounds,
    host_times,
    paired_interval,
    paired_ratio,
)
from tritonbench_lab.measure.verify import as_outputs, check
from tritonbench_lab.spec import parse_dtype

# (kernel, dtype, shape): sizes no default shape has, of every alignment class, from one row
# or token to 65,536; the classes of "Real shapes, real calls".
SHAPES: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    *(("matmul", "bf16", s) for s in (
        (1536, 1536, 1536), (3072, 3072, 3072), (6144, 6144, 6144), (2056, 2056, 2056),
        (1, 4096, 4096), (16, 4096, 4096), (128, 4096, 4096), (1024, 11008, 4096),
        (8192, 4096, 11008), (8192, 14336, 4096), (700, 700, 700), (7, 7, 7),
        (4097, 4097, 64), (1000, 999, 1001))),
    # nn.Linear + GELU: a decoding token, BERT at 1024 tokens, Llama-2-7B's MLP at 4096
    *(("matmul_gelu", "bf16", s) for s in (
        (1, 4096, 4096), (1024, 3072, 768), (4096, 11008, 4096), (3072, 3072, 3072),
        (2056, 2056, 2056))),
    *(("softmax", dt, s) for dt, s in (
        ("bf16", (1, 4096)), ("bf16", (7, 32000)), ("bf16", (2048, 4096)),
        ("fp32", (4096, 4096)), ("bf16", (16384, 4096)), ("fp32", (65536, 1024)),
        ("bf16", (4096, 12672)), ("fp32", (1024, 50257)), ("bf16", (4096, 32000)),
        ("bf16", (32768, 8192)))),
    *(("rmsnorm", dt, s) for dt, s in (
        ("bf16", (1, 4096)), ("bf16", (2048, 4096)), ("fp32", (4096, 8192)),
        ("bf16", (65536, 4096)), ("fp32", (7, 4097)), ("bf16", (4096, 5120)))),
    *(("add_rmsnorm", dt, s) for dt, s in (
        ("bf16", (2048, 4096)), ("bf16", (65536, 4096)), ("fp32", (32768, 8192)),
        ("bf16", (3, 4096)))),
    *(("layernorm", dt, s) for dt, s in (
        ("bf16", (4096, 4096)), ("fp32", (1, 3072)), ("bf16", (8192, 5120)),
        ("fp32", (2048, 1000)))),
    # batch x seq x heads x head_dim: one decoding token, a prefill, a long context, two
    # sequences of 8k (tuned only as one of 16k tokens); a fifth size is k's heads where k
    # has fewer than q (grouped-query attention: Llama-3 8B's 32 q and 8 k heads)
    *(("rope", dt, s) for dt, s in (
        ("bf16", (1, 1, 8, 128)), ("bf16", (2, 2048, 32, 128)), ("fp32", (1, 8192, 8, 64)),
        ("bf16", (2, 8192, 32, 128)), ("bf16", (1, 4096, 32, 128, 8)),
        ("fp32", (1, 16384, 32, 128, 8)))),
    *(("add", dt, s) for dt, s in (
        ("fp32", (1000,)), ("bf16", (2**24 + 7,)), ("fp32", (3 * 2**22,)))),
)
HOST_CALLS = 100  # calls queued per host timing, few enough that the launch queue never fills
HOST_ROUNDS = 9


@dataclass(frozen=True)
class OpsRow:
    kernel: str
    dtype: str
    shape: str
    calls: str  # "triton" or "torch": what ops chose for eager calls (and for graphs, if not that)
    correct: bool
    ops_ms: float  # do_bench, L2 flushed
    torch_ms: float
    ops_graph_ms: float  # CUDA-graph replay
    torch_graph_ms: float
    ops_host_us: float  # host time of one call
    bare_host_us: float  # the same of the bound launcher (or the op) ops calls
    ops_eager_us: float  # a call's time in a loop of calls, finished (timing.host_times)
    torch_eager_us: float
    bound_eager_us: float  # the same of ops.bind's function for the shape
    eager_ratio: float  # torch's eager time over ops', round by round: their median (> 1: ops
    bound_ratio: float  # is faster); the same over ops.bind's function's
    bound_interval: tuple[float, float, float] | None = None  # timing.paired_interval's

    @property
    def ratio(self) -> float:
        """> 1: ops is faster than the PyTorch op."""
        return self.torch_ms / self.ops_ms

    @property
    def graph_ratio(self) -> float:
        return self.torch_graph_ms / self.ops_graph_ms

    @property
    def overhead_us(self) -> float:
        return self.ops_host_us - self.bare_host_us


def _calls(kernel: str, inputs: dict):
    """(ops call, PyTorch op call, the call of ops.bind's function for it, sizes, the
    arguments ops hands its bound launcher)."""
    if kernel == "matmul":
        a, b = inputs["a"], inputs["b"]
        sizes, bound = (a.shape[0], b.shape[1], a.shape[1]), ops.bind(ops.matmul, a, b)
        return ((lambda: ops.matmul(a, b)), (lambda: torch.matmul(a, b)), (lambda: bound(a, b)),
                sizes, (a, b))
    if kernel == "matmul_gelu":
        a, b, bias = inputs["a"], inputs["b"], inputs["bias"]
        sizes, bound = (a.shape[0], b.shape[1], a.shape[1]), ops.bind(ops.matmul_gelu, a, b, bias)
        return ((lambda: ops.matmul_gelu(a, b, bias)), (lambda: F.gelu(torch.addmm(bias, a, b))),
                (lambda: bound(a, b, bias)), sizes, (a, b, None, bias))
    if kernel == "softmax":
        x = inputs["x"]
        bound = ops.bind(ops.softmax, x)
        return ((lambda: ops.softmax(x)), (lambda: torch.softmax(x, -1)), (lambda: bound(x)),
                tuple(x.shape), (x,))
    if kernel == "layernorm":
        x, w, b, eps = inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"]
        bound = ops.bind(ops.layernorm, x, w, b, eps)
        return ((lambda: ops.layernorm(x, w, b, eps)),
                (lambda: F.layer_norm(x, (x.shape[1],), w, b, eps)),
                (lambda: bound(x, w, b, eps)), tuple(x.shape), (x, w, b, eps))
    if kernel == "rope":
        q, k, cos, sin = inputs["q"], inputs["k"], inputs["cos"], inputs["sin"]
        bound = ops.bind(ops.rope, q, k, cos, sin)
        return ((lambda: ops.rope(q, k, cos, sin)), (lambda: rotate_half_rope(q, k, cos, sin)),
                (lambda: bound(q, k, cos, sin)), tuple(q.shape), (q, k, cos, sin))
    if kernel == "add":
        x, y = inputs["x"], inputs["y"]
        bound = ops.bind(ops.add, x, y)
        return ((lambda: ops.add(x, y)), (lambda: torch.add(x, y)), (lambda: bound(x, y)),
                (x.numel(),), (x, y))
    x, w, eps = inputs["x"], inputs["weight"], inputs["eps"]
    r = inputs.get("residual")
    if r is None:
        bound = ops.bind(ops.rmsnorm, x, w, eps)
        return ((lambda: ops.rmsnorm(x, w, eps)),
                (lambda: F.rms_norm(x, (x.shape[1],), w, eps)), (lambda: bound(x, w, eps)),
                tuple(x.shape), (x, w, eps))

    def torch_add():
        h = x + r
        return F.rms_norm(h, (h.shape[1],), w, eps), h

    bound = ops.bind(ops.rmsnorm, x, w, eps, residual=r)
    return ((lambda: ops.rmsnorm(x, w, eps, residual=r)), torch_add,
            (lambda: bound(x, w, eps, residual=r)), tuple(x.shape), (x, w, eps, r))


def make_inputs(kernel: str, sizes: tuple[int, ...], dtype, device: str, seed: int) -> dict:
    """The kernel's inputs at sizes; rope's fifth size is k's heads where k has fewer than q
    (k: the first heads of its slice of the fused qkv, a strided view as a model has it)."""

    spec = get_spec(kernel)
    inputs = spec.make_inputs(spec.shape(*sizes[:len(spec.dims)]), dtype, device, seed)
    if kernel == "rope" and len(sizes) == len(spec.dims) + 1:
        inputs = {**inputs, "k": inputs["k"][:, :, :sizes[-1]]}
    return inputs


def measure(kernel: str, dtype_name: str, sizes: tuple[int, ...], seed: int = 0) -> OpsRow:
    spec = get_spec(kernel)
    dtype = parse_dtype(dtype_name)
    inputs = make_inputs(kernel, sizes, dtype, "cuda", seed)
    ops_call, torch_call, bound_call, call_sizes, args = _calls(kernel, inputs)
    verdict = check(as_outputs(ops_call()), spec.reference(inputs), spec.tolerance[dtype])
    launch = ops.bound_launch(kernel, dtype, call_sizes, 0)  # decided by the call above
    captured = ops.bound_launch(kernel, dtype, call_sizes, 0, captured=True)
    calls = "triton" if launch is not None else "torch"
    if (captured is None) != (launch is None):  # eager calls and graphs decided apart
        calls += f" (graph: {'torch' if captured is None else 'triton'})"
    bare = (lambda: launch(*args)) if launch is not None else torch_call
    ops_ms = triton.testing.do_bench(ops_call, warmup=25, rep=100)
    torch_ms = triton.testing.do_bench(torch_call, warmup=25, rep=100)
    ops_graph = triton.testing.do_bench_cudagraph(ops_call, rep=100)
    torch_graph = triton.testing.do_bench_cudagraph(torch_call, rep=100)
    shape = "x".join(map(str, sizes[:len(spec.dims)]))
    if len(sizes) > len(spec.dims):
        shape += f" (k: {sizes[-1]} heads)"
    return OpsRow(kernel, dtype_name, shape,
                  calls, verdict.ok, ops_ms, torch_ms,
                  ops_graph, torch_graph,
                  *(t * 1e3 for t in host_times((ops_call, bare), torch.cuda.synchronize,
                                                HOST_CALLS, HOST_ROUNDS)),
                  *_eager(host_rounds((ops_call, torch_call, bound_call),
                                      torch.cuda.synchronize, HOST_CALLS, HOST_ROUNDS,
                                      until_done=True)))


def _eager(rounds: list[list[float]]) -> tuple[float, ...]:
    """OpsRow's eager fields from host_rounds of ops, the op and bind's function: medians in
    us, then torch over ops and over bind's, round by round (taken in turns), their medians."""
    ops_ms, torch_ms, bound_ms = rounds
    return (*(statistics.median(t) * 1e3 for t in rounds),
            paired_ratio(torch_ms, ops_ms), paired_ratio(torch_ms, bound_ms),
            paired_interval(torch_ms, bound_ms))


SLOWEST = 0.97  # the target: none slower than the PyTorch op by more than 3%


def _verdict(ratio: float, interval: tuple[float, float, float] | None = None) -> str:
    """The target's verdict (timing.bound_verdict), after the rounds' interval where given."""
    verdict = f"target {SLOWEST}x: {bound_verdict(ratio, SLOWEST, interval)}"
    if interval is None:
        return f" ({verdict})"
    low, high, coverage = interval
    return f" ({coverage:.0%} interval {low:.3f}-{high:.3f}x; {verdict})"


def report(rows: list[OpsRow]) -> list[str]:
    """A Markdown table and the summary the acceptance reads."""
    lines = ["| kernel | dtype | shape | ops calls | correct | torch / ops (do_bench) | "
             "torch / ops (graph) | torch / ops (eager) | torch / bound (eager) | "
             "ops host us | bare host us | ops adds us |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r.kernel} | {r.dtype} | {r.shape} | {r.calls} | "
                     f"{'yes' if r.correct else 'NO'} | {r.ratio:.3f} | {r.graph_ratio:.3f} | "
                     f"{r.eager_ratio:.3f} | {r.bound_ratio:.3f} | {r.ops_host_us:.1f} | "
                     f"{r.bare_host_us:.1f} | "
                     f"{r.overhead_us:.1f} |")
    worst = min(rows, key=lambda r: r.ratio)
    worst_graph = min(rows, key=lambda r: r.graph_ratio)
    worst_eager = min(rows, key=lambda r: r.eager_ratio)
    worst_bound = min(rows, key=lambda r: r.bound_ratio)
    most = max(rows, key=lambda r: r.overhead_us)
    lines += [
        "",
        f"shapes: {len(rows)}, tlab's kernel at {sum(r.calls.startswith('triton') for r in rows)}, "
        f"correct: {sum(r.correct for r in rows)}",
        f"slowest against the PyTorch op (do_bench): {worst.ratio:.3f}x at {worst.kernel} "
        f"{worst.dtype} {worst.shape}",
        f"slowest against the PyTorch op (graph replay): {worst_graph.graph_ratio:.3f}x at "
        f"{worst_graph.kernel} {worst_graph.dtype} {worst_graph.shape}"
        f"{_verdict(worst_graph.graph_ratio)}",
        f"slowest against the PyTorch op (eager, calls back to back): "
        f"{worst_eager.eager_ratio:.3f}x at {worst_eager.kernel} {worst_eager.dtype} "
        f"{worst_eager.shape}",
        f"slowest against the PyTorch op (eager, ops.bind's function): "
        f"{worst_bound.bound_ratio:.3f}x at {worst_bound.kernel} {worst_bound.dtype} "
        f"{worst_bound.shape}{_verdict(worst_bound.bound_ratio, worst_bound.bound_interval)}",
        f"most host time ops adds per call: {most.overhead_us:.1f} us at {most.kernel} "
        f"{most.dtype} {most.shape}",
    ]
    return lines
