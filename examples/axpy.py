"""An example of a user's own kernel for tlab: z = alpha * x + y over a vector.

Use it with `tlab list --kernel-module examples/axpy.py` (and the same option on other
commands), or make it built-in by copying it to tritonbench_lab/kernels/ and adding one
line to the registry there. The module follows the fixed order of every tlab kernel:
docstring with the cost, kernel, launcher, reference and baselines, space, inputs, cost,
SPEC.

Work: 2 flops per element; fewest bytes: read x and y, write z: 3 * n * element size.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tritonbench_lab.space import Config, Space, split_config
from tritonbench_lab.spec import GBPS, Cost, Inputs, KernelSpec, Outputs, Shape, Tolerance

ALPHA = 0.75


@triton.jit
def axpy_kernel(
    x_ptr, y_ptr, z_ptr,  # two inputs and the output, n elements each
    n, alpha,  # length and scale
    BLOCK: tl.constexpr,  # elements per program
):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, alpha * x + y, mask=mask)


def axpy(x: torch.Tensor, y: torch.Tensor, alpha: float, config: Config,
         out: torch.Tensor | None = None) -> torch.Tensor:
    out = torch.empty_like(x) if out is None else out
    meta, options = split_config(config)
    grid = (triton.cdiv(x.numel(), meta["BLOCK"]),)
    axpy_kernel[grid](x, y, out, x.numel(), alpha, **meta, **options)
    return out


def reference(inputs: Inputs) -> Outputs:
    return (ALPHA * inputs["x"].double() + inputs["y"].double(),)


def torch_axpy(inputs: Inputs) -> torch.Tensor:
    return torch.add(inputs["y"], inputs["x"], alpha=ALPHA)


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["n"], generator=gen, device=device).to(dtype)
    y = torch.randn(shape["n"], generator=gen, device=device).to(dtype)
    return {"x": x, "y": y}


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    return Cost(flops=2 * shape["n"], bytes=3 * shape["n"] * dtype.itemsize)


SPEC = KernelSpec(
    name="axpy",
    summary="z = alpha * x + y (an example of a user's kernel module)",
    dims=("n",),
    dtypes=(torch.float32, torch.float16),
    launch=lambda inputs, config, outputs: (
        axpy(inputs["x"], inputs["y"], ALPHA, config, out=outputs[0]),
    ),
    allocate_outputs=lambda inputs: (torch.empty_like(inputs["x"]),),
    reference=reference,
    baselines={"torch": torch_axpy},
    space=Space(
        params={"BLOCK": (256, 1024, 4096), "num_warps": (2, 4, 8)},
        default={"BLOCK": 1024, "num_warps": 4},
    ),
    default_shapes=tuple(Shape.of(n=2**k) for k in (20, 24, 28)),
    small_shapes=(Shape.of(n=1000), Shape.of(n=4097)),
    make_inputs=make_inputs,
    tolerance={torch.float32: Tolerance(1e-6, 1e-6), torch.float16: Tolerance(1e-3, 1e-3)},
    cost=cost,
    metric=GBPS,
    shape_of=lambda inputs: Shape.of(n=inputs["x"].numel()),
)
