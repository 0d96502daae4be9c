"""The ops as torch.library ops, `torch.ops.tlab.<name>`: what a model calling
`tritonbench_lab.ops` compiles to.

Under torch.compile, dynamo cannot trace an op's per-shape decision (a memo, a clock, files)
and would break the graph at every call. So inside a compiled region each op of
`tritonbench_lab.ops` calls its registered op instead, which dynamo keeps as one call. When
the graph is traced further (AOTAutograd, torch.export's decompositions) the op decomposes:
at a static shape where tlab's kernel does not run, into the PyTorch op, for the compiler to
fuse; else into one opaque node, `<name>_eager`, which runs the eager op, decision and all,
when the graph runs, so that the choice stays right for every shape a dynamic dimension
takes. torch.export keeps the op itself until its decompositions are run.

Each opaque node's fake (what the compiler traces with) is the PyTorch op itself on fake
tensors, so shapes and dtypes are the op's by construction; outputs are contiguous on both
sides (the real op's are made so), as the compiler plans strides from the fake's. The
alternative, a `torch.library.triton_op` whose Triton kernels Inductor sees, needs launchers
that call the kernels directly inside the op; not done.

May import: torch. Knows nothing of tlab's kernels: `tritonbench_lab.ops` and
runtime/own_kernels.py hand it each op.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

import torch
from torch.utils.flop_counter import register_flop_formula

NAMESPACE = "tlab"
# The registered ops' schemas: the eager ops' arguments less `out` (a compiled op returns a
# new tensor; a compiled call with `out` copies into it).
SCHEMAS = {
    "matmul": "(Tensor a, Tensor b) -> Tensor",
    "matmul_gelu": "(Tensor a, Tensor b, Tensor bias, str approximate) -> Tensor",
    "softmax": "(Tensor x) -> Tensor",
    "rmsnorm": "(Tensor x, Tensor weight, float eps) -> Tensor",
    "add_rmsnorm": "(Tensor x, Tensor weight, float eps, Tensor residual) -> (Tensor, Tensor)",
    "layernorm": "(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor",
    "rope": "(Tensor q, Tensor k, Tensor cos, Tensor sin) -> (Tensor, Tensor)",
    "add": "(Tensor x, Tensor y) -> Tensor",
}
# Each registered op's last argument: dispatch.tuned_state() in a traced graph (ops.py), a
# hash of the configs and rules its decisions rest on, so that a compile cache keyed by the
# graph tells graphs decided on other configs apart. Ignored when the op runs.
TUNED = 'str tuned=""'
_defined: dict[str, Callable] = {}
# <name> -> calls of <name>_eager since the last clear(): which opaque nodes a compiled graph
# ran (tlab model-bench reads it; the rest of the graph is the compiler's).
opaque_calls: collections.Counter = collections.Counter()
_LIBRARY = torch.library.Library(NAMESPACE, "FRAGMENT")


def define(name: str, run: Callable, like: Callable,
           may_run_kernel: Callable[..., bool], schema: str | None = None,
           flops: Callable[..., int] | None = None) -> Callable:
    """Register `torch.ops.tlab.<name>` (once a process) and its opaque twin
    `torch.ops.tlab.<name>_eager`; returns the first. `run` is the eager op, `like` the
    PyTorch op with the same arguments and results, `may_run_kernel(*args)` whether tlab's
    kernel runs at these arguments' shapes in the graph being traced (its own rule: the
    kernel must also beat the op's compiled form there). `schema`: the op's arguments and
    results (default: SCHEMAS[name]). `flops(*args, out_val=...)`: what torch's
    FlopCounterMode counts for a call of `<name>_eager`, given its arguments and results.

    `<name>` decomposes while a graph is traced (CompositeImplicitAutograd: AOTAutograd and
    torch.export's decompositions run it on fake tensors): where every size is static and
    tlab's kernel does not run there, into the PyTorch op itself, which Inductor fuses with
    its neighbours; else into `<name>_eager`, one opaque node that runs the eager op, decision
    and all, when the graph runs (a symbolic size: decided per shape it takes).

    `<name>_eager` is defined on a torch.library.Library with one kernel for every device
    (CompositeExplicitAutograd), not with torch.library.custom_op: custom_op's call passes
    through an autograd wrapper and dynamo's disable guards, about twice the host time of a
    plain dispatch to a Python kernel on a CPU probe, paid at every call a compiled graph
    makes (the ops never reach it where autograd needs a result: ops.py gives the PyTorch op
    there). Its fake is the PyTorch op, with contiguous results as the real op gives."""
    if name not in _defined:
        opaque = f"{name}_eager"
        schema = schema or SCHEMAS[name]
        params, results = schema.split(") ->")
        arity = params.count(",") + 1  # the op's own arguments, without `tuned`
        _LIBRARY.define(opaque + schema)
        _LIBRARY.impl(opaque, _contiguous_results(name, run), "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{opaque}", _fresh_results(like),
                                    lib=_LIBRARY)
        eager = getattr(torch.ops.tlab, opaque).default
        if flops is not None:
            register_flop_formula(getattr(torch.ops.tlab, opaque), get_raw=True)(flops)

        def decompose(*args, **_):
            args = args[:arity]  # `tuned` only keys the graph (TUNED)
            if _static(args) and not may_run_kernel(*args):
                return like(*args)
            return eager(*args)

        _LIBRARY.define(f"{name}{params}, {TUNED}) ->{results}")
        _LIBRARY.impl(name, decompose, "CompositeImplicitAutograd")
        _defined[name] = getattr(torch.ops.tlab, name).default
    return _defined[name]


def mm_flops(a: torch.Tensor, b: torch.Tensor, *_, **__) -> int:
    """FlopCounterMode's count for a matmul's opaque node (a @ b, then anything elementwise),
    which a dispatch mode sees where tlab's kernel runs: 2*M*N*K, as it counts aten.mm and
    aten.addmm (bias, GELU uncounted)."""
    return 2 * a.shape[0] * b.shape[1] * a.shape[1]


def _static(args: tuple) -> bool:
    """Whether no argument, nor item of a list argument, is symbolic (torch.SymInt, under a
    dynamic shape) or a tensor with a symbolic size."""
    items = [i for a in args for i in (a if isinstance(a, (list, tuple)) else (a,))]
    return not any(isinstance(d, torch.SymInt) for i in items
                   for d in (i.shape if isinstance(i, torch.Tensor) else (i,)))


def _contiguous_results(name: str, run: Callable) -> Callable:
    def contiguous(*args):
        opaque_calls[name] += 1
        out = run(*args)
        if isinstance(out, (tuple, list)):  # a tuple, or a list (Tensor[]) as it came
            return type(out)(t.contiguous() for t in out)
        return out.contiguous()

    return contiguous


def _fresh_results(like: Callable) -> Callable:
    def fake(*args):
        out = like(*args)
        if isinstance(out, (tuple, list)):
            return type(out)(_fresh(t) for t in out)
        return _fresh(out)

    return fake


def _fresh(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(t.shape, dtype=t.dtype, device=t.device)
