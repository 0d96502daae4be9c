"""Winners: the fastest correct Triton config per (kernel, dtype, shape) on one GPU.

Computed from the rows of results/<gpu>/<kernel>.csv only (argmin p50 over status == ok,
provider == triton, of the rows that stand: a config re-timed to confirm it counts with that
time, records.standing), and written to configs/<gpu>/<kernel>.csv atomically (temp file +
rename), so a reader never sees half a file. Within each (dtype, shape) only rows of the
newest toolchain (torch, triton, and tlab with the kernel's source hash) are compared.
`lookup` is the runtime side: the config tuned for a shape on the current GPU. No torch,
no triton at import.
"""

from __future__ import annotations

import csv
import math
import os
import tempfile
import warnings
from collections import defaultdict
from pathlib import Path

from tritonbench_lab.records import OK, TRITON, Record, fastest, parse_config_text, standing
from tritonbench_lab.store import make_folder

WINNER_COLUMNS = (
    "kernel", "dtype", "shape", "config", "p50_ms", "throughput", "metric",
    "best_baseline", "baseline_throughput", "speedup", "gpu", "torch", "triton", "date", "run_id",
)


def configs_path(root: Path, gpu_slug: str, kernel: str) -> Path:
    return Path(root) / "configs" / gpu_slug / f"{kernel}.csv"


def newest_toolchain(rows: list[Record]) -> list[Record]:
    """The rows measured under the (torch, triton, tlab) of the newest row among them."""
    newest = max(rows, key=lambda r: r.timestamp)
    same = (newest.torch, newest.triton, newest.tlab)
    return [r for r in rows if (r.torch, r.triton, r.tlab) == same]


def compute_winners(records: list[Record]) -> list[dict[str, str]]:
    """One dict per (kernel, dtype, shape) that has at least one ok Triton row."""
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.kernel, r.dtype, r.shape)].append(r)
    winners = []
    for (kernel, dtype, shape), rows in groups.items():
        rows = [r for r in standing(newest_toolchain(rows)) if r.status == OK and r.p50_ms]
        triton_rows = [r for r in rows if r.provider == TRITON]
        if not triton_rows:
            continue
        best = fastest(triton_rows)
        base = fastest([r for r in rows if r.provider != TRITON])
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
    make_folder(path.parent)
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


# --- the runtime lookup ---------------------------------------------------------------------
#
# Code that launches a tlab kernel asks for the config tuned on the GPU it runs on:
#
#     config = lookup("matmul", dtype=torch.bfloat16, M=4096, N=4096, K=1024)
#
# Where: $TLAB_CONFIG_DIR when set, else the configs/ folder of this source tree; the file
# is <dir>/<gpu-slug>/<kernel>.csv. Which row: the same dtype and the exact shape when it was
# tuned; otherwise the nearest tuned shape, nearest meaning the smallest sum over dimensions of
# |log2(size / tuned size)| (so 3000 is nearer 4096 than 2048), ties going to the larger shape
# (a config tuned for more work under-fills a smaller problem less than the reverse over-fills).
# No file, or no row for the dtype: the kernel's default config, with one warning per file and
# key that names both. Files are read once and cached by path and modification time.

CONFIG_DIR_ENV = "TLAB_CONFIG_DIR"
SOURCE_CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"

_cache: dict[Path, tuple[float, list[dict[str, str]]]] = {}
_warned: set[tuple[str, str]] = set()


def config_dir() -> Path:
    override = os.environ.get(CONFIG_DIR_ENV)
    return Path(override) if override else SOURCE_CONFIG_DIR


def _dtype_key(dtype) -> str:
    """'bf16' for torch.bfloat16 or 'bf16' (no torch import needed here)."""
    names = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}
    text = str(dtype)
    return names.get(text, text)


def _winners(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    mtime = path.stat().st_mtime
    cached = _cache.get(path)
    if cached is None or cached[0] != mtime:
        cached = (mtime, load_winners(path))
        _cache[path] = cached
    return cached[1]


def clear_cache() -> None:
    """Forget cached files and warnings (after rewriting configs, and in tests)."""
    _cache.clear()
    _warned.clear()


def shape_distance(wanted: tuple[int, ...], tuned: tuple[int, ...]) -> float:
    return sum(abs(math.log2(w / t)) for w, t in zip(wanted, tuned, strict=True))


def nearest_row(rows: list[dict[str, str]], sizes: tuple[int, ...]) -> dict[str, str] | None:
    candidates = [(tuple(int(s) for s in r["shape"].split("x")), r) for r in rows]
    candidates = [(s, r) for s, r in candidates if len(s) == len(sizes)]
    if not candidates:
        return None
    _, best = min(candidates, key=lambda c: (shape_distance(sizes, c[0]), -math.prod(c[0])))
    return best


def current_gpu_slug() -> str:
    import torch

    from tritonbench_lab.env import slugify

    if not torch.cuda.is_available():
        return "interpreter"
    return slugify(torch.cuda.get_device_name(torch.cuda.current_device()))


def lookup(kernel: str, dtype, *, gpu: str | None = None, default: dict[str, int] | None = None,
           directory: Path | None = None, **sizes: int) -> dict[str, int]:
    """The config to launch `kernel` with at this shape on this GPU (see the rules above).

    sizes are the kernel's dims by name (M=, N=, K= for matmul; rows=, cols= for row
    kernels), in the kernel's order. `default` is returned (with one warning) when nothing
    was tuned; without it the kernel's own default config is used. `gpu` and `directory`
    override the current GPU's slug and the configs folder.
    """
    slug = gpu or current_gpu_slug()
    path = Path(directory or config_dir()) / slug / f"{kernel}.csv"
    dtype_key = _dtype_key(dtype)
    rows = [r for r in _winners(path) if r["kernel"] == kernel and r["dtype"] == dtype_key]
    row = nearest_row(rows, tuple(sizes.values()))
    if row is not None:
        return parse_config_text(row["config"])
    key = (str(path), dtype_key)
    if key not in _warned:
        _warned.add(key)
        why = "does not exist" if not path.exists() else f"has no {dtype_key} rows for {kernel}"
        warnings.warn(f"tlab: {path} {why}; using {kernel}'s default config", stacklevel=2)
    if default is not None:
        return dict(default)
    from tritonbench_lab.kernels import get_spec

    return dict(get_spec(kernel).space.default)
