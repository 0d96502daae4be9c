"""`tlab plot` and `tlab report`: pictures and REPORT.md from stored results (no GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tritonbench_lab.errors import TlabError

Gpu = Annotated[str | None, typer.Option(
    "--gpu", help="GPU slug (e.g. nvidia-h200) or results folder. Default: every GPU under "
    "ROOT/results except the interpreter.")]
Kernel = Annotated[str | None, typer.Option(
    "--kernel", help="Draw only this kernel. Default: every kernel with results.")]
Dtype = Annotated[str | None, typer.Option(
    "--dtype", help="Draw only this dtype (fp32, fp16, bf16). Default: every dtype measured.")]
Out = Annotated[Path, typer.Option(
    "--out", help="Folder that receives <gpu>/ with the pictures and REPORT.md.")]
Root = Annotated[Path, typer.Option("--root", help="Folder holding results/.")]


def default_config_text(kernel: str) -> str | None:
    """The kernel's untuned default config, when tlab knows the kernel (else no such line)."""
    from tritonbench_lab.kernels import get_spec, names
    from tritonbench_lab.space import config_text

    if kernel not in names():
        return None
    return config_text(get_spec(kernel).space.default)


def _targets(gpu, kernel, dtype, root):
    """[(folder, slug, kernel, dtype, frame)] for every requested combination."""
    from tritonbench_lab.measurements import gpu_folder, kernels_in, load_frame

    if gpu:
        folders = [gpu_folder(gpu, root)]
    else:
        base = Path(root) / "results"
        folders = sorted(p for p in base.glob("*") if p.is_dir() and p.name != "interpreter")
        if not folders:
            raise TlabError(f"no GPU results under {str(base)!r}: run `tlab sweep` first")
    targets = []
    for folder in folders:
        names = [kernel] if kernel else kernels_in(folder)
        for name in names:
            frame = load_frame(folder, name)
            dtypes = [dtype] if dtype else sorted(frame["dtype"].unique())
            for d in dtypes:
                if d not in set(frame["dtype"]):
                    raise TlabError(f"no {d} rows for {name} in {str(folder)!r} "
                                    f"(it has: {', '.join(sorted(frame['dtype'].unique()))})")
                targets.append((folder, folder.name, name, d, frame))
    return targets


def _ceilings(folder: Path, metric: str, dtype: str):
    """(peak ceiling or None, copy curve or None) of the GPU whose results are in folder."""
    from tritonbench_lab.calibrate import ceiling_for, copy_curve, load_ceilings
    from tritonbench_lab.records import GBPS

    ceilings = load_ceilings(folder / "ceilings.csv")
    curve = copy_curve(ceilings) if metric == GBPS else []
    return ceiling_for(metric, dtype, ceilings), curve or None


def plot(gpu: Gpu = None, kernel: Kernel = None, dtype: Dtype = None,
         out: Out = Path("plots"), root: Root = Path(".")) -> None:
    """Draw throughput-vs-size and config-landscape pictures (PNG and SVG) per GPU, kernel
    and dtype, from stored results."""
    from tritonbench_lab.plots import plot_landscape, plot_throughput

    console = Console()
    for folder, slug, name, d, frame in _targets(gpu, kernel, dtype, root):
        default = default_config_text(name)
        ceiling, curve = _ceilings(folder, frame["metric"].iloc[0], d)
        stem = Path(out) / slug / f"{name}-{d}"
        written = plot_throughput(frame, name, d, ceiling, default, stem, curve)
        written += plot_landscape(frame, name, d, default, stem.with_name(stem.name + "-landscape"))
        for path in written:
            console.print(f"wrote {path}")


def report(gpu: Gpu = None, out: Out = Path("plots"), root: Root = Path(".")) -> None:
    """Write plots/<gpu>/REPORT.md: winners, baselines, speed-ups and % of ceiling per
    kernel and dtype, linking the pictures of `tlab plot`."""
    from tritonbench_lab.report import kernel_section, write_report

    by_gpu: dict[str, list] = {}
    for folder, slug, name, d, frame in _targets(gpu, None, None, root):
        by_gpu.setdefault(slug, []).append((folder, name, d, frame))
    for slug, items in by_gpu.items():
        sections = []
        for folder, name, d, frame in items:
            pictures = [f"{name}-{d}.png", f"{name}-{d}-landscape.png"]
            ceiling, curve = _ceilings(folder, frame["metric"].iloc[0], d)
            sections.append(kernel_section(frame, name, d, ceiling, default_config_text(name),
                                           pictures, curve))
        gpu_name = items[0][3]["gpu"].iloc[0]
        path = write_report(Path(out) / slug / "REPORT.md", gpu_name, sections,
                            f"`results/{slug}/`")
        Console().print(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("plot")(plot)
    app.command("report")(report)
