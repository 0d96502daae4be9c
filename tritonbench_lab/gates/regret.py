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

from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import OK, Winner
from tritonbench_lab.data.winners import shape_results
from tritonbench_lab.measure.plan import build_request
from tritonbench_lab.measure.sweep import run_sweep
from tritonbench_lab.shapes import shape_sizes, shape_text
from tritonbench_lab.space import config_text
from tritonbench_lab.spec import dtype_name
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


def regret_of_file(layout: Layout, path: Path, rows: list[tuple[int, Winner]],
                   kernel_modules: tuple[str, ...] = ()) -> list[Regret]:
    """For each dtype in one configs file: held-out shapes tuned into the regret root of its
    GPU (layout.regret), and what lookup's rule loses on each."""

    slug, kernel = path.parent.name, path.stem
    found = []
    for dtype in dict.fromkeys(w.dtype for _, w in rows):
        tuned = [shape_sizes(w.shape) for _, w in rows if w.dtype == dtype]
        held = held_out_shapes(tuned)
        if not held:
            continue
        request = build_request(kernel, dtypes=[dtype],
                                shapes=",".join(shape_text(s) for s in held),
                                root=layout.regret(slug).root,
                                interpret=slug == "interpreter",
                                kernel_modules=kernel_modules)
        found += measure_regret(request, layout.configs)
    return found


def measure_regret(request, config_root: Path) -> list[Regret]:
    """Tune `request.shapes` (held-out shapes of one kernel and dtype) with `run_sweep`, then
    compare what lookup() picks from `config_root` with each fresh winner."""

    result = run_sweep(request)
    spec = request.spec
    (dtype,) = request.dtypes
    name = dtype_name(dtype)
    by_shape = {s.shape: s for s in shape_results(result.records) if s.dtype == name}
    out = []
    for shape in request.shapes:
        found = by_shape.get(str(shape))
        if found is None or found.winner is None:
            continue
        picked = config_text(spec.space.complete(lookup(
            spec.name, name, gpu=request.fingerprint.gpu_slug, directory=config_root,
            dims=spec.dims, **dict(shape.dims))))
        mine = found.configs.get(picked)
        timed = mine is not None and mine.status == OK
        out.append(Regret(spec.name, name, str(shape), picked,
                          mine.p50_ms if timed else None,
                          mine.status if mine else "not run",
                          found.winner.config, found.winner.p50_ms))
    return out
