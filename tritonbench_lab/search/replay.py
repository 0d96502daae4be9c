"""Replaying search strategies against times measured before: how close to the exhaustive
best a strategy gets, timing how much of the space. Replayed times are single noisy
measurements (each config's standing p50), so this is a proxy: a loss under ~1% is within
the noise, not a miss. No torch, no triton.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.data.store import load_records
from tritonbench_lab.data.winners import shape_results
from tritonbench_lab.search.prior import left_out_prior, standing_times
from tritonbench_lab.search.strategies import SearchRequest, make_search
from tritonbench_lab.space import Config, config_text


@dataclass(frozen=True)
class Replay:
    strategy: str
    shape: str
    timed: int  # configs the strategy had timed
    space: int  # configs in the space
    best_ms: float  # the fastest time in the table (what exhaustive finds)
    found_ms: float  # the fastest time among the configs the strategy timed (inf: none ran)
    budget: int | None = None  # as asked for (None: the strategy's default)
    batches: int = 0  # proposals it made: each a round trip of compiling and timing

    @property
    def loss(self) -> float:
        """How much slower the strategy's pick is than the exhaustive best: 0.03 = 3%."""
        return self.found_ms / self.best_ms - 1


def replay(name: str, times: Mapping[str, float | None], configs: Sequence[Config], *,
           budget: int | None = None, seed: int = 0, default: Config | None = None,
           shape: str = "", prior: Sequence[Config] = ()) -> Replay:
    """Run strategy `name` as the sweep would, answering each proposal from `times`
    (config text -> p50 ms, None: failed); every config of `configs` must be in `times`."""
    search = make_search(name, SearchRequest(tuple(configs), default, budget, seed,
                                             tuple(prior)))
    texts = {config_text(c) for c in configs}
    measured: dict[str, float | None] = {}
    batches = 0
    for _ in range(len(configs) + 1):
        batch = search.propose(measured)
        if not batch:
            break
        batches += 1
        for config in batch:
            text = config_text(config)
            if text not in texts or text in measured:
                raise ValueError(f"{name} proposed {text!r}, outside the space or timed")
            measured[text] = times[text]
    ok = [times[t] for t in texts if times[t] is not None]
    found = [ms for ms in measured.values() if ms is not None]
    return Replay(name, shape, len(measured), len(configs), min(ok, default=math.nan),
                  min(found, default=math.inf), budget, batches)


def replay_results(paths: Iterable[Path], searches: Iterable[tuple[str, int | None]], *,
                   seeds: Sequence[int] = (0,),
                   defaults: Mapping[str, Config] | None = None) -> list[Replay]:
    """Replay each (strategy, budget) over every shape of the results files, once per seed
    (exhaustive once); `defaults`: kernel name -> its untuned config (space.default)."""

    searches, out = list(searches), []
    results = [r for path in paths for r in shape_results(load_records(Path(path)))]
    for result in results:
        table = standing_times(result)
        if not any(ms is not None for ms in table.values()):
            continue
        configs = [parse_config_text(t) for t in table]
        # Rows may predate a parameter of the default (matmul's TMA): it is left out then.
        default = (defaults or {}).get(result.kernel, {})
        default = {n: default[n] for n in configs[0] if n in default}
        label = f"{result.kernel} {result.dtype} {result.shape}"
        prior = left_out_prior(results, result)  # leave one out, as a sweep draws it
        for name, budget in searches:
            for seed in seeds if name != "exhaustive" else seeds[:1]:
                out.append(replay(name, table, configs, budget=budget, seed=seed,
                                  default=default, shape=label, prior=prior))
    return out


def summarize(replays: Iterable[Replay]) -> dict[str, dict[str, float]]:
    """Per search as typed ('local', 'random:64'): runs, median and worst loss, the share
    of runs within 2% of the best, the mean fraction of the space timed and the mean
    number of batches (a sweep waits on the compiles of each before it times it)."""
    groups: dict[str, list[Replay]] = {}
    for r in replays:
        groups.setdefault(r.strategy + (f":{r.budget}" if r.budget else ""), []).append(r)
    return {key: {"runs": len(rs), "median_loss": statistics.median(r.loss for r in rs),
                  "worst_loss": max(r.loss for r in rs),
                  "within_2pct": sum(r.loss <= 0.02 for r in rs) / len(rs),
                  "timed": statistics.fmean(r.timed / r.space for r in rs),
                  "batches": statistics.fmean(r.batches for r in rs)}
            for key, rs in groups.items()}
