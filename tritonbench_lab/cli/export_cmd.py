"""`tlab export KERNEL`: winners as an @triton.autotune module or as per-GPU JSON."""

from __future__ import annotations

import inspect
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
    key = tuple(spec.autotune_key or dims)
    if format == "autotune":
        check_key(spec, key)
    for path in write_export(Layout(root), kernel, format, out, dims, key):
        Console().print(f"wrote {path}")


def check_key(spec, key: tuple[str, ...]) -> None:
    """Refuse an autotune key that no Triton kernel of the spec's module takes as arguments
    (a row kernel's dims, rows and cols, where its kernel takes n_cols): @triton.autotune
    would refuse the exported KEY at its first launch. Nothing is said where the module holds
    no Triton kernel to ask."""
    # late: `tlab --help` imports no triton
    from triton.runtime.jit import KernelInterface

    module = inspect.getmodule(spec.launch)
    takes = {}
    for value in vars(module).values() if module is not None else ():
        # a @triton.jit function, compiled or interpreted, or one under autotune/heuristics
        names = getattr(value, "arg_names", None)
        if isinstance(value, KernelInterface) and isinstance(names, (list, tuple)):
            while isinstance(getattr(value, "fn", None), KernelInterface):
                value = value.fn
            takes[_name(value)] = list(names)
    if takes and not any(set(key) <= set(names) for names in takes.values()):
        kernels = "; ".join(f"{name} takes {', '.join(names)}" for name, names in takes.items())
        raise TlabError(f"--format autotune: KEY would be {', '.join(key)}, which no Triton "
                        f"kernel of {spec.name}'s module takes ({kernels}); set autotune_key= "
                        f"in its KernelSpec to the names your kernel's size arguments have")


def _name(kernel) -> str:
    return getattr(getattr(kernel, "fn", None), "__name__", None) or "a kernel"


def register(app: typer.Typer) -> None:
    app.command("export")(export)
