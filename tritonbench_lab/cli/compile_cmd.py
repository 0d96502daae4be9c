"""`tlab compile`: compile kernels for Hopper on a machine that need not have one (crosscompile.py).
The configs are pruned for Hopper, so only sm_90 is offered."""

from __future__ import annotations

import os
import subprocess
import sys

import typer

from tritonbench_lab.cli.options import KernelModules, Kernels, kernel_modules_of, split_list
from tritonbench_lab.errors import TlabError


def compile_kernels(kernels: Kernels = None, kernel_modules: KernelModules = None) -> None:
    """Compile for Hopper (sm_90), without running them, the configs of each kernel that hold
    every value of every parameter of its space (pruned for Hopper), at its small shape, in
    every dtype it takes.
    Catches what Triton's interpreter lets through (code the compiler refuses) on a machine
    without a GPU, e.g. in CI. Exit 1 when any config fails to compile."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec, load_kernel_module, names
    from tritonbench_lab.measure.crosscompile import HOPPER_ARCH

    modules = kernel_modules_of(kernel_modules)  # -m and the project's own (pyproject.toml)
    for path in modules:  # refused here, in one line, before the compile process
        load_kernel_module(path)
    chosen = split_list(kernels)
    if chosen == []:
        raise TlabError(f"no kernels in --kernel: known kernels are {', '.join(names())}")
    chosen = chosen or names()
    for name in chosen:
        get_spec(name)
    # Triton must be imported with its interpreter off: a process of its own.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    command = [sys.executable, "-m", "tritonbench_lab.measure.crosscompile", str(HOPPER_ARCH), *chosen]
    if modules:
        command += ["--kernel-module", *modules]
    code = subprocess.run(command, env=env).returncode
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_kernels)
