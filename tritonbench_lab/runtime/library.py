"""The ops as torch.library custom ops, `torch.ops.tlab.<name>`: what a model calling
`tritonbench_lab.ops` compiles to.

Under torch.compile, dynamo cannot trace an op's per-shape decision (a memo, a clock, files)
and would break the graph at every call. So inside a compiled region each op of
`tritonbench_lab.ops` calls its registered op instead: one opaque node, which runs the
eager op, decision and all, when the graph runs. The choice between tlab's kernel and the
PyTorch op is so made at run time for the shape actually called, once per shape (the memo),
and stays right for every shape a dynamic dimension takes; `torch.export` keeps the node.

Each op's fake (what the compiler traces with) is the PyTorch op itself on fake tensors, so
shapes and dtypes are the op's by construction; outputs are contiguous on both sides (the
real op's are made so), as the compiler plans strides from the fake's. The alternative, a
`torch.library.triton_op` whose Triton kernels Inductor sees, needs launchers that call the
kernels directly inside the op; not done.

May import: torch. Knows nothing of tlab's kernels: `tritonbench_lab.ops` hands it each op.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

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
_defined: dict[str, Callable] = {}
_LIBRARY = torch.library.Library(NAMESPACE, "FRAGMENT")


def define(name: str, run: Callable, like: Callable) -> Callable:
    """Register `torch.ops.tlab.<name>` (once a process): `run` is the eager op, `like` the
    PyTorch op with the same arguments and results (the fake). Returns the registered op.

    Defined on a torch.library.Library with one kernel for every device
    (CompositeExplicitAutograd), not with torch.library.custom_op: custom_op's call passes
    through an autograd wrapper and dynamo's disable guards, about three times the host time
    of a plain dispatch to a Python kernel, paid at every call a compiled graph makes (the
    ops never reach it where autograd needs a result: ops.py gives the PyTorch op there)."""
    if name not in _defined:
        _LIBRARY.define(name + SCHEMAS[name])
        _LIBRARY.impl(name, _contiguous_results(run), "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{name}", _fresh_results(like), lib=_LIBRARY)
        _defined[name] = getattr(torch.ops.tlab, name).default
    return _defined[name]


def _contiguous_results(run: Callable) -> Callable:
    def contiguous(*args):
        out = run(*args)
        if isinstance(out, tuple):
            return tuple(t.contiguous() for t in out)
        return out.contiguous()

    return contiguous


def _fresh_results(like: Callable) -> Callable:
    def fake(*args):
        out = like(*args)
        if isinstance(out, tuple):
            return tuple(_fresh(t) for t in out)
        return _fresh(out)

    return fake


def _fresh(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(t.shape, dtype=t.dtype, device=t.device)
