"""The PyTorch side of tlab's ops: each op's PyTorch op, taking the op's own arguments, as ops
calls it wherever tlab's kernel does not run (the computation the sweeps' `torch` baselines,
in the kernels' modules, time).
Kept out of the kernels' modules: a kernel module's code is hashed into every row it measures
(measure/source.py), so a change here must not make the committed measurements stale."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tritonbench_lab.kernels import layernorm as _layernorm
from tritonbench_lab.kernels import rmsnorm as _rmsnorm
from tritonbench_lab.kernels.rope import rotate_half_rope


def into(out: torch.Tensor | None, y: torch.Tensor) -> torch.Tensor:
    return y if out is None else out.copy_(y)


def matmul_gelu(a, b, bias, approximate="none", out=None):
    # addmm takes 2-D operands only: an `a` of more dims (non-contiguous, or empty) as matmul
    y = torch.addmm(bias, a, b) if a.dim() == b.dim() == 2 else torch.matmul(a, b) + bias
    return into(out, F.gelu(y, approximate=approximate))


def softmax(x, out=None):
    return into(out, torch.softmax(x, -1))


def rmsnorm(x, weight, eps=_rmsnorm.EPS, residual=None):
    h = x if residual is None else x + residual
    y = F.rms_norm(h, (h.shape[-1],), weight, eps)  # what the sweeps timed as "torch"
    return y if residual is None else (y, h)


def layernorm(x, weight, bias, eps=_layernorm.EPS):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def rope(q, k, cos, sin):
    if q.ndim != 4 or k.ndim != 4:  # fewer dims would broadcast against the tables, silently
        raise ValueError(f"rope takes q and k of batch x seq x heads x head_dim, not q of "
                         f"{q.ndim} dims and k of {k.ndim}")
    return rotate_half_rope(q, k, cos, sin)
