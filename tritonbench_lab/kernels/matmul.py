"""Matrix multiplication C = A @ B: tiled, grouped program order, fp32 accumulation.

Shapes: A is M x K, B is K x N, C is M x N; any strides (a transposed view works as is).
Inputs in fp32, fp16 or bf16; C in the same dtype. fp32 inputs are multiplied in full
IEEE precision (no tf32), matching torch.matmul's default, so the two are comparable.

Work: 2*M*N*K flops. Fewest bytes: read A and B once, write C once:
(M*K + K*N + M*N) * element size. Square bf16 matmul is compute-bound from a few hundred
on up (8192^3: 1.1 TFLOP against 0.4 GB), so it is judged in TFLOP/s.

Each program computes one BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps.
Programs are numbered so that GROUP_M consecutive programs share a column of B tiles and
sweep down GROUP_M rows of A tiles: tiles that run at the same time then reuse each other's
A and B tiles from L2 instead of reading them again from memory.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import Config, DeviceLimits, Space, split_config
from tritonbench_lab.spec import TFLOPS, Cost, Inputs, KernelSpec, Outputs, Shape, Tolerance


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # A (M x K), B (K x N), C (M x N)
    M, N, K,  # problem sizes
    stride_am, stride_ak,  # element strides of A
    stride_bk, stride_bn,  # element strides of B
    stride_cm, stride_cn,  # element strides of C
    BLOCK_M: tl.constexpr,  # rows of C per program
    BLOCK_N: tl.constexpr,  # columns of C per program
    BLOCK_K: tl.constexpr,  # depth of one step along K
    GROUP_M: tl.constexpr,  # row tiles that share a column of B tiles, for L2 reuse
    EVEN_K: tl.constexpr,  # K % BLOCK_K == 0: the K loop needs no masks
    IEEE_FP32: tl.constexpr,  # multiply fp32 inputs in full precision instead of tf32
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # Grouped order: program ids run down GROUP_M row tiles before moving one column right.
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    first_tile_m = group * GROUP_M
    group_rows = min(tiles_m - first_tile_m, GROUP_M)  # the last group may be short
    tile_m = first_tile_m + (pid % programs_per_group) % group_rows
    tile_n = (pid % programs_per_group) // group_rows

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
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


# The config people write without tuning (Triton tutorial-sized tiles, default warps/stages).
DEFAULT_CONFIG: Config = {
    "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 3,
}


def matmul(a: torch.Tensor, b: torch.Tensor, config: Config | None = None,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """C = a @ b under exactly `config` (DEFAULT_CONFIG when None); writes into `out` if given."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise TlabError(f"matmul needs (M x K) @ (K x N), got {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in SPEC.dtypes:
        raise TlabError(f"matmul needs two fp32, fp16 or bf16 inputs, got {a.dtype}, {b.dtype}")
    config = DEFAULT_CONFIG if config is None else config
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    meta, options = split_config(config)
    grid = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    matmul_kernel[grid](
        a, b, out, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
        EVEN_K=K % meta["BLOCK_K"] == 0, IEEE_FP32=a.dtype == torch.float32,
        **meta, **options,
    )
    return out


def matmul_reference(inputs: Inputs) -> Outputs:
    return (inputs["a"].double() @ inputs["b"].double(),)


def torch_matmul(inputs: Inputs) -> torch.Tensor:
    return torch.matmul(inputs["a"], inputs["b"])


# --- the space -------------------------------------------------------------------------

# Registers a thread may spend on its share of the fp32 accumulator tile; past this the
# accumulator spills or starves the loads of registers, and the config only wastes a compile.
MAX_ACCUMULATOR_PER_THREAD = 128


def fits_shared_memory(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """Each pipeline stage keeps one A tile and one B tile in shared memory."""
    stage = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * elem_bytes
    need = config["num_stages"] * stage
    if need > limits.shared_memory_bytes:
        return f"needs {need} B of shared memory, more than the {limits.shared_memory_bytes} B limit"
    return None


def fits_registers(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    per_thread = config["BLOCK_M"] * config["BLOCK_N"] // (32 * config["num_warps"])
    if per_thread > MAX_ACCUMULATOR_PER_THREAD:
        return (f"accumulator needs {per_thread} registers per thread "
                f"(more than {MAX_ACCUMULATOR_PER_THREAD})")
    return None


SPACE = Space(
    params={
        "BLOCK_M": (32, 64, 128, 256),
        "BLOCK_N": (32, 64, 128, 256),
        "BLOCK_K": (32, 64, 128),
        "GROUP_M": (8,),
        "num_warps": (4, 8),
        "num_stages": (3, 4, 5),
    },
    constraints=(fits_shared_memory, fits_registers),
    default=DEFAULT_CONFIG,
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


SPEC = KernelSpec(
    name="matmul",
    summary="C = A @ B, tiled with grouped program order, fp32 accumulation",
    dims=("M", "N", "K"),
    dtypes=(torch.float32, torch.float16, torch.bfloat16),
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=matmul_reference,
    baselines={"torch": torch_matmul},
    space=SPACE,
    default_shapes=tuple(_square(n) for n in (512, 1024, 2048, 4096, 8192)),
    small_shapes=(Shape.of(M=64, N=64, K=64), Shape.of(M=96, N=80, K=72)),
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
