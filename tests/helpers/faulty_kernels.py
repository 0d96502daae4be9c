"""A small user kernel module (z = 2 * x, named `doubled`) with one piece of its spec replaced
by a mistake a kernel author makes, for the tests of the contract checked up front
(measure/contract_check.py): `module_text(fault)` is the module's source, FAULTS the mistakes
with the phrases the one-line refusal must hold.
"""

from __future__ import annotations

import textwrap

NAME = "doubled"

_BASE = '''
"""z = 2 * x, with one piece of its spec replaced by a mistake (tests only)."""

import torch
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import Space, split_config
from tritonbench_lab.spec import GBPS, Cost, KernelSpec, Shape, Tolerance


@triton.jit
def doubled_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(z_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


def launch(inputs, config, outputs):
    meta, options = split_config(config)
    x = inputs["x"]
    doubled_kernel[(triton.cdiv(x.numel(), meta["BLOCK"]),)](x, outputs[0], x.numel(), **meta,
                                                             **options)
    return outputs


def allocate_outputs(inputs):
    return (torch.empty_like(inputs["x"]),)


def reference(inputs):
    return (2 * inputs["x"].double(),)


def torch_doubled(inputs):
    return 2 * inputs["x"]


def make_inputs(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(shape["n"], generator=gen, device=device).to(dtype)}


def cost(shape, dtype):
    return Cost(flops=shape["n"], bytes=2 * shape["n"] * dtype.itemsize)


def threads_busy(config, sizes, elem_bytes, limits):
    if config["BLOCK"] < 32 * config["num_warps"]:
        return f"BLOCK={config['BLOCK']} leaves threads idle"
    return None


def check_shape(shape):
    if shape["n"] < 1:
        raise TlabError("doubled needs at least one element")


TOLERANCE = {torch.float32: Tolerance(1e-6, 1e-6)}
FROM_SIZE = None

PARAMS = {"BLOCK": (64, 256), "num_warps": (1, 4)}
UNTUNED = {"BLOCK": 256, "num_warps": 4}

# --- the fault: redefines one of the pieces above ---
FAULT

SPEC = KernelSpec(
    name="doubled", summary="z = 2 * x (tests: one piece replaced by a mistake)", dims=("n",),
    dtypes=(torch.float32,), launch=launch, allocate_outputs=allocate_outputs,
    reference=reference, baselines={"torch": torch_doubled},
    space=Space(params=PARAMS, constraints=(threads_busy,), default=UNTUNED),
    default_shapes=(Shape.of(n=1 << 20),), small_shapes=(Shape.of(n=1000),),
    make_inputs=make_inputs, tolerance=TOLERANCE, cost=cost, metric=GBPS,
    check_shape=check_shape, from_size=FROM_SIZE,
)
'''


def module_text(fault: str = "") -> str:
    """The module's source with `fault` (Python code redefining a piece) in place."""
    return _BASE.replace("FAULT", textwrap.dedent(fault).strip() or "pass", 1).lstrip()


# name -> (the fault's code, phrases of the one error line). The first four are the issue's.
FAULTS = {
    "reference-returns-a-bare-tensor": ('''
        def reference(inputs):
            return 2 * inputs["x"].double()
        ''', ["doubled: reference must return a tuple of tensors (one per output)",
              "got a Tensor"]),
    "launch-returns-none": ('''
        def launch(inputs, config, outputs):
            meta, options = split_config(config)
            x = inputs["x"]
            doubled_kernel[(triton.cdiv(x.numel(), meta["BLOCK"]),)](x, outputs[0], x.numel(),
                                                                     **meta, **options)
        ''', ["doubled: launch must return the outputs it was given", "got None"]),
    "reference-in-the-inputs-precision": ('''
        def reference(inputs):
            return (2 * inputs["x"],)
        ''', ["doubled: reference output 0 is torch.float32: compute the reference in float64"]),
    "launch-writes-its-own-outputs": ('''
        def launch(inputs, config, outputs):
            meta, options = split_config(config)
            x = inputs["x"]
            z = torch.empty_like(x)
            doubled_kernel[(triton.cdiv(x.numel(), meta["BLOCK"]),)](x, z, x.numel(), **meta,
                                                                     **options)
            return (z,)
        ''', ["doubled: launch must write into the outputs it was given and return those "
              "tensors; output(s) 0 it returned are new tensors"]),
    "store-without-a-mask": ('''
        @triton.jit
        def doubled_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            # the mistake: the store has no mask, so the last block writes past the end
            tl.store(z_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=offsets < n))
        ''', ["doubled: launch wrote past the end of output 0 (", "elements after it): a store "
              "out of bounds, most often a tl.store without a mask"]),
    "space-parameter-misspelt": ('''
        PARAMS = {"BLOCK": (64, 256), "num_warps": (1, 4), "num_stage": (1, 2)}
        UNTUNED = {"BLOCK": 256, "num_warps": 4, "num_stage": 1}
        ''', ["doubled: space parameter(s) num_stage reach doubled_kernel as keywords, but it "
              "has no argument of that name", "a GPU launch refuses them"]),
    "constraint-of-the-wrong-arity": ('''
        def threads_busy(config, sizes, limits):
            return None
        ''', ["doubled: space.constraints[0] threads_busy raised TypeError",
              "it takes (config, sizes, elem_bytes, limits)"]),
    "cost-returns-a-tuple": ('''
        def cost(shape, dtype):
            return (shape["n"], 2 * shape["n"] * dtype.itemsize)
        ''', ["doubled: cost must return a Cost(flops, bytes), got a tuple"]),
    "make-inputs-draws-zeros": ('''
        def make_inputs(shape, dtype, device, seed):
            return {"x": torch.zeros(shape["n"], device=device, dtype=dtype)}
        ''', ["doubled: make_inputs must draw random inputs, never zeros", "x is all zeros"]),
    "make-inputs-returns-a-tuple": ('''
        def make_inputs(shape, dtype, device, seed):
            gen = torch.Generator(device=device).manual_seed(seed)
            return (torch.randn(shape["n"], generator=gen, device=device).to(dtype),)
        ''', ["doubled: make_inputs must return a dict of named input tensors", "got a tuple"]),
    "make-inputs-ignores-the-seed": ('''
        def make_inputs(shape, dtype, device, seed):
            return {"x": torch.randn(shape["n"], device=device).to(dtype)}
        ''', ["doubled: make_inputs must be seeded", "gave different x"]),
    "allocate-outputs-returns-a-bare-tensor": ('''
        def allocate_outputs(inputs):
            return torch.empty_like(inputs["x"])
        ''', ["doubled: allocate_outputs must return a tuple of tensors", "got a Tensor"]),
    "reference-returns-two-outputs": ('''
        def reference(inputs):
            return (2 * inputs["x"].double(), inputs["x"].double())
        ''', ["doubled: reference must return one tensor per output (1,", "got 2"]),
    "reference-of-another-shape": ('''
        def reference(inputs):
            return (2 * inputs["x"][:-1].double(),)
        ''', ["doubled: reference output 0 has shape (999,)", "allocate_outputs gives (1000,)"]),
    "reference-raises": ('''
        def reference(inputs):
            return (2 * inputs["y"].double(),)
        ''', ["doubled: reference raised KeyError: 'y' (at n=1000 fp32)"]),
    "baseline-returns-none": ('''
        def torch_doubled(inputs):
            torch.mul(inputs["x"], 2)
        ''', ["doubled: baselines['torch'] must return what the reference does", "got None"]),
    "baseline-of-another-dtype": ('''
        def torch_doubled(inputs):
            return 2 * inputs["x"].double()
        ''', ["doubled: baselines['torch'] returns torch.float64 where allocate_outputs gives "
              "torch.float32", "so they must be of one dtype"]),
    "baseline-returns-a-view-of-an-input": ('''
        def torch_doubled(inputs):
            return inputs["x"].mul_(2).view(-1)
        ''', ["doubled: baselines['torch'] returns input 'x' or a view of it", ".clone()"]),
    "constraint-returns-a-bool": ('''
        def threads_busy(config, sizes, elem_bytes, limits):
            return config["BLOCK"] < 32 * config["num_warps"]
        ''', ["doubled: space.constraints[0] threads_busy must return why the config is pruned "
              "(a str) or None", "got a bool"]),
    "check-shape-returns-text": ('''
        def check_shape(shape):
            return "fine"
        ''', ["doubled: check_shape must return None", "got a str"]),
    "check-shape-refuses-its-own-shape": ('''
        def check_shape(shape):
            if shape["n"] & (shape["n"] - 1):
                raise TlabError(f"doubled needs n a power of two, got {shape['n']}")
        ''', ["doubled: check_shape refuses its own small shape n=1000",
              "needs n a power of two"]),
    "from-size-returns-a-tuple": ('''
        FROM_SIZE = lambda n: (n,)
        ''', ["doubled: from_size must return a Shape with dims n", "got a tuple"]),
    "tolerance-is-a-tuple": ('''
        TOLERANCE = {torch.float32: (1e-6, 1e-6)}
        ''', ["doubled: tolerance must map each dtype to a Tolerance(atol, rtol)",
              "got a tuple of (float, float) for fp32"]),
    "launch-reads-a-parameter-the-space-lacks": ('''
        def launch(inputs, config, outputs):
            x = inputs["x"]
            doubled_kernel[(triton.cdiv(x.numel(), config["BLOCK_SIZE"]),)](
                x, outputs[0], x.numel(), BLOCK=config["BLOCK_SIZE"])
            return outputs
        ''', ["doubled: launch (with BLOCK=256 num_warps=4) raised KeyError: 'BLOCK_SIZE'"]),
}
# The issue's four: refused by `tlab list -m` and `tlab sweep -m` alike (the others by both
# too; the command-line table runs these, the in-process tests all of them).
ISSUE_FAULTS = ("reference-returns-a-bare-tensor", "launch-returns-none",
                "constraint-of-the-wrong-arity", "cost-returns-a-tuple")
