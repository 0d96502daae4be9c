"""Pictures from stored rows: throughput against size per provider, and the config landscape.

Pure pandas + matplotlib over the CSV files (no torch, no triton), with the non-interactive
Agg backend, so `tlab plot` runs anywhere. Every picture is written as PNG and SVG.
"""

from __future__ import annotations

import random
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display needed, ever
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tritonbench_lab.calibrate import SAME_SIZE_COPY, copy_at, traffic_of  # noqa: E402
from tritonbench_lab.measurements import (  # noqa: E402
    DEFAULT,
    TUNED,
    series,
    shape_sizes,
    x_axis,
)
from tritonbench_lab.records import GBPS, OK, TRITON, parse_config_text  # noqa: E402
from tritonbench_lab.store import make_folder  # noqa: E402

# Fixed colours per provider, so every picture reads the same way.
COLOURS = {TUNED: "#d62728", DEFAULT: "#ff9896", "torch": "#1f77b4", "unfused": "#7f7f7f",
           "compiled": "#2ca02c"}
EXTRA_COLOURS = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def _colour(label: str, index: int) -> str:
    return COLOURS.get(label.split(" (outside")[0], EXTRA_COLOURS[index % len(EXTRA_COLOURS)])


def _title(frame: pd.DataFrame, kernel: str, dtype: str) -> str:
    newest = frame.loc[frame["timestamp"].idxmax()]
    return (f"{kernel}, {dtype} on {newest['gpu']}\n"
            f"torch {newest['torch']}, triton {newest['triton']}, {newest['timestamp'][:10]}")


def _save(fig, path_stem: Path) -> list[Path]:
    make_folder(path_stem.parent)
    paths = [path_stem.with_suffix(".png"), path_stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=130, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths


def _shape_ticks(ax, shapes: list[str]) -> None:
    positions, label = x_axis(shapes)
    ax.set_xscale("log", base=2)
    ax.set_xticks([positions[s] for s in shapes])
    ax.set_xticklabels(shapes, rotation=30, ha="right", fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel(label)


def plot_throughput(frame: pd.DataFrame, kernel: str, dtype: str,
                    ceiling: tuple[str, float] | None, default_config: str | None,
                    out_stem: Path, curve: list[tuple[int, float]] | None = None) -> list[Path]:
    return _save(draw_throughput(frame, kernel, dtype, ceiling, default_config, curve), out_stem)


def draw_throughput(frame: pd.DataFrame, kernel: str, dtype: str,
                    ceiling: tuple[str, float] | None, default_config: str | None,
                    curve: list[tuple[int, float]] | None = None):
    """Throughput against size, one line per provider with its p20-p80 band, and the
    calibrated ceiling as a line with a % axis on the right; with a calibrated copy curve
    (GB/s kernels) also the copy of each shape's bytes. Returns the figure."""
    lines = series(frame, dtype, default_config)
    metric = frame["metric"].iloc[0]
    fig, ax = plt.subplots(figsize=(8, 5))
    shapes: set[str] = set()
    for index, (label, line) in enumerate(lines.items()):
        if line.empty:
            continue
        shapes.update(line["shape"])
        colour = _colour(label, index)
        style = "--" if label == DEFAULT or "outside" in label else "-"
        width = 2.4 if label == TUNED else 1.5
        ax.plot(line["x"], line["throughput"], style, marker="o", markersize=4, color=colour,
                linewidth=width, label=label, zorder=3 if label == TUNED else 2)
        ax.fill_between(line["x"], line["low"], line["high"], color=colour, alpha=0.18,
                        linewidth=0)
    tuned = lines[TUNED]
    if curve and metric == GBPS and not tuned.empty:
        same = [copy_at(traffic_of(r.throughput, r.p50_ms, metric), curve)
                for r in tuned.itertuples()]
        ax.plot(tuned["x"], same, "-.", color="dimgray", linewidth=1.2,
                label=f"{SAME_SIZE_COPY} (calibrated)")
    ordered = sorted(shapes, key=shape_sizes)
    _shape_ticks(ax, ordered)
    ax.set_ylabel(f"throughput ({metric}, at the median time)")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_ylim(bottom=0)
    if ceiling:
        name, value = ceiling
        ax.axhline(value, color="black", linewidth=1, linestyle=":",
                   label=f"ceiling: {name} {value:.4g} {metric}")
        top = max(ax.get_ylim()[1], value * 1.08)
        ax.set_ylim(0, top)
        right = ax.secondary_yaxis("right", functions=(lambda v: 100 * v / value,
                                                       lambda p: p * value / 100))
        right.set_ylabel(f"% of {name} ceiling")
    ax.legend(fontsize=8, loc="lower right", framealpha=0.9)
    ax.set_title(_title(frame, kernel, dtype) + "\nbands: p20-p80 of the timed calls",
                 fontsize=10)
    return fig


def plot_landscape(frame: pd.DataFrame, kernel: str, dtype: str, default_config: str | None,
                   out_stem: Path) -> list[Path]:
    fig = draw_landscape(frame, kernel, dtype, default_config)
    return _save(fig, out_stem) if fig is not None else []


def draw_landscape(frame: pd.DataFrame, kernel: str, dtype: str, default_config: str | None):
    """How much tuning buys: every correct config's throughput per shape, the winner and the
    default marked; for tiled kernels also a BLOCK_M x BLOCK_N heatmap at the largest shape."""
    rows = frame[(frame["dtype"] == dtype) & (frame["provider"] == TRITON)
                 & (frame["status"] == OK)]
    if rows.empty:
        return None
    shapes = sorted(rows["shape"].unique(), key=shape_sizes)
    positions, _ = x_axis(shapes)
    configs = rows["config"].map(parse_config_text)
    tiled = all({"BLOCK_M", "BLOCK_N"} <= set(c) for c in configs)
    fig, axes = plt.subplots(1, 2 if tiled else 1, figsize=(13 if tiled else 8, 5),
                             squeeze=False)
    ax = axes[0][0]
    jitter = random.Random(0)  # fixed, so the picture is reproducible
    for shape, group in rows.groupby("shape"):
        x = positions[shape]
        xs = [x * 2 ** jitter.uniform(-0.12, 0.12) for _ in range(len(group))]
        ax.scatter(xs, group["throughput"], s=9, color="#888888", alpha=0.5, linewidths=0)
        best = group.loc[group["p50_ms"].idxmin()]
        ax.scatter([x], [best["throughput"]], marker="*", s=160, color=COLOURS[TUNED],
                   zorder=3, label="winner" if shape == shapes[0] else None)
        default = group[group["config"] == default_config] if default_config else group[:0]
        if not default.empty:
            ax.scatter([x], [default["throughput"].iloc[-1]], marker="D", s=40,
                       color="#ff7f0e", zorder=3,
                       label="default config" if shape == shapes[0] else None)
    ax.scatter([], [], s=9, color="#888888", label="every correct config")
    _shape_ticks(ax, shapes)
    ax.set_ylabel(f"throughput ({rows['metric'].iloc[0]})")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"{kernel}, {dtype}: spread of {rows['config'].nunique()} correct configs",
                 fontsize=10)
    if tiled:
        _block_heatmap(axes[0][1], rows, shapes[-1])
    fig.suptitle(_title(frame, kernel, dtype), fontsize=10, y=1.02)
    return fig


def _block_heatmap(ax, rows: pd.DataFrame, shape: str) -> None:
    at_shape = rows[rows["shape"] == shape].copy()
    params = at_shape["config"].map(parse_config_text)
    at_shape["BLOCK_M"] = params.map(lambda c: c["BLOCK_M"])
    at_shape["BLOCK_N"] = params.map(lambda c: c["BLOCK_N"])
    grid = at_shape.pivot_table(index="BLOCK_M", columns="BLOCK_N", values="throughput",
                                aggfunc="max")
    image = ax.imshow(grid.values, origin="lower", cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(grid.columns)), [str(c) for c in grid.columns])
    ax.set_yticks(range(len(grid.index)), [str(i) for i in grid.index])
    ax.set_xlabel("BLOCK_N")
    ax.set_ylabel("BLOCK_M")
    for (i, j), value in np.ndenumerate(grid.values):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=8,
                    color="white" if value < np.nanmax(grid.values) * 0.6 else "black")
    ax.set_title(f"best over the other parameters at {shape}\n"
                 "(blank: pruned or none correct)", fontsize=10)
    ax.figure.colorbar(image, ax=ax, label=f"throughput ({rows['metric'].iloc[0]})")
