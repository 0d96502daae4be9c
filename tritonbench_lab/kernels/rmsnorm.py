"""RMSNorm, alone or fused with the residual add before it.

    rmsnorm:      y = x / sqrt(mean(x^2) + eps) * w
    add_rmsnorm:  h = x + r;  y = h / sqrt(mean(h^2) + eps) * w;  both h and y are written

Shapes: x, r, h and y are rows x cols (any row stride), w has cols elements. Math in fp32
whatever the dtype; outputs in the input dtype. The normalisation uses h before rounding,
as a fused kernel can (the unfused ops round h to the dtype first; the difference is within
the dtype's tolerance).

Work: about 4 flops per element. Fewest bytes: rmsnorm reads x and w and writes y,
(2 * rows * cols + cols) * element size; add_rmsnorm also reads r and writes h,
(4 * rows * cols + cols) * element size. Both are bound by memory bandwidth (GB/s).

One launch of the fused kernel replaces the separate add, square, mean, rsqrt and two
multiplies, each of which reads and writes the whole tensor. The residual branch is a
compile-time constant (HAS_RESIDUAL), so the plain kernel carries no dead code.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import (
    INTERPRETER_ROWS,
    Config,
    Space,
    next_power_of_2,
    row_interpreter_seconds,
    row_tile_fits,
    rows_not_exceeding,
    split_config,
)
from tritonbench_lab.spec import (
    GBPS,
    Cost,
    Inputs,
    KernelSpec,
    Outputs,
    Shape,
    Tolerance,
    compile_baseline,
)

MAX_COLS = 65_536  # widest row one program holds in registers
EPS = 1e-6
DEFAULT_ROWS = 16384  # rows (tokens) when only a width is given


@triton.jit
def rmsnorm_kernel(
    x_ptr, r_ptr, w_ptr, y_ptr, h_ptr,  # input, residual, weight, output, x + residual
    n_rows,  # rows
    stride_xm, stride_rm, stride_ym, stride_hm,  # row strides (columns are contiguous)
    eps,  # added to the mean square before the square root
    N_COLS: tl.constexpr,  # the width, a compile-time constant (as layernorm's): the column
    # mask folds away where N_COLS == BLOCK_COLS, and 1 / N_COLS is a constant; the price is
    # one compile per width a caller uses, not per power of two
    BLOCK_COLS: tl.constexpr,  # N_COLS rounded up to a power of two
    ROWS: tl.constexpr,  # rows per program
    HAS_RESIDUAL: tl.constexpr,  # add r to x first and write the sum to h
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_COLS)
    # Rows past the end re-read a real row and are not stored.
    safe_rows = (rows % n_rows)[:, None]
    col_mask = cols[None, :] < N_COLS
    store_mask = (rows[:, None] < n_rows) & col_mask
    x = tl.load(x_ptr + safe_rows * stride_xm + cols[None, :], mask=col_mask, other=0.0)
    x = x.to(tl.float32)
    if HAS_RESIDUAL:
        r = tl.load(r_ptr + safe_rows * stride_rm + cols[None, :], mask=col_mask, other=0.0)
        x += r.to(tl.float32)
        tl.store(h_ptr + rows[:, None] * stride_hm + cols[None, :],
                 x.to(h_ptr.dtype.element_ty), mask=store_mask)
    # Padded columns are zero, so they add nothing to the sum of squares.
    inv_rms = tl.math.rsqrt(tl.sum(x * x, axis=1) / N_COLS + eps)
    # w is read by every program: asked to stay in the L2 as the rows stream past.
    w = tl.load(w_ptr + cols, mask=cols < N_COLS, other=0.0, eviction_policy="evict_last")
    w = w.to(tl.float32)
    y = x * inv_rms[:, None] * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :],
             y.to(y_ptr.dtype.element_ty), mask=store_mask)


DEFAULT_CONFIG: Config = {"ROWS": 1, "num_warps": 4}


def _rows_view(t: torch.Tensor, name: str) -> torch.Tensor:
    """Columns must be contiguous (for wide vector loads); any row stride is fine."""
    if t.ndim != 2:
        raise TlabError(f"rmsnorm needs 2-D {name}, got shape {tuple(t.shape)}")
    return t if t.stride(1) == 1 else t.contiguous()


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS,
            residual: torch.Tensor | None = None, config: Config | None = None,
            out: torch.Tensor | None = None, residual_out: torch.Tensor | None = None):
    """RMSNorm of the rows of x (of x + residual when given) under exactly `config`.

    Returns y, or (y, x + residual) when a residual is given.
    """
    x = _rows_view(x, "x")
    check_shape(Shape.of(rows=x.shape[0], cols=x.shape[1]))
    if weight.shape != (x.shape[1],):
        raise TlabError(f"rmsnorm weight must have {x.shape[1]} elements, got {tuple(weight.shape)}")
    config = DEFAULT_CONFIG if config is None else config
    has_residual = residual is not None
    if has_residual:
        residual = _rows_view(residual, "residual")
        if residual.shape != x.shape:
            raise TlabError(f"residual shape {tuple(residual.shape)} differs from x {tuple(x.shape)}")
        if residual_out is None:
            residual_out = torch.empty_like(x)
    if out is None:
        out = torch.empty_like(x)
    meta, options = split_config(config)
    n_rows, n_cols = x.shape
    # Without a residual, x stands in for the unused pointers; the branch never touches them.
    r, h = (residual, residual_out) if has_residual else (x, out)
    rmsnorm_kernel[(triton.cdiv(n_rows, meta["ROWS"]),)](
        x, r, weight.contiguous(), out, h, n_rows,
        x.stride(0), r.stride(0), out.stride(0), h.stride(0), eps,
        N_COLS=n_cols, BLOCK_COLS=next_power_of_2(n_cols), HAS_RESIDUAL=has_residual,
        **meta, **options,
    )
    return (out, residual_out) if has_residual else out


def bind(config: Config):
    """`run(x, weight, eps, residual=None)` under one config (tritonbench_lab.ops keeps one
    per shape)."""
    return lambda x, weight, eps, residual=None: rmsnorm(x, weight, eps, residual, config)


# --- references and baselines ------------------------------------------------------------

def _rms_normalise(h: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def rmsnorm_reference(inputs: Inputs) -> Outputs:
    return (_rms_normalise(inputs["x"].double(), inputs["weight"].double(), inputs["eps"]),)


def add_rmsnorm_reference(inputs: Inputs) -> Outputs:
    h = inputs["x"].double() + inputs["residual"].double()
    return (_rms_normalise(h, inputs["weight"].double(), inputs["eps"]), h)


def unfused_rmsnorm(inputs: Inputs) -> torch.Tensor:
    """The usual eager module: upcast, square, mean, rsqrt, scale, downcast, weight."""
    x = inputs["x"]
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + inputs["eps"])
    return inputs["weight"] * h.to(x.dtype)


def unfused_add_rmsnorm(inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    h = inputs["x"] + inputs["residual"]
    return unfused_rmsnorm({**inputs, "x": h}), h


def torch_rmsnorm(inputs: Inputs) -> torch.Tensor:
    x = inputs["x"]
    return F.rms_norm(x, (x.shape[-1],), inputs["weight"], inputs["eps"])


def torch_add_rmsnorm(inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    h = inputs["x"] + inputs["residual"]
    return torch_rmsnorm({**inputs, "x": h}), h


# --- space, inputs, cost -------------------------------------------------------------------

SPACE = Space(
    params={"ROWS": (1, 2, 4, 8), "num_warps": (1, 2, 4, 8, 16, 32)},
    constraints=(row_tile_fits, rows_not_exceeding),
    default=DEFAULT_CONFIG,
)


def _make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int,
                 residual: bool) -> Inputs:
    """x ~ N(0, 1) plus a per-row scale in [0.5, 4); r ~ N(0, 1); w ~ U(0.5, 1.5)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    rows, cols = shape["rows"], shape["cols"]
    scale = 0.5 + 3.5 * torch.rand((rows, 1), generator=gen, device=device)
    inputs = {"x": (torch.randn((rows, cols), generator=gen, device=device) * scale).to(dtype)}
    if residual:
        inputs["residual"] = torch.randn((rows, cols), generator=gen, device=device).to(dtype)
    inputs["weight"] = (0.5 + torch.rand(cols, generator=gen, device=device)).to(dtype)
    inputs["eps"] = EPS
    return inputs


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    return _make_inputs(shape, dtype, device, seed, residual=False)


def make_add_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    return _make_inputs(shape, dtype, device, seed, residual=True)


def allocate_outputs(inputs: Inputs) -> Outputs:
    return (torch.empty_like(inputs["x"]),)


def allocate_add_outputs(inputs: Inputs) -> Outputs:
    return (torch.empty_like(inputs["x"]), torch.empty_like(inputs["x"]))


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return (rmsnorm(inputs["x"], inputs["weight"], inputs["eps"], config=config, out=outputs[0]),)


def launch_add(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return rmsnorm(inputs["x"], inputs["weight"], inputs["eps"], residual=inputs["residual"],
                   config=config, out=outputs[0], residual_out=outputs[1])


def _bytes(shape: Shape, dtype: torch.dtype, row_tensors: int) -> Cost:
    rows, cols = shape["rows"], shape["cols"]
    size = torch.empty((), dtype=dtype).element_size()
    return Cost(flops=4 * rows * cols, bytes=(row_tensors * rows * cols + cols) * size)


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    return _bytes(shape, dtype, row_tensors=2)  # read x, write y


def add_cost(shape: Shape, dtype: torch.dtype) -> Cost:
    return _bytes(shape, dtype, row_tensors=4)  # read x and r, write y and h


def check_shape(shape: Shape) -> None:
    if min(shape.sizes) < 1:
        raise TlabError(f"rmsnorm sizes must be positive, got {shape}")
    if shape["cols"] > MAX_COLS:
        raise TlabError(
            f"rmsnorm rows of {shape['cols']} columns are wider than the {MAX_COLS} a single-pass "
            "program holds"
        )


# Hidden sizes of common transformer models; 16384 rows (tokens) make every bf16 shape
# move at least 128 MB, far past the 60 MB L2 of an H200.
_DEFAULT_SHAPES = tuple(Shape.of(rows=DEFAULT_ROWS, cols=c)
                        for c in (1024, 2048, 4096, 5120, 8192, 16384))
_SMALL_SHAPES = (Shape.of(rows=37, cols=129), Shape.of(rows=64, cols=1000))
_TOLERANCE = {
    # y is of order one (times w); the bound covers rounding y (and h) to the dtype.
    torch.float32: Tolerance(atol=2e-5, rtol=2e-5),
    torch.float16: Tolerance(atol=2e-3, rtol=2e-3),
    torch.bfloat16: Tolerance(atol=1.6e-2, rtol=1.6e-2),
}
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

SPEC = KernelSpec(
    name="rmsnorm",
    summary="y = x / rms(x) * w over the last dim, fp32 math, one pass over memory",
    dims=("rows", "cols"),
    dtypes=_DTYPES,
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=rmsnorm_reference,
    baselines={
        "torch": torch_rmsnorm,
        "unfused": unfused_rmsnorm,
        "compiled": compile_baseline(unfused_rmsnorm),
    },
    space=SPACE,
    default_shapes=_DEFAULT_SHAPES,
    small_shapes=_SMALL_SHAPES,
    make_inputs=make_inputs,
    tolerance=_TOLERANCE,
    cost=cost,
    metric=GBPS,
    check_shape=check_shape,
    from_size=lambda n: Shape.of(rows=DEFAULT_ROWS, cols=n),
    small_from_size=lambda n: Shape.of(rows=INTERPRETER_ROWS, cols=n),
    interpreter_seconds=lambda shape, config: row_interpreter_seconds(dict(shape.dims), config),
    autotune_key=("n_rows", "N_COLS"),
)

# The fused variant differs from the plain one only in what it computes and moves.
ADD_SPEC = dataclasses.replace(
    SPEC,
    name="add_rmsnorm",
    summary="h = x + r; y = rmsnorm(h) * w; writes h and y in one fused pass",
    launch=launch_add,
    allocate_outputs=allocate_add_outputs,
    reference=add_rmsnorm_reference,
    baselines={
        "torch": torch_add_rmsnorm,
        "unfused": unfused_add_rmsnorm,
        "compiled": compile_baseline(unfused_add_rmsnorm),
    },
    make_inputs=make_add_inputs,
    cost=add_cost,
)
