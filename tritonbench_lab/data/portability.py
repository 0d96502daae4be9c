"""Whether one GPU's tuned configs hold on another: the trust rule.

`tlab portability FROM` times each of FROM's winners on this GPU beside this GPU's own winner
and the PyTorch op at the same shape (gates/portability.py), appending `Carried` rows to
results/<this gpu>/portability/<FROM>.csv. From the standing rows (the newest of each kernel,
dtype and shape) it writes configs/<this gpu>/carried/<FROM>.csv: one `Trust` row per kernel
and dtype. FROM's configs are trusted here for a kernel and dtype when the carried configs
ran correctly at every shape timed and none lost more than TOLERANCE to this GPU's own
winner (its worst regret). On a GPU with no configs of its own for a kernel and dtype,
`tuned.find` (and so `ops` and `lookup`) may then use a trusted GPU's file; elsewhere the
PyTorch op (or the kernel's default config), as without the file.

No torch, no triton.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path

from tritonbench_lab.data import store
from tritonbench_lab.data.records import Carried, Trust

# A carried config may lose at most this much to the native winner at its worst shape.
TOLERANCE = 1.05
# A carried config faster than the native winner beyond this (its regret below it) beat the
# winner by more than fresh workers' timing noise: the native sweep's pick at that shape is
# worth measuring again.
BEATEN = 0.97
CARRIED = "carried"  # configs/<gpu>/carried/<from>.csv
PORTABILITY = "portability"  # results/<gpu>/portability/<from>.csv


def standing(rows: Iterable[Carried]) -> list[Carried]:
    """The newest row of each kernel, dtype and shape (a later run replaces an earlier)."""
    newest: dict[tuple[str, str, str], Carried] = {}
    for row in rows:
        key = (row.kernel, row.dtype, row.shape)
        if key not in newest or row.timestamp >= newest[key].timestamp:
            newest[key] = row
    return list(newest.values())


def trust_rows(rows: Iterable[Carried], tolerance: float = TOLERANCE) -> list[Trust]:
    """One Trust row per kernel and dtype of these rows' standing ones (a single pair of
    GPUs: FROM's configs timed on one GPU)."""
    groups: dict[tuple[str, str], list[Carried]] = {}
    for row in standing(rows):
        groups.setdefault((row.kernel, row.dtype), []).append(row)
    out = []
    for (kernel, dtype), group in sorted(groups.items()):
        regrets = {r.shape: r.regret for r in group if r.regret is not None}
        failed = len(group) - len(regrets)
        worst_shape = max(regrets, key=regrets.get) if regrets else ""
        worst = regrets[worst_shape] if regrets else None
        first = group[0]
        out.append(Trust(
            kernel=kernel, dtype=dtype, from_gpu=first.from_gpu, gpu_slug=first.gpu_slug,
            capability=first.capability, shapes=len(group), failed=failed,
            median_regret=statistics.median(regrets.values()) if regrets else None,
            worst_regret=worst, worst_shape=worst_shape,
            trusted=bool(regrets) and not failed and worst <= tolerance,
            triton=first.triton, date=max(r.timestamp for r in group)[:10]))
    return out


def beaten(rows: Iterable[Carried]) -> list[Carried]:
    """The rows whose carried config beat this GPU's own winner (regret under BEATEN)."""
    return [r for r in rows if r.regret is not None and r.regret < BEATEN]


def sweep_again(row: Carried) -> str:
    """The command that measures a beaten row's shape again on this GPU."""
    return f"tlab sweep {row.kernel} --dtype {row.dtype} --shapes {row.shape} --fresh"


def trust_file(configs: Path, slug: str, from_gpu: str) -> Path:
    """configs/<slug>/carried/<from_gpu>.csv: whether from_gpu's configs hold on slug."""
    return Path(configs) / slug / CARRIED / f"{from_gpu}.csv"


def portability_file(results: Path, slug: str, from_gpu: str) -> Path:
    """results/<slug>/portability/<from_gpu>.csv: the Carried rows behind the trust file."""
    return Path(results) / slug / PORTABILITY / f"{from_gpu}.csv"


def trusted_sources(configs: Path, slug: str, kernel: str, dtype: str) -> list[Trust]:
    """The GPUs whose configs of this kernel and dtype are trusted on `slug`, the one that
    loses least at its worst first."""
    folder = Path(configs) / slug / CARRIED
    if not folder.is_dir():
        return []
    found = [t for path in sorted(folder.glob("*.csv")) for t in store.read_table(path, Trust)
             if t.kernel == kernel and t.dtype == dtype and t.trusted]
    return sorted(found, key=lambda t: (t.worst_regret, t.from_gpu))


def describe(trust: Trust) -> str:
    """One line on what a trusted file rests on, for `tlab explain` and ops' reasons."""
    return (f"{trust.from_gpu}'s configs, whose winners ran on {trust.gpu_slug} within "
            f"{trust.worst_regret:.3f}x of its own at worst (median {trust.median_regret:.3f}x, "
            f"{trust.shapes} shapes, `tlab portability`, {trust.date})")
