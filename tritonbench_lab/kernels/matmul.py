"""Matrix multiplication C = A @ B: tiled, grouped program order, fp32 accumulation.

Shapes: A is M x K, B is K x N, C is M x N; any strides (a transposed view works as is).
Inputs in fp32, fp16 or bf16; C in the same dtype. fp32 inputs are multiplied in full
IEEE precision (no tf32), matching torch.matmul's default, so the two are comparable.

Work: 2*M*N*K flops. Fewest bytes: read A and B once, write C once:
(M*K + K*N + M*N) * element size. Square bf16 matmul is compute-bound from a few hundred
on up (8192^3: 1.1 TFLOP against 0.4 GB), so it is judged in TFLOP/s.

Two kernels, chosen by the space's TMA parameter. The plain one (TMA=0) runs one program
per BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps with masked pointer loads; it
takes any strides, and its launcher tells it what Triton cannot see (sizes and row strides
that are multiples of 8 but not 16), which keeps its loads 16 bytes wide and pipelined. The
persistent one (TMA=1; Hopper and newer; its own file, matmul_persistent.py) runs at most one
program per SM over all tiles, each tile copied by the tensor memory accelerator through
tensor descriptors, which zero-fill ragged edges in hardware; it needs row-major operands with
rows of a multiple of 16 bytes. STREAM_K > 0 lets it share the K-steps of the tiles of a
partial last wave among all programs instead of leaving most SMs idle for that wave. Both
number tiles so that GROUP_M consecutive ones share a column of B tiles and sweep down
GROUP_M rows of A tiles: tiles that run at the same time then reuse each other's A and B tiles
from L2 instead of reading them again from memory.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.matmul_persistent import (
    NO_EPILOGUE,
    TMA_ALIGN_BYTES,
    epilogue,
    grouped_tile,
    launch_persistent,
    tma_ready,  # noqa: F401  (ops checks a call's tensors with it)
    whole_tiles,
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
    compile_baseline,
    triton_max_autotune,
)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # A (M x K), B (K x N), C (M x N)
    bias_ptr,  # N values added before GELU (EPILOGUE > 0); unused otherwise
    M, N, K,  # problem sizes
    stride_am, stride_ak,  # element strides of A
    stride_bk, stride_bn,  # element strides of B
    stride_cm, stride_cn,  # element strides of C
    BLOCK_M: tl.constexpr,  # rows of C per program
    BLOCK_N: tl.constexpr,  # columns of C per program
    BLOCK_K: tl.constexpr,  # depth of one step along K
    GROUP_M: tl.constexpr,  # row tiles that share a column of B tiles, for L2 reuse
    EVEN_K: tl.constexpr,  # K % BLOCK_K == 0: the K loop needs no masks
    ALIGN: tl.constexpr,  # N, K and the row strides are multiples of ALIGN (the launcher checked)
    IEEE_FP32: tl.constexpr,  # multiply fp32 inputs in full precision instead of tf32
    EPILOGUE: tl.constexpr,  # NO_EPILOGUE, GELU_ERF or GELU_TANH (of acc + bias)
):
    if ALIGN > 1:
        # Triton proves divisibility of arguments by 16 only; `x // A * A` hands the compiler
        # the weaker fact the launcher checked (hints on arguments are not propagated), so
        # rows of a 1528-wide bf16 matrix still load 16 bytes at a time.
        N = N // ALIGN * ALIGN
        K = K // ALIGN * ALIGN
        stride_am = stride_am // ALIGN * ALIGN
        stride_bk = stride_bk // ALIGN * ALIGN
        stride_cm = stride_cm // ALIGN * ALIGN
    tile_m, tile_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)

    # Rows and columns past the edge are wrapped back into range for the loads (so loads need
    # no mask) and dropped by the store mask at the end.
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - step * BLOCK_K
            a = tl.load(a_ptrs, mask=ks[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=ks[:, None] < k_left, other=0.0)
        if IEEE_FP32:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    mask = (out_rows[:, None] < M) & (out_cols[None, :] < N)
    acc = epilogue(acc, bias_ptr, out_cols, N, EPILOGUE)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


# The config people write without tuning (Triton tutorial-sized tiles, default warps/stages).
DEFAULT_CONFIG: Config = {
    "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 3,
    "TMA": 0, "STREAM_K": 0,
}


def alignment(*values: int) -> int:
    """The divisibility the plain kernel is told: the largest of 8, 4, 2 dividing every value;
    1 when none does, or when 16 does (Triton sees multiples of 16 itself)."""
    if all(v % 16 == 0 for v in values):
        return 1
    return next((a for a in (8, 4, 2) if all(v % a == 0 for v in values)), 1)


def bind(config: Config | None = None, epilogue: int = NO_EPILOGUE):
    """A launcher for one config, `run(a, b, out=None, bias=None) -> C`, with the config
    split once (tritonbench_lab.ops keeps one per shape). TMA=1 launches the persistent
    tensor-descriptor kernel (row-major operands with 16-byte aligned rows). `epilogue`
    (matmul_persistent's GELU_ERF or GELU_TANH) stores gelu(A @ B + bias) instead of A @ B."""
    meta, options = split_config(SPACE.complete(DEFAULT_CONFIG if config is None else config))
    tma, stream_k = meta.pop("TMA"), meta.pop("STREAM_K")
    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]

    def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None,
            bias: torch.Tensor | None = None) -> torch.Tensor:
        if (a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype
                or a.dtype not in SPEC.dtypes):
            raise TlabError(f"matmul needs (M x K) @ (K x N) of one dtype, fp32, fp16 or bf16; "
                            f"got {tuple(a.shape)} {a.dtype} @ {tuple(b.shape)} {b.dtype}")
        M, K = a.shape
        N = b.shape[1]
        if epilogue != NO_EPILOGUE and (bias is None or bias.shape != (N,)
                                        or bias.stride(0) != 1 or bias.device != a.device):
            raise TlabError(f"the GELU epilogue needs a contiguous bias of {N} values on "
                            f"{a.device}, got {None if bias is None else tuple(bias.shape)}")
        if out is None:
            out = torch.empty((M, N), dtype=a.dtype, device=a.device)
        if tma:
            launch_persistent(a, b, out, meta, options, stream_k, bias, epilogue)
            return out
        tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
        ieee = a.dtype == torch.float32
        row_major = a.stride(1) == b.stride(1) == out.stride(1) == 1
        align = alignment(N, K, a.stride(0), b.stride(0), out.stride(0)) if row_major else 1
        matmul_kernel[(tiles,)](
            a, b, out, bias, M, N, K,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
            EVEN_K=K % bk == 0, ALIGN=align, IEEE_FP32=ieee, EPILOGUE=epilogue, **meta, **options,
        )
        return out

    run.tma = tma  # ops checks that descriptors can describe a call's tensors first
    return run


def matmul(a: torch.Tensor, b: torch.Tensor, config: Config | None = None,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """C = a @ b under exactly `config` (DEFAULT_CONFIG when None); writes into `out` if given."""
    return bind(config)(a, b, out)


def matmul_reference(inputs: Inputs) -> Outputs:
    return (inputs["a"].double() @ inputs["b"].double(),)


def torch_matmul(inputs: Inputs) -> torch.Tensor:
    return torch.matmul(inputs["a"], inputs["b"])


# What Triton reaches when PyTorch tunes it: Inductor's own Triton mm templates, autotuned.
inductor_matmul = compile_baseline(torch_matmul, options=triton_max_autotune)


# --- the space -------------------------------------------------------------------------

# Registers a thread may spend on its share of the fp32 accumulator tile; past this the
# accumulator spills or starves the loads of registers, and the config only wastes a compile.
MAX_ACCUMULATOR_PER_THREAD = 128


def fits_shared_memory(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """Each pipeline stage keeps one A tile and one B tile in shared memory; the TMA kernel
    also stages its C tile there for the store."""
    stage = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * elem_bytes
    need = config["num_stages"] * stage
    if config.get("TMA"):
        need += config["BLOCK_M"] * config["BLOCK_N"] * elem_bytes
    if need > limits.shared_memory_bytes:
        return f"needs {need} B of shared memory, more than the {limits.shared_memory_bytes} B limit"
    return None


def accumulator_fits(config: Config) -> str | None:
    per_thread = config["BLOCK_M"] * config["BLOCK_N"] // (32 * config["num_warps"])
    if per_thread > MAX_ACCUMULATOR_PER_THREAD:
        return (f"accumulator needs {per_thread} registers per thread "
                f"(more than {MAX_ACCUMULATOR_PER_THREAD})")
    return None


# The persistent TMA kernel is tried with tiles of at least this size in every dimension:
# its point is feeding the tensor cores large tiles; the small-tile corner is the plain
# kernel's, and leaving it out keeps the space a third smaller.
TMA_MIN_TILE = 64


def fits_tma(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    if not config.get("TMA"):
        return None
    if not limits.tma:
        return f"TMA=1 needs the tensor memory accelerator (Hopper or newer); {limits.label} has none"
    for dim in ("K", "N"):  # the row strides of A (K) and of B and C (N)
        if sizes[dim] * elem_bytes % TMA_ALIGN_BYTES:
            return (f"TMA=1 needs rows of a multiple of {TMA_ALIGN_BYTES} bytes; "
                    f"{dim}={sizes[dim]} x {elem_bytes} B is not")
    return None


def tma_tiles_and_stream_k(config: Config) -> str | None:
    if config["TMA"] and min(config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]) < TMA_MIN_TILE:
        return f"TMA=1 is tried with tiles of at least {TMA_MIN_TILE} in every dimension"
    if config["STREAM_K"] and not config["TMA"]:
        return f"STREAM_K={config['STREAM_K']} belongs to the persistent kernel (TMA=1)"
    return None


def fits_stream_k(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """Stream-K only where it changes who does what."""
    stream_k = config.get("STREAM_K", 0)
    if stream_k == 0:
        return None
    tiles = -(-sizes["M"] // config["BLOCK_M"]) * -(-sizes["N"] // config["BLOCK_N"])
    if whole_tiles(tiles, limits.sms, stream_k) == tiles:
        return f"{tiles} tiles fill whole waves of {limits.sms} programs: nothing to share"
    if stream_k > 1 and whole_tiles(tiles, limits.sms, stream_k - 1) == 0:
        return f"STREAM_K={stream_k - 1} already shares all {tiles} tiles"
    return None


SPACE = Space(
    params={
        "BLOCK_M": (32, 64, 128, 256),
        "BLOCK_N": (32, 64, 128, 256),
        "BLOCK_K": (32, 64, 128),
        "GROUP_M": (8,),
        "num_warps": (4, 8),
        "num_stages": (3, 4, 5),
        "TMA": (0, 1),  # 1: the persistent tensor-descriptor kernel
        "STREAM_K": (0, 1, 2),  # its tiles of a partial last wave shared by K-steps
    },
    constraints=(fits_tma, fits_stream_k, fits_shared_memory),
    default=DEFAULT_CONFIG,
    # configs tuned before the TMA kernel existed ran the plain one; before stream-K, whole tiles
    added={"TMA": 0, "STREAM_K": 0},
    excludes=(accumulator_fits, tma_tiles_and_stream_k),
)


# --- shapes, inputs, cost ----------------------------------------------------------------

def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    """A ~ N(0, 1), B ~ N(0, 1/K): entries of C are then of order one for every K."""
    gen = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    a = torch.randn((M, K), generator=gen, device=device)
    b = torch.randn((K, N), generator=gen, device=device) * K ** -0.5
    return {"a": a.to(dtype), "b": b.to(dtype)}


def allocate_outputs(inputs: Inputs) -> Outputs:
    a, b = inputs["a"], inputs["b"]
    return (torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device),)


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return (matmul(inputs["a"], inputs["b"], config, out=outputs[0]),)


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    M, N, K = shape["M"], shape["N"], shape["K"]
    size = torch.empty((), dtype=dtype).element_size()
    return Cost(flops=2 * M * N * K, bytes=(M * K + K * N + M * N) * size)


def check_shape(shape: Shape) -> None:
    if min(shape.sizes) < 1:
        raise TlabError(f"matmul sizes must be positive, got {shape}")
    # Offsets inside the kernel are 32-bit.
    M, N, K = shape["M"], shape["N"], shape["K"]
    if max(M * K, K * N, M * N) >= 2**31:
        raise TlabError(f"matmul operands must each have fewer than 2^31 elements, got {shape}")


# Triton's interpreter runs each program's K loop step by step in Python: about this long per
# step of one tile, and per program (triton 3.9 on one core, 64^3 to 512^3; within 2x).
INTERPRETER_S_PER_K_STEP = 2.5e-3
INTERPRETER_S_PER_PROGRAM = 3e-3


def interpreter_seconds(shape: Shape, config: Config) -> float:
    tiles = triton.cdiv(shape["M"], config["BLOCK_M"]) * triton.cdiv(shape["N"], config["BLOCK_N"])
    steps = triton.cdiv(shape["K"], config["BLOCK_K"])
    return tiles * (INTERPRETER_S_PER_PROGRAM + steps * INTERPRETER_S_PER_K_STEP)


def _square(n: int) -> Shape:
    return Shape.of(M=n, N=n, K=n)


SQUARE_SIZES = (512, 1024, 2048, 4096, 8192)
# Shapes users have, beside the squares: sizes that are multiples of 8 but not of 16 (Triton
# cannot see their divisibility itself), LLM projections (Llama-2-7B's 4096 -> 11008 and
# back, Llama-3-8B's 4096 -> 14336 and back) at 2048-16384 tokens, tall-skinny and K-heavy.
MODEL_SHAPES = tuple(Shape.of(M=m, N=n, K=k) for m, n, k in (
    (1000, 1000, 1000), (1528, 1528, 1528), (2040, 2040, 2040), (3000, 3000, 3000),
    (5000, 5000, 5000),
    (2048, 11008, 4096), (2048, 4096, 11008), (4096, 14336, 4096), (4096, 4096, 14336),
    (16384, 4096, 4096), (16384, 256, 4096), (1024, 1024, 16384),
))


SPEC = KernelSpec(
    name="matmul",
    summary="C = A @ B, tiled with grouped program order, fp32 accumulation",
    dims=("M", "N", "K"),
    dtypes=(torch.float32, torch.float16, torch.bfloat16),
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=matmul_reference,
    baselines={"torch": torch_matmul, "inductor": inductor_matmul},
    gpu_only_baselines=("inductor",),
    opt_in_baselines=("inductor",),  # its own tuning takes many seconds a shape
    space=SPACE,
    default_shapes=(*(_square(n) for n in SQUARE_SIZES), *MODEL_SHAPES),
    # Multiples of 8, not 16, ragged against every tile: the launcher's ALIGN and the TMA
    # kernel both run (one shape keeps `make sweep` in the interpreter near a minute).
    small_shapes=(Shape.of(M=96, N=80, K=72),),
    make_inputs=make_inputs,
    tolerance={
        # C is of order one; the bound covers rounding the fp32 accumulator to the output dtype.
        torch.float32: Tolerance(atol=1e-4, rtol=1e-4),
        torch.float16: Tolerance(atol=2e-3, rtol=2e-3),
        torch.bfloat16: Tolerance(atol=1e-2, rtol=1e-2),
    },
    cost=cost,
    metric=TFLOPS,
    check_shape=check_shape,
    interpreter_dtypes=(torch.float32, torch.float16),
    interpreter_seconds=interpreter_seconds,
)
