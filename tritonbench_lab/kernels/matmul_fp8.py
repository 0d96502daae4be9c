"""FP8 matrix multiplication with scales: C = (sa * A) @ (sb * B), bf16 out.

A (M x K) and B (K x N) hold float8 values, e4m3 or e5m2 (the dtype names the inputs; C is
always bf16). Their scales de-quantise them: per tensor (`matmul_fp8`: one sa, one sb) or
per row (`matmul_fp8_rowwise`: sa per row of A, sb per column of B, the layout of
per-token and per-channel quantisation). B is taken as torch._scaled_mm takes it, column
major (the transpose of an N x K row-major tensor), but any strides work.

Each program multiplies one BLOCK_M x BLOCK_N tile of C over its share of K, accumulating
in fp32, and applies the scales to the fp32 tile. SPLIT_K shares K among that many
programs per tile, for shapes whose tiles are too few to fill the GPU (K-heavy ones); REDUCE
says how the partial tiles are added up (split_k.py: ATOMIC or TWO_PASS, both correct; the
overwrite of a template that let each share store over the others is what the tests catch).
SPLIT_K = 1 stores C directly (REDUCE is then NONE).
TMA = 1 runs the same tiles and shares with the operands copied by tensor descriptors (A,
and B's transpose: rows along K, the layout Hopper's fp8 tensor-core instructions read B in),
where K is a multiple of 16; TMA = 0 loads them by pointers, at any shape and strides.
FAST_ACC = 1 lets Hopper's tensor cores sum a program's whole share of K at their reduced
precision (as torch._scaled_mm's use_fast_accum=True does); 0 adds every BLOCK_K step into
a full fp32 accumulator (its default). The space keeps 1 only where that share is short.

Work: 2*M*N*K flops. Fewest bytes: read A and B once (one byte an element), write C once
(two), and the scales: M*K + K*N + 2*M*N (+ 4 per scale). Judged in TFLOP/s.
"""

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.matmul import accumulator_fits, check_shape
from tritonbench_lab.kernels.matmul_persistent import TMA_ALIGN_BYTES, grouped_tile, tma_ready
from tritonbench_lab.kernels.split_k import (
    ATOMIC,
    NONE,
    TWO_PASS,
    part_buffer,
    reduce_matches_split,
    reduce_parts,
    share_of_k,
    store_part,
)
from tritonbench_lab.space import Config, DeviceLimits, Space, split_config
from tritonbench_lab.spec import (
    TFLOPS,
    Cost,
    Inputs,
    KernelSpec,
    Outputs,
    Shape,
    Tolerance,
)

FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


@triton.jit
def fp8_matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # A (M x K) and B (K x N) in fp8, C (M x N) in bf16
    partials_ptr,  # SPLIT_K > 1: fp32 buffer of M x N (ATOMIC) or SPLIT_K x M x N (TWO_PASS)
    sa_ptr, sb_ptr,  # scales: one each, or M and N (ROWWISE)
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # row tiles that share a column of B tiles, for L2 reuse
    SPLIT_K: tl.constexpr,  # programs per tile, each over a contiguous share of K's steps
    REDUCE: tl.constexpr,  # NONE (SPLIT_K = 1), ATOMIC or TWO_PASS
    ROWWISE: tl.constexpr,  # scales per row of A and per column of B, else one each
    FAST_ACC: tl.constexpr,  # 1: the tensor cores' reduced-precision sum over the whole K
):
    tile_m, tile_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    part = tl.program_id(1)
    first, last = share_of_k(part, K, BLOCK_K, SPLIT_K)

    # Rows and columns past the edge are wrapped into range for the loads (no masks there)
    # and dropped by the store's mask.
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(first, last):
        k = step * BLOCK_K + ks
        a = tl.load(a_ptr + rows[:, None] * stride_am + k[None, :] * stride_ak,
                    mask=k[None, :] < K, other=0.0)
        b = tl.load(b_ptr + k[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=k[:, None] < K, other=0.0)
        acc = _dot(a, b, acc, BLOCK_K, FAST_ACC)

    _finish(acc, rows, cols, tile_m, tile_n, part, c_ptr, partials_ptr, sa_ptr, sb_ptr, M, N,
            stride_cm, stride_cn, BLOCK_M, BLOCK_N, SPLIT_K, REDUCE, ROWWISE)


@triton.jit
def fp8_matmul_tma_kernel(
    a_desc, bt_desc,  # tensor descriptors of A (M x K) and of B's transpose (N x K)
    c_ptr, partials_ptr, sa_ptr, sb_ptr, M, N, K, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, REDUCE: tl.constexpr, ROWWISE: tl.constexpr,
    FAST_ACC: tl.constexpr,
):
    """The same tile and share of K as fp8_matmul_kernel, its operands copied by the tensor
    memory accelerator: B's tiles are read along K (the layout the fp8 tensor-core
    instructions take B in) and zero-filled past every edge, so no loads are masked."""
    tile_m, tile_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    part = tl.program_id(1)
    first, last = share_of_k(part, K, BLOCK_K, SPLIT_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(first, last):
        a = a_desc.load([tile_m * BLOCK_M, step * BLOCK_K])
        bt = bt_desc.load([tile_n * BLOCK_N, step * BLOCK_K])
        acc = _dot(a, bt.T, acc, BLOCK_K, FAST_ACC)
    # the scales' loads need rows and columns inside the tensors (the store drops the rest)
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    _finish(acc, rows, cols, tile_m, tile_n, part, c_ptr, partials_ptr, sa_ptr, sb_ptr, M, N,
            stride_cm, stride_cn, BLOCK_M, BLOCK_N, SPLIT_K, REDUCE, ROWWISE)


@triton.jit
def _dot(a, b, acc, BLOCK_K: tl.constexpr, FAST_ACC: tl.constexpr):
    """acc + a @ b. Hopper's fp8 tensor cores sum with fewer bits than fp32, over all of K
    by Triton's default on sm_90: the error grows with K (every such config missed the
    tolerance at K = 8192). FAST_ACC = 0 adds each BLOCK_K step into the fp32 accumulator,
    as cuBLAS does unless asked for fast accumulation (torch._scaled_mm's use_fast_accum)."""
    if FAST_ACC:
        return tl.dot(a, b, acc)
    return tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)


@triton.jit
def _finish(acc, rows, cols, tile_m, tile_n, part, c_ptr, partials_ptr, sa_ptr, sb_ptr, M, N,
            stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
            SPLIT_K: tl.constexpr, REDUCE: tl.constexpr, ROWWISE: tl.constexpr):
    """Scale one tile's fp32 sum and store it: into C, or as this part's share of K."""
    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (out_rows[:, None] < M) & (out_cols[None, :] < N)
    if ROWWISE:
        acc *= tl.load(sa_ptr + rows)[:, None] * tl.load(sb_ptr + cols)[None, :]
    else:
        acc *= tl.load(sa_ptr) * tl.load(sb_ptr)
    if SPLIT_K == 1:
        tl.store(c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn,
                 acc.to(c_ptr.dtype.element_ty), mask=mask)
    else:
        store_part(acc, part, partials_ptr, out_rows, out_cols, mask, M, N, REDUCE)


DEFAULT_CONFIG: Config = {
    "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8,
    "num_stages": 3, "SPLIT_K": 1, "REDUCE": NONE, "TMA": 0, "FAST_ACC": 0,
}


def matmul_fp8(a: torch.Tensor, b: torch.Tensor, sa: torch.Tensor, sb: torch.Tensor,  # noqa: C901 (a kernel module: refactor at its next re-sweep; its code is hashed into its rows)
               config: Config | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """(sa * a) @ (sb * b) in bf16 under exactly `config` (DEFAULT_CONFIG when None): sa and
    sb one fp32 value each, or M and N values (per row of a, per column of b)."""
    if (a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype
            or a.dtype not in FP8):
        raise TlabError(f"matmul_fp8 needs (M x K) @ (K x N) of one fp8 dtype (e4m3fn or "
                        f"e5m2); got {tuple(a.shape)} {a.dtype} @ {tuple(b.shape)} {b.dtype}")
    (M, K), N = a.shape, b.shape[1]
    rowwise = sa.numel() != 1 or sb.numel() != 1
    if rowwise and (sa.numel() != M or sb.numel() != N):
        raise TlabError(f"matmul_fp8 scales: one value each, or {M} for a's rows and {N} for "
                        f"b's columns; got {sa.numel()} and {sb.numel()}")
    if sa.dtype != torch.float32 or sb.dtype != torch.float32:
        raise TlabError("matmul_fp8 scales must be float32")
    sa, sb = sa.contiguous(), sb.contiguous()
    config = DEFAULT_CONFIG if config is None else config
    missing = [name for name in SPACE.params if name not in config]
    if missing:
        raise TlabError(f"matmul_fp8 config lacks {', '.join(missing)}: a config names every "
                        f"parameter of the space ({', '.join(SPACE.params)})")
    meta, options = split_config(config)
    if out is None:
        out = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    split, reduce = meta["SPLIT_K"], meta["REDUCE"]
    if reduce_matches_split(meta):
        raise TlabError(f"SPLIT_K={split} with REDUCE={reduce}: SPLIT_K=1 needs REDUCE=0, "
                        "more needs 1 (atomic) or 2 (two passes)")
    partials = part_buffer(split, reduce, M, N, a.device)
    if partials is None:
        partials = out  # not read: SPLIT_K = 1 stores C directly
    tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
    tma = meta.pop("TMA")
    if tma:
        bt = b.t()  # N x K, row-major when b is column-major (as torch._scaled_mm takes it)
        why = tma_ready(a, bt)
        if why:
            raise TlabError(f"{why} (A, and B's transpose: B column-major)")
        bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
        fp8_matmul_tma_kernel[(tiles, split)](
            TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(bt, [bn, bk]),
            out, partials, sa, sb, M, N, K, out.stride(0), out.stride(1),
            ROWWISE=rowwise, **meta, **options,
        )
    else:
        fp8_matmul_kernel[(tiles, split)](
            a, b, out, partials, sa, sb, M, N, K,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
            ROWWISE=rowwise, **meta, **options,
        )
    if split > 1:
        reduce_parts(partials, out, split, reduce)
    return out


# --- the space -------------------------------------------------------------------------

def split_k_helps(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """Shares of K only where the tiles leave SMs idle, and each share keeps a few steps."""
    split = config["SPLIT_K"]
    if split == 1:
        return None
    tiles = -(-sizes["M"] // config["BLOCK_M"]) * -(-sizes["N"] // config["BLOCK_N"])
    if tiles >= limits.sms:
        return f"{tiles} tiles already fill the {limits.sms} SMs: SPLIT_K={split} only adds work"
    steps = -(-sizes["K"] // config["BLOCK_K"])
    if steps < 2 * split:
        return f"K={sizes['K']} is {steps} steps of {config['BLOCK_K']}: too few for {split} shares"
    return None


def fits_tma(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """Descriptors copy rows of A and of B's transpose, both K elements of one byte."""
    if not config["TMA"]:
        return None
    if not limits.tma:
        return f"TMA=1 needs the tensor memory accelerator (Hopper or newer); {limits.label} has none"
    if sizes["K"] * elem_bytes % TMA_ALIGN_BYTES:
        return f"TMA=1 needs K a multiple of {TMA_ALIGN_BYTES // elem_bytes}; K={sizes['K']} is not"
    return None


# The longest share of K a program sums with fast accumulation. With this spec's inputs
# (N(0, 1) x N(0, 1/K)) every fast-accumulated config measured missed the tolerance at
# K = 8192, while most passed at 4096.
FAST_ACC_MAX_K = 4096


def fast_acc_is_short(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    share = -(-sizes["K"] // config["SPLIT_K"])
    if config["FAST_ACC"] and share > FAST_ACC_MAX_K:
        return (f"FAST_ACC=1 sums {share} of K at reduced precision: more than "
                f"{FAST_ACC_MAX_K}, where its error passes the tolerance")
    return None


def fits_shared_memory(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    need = config["num_stages"] * (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"]
    if need > limits.shared_memory_bytes:
        return f"needs {need} B of shared memory, more than the {limits.shared_memory_bytes} B limit"
    return None


SPACE = Space(
    params={
        "BLOCK_M": (64, 128),
        "BLOCK_N": (64, 128, 256),
        "BLOCK_K": (64, 128),
        "GROUP_M": (8,),
        "num_warps": (4, 8),
        "num_stages": (3, 4),
        "SPLIT_K": (1, 2, 4, 8, 16),
        "REDUCE": (NONE, ATOMIC, TWO_PASS),
        "TMA": (0, 1),  # 1: operands copied by tensor descriptors (Hopper; K a multiple of 16)
        "FAST_ACC": (0, 1),  # 1: reduced-precision sums over K (short shares of K only)
    },
    constraints=(fits_tma, split_k_helps, fast_acc_is_short, fits_shared_memory),
    default=DEFAULT_CONFIG,
    excludes=(accumulator_fits, reduce_matches_split),
)


# --- inputs, reference, baselines, cost ---------------------------------------------------

def _quantise(x: torch.Tensor, dtype: torch.dtype, dim: int | None):
    """(x / scale in fp8, scale): the scale maps the largest |x| (of the whole tensor, or of
    each slice along `dim`) to the format's largest finite value."""
    amax = x.abs().amax() if dim is None else x.abs().amax(dim=dim)
    scale = (amax / torch.finfo(dtype).max).float()
    divisor = scale if dim is None else scale.unsqueeze(dim)
    return (x / divisor).to(dtype), scale.reshape(-1) if dim is not None else scale.reshape(1)


def _make_inputs(rowwise: bool):
    def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
        """A ~ N(0, 1) and B ~ N(0, 1/K) (C of order one), quantised to fp8 with their
        scales; B stored column-major, as torch._scaled_mm wants it."""
        gen = torch.Generator(device=device).manual_seed(seed)
        M, N, K = shape["M"], shape["N"], shape["K"]
        a = torch.randn((M, K), generator=gen, device=device)
        b_t = torch.randn((N, K), generator=gen, device=device) * K ** -0.5
        a8, sa = _quantise(a, dtype, 1 if rowwise else None)
        b8_t, sb = _quantise(b_t, dtype, 1 if rowwise else None)
        return {"a": a8, "b": b8_t.t(), "sa": sa, "sb": sb}
    return make_inputs


def reference(inputs: Inputs) -> Outputs:
    """In float64, from the de-quantised inputs: exactly what the fp8 values and scales mean."""
    sa, sb = inputs["sa"].double(), inputs["sb"].double()
    a = inputs["a"].double() * (sa[:, None] if sa.numel() > 1 else sa)
    b = inputs["b"].double() * (sb[None, :] if sb.numel() > 1 else sb)
    return (a @ b,)


def _scaled_mm(inputs: Inputs, fast: bool) -> torch.Tensor:
    sa, sb = inputs["sa"], inputs["sb"]
    if sa.numel() > 1:
        sa, sb = sa[:, None], sb[None, :]
    else:
        sa, sb = sa.reshape(()), sb.reshape(())
    return torch._scaled_mm(inputs["a"], inputs["b"], scale_a=sa, scale_b=sb,
                            out_dtype=torch.bfloat16, use_fast_accum=fast)


def torch_scaled_mm(inputs: Inputs) -> torch.Tensor:
    """cuBLAS's fp8 GEMM through torch._scaled_mm, full fp32 accumulation (GPU only)."""
    return _scaled_mm(inputs, fast=False)


def torch_scaled_mm_fast(inputs: Inputs) -> torch.Tensor:
    """The same with use_fast_accum=True: the comparison for FAST_ACC=1 winners."""
    return _scaled_mm(inputs, fast=True)


def dequantised_matmul(inputs: Inputs) -> torch.Tensor:
    """What one does without an fp8 GEMM: the fp8 values in bf16 (exactly: they fit), a
    bf16 matmul, and the scales applied to its result."""
    sa, sb = inputs["sa"], inputs["sb"]
    c = (inputs["a"].to(torch.bfloat16) @ inputs["b"].to(torch.bfloat16)).float()
    return (c * (sa[:, None] * sb[None, :] if sa.numel() > 1 else sa * sb)).to(torch.bfloat16)


def allocate_outputs(inputs: Inputs) -> Outputs:
    a, b = inputs["a"], inputs["b"]
    return (torch.empty((a.shape[0], b.shape[1]), dtype=torch.bfloat16, device=a.device),)


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return (matmul_fp8(inputs["a"], inputs["b"], inputs["sa"], inputs["sb"], config,
                       out=outputs[0]),)


def _make_cost(rowwise: bool):
    def cost(shape: Shape, dtype: torch.dtype) -> Cost:
        M, N, K = shape["M"], shape["N"], shape["K"]
        scales = 4 * (M + N) if rowwise else 8
        return Cost(flops=2 * M * N * K, bytes=M * K + K * N + 2 * M * N + scales)
    return cost


# Squares, LLM projections, and K-heavy shapes with few tiles (where SPLIT_K can pay).
DEFAULT_SHAPES = (
    *(Shape.of(M=n, N=n, K=n) for n in (1024, 2048, 4096, 8192)),
    *(Shape.of(M=m, N=n, K=k) for m, n, k in (
        (2048, 11008, 4096), (4096, 14336, 4096), (16384, 4096, 4096),
        (512, 512, 16384), (1024, 1024, 16384), (256, 4096, 14336))),
)

SPEC = KernelSpec(
    name="matmul_fp8",
    summary="C = (sa * A) @ (sb * B) from fp8 A and B with one scale each, bf16 out; split-K",
    dims=("M", "N", "K"),
    dtypes=FP8,
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=reference,
    baselines={"torch": torch_scaled_mm, "torch_fast": torch_scaled_mm_fast,
               "dequantised": dequantised_matmul},
    gpu_only_baselines=("torch", "torch_fast"),
    space=SPACE,
    default_shapes=DEFAULT_SHAPES,
    # ragged against every tile; K over several steps so that SPLIT_K shares it; N and K
    # multiples of 16, which torch._scaled_mm needs (the baseline runs on this shape too)
    small_shapes=(Shape.of(M=72, N=48, K=1008),),
    make_inputs=_make_inputs(rowwise=False),
    # C is of order one and rounded once to bf16; the products of fp8 values are exact in fp32
    tolerance={torch.float8_e4m3fn: Tolerance(atol=1e-2, rtol=1e-2),
               torch.float8_e5m2: Tolerance(atol=1e-2, rtol=1e-2)},
    cost=_make_cost(rowwise=False),
    metric=TFLOPS,
    check_shape=check_shape,
)

ROWWISE_SPEC = dataclasses.replace(
    SPEC,
    name="matmul_fp8_rowwise",
    summary="C = (sa * A) @ (sb * B) from fp8 A and B, sa per row of A, sb per column of B; split-K",
    make_inputs=_make_inputs(rowwise=True),
    cost=_make_cost(rowwise=True),
)
