"""Vector add z = x + y: the smallest kernel, and the one that shows the copy ceiling.

Shapes: x, y and z are vectors of n elements (any tensor is flattened; it must be
contiguous). The sum is taken in fp32 and rounded once to the input dtype, as torch.add
does.

Work: n flops. Fewest bytes: read x and y, write z, 3 * n * element size: bound by memory
bandwidth (GB/s), and nothing else: a tuned add should move its bytes as fast as a copy of
the same bytes does (`tlab targets` compares them).

Each program adds one BLOCK of elements with 16-byte vector loads; the last block is masked.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import Config, DeviceLimits, Space, split_config
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

# Offsets are 32-bit inside the kernel.
MAX_ELEMENTS = 2**31 - 1


@triton.jit
def add_kernel(
    x_ptr, y_ptr, z_ptr,  # inputs and output, contiguous
    n,  # elements
    BLOCK: tl.constexpr,  # elements per program
):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    # The sum in fp32, rounded once to the dtype: what torch.add gives for fp16 and bf16 too
    # (and Triton's interpreter adds bf16 values wrongly, triton-lang/triton#11584's kin).
    z = x.to(tl.float32) + y.to(tl.float32)
    tl.store(z_ptr + offsets, z.to(z_ptr.dtype.element_ty), mask=mask)


DEFAULT_CONFIG: Config = {"BLOCK": 1024, "num_warps": 4}  # the Triton tutorial's


def add(x: torch.Tensor, y: torch.Tensor, config: Config | None = None,
        out: torch.Tensor | None = None) -> torch.Tensor:
    """x + y under exactly `config` (DEFAULT_CONFIG when None); writes into `out` if given."""
    if x.shape != y.shape or x.dtype != y.dtype:
        raise TlabError(f"add needs x and y of one shape and dtype, got {tuple(x.shape)} "
                        f"{x.dtype} and {tuple(y.shape)} {y.dtype}")
    if not (x.is_contiguous() and y.is_contiguous()):
        raise TlabError("add needs contiguous x and y (call .contiguous() first)")
    if out is None:
        out = torch.empty_like(x)
    if not out.is_contiguous() or out.shape != x.shape:
        raise TlabError(f"add needs a contiguous out of shape {tuple(x.shape)}")
    check_shape(Shape.of(n=x.numel()))
    meta, options = split_config(DEFAULT_CONFIG if config is None else config)
    add_kernel[(triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel(), **meta, **options)
    return out


def bind(config: Config):
    """`run(x, y, out=None)` under one config (ops keeps one per shape)."""
    return lambda x, y, out=None: add(x, y, config, out)


# --- reference and baselines -------------------------------------------------------------

def add_reference(inputs: Inputs) -> Outputs:
    return (inputs["x"].double() + inputs["y"].double(),)


def torch_add(inputs: Inputs) -> torch.Tensor:
    return torch.add(inputs["x"], inputs["y"])


# --- space, inputs, cost -------------------------------------------------------------------

# Elements one thread holds per tensor: past this, registers run out before loads are in
# flight; under one, threads idle.
MAX_PER_THREAD = 64


def fits_threads(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    threads = 32 * config["num_warps"]
    per_thread = config["BLOCK"] // threads
    if per_thread > MAX_PER_THREAD:
        return f"BLOCK={config['BLOCK']} is {per_thread} elements a thread (more than {MAX_PER_THREAD})"
    if per_thread < 1:
        return f"BLOCK={config['BLOCK']} leaves some of the {threads} threads idle"
    if config["BLOCK"] > 1024 and config["BLOCK"] >= 2 * sizes["n"]:
        return f"BLOCK={config['BLOCK']} is more than twice the {sizes['n']} elements"
    return None


SPACE = Space(
    params={"BLOCK": (256, 512, 1024, 2048, 4096, 8192, 16384), "num_warps": (1, 2, 4, 8, 16)},
    constraints=(fits_threads,),
    default=DEFAULT_CONFIG,
)


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    gen = torch.Generator(device=device).manual_seed(seed)
    n = shape["n"]
    return {"x": torch.randn(n, generator=gen, device=device).to(dtype),
            "y": torch.randn(n, generator=gen, device=device).to(dtype)}


def allocate_outputs(inputs: Inputs) -> Outputs:
    return (torch.empty_like(inputs["x"]),)


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return (add(inputs["x"], inputs["y"], config, out=outputs[0]),)


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    size = torch.empty((), dtype=dtype).element_size()
    return Cost(flops=shape["n"], bytes=3 * shape["n"] * size)


def check_shape(shape: Shape) -> None:
    if shape["n"] < 1:
        raise TlabError(f"add needs at least one element, got {shape}")
    if shape["n"] > MAX_ELEMENTS:
        raise TlabError(f"add takes at most {MAX_ELEMENTS} elements, got {shape['n']}")


# 2^20 elements (a few MB: inside an H200's 60 MB L2) up to 2^28 (1.5 GB in fp32); from 2^24
# every dtype moves at least 64 MB.
_DEFAULT_SHAPES = tuple(Shape.of(n=2**p) for p in (20, 22, 24, 26, 28))

SPEC = KernelSpec(
    name="add",
    summary="z = x + y over n elements: the copy ceiling's own kernel",
    dims=("n",),
    dtypes=(torch.float32, torch.float16, torch.bfloat16),
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=add_reference,
    baselines={"torch": torch_add, "compiled": compile_baseline(torch_add)},
    space=SPACE,
    default_shapes=_DEFAULT_SHAPES,
    small_shapes=(Shape.of(n=4097), Shape.of(n=100_000)),
    make_inputs=make_inputs,
    tolerance={
        # One rounding of the sum to the dtype: half an ulp of values of order a few.
        torch.float32: Tolerance(atol=1e-6, rtol=1e-6),
        torch.float16: Tolerance(atol=4e-3, rtol=1e-3),
        torch.bfloat16: Tolerance(atol=3.2e-2, rtol=8e-3),
    },
    cost=cost,
    metric=GBPS,
    check_shape=check_shape,
    interpreter_seconds=lambda shape, config: 6e-3 * triton.cdiv(shape["n"], config["BLOCK"]),
)
