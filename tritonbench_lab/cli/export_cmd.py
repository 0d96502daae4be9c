"""`tlab export KERNEL`: winners as an @triton.autotune module or as per-GPU JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tritonbench_lab.cli.options import KernelModules, KernelName, Root, configs_in_space, own_kernels
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.errors import TlabError
from tritonbench_lab.views.export import write_export

FORMATS = ("autotune", "json", "vllm")


def export(
    kernel: KernelName,
    format: Annotated[str, typer.Option(
        "--format", metavar="|".join(FORMATS), autocompletion=lambda: list(FORMATS),
        help="autotune: a Python module of triton.Config lists per GPU and the "
        "autotune key; json: one JSON file per GPU keyed by dtype and shape; vllm: vLLM's "
        "layout, one file per GPU, dtype and fixed sizes keyed by the first size (M, rows), "
        "read by tritonbench_lab.views.export.load_vllm_config.")] = "autotune",
    out: Annotated[Path, typer.Option(
        "--out", help="Folder to write the exported files into (by default one git "
        "ignores: copy them where your code reads them).")] = Path("build/exported"),
    root: Root = Path("."),
    kernel_module: KernelModules = None,
) -> None:
    """Export KERNEL's committed winners for code that does not use tlab."""
    if format not in FORMATS:
        raise TlabError(f"--format {format}: accepted are {', '.join(FORMATS)}")
    own_kernels(kernel_module, root)
    from tritonbench_lab.kernels import get_spec  # late: `tlab --help` imports no torch

    spec = get_spec(kernel)
    configs_in_space(spec, Layout(root).config_files([kernel]))  # before anything is written
    dims = tuple(spec.dims)
    for path in write_export(Layout(root), kernel, format, out, dims,
                             tuple(spec.autotune_key or dims)):
        Console().print(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("export")(export)
