"""Row softmax: y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :]))).

Shapes: x is rows x cols, any strides; y has x's shape and dtype. Math in fp32 whatever
the dtype; subtracting the row maximum first keeps exp() from overflowing.

Work: about 5 flops per element (max, subtract, exp, sum, scale). Fewest bytes: read x
once and write y once, 2 * rows * cols * element size; at well under one flop per byte
softmax is bound by memory bandwidth and judged in GB/s.

A program loads ROWS whole rows into registers (one row per program unless rows are narrow),
so x is read exactly once. The whole row must fit in registers: rows up to 65,536 columns.
Wider rows need an online (multi-pass) kernel, which tlab does not have yet. PER_SM > 0
makes the grid persistent (PER_SM programs per SM walk the tiles) and each program loads its
next tile while it works on the current one: for wide rows one program fills an SM, and
without this the SM waits idle on every row's loads.

Tried on the H200 and left out (BENCHMARKS.md, row kernels): a two-pass online softmax over
column chunks (max and sum first, then a second read for the output). At 16,384-65,536
columns it ran at 2,700-3,400 GB/s against 3,100-4,150 for the one-pass kernel: the rows in
flight do not fit the L2, so the second read goes to HBM and traffic is three times the row.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import (
    Config,
    Space,
    next_power_of_2,
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

# Hopper's per-SM register file (also Ampere's): what resident persistent programs share.
REGISTERS_PER_SM = 65_536
MAX_REGISTERS_PER_THREAD = 255
MAX_COLS = 65_536  # widest row one program holds in registers (see the module docstring)
DEFAULT_ROWS = 8192  # rows when only a width is given (`--sizes 4096` means 8192 x 4096)


@triton.jit
def _load_tile(x_ptr, rows, cols, n_rows, n_cols, stride_xm, stride_xn):
    """The tile's rows, in the input dtype; padding columns are -inf (they neither win the
    max nor add to the sum: exp(-inf) = 0). Rows past the end re-read a real row, so no row
    is all padding (-inf - -inf would be NaN); they are not stored. A first version masked
    the rows and selected -inf after the load instead: on the H200 it ran 32,768-wide fp32
    rows at 2,971 GB/s, this form at 4,165 (more live registers, we think; not confirmed)."""
    safe_rows = rows % n_rows
    return tl.load(x_ptr + safe_rows[:, None] * stride_xm + cols[None, :] * stride_xn,
                   mask=cols[None, :] < n_cols, other=-float("inf"))


@triton.jit
def _softmax_store(x, y_ptr, rows, cols, n_rows, n_cols, stride_ym, stride_yn):
    x = x.to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    # One reciprocal per row, then a multiply per element: a divide per element costs a
    # special-function op each, which bf16 rows (twice the elements per byte) feel.
    y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :] * stride_yn,
             y.to(y_ptr.dtype.element_ty), mask=(rows[:, None] < n_rows) & (cols[None, :] < n_cols))


@triton.jit
def softmax_kernel(
    x_ptr, y_ptr,  # input and output, rows x cols
    n_rows, n_cols,  # sizes
    stride_xm, stride_xn,  # element strides of x
    stride_ym, stride_yn,  # element strides of y
    BLOCK_COLS: tl.constexpr,  # n_cols rounded up to a power of two
    ROWS: tl.constexpr,  # rows per tile
    PER_SM: tl.constexpr,  # 0: one program per tile; k: k persistent programs per SM
):
    cols = tl.arange(0, BLOCK_COLS)
    if PER_SM == 0:
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        x = _load_tile(x_ptr, rows, cols, n_rows, n_cols, stride_xm, stride_xn)
        _softmax_store(x, y_ptr, rows, cols, n_rows, n_cols, stride_ym, stride_yn)
    else:
        # Persistent: each program walks tiles pid, pid + P, pid + 2P, ... and issues the
        # loads of its next tile before it reduces the current one, so the memory latency
        # of one overlaps the arithmetic and stores of the other. With one program per tile
        # and a whole wide row per program, an SM holds one program and idles on each load.
        step = tl.num_programs(0)
        n_tiles = tl.cdiv(n_rows, ROWS)
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        x = _load_tile(x_ptr, rows, cols, n_rows, n_cols, stride_xm, stride_xn)
        for tile in range(tl.program_id(0), n_tiles, step):
            # After its last tile a program "prefetches" that same tile again: an L2 hit,
            # where a masked or wrapped-around load would cost registers or HBM traffic.
            next_tile = tl.where(tile + step < n_tiles, tile + step, tile)
            x_next = _load_tile(x_ptr, next_tile * ROWS + tl.arange(0, ROWS), cols,
                                n_rows, n_cols, stride_xm, stride_xn)
            _softmax_store(x, y_ptr, tile * ROWS + tl.arange(0, ROWS), cols, n_rows, n_cols,
                           stride_ym, stride_yn)
            x = x_next


DEFAULT_CONFIG: Config = {"ROWS": 1, "num_warps": 4, "PER_SM": 0}


@functools.cache
def _sm_count(device: str) -> int:
    """Streaming multiprocessors of the device, the unit of the persistent grid. The
    interpreter has none; 3 programs make each walk several tiles there."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(torch.device(device)).multi_processor_count
    return 3


def softmax(x: torch.Tensor, config: Config | None = None,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor under exactly `config`."""
    if x.ndim != 2:
        raise TlabError(f"softmax needs a 2-D tensor, got shape {tuple(x.shape)}")
    check_shape(Shape.of(rows=x.shape[0], cols=x.shape[1]))
    config = DEFAULT_CONFIG if config is None else config
    if out is None:
        out = torch.empty_like(x)
    meta, options = split_config(config)
    n_rows, n_cols = x.shape
    tiles = triton.cdiv(n_rows, meta["ROWS"])
    per_sm = meta.get("PER_SM", 0)
    grid = (min(tiles, per_sm * _sm_count(str(x.device))) if per_sm else tiles,)
    softmax_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
        BLOCK_COLS=next_power_of_2(n_cols), **meta, **options,
    )
    return out


def softmax_reference(inputs: Inputs) -> Outputs:
    return (torch.softmax(inputs["x"].double(), dim=-1),)


def torch_softmax(inputs: Inputs) -> torch.Tensor:
    return torch.softmax(inputs["x"], dim=-1)


def unfused_softmax(inputs: Inputs) -> torch.Tensor:
    """What one writes without a fused op: five kernels, each a trip through memory."""
    x = inputs["x"]
    row_max = x.max(dim=-1, keepdim=True).values
    numerator = torch.exp(x - row_max)
    return numerator / numerator.sum(dim=-1, keepdim=True)


def persistent_fits(config: Config, sizes, elem_bytes: int, limits) -> str | None:
    """A persistent program holds two tiles at once (the current one in fp32 registers, the
    next one in the input dtype), and PER_SM of them must be resident on an SM together."""
    per_sm = config["PER_SM"]
    if per_sm == 0:
        return None
    threads = 32 * config["num_warps"]
    per_thread = config["ROWS"] * next_power_of_2(sizes["cols"]) / threads
    registers = per_thread * (1 + elem_bytes / 4)
    budget = min(MAX_REGISTERS_PER_THREAD, REGISTERS_PER_SM / (per_sm * threads))
    if registers > budget:
        return (f"two tiles need ~{registers:.0f} registers per thread; {per_sm} resident "
                f"programs of {threads} threads leave {budget:.0f}")
    if config["ROWS"] * per_sm > sizes["rows"]:
        return f"{per_sm} programs of {config['ROWS']} rows would idle on {sizes['rows']} rows"
    return None


SPACE = Space(
    params={"ROWS": (1, 2, 4, 8), "num_warps": (1, 2, 4, 8, 16, 32), "PER_SM": (0, 1, 2)},
    constraints=(row_tile_fits, rows_not_exceeding, persistent_fits),
    default=DEFAULT_CONFIG,
)


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    """Logits ~ N(0, 2^2) plus a per-row offset up to +-50, so the max shift is exercised."""
    gen = torch.Generator(device=device).manual_seed(seed)
    rows, cols = shape["rows"], shape["cols"]
    x = 2.0 * torch.randn((rows, cols), generator=gen, device=device)
    x += 100.0 * (torch.rand((rows, 1), generator=gen, device=device) - 0.5)
    return {"x": x.to(dtype)}


def allocate_outputs(inputs: Inputs) -> Outputs:
    return (torch.empty_like(inputs["x"]),)


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return (softmax(inputs["x"], config, out=outputs[0]),)


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    elements = shape["rows"] * shape["cols"]
    size = torch.empty((), dtype=dtype).element_size()
    return Cost(flops=5 * elements, bytes=2 * elements * size)


def check_shape(shape: Shape) -> None:
    if min(shape.sizes) < 1:
        raise TlabError(f"softmax sizes must be positive, got {shape}")
    if shape["cols"] > MAX_COLS:
        raise TlabError(
            f"softmax rows of {shape['cols']} columns are wider than the {MAX_COLS} a single-pass "
            "program holds; the online (multi-pass) kernel does not exist yet"
        )


SPEC = KernelSpec(
    name="softmax",
    summary="numerically stable softmax over the last dim, fp32 math, one pass over memory",
    dims=("rows", "cols"),
    dtypes=(torch.float32, torch.float16, torch.bfloat16),
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=softmax_reference,
    baselines={
        "torch": torch_softmax,
        "unfused": unfused_softmax,
        "compiled": compile_baseline(unfused_softmax),
    },
    space=SPACE,
    # 8192 rows: from 1024 columns up every shape moves at least 32 MB (bf16) and the widest
    # ones several GB, far past the 60 MB L2, so the numbers are about memory, not cache.
    default_shapes=tuple(Shape.of(rows=DEFAULT_ROWS, cols=c)
                         for c in (1024, 4096, 8192, 16384, 32768, 65536)),
    small_shapes=(Shape.of(rows=37, cols=129), Shape.of(rows=64, cols=1000)),
    make_inputs=make_inputs,
    tolerance={
        # Outputs lie in [0, 1]; atol covers the tiny probabilities near fp16's subnormals.
        torch.float32: Tolerance(atol=1e-6, rtol=1e-5),
        torch.float16: Tolerance(atol=1e-5, rtol=2e-3),
        torch.bfloat16: Tolerance(atol=1e-5, rtol=1e-2),
    },
    cost=cost,
    metric=GBPS,
    check_shape=check_shape,
    from_size=lambda n: Shape.of(rows=DEFAULT_ROWS, cols=n),
)
