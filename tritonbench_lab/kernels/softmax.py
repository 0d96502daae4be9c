"""Row softmax: y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :]))).

Shapes: x is rows x cols, any strides; y has x's shape and dtype. Math in fp32 whatever
the dtype; subtracting the row maximum first keeps exp() from overflowing.

Work: about 5 flops per element (max, subtract, exp, sum, scale). Fewest bytes: read x
once and write y once, 2 * rows * cols * element size; at well under one flop per byte
softmax is bound by memory bandwidth and judged in GB/s.

A program loads ROWS whole rows into registers (one row per program unless rows are narrow),
so x is read exactly once. The whole row must fit in registers: rows up to 65,536 columns.
PER_SM > 0 makes the grid persistent (PER_SM programs per SM walk the tiles) and each program
loads its next tile while it works on the current one: for wide rows one program fills an
SM, and without this the SM waits idle on every row's loads.

SPLIT > 1 shares each row among SPLIT programs (`softmax_split_kernel`). A 65,536-wide fp32
row is 256 KB, a whole SM's register file: one program per row spills. Each piece's program
instead keeps exp(x - its own max) in registers, publishes (its max, its sum) in one 64-bit
word, waits until the row's other pieces have published, and rescales. x is still read once.
The wait relies on the GPU starting a 1-D grid's programs in launch order (the pieces a
program waits on are running or start next), which NVIDIA GPUs do, though CUDA does not
promise it; handing out pieces by an atomic ticket would guarantee it, at a cost measured in
BENCHMARKS.md. A hang would be caught by the sweep's timeout. Triton's interpreter runs
programs one after another, so there every piece publishes in a first launch, and the
second (the kernel as on the GPU) never waits.

Why not a two-pass online softmax (max and sum first, then a second read for the output):
for rows up to 65,536 columns the rows in flight do not fit the L2, so the second read goes
to HBM and traffic is three times the row. BENCHMARKS.md lists the variants measured.
"""

from __future__ import annotations

import functools

import torch
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
    triton_interpreting,
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
    is all padding (-inf - -inf would be NaN); they are not stored. (Masking the rows and
    selecting -inf after the load ran much slower on the H200: BENCHMARKS.md.)"""
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


@triton.jit
def softmax_split_kernel(
    x_ptr, y_ptr, stats_ptr,  # input, output, n_rows * SPLIT zeroed 64-bit words
    n_cols,
    stride_xm, stride_xn,
    stride_ym, stride_yn,
    PIECE: tl.constexpr,  # columns per piece: BLOCK_COLS / SPLIT
    SPLIT: tl.constexpr,  # programs per row
    PUBLISH_ONLY: tl.constexpr,  # interpreter's first launch: publish and stop
):
    piece = tl.program_id(0)
    row = piece // SPLIT
    cols = (piece % SPLIT) * PIECE + tl.arange(0, PIECE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    piece_max = tl.max(x, axis=0)
    # A piece wholly past the row's end (or all -inf) has max -inf: subtracting 0 instead
    # keeps its exponentials at exp(-inf) = 0 rather than NaN.
    numerator = tl.exp(x - tl.where(piece_max == -float("inf"), 0.0, piece_max))
    piece_sum = tl.sum(numerator, axis=0)
    # (max, sum) in one 64-bit word, so a single store publishes both and a reader never sees
    # half of it. Never 0: a real piece's sum is >= 1, an empty piece's max is -inf.
    word = (piece_max.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (
        piece_sum.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
    # Relaxed: the word is all a partner reads, so nothing needs ordering around it. The
    # default (acq_rel) makes this program wait for the atomic's round trip before it polls,
    # which cost bf16 65,536-wide rows a fifth of their speed on the H200 (BENCHMARKS.md).
    tl.atomic_xchg(stats_ptr + piece, word, sem="relaxed")
    if not PUBLISH_ONLY:
        slots = stats_ptr + row * SPLIT + tl.arange(0, SPLIT)
        words = tl.load(slots, volatile=True)
        while tl.sum((words == 0).to(tl.int32), axis=0) > 0:  # a piece has not published
            words = tl.load(slots, volatile=True)
        maxes = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
        sums = words.to(tl.int32).to(tl.float32, bitcast=True)
        row_max = tl.max(maxes, axis=0)
        row_sum = tl.sum(sums * tl.exp(maxes - row_max), axis=0)
        # One exponential per element: the kept numerators are rescaled from the piece's max
        # to the row's (exp computed twice per element ran 2-10% slower on the H200).
        scale = tl.where(piece_max == -float("inf"), 0.0,
                         tl.exp(piece_max - row_max) / row_sum)
        tl.store(y_ptr + row * stride_ym + cols * stride_yn,
                 (numerator * scale).to(y_ptr.dtype.element_ty), mask=mask)


DEFAULT_CONFIG: Config = {"ROWS": 1, "num_warps": 4, "PER_SM": 0, "SPLIT": 1}


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
    meta, options = split_config(SPACE.complete(config))  # (configs from before PER_SM, SPLIT)
    n_rows, n_cols = x.shape
    block_cols = next_power_of_2(n_cols)
    split = meta.pop("SPLIT")
    # With SPLIT > 1 each program holds a piece of one row: ROWS and PER_SM do not apply
    # (the space prunes SPLIT > 1 with anything but ROWS=1 and PER_SM=0).
    if split > 1:
        # Zeroed on every call (a memset of 8 bytes per piece, timed with the kernel): a
        # zero word is how a piece tells that a partner has not published yet.
        stats = torch.zeros(n_rows * split, dtype=torch.int64, device=x.device)
        piece = max(block_cols // split, 1)  # (narrower rows than SPLIT: padding pieces)
        args = (x, out, stats, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1))
        grid = (n_rows * split,)
        if triton_interpreting():  # programs run one at a time there: publish all first
            softmax_split_kernel[grid](*args, PIECE=piece, SPLIT=split, PUBLISH_ONLY=True,
                                       **options)
        softmax_split_kernel[grid](*args, PIECE=piece, SPLIT=split, PUBLISH_ONLY=False,
                                   **options)
        return out
    tiles = triton.cdiv(n_rows, meta["ROWS"])
    per_sm = meta["PER_SM"]
    grid = (min(tiles, per_sm * _sm_count(str(x.device))) if per_sm else tiles,)
    softmax_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
        BLOCK_COLS=block_cols, **meta, **options,
    )
    return out


def bind(config: Config):
    """`run(x, out=None)` under one config (tritonbench_lab.ops keeps one per shape)."""
    config = SPACE.complete(config)
    return lambda x, out=None: softmax(x, config, out)


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


# Pieces narrower than this are left out of the space: they spend more time waiting on
# their partners than a whole row costs a single program (the H200's fastest 65,536-wide
# splits had pieces of 4,096-8,192 columns).
MIN_PIECE_COLS = 4096


def split_fits(config: Config, sizes, elem_bytes: int, limits) -> str | None:
    """SPLIT programs share one row: one row per program, one program per piece."""
    split = config["SPLIT"]
    if split == 1:
        return None
    if config["ROWS"] > 1 or config["PER_SM"] > 0:
        return f"SPLIT={split} shares one row among programs: it needs ROWS=1 and PER_SM=0"
    piece = next_power_of_2(sizes["cols"]) // split
    if piece < MIN_PIECE_COLS:
        return f"pieces of {piece} columns are narrower than {MIN_PIECE_COLS}"
    return None


SPACE = Space(
    params={"ROWS": (1, 2, 4, 8), "num_warps": (1, 2, 4, 8, 16, 32), "PER_SM": (0, 1, 2),
            "SPLIT": (1, 2, 4, 8, 16)},
    constraints=(split_fits, row_tile_fits, rows_not_exceeding, persistent_fits),
    default=DEFAULT_CONFIG,
    added={"PER_SM": 0, "SPLIT": 1},  # configs from before them: one program per tile
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
    small_from_size=lambda n: Shape.of(rows=INTERPRETER_ROWS, cols=n),
    interpreter_seconds=lambda shape, config: row_interpreter_seconds(dict(shape.dims), config),
    autotune_key=("n_rows", "n_cols"),
)
