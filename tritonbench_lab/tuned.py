"""The runtime side of the winners: the config tuned for a shape on the current GPU.

    config = lookup("matmul", dtype=torch.bfloat16, M=4096, N=4096, K=1024)

Where: $TLAB_CONFIG_DIR when set, else the configs/ folder of this source tree; the file is
<dir>/<gpu-slug>/<kernel>.csv (layout.py), written by `tlab sweep` from the winner rule
(winners.py). Which row: the same dtype and the exact shape when it was tuned; otherwise
the nearest tuned shape, nearest meaning the smallest sum over dimensions of
|log2(size / tuned size)| (so 3000 is nearer 4096 than 2048), ties going to the larger shape
(a config tuned for more work under-fills a smaller problem less than the reverse
over-fills). No file, or no row for the dtype: the kernel's default config, with one warning
per file and key that names both. Files are parsed once and re-read when they change.
No torch, no triton at import.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

from tritonbench_lab import store
from tritonbench_lab.layout import Layout, config_file_in, slugify
from tritonbench_lab.records import Winner, parse_config_text
from tritonbench_lab.shapes import shape_sizes

CONFIG_DIR_ENV = "TLAB_CONFIG_DIR"
SOURCE_CONFIG_DIR = Layout(Path(__file__).resolve().parent.parent).configs

_warned: set[tuple[str, str]] = set()


def config_dir() -> Path:
    override = os.environ.get(CONFIG_DIR_ENV)
    return Path(override) if override else SOURCE_CONFIG_DIR


def dtype_key(dtype) -> str:
    """'bf16' for torch.bfloat16 or 'bf16' (no torch import needed here)."""
    names = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}
    text = str(dtype)
    return names.get(text, text)


def clear_cache() -> None:
    """Forget parsed files and warnings (after rewriting configs, and in tests)."""
    store._cache.clear()
    _warned.clear()


def shape_distance(wanted: tuple[int, ...], tuned: tuple[int, ...]) -> float:
    return sum(abs(math.log2(w / t)) for w, t in zip(wanted, tuned, strict=True))


def nearest_row(rows: list[Winner], sizes: tuple[int, ...]) -> Winner | None:
    candidates = [(shape_sizes(r.shape), r) for r in rows]
    candidates = [(s, r) for s, r in candidates if len(s) == len(sizes)]
    if not candidates:
        return None
    _, best = min(candidates, key=lambda c: (shape_distance(sizes, c[0]), -math.prod(c[0])))
    return best


def current_gpu_slug() -> str:
    import torch

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
    path = config_file_in(Path(directory or config_dir()), slug, kernel)
    key = dtype_key(dtype)
    rows = [r for r in store.load_winners(path) if r.kernel == kernel and r.dtype == key]
    row = nearest_row(rows, tuple(sizes.values()))
    if row is not None:
        return parse_config_text(row.config)
    if (str(path), key) not in _warned:
        _warned.add((str(path), key))
        why = "does not exist" if not path.exists() else f"has no {key} rows for {kernel}"
        warnings.warn(f"tlab: {path} {why}; using {kernel}'s default config", stacklevel=2)
    if default is not None:
        return dict(default)
    from tritonbench_lab.kernels import get_spec

    return dict(get_spec(kernel).space.default)
