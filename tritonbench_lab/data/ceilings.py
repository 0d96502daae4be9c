"""The ceilings a GPU's rows are judged against, read from results/<gpu>/ceilings.csv, which
`tlab calibrate` (measure/calibrate.py) measured on that GPU itself.

- copy: a large device-to-device copy; bytes read + bytes written over the time (GB/s).
  The peak for memory-bound kernels (softmax, rmsnorm).
- copy_<N>MiB: the same copy moving N MiB in all (16 MiB .. 2 GiB): the copy curve. A short
  copy does not reach the peak: launch, ramp-up and tail are a larger share of it, and
  do_bench's L2 flush (writing 256 MB of zeros) leaves dirty lines that a short kernel pays
  to write back (copies of tens of MiB fall well short of the peak). A memory-bound kernel
  at a shape is therefore also judged against a copy of the same number of bytes, measured
  the same way: `ceiling_for(..., traffic=bytes)`.
- matmul_<dtype>: torch.matmul (the vendor library) on square operands (TFLOP/s). The
  ceiling for compute-bound kernels.

Stored append-only in results/<gpu>/ceilings.csv (layout.py); the newest row per name is
in force.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from tritonbench_lab.data.layout import ceilings_in
from tritonbench_lab.data.records import GBPS, Ceiling
from tritonbench_lab.data.store import append_rows, load_ceilings

COPY_BYTES = 4 << 30  # 4 GiB source: many times a GPU's L2, so the copy streams from HBM
COPY_CURVE_MIB = (16, 32, 64, 128, 256, 512, 1024, 2048)  # bytes moved (read + write)
SAME_SIZE_COPY = "copy of the same bytes"


def append_ceilings(path: Path, rows: list[Ceiling]) -> None:
    append_rows(path, rows)


def ceilings_in_force(path: Path) -> dict[str, float]:
    """name -> value of the newest row of each name ({} when never calibrated)."""
    newest: dict[str, Ceiling] = {}
    for row in load_ceilings(path):
        if row.name not in newest or row.timestamp >= newest[row.name].timestamp:
            newest[row.name] = row
    return {name: row.value for name, row in newest.items()}


def copy_curve(ceilings: dict[str, float]) -> list[tuple[int, float]]:
    """(bytes moved, GB/s) of every calibrated copy, smallest first; [] when not calibrated."""
    points = [(int(name[5:-3]) * 2**20, value) for name, value in ceilings.items()
              if re.fullmatch(r"copy_\d+MiB", name)]
    if points and "copy" in ceilings:
        points.append((2 * COPY_BYTES, ceilings["copy"]))
    return sorted(points)


def copy_at(traffic: float, curve: list[tuple[int, float]]) -> float:
    """Copy bandwidth for `traffic` bytes: linear in log(bytes) between the two calibrated
    sizes around it; the end values beyond the ends."""
    if traffic <= curve[0][0]:
        return curve[0][1]
    for (low, low_value), (high, high_value) in zip(curve, curve[1:], strict=False):
        if traffic <= high:
            t = math.log(traffic / low) / math.log(high / low)
            return low_value + t * (high_value - low_value)
    return curve[-1][1]


def ceiling_for(metric: str, dtype: str, ceilings: dict[str, float],
                traffic: float | None = None) -> tuple[str, float] | None:
    """The ceiling a kernel judged in `metric` at `dtype` is compared with, if calibrated.

    Memory-bound kernels: with `traffic` (bytes the shape moves) and a calibrated copy curve,
    the copy of the same bytes; else the peak copy. Compute-bound: torch.matmul's rate.
    """
    if metric == GBPS and traffic is not None:
        curve = copy_curve(ceilings)
        if curve:
            return SAME_SIZE_COPY, copy_at(traffic, curve)
    name = "copy" if metric == GBPS else f"matmul_{dtype}"
    return (name, ceilings[name]) if name in ceilings else None


def traffic_of(throughput: float, p50_ms: float, metric: str) -> float | None:
    """Bytes a GB/s row moved, recovered from its throughput and time (None otherwise)."""
    return throughput * 1e9 * p50_ms * 1e-3 if metric == GBPS else None


def judging(folder: Path, metric: str, dtype: str
            ) -> tuple[tuple[str, float] | None, list[tuple[int, float]] | None]:
    """(peak ceiling or None, copy curve or None) that rows of `metric` and `dtype` in one
    GPU's results folder are judged against."""
    ceilings = ceilings_in_force(ceilings_in(folder))
    curve = copy_curve(ceilings) if metric == GBPS else []
    return ceiling_for(metric, dtype, ceilings), curve or None
