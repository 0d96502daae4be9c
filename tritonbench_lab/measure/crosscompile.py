"""Compile kernels for a GPU this machine does not have.

Triton's compiler needs a target, not a GPU: with a stand-in driver that names the target
(sm_90, Hopper, by default) and launches turned into compile-only warm-ups, a kernel's own
launcher compiles each config all the way to a cubin on a CPU. This checks what Triton's
interpreter cannot: the interpreter runs a kernel as Python, so code the compiler refuses
(a global read inside @triton.jit that is not a constexpr, a construct the code generator
does not support, a layout no pass can lower, bf16 tensor-core paths) runs there and fails
only on the GPU. The CPU tests compile every built-in kernel this way.

Run in a process of its own: Triton must be imported with TRITON_INTERPRET unset, and the
stand-in driver replaces the real one for the rest of the process.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable

from tritonbench_lab.runtime import launching
from tritonbench_lab.space import HOPPER, Config
from tritonbench_lab.spec import KernelSpec

HOPPER_ARCH = 90


class _CompileOnlyDriver:
    """What Triton's JIT asks of a driver before compiling, answered without a GPU."""

    def __init__(self, target):
        self.target = target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        import torch  # late: triton's driver interface asks for it; this module imports no torch

        return torch.device("cpu")

    def is_active(self) -> bool:
        return True


def compile_only_for(arch: int = HOPPER_ARCH) -> None:
    """From now on in this process, every Triton launch compiles for sm_<arch> and launches
    nothing (CPU tensors stand in for the GPU's)."""
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        raise RuntimeError("cross-compiling needs TRITON_INTERPRET unset before triton is imported")
    # late: triton reads TRITON_INTERPRET at its first import
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction

    driver.set_active(_CompileOnlyDriver(GPUTarget("cuda", arch, 32)))
    launching.suspend()  # every launch through Triton's run, patched below
    launch = JITFunction.run

    def compile_only(self, *args, grid, warmup, **kwargs):
        return launch(self, *args, grid=grid, warmup=True, **kwargs)

    JITFunction.run = compile_only


def covering_configs(configs: list[Config], covered: set | None = None) -> list[Config]:
    """A few configs among these in which every value of every parameter occurs (each
    constexpr branch of the kernel is compiled at least once), greedily, most new values
    first; values in `covered` (parameter, value) count as compiled already."""
    missing = {(k, v) for config in configs for k, v in config.items()} - (covered or set())
    chosen: list[Config] = []
    while missing:
        best = max(configs, key=lambda c: len(missing & set(c.items())))
        chosen.append(best)
        missing -= set(best.items())
    return chosen


# A size just past a power of two, wider than the small shapes: rows this wide keep what
# narrow ones prune (layernorm's walked tiles, softmax's rows split in two).
WIDE_SIZE = 4097


def compile_shapes(spec: KernelSpec) -> list:
    """The small shapes, then the spec's interpreter shape of WIDE_SIZE."""
    wide = spec.size_to_shape(WIDE_SIZE, interpreting=True)
    return [*spec.small_shapes, *([] if wide in spec.small_shapes else [wide])]


def compile_errors(spec: KernelSpec, dtypes: Iterable | None = None) -> tuple[int, list[str]]:
    """Compile configs that cover the spec's space, for each dtype (all of the spec's by
    default), after compile_only_for(): at its first compile shape, then at each further one
    the values that only it keeps (a bug of layernorm's walked branch in bf16 once passed
    here because no shape kept it). Returns (configs compiled, one line per failure)."""
    errors, count = [], 0
    for dtype in dtypes or spec.dtypes:
        covered: set = set()
        for shape in compile_shapes(spec):
            kept, _ = spec.space.prune(dict(shape.dims), dtype.itemsize, HOPPER)
            todo = covering_configs(kept, covered)
            if not todo:
                continue
            inputs = spec.make_inputs(shape, dtype, "cpu", 0)
            for config in todo:
                covered |= set(config.items())
                count += 1
                try:
                    spec.launch(inputs, config, spec.allocate_outputs(inputs))
                except Exception as err:  # reported, one line each, by the caller
                    first = str(err).strip().splitlines()
                    errors.append(f"{spec.name} {str(dtype).removeprefix('torch.')} {shape} "
                                  f"{config}: {type(err).__name__}: "
                                  f"{' | '.join(first[:1] + first[-2:])}")
    return count, errors


def main(argv: list[str]) -> int:
    """`python -m tritonbench_lab.measure.crosscompile ARCH KERNEL... [--kernel-module FILE...]` (what
    `tlab compile` runs, in a process of its own): a line per kernel, then one per failure;
    1 when any config failed."""
    # late: triton reads TRITON_INTERPRET at its first import (compile_only_for needs it unset)
    from tritonbench_lab.kernels import get_spec, load_kernel_module

    # triton 3.9 announces a default it will change; it says nothing about these kernels
    warnings.filterwarnings("ignore", message=".*TRITON_DEFAULT_FP_FUSION")
    arch, rest = int(argv[0]), argv[1:]
    split = rest.index("--kernel-module") if "--kernel-module" in rest else len(rest)
    kernels, modules = rest[:split], rest[split + 1:]
    for path in modules:
        load_kernel_module(path)
    compile_only_for(arch)
    failed = 0
    for name in kernels:
        count, errors = compile_errors(get_spec(name))
        print(f"{name}: {count - len(errors)} of {count} configs compiled for sm_{arch}",
              flush=True)
        for line in errors:
            print(f"  {line}", flush=True)
        failed += len(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
