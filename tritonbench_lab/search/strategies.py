"""Search strategies: which configs of a shape's space to time, when timing all is too dear.

A sweep times every config of the (pruned) space by default. A matmul space of a few hundred
configs costs minutes per shape, mostly on configs far from the winner: tile spaces are
smooth enough that the fast configs sit together. A strategy is asked for the next batch
(compiled in parallel, then timed one by one) and told everything measured so far, so one
interface serves one that needs no feedback (random), one that walks the grid (local) and
one that fits a model (optuna). `measured` includes rows of an earlier run, so a resumed
sweep goes on where it stopped, and a budget counts every config timed for the shape.

Two guarantees make the sweep's loop safe whatever the strategy: a config is proposed at
most once (each strategy remembers what it proposed, in case a row never comes back), and
only configs of the request are proposed. So `len(configs) + 1` calls always end with [].

How well each does on times measured before: replay.py. No torch, no triton.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import Config, config_text

SEARCHES = ("exhaustive", "random", "local", "optuna", "prior")

# The most configs in one batch of random and optuna: enough to keep the compile pool busy,
# few enough that the sweep records progress (and optuna learns) between batches.
RANDOM_BATCH = 64
OPTUNA_BATCH = 8
# Random starts of the local search beside the default: one start can sit in a poor basin
# (a too-small default tile), three more cost little next to the neighbourhoods walked.
LOCAL_STARTS = 3
# Configs of the prior (winners of other shapes and a portfolio, prior.py) the prior search
# starts from. With the default and one random start, `prior:12` then times its whole cap
# in its first batch: one round trip of compiling and timing a shape instead of two (a batch
# of the two configs left). Replayed on matmul rows (replay.py), 10 starts came near the best
# a little more often than 8, in fewer batches a shape; the other kernels' runs came out the
# same.
PRIOR_STARTS = 10
# The fewest configs a local search's batch holds while the best has them to give: its
# untimed single moves, filled up with its pairs of moves. A sweep compiles each batch in
# its pool before timing it, so a batch of two (a best with few untimed neighbours left)
# leaves the pool idle for a round trip: a matmul batch of one to three configs costs about
# a second of compiling. Replayed, filling halved the batches of prior and kept it as close
# to the best.
LOCAL_MIN_BATCH = 16
# The optimiser's objective for a config that failed: worse than any time, so that TPE
# learns its region is bad (a FAIL state would be ignored and the region sampled again).
FAILED = math.inf


@dataclass(frozen=True)
class SearchRequest:
    configs: tuple[Config, ...]  # every config left after pruning, in space order
    default: Config | None  # the untuned config, when it is among configs: a good start
    budget: int | None  # most configs to time; None: the strategy's own default
    seed: int
    # Configs that won at other shapes of this kernel and dtype on this GPU, nearest shapes
    # first (the sweep reads them from the configs file; `prior` starts from them).
    prior: tuple[Config, ...] = ()


class Search(Protocol):
    name: str

    def propose(self, measured: Mapping[str, float | None]) -> list[Config]:
        """The next batch to time; `measured` maps config text -> p50 ms (None: failed) for
        every config of this shape timed so far, earlier runs included. [] when done."""


def parse_search(text: str) -> tuple[str, int | None]:
    """`--search`: 'local', 'random:64' ... -> (name, budget or None)."""
    name, sep, count = text.strip().lower().partition(":")
    accepted = (f"accepted: {', '.join(SEARCHES)}; all but exhaustive optionally with ':N', "
                "N the most configs to time per shape, at least 1 (e.g. local:64)")
    bad_count = sep and (not count.isdigit() or int(count) < 1 or name == "exhaustive")
    if name not in SEARCHES or bad_count:
        raise TlabError(f"--search {text!r}: {accepted}")
    return name, int(count) if sep else None


def make_search(name: str, request: SearchRequest) -> Search:
    makers = {"exhaustive": Exhaustive, "random": RandomSearch, "local": LocalSearch,
              "optuna": OptunaSearch, "prior": PriorSearch}
    if name not in makers:
        raise TlabError(f"unknown search {name!r}: accepted are {', '.join(SEARCHES)}")
    return makers[name](request)


def default_budget(size: int, fraction: float) -> int:
    """`fraction` of a space of `size` configs, at least 16 (small spaces are cheap and a
    search needs a few points to go anywhere), at most all of it."""
    return min(size, max(16, math.ceil(size * fraction)))


class _Strategy:
    """What every strategy shares: the configs by text, the budget, what was proposed."""

    name = ""
    fraction = 1.0  # of the space, the default budget

    def __init__(self, request: SearchRequest) -> None:
        self.configs = list(request.configs)
        self.texts = [config_text(c) for c in self.configs]
        self.by_text = dict(zip(self.texts, self.configs, strict=True))
        self.default = request.default if request.default in self.configs else None
        self.budget = (default_budget(len(self.configs), self.fraction)
                       if request.budget is None else request.budget)
        self.seed = request.seed
        self.proposed: set[str] = set()

    def used(self, measured: Mapping[str, float | None]) -> set[str]:
        """Configs of this space timed or handed out already: never proposed (again)."""
        return self.proposed | (measured.keys() & self.by_text.keys())

    def left(self, measured: Mapping[str, float | None]) -> int:
        return max(0, self.budget - len(self.used(measured)))

    def hand_out(self, texts: Iterable[str], measured: Mapping[str, float | None],
                 most: int) -> list[Config]:
        """Up to `most` of `texts` (in order) not used yet, remembered as proposed."""
        used, batch = self.used(measured), []
        for text in texts:
            if len(batch) >= most:
                break
            if text not in used:
                used.add(text)
                batch.append(text)
        self.proposed.update(batch)
        return [self.by_text[t] for t in batch]

    def best(self, measured: Mapping[str, float | None]) -> list[str]:
        """Texts of this space's configs that ran, fastest first (ties in space order)."""
        return sorted((t for t in self.texts if measured.get(t) is not None), key=measured.get)


class Exhaustive(_Strategy):
    name = "exhaustive"

    def propose(self, measured: Mapping[str, float | None]) -> list[Config]:
        return self.hand_out(self.texts, measured, len(self.texts))


class RandomSearch(_Strategy):
    """A seeded sample: the baseline any smarter strategy must beat at the same budget."""

    name = "random"
    fraction = 0.25

    def __init__(self, request: SearchRequest) -> None:
        super().__init__(request)
        # One fixed order per seed: a resumed run draws the same sample, not a second one.
        self.order = random.Random(self.seed).sample(self.texts, len(self.texts))

    def propose(self, measured: Mapping[str, float | None]) -> list[Config]:
        return self.hand_out(self.order, measured, min(RANDOM_BATCH, self.left(measured)))


class Grid:
    """The configs as points of a grid: each parameter's values sorted, each config the
    tuple of its value positions. Pruning leaves holes, which moves step over."""

    def __init__(self, configs: Sequence[Config]) -> None:
        self.names = list(configs[0]) if configs else []
        self.values = {n: sorted({c[n] for c in configs}) for n in self.names}
        self.point = {config_text(c): self.position(c) for c in configs}
        self.text = {p: t for t, p in self.point.items()}

    def position(self, config: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(self.values[n].index(config[n]) for n in self.names)

    def one_moves(self, text: str) -> list[str]:
        """Configs differing from `text` in one parameter: its nearest present value below
        and above (a pruned value is stepped over, or a hole would end the walk there)."""
        point, out = self.point[text], []
        for axis, name in enumerate(self.names):
            for step in (-1, 1):
                at = point[axis] + step
                while 0 <= at < len(self.values[name]):
                    moved = point[:axis] + (at,) + point[axis + 1:]
                    if moved in self.text:
                        out.append(self.text[moved])
                        break
                    at += step
        return out

    def two_moves(self, text: str) -> list[str]:
        """Configs one step away in each of two parameters, and those with two parameters
        of one value list swapped (BLOCK_M <-> BLOCK_N). Tile parameters interact: a larger
        BLOCK_N may only pay with more warps, a tall tile may beat the wide one; single
        moves cannot cross such ridges."""
        point, out = self.point[text], []
        for a, b in itertools.combinations(range(len(self.names)), 2):
            moves = [(point[a] + da, point[b] + db) for da in (-1, 1) for db in (-1, 1)]
            values_a, values_b = self.values[self.names[a]], self.values[self.names[b]]
            now_a, now_b = values_a[point[a]], values_b[point[b]]
            if now_b in values_a and now_a in values_b:
                moves.append((values_a.index(now_b), values_b.index(now_a)))
            for at_a, at_b in moves:
                moved = list(point)
                moved[a], moved[b] = at_a, at_b
                if tuple(moved) != point and tuple(moved) in self.text:
                    out.append(self.text[tuple(moved)])
        return out


class LocalSearch(_Strategy):
    """Best-first descent on the grid of configs, from the default and a few random starts.

    Each batch is the untimed neighbourhood (one_moves, else two_moves) of the fastest
    config that still has one: a greedy descent while the best improves, then, at a local
    optimum, on from the runner-ups, which on tile spaces often sit on another ridge (the
    other kernel variant, the transposed tile). A batch of fewer than LOCAL_MIN_BATCH single
    moves is filled up with the best's pairs of moves: the sweep compiles a batch in
    parallel, and waits for it. Stopping at the first local optimum too often misses the best
    in replays (replay.py), hence the runner-ups. The search ends when the budget is spent or
    no timed config has an untimed neighbour. The default budget is a third of the space (at
    least 16): in replays of tile spaces that nearly always reaches the exhaustive best, or
    comes within noise of it.
    """

    name = "local"
    fraction = 1 / 3

    def __init__(self, request: SearchRequest) -> None:
        super().__init__(request)
        self.grid = Grid(self.configs)
        self.order = random.Random(self.seed).sample(self.texts, len(self.texts))
        self.spent: set[str] = set()  # configs whose neighbourhood is all timed: skipped

    def starts(self) -> list[str]:
        # One start more when there is no default, so that the first batch is never empty.
        first = [config_text(self.default)] if self.default else []
        return first + [t for t in self.order if t not in first][:LOCAL_STARTS + 1 - len(first)]

    def propose(self, measured: Mapping[str, float | None]) -> list[Config]:
        left = self.left(measured)
        if not left:
            return []
        if not self.used(measured):  # a resumed search walks on from what was timed
            return self.hand_out(self.starts(), measured, left)
        ranked = self.best(measured)
        if not ranked:  # every start failed: draw more until one runs
            return self.hand_out(self.order, measured, min(LOCAL_STARTS + 1, left))
        fill = min(LOCAL_MIN_BATCH, left)
        for text in ranked:
            if text in self.spent:
                continue
            batch = self.hand_out(self.grid.one_moves(text), measured, left)
            if not batch:  # a local optimum of single moves: its pairs of moves
                batch = self.hand_out(self.grid.two_moves(text), measured, left)
            elif len(batch) < fill:  # few left: fill up with its pairs
                batch += self.hand_out(self.grid.two_moves(text), measured, fill - len(batch))
            if batch:
                return batch
            self.spent.add(text)
        return []


class PriorSearch(LocalSearch):
    """The local search, started from what was fast elsewhere: up to PRIOR_STARTS configs of
    the prior the sweep hands it (prior.py: the nearest tuned shapes' winners in turns with
    a portfolio of configs close to the best across the results' shapes), the default and
    one random config, then best-first descent from the fastest of them. A new shape's
    winner is usually fast at a shape near it, or a few moves from such a config. Replayed
    (leave one shape out), it comes near the best on a fifth of the space nearly as often as
    the local search does on a third, and on a dozen configs the prior with its portfolio
    does better than the winners alone. On a GPU with nothing tuned yet the prior comes from
    the other GPUs' files under the root; with none anywhere it is the local search on a
    fifth."""

    name = "prior"
    fraction = 1 / 5

    def __init__(self, request: SearchRequest) -> None:
        super().__init__(request)
        texts = [config_text(c) for c in request.prior]
        self.prior = [t for t in dict.fromkeys(texts) if t in self.by_text][:PRIOR_STARTS]

    def starts(self) -> list[str]:
        first = self.prior + ([config_text(self.default)] if self.default else [])
        first = list(dict.fromkeys(first))
        return first + [t for t in self.order if t not in first][:1]


class OptunaSearch(_Strategy):
    """Optuna's TPE sampler, asked and told in batches.

    Each parameter is an integer over the positions of its sorted values, not a categorical:
    TPE then knows that 128 lies between 64 and 256 (in replays it came near the best more
    often that way than with categoricals). A point pruning removed, or one timed already,
    is replaced by the nearest untimed config on the grid, recorded as its own trial once
    timed; the sampled trial is failed, TPE learns no time for it.
    """

    name = "optuna"
    fraction = 1 / 3

    def __init__(self, request: SearchRequest) -> None:
        super().__init__(request)
        try:
            # late: an optional dependency (tritonbench-lab[ray] / [optuna])
            import optuna
        except ImportError:
            raise TlabError("--search optuna needs Optuna: pip install "
                            "'tritonbench-lab[optuna]'") from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # a line per trial otherwise
        self.optuna = optuna
        self.grid = Grid(self.configs)
        self.space = {n: optuna.distributions.IntDistribution(0, len(v) - 1)
                      for n, v in self.grid.values.items()}
        sampler = optuna.samplers.TPESampler(seed=self.seed, multivariate=True,
                                             constant_liar=True, n_startup_trials=OPTUNA_BATCH)
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        if self.default:
            self.study.enqueue_trial(self.params(config_text(self.default)))
        self.asked: dict[str, object] = {}  # config text -> its open trial
        self.told: set[str] = set()

    def params(self, text: str) -> dict[str, int]:
        return dict(zip(self.grid.names, self.grid.point[text], strict=True))

    def learn(self, measured: Mapping[str, float | None]) -> None:
        """Tell the study every config measured since the last batch (earlier runs too)."""
        # In space order, not set order: the study's history, hence its samples, must not
        # depend on string hashing, which differs between processes.
        for text in [t for t in self.texts if t in measured and t not in self.told]:
            value = FAILED if measured[text] is None else measured[text]
            if text in self.asked:
                self.study.tell(self.asked.pop(text), value)
            else:
                self.study.add_trial(self.optuna.trial.create_trial(
                    params=self.params(text), distributions=self.space, value=value))
            self.told.add(text)

    def nearest(self, point: tuple[int, ...], used: set[str]) -> str | None:
        free = [t for t in self.texts if t not in used]
        return min(free, key=lambda t: sum(abs(a - b) for a, b in zip(
            self.grid.point[t], point, strict=True)), default=None)

    def propose(self, measured: Mapping[str, float | None]) -> list[Config]:
        self.learn(measured)
        batch: list[Config] = []
        for _ in range(min(OPTUNA_BATCH, self.left(measured))):
            trial = self.study.ask(self.space)
            point = tuple(trial.params[n] for n in self.grid.names)
            text = self.nearest(point, self.used(measured))
            if text is None:
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
                break
            if self.grid.point[text] == point:
                self.asked[text] = trial
            else:
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
            batch += self.hand_out([text], measured, 1)
        return batch


# --- replay: a strategy against times measured before ---------------------------------
