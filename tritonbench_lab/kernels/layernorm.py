"""LayerNorm over the last dim: y = (x - mean(x)) / sqrt(var(x) + eps) * w + b.

Shapes: x and y are rows x cols (any row stride), w and b have cols elements. Statistics in
fp32 whatever the dtype (the biased variance, as torch.nn.functional.layer_norm takes it);
y in the input dtype.

Work: about 8 flops per element. Fewest bytes: read x, w and b, write y,
(2 * rows * cols + 2 * cols) * element size: bound by memory bandwidth (GB/s).

One program holds ROWS whole rows in registers, so the row is read from memory once: the
mean, then the variance of the centred row (two reductions over registers, not the
E[x^2] - E[x]^2 shortcut, which cancels badly when the mean is large against the spread),
then the normalised, scaled and shifted row. The unfused ops read and write the tensor once
per step. With TILE_COLS > 0 a program instead walks its rows three times, a tile at a
time, as Inductor's looped reductions do: the first walk reads HBM and asks the L2 to keep
the rows, the other two read them from there. A program then holds a tile, not a row, so
more programs are resident; which is faster at a shape is for the sweep to say. A tile as
wide as the row walks it in one step (Inductor's pick at fp32 16384x4096). Where ROWS divides
the rows and the tile the width, the launcher says so (EVEN_ROWS, EVEN_COLS) and every mask
folds away, as in Inductor's kernels where its blocks divide the sizes. That usually saves a
little, but not at every shape and config: the sweep times the configs with it and picks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import (
    INTERPRETER_ROWS,
    Config,
    DeviceLimits,
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
EPS = 1e-5  # torch.nn.functional.layer_norm's default
DEFAULT_ROWS = 16384  # rows (tokens) when only a width is given


@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,  # input, weight, bias, output
    n_rows,  # rows
    stride_xm, stride_ym,  # row strides (columns are contiguous)
    eps,  # added to the variance before the square root
    N_COLS: tl.constexpr,  # the width, a compile-time constant as in Inductor's kernels: the
    # column mask folds away where N_COLS == BLOCK_COLS, and 1 / N_COLS is a constant
    BLOCK_COLS: tl.constexpr,  # N_COLS rounded up to a power of two
    ROWS: tl.constexpr,  # rows per program
    TILE_COLS: tl.constexpr,  # 0: whole rows in registers; else columns per step of three walks
    EVEN_ROWS: tl.constexpr,  # ROWS divides the rows: no row is past the end
    EVEN_COLS: tl.constexpr,  # TILE_COLS divides N_COLS: no step runs past the row's end
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    if EVEN_ROWS:  # a constant mask folds away, as do the masks below where the flags allow
        row_ok = tl.full((ROWS, 1), 1, tl.int1)
        x_rows = x_ptr + rows[:, None] * stride_xm
    else:  # rows past the end re-read a real row and are not stored
        row_ok = rows[:, None] < n_rows
        x_rows = x_ptr + (rows % n_rows)[:, None] * stride_xm
    y_rows = y_ptr + rows[:, None] * stride_ym
    if TILE_COLS == 0:
        cols = tl.arange(0, BLOCK_COLS)
        col_mask = cols[None, :] < N_COLS
        x = tl.load(x_rows + cols[None, :], mask=col_mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / N_COLS  # padded columns are zero: they add nothing
        centred = tl.where(col_mask, x - mean[:, None], 0.0)
        rstd = tl.math.rsqrt(tl.sum(centred * centred, axis=1) / N_COLS + eps)
        # w and b are read by every program: asked to stay in the L2 as x streams past.
        w = tl.load(w_ptr + cols, mask=cols < N_COLS, other=0.0, eviction_policy="evict_last")
        b = tl.load(b_ptr + cols, mask=cols < N_COLS, other=0.0, eviction_policy="evict_last")
        y = centred * rstd[:, None] * w.to(tl.float32)[None, :] + b.to(tl.float32)[None, :]
        tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=row_ok & col_mask)
    else:
        # The row walked three times, TILE_COLS columns a step (Inductor's looped reduction):
        # the sum, the centred squares, then y. The first walk reads HBM and asks the L2 to
        # keep the row; the next two read it from there, so HBM still sees x once, and a
        # program holds a tile, not a row, in registers (more programs resident per SM).
        cols = tl.arange(0, TILE_COLS)[None, :]
        if EVEN_COLS:
            col_ok = tl.full((1, TILE_COLS), 1, tl.int1)
        total = tl.zeros((ROWS, TILE_COLS), dtype=tl.float32)
        for start in range(0, N_COLS, TILE_COLS):
            if not EVEN_COLS:
                col_ok = start + cols < N_COLS
            total += tl.load(x_rows + start + cols, mask=col_ok, other=0.0,
                             eviction_policy="evict_last").to(tl.float32)
        mean = tl.sum(total, axis=1)[:, None] / N_COLS
        squares = tl.zeros((ROWS, TILE_COLS), dtype=tl.float32)
        for start in range(0, N_COLS, TILE_COLS):
            if not EVEN_COLS:
                col_ok = start + cols < N_COLS
            x = tl.load(x_rows + start + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
            centred = tl.where(col_ok, x.to(tl.float32) - mean, 0.0)
            squares += centred * centred
        rstd = tl.math.rsqrt(tl.sum(squares, axis=1)[:, None] / N_COLS + eps)
        for start in range(0, N_COLS, TILE_COLS):
            if not EVEN_COLS:
                col_ok = start + cols < N_COLS
            x = tl.load(x_rows + start + cols, mask=col_ok, other=0.0, eviction_policy="evict_first")
            w = tl.load(w_ptr + start + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
            b = tl.load(b_ptr + start + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
            y = (x.to(tl.float32) - mean) * rstd * w.to(tl.float32) + b.to(tl.float32)
            tl.store(y_rows + start + cols, y.to(y_ptr.dtype.element_ty), mask=row_ok & col_ok)


DEFAULT_CONFIG: Config = {"ROWS": 1, "num_warps": 4, "TILE_COLS": 0}


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = EPS,
              config: Config | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """LayerNorm of the rows of x under exactly `config` (DEFAULT_CONFIG when None)."""
    if x.ndim != 2:
        raise TlabError(f"layernorm needs 2-D x, got shape {tuple(x.shape)}")
    x = x if x.stride(1) == 1 else x.contiguous()  # wide vector loads need unit columns
    check_shape(Shape.of(rows=x.shape[0], cols=x.shape[1]))
    for name, t in (("weight", weight), ("bias", bias)):
        if t.shape != (x.shape[1],):
            raise TlabError(f"layernorm {name} must have {x.shape[1]} elements, "
                            f"got {tuple(t.shape)}")
    if out is None:
        out = torch.empty_like(x)
    meta, options = split_config(SPACE.complete(DEFAULT_CONFIG if config is None else config))
    n_rows, n_cols = x.shape
    layernorm_kernel[(triton.cdiv(n_rows, meta["ROWS"]),)](
        x, weight.contiguous(), bias.contiguous(), out, n_rows, x.stride(0), out.stride(0), eps,
        N_COLS=n_cols, BLOCK_COLS=next_power_of_2(n_cols), **meta, **options,
        EVEN_ROWS=n_rows % meta["ROWS"] == 0,
        EVEN_COLS=meta["TILE_COLS"] > 0 and n_cols % meta["TILE_COLS"] == 0,
    )
    return out


def bind(config: Config):
    """`run(x, weight, bias, eps, out=None)` under one config (ops keeps one per shape)."""
    return lambda x, weight, bias, eps, out=None: layernorm(x, weight, bias, eps, config, out)


# --- reference and baselines -------------------------------------------------------------

def layernorm_reference(inputs: Inputs) -> Outputs:
    x = inputs["x"].double()
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + inputs["eps"])
    return (y * inputs["weight"].double() + inputs["bias"].double(),)


def unfused_layernorm(inputs: Inputs) -> torch.Tensor:
    """The textbook eager module: upcast, mean, centre, variance, rsqrt, scale, shift."""
    x = inputs["x"]
    h = x.float()
    centred = h - h.mean(dim=-1, keepdim=True)
    h = centred * torch.rsqrt(centred.pow(2).mean(dim=-1, keepdim=True) + inputs["eps"])
    return (h * inputs["weight"].float() + inputs["bias"].float()).to(x.dtype)


def torch_layernorm(inputs: Inputs) -> torch.Tensor:
    x = inputs["x"]
    return F.layer_norm(x, (x.shape[-1],), inputs["weight"], inputs["bias"], inputs["eps"])


# --- space, inputs, cost -------------------------------------------------------------------

def tile_fits(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """A program holds ROWS whole rows in registers (TILE_COLS=0), or ROWS x TILE_COLS while
    it walks the rows. A tile as wide as the padded row walks it in one step, three times
    through the L2 (Inductor's pick at fp32 16384x4096), holding less at once."""
    padded, tile = next_power_of_2(sizes["cols"]), config["TILE_COLS"]
    if tile > padded:
        return f"TILE_COLS={tile} is wider than the row of {sizes['cols']} padded to {padded}"
    return row_tile_fits({**config, "TILES": padded // tile if tile else 1}, sizes, elem_bytes,
                         limits)


SPACE = Space(
    params={"ROWS": (1, 2, 4, 8), "num_warps": (1, 2, 4, 8, 16, 32),
            "TILE_COLS": (0, 1024, 2048, 4096)},
    constraints=(tile_fits, rows_not_exceeding),
    default=DEFAULT_CONFIG,
    added={"TILE_COLS": 0},  # configs from before the walked rows: whole rows in registers
)


def interpreter_seconds(shape: Shape, config: Config) -> float:
    """A walked row costs three passes over it in the interpreter."""
    walks = 3 if config.get("TILE_COLS", 0) else 1
    return walks * row_interpreter_seconds(dict(shape.dims), config)


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    """x ~ N(m, s^2) per row, m ~ N(0, 4) and s in [0.5, 4) (a mean far from zero is what
    a careless variance gets wrong); w ~ U(0.5, 1.5); b ~ N(0, 1/4)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    rows, cols = shape["rows"], shape["cols"]
    offset = 2 * torch.randn((rows, 1), generator=gen, device=device)
    scale = 0.5 + 3.5 * torch.rand((rows, 1), generator=gen, device=device)
    x = torch.randn((rows, cols), generator=gen, device=device) * scale + offset
    return {
        "x": x.to(dtype),
        "weight": (0.5 + torch.rand(cols, generator=gen, device=device)).to(dtype),
        "bias": (0.5 * torch.randn(cols, generator=gen, device=device)).to(dtype),
        "eps": EPS,
    }


def allocate_outputs(inputs: Inputs) -> Outputs:
    return (torch.empty_like(inputs["x"]),)


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return (layernorm(inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"], config,
                      out=outputs[0]),)


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    rows, cols = shape["rows"], shape["cols"]
    size = torch.empty((), dtype=dtype).element_size()
    return Cost(flops=8 * rows * cols, bytes=(2 * rows * cols + 2 * cols) * size)


def check_shape(shape: Shape) -> None:
    if min(shape.sizes) < 1:
        raise TlabError(f"layernorm sizes must be positive, got {shape}")
    if shape["cols"] > MAX_COLS:
        raise TlabError(f"layernorm rows of {shape['cols']} columns are wider than the "
                        f"{MAX_COLS} a single-pass program holds")


# Hidden sizes of common transformer models at 16384 tokens (every bf16 shape moves at least
# 64 MB), and at one token and 65536 tokens (decode and a long prefill).
_DEFAULT_SHAPES = (
    *(Shape.of(rows=DEFAULT_ROWS, cols=c) for c in (1024, 2048, 4096, 5120, 8192, 16384)),
    Shape.of(rows=1, cols=4096), Shape.of(rows=65536, cols=4096),
)

SPEC = KernelSpec(
    name="layernorm",
    summary="y = (x - mean) / sqrt(var + eps) * w + b over the last dim, fp32 statistics",
    dims=("rows", "cols"),
    dtypes=(torch.float32, torch.float16, torch.bfloat16),
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=layernorm_reference,
    baselines={
        "torch": torch_layernorm,
        "unfused": unfused_layernorm,
        "compiled": compile_baseline(unfused_layernorm),
    },
    space=SPACE,
    default_shapes=_DEFAULT_SHAPES,
    small_shapes=(Shape.of(rows=37, cols=129), Shape.of(rows=64, cols=1000)),
    make_inputs=make_inputs,
    tolerance={
        # y is of order a few (w and b of order one); the bound covers rounding y to the dtype.
        torch.float32: Tolerance(atol=5e-5, rtol=5e-5),
        torch.float16: Tolerance(atol=4e-3, rtol=4e-3),
        torch.bfloat16: Tolerance(atol=3.2e-2, rtol=1.6e-2),
    },
    cost=cost,
    metric=GBPS,
    check_shape=check_shape,
    from_size=lambda n: Shape.of(rows=DEFAULT_ROWS, cols=n),
    small_from_size=lambda n: Shape.of(rows=INTERPRETER_ROWS, cols=n),
    interpreter_seconds=interpreter_seconds,
    autotune_key=("n_rows", "N_COLS"),
)
