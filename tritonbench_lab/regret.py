"""Regret of the nearest-shape rule: what `tuned.lookup` loses on shapes nobody tuned.

Between each pair of neighbouring tuned shapes lies a held-out shape (their geometric mean,
dimension by dimension: 724 between 512 and 1024). Each is tuned afresh over the whole space;
then the config `lookup` returns for it (tuned at a neighbour) is compared with the fresh
winner: regret = p50 of the looked-up config / p50 of the fresh winner - 1 (0 is perfect).
The held-out rows are real measurements and are kept, under results/<gpu>/regret/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.records import OK, TRITON, fastest, standing
from tritonbench_lab.space import config_text
from tritonbench_lab.tuned import lookup


def held_out_shapes(tuned: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The geometric mean of each pair of neighbouring tuned shapes (ordered by size)."""
    ordered = sorted(set(tuned), key=math.prod)
    middles = [tuple(round(math.sqrt(a * b)) for a, b in zip(s, t, strict=True))
               for s, t in zip(ordered, ordered[1:], strict=False)]
    return [m for m in dict.fromkeys(middles) if m not in ordered]


@dataclass(frozen=True)
class Regret:
    kernel: str
    dtype: str
    shape: str
    looked_up: str  # the config lookup() returns for this shape
    looked_up_ms: float | None  # None when that config failed or was pruned here
    looked_up_status: str
    winner: str
    winner_ms: float

    @property
    def regret(self) -> float | None:
        return None if self.looked_up_ms is None else self.looked_up_ms / self.winner_ms - 1


def measure_regret(request, config_root: Path) -> list[Regret]:
    """Tune `request.shapes` (held-out shapes of one kernel and dtype) with `run_sweep`, then
    compare what lookup() picks from `config_root` with each fresh winner."""
    from tritonbench_lab.spec import dtype_name
    from tritonbench_lab.sweep import run_sweep

    result = run_sweep(request)
    spec = request.spec
    (dtype,) = request.dtypes
    name = dtype_name(dtype)
    out = []
    for shape in request.shapes:
        rows = [r for r in standing(result.records) if r.shape == str(shape)
                and r.dtype == name and r.provider == TRITON]
        correct = [r for r in rows if r.status == OK]
        if not correct:
            continue
        best = fastest(correct)
        picked = config_text(spec.space.complete(lookup(
            spec.name, name, gpu=request.fingerprint.gpu_slug, directory=config_root,
            **dict(shape.dims))))
        mine = [r for r in rows if r.config == picked]
        ok = [r for r in mine if r.status == OK]
        out.append(Regret(spec.name, name, str(shape), picked,
                          ok[-1].p50_ms if ok else None,
                          ok[-1].status if ok else (mine[-1].status if mine else "not run"),
                          best.config, best.p50_ms))
    return out
