"""One kernel's tuned winners across GPUs: throughput per shape, share of each GPU's own
ceiling, and config portability (how well one GPU's winning config does on another).

Reads results folders only (results/<gpu-slug>/<kernel>.csv, the ceilings.csv beside them
and the portability/ folder of `tlab portability`'s rows), and takes each GPU's winners from
the one winner rule (winners.py): no torch, no triton, so comparisons run anywhere.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tritonbench_lab.data.ceilings import ceiling_for, ceilings_in_force, traffic_of  # noqa: E402
from tritonbench_lab.data.layout import ceilings_in, kernel_file, kernels_in  # noqa: E402
from tritonbench_lab.data.portability import portability_file, standing  # noqa: E402
from tritonbench_lab.data.records import (  # noqa: E402
    OK,
    TFLOPS,
    Carried,
    Record,
    Winner,
    parse_config_text,
)
from tritonbench_lab.data.store import load_records, read_table  # noqa: E402
from tritonbench_lab.data.winners import pick_winners, shape_results  # noqa: E402
from tritonbench_lab.errors import TlabError  # noqa: E402
from tritonbench_lab.shapes import shape_sizes  # noqa: E402
from tritonbench_lab.views.plots import save  # noqa: E402
from tritonbench_lab.views.series import x_axis  # noqa: E402

WINNER_COLUMNS = ["shape", "throughput", "metric", "p50_ms", "pct_ceiling", "ceiling",
                  "ceiling_value", "winner_config", "op_p50_ms"]
COMPARE_COLUMNS = ["gpu", "shape", "x", *WINNER_COLUMNS[1:]]
PORTABILITY_COLUMNS = ["shape", "config_from", "config_on", "config", "runs_at_pct",
                       "status_on_target", "source"]
# where a runs_at_pct comes from: `tlab portability`'s timing of the two winners side by side
# in fresh workers, else the target's sweep rows with that config (timed in its sweep, where
# concurrent workers may have failed it: an out-of-memory is no property of the config)
MEASURED, SWEPT = "portability", "sweep"
NOT_MEASURED = "not measured"
MARKERS = ["o", "s", "^", "D", "v"]


@dataclass
class Comparison:
    """Everything printed and drawn for one (kernel, dtype)."""

    kernel: str
    dtype: str
    frame: pd.DataFrame  # compare_frame: one row per (common shape, GPU)
    portability: pd.DataFrame  # every ordered pair of GPUs, stacked
    left_out: dict[str, list[str]] = field(default_factory=dict)  # GPU -> shapes not on all


def gpu_labels(folders: list[Path]) -> list[str]:
    """The folder names (= GPU slugs); a name given twice (the same GPU from two checkouts)
    gets -1, -2, ... so table rows, lines and file names stay apart."""
    names = [Path(f).resolve().name for f in folders]
    return [f"{name}-{names[:i + 1].count(name)}" if names.count(name) > 1 else name
            for i, name in enumerate(names)]


def _load(folder: Path, kernel: str) -> list[Record]:
    records = load_records(kernel_file(folder, kernel))
    if not records:
        known = ", ".join(kernels_in(folder)) or "none"
        raise TlabError(f"no results for kernel {kernel!r} in {str(folder)!r} (it has: {known})")
    return records


def _winners(folder: Path, kernel: str) -> list[Winner]:
    return [w for w in pick_winners(_load(folder, kernel)) if w.kernel == kernel]


def winners_frame(folder: Path, kernel: str, dtype: str) -> pd.DataFrame:
    """One GPU's winner per shape, with its share of that GPU's own calibrated ceiling."""
    ceilings = ceilings_in_force(ceilings_in(folder))
    rows = []
    for w in _winners(folder, kernel):
        if w.dtype != dtype:
            continue
        # GB/s kernels against a copy of the same bytes where the curve is calibrated.
        traffic = traffic_of(w.throughput, w.p50_ms, w.metric)
        ceiling = ceiling_for(w.metric, dtype, ceilings, traffic)
        rows.append({"shape": w.shape, "throughput": w.throughput, "metric": w.metric,
                     "p50_ms": w.p50_ms,
                     "pct_ceiling": 100 * w.throughput / ceiling[1] if ceiling else math.nan,
                     "ceiling": ceiling[0] if ceiling else "",
                     "ceiling_value": ceiling[1] if ceiling else math.nan,
                     "winner_config": w.config,
                     "op_p50_ms": w.op_p50_ms if w.op_p50_ms else math.nan})
    return pd.DataFrame(rows, columns=WINNER_COLUMNS)


def _has(labels: list[str], items: list[set[str]]) -> str:
    """'a has x, y; b has z': what each side has (kernels, dtypes or shapes), for messages."""
    def order(text: str):  # shapes by size (1024 before 512 otherwise), names alphabetically
        return shape_sizes(text) if re.fullmatch(r"\d+(x\d+)*", text) else (math.inf, text)

    return "; ".join(f"{label} has {', '.join(sorted(got, key=order)) or 'nothing'}"
                     for label, got in zip(labels, items, strict=True))


def compare_frame(folders: list[Path], kernel: str, dtype: str) -> pd.DataFrame:
    """One row per (shape measured on every GPU, GPU): the winner's throughput, its share of
    that GPU's own ceiling (NaN when not calibrated) and config. Sorted by size, then GPU."""
    labels = gpu_labels(folders)
    per_gpu = [winners_frame(f, kernel, dtype) for f in folders]
    common = set.intersection(*(set(w["shape"]) for w in per_gpu))
    if not common:
        raise TlabError(f"{kernel} {dtype}: no shape in common: "
                        + _has(labels, [set(w["shape"]) for w in per_gpu]))
    metrics = {m for w in per_gpu for m in w["metric"]}
    if len(metrics) > 1:
        raise TlabError(f"{kernel} {dtype}: the GPUs measured it in different units "
                        f"({', '.join(sorted(metrics))})")
    shapes = sorted(common, key=shape_sizes)
    positions, _ = x_axis(shapes)
    frame = pd.concat([w[w["shape"].isin(common)].assign(gpu=label)
                       for label, w in zip(labels, per_gpu, strict=True)])
    frame["x"] = frame["shape"].map(positions)
    rank = {"shape": {s: i for i, s in enumerate(shapes)},
            "gpu": {g: i for i, g in enumerate(labels)}}
    frame = frame.sort_values(["shape", "gpu"], key=lambda col: col.map(rank[col.name]))
    return frame[COMPARE_COLUMNS].reset_index(drop=True)


def _config_on(records: list[Record], dtype: str, shape: str, config: str
               ) -> tuple[float | None, str]:
    """(p50 of `config` at `shape`, status) by the winner rule (winners.py), so a GPU's own
    winner config gives exactly its winner's time."""
    wanted = parse_config_text(config)  # as a dict: parameter order may differ between files
    for result in shape_results([r for r in records if (r.dtype, r.shape) == (dtype, shape)]):
        for text, row in result.configs.items():
            if parse_config_text(text) == wanted:
                # Tried but failed there (pruned, out of resources, ...): say how.
                return (row.p50_ms, OK) if row.status == OK else (None, row.status)
    return None, NOT_MEASURED


def portability(folder_a: Path, folder_b: Path, kernel: str, dtype: str) -> pd.DataFrame:
    """For each shape both GPUs have a winner at: A's winner config run on B, as a share of
    B's best there ("A's config runs at X% of B's best on B"). From `tlab portability`'s rows
    on B where they time these two winners (100 * native / carried time), else from B's sweep
    rows: 100 * B winner's p50 / p50 of B's row with A's config. NaN when neither has an ok
    time (status_on_target: the row's status, or 'not measured')."""
    label_a, label_b = gpu_labels([folder_a, folder_b])
    wins_a = winners_frame(folder_a, kernel, dtype)
    wins_b = winners_frame(folder_b, kernel, dtype)
    best_on_b = dict(zip(wins_b["shape"], wins_b["p50_ms"], strict=True))
    native = dict(zip(wins_b["shape"], wins_b["winner_config"], strict=True))
    measured = _measured(folder_b, folder_a.name, kernel, dtype)
    records_b = [r for r in _load(folder_b, kernel) if r.dtype == dtype]
    rows = []
    for shape, config in zip(wins_a["shape"], wins_a["winner_config"], strict=True):
        if shape not in best_on_b:
            continue
        row = measured.get(shape)
        if row is not None and _same(row.carried_config, config) and _same(
                row.native_config, native[shape]):  # the winners standing now, side by side
            pct = 100 / row.regret if row.regret else math.nan  # None: it failed there
            status, source = row.status, MEASURED
        else:
            p50, status = _config_on(records_b, dtype, shape, config)
            pct, source = (100 * best_on_b[shape] / p50 if p50 else math.nan), SWEPT
        rows.append({"shape": shape, "config_from": label_a, "config_on": label_b,
                     "config": config, "runs_at_pct": pct, "status_on_target": status,
                     "source": source})
    return pd.DataFrame(rows, columns=PORTABILITY_COLUMNS)


def _measured(folder: Path, from_slug: str, kernel: str, dtype: str) -> dict[str, Carried]:
    """`tlab portability`'s standing rows on the GPU of `folder` for another's winners."""
    path = portability_file(folder.parent, folder.name, from_slug)
    if not path.is_file():
        return {}
    return {r.shape: r for r in standing(read_table(path, Carried))
            if (r.kernel, r.dtype) == (kernel, dtype)}


def _same(config_a: str, config_b: str) -> bool:
    return parse_config_text(config_a) == parse_config_text(config_b)  # any parameter order


def compare(folders: list[Path], kernel: list[str] | None = None,
            dtype: list[str] | None = None) -> tuple[list[Comparison], list[str]]:
    """Every (kernel, dtype) all folders have winners for (or those asked for), and notes on
    what was left out. Raises TlabError, naming what each side has, when nothing overlaps."""
    folders = [Path(f) for f in folders]
    labels = gpu_labels(folders)
    for folder in folders:
        if not kernels_in(folder):
            raise TlabError(f"no results in {str(folder)!r}: it holds no <kernel>.csv file")
    kernels, notes = _kernels_to_compare(folders, labels, kernel)
    skipped, comparisons = [], []
    for name in kernels:
        found, said, missed = _compare_kernel(folders, labels, name, dtype)
        comparisons += found
        notes += said
        skipped += missed
    if not comparisons:
        raise TlabError("; ".join(skipped))
    return comparisons, notes + skipped


def _kernels_to_compare(folders: list[Path], labels: list[str], kernel: list[str] | None
                        ) -> tuple[list[str], list[str]]:
    """The kernels asked for, else those every folder has results for, with a note on the
    others; none in common is a TlabError saying what each folder has."""
    kernels = list(kernel) if kernel else sorted(set.intersection(*(set(kernels_in(f))
                                                                 for f in folders)))
    if not kernels:
        raise TlabError("no kernel in common: "
                        + _has(labels, [set(kernels_in(f)) for f in folders]))
    others = set() if kernel else {k for f in folders for k in kernels_in(f)} - set(kernels)
    notes = [f"kernels not in every folder, left out: {', '.join(sorted(others))}"] \
        if others else []
    return kernels, notes


def _compare_kernel(folders: list[Path], labels: list[str], kernel: str,
                    dtype: list[str] | None) -> tuple[list[Comparison], list[str], list[str]]:
    """One kernel's comparisons, one per dtype every folder has winners in (of `dtype` when
    given); notes on dtypes left out; and what was skipped, saying why."""
    dtypes_of = [{w.dtype for w in _winners(f, kernel)} for f in folders]
    common = set.intersection(*dtypes_of)
    if dtype:
        common &= set(dtype)
    notes, skipped, comparisons = [], [], []
    if not common:
        wanted = f"dtype {', '.join(dtype)}" if dtype else "dtype"
        skipped.append(f"{kernel}: no {wanted} on every GPU: " + _has(labels, dtypes_of))
    elif not dtype and set.union(*dtypes_of) - common:
        notes.append(f"{kernel}: dtypes not on every GPU, left out: "
                     + ", ".join(sorted(set.union(*dtypes_of) - common)))
    for dt in sorted(common):
        try:
            frame = compare_frame(folders, kernel, dt)
        except TlabError as err:  # no shape in common, or different units
            skipped.append(str(err))
            continue
        comparisons.append(_comparison(folders, labels, kernel, dt, frame))
    return comparisons, notes, skipped


def _comparison(folders: list[Path], labels: list[str], kernel: str, dtype: str,
                frame: pd.DataFrame) -> Comparison:
    """One (kernel, dtype) across the folders, from its compare_frame: the portability of
    every ordered pair of GPUs, and each GPU's shapes left out of the frame."""
    pairs = [portability(a, b, kernel, dtype).assign(config_from=la, config_on=lb)
             for a, la in zip(folders, labels, strict=True)
             for b, lb in zip(folders, labels, strict=True) if la != lb]
    shapes = set(frame["shape"])
    left_out = {label: sorted(set(winners_frame(f, kernel, dtype)["shape"]) - shapes,
                              key=shape_sizes)
                for f, label in zip(folders, labels, strict=True)}
    return Comparison(kernel, dtype, frame, pd.concat(pairs, ignore_index=True),
                      {k: v for k, v in left_out.items() if v})


def picture_stem(out: Path, comparison: Comparison) -> Path:
    """<out>/compare/<kernel>-<dtype>-<gpuA>-vs-<gpuB>[-vs-...] (no suffix)."""
    gpus = "-vs-".join(dict.fromkeys(comparison.frame["gpu"]))
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{comparison.kernel}-{comparison.dtype}-{gpus}")
    return Path(out) / "compare" / name


def draw(comparison: Comparison, out: Path, formats: tuple[str, ...] = ("svg",)) -> list[Path]:
    """Throughput against shape, one line per GPU; below it, when any GPU is calibrated,
    each GPU's share of its own ceiling. Writes the pictures; returns their paths."""
    frame = comparison.frame
    shapes = sorted(set(frame["shape"]), key=shape_sizes)
    calibrated = bool(frame["pct_ceiling"].notna().any())
    fig, axes = plt.subplots(2 if calibrated else 1, 1, sharex=True, squeeze=False,
                             figsize=(8, 7.5 if calibrated else 5),
                             height_ratios=[3, 2] if calibrated else [1])
    top = axes[0][0]
    for index, (gpu, rows) in enumerate(frame.groupby("gpu", sort=False)):
        # The same look for a GPU in both panels; markers and dashes keep equal lines visible.
        style = {"color": f"C{index}", "marker": MARKERS[index % len(MARKERS)],
                 "linestyle": "-" if index == 0 else "--", "linewidth": 2, "markersize": 6}
        top.plot(rows["x"], rows["throughput"], label=gpu, **style)
        if calibrated and rows["pct_ceiling"].notna().any():
            first = rows.iloc[0]
            axes[1][0].plot(rows["x"], rows["pct_ceiling"], **style,
                            label=f"{gpu} (ceiling: {first['ceiling']} "
                            f"{first['ceiling_value']:.4g} {first['metric']})")
        elif calibrated:  # say why its line is missing rather than leave the reader guessing
            axes[1][0].plot([], [], " ", label=f"{gpu}: no ceilings (run tlab calibrate)")
    top.set_ylabel(f"winner throughput ({frame['metric'].iloc[0]})")
    top.set_ylim(bottom=0)
    top.legend(fontsize=9, loc="best", framealpha=0.9)
    top.set_title(f"{comparison.kernel}, {comparison.dtype}: tuned Triton winner per shape, "
                  + " vs ".join(dict.fromkeys(frame["gpu"])), fontsize=11)
    if calibrated:
        bottom = axes[1][0]
        bottom.axhline(100, color="black", linewidth=1, linestyle=":")
        bottom.set_ylim(0, max(110.0, frame["pct_ceiling"].max() * 1.1))
        bottom.set_ylabel("% of own ceiling")
        bottom.legend(fontsize=9, loc="best", framealpha=0.9)
    positions, x_label = x_axis(shapes)
    for (ax,) in axes:
        ax.grid(True, alpha=0.3)
        ax.set_xscale("log", base=2)
    ax = axes[-1][0]  # shared x: ticks and label on the bottom panel only
    ax.set_xticks([positions[s] for s in shapes])
    ax.set_xticklabels(shapes, rotation=30, ha="right", fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel(x_label)
    fig.tight_layout()
    return save(fig, picture_stem(out, comparison), formats)


# A kernel "follows" its yardstick across two GPUs when their speed ratio is within this of
# the yardstick's ratio. GB/s kernels: the copy of the same bytes (their ceiling). TFLOP/s
# kernels: the PyTorch op (cuBLAS) at the same shapes, where both sweeps timed it: a compute
# ceiling calibrated at one size misses what tile and wave effects do to the vendor's own
# matmul at the others; else the calibrated ceiling.
FOLLOWS = 0.05
RATIO_COLUMNS = ["kernel", "dtype", "shapes", "ratio", "ceiling", "ceiling_ratio", "op_ratio",
                 "verdict"]
COPY_YARDSTICK, OP_YARDSTICK = "its ceiling", "the PyTorch op"


def speed_ratios(comparisons: list[Comparison], folders: list[Path]) -> pd.DataFrame:
    """Per kernel and dtype, the first GPU's speed over the second's (the geomean over the
    shapes both tuned of their winners' throughput), beside the same geomean of their
    ceilings at those shapes (each GPU's own, as `% own ceiling` judges it: the copy of the
    same bytes, or torch.matmul at its calibrated size) and of the PyTorch op's speed there
    (NaN unless both timed it at every shape), and whether the kernel follows its yardstick
    (see FOLLOWS) or falls short on one GPU."""
    labels = gpu_labels(folders)[:2]
    rows = []
    for c in comparisons:
        wide = c.frame.pivot(index="shape", columns="gpu",
                             values=["throughput", "ceiling_value", "op_p50_ms"])
        ratio = _geomean(wide["throughput"][labels[0]] / wide["throughput"][labels[1]])
        ceiling = _geomean(wide["ceiling_value"][labels[0]] / wide["ceiling_value"][labels[1]])
        op_times = wide["op_p50_ms"][labels[1]] / wide["op_p50_ms"][labels[0]]  # speed: 1/time
        op = _geomean(op_times) if op_times.notna().all() else math.nan
        names = sorted(set(c.frame["ceiling"]) - {""})
        by_op = c.frame["metric"].iloc[0] == TFLOPS and not math.isnan(op)
        yardstick = (OP_YARDSTICK, op) if by_op else (COPY_YARDSTICK, ceiling)
        rows.append({"kernel": c.kernel, "dtype": c.dtype, "shapes": len(wide), "ratio": ratio,
                     "ceiling": " / ".join(names) or "-", "ceiling_ratio": ceiling,
                     "op_ratio": op, "verdict": _follows(ratio, *yardstick, labels)})
    return pd.DataFrame(rows, columns=RATIO_COLUMNS)


def _geomean(values: pd.Series) -> float:
    values = values.dropna()
    return math.exp(values.map(math.log).mean()) if len(values) else math.nan


def _follows(ratio: float, name: str, yardstick: float, labels: list[str]) -> str:
    if math.isnan(yardstick):
        return "nothing to judge by"
    if abs(ratio / yardstick - 1) <= FOLLOWS:
        return f"follows {name}"
    # Faster than the yardstick says on the first GPU: short of it on the second.
    short = labels[1] if ratio > yardstick else labels[0]
    return f"short of {name} on {short} ({ratio / yardstick:.2f}x)"


def ratios_markdown(ratios: pd.DataFrame, labels: list[str]) -> str:
    """The speed-ratio table as Markdown (what `tlab compare` writes beside its pictures)."""
    a, b = labels[:2]
    out = [f"# {a} against {b}", "",
           f"Per kernel and dtype: {a}'s tuned winners' throughput over {b}'s (geomean over the "
           "shapes both tuned), beside the same ratio of the two GPUs' own measured ceilings at "
           "those shapes (`tlab calibrate`: the copy of the same bytes for GB/s kernels, "
           "torch.matmul's calibrated size for TFLOP/s ones) and of the PyTorch op's speed at "
           "those shapes (timed in the same sweeps). The verdict sets a GB/s kernel against its "
           "ceiling, a TFLOP/s one against the PyTorch op (the vendor's library at the same "
           f"shapes): within {FOLLOWS:.0%} of that ratio it follows it; else the verdict gives "
           "the speed ratio over it. Built by `tlab compare`.",
           "", f"| kernel | dtype | shapes | speed ratio ({a} / {b}) | ceiling | ceiling ratio "
           f"({a} / {b}) | PyTorch op ratio ({a} / {b}) | verdict |",
           "|---|---|---|---|---|---|---|---|"]
    for _, r in ratios.iterrows():
        ceiling, op = ("-" if math.isnan(v) else f"{v:.2f}"
                       for v in (r["ceiling_ratio"], r["op_ratio"]))
        out.append(f"| {r['kernel']} | {r['dtype']} | {r['shapes']} | {r['ratio']:.2f} | "
                   f"{r['ceiling']} | {ceiling} | {op} | {r['verdict']} |")
    return "\n".join(out) + "\n"
