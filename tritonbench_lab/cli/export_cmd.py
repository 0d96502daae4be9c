"""`tlab export KERNEL`: winners as an @triton.autotune module or as per-GPU JSON."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


class Format(str, enum.Enum):
    autotune = "autotune"
    json = "json"


def export(
    kernel: Annotated[str, typer.Argument(help="Kernel whose winners to export.")],
    format: Annotated[Format, typer.Option(
        "--format", help="autotune: a Python module of triton.Config lists per GPU; json: one "
        "JSON file per GPU keyed by dtype and shape.")] = Format.autotune,
    out: Annotated[Path, typer.Option(
        "--out", help="Folder to write into.")] = Path("exported"),
    root: Annotated[Path, typer.Option("--root", help="Folder holding configs/.")] = Path("."),
) -> None:
    """Export KERNEL's committed winners for code that does not use tlab."""
    from tritonbench_lab.export import autotune_module, json_documents, winners_by_gpu
    from tritonbench_lab.store import make_folder

    by_gpu = winners_by_gpu(Path(root) / "configs", kernel)
    make_folder(out)
    written = []
    if format is Format.autotune:
        path = out / f"{kernel}_configs.py"
        path.write_text(autotune_module(kernel, by_gpu))
        written.append(path)
    else:
        for slug, text in json_documents(by_gpu).items():
            path = out / f"{kernel}-{slug}.json"
            path.write_text(text)
            written.append(path)
    for path in written:
        Console().print(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("export")(export)
