"""Tuned kernels for your code, never slower than the PyTorch op they stand in for, by the
committed measurements: GPU times, and each call's host time beside them.

    from tritonbench_lab.ops import matmul, addmm, matmul_gelu, softmax, rmsnorm, layernorm
    c = matmul(a, b)

and any kernel tlab knows, your own included, as a function of its inputs:

    axpy = kernel("axpy")  # listed in ./pyproject.toml, or kernel("axpy", module="axpy.py")
    z = axpy(x=x, y=y)

Each call runs tlab's kernel, under the config tuned for its shape on this GPU, where the
committed measurements say it beats the PyTorch op, and the op itself everywhere else
(torch.matmul, F.gelu of torch.addmm, torch.softmax, F.rms_norm, F.layer_norm, the
rotate-half formulation of RoPE, torch.add); `addmm` is torch.addmm always (tlab's matmul
has no bias epilogue: see its docstring). The decision, made once per kernel, dtype,
shape and device, is runtime/dispatch.py's, and `explain` (or `tlab explain`) says what it is
and why.

Some calls go elsewhere, decided before anything else (runtime/routes.py):

- Where autograd needs the result (grad enabled and an input that requires grad), the
  PyTorch op: tlab's kernels are forward-only, and the op's gradient is the right one. In
  inference, run under torch.inference_mode() (or no_grad) to get tlab's kernels.
- Under torch.autocast, the PyTorch op: autocast sets its dtypes (a matmul of fp32 inputs
  in bf16; on CUDA a softmax or norm of bf16 inputs in fp32), a kernel would keep the inputs'.
- Inside torch.compile (and torch.export), the op registered as `torch.ops.tlab.<name>`
  (runtime/library.py): no graph break; traced further, at a static shape it becomes the
  PyTorch op where tlab's kernel does not run in a compiled graph there (dispatch's
  in_compiled_graph: it must also beat the op's compiled form; the compiler fuses the op),
  else a node that makes the eager per-shape decision when it runs, as it does for every
  shape a dynamic dimension takes.
  Under a TorchDispatchMode (FakeTensorMode, make_fx's tracing, FlopCounterMode) alike:
  the mode sees that op, with a fake for tensors without data.
- Under torch.func's transforms (vmap, functionalize, jvp), for meta tensors and for an
  input of a subclass with a dispatch of its own (DTensor), the PyTorch op: a launch cannot
  read their tensors, and the op has their rules.

An eager loop calling an op at one shape where the op is host-bound (a decode step) binds it
once: `sm = bind(softmax, x)` is, where ops calls the PyTorch op for x, that op itself (its
calls cost what the op's cost), else softmax.

An nn.Linear whose output width no tile divides (an LM head's vocabulary) goes through
`prepare_linear(layer)`: its weight padded once, computed at the padded width, returned as a
view.

To tune the shapes a program really calls, record them (runtime/recording.py) and sweep the
file: `with record_shapes("shapes.csv"): model(x)` (or TLAB_RECORD_SHAPES=shapes.csv in the
environment), then `tlab sweep --shapes-from shapes.csv`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.nn.functional as F

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.kernels import layernorm as _layernorm
from tritonbench_lab.kernels import matmul as _matmul
from tritonbench_lab.kernels import matmul_gelu as _matmul_gelu
from tritonbench_lab.kernels import rmsnorm as _rmsnorm
from tritonbench_lab.kernels import rope as _rope
from tritonbench_lab.runtime import dispatch as _dispatch
from tritonbench_lab.runtime import in_graphs, library, recording, torch_side
from tritonbench_lab.runtime.dispatch import (  # re-exported: the ops' public decision API
    NEAR,
    NEAR_MARGIN,
    RECHECK_S,
    Choice,
    bound_launch,
    clear,
    decide,
    eager_speedup,
    eager_time,
    explain,
    in_compiled_graph,
    plan,
    tuned_state,
    work_ratio,
)
from tritonbench_lab.runtime.own_kernels import TunedKernel, kernel  # re-exported
from tritonbench_lab.runtime.padded_linear import PAD_TO, PaddedLinear  # re-exported
from tritonbench_lab.runtime.routes import GRAPH
from tritonbench_lab.runtime.routes import route as _route

__all__ = ["NEAR", "NEAR_MARGIN", "RECHECK_S", "Choice", "bound_launch", "clear", "decide",
           "eager_speedup", "eager_time", "explain", "work_ratio", "kernel", "TunedKernel",
           "matmul", "addmm", "matmul_gelu", "softmax", "rmsnorm", "layernorm", "rope", "add",
           "record_shapes", "prepare_linear", "PaddedLinear", "bind"]

# What the ops read from the kernels' specs (their dtypes; check_shape and bind at a plan).
_DTYPES = {name: frozenset(get_spec(name).dtypes) for name in
           ("matmul", "matmul_gelu", "softmax", "rmsnorm", "layernorm", "rope", "add")}

# Bound once: each call of an op reads them (module attribute lookups cost on every call).
_compiling, _modes = torch.compiler.is_compiling, torch._C._len_torch_dispatch_stack
_monotonic, _file_state, _op_only = time.monotonic, _dispatch._file_state, _dispatch.op_only
_never = _dispatch.never


# The fast path, inlined at the top of each op (a function call costs host time): a call's
# key (the op's name and what its decision reads from the inputs; none under compile or a
# dispatch mode, where a size may be symbolic and no dict can hash it) found in op_only, with
# the configs looked at within RECHECK_S (_file_state[2]: until when) and no CUDA graph being
# captured where that matters, goes straight to the PyTorch op; _remember puts the key there
# once the op's eager plan says so (dispatch.remember). It asks nothing of autograd: where an
# input requires grad, ops calls the same op (the GRAD path), so a known key is right either
# way, and each check costs every call.


_remember = _dispatch.remember  # after a call that ran the PyTorch op


@contextlib.contextmanager
def record_shapes(path: str | os.PathLike) -> Iterator[Path]:
    """Within the block, append each new kernel, dtype, shape and device ops decides for
    to `path` (a CSV of `Called` rows, kept across runs), with how near the GPU's tuned
    shapes it is; `tlab sweep --shapes-from PATH` then tunes them. Only calls that reach the
    decision record: under autograd (an input requiring grad) and under torch.autocast ops
    calls the PyTorch op without one, so record under torch.inference_mode(), in the dtype
    the model serves in. Compiled models trace anew inside the block
    (torch.compiler.reset()): a graph traced before holds its static shapes' choices and
    records nothing."""
    before = recording.recording()
    recording.start(path)
    clear()  # every shape's next call decides afresh, and so records
    torch.compiler.reset()
    try:
        yield Path(path)
    finally:
        if before is None:
            recording.stop()
        else:
            recording.start(before)


recording.start_from_environment()  # TLAB_RECORD_SHAPES=FILE: from the first call on


# --- weights padded once ----------------------------------------------------------------------

def prepare_linear(layer: torch.nn.Linear | torch.Tensor, bias: torch.Tensor | None = None,
                   multiple: int = PAD_TO) -> PaddedLinear:
    """An nn.Linear (or its weight, out x in, and bias) as a PaddedLinear for inference: the
    weight transposed and padded once, at load time, so that an output width no tile divides
    (an LM head's vocabulary: 50257) is computed at the next multiple of `multiple` and
    returned as a view. Its weight is a copy: train the original, prepare it again."""
    weight, bias = (layer.weight, layer.bias) if isinstance(layer, torch.nn.Linear) else (layer, bias)
    return PaddedLinear(weight, bias, multiple, matmul=matmul)


# --- the ops ------------------------------------------------------------------------------
# Each op: where autograd needs it, the PyTorch op; inside torch.compile, the registered op
# (runtime/library.py, which runs the eager op when the graph runs), given tuned_state() to
# key compile caches by the configs; else the eager op, which makes the per-shape decision.
# `_torch_*` are the PyTorch ops as the sweeps timed them (runtime/torch_side.py), bound once.
_into, _torch_matmul_gelu, _torch_softmax = torch_side.into, torch_side.matmul_gelu, torch_side.softmax
_torch_rmsnorm, _torch_layernorm, _torch_rope = (torch_side.rmsnorm, torch_side.layernorm,
                                                 torch_side.rope)


def _takes(launch: Callable | None, a: torch.Tensor, b: torch.Tensor,
           out: torch.Tensor | None) -> bool:
    """Whether a bound matmul launch (matmul's or matmul_gelu's) can take these operands:
    an `out` of C's shape and dtype, and tensors a TMA config's descriptors can describe."""
    if launch is None or out is not None and (
            out.dtype != a.dtype or out.shape != (a.shape[0], b.shape[1])):
        return False
    return not launch.tma or _matmul.tma_ready(a, b, *(() if out is None else (out,))) is None


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b for 2-D a (M x K) and b (K x N); a contiguous `a` of more dims is taken as its
    rows (M = the product of its leading dims), as nn.Linear's activations are."""
    if a.dim() > 2 and b.dim() == 2 and out is None and a.is_contiguous() and a.numel():
        return matmul(a.view(-1, a.shape[-1]), b).view(*a.shape[:-1], -1)
    fast = None  # the fast path (above _remember): where the op is known to run
    if not (_compiling() or _modes()):
        fast = ("matmul", a.shape, b.shape, a.dtype, b.dtype, a.get_device())
        if out is None and (asks := _op_only.get(fast)) is not None and (
                _monotonic() < _file_state[2] and (asks is _never or not asks())):
            return torch.matmul(a, b)
    how = _route(a, b)
    sa, sb, dtype = a.shape, b.shape, a.dtype  # each read once: every read builds an object
    # operands that do not multiply (K differs) take the op's path, which raises its own error
    ours = (len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0] and dtype == b.dtype
            and dtype in _DTYPES["matmul"])
    if how is not None:
        if how == GRAPH and ours:
            return _into(out, _REGISTERED["matmul"](a, b, tuned_state()))
        return _into(out, torch.matmul(a, b))
    if ours:
        sizes, device = (sa[0], sb[1], sa[1]), a.get_device()
        launch = plan("matmul", dtype, sizes, device)
        if launch is not None and _takes(launch, a, b, out):
            return launch(a, b, out)
        _remember(fast, "matmul", dtype, sizes, device)
    else:
        _remember(fast)
    return torch.matmul(a, b) if out is None else torch.matmul(a, b, out=out)


def addmm(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """bias + a @ b, torch.addmm's arguments (nn.Linear's product and bias, with the weight
    K x N): torch.addmm itself, eagerly, captured and compiled (where dynamo traces it as it
    would without tlab). cuBLAS adds the bias in its GEMM's epilogue; tlab's matmul kernel
    has none, and the pass over C that adds the bias after it costs more than the kernel's
    lead over cuBLAS at the shapes where the two were timed side by side. Here so that a
    model can call ops for every layer; `matmul_gelu` fuses its bias (and GELU)."""
    return torch.addmm(bias, a, b)


def matmul_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, approximate: str = "none",
                out: torch.Tensor | None = None) -> torch.Tensor:
    """F.gelu(a @ b + bias, approximate=...) for 2-D a (M x K), b (K x N) and a bias of N
    values: nn.Linear's product and bias, then GELU. The op it stands in for is
    F.gelu(torch.addmm(bias, a, b)) (the `torch` baseline of the matmul_gelu sweeps). A
    contiguous `a` of more dims is taken as its rows, as in matmul."""
    if a.dim() > 2 and b.dim() == 2 and out is None and a.is_contiguous() and a.numel():
        return matmul_gelu(a.view(-1, a.shape[-1]), b, bias, approximate).view(*a.shape[:-1], -1)
    fast = None  # the fast path (above _remember); a key holds a valid form only
    if not (_compiling() or _modes()):
        fast = ("matmul_gelu", approximate, a.shape, b.shape, a.dtype, b.dtype, a.get_device())
        if out is None and (asks := _op_only.get(fast)) is not None and _monotonic() < (
                _file_state[2]) and (asks is _never or not asks()):
            return _torch_matmul_gelu(a, b, bias, approximate)
    form = _matmul_gelu.FORMS.get(approximate)
    if form is None:
        raise ValueError(f"approximate={approximate!r}: accepted are 'none' and 'tanh'")
    how = _route(a, b, bias)
    sa, sb, dtype = a.shape, b.shape, a.dtype
    ours = (len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0] and dtype == b.dtype
            and dtype in _DTYPES["matmul_gelu"])
    kernel = _GELU_KERNELS[approximate]
    if how is not None:
        if how == GRAPH and ours:
            return _into(out, _REGISTERED["matmul_gelu"](a, b, bias, approximate, tuned_state()))
        return _into(out, _torch_matmul_gelu(a, b, bias, approximate))
    if ours:
        sizes, device = (sa[0], sb[1], sa[1]), a.get_device()
        launch = plan(kernel, dtype, sizes, device, lambda config: _matmul.bind(config, form))
        if (launch is not None and bias.dtype == dtype and bias.shape == (sb[1],)
                and bias.is_contiguous() and _takes(launch, a, b, out)):
            return launch(a, b, out, bias)
        _remember(fast, kernel, dtype, sizes, device)
    else:
        _remember(fast)
    return _into(out, _torch_matmul_gelu(a, b, bias, approximate))


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dim of a 2-D x (a contiguous x of more dims: over its rows)."""
    if x.dim() > 2 and out is None and x.is_contiguous() and x.numel():
        return softmax(x.view(-1, x.shape[-1])).view(x.shape)
    fast = None  # the fast path (above _remember)
    if not (_compiling() or _modes()):
        fast = ("softmax", x.shape, x.dtype, x.get_device())
        if out is None and (asks := _op_only.get(fast)) is not None and (
                _monotonic() < _file_state[2] and (asks is _never or not asks())):
            return torch.softmax(x, -1)
    how = _route(x)
    shape, dtype = x.shape, x.dtype
    ours = len(shape) == 2 and dtype in _DTYPES["softmax"]
    if how is not None:
        if how == GRAPH and ours:
            return _into(out, _REGISTERED["softmax"](x, tuned_state()))
        return _into(out, torch.softmax(x, -1))
    if ours:
        sizes, device = tuple(shape), x.get_device()
        launch = plan("softmax", dtype, sizes, device)
        if launch is not None:
            return launch(x, out)
        _remember(fast, "softmax", dtype, sizes, device)
    else:
        _remember(fast)
    return _into(out, torch.softmax(x, dim=-1))


def _rmsnorm_aside(x, weight, eps, residual):
    """rmsnorm without a weight (F.rms_norm's, as the kernels take one), or over the 2-D view
    of the rows of a contiguous x of more dims (and of a residual of its shape); None where x
    or the residual cannot be viewed so."""
    if weight is None:
        return _torch_rmsnorm(x, weight, eps, residual)
    if not x.is_contiguous() or not x.numel() or (residual is not None and (
            residual.shape != x.shape or not residual.is_contiguous())):
        return None
    rows = x.view(-1, x.shape[-1])
    if residual is None:
        return rmsnorm(rows, weight, eps).view(x.shape)
    y, h = rmsnorm(rows, weight, eps, residual.view(rows.shape))
    return y.view(x.shape), h.view(x.shape)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor | None, eps: float = _rmsnorm.EPS,
            residual: torch.Tensor | None = None):
    """RMSNorm of the rows of x, or of x + residual: y, or (y, x + residual) with a residual
    (the fused add_rmsnorm kernel). The rows of a contiguous x of more than 2 dims are those
    of its 2-D view (leading dims folded), with a residual of x's shape alike."""
    if (weight is None or x.dim() > 2) and (
            done := _rmsnorm_aside(x, weight, eps, residual)) is not None:
        return done
    fast = None  # the fast path (above _remember)
    if residual is None and not (_compiling() or _modes()):
        fast = ("rmsnorm", x.shape, x.dtype, weight.dtype, x.get_device())
        if (asks := _op_only.get(fast)) is not None and (
                _monotonic() < _file_state[2] and (asks is _never or not asks())):
            return F.rms_norm(x, (x.shape[-1],), weight, eps)
    how = _route(x, weight, residual)
    shape, dtype = x.shape, x.dtype
    # a residual of another dtype (an fp32 residual stream) or shape (broadcast) takes the
    # op's path: x + residual promotes or broadcasts there, the fused kernel does neither
    ours = len(shape) == 2 and dtype in _DTYPES["rmsnorm"] and (
        residual is None or (residual.dtype == dtype and residual.shape == shape))
    kernel = "rmsnorm" if residual is None else "add_rmsnorm"
    if how is not None:
        if how == GRAPH and ours:
            if residual is None:
                return _REGISTERED["rmsnorm"](x, weight, eps, tuned_state())
            return _REGISTERED["add_rmsnorm"](x, weight, eps, residual, tuned_state())
        return _torch_rmsnorm(x, weight, eps, residual)
    if ours:
        sizes, device = tuple(shape), x.get_device()
        launch = plan(kernel, dtype, sizes, device)
        if launch is not None and weight.dtype == dtype:
            return launch(x, weight, eps, residual)
        _remember(fast, kernel, dtype, sizes, device)
    else:
        _remember(fast)
    if residual is None:  # the common case without _torch_rmsnorm's call: it costs host time
        return F.rms_norm(x, (shape[-1],), weight, eps)
    return _torch_rmsnorm(x, weight, eps, residual)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
              eps: float = _layernorm.EPS) -> torch.Tensor:
    """LayerNorm of the rows of a 2-D x (F.layer_norm over the last dim; a contiguous x of
    more dims: over its rows). Without a weight or a bias (nn.LayerNorm(bias=False), or
    elementwise_affine=False): the op, as tlab's kernel takes both."""
    if weight is None or bias is None:
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
    if x.dim() > 2 and x.is_contiguous() and x.numel():
        return layernorm(x.view(-1, x.shape[-1]), weight, bias, eps).view(x.shape)
    fast = None  # the fast path (above _remember)
    if not (_compiling() or _modes()):
        fast = ("layernorm", x.shape, x.dtype, x.get_device())
        if (asks := _op_only.get(fast)) is not None and (
                _monotonic() < _file_state[2] and (asks is _never or not asks())):
            return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
    how = _route(x, weight, bias)
    shape, dtype = x.shape, x.dtype
    ours = len(shape) == 2 and dtype in _DTYPES["layernorm"]
    if how == GRAPH and ours:
        return _REGISTERED["layernorm"](x, weight, bias, eps, tuned_state())
    if how is None and ours:
        sizes, device = tuple(shape), x.get_device()
        launch = plan("layernorm", dtype, sizes, device)
        if (launch is not None and weight.dtype == bias.dtype == dtype
                and weight.shape == bias.shape == (shape[1],)):
            return launch(x, weight, bias, eps)
        _remember(fast, "layernorm", dtype, sizes, device)
    elif how is None:
        _remember(fast)
    return F.layer_norm(x, (shape[-1],), weight, bias, eps)


def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """(q, k) rotated by the fp32 tables cos and sin (seq x head_dim / 2), rotate-half
    convention; q and k are batch x seq x heads x head_dim (views of a fused qkv welcome),
    k with as many heads as q or fewer (grouped-query attention). The choice is made at q's
    shape (the sweeps tune q and k of one shape; with fewer k heads both the kernel and the
    PyTorch op have less of k to do)."""
    fast = None  # the fast path (above _remember)
    if not (_compiling() or _modes()):
        fast = ("rope", q.shape, q.dtype, q.get_device())
        if (asks := _op_only.get(fast)) is not None and _monotonic() < _file_state[2] and (
                asks is _never or not asks()):
            return _torch_rope(q, k, cos, sin)
    how = _route(q, k, cos, sin)
    shape, dtype = q.shape, q.dtype
    ours = len(shape) == 4 and dtype in _DTYPES["rope"]
    if how == GRAPH and ours:
        return _REGISTERED["rope"](q, k, cos, sin, tuned_state())
    if how is None and ours and shape[3] % 2 == 0:
        sizes, device = tuple(shape), q.get_device()
        launch = plan("rope", dtype, sizes, device)
        if launch is not None and _rope_takes(q, k, cos, sin):
            return launch(q, k, cos, sin)
        _remember(fast, "rope", dtype, sizes, device)
    elif how is None:
        _remember(fast)
    return _torch_rope(q, k, cos, sin)


def _rope_takes(q, k, cos, sin) -> bool:
    """Whether the rope kernel takes these operands (q's shape and dtype were checked)."""
    sq, sk = q.shape, k.shape
    return (k.ndim == 4 and sk[:2] == sq[:2] and sk[3] == sq[3] and sk[2] <= sq[2]
            and k.dtype == q.dtype and cos.dtype == sin.dtype == torch.float32
            and cos.shape == sin.shape == (sq[1], sq[3] // 2))


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y for contiguous tensors of one shape and dtype (any number of dims); a y that is a
    Python number takes torch.add."""
    fast = None  # the fast path (above _remember)
    if not (_compiling() or _modes()):
        fast = ("add", x.shape, x.dtype, x.get_device())
        if (asks := _op_only.get(fast)) is not None and (
                _monotonic() < _file_state[2] and (asks is _never or not asks())):
            return torch.add(x, y)
    how = _route(x, y) if isinstance(y, torch.Tensor) else "number"  # neither branch: op
    dtype = x.dtype
    if how == GRAPH and dtype in _DTYPES["add"]:
        return _REGISTERED["add"](x, y, tuned_state())
    if how is None and dtype in _DTYPES["add"]:
        sizes, device = (x.numel(),), x.get_device()
        launch = plan("add", dtype, sizes, device)
        if (launch is not None and x.shape == y.shape and y.dtype == dtype
                and x.is_contiguous() and y.is_contiguous()):
            return launch(x, y)
        _remember(fast, "add", dtype, sizes, device)
    elif how is None:
        _remember(fast)
    return torch.add(x, y)


# --- bound once: an eager loop at one shape -------------------------------------------------

# Each op's PyTorch op, called with the op's own arguments (what ops runs in its place).
_TORCH_SIDE = {matmul: torch.matmul, addmm: torch.addmm, matmul_gelu: _torch_matmul_gelu,
               softmax: _torch_softmax, rmsnorm: _torch_rmsnorm, layernorm: _torch_layernorm,
               rope: _rope.rotate_half_rope, add: torch.add}  # rope's check ran in bind's call


def bind(op: Callable, *args, **kwargs) -> Callable:
    """`op` (one of the ops above), decided once for calls like op(*args, **kwargs): where
    ops runs the PyTorch op for that call eagerly, the PyTorch op itself, taking op's
    arguments, so that the calls after add no host time to it (ops' fast path still asks a
    few questions a call); where ops runs tlab's kernel, or where autograd needs the result,
    `op`. Calls op(*args, **kwargs) once to decide. For eager loops at one shape where the
    op is host-bound (a decode step): the function returned asks nothing per call, so it
    follows no later change of configs, and a CUDA graph captured from the PyTorch op
    returned runs that op (captured, ops may run tlab's kernel: capture `op` itself)."""
    if op not in _TORCH_SIDE:
        names = ", ".join(f"ops.{f.__name__}" for f in _TORCH_SIDE)
        raise TlabError(f"bind takes one of {names}; got {op!r}")
    if op is addmm:  # torch.addmm always
        return torch.addmm
    if _compiling():
        return op
    _dispatch.remembered[0] = None
    valid_until, _file_state[2] = _file_state[2], 0.0  # no fast path: these calls decide
    try:
        op(*args, **kwargs)
        if _dispatch.remembered[0] is None:  # a kernel that runs eagerly once (_FirstCall)
            op(*args, **kwargs)
    finally:
        _file_state[2] = max(valid_until, _file_state[2])
    return op if _dispatch.remembered[0] is None else _TORCH_SIDE[op]


# The registered ops (runtime/library.py): each decomposes, when a graph is traced at a static
# shape, into the PyTorch op where tlab's kernel does not run there, else into a node that
# runs the eager op above when the graph runs; each such node's fake is the PyTorch op.
_GELU_KERNELS = {"none": _matmul_gelu.SPEC.name, "tanh": _matmul_gelu.TANH_SPEC.name}
_DTYPES_OF = {**_DTYPES, "add_rmsnorm": _DTYPES["rmsnorm"],  # the dtypes each op takes
              _GELU_KERNELS["tanh"]: _DTYPES["matmul_gelu"]}


def _may_run(kernel: str, dtype: torch.dtype, sizes: tuple, device: int, form=None) -> bool:
    """Whether the graph being traced runs tlab's kernel at this shape (in_compiled_graph's
    rule, for a graph captured in CUDA graphs or not)."""
    if dtype not in _DTYPES_OF[kernel]:
        return False
    plan(kernel, dtype, sizes, device,
         None if form is None else (lambda config: _matmul.bind(config, form)))
    return in_compiled_graph(kernel, dtype, sizes, device, in_graphs.graph_captured())


def _may_run_matmul(kernel: str, a: torch.Tensor, b: torch.Tensor, form=None) -> bool:
    return (a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype
            and _may_run(kernel, a.dtype, (a.shape[0], b.shape[1], a.shape[1]), a.get_device(),
                         form))


def _may_run_rows(kernel: str, x: torch.Tensor) -> bool:
    return x.ndim == 2 and _may_run(kernel, x.dtype, tuple(x.shape), x.get_device())


_REGISTERED = {
    "matmul": library.define("matmul", in_graphs.scratch_not_kept(matmul), torch.matmul,
                             lambda a, b: _may_run_matmul("matmul", a, b), flops=library.mm_flops),
    "matmul_gelu": library.define(
        "matmul_gelu", in_graphs.scratch_not_kept(matmul_gelu), _torch_matmul_gelu,
        lambda a, b, bias, approximate: approximate in _GELU_KERNELS and _may_run_matmul(
            _GELU_KERNELS[approximate], a, b, _matmul_gelu.FORMS[approximate]),
        flops=library.mm_flops),
    "softmax": library.define("softmax", softmax, _torch_softmax,
                              lambda x: _may_run_rows("softmax", x)),
    "rmsnorm": library.define("rmsnorm", rmsnorm, _torch_rmsnorm,
                              lambda x, w, eps: _may_run_rows("rmsnorm", x)),
    "add_rmsnorm": library.define(
        "add_rmsnorm", lambda x, w, eps, r: rmsnorm(x, w, eps, r), _torch_rmsnorm,
        lambda x, w, eps, r: _may_run_rows("add_rmsnorm", x)),
    "layernorm": library.define(
        "layernorm", layernorm, _torch_layernorm,
        lambda x, w, b, eps: _may_run_rows("layernorm", x)),
    "rope": library.define("rope", rope, _torch_rope,
                           lambda q, k, cos, sin: q.ndim == 4 and _may_run(
                               "rope", q.dtype, tuple(q.shape), q.get_device())),
    "add": library.define("add", add, torch.add,
                          lambda x, y: _may_run("add", x.dtype, (x.numel(),), x.get_device())),
}
