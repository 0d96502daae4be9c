"""Where a call of `tritonbench_lab.ops` goes before its per-shape decision (route):

- GRAD where autograd needs its result (grad enabled and an input that requires grad): the
  PyTorch op, whose gradient is right (tlab's kernels are forward-only).
- AUTOCAST under torch.autocast: the PyTorch op, whose dtypes autocast's rules set (on CUDA a
  matmul of fp32 inputs runs in bf16 or fp16, a softmax or a norm of bf16 ones returns fp32),
  which a kernel run at the inputs' own dtype would not follow.
- GRAPH inside torch.compile and under a TorchDispatchMode (FakeTensorMode, make_fx's
  tracing, FlopCounterMode): the op's registered twin (runtime/library.py), which the
  compiler or the mode sees as one op, with a fake for tensors without data.
- NO_DATA where a launch cannot read the tensors: an input of a tensor subclass with a
  dispatch of its own (DTensor, a quantized weight's wrapper beside a plain activation;
  nn.Parameter and plain subclasses hold their data), torch.func's transforms (vmap,
  functionalize, jvp), a meta tensor in Triton's interpreter (on a GPU host meta tensors are
  not on a GPU and take the op anyway): the PyTorch op, which knows their rules.
- None: the eager path, the per-shape decision.

Every check is a C call or a type comparison, bound once at import: each call that reaches
the decision makes them.

May import: runtime/dispatch.py (dispatches_itself), runtime/recording.py, spec (the
interpreter's switch); torch.
"""

from __future__ import annotations

import warnings

import torch

from tritonbench_lab.runtime import recording
from tritonbench_lab.runtime.dispatch import dispatches_itself
from tritonbench_lab.spec import triton_interpreting

GRAD, AUTOCAST, GRAPH, NO_DATA = "grad", "autocast", "graph", "no data"

# Bound once: module attribute lookups cost on every call.
_grad_enabled, _compiling = torch.is_grad_enabled, torch.compiler.is_compiling
_modes, _transforms = torch._C._len_torch_dispatch_stack, torch._C._are_functorch_transforms_active
# Whether torch.autocast is on, for any device: one C call, which dynamo guards on (own
# kernels ask it too: autocast's dtype rules hold for every op tlab stands in for).
autocasting = torch._C._is_any_autocast_enabled
# read once, as Triton reads it: set before the first import
_INTERPRETING, _TENSOR = triton_interpreting(), torch.Tensor


def route(*tensors: torch.Tensor | None) -> str | None:
    """Where a call with these inputs (the first a tensor; None for one not given) goes
    before its per-shape decision, as the module docstring says; None: the decision."""
    if _grad_enabled():  # only where autograd is on: not under inference_mode or no_grad
        for t in tensors:
            if t is not None and t.requires_grad:
                return GRAD
    if autocasting():
        if recording.recording() is not None:  # a recording would end without these calls
            warnings.warn("tlab: calls under torch.autocast run the PyTorch op and record no "
                          "shape: record the model in the dtype it serves in", stacklevel=3)
        return AUTOCAST
    if _compiling() or _modes():
        return GRAPH
    for t in tensors:  # a plain tensor costs one type comparison
        if type(t) is not _TENSOR and t is not None and dispatches_itself(t):
            return NO_DATA
    return NO_DATA if _transforms() or _INTERPRETING and tensors[0].is_meta else None
