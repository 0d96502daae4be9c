"""`tlab plot` and `tlab report`: pictures and REPORT.md from stored results (no GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tritonbench_lab.cli.options import (
    GENERATED,
    Dtypes,
    GpuName,
    KernelModules,
    Kernels,
    Root,
    known_dtypes,
    own_kernels,
    split_list,
)
from tritonbench_lab.errors import TlabError

Out = Annotated[Path, typer.Option(
    "--out", help="Folder that receives <gpu>/ with the pictures and REPORT.md (git ignores "
    "the default; `make plots` writes the committed plots/).")]
Formats = Annotated[list[str] | None, typer.Option(
    "--format", help="Picture formats: svg, png (comma-separated or repeated).",
    show_default="svg")]


def _formats(values: list[str] | None) -> tuple[str, ...]:
    # late: `tlab --help` imports no pandas or matplotlib
    from tritonbench_lab.views.plots import FORMATS

    chosen = split_list(values) or ["svg"]
    bad = [f for f in chosen if f not in FORMATS]
    if bad:
        raise TlabError(f"unknown picture format {bad[0]!r}: accepted are {', '.join(FORMATS)}")
    return tuple(dict.fromkeys(chosen))


def plot(gpu_name: GpuName = None, kernel: Kernels = None, dtype: Dtypes = None,
         out: Out = GENERATED, root: Root = Path("."), format: Formats = None,
         kernel_module: KernelModules = None) -> None:
    """Draw throughput-vs-size and config-landscape pictures per GPU, kernel and dtype, and
    (for a whole GPU) the regret of other GPUs' configs carried there, from stored results
    (deterministic: the same rows give the same files). Your own kernels' modules (-m, or
    listed in pyproject.toml) give their pictures the untuned config's line."""
    own_kernels(kernel_module, root)
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import default_config_text
    from tritonbench_lab.views.plots import draw_target
    from tritonbench_lab.views.series import targets

    formats = _formats(format)
    skipped: list[str] = []
    found = targets(root, gpu_name, split_list(kernel), known_dtypes(dtype), skipped)
    console = Console()
    for note in skipped:
        console.print(note, soft_wrap=True, markup=False, highlight=False)
    for target in found:
        for path in draw_target(target, out, formats, default_config_text(target.kernel)):
            console.print(f"wrote {path}")
    if not kernel and not dtype:  # a whole GPU: also the configs carried there
        from tritonbench_lab.views import portability  # late: `tlab --help` imports no pandas

        for folder, slug in dict.fromkeys((t.folder, t.slug) for t in found):
            for path in portability.draw_all(folder, slug, out, formats):
                console.print(f"wrote {path}")


def report(gpu_name: GpuName = None, out: Out = GENERATED, root: Root = Path("."),
           kernel_module: KernelModules = None) -> None:
    """Write <out>/<gpu>/REPORT.md: winners, baselines, speed-ups and % of ceiling per
    kernel and dtype, linking the SVG pictures of `tlab plot`."""
    own_kernels(kernel_module, root)
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import default_config_text
    from tritonbench_lab.views.report import write_reports
    from tritonbench_lab.views.series import targets

    skipped: list[str] = []
    found = targets(root, gpu_name, skipped=skipped)
    console = Console()
    for note in skipped:
        console.print(note, soft_wrap=True, markup=False, highlight=False)
    for path in write_reports(found, out, default_config_text):
        console.print(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("plot")(plot)
    app.command("report")(report)
