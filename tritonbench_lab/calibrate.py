"""Ceilings measured on the GPU itself: what every kernel's throughput is a fraction of.

- copy: a large device-to-device copy; bytes read + bytes written over the time (GB/s).
  The ceiling for memory-bound kernels (softmax, rmsnorm).
- matmul_<dtype>: torch.matmul (the vendor library) on square operands (TFLOP/s). The
  ceiling for compute-bound kernels.

Stored append-only in results/<gpu>/ceilings.csv; the newest row per name is in force.
"""

from __future__ import annotations

import csv
import datetime
from pathlib import Path

from tritonbench_lab.errors import TlabError
from tritonbench_lab.records import GBPS
from tritonbench_lab.store import make_folder

CEILING_COLUMNS = (
    "name", "metric", "value", "p20_ms", "p50_ms", "p80_ms", "size", "timing",
    "gpu", "gpu_slug", "torch", "triton", "timestamp",
)
COPY_BYTES = 4 << 30  # 4 GiB source: ~70x the H200's L2, so the copy streams from HBM
MATMUL_SIZE = 8192


def ceilings_path(root: Path, gpu_slug: str) -> Path:
    return Path(root) / "results" / gpu_slug / "ceilings.csv"


def measure(fingerprint, bench, dtypes) -> list[dict[str, str]]:
    import torch

    from tritonbench_lab.spec import dtype_name
    from tritonbench_lab.timing import time_call

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    common = {"gpu": fingerprint.gpu, "gpu_slug": fingerprint.gpu_slug,
              "torch": fingerprint.torch, "triton": fingerprint.triton, "timestamp": now,
              "timing": bench.method(False)}
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    buffers = [torch.rand(COPY_BYTES // 4, generator=gen, device="cuda")]
    buffers.append(torch.empty_like(buffers[0]))
    p20, p50, p80 = time_call(lambda: buffers[1].copy_(buffers[0]), bench, False)
    rows.append({"name": "copy", "metric": GBPS, "value": repr(2 * COPY_BYTES / (p50 * 1e-3) / 1e9),
                 "p20_ms": repr(p20), "p50_ms": repr(p50), "p80_ms": repr(p80),
                 "size": f"{COPY_BYTES} bytes", **common})
    buffers.clear()
    n = MATMUL_SIZE
    for dtype in dtypes:
        a = torch.randn((n, n), generator=gen, device="cuda").to(dtype)
        b = torch.randn((n, n), generator=gen, device="cuda").to(dtype)
        p20, p50, p80 = time_call(lambda a=a, b=b: torch.matmul(a, b), bench, False)
        rows.append({"name": f"matmul_{dtype_name(dtype)}", "metric": "TFLOP/s",
                     "value": repr(2 * n**3 / (p50 * 1e-3) / 1e12),
                     "p20_ms": repr(p20), "p50_ms": repr(p50), "p80_ms": repr(p80),
                     "size": f"{n}x{n}x{n}", **common})
        del a, b
    return rows


def append_ceilings(path: Path, rows: list[dict[str, str]]) -> None:
    path = Path(path)
    make_folder(path.parent)
    new = not path.exists()
    with open(path, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CEILING_COLUMNS, lineterminator="\n")
        if new:
            writer.writeheader()
        writer.writerows(rows)


def load_ceilings(path: Path) -> dict[str, float]:
    """name -> value of the newest row of each name ({} when never calibrated)."""
    path = Path(path)
    if not path.exists():
        return {}
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != CEILING_COLUMNS:
            raise TlabError(f"{str(path)!r} is not a tlab ceilings file")
        newest: dict[str, dict[str, str]] = {}
        for row in reader:
            if row["name"] not in newest or row["timestamp"] >= newest[row["name"]]["timestamp"]:
                newest[row["name"]] = row
    return {name: float(row["value"]) for name, row in newest.items()}


def ceiling_for(metric: str, dtype: str, ceilings: dict[str, float]) -> tuple[str, float] | None:
    """The ceiling a kernel judged in `metric` at `dtype` is compared with, if calibrated."""
    name = "copy" if metric == GBPS else f"matmul_{dtype}"
    return (name, ceilings[name]) if name in ceilings else None
