"""Test kernels with planted faults, loaded by the sweep tests as a user kernel module.

`planted`: z = 2 * x, except that MODE=1 computes 2 * x + 1 (a wrong result that must get
a `wrong_result` row and never win). `planted_fault` (GPU only): MODE=2 stores far outside
any allocation, an illegal memory access that poisons its process's CUDA context; the sweep
must record a `crash` row for it and go on with the other configs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tritonbench_lab.space import Space, split_config
from tritonbench_lab.spec import GBPS, Cost, KernelSpec, Shape, Tolerance


@triton.jit
def planted_kernel(x_ptr, z_ptr, n,  # input, output, length
                   BLOCK: tl.constexpr,  # elements per program
                   MODE: tl.constexpr):  # 0 correct, 1 wrong result, 2 illegal address
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    z = 2 * x
    if MODE == 1:
        z = z + 1
    if MODE == 2:
        tl.store(z_ptr + offsets + (1 << 40), z, mask=mask)  # 8 TB past the output
    else:
        tl.store(z_ptr + offsets, z, mask=mask)


def launch(inputs, config, outputs):
    meta, options = split_config(config)
    x = inputs["x"]
    planted_kernel[(triton.cdiv(x.numel(), meta["BLOCK"]),)](x, outputs[0], x.numel(),
                                                             **meta, **options)
    return outputs


def make_inputs(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(shape["n"], generator=gen, device=device).to(dtype)}


def _spec(name, modes):
    return KernelSpec(
        name=name, summary="2 * x with planted faults (tests only)", dims=("n",),
        dtypes=(torch.float32,), launch=launch,
        allocate_outputs=lambda inputs: (torch.empty_like(inputs["x"]),),
        reference=lambda inputs: (2 * inputs["x"].double(),),
        baselines={"torch": lambda inputs: 2 * inputs["x"]},
        space=Space(params={"BLOCK": (128, 1024), "MODE": modes, "num_warps": (4,)},
                    default={"BLOCK": 128, "MODE": 0, "num_warps": 4}),
        default_shapes=(Shape.of(n=1 << 24),), small_shapes=(Shape.of(n=1000),),
        make_inputs=make_inputs, tolerance={torch.float32: Tolerance(1e-6, 1e-6)},
        cost=lambda shape, dtype: Cost(flops=shape["n"], bytes=2 * shape["n"] * 4),
        metric=GBPS,
    )


SPECS = [_spec("planted", (0, 1)), _spec("planted_fault", (0, 2))]
