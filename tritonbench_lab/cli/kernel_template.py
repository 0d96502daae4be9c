"""What `tlab new NAME` writes: a small, complete, correct kernel module (y = x * sigmoid(x),
SiLU, over n elements) and its test, with `${name}` standing for NAME. Tests write them, then
check the module's contract, list it, sweep it in Triton's interpreter and run its test
(tests/cli/test_new.py)."""

from __future__ import annotations

KERNEL = '''\
"""${name}: y = x * sigmoid(x) (SiLU) over n elements, written by `tlab new ${name}` as a
start. Make it yours: change the kernel and the parts around it, and after each change run,
from this file's folder,

    tlab list -m ${name}.py           (calls each part of SPEC once, names the first wrong one)
    python -m pytest test_${name}.py  (every config at awkward sizes, against the reference)
    tlab sweep ${name} -m ${name}.py  (tune: without a GPU, in Triton's interpreter)

The parts come in the order of every tlab kernel: the kernel, its launcher, the reference and
the baselines, the space, the inputs, the cost, then SPEC, which ties them together.

Work: 4 flops per element (negate, exp, add, divide). Fewest bytes: read x once and write y
once, 2 * n * element size: bound by memory bandwidth, so the metric is GB/s.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
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


@triton.jit
def ${name}_kernel(
    x_ptr, y_ptr,  # the input and the output, n elements each
    n,  # their length
    BLOCK: tl.constexpr,  # elements per program: a parameter of the space below
):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n  # the last program's block runs past the end
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # fp32 math for every dtype
    y = x / (1.0 + tl.exp(-x))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def ${name}(x: torch.Tensor, config: Config, out: torch.Tensor | None = None) -> torch.Tensor:
    """The kernel under exactly `config` (no autotuning inside), writing into `out`: what
    model code calls, with the config tlab tuned for the shape."""
    out = torch.empty_like(x) if out is None else out
    meta, options = split_config(config)  # BLOCK for the kernel; num_warps for Triton
    grid = (triton.cdiv(x.numel(), meta["BLOCK"]),)
    ${name}_kernel[grid](x, out, x.numel(), **meta, **options)
    return out


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    """What tlab calls: the inputs dict, one config, the outputs to write; returns them."""
    ${name}(inputs["x"], config, out=outputs[0])
    return outputs


def allocate_outputs(inputs: Inputs) -> Outputs:
    """The outputs, a tuple even for one (tlab fills them with NaN before each launch)."""
    return (torch.empty_like(inputs["x"]),)


def reference(inputs: Inputs) -> Outputs:
    """The ground truth, computed in float64: a tuple, one tensor per output."""
    x = inputs["x"].double()
    return (x * torch.sigmoid(x),)


def torch_${name}(inputs: Inputs) -> torch.Tensor:
    """The PyTorch op a user would otherwise call: the baseline to beat."""
    return torch.nn.functional.silu(inputs["x"])


def threads_busy(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """A constraint: why a config is pruned at a shape (a `skipped` row), or None to keep it."""
    threads = 32 * config["num_warps"]
    if config["BLOCK"] < threads:
        return f"BLOCK={config['BLOCK']} leaves some of the {threads} threads idle"
    return None


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    """Random inputs drawn from the seed: never zeros, which a kernel writing nothing passes."""
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(shape["n"], generator=gen, device=device).to(dtype)}


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    """The work one call must do (see the module's docstring)."""
    return Cost(flops=4 * shape["n"], bytes=2 * shape["n"] * dtype.itemsize)


SPEC = KernelSpec(
    name="${name}",
    summary="y = x * sigmoid(x) over n elements (from `tlab new`: make it yours)",
    dims=("n",),
    dtypes=(torch.float32, torch.float16, torch.bfloat16),
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=reference,
    baselines={"torch": torch_${name}, "compiled": compile_baseline(torch_${name})},
    # torch.compile on a CPU makes C++ for the CPU, no rival of a Triton kernel: GPU only.
    gpu_only_baselines=("compiled",),
    space=Space(
        params={"BLOCK": (128, 512, 2048), "num_warps": (1, 4, 8)},
        constraints=(threads_busy,),
        default={"BLOCK": 512, "num_warps": 4},  # what you would write without tuning
    ),
    default_shapes=tuple(Shape.of(n=2**k) for k in (16, 20, 24, 28)),  # for a GPU
    small_shapes=(Shape.of(n=1000), Shape.of(n=4097)),  # for Triton's interpreter
    make_inputs=make_inputs,
    # The shape of a call, read from its inputs: ops.kernel("${name}")(x=x) needs no sizes.
    shape_of=lambda inputs: Shape.of(n=inputs["x"].numel()),
    # An element passes when |y - reference| <= atol + rtol * |reference|.
    tolerance={
        torch.float32: Tolerance(atol=1e-5, rtol=1e-5),
        torch.float16: Tolerance(atol=1e-3, rtol=1e-3),  # half an ulp of the rounded result
        torch.bfloat16: Tolerance(atol=1e-2, rtol=1e-2),
    },
    cost=cost,
    metric=GBPS,
)
'''

TEST = '''\
"""Tests of ${name}.py: every config of its space, in every dtype, at sizes no config's BLOCK
divides, against the float64 reference. Without a GPU they run in Triton's interpreter.

    python -m pytest test_${name}.py
"""

import os

import pytest
import torch
from tritonbench_lab.space import HOPPER  # the GPU limits tlab prunes by without a GPU

if not torch.cuda.is_available():
    # Triton reads this once, when first imported (by ${name}.py, below).
    os.environ.setdefault("TRITON_INTERPRET", "1")

from ${name} import SPEC, ${name}  # noqa: E402  (imports triton)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
AWKWARD_SIZES = (1, 1000, 4097)  # one element; a partial last block; one past a power of 2


@pytest.mark.parametrize("dtype", SPEC.dtypes, ids=str)
@pytest.mark.parametrize("n", AWKWARD_SIZES)
def test_every_config_matches_the_reference(n, dtype):
    shape = SPEC.shape(n)
    inputs = SPEC.make_inputs(shape, dtype, DEVICE, seed=n)
    (expected,) = SPEC.reference(inputs)
    tolerance = SPEC.tolerance[dtype]
    kept, _ = SPEC.space.prune(dict(shape.dims), dtype.itemsize, HOPPER)
    assert kept, "the constraints prune every config"
    for config in kept:
        out = torch.full_like(inputs["x"], float("nan"))  # an element never written fails
        ${name}(inputs["x"], config, out=out)
        torch.testing.assert_close(out.double(), expected, atol=tolerance.atol,
                                   rtol=tolerance.rtol, msg=lambda m, c=config: f"{c}: {m}")


def test_the_outputs_are_written_not_returned_fresh():
    inputs = SPEC.make_inputs(SPEC.shape(1000), torch.float32, DEVICE, seed=0)
    outputs = SPEC.allocate_outputs(inputs)
    assert SPEC.launch(inputs, SPEC.space.default, outputs)[0] is outputs[0]
'''
