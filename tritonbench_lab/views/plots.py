"""Pictures from stored rows: throughput against size per provider, and the config landscape.

Pure pandas + matplotlib over the CSV files (no torch, no triton), with the non-interactive
Agg backend, so `tlab plot` runs anywhere. Pictures are SVG (and PNG on request), written
deterministically: the same rows give the same bytes (no date stamp, fixed element ids,
fixed jitter), so committed pictures can be checked against the committed results.
"""

from __future__ import annotations

import random
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display needed, ever
matplotlib.rcParams["svg.hashsalt"] = "tlab"  # fixed ids inside SVGs: same rows, same bytes
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tritonbench_lab.data.ceilings import SAME_SIZE_COPY, copy_at, judging, traffic_of  # noqa: E402
from tritonbench_lab.data.layout import plot_stem  # noqa: E402
from tritonbench_lab.data.records import GBPS, Record, parse_config_text  # noqa: E402
from tritonbench_lab.data.store import make_folder  # noqa: E402
from tritonbench_lab.shapes import shape_sizes  # noqa: E402
from tritonbench_lab.views.series import (  # noqa: E402
    DEFAULT,
    TUNED,
    correct_configs,
    series,
    x_axis,
)

FORMATS = ("svg", "png")

# Fixed colours per provider, so every picture reads the same way.
COLOURS = {TUNED: "#d62728", DEFAULT: "#ff9896", "torch": "#1f77b4", "unfused": "#7f7f7f",
           "compiled": "#2ca02c"}
EXTRA_COLOURS = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def _colour(label: str, index: int) -> str:
    return COLOURS.get(label.split(" (outside")[0], EXTRA_COLOURS[index % len(EXTRA_COLOURS)])


def _title(records: list[Record], kernel: str, dtype: str) -> str:
    newest = max((r for r in records if r.dtype == dtype), key=lambda r: r.timestamp)
    return (f"{kernel}, {dtype} on {newest.gpu}\n"
            f"torch {newest.torch}, triton {newest.triton}, {newest.timestamp[:10]}")


# Metadata matplotlib would stamp into each file, left out so that a picture's bytes depend
# on its rows only.
_NO_STAMPS = {"svg": {"Date": None, "Creator": None}, "png": {"Software": None}}


def save(fig, path_stem: Path, formats: tuple[str, ...] = ("svg",)) -> list[Path]:
    make_folder(path_stem.parent)
    paths = []
    for fmt in formats:
        path = path_stem.with_name(f"{path_stem.name}.{fmt}")
        fig.savefig(path, format=fmt, dpi=130, bbox_inches="tight", metadata=_NO_STAMPS[fmt])
        paths.append(path)
    plt.close(fig)
    return paths


def _shape_ticks(ax, shapes: list[str]) -> None:
    positions, label = x_axis(shapes)
    ax.set_xscale("log", base=2)
    ax.set_xticks([positions[s] for s in shapes])
    ax.set_xticklabels(shapes, rotation=30, ha="right", fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel(label)


def draw_throughput(records: list[Record], kernel: str, dtype: str,
                    ceiling: tuple[str, float] | None,
                    default_config: tuple[str, ...] | None,
                    curve: list[tuple[int, float]] | None = None):
    """Throughput against size, one line per provider with its p20-p80 band, and the
    calibrated ceiling as a line with a % axis on the right; with a calibrated copy curve
    (GB/s kernels) also the copy of each shape's bytes. Returns the figure."""
    lines = series(records, dtype, default_config)
    metric = records[0].metric
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
    ax.set_title(_title(records, kernel, dtype) + "\nbands: p20-p80 of the timed calls",
                 fontsize=10)
    return fig


def draw_landscape(records: list[Record], kernel: str, dtype: str,
                   default_config: tuple[str, ...] | None):
    """How much tuning buys: every correct config's throughput per shape, the winner and the
    default marked; for tiled kernels also a BLOCK_M x BLOCK_N heatmap at the largest shape.
    None when no config was correct."""
    by_shape = {s.shape: s for s in correct_configs(records, dtype)}
    if not by_shape:
        return None
    rows = pd.DataFrame([{"shape": r.shape, "config": r.config, "throughput": r.throughput,
                          "p50_ms": r.p50_ms, "metric": r.metric}
                         for s in by_shape.values() for r in s.configs.values()])
    shapes = sorted(by_shape, key=shape_sizes)
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
        ax.scatter([x], [by_shape[shape].winner.throughput], marker="*", s=160,
                   color=COLOURS[TUNED],
                   zorder=3, label="winner" if shape == shapes[0] else None)
        default = group[group["config"].isin(default_config)] if default_config else group[:0]
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
    fig.suptitle(_title(records, kernel, dtype), fontsize=10, y=1.02)
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


def draw_target(target, out: Path, formats: tuple[str, ...] = ("svg",),
                default_config: tuple[str, ...] | None = None) -> list[Path]:
    """Both pictures of one GPU, kernel and dtype (series.Target) under <out>/<gpu>/."""
    records, kernel, dtype = target.records, target.kernel, target.dtype
    ceiling, curve = judging(target.folder, records[0].metric, dtype)
    written = save(draw_throughput(records, kernel, dtype, ceiling, default_config, curve),
                   plot_stem(out, target.slug, kernel, dtype), formats)
    landscape = draw_landscape(records, kernel, dtype, default_config)
    if landscape is not None:
        written += save(landscape, plot_stem(out, target.slug, kernel, dtype, "landscape"),
                        formats)
    return written
