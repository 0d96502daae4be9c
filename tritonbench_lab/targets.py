"""Speed targets judged from the committed winners and ceilings of one GPU, as Markdown.

- matmul: tuned Triton >= 0.90x torch.matmul (same run) at 2048, 4096 and 8192 cubed.
- softmax, rmsnorm, add_rmsnorm: the winner >= 0.85 of the copy bandwidth at every shape
  that moves >= 64 MB; layernorm and add >= 0.90 (single passes as simple as a copy).
  Shown against the calibrated peak copy and against the calibrated copy of the same number
  of bytes (calibrate.py says why both; the target is judged on the second).
Reads configs/<gpu>/*.csv and results/<gpu>/ceilings.csv only: no GPU needed.
"""

from __future__ import annotations

from tritonbench_lab.calibrate import ceilings_in_force, copy_at, copy_curve, traffic_of
from tritonbench_lab.layout import Layout
from tritonbench_lab.records import GBPS
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.store import load_winners

MATMUL_TARGET, MIN_TRAFFIC = 0.90, 64e6
MATMUL_SIZES = (2048, 4096, 8192)
# kernel -> the share of a copy of the same bytes its winner must reach
COPY_TARGETS = {"softmax": 0.85, "rmsnorm": 0.85, "add_rmsnorm": 0.85, "layernorm": 0.90,
                "add": 0.90}


def targets_report(layout: Layout, gpu: str) -> tuple[list[str], int]:
    """(Markdown lines, number of targets missed) for one GPU."""
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
    out += ["", f"{missed} target(s) missed (row kernels judged against the same-size copy)."]
    return out, missed
