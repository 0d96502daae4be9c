"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

KernelModules = Annotated[
    list[Path] | None,
    typer.Option(
        "--kernel-module", "-m",
        help="A Python file defining SPEC = KernelSpec(...) (or SPECS = [...]) for your own "
        "kernels; repeat the option for several files.",
        show_default=False,
    ),
]

Interpret = Annotated[
    bool | None,
    typer.Option(
        "--interpret/--gpu",
        help="Run kernels in Triton's CPU interpreter (--interpret) or on the GPU (--gpu). "
        "Default: the GPU when CUDA is visible, otherwise the interpreter.",
        show_default=False,
    ),
]


def load_modules(paths: list[Path] | None) -> None:
    from tritonbench_lab.kernels import load_kernel_module

    for path in paths or ():
        load_kernel_module(path)
