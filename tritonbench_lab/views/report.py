"""REPORT.md per GPU: per kernel and dtype, the winners against every baseline and the
ceiling, with the pictures linked; ready to paste into a pull request. CSV in, Markdown out
(no torch, no triton). Numbers come from the same series the plots draw.
"""

from __future__ import annotations

from pathlib import Path

from tritonbench_lab.data.ceilings import SAME_SIZE_COPY, copy_at, judging, traffic_of
from tritonbench_lab.data.layout import plot_stem, report_file
from tritonbench_lab.data.records import Record
from tritonbench_lab.data.store import make_folder
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.views import portability
from tritonbench_lab.views.series import DEFAULT, TUNED, series


def kernel_section(records: list[Record], kernel: str, dtype: str,
                   ceiling: tuple[str, float] | None, default_config: tuple[str, ...] | None,
                   pictures: list[str], curve: list[tuple[int, float]] | None = None) -> str:
    lines = series(records, dtype, default_config)
    tuned = lines[TUNED].set_index("shape")
    others = {label: line.set_index("shape") for label, line in lines.items() if label != TUNED}
    metric = records[0].metric
    header = ["shape", "winner config", f"tuned ({metric})"]
    for label in others:
        header += [label, f"tuned / {label}"]
    if ceiling:
        header.append(f"% of {ceiling[0]}")
    if curve:
        header.append(f"% of {SAME_SIZE_COPY}")
    out = [f"### {kernel}, {dtype}", ""]
    out += [f"![{kernel} {dtype}]({p})" for p in pictures] + [""]
    out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for shape in sorted(tuned.index, key=shape_sizes):
        value = tuned.loc[shape, "throughput"]
        cells = [shape, f"`{tuned.loc[shape, 'config']}`", f"{value:.4g}"]
        for line in others.values():
            if shape in line.index:
                other = line.loc[shape, "throughput"]
                cells += [f"{other:.4g}", f"{value / other:.2f}x"]
            else:
                cells += ["-", "-"]
        if ceiling:
            cells.append(f"{100 * value / ceiling[1]:.0f}%")
        if curve:
            traffic = traffic_of(value, tuned.loc[shape, "p50_ms"], metric)
            cells.append(f"{100 * value / copy_at(traffic, curve):.0f}%")
        out.append("| " + " | ".join(cells) + " |")
    note = (f"`{DEFAULT}` is the config one writes without tuning: `{default_config[0]}`."
            if default_config else "")
    return "\n".join(out + ["", note, ""])


def write_report(path: Path, gpu: str, sections: list[str], sources: str) -> Path:
    clock = ("the median wall-clock time of Triton's CPU interpreter (not GPU numbers)"
             if gpu == "interpreter" else "the median time of `do_bench` (L2 flushed)")
    text = "\n".join([
        f"# tlab report: {gpu}", "",
        f"Throughput at {clock}; `tuned / X` is the speed-up "
        "of the tuned Triton kernel over X at the same shape, measured in the same run. "
        f"Built by `tlab report` from {sources}.", "", *sections,
    ])
    make_folder(path.parent)
    path.write_text(text)
    return path


def write_reports(targets: list, out: Path, default_config_of, picture_format: str = "svg"
                  ) -> list[Path]:
    """One REPORT.md per GPU among `targets` (series.Target), under <out>/<gpu>/, with a
    section per GPU whose configs were carried here (views/portability.py); the pictures it
    links are those `tlab plot` writes beside it."""

    by_gpu: dict[str, list] = {}
    for target in targets:
        by_gpu.setdefault(target.slug, []).append(target)
    written = []
    for slug, items in by_gpu.items():
        sections = []
        for t in items:
            pictures = [f"{plot_stem(Path(), slug, t.kernel, t.dtype, kind).name}."
                        f"{picture_format}" for kind in ("", "landscape")]
            ceiling, curve = judging(t.folder, t.records[0].metric, t.dtype)
            sections.append(kernel_section(t.records, t.kernel, t.dtype, ceiling,
                                           default_config_of(t.kernel), pictures, curve))
        sections += portability.sections(items[0].folder, slug, picture_format)
        written.append(write_report(report_file(out, slug), items[0].records[-1].gpu,
                                    sections, f"`results/{slug}/`"))
    return written
