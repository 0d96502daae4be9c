"""Where `--search prior` starts at a shape: what was fast at the shapes measured before.

Two lists, taken in turns (a config in both counts once):

- the winners of the other shapes of this kernel and dtype on this GPU, and of the kernels
  its spec names in `prior_from` (configs files as they stand), nearest shapes first: a new
  shape's winner is often a near shape's;
- a portfolio drawn from this GPU's results file: the PORTFOLIO configs that together come
  closest to the best at each of the other shapes, each shape weighted by its nearness
  (NEARNESS to the minus the distance in doublings, so a shape twice as large in one dim
  weighs a quarter). It holds what the winners cannot: the runner-up that is within a few
  per cent everywhere, the config that suits shapes between two tuned ones. Winners alone
  are few where most shapes agree: many shapes of a kernel often win with one config.

Replayed on committed rows, leaving one shape out at a time (replay.py), the portfolio brings
a prior search near the best more often than the winners alone for the tiled matmul kernels,
and as often for the row kernels. No torch, no triton.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from tritonbench_lab.data.records import OK, SKIPPED, parse_config_text
from tritonbench_lab.data.store import load_records, load_winners
from tritonbench_lab.data.winners import shape_results
from tritonbench_lab.search.strategies import PRIOR_STARTS
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.space import Config, config_text
from tritonbench_lab.tuned import nearest_first

PORTFOLIO = 8
NEARNESS = 4.0
# A config more than this many times the best at a shape (or failed, or never timed there)
# counts as this: one shape where a config fails must not outweigh the rest.
WORST_RATIO = 3.0

Times = Mapping[str, "float | None"]  # config text -> p50 ms (None: failed)


def standing_times(result) -> dict[str, float | None]:
    """A ShapeResult's Triton configs as the table a search sees: each config's standing
    p50 (None where its row failed); pruned configs are not part of the space."""
    return {text: (row.p50_ms if row.status == OK else None)
            for text, row in result.configs.items() if row.status != SKIPPED}


def nearness(shape: str, other: str) -> float:
    """NEARNESS ** -(sum over dims of |log2| of the size ratios); 0 across ranks."""
    here, there = shape_sizes(shape), shape_sizes(other)
    if len(here) != len(there):
        return 0.0
    return NEARNESS ** -sum(abs(math.log2(a / b)) for a, b in zip(here, there, strict=True))


def portfolio(tables: Sequence[tuple[str, Times]], shape: str,
              allowed: Collection[str] | None = None, size: int | None = None) -> list[str]:
    """Up to `size` (None: PORTFOLIO) config texts chosen one at a time, each the one that
    most lowers the weighted sum over `tables` ((shape, times) of the other shapes) of
    log(fastest chosen time there / best time there), capped at log(WORST_RATIO).
    `allowed`: the configs of this shape's space (None: any). Ties go to the config met
    first in the tables."""
    weights, columns = [], []  # per usable table: its weight, and config -> log ratio
    for other, times in tables:
        ok = [ms for ms in times.values() if ms is not None and ms > 0]
        weight = nearness(shape, other)
        if not ok or weight == 0:
            continue
        best, cap = min(ok), math.log(WORST_RATIO)
        weights.append(weight)
        columns.append({t: min(math.log(ms / best), cap) for t, ms in times.items()
                        if ms is not None and ms > 0 and (allowed is None or t in allowed)})
    # Per candidate, where it was timed: (table, log ratio). Order of first appearance.
    where: dict[str, list[tuple[int, float]]] = {}
    for i, column in enumerate(columns):
        for text, ratio in column.items():
            where.setdefault(text, []).append((i, ratio))
    now = [math.log(WORST_RATIO)] * len(columns)  # each table's log ratio so far
    chosen: list[str] = []
    while len(chosen) < (PORTFOLIO if size is None else size):
        gains = {text: sum(weights[i] * max(0.0, now[i] - r) for i, r in timed)
                 for text, timed in where.items() if text not in chosen}
        pick = max(gains, key=gains.get, default=None)
        if pick is None or gains[pick] <= 0:
            break  # nothing left that is faster anywhere
        chosen.append(pick)
        for i, r in where[pick]:
            now[i] = min(now[i], r)
    return chosen


def take_turns(*lists: Sequence[Config]) -> list[Config]:
    """One from each list in turn, repeats dropped: [a, b], [c, a, d] -> [a, c, b, d]."""
    out, seen = [], set()
    for turn in itertools.zip_longest(*lists):
        for config in turn:
            if config is not None and config_text(config) not in seen:
                seen.add(config_text(config))
                out.append(config)
    return out


def results_tables(results, dtype: str, shape: str) -> list[tuple[str, dict]]:
    """(shape, standing times) of each ShapeResult of `dtype` at another shape."""
    return [(r.shape, standing_times(r)) for r in results
            if r.dtype == dtype and r.shape != shape]


def left_out_prior(results: Sequence, result) -> list[Config]:
    """The prior of one ShapeResult drawn from the others of its kernel and dtype, as a sweep
    draws it at a new shape (winners nearest first, in turns with the portfolio of their
    tables, within `result`'s space): what a replay gives `--search prior` (replay.py)."""

    mine = [r for r in results if r.kernel == result.kernel]
    others = [r for r in mine if r.dtype == result.dtype and r.shape != result.shape
              and r.winner is not None]
    winners = [parse_config_text(r.winner.config)
               for r in nearest_first(others, result.shape, lambda r: r.shape)]
    chosen = [parse_config_text(t) for t in portfolio(
        results_tables(mine, result.dtype, result.shape), result.shape,
        standing_times(result).keys())]
    return take_turns(winners, chosen)


@dataclass(frozen=True)
class Prior:
    configs: tuple[Config, ...]  # winners and portfolio in turns
    winners: int  # of the PRIOR_STARTS the search starts from: winners of other shapes
    portfolio: int  # and configs of the portfolio only
    shapes: int  # other shapes of this dtype in the results file
    borrowed: tuple[str, ...] = ()  # other GPUs' slugs, when this GPU had nothing yet

    def sentence(self, kernel: str, dtype: str, shape: str) -> str:
        """What a sweep prints where a prior search opens a shape."""
        where = f"--search prior at {kernel} {dtype} {shape}"
        if not self.configs:
            return (f"{where}: nothing tuned on this GPU yet, so a local search from the "
                    "default config")
        whose = (f" (nothing tuned on this GPU yet: those of {', '.join(self.borrowed)})"
                 if self.borrowed else "")
        return (f"{where} starts from {self.winners} winner(s) of other shapes (configs "
                f"file) and {self.portfolio} config(s) of a portfolio drawn from {self.shapes} "
                f"shape(s) of the results file{whose}")


def prior_configs(request, results: Sequence, dtype: str, shape: str,
                  configs: Sequence[Config]) -> Prior:
    """A sweep's prior for (dtype, shape): the winners (configs files) and the portfolio
    (`results`: ShapeResults of this kernel's results file on this GPU) in turns, each config
    completed to the space as it is now (a winner tuned before a parameter joined the space
    gets its value of then), the portfolio drawn from `configs`, this shape's space.

    On a GPU with nothing of this kernel and dtype yet, from the other GPUs' files under the
    root instead (another GPU's committed rows, for a first sweep on this one): what is fast on
    one GPU of a generation is a better start than the default, and the search times every
    config it keeps on this one."""

    spec, slug, space, layout = (request.spec, request.fingerprint.gpu_slug, request.space,
                                 request.layout)
    found = winners_on(request, slug, dtype, shape)
    raw = results_tables([r for r in results if r.kernel == spec.name], dtype, shape)
    borrowed: list[str] = []
    if not found and not raw:
        for other in layout.gpu_slugs():
            theirs = winners_on(request, other, dtype, shape) if other != slug else []
            tables = results_tables(shape_results(load_records(
                layout.results_file(other, spec.name))), dtype, shape) if other != slug else []
            if theirs or tables:
                borrowed.append(other)
                found, raw = found + theirs, raw + tables
    winners = [space.complete(parse_config_text(w.config))
               for w in nearest_first(found, shape, lambda w: w.shape)]

    def complete(text: str) -> str:
        return config_text(space.complete(parse_config_text(text)))

    tables = [(other, {complete(t): ms for t, ms in times.items()}) for other, times in raw]
    by_text = {config_text(c): c for c in configs}
    chosen = [by_text[t] for t in portfolio(tables, shape, by_text.keys())]
    merged = take_turns(winners, chosen)
    # What PriorSearch starts from: the first PRIOR_STARTS of the prior in this shape's space.
    starts = [t for t in map(config_text, merged) if t in by_text][:PRIOR_STARTS]
    won = {config_text(w) for w in winners}
    return Prior(tuple(merged), sum(t in won for t in starts),
                 sum(t not in won for t in starts), len(tables), tuple(borrowed))


def winners_on(request, slug: str, dtype: str, shape: str) -> list:
    """The winners of one GPU's configs files for this kernel and dtype at other shapes, and
    at any shape of the kernels its spec names in `prior_from` (the same main loop)."""

    spec, layout = request.spec, request.layout
    found = [w for w in load_winners(layout.configs_file(slug, spec.name))
             if (w.kernel, w.dtype) == (spec.name, dtype) and w.shape != shape]
    for name in spec.prior_from:
        found += [w for w in load_winners(layout.configs_file(slug, name))
                  if (w.kernel, w.dtype) == (name, dtype)]
    return found
