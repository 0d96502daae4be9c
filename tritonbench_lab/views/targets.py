"""Speed targets judged from the committed winners and ceilings of one GPU, as Markdown.

- matmul: tuned Triton >= 0.90x torch.matmul (same run) at 2048, 4096 and 8192 cubed.
- softmax, rmsnorm, add_rmsnorm: the winner >= 0.85 of the copy bandwidth at every shape
  that moves >= 64 MB; layernorm, rope and add >= 0.90 (single passes as simple as a copy).
  Shown against the calibrated peak copy and against the calibrated copy of the same number
  of bytes (calibrate.py says why both; the target is judged on the second).
- against baselines timed in the winner's own run, where >= 64 MB move: softmax rows of
  131,072 columns or more >= 1.5x torch.softmax; layernorm >= 1.3x F.layer_norm and >= 1.0x
  torch.compile; rope >= 1.0x torch.compile.
- kernels of your own (loaded from their modules): faster than the PyTorch op at each tuned
  shape, the rule `tritonbench_lab.ops` runs them by.
Reads configs/, results/<gpu>/<kernel>.csv and ceilings.csv only: no GPU needed.
"""

from __future__ import annotations

from typing import NamedTuple

from tritonbench_lab.data.ceilings import ceilings_in_force, copy_at, copy_curve, traffic_of
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import GBPS, OK
from tritonbench_lab.data.store import load_records, load_winners
from tritonbench_lab.data.winners import shape_results
from tritonbench_lab.shapes import shape_sizes

MATMUL_TARGET, MIN_TRAFFIC = 0.90, 64e6
MATMUL_SIZES = (2048, 4096, 8192)
# kernel -> the share of a copy of the same bytes its winner must reach
COPY_TARGETS = {"softmax": 0.85, "rmsnorm": 0.85, "add_rmsnorm": 0.85, "layernorm": 0.90,
                "rope": 0.90, "add": 0.90}


class BaselineTarget(NamedTuple):
    """The winner at least `ratio` times as fast as `provider`, at shapes whose last size is
    >= min_last (and that move >= 64 MB)."""

    kernel: str
    provider: str
    ratio: float
    min_last: int = 0


BASELINE_TARGETS = (
    BaselineTarget("softmax", "torch", 1.5, min_last=131_072),
    BaselineTarget("layernorm", "torch", 1.3),
    BaselineTarget("layernorm", "compiled", 1.0),
    BaselineTarget("rope", "compiled", 1.0),
)


def targets_report(layout: Layout, gpu: str, own: tuple[str, ...] = ()) -> tuple[list[str], int]:
    """(Markdown lines, number of targets missed) for one GPU; `own`: the user's kernels."""
    missed = 0
    out = [f"### matmul: tuned / torch.matmul >= {MATMUL_TARGET} ({gpu})", "",
           "| dtype | shape | tuned TFLOP/s | torch TFLOP/s | ratio | met |",
           "|---|---|---:|---:|---:|---|"]
    for w in load_winners(layout.configs_file(gpu, "matmul")):
        if shape_sizes(w.shape)[0] not in MATMUL_SIZES or w.speedup is None:
            continue
        missed += w.speedup < MATMUL_TARGET
        out.append(f"| {w.dtype} | {w.shape} | {w.throughput:.0f} | "
                   f"{w.baseline_throughput:.0f} | {w.speedup:.2f}x | "
                   f"{'yes' if w.speedup >= MATMUL_TARGET else '**no**'} |")
    ceilings = ceilings_in_force(layout.ceilings_file(gpu))
    curve, peak = copy_curve(ceilings), ceilings.get("copy", float("nan"))
    for kernel, target in COPY_TARGETS.items():
        winners = load_winners(layout.configs_file(gpu, kernel))
        if not winners:
            out += ["", f"### {kernel}: not swept on {gpu} yet (target: {target} of a copy)"]
            continue
        out += ["", f"### {kernel}: winner / copy >= {target} where >= 64 MB move ({gpu}, "
                f"peak copy {peak:.0f} GB/s)", "",
                "| dtype | shape | MB moved | config | GB/s | same-size copy | of it | of peak "
                "| met |", "|---|---|---:|---|---:|---:|---:|---:|---|"]
        for w in winners:
            moved = traffic_of(w.throughput, w.p50_ms, GBPS)
            same = copy_at(moved, curve) if curve else float("nan")
            judged = moved >= MIN_TRAFFIC
            met = (w.throughput / same if curve else w.throughput / peak) >= target
            missed += judged and not met
            verdict = ("yes" if met else "**no**") if judged else "n/a (< 64 MB)"
            out.append(f"| {w.dtype} | {w.shape} | {moved / 1e6:.0f} | `{w.config}` | "
                       f"{w.throughput:.0f} | {same:.0f} | {w.throughput / same:.2f} | "
                       f"{w.throughput / peak:.2f} | {verdict} |")
    for lines, count in (_baseline_report(layout, gpu), _own_report(layout, gpu, own)):
        out += lines
        missed += count
    out += ["", f"{missed} target(s) missed (row kernels judged against the same-size copy)."]
    return out, missed


def _own_report(layout: Layout, gpu: str, kernels: tuple[str, ...]) -> tuple[list[str], int]:
    """The user's kernels against the PyTorch op timed in their winners' own runs, at every
    tuned shape (none: not swept on this GPU, left out)."""
    out, missed = [], 0
    for kernel in kernels:
        winners = load_winners(layout.configs_file(gpu, kernel))
        if not winners:
            continue
        out += ["", f"### {kernel}: winner / the PyTorch op > 1, the rule ops runs it by ({gpu})",
                "", "| dtype | shape | config | winner ms | op ms | ratio | met |",
                "|---|---|---|---:|---:|---:|---|"]
        for w in winners:
            if w.op_p50_ms is None:
                out.append(f"| {w.dtype} | {w.shape} | `{w.config}` | {w.p50_ms:.4f} | - | - | "
                           "n/a (the op was not timed) |")
                continue
            ratio = w.op_p50_ms / w.p50_ms
            missed += ratio <= 1.0
            out.append(f"| {w.dtype} | {w.shape} | `{w.config}` | {w.p50_ms:.4f} | "
                       f"{w.op_p50_ms:.4f} | {ratio:.2f}x | {'yes' if ratio > 1.0 else '**no**'} |")
    return out, missed


def _baseline_report(layout: Layout, gpu: str) -> tuple[list[str], int]:
    """Winners against the baselines timed in their own run (winners.py, rule 5)."""
    out, missed = [], 0
    for kernel in dict.fromkeys(t.kernel for t in BASELINE_TARGETS):
        path = layout.results_file(gpu, kernel)
        results = [r for r in shape_results(load_records(path)) if r.winner] if path.exists() else []
        if not results:
            continue
        targets = [t for t in BASELINE_TARGETS if t.kernel == kernel]
        out += ["", f"### {kernel}: winner against " + ", ".join(
            f"{t.provider} >= {t.ratio}x" + (f" (last size >= {t.min_last})" if t.min_last else "")
            for t in targets) + f" where >= 64 MB move ({gpu})", "",
            "| dtype | shape | winner ms | baseline | its ms | ratio | met |",
            "|---|---|---:|---|---:|---:|---|"]
        for r in results:
            win = r.winner
            moved = traffic_of(win.throughput, win.p50_ms, GBPS)
            for t in targets:
                if moved < MIN_TRAFFIC or shape_sizes(r.shape)[-1] < t.min_last:
                    continue
                base = r.baselines.get(t.provider)
                if base is None or base.status != OK or base.p50_ms is None:
                    verdict, ratio, base_ms = "**no** (not timed)", float("nan"), float("nan")
                    missed += 1
                else:
                    ratio, base_ms = base.p50_ms / win.p50_ms, base.p50_ms
                    verdict = "yes" if ratio >= t.ratio else "**no**"
                    missed += ratio < t.ratio
                out.append(f"| {r.dtype} | {r.shape} | {win.p50_ms:.4f} | {t.provider} | "
                           f"{base_ms:.4f} | {ratio:.2f}x | {verdict} |")
    return out, missed
