"""Winners: the fastest correct Triton config per (kernel, dtype, shape) on one GPU.

Computed from the rows of results/<gpu>/<kernel>.csv only (argmin p50 over status == ok,
provider == triton), and written to configs/<gpu>/<kernel>.csv atomically (temp file +
rename), so a reader never sees half a file. Within each (dtype, shape) only rows of the
newest toolchain (torch, triton) that measured it are compared. No torch, no triton.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections import defaultdict
from pathlib import Path

from tritonbench_lab.records import OK, TRITON, Record

WINNER_COLUMNS = (
    "kernel", "dtype", "shape", "config", "p50_ms", "throughput", "metric",
    "best_baseline", "baseline_throughput", "speedup", "gpu", "torch", "triton", "date", "run_id",
)


def configs_path(root: Path, gpu_slug: str, kernel: str) -> Path:
    return Path(root) / "configs" / gpu_slug / f"{kernel}.csv"


def _newest_toolchain(rows: list[Record]) -> list[Record]:
    newest = max(rows, key=lambda r: r.timestamp)
    return [r for r in rows if (r.torch, r.triton) == (newest.torch, newest.triton)]


def compute_winners(records: list[Record]) -> list[dict[str, str]]:
    """One dict per (kernel, dtype, shape) that has at least one ok Triton row."""
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.kernel, r.dtype, r.shape)].append(r)
    winners = []
    for (kernel, dtype, shape), rows in groups.items():
        rows = [r for r in _newest_toolchain(rows) if r.status == OK and r.p50_ms]
        triton_rows = [r for r in rows if r.provider == TRITON]
        if not triton_rows:
            continue
        best = min(triton_rows, key=lambda r: r.p50_ms)
        baselines = [r for r in rows if r.provider != TRITON]
        base = min(baselines, key=lambda r: r.p50_ms) if baselines else None
        winners.append({
            "kernel": kernel, "dtype": dtype, "shape": shape, "config": best.config,
            "p50_ms": repr(best.p50_ms), "throughput": repr(best.throughput),
            "metric": best.metric,
            "best_baseline": base.provider if base else "",
            "baseline_throughput": repr(base.throughput) if base else "",
            "speedup": repr(base.p50_ms / best.p50_ms) if base else "",
            "gpu": best.gpu, "torch": best.torch, "triton": best.triton,
            "date": best.timestamp[:10], "run_id": best.run_id,
        })
    winners.sort(key=lambda w: (w["kernel"], w["dtype"], _shape_order(w["shape"])))
    return winners


def _shape_order(shape: str) -> tuple[int, ...]:
    return tuple(int(s) for s in shape.split("x"))


def write_winners(path: Path, winners: list[dict[str, str]]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=WINNER_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(winners)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_winners(path: Path) -> list[dict[str, str]]:
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))
