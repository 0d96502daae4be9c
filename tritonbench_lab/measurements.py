"""Stored rows as pandas frames, and the per-shape series that plots, reports and comparisons
draw. Reads CSV only: no torch, no triton, so it runs on any laptop.

A series is one line of a plot: for one provider, one row per shape with its throughput at
the median time and the p20-p80 band. Within each shape only rows of the newest toolchain
(torch, triton, tlab + kernel source) are used, so a re-run replaces, not mixes.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd

from tritonbench_lab.errors import TlabError
from tritonbench_lab.records import CONFIRMATION, OK, TRITON, standing
from tritonbench_lab.store import load_records

TUNED = "triton (tuned)"
DEFAULT = "triton (default config)"
SERIES_COLUMNS = ["shape", "x", "throughput", "low", "high", "p50_ms", "config"]


def gpu_folder(target: str, root: Path = Path(".")) -> Path:
    """A results folder given as a path (results/nvidia-h200) or a GPU slug (nvidia-h200)."""
    path = Path(target)
    if path.is_dir():
        return path
    candidate = Path(root) / "results" / target
    if candidate.is_dir():
        return candidate
    raise TlabError(f"no results for {target!r}: neither a folder nor a GPU under "
                    f"{str(Path(root) / 'results')!r}")


def kernels_in(folder: Path) -> list[str]:
    return sorted(p.stem for p in Path(folder).glob("*.csv") if p.stem != "ceilings")


def load_frame(folder: Path, kernel: str) -> pd.DataFrame:
    """The rows of one kernel's results file that stand (records.standing: a confirmed
    config's newest confirmation replaces its earlier rows), as a frame (TlabError when
    there is none)."""
    path = Path(folder) / f"{kernel}.csv"
    records = load_records(path)
    if not records:
        known = ", ".join(kernels_in(folder)) or "none"
        raise TlabError(f"no results for kernel {kernel!r} in {str(folder)!r} (it has: {known})")
    return pd.DataFrame([asdict(r) for r in standing(records)])


def shape_sizes(shape: str) -> tuple[int, ...]:
    return tuple(int(s) for s in shape.split("x"))


def x_axis(shapes: list[str]) -> tuple[dict[str, float], str]:
    """(shape -> x position, axis label): the size that varies between the shapes."""
    sizes = [shape_sizes(s) for s in shapes]
    if all(len(set(s)) == 1 for s in sizes):  # squares (M = N = K): one size says it all
        return {s: float(z[0]) for s, z in zip(shapes, sizes, strict=True)}, "size (M = N = K)"
    varying = [i for i in range(len(sizes[0])) if len({z[i] for z in sizes}) > 1]
    if len(varying) == 1:
        i = varying[0]
        return {s: float(z[i]) for s, z in zip(shapes, sizes, strict=True)}, "row width (columns)"
    return ({s: float(pd.Series(z).prod()) for s, z in zip(shapes, sizes, strict=True)},
            "problem size (elements)")


def _newest_toolchain(group: pd.DataFrame) -> pd.DataFrame:
    newest = group.loc[group["timestamp"].idxmax()]
    same = ((group["torch"] == newest["torch"]) & (group["triton"] == newest["triton"])
            & (group["tlab"] == newest["tlab"]))
    return group[same]


def _band(row: pd.Series) -> tuple[float, float]:
    """Throughput at the p80 and p20 times: the slow and fast edges of the band."""
    value, p50 = row["throughput"], row["p50_ms"]
    return value * p50 / row["p80_ms"], value * p50 / row["p20_ms"]


def series(frame: pd.DataFrame, dtype: str, default_config: str | None = None
           ) -> dict[str, pd.DataFrame]:
    """Provider label -> series for one dtype: tuned Triton, the default config (when known),
    then every baseline. Shapes without an ok row for a provider are left out of its line."""
    # Baselines are timed even when outside the tolerance (the unfused bf16 softmax is):
    # they keep their line, labelled as such; Triton configs must be correct.
    timed_baseline = (frame["provider"] != TRITON) & frame["p50_ms"].notna()
    rows = frame[(frame["dtype"] == dtype) & ((frame["status"] == OK) | timed_baseline)]
    if rows.empty:
        raise TlabError(f"no ok rows for dtype {dtype!r}")
    rows = rows.groupby("shape", group_keys=False)[rows.columns].apply(_newest_toolchain)
    positions, _ = x_axis(sorted(rows["shape"].unique(), key=shape_sizes))
    picked: dict[str, list[pd.Series]] = {TUNED: []}
    if default_config is not None:
        picked[DEFAULT] = []
    baselines = rows[rows["provider"] != TRITON]
    inexact = set(baselines.loc[baselines["status"] != OK, "provider"])
    names = {p: p + (" (outside tolerance)" if p in inexact else "")
             for p in sorted(set(baselines["provider"]))}
    for label in names.values():
        picked[label] = []
    for _, group in rows.groupby("shape"):
        triton = group[(group["provider"] == TRITON) & (group["status"] == OK)]
        if not triton.empty:
            # As tuned.compute_winners (records.fastest): among confirmed rows when any is.
            confirmed = triton[triton["timing"].str.endswith(CONFIRMATION)]
            contenders = triton if confirmed.empty else confirmed
            picked[TUNED].append(contenders.loc[contenders["p50_ms"].idxmin()])
            if default_config is not None:
                default = triton[triton["config"] == default_config]
                if not default.empty:
                    picked[DEFAULT].append(default.loc[default["timestamp"].idxmax()])
        for provider, rows_of in group[group["provider"] != TRITON].groupby("provider"):
            picked[names[provider]].append(rows_of.loc[rows_of["timestamp"].idxmax()])
    out = {}
    for label, chosen in picked.items():
        table = pd.DataFrame([
            {"shape": r["shape"], "x": positions[r["shape"]], "throughput": r["throughput"],
             "low": _band(r)[0], "high": _band(r)[1], "p50_ms": r["p50_ms"], "config": r["config"]}
            for r in chosen
        ], columns=SERIES_COLUMNS)
        out[label] = table.sort_values("x").reset_index(drop=True)
    return out
