"""Test kernels with planted faults, loaded by the sweep tests as a user kernel module.

Every kernel computes z = 2 * x, except under its planted MODE:
    1  a wrong result (2 * x + 1): a `wrong_result` row, never a winner
    2  a store 8 TB past the output, an illegal memory access that poisons the CUDA context
       of its process (GPU only): a `crash` row, and the next config must still run
    3  a loop that never ends: a `timeout` row within the first-call timeout
    4  a failed static assertion, i.e. a compile error: a `compile_error` row
    5  a 256x256x256 fp32 dot, whose operand tiles need more shared memory than any GPU
       has (GPU only): an `out_of_resources` row
    6  each program also writes the first element of the next block, with its right value,
       so the last one writes one element past the end of the output: every element is
       right, and only the guard band around the output sees the stray write
    7  the launcher sends its own process SIGSEGV before the kernel runs (as a fault in a
       driver or a compiler would): a `crash` row that names the signal
`planted` holds the modes the interpreter can run; `planted_fault` the GPU-only ones;
`planted_hang` and `planted_all` add the endless loop (slow to test: it costs a timeout);
`planted_overrun` and `planted_signal` hold modes 6 and 7.
"""

from __future__ import annotations

import os
import signal

import torch
import triton
import triton.language as tl

from tritonbench_lab.space import Space, split_config
from tritonbench_lab.spec import GBPS, Cost, KernelSpec, Shape, Tolerance


@triton.jit
def planted_kernel(x_ptr, z_ptr, n,  # input, output, length
                   BLOCK: tl.constexpr,  # elements per program
                   MODE: tl.constexpr):  # the planted fault (see the module docstring)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    z = 2 * x
    if MODE == 1:
        z = z + 1
    if MODE == 3:
        # Volatile loads cannot be hoisted, so the compiler cannot drop the endless loop.
        while tl.load(x_ptr, volatile=True) == tl.load(x_ptr, volatile=True):
            z = z + 1
    if MODE == 4:
        tl.static_assert(MODE != 4, "planted compile error")
    if MODE == 5:
        square = tl.arange(0, 256)[:, None] * 0 + tl.arange(0, 256)[None, :]
        tile = tl.load(x_ptr + square % n)
        product = tl.dot(tile, tile)  # both 256 KB operands staged in shared memory
        tl.store(z_ptr + square % n, product, mask=square < n)
    if MODE == 6:
        # The first element of the next block, with the value its own program writes there;
        # the last program's `end` is n, one element past the output.
        end = tl.minimum((tl.program_id(0) + 1) * BLOCK, n)
        tl.store(z_ptr + end, 2 * tl.load(x_ptr + end, mask=end < n, other=1.0))
    if MODE == 2:
        tl.store(z_ptr + offsets + (1 << 40), z, mask=mask)  # 8 TB past the output
    elif MODE != 5:
        tl.store(z_ptr + offsets, z, mask=mask)


def launch(inputs, config, outputs):
    meta, options = split_config(config)
    if meta.get("MODE") == 7:
        os.kill(os.getpid(), signal.SIGSEGV)
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
                    default={"BLOCK": 128, "MODE": 0, "num_warps": 4},
                    added={"MODE": 0}),  # (tests that configs written without MODE load)
        default_shapes=(Shape.of(n=1 << 24),), small_shapes=(Shape.of(n=1000),),
        make_inputs=make_inputs, tolerance={torch.float32: Tolerance(1e-6, 1e-6)},
        cost=lambda shape, dtype: Cost(flops=shape["n"], bytes=2 * shape["n"] * 4),
        metric=GBPS,
    )


SPECS = [
    _spec("planted", (0, 1, 4)),
    _spec("planted_fault", (0, 2)),
    _spec("planted_hang", (0, 3)),
    _spec("planted_all", (0, 1, 2, 3, 4, 5)),
    _spec("planted_overrun", (0, 6)),
    _spec("planted_signal", (0, 7)),
]
