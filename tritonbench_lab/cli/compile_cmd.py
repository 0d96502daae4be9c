"""`tlab compile`: compile kernels for a GPU this machine need not have (crosscompile.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Annotated

import typer

from tritonbench_lab.cli.options import KernelModules, Kernels, split_list
from tritonbench_lab.errors import TlabError


def compile_kernels(
    kernels: Kernels = None,
    kernel_modules: KernelModules = None,
    arch: Annotated[int, typer.Option(
        "--arch", metavar="SM", min=70, help="The GPU to compile for, as its sm_ number "
        "(90: Hopper, 80: Ampere).")] = 90,
) -> None:
    """Compile, for sm_ARCH and without running them, the configs of each kernel that hold
    every value of every parameter of its space, at its small shape, in every dtype it takes.
    Catches what Triton's interpreter lets through (code the compiler refuses) on a machine
    without a GPU, e.g. in CI. Exit 1 when any config fails to compile."""
    from tritonbench_lab.kernels import get_spec, load_kernel_module, names

    for path in kernel_modules or ():  # refused here, in one line, before the compile process
        load_kernel_module(path)
    chosen = split_list(kernels)
    if chosen == []:
        raise TlabError(f"no kernels in --kernel: known kernels are {', '.join(names())}")
    chosen = chosen or names()
    for name in chosen:
        get_spec(name)
    # Triton must be imported with its interpreter off: a process of its own.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    command = [sys.executable, "-m", "tritonbench_lab.crosscompile", str(arch), *chosen]
    if kernel_modules:
        command += ["--kernel-module", *map(str, kernel_modules)]
    code = subprocess.run(command, env=env).returncode
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_kernels)
