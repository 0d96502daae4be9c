"""`tlab explain KERNEL --shape S`: what tritonbench_lab.ops would run at that shape, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tritonbench_lab.cli.options import (
    Dtypes,
    KernelModules,
    KernelName,
    configs_in_space,
    kernel_dtypes,
    own_kernels,
)
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.portability import CARRIED
from tritonbench_lab.errors import TlabError
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.tuned import config_dir


def explain(
    kernel: KernelName,
    shape: Annotated[str, typer.Option(
        "--shape", metavar="SHAPE", help="The shape, sizes in the kernel's dims order "
        "(MxNxK for matmul, ROWSxCOLS for row kernels), e.g. 5000x5000x5000.",
        show_default=False)],
    dtype: Dtypes = None,
    gpu_name: Annotated[str | None, typer.Option(
        "--gpu-name", metavar="GPU", help="A GPU by its slug (e.g. nvidia-h200, as under "
        "the configs folder). Default: every GPU with configs for KERNEL.",
        show_default=False)] = None,
    root: Annotated[Path | None, typer.Option(
        "--root", metavar="DIR", help="Folder holding configs/. Default: the folder ops reads "
        "($TLAB_CONFIG_DIR; else, for a kernel of your own, the configs/ of its project, here "
        "the current folder; else this source tree's configs/, else the installed copy).",
        show_default=False)] = None,
    kernel_module: KernelModules = None,
) -> None:
    """Show what tritonbench_lab.ops would call at SHAPE (tlab's kernel under which config, or
    the PyTorch op) on each GPU, called eagerly and, where that differs, in a CUDA graph, and
    the measurements the choice rests on. Default GPUs: every one with configs for KERNEL."""
    own_kernels(kernel_module, root)  # first: they import triton once the backend is chosen
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.ops import explain as explain_choice

    spec = get_spec(kernel)
    sizes, refused = _sizes(spec, shape)
    dtypes = kernel_dtypes(spec, dtype)
    folder = Layout(root).configs if root is not None else config_dir(kernel)
    configs_in_space(spec, sorted(folder.glob(f"*/{kernel}.csv")))
    # A GPU's own configs, or (data/portability.py) another GPU's trusted there.
    found = sorted({p.parent.name for p in folder.glob(f"*/{kernel}.csv")}
                   | {p.parent.parent.name for p in folder.glob(f"*/{CARRIED}/*.csv")})
    if not found:
        raise TlabError(f"no configs for {kernel} under {str(folder)!r}: run `tlab sweep` first")
    if gpu_name and gpu_name not in found:
        raise TlabError(f"no configs for {kernel} of GPU {gpu_name!r} under {str(folder)!r}: "
                        f"GPUs with some are {', '.join(found)}")
    gpus = [gpu_name] if gpu_name else found
    print(f"tritonbench_lab.ops at {kernel} {shape} (configs: {folder})")
    for gpu in gpus:
        for name in dtypes:
            if refused:  # ops calls the op where the kernel's check_shape refuses the shape
                print(f"  {gpu} {name}: the PyTorch op (tlab's kernel does not take the shape: "
                      f"{refused})")
                continue
            choice = explain_choice(kernel, name, sizes, gpu=gpu, directory=folder)
            config = " ".join(f"{k}={v}" for k, v in (choice.config or {}).items())
            calls = f"tlab's kernel, {config}" if choice.uses_triton else "the PyTorch op"
            if choice.captured != choice.provider:  # one of them is tlab's kernel
                other = f"tlab's kernel, {config}" if choice.captured_uses_triton else "the PyTorch op"
                calls = f"called eagerly {calls}; in a CUDA graph {other}"
            compiled = [_who(choice.compiled_uses_triton(c)) for c in (False, True)]
            calls += f"; inside torch.compile {compiled[0]}" + (
                "" if compiled[0] == compiled[1] else f", with CUDA graphs {compiled[1]}")
            print(f"  {gpu} {name}: {calls} ({choice.reason})")


def _who(triton: bool) -> str:
    return "tlab's kernel" if triton else "the PyTorch op"


def _sizes(spec, shape: str) -> tuple[tuple[int, ...], str | None]:
    """--shape as sizes in the kernel's dims order, each positive; and why the kernel's own
    check refuses the shape (None when it takes it)."""
    try:
        sizes = shape_sizes(shape)
    except ValueError:
        raise TlabError(f"--shape {shape!r} is not sizes joined by 'x': give "
                        f"{'x'.join(spec.dims)}, e.g. {'x'.join(['4096'] * len(spec.dims))}"
                        ) from None
    if len(sizes) != len(spec.dims):
        raise TlabError(f"--shape {shape!r}: {spec.name} shapes have {len(spec.dims)} sizes "
                        f"({'x'.join(spec.dims)})")
    if min(sizes) < 1:
        raise TlabError(f"--shape {shape!r}: sizes must be positive integers")
    try:
        spec.check_shape(spec.shape(*sizes))
    except TlabError as err:
        return sizes, str(err)
    return sizes, None


def register(app: typer.Typer) -> None:
    app.command("explain")(explain)
