"""The lines that plots, reports and comparisons draw, from the winner rule (winners.py).

A series is one line of a plot: for one provider, one row per shape with its throughput at
the median time and the p20-p80 band. Reads rows only: no torch, no triton.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tritonbench_lab.data.layout import INTERPRETER_SLUG, Layout, kernel_file, kernels_in, locate
from tritonbench_lab.data.records import OK, Record
from tritonbench_lab.data.store import load_records
from tritonbench_lab.data.winners import ShapeResult, shape_results
from tritonbench_lab.errors import TlabError
from tritonbench_lab.shapes import shape_sizes

TUNED = "triton (tuned)"
DEFAULT = "triton (default config)"
OUTSIDE = " (outside tolerance)"
SERIES_COLUMNS = ["shape", "x", "throughput", "low", "high", "p50_ms", "config"]


def x_axis(shapes: list[str]) -> tuple[dict[str, float], str]:
    """(shape -> x position, axis label): the size that varies between the shapes, else their
    element count, else the last size, each where it tells every shape apart; otherwise
    evenly spaced in order of size (softmax's widest rows all hold 2^29 elements, and rope's
    shapes share counts too: points at one x would hide each other)."""
    sizes = [shape_sizes(s) for s in shapes]

    def by(values: list[float], label: str) -> tuple[dict[str, float], str] | None:
        if len(set(values)) < len(values):
            return None
        return dict(zip(shapes, values, strict=True)), label

    if all(len(set(z)) == 1 for z in sizes):  # squares (M = N = K): one size says it all
        return {s: float(z[0]) for s, z in zip(shapes, sizes, strict=True)}, "size (M = N = K)"
    varying = [i for i in range(len(sizes[0])) if len({z[i] for z in sizes}) > 1]
    if len(varying) == 1:
        i = varying[0]
        return {s: float(z[i]) for s, z in zip(shapes, sizes, strict=True)}, "row width (columns)"
    return (by([float(pd.Series(z).prod()) for z in sizes], "problem size (elements)")
            or by([float(z[-1]) for z in sizes], "last size (row width)")
            or ({s: 2.0 ** i for i, s in enumerate(sorted(shapes, key=lambda s: (
                pd.Series(shape_sizes(s)).prod(), shape_sizes(s))))}, "shape, in order of size"))


def results_for(records: list[Record], dtype: str) -> list[ShapeResult]:
    """The winner rule's view of one dtype; TlabError when nothing of it was timed ok."""
    found = [s for s in shape_results(records) if s.dtype == dtype]
    if not any(s.winner for s in found):
        raise TlabError(f"no ok rows for dtype {dtype!r}")
    return found


def _point(row: Record, x: float) -> dict:
    # The band: throughput at the p80 and p20 times, the slow and fast edges.
    return {"shape": row.shape, "x": x, "throughput": row.throughput,
            "low": row.throughput * row.p50_ms / row.p80_ms,
            "high": row.throughput * row.p50_ms / row.p20_ms,
            "p50_ms": row.p50_ms, "config": row.config}


def series(records: list[Record], dtype: str, default_config: tuple[str, ...] | None = None
           ) -> dict[str, pd.DataFrame]:
    """Provider label -> series for one dtype: tuned Triton, the default config (when known:
    its config texts, the first that a shape has), then every baseline. Shapes without a
    timed row for a provider are left out of its line. Baselines timed outside the
    tolerance keep their line, labelled as such."""
    results = results_for(records, dtype)
    positions, _ = x_axis([s.shape for s in results])
    points: dict[str, list[dict]] = {TUNED: []}
    if default_config is not None:
        points[DEFAULT] = []
    providers = sorted({p for s in results for p in s.baselines})
    inexact = {p for s in results for p, r in s.baselines.items() if r.status != OK}
    labels = {p: p + (OUTSIDE if p in inexact else "") for p in providers}
    points.update({label: [] for label in labels.values()})
    for s in results:
        x = positions[s.shape]
        if s.winner:
            points[TUNED].append(_point(s.winner, x))
        default = next((s.configs[t] for t in default_config or () if t in s.configs), None)
        if default and default.status == OK:
            points[DEFAULT].append(_point(default, x))
        for provider, row in s.baselines.items():
            if row.p50_ms is not None:
                points[labels[provider]].append(_point(row, x))
    return {label: pd.DataFrame(rows, columns=SERIES_COLUMNS).sort_values("x")
            .reset_index(drop=True) for label, rows in points.items()}


def correct_configs(records: list[Record], dtype: str) -> list[ShapeResult]:
    """The shapes of one dtype that have a winner, each with only its correct configs (what
    the landscape draws)."""
    out = []
    for s in shape_results(records):
        if s.dtype == dtype and s.winner:
            s.configs = {c: r for c, r in s.configs.items() if r.status == OK and r.p50_ms}
            out.append(s)
    return out


@dataclass(frozen=True)
class Target:
    """One picture's worth of rows: one GPU's results folder, one kernel, one dtype."""

    folder: Path
    kernel: str
    dtype: str
    records: list[Record]

    @property
    def slug(self) -> str:
        return self.folder.name


def _default_folders(layout: Layout, notes: list[str] | None) -> list[Path]:
    """Every GPU's results folder; where there is none, the interpreter's (a first sweep
    without a GPU), said so in `notes`: never beside a GPU's, whose numbers they are not."""
    folders = [layout.gpu_results(slug) for slug in layout.gpu_slugs()]
    if folders:
        return folders
    interpreter = layout.gpu_results(INTERPRETER_SLUG)
    if not kernels_in(interpreter):
        raise TlabError(f"no GPU results under {str(layout.results)!r}: run `tlab sweep` first")
    if notes is not None:
        notes.append(f"No GPU results under {str(layout.results)!r}: using the interpreter's "
                     "rows (wall-clock times of Triton's CPU interpreter, not GPU numbers).")
    return [interpreter]


def targets(root: Path, gpu_name: str | None = None, kernels: list[str] | None = None,
            dtypes: list[str] | None = None, skipped: list[str] | None = None) -> list[Target]:
    """Every (GPU, kernel, dtype) with results under root, or those asked for; each results
    file is read once. Without a GPU name and without any GPU's results, the interpreter's
    (`_default_folders`). TlabError naming what exists when something asked for does not. A
    dtype not asked for whose rows have no `ok` one (a sweep that failed everywhere, or
    stopped early) is left out. `skipped` receives a line for each of these choices."""
    layout = Layout(root)
    folders = [locate(gpu_name, root)] if gpu_name else _default_folders(layout, skipped)
    found = []
    for folder in folders:
        have = kernels_in(folder)
        for kernel in kernels or have:
            records = load_records(kernel_file(folder, kernel))
            if not records:
                raise TlabError(f"no results for kernel {kernel!r} in {str(folder)!r} (it has: "
                                f"{', '.join(have) or 'none'})")
            present = sorted({r.dtype for r in records})
            for dtype in dtypes or present:
                if dtype not in present:
                    raise TlabError(f"no {dtype} rows for {kernel} in {str(folder)!r} (it has: "
                                    f"{', '.join(present)})")
                if not dtypes and not any(r.dtype == dtype and r.status == OK for r in records):
                    if skipped is not None:
                        skipped.append(f"skipped {folder.name} {kernel} {dtype}: no row of it "
                                       "was timed ok")
                    continue
                found.append(Target(folder, kernel, dtype, records))
    return found
