"""Search strategies: each proposes only configs of the space, never one twice nor one timed
already, keeps its budget and ends with []; local finds the optimum of synthetic grids (with
holes and failures); replay computes the loss. Pure Python: no GPU, no triton."""

from __future__ import annotations

import itertools
import math
import sys

import pytest

from tritonbench_lab.errors import TlabError
from tritonbench_lab.search.replay import replay, replay_results, summarize
from tritonbench_lab.search.strategies import (
    LOCAL_MIN_BATCH,
    PRIOR_STARTS,
    SEARCHES,
    Grid,
    SearchRequest,
    make_search,
    parse_search,
)
from tritonbench_lab.space import config_text
from tritonbench_lab.tuned import nearest_first

GRID = {"BLOCK_M": (16, 32, 64, 128), "BLOCK_N": (16, 32, 64, 128), "BLOCK_K": (32, 64),
        "GROUP_M": (1, 8), "num_warps": (2, 4, 8), "num_stages": (2, 3, 4)}
TARGET = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
          "num_stages": 3}
DEFAULT = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 1, "num_warps": 4,
           "num_stages": 2}


def grid(pruned=lambda c: False):
    names = list(GRID)
    configs = [dict(zip(names, v, strict=True)) for v in itertools.product(*GRID.values())]
    return [c for c in configs if not pruned(c)]


def separable(c):
    """Smooth, one minimum (1.0 at TARGET), each parameter adding its own log distance."""
    return 1.0 + sum(abs(math.log2(c[n] / TARGET[n])) for n in TARGET) / 10


def drive(name, configs, objective, budget=None, seed=0, default=None, measured=None):
    """Run a search as the sweep does, checking every proposal; (proposed texts, measured)."""
    search = make_search(name, SearchRequest(tuple(configs), default, budget, seed))
    measured = dict(measured or {})
    valid = {config_text(c) for c in configs}
    proposed = []
    for _ in range(len(configs) + 1):
        batch = search.propose(measured)
        if not batch:
            break
        for c in batch:
            text = config_text(c)
            assert text in valid, f"{name} proposed {text}, outside the space"
            assert text not in measured, f"{name} proposed {text} twice or timed already"
            measured[text] = objective(c)
            proposed.append(text)
    else:
        pytest.fail(f"{name} was still proposing after {len(configs) + 1} batches")
    assert search.propose(measured) == []
    return proposed, measured


def best_of(measured):
    return min(ms for ms in measured.values() if ms is not None)


# The default budgets: the share of the space each strategy times, at least 16.
SHARE = {"random": 1 / 4, "local": 1 / 3, "optuna": 1 / 3, "prior": 1 / 5}


@pytest.mark.parametrize("name", SEARCHES)
@pytest.mark.parametrize("budget", [None, 1, 30])
def test_every_strategy_proposes_valid_untimed_configs_within_its_budget(name, budget):
    if name == "optuna":
        pytest.importorskip("optuna")
    # Holes, as pruning makes them; small enough for optuna to be quick.
    configs = grid(lambda c: c["BLOCK_M"] * c["BLOCK_N"] > 64 * 128 or c["GROUP_M"] == 1
                   or c["num_stages"] == 4)
    earlier = {config_text(configs[5]): 1.5, config_text(configs[9]): None}  # a resumed run
    proposed, _ = drive(name, configs, separable, budget=budget, measured=earlier)
    if name == "exhaustive":
        assert len(proposed) == len(configs) - len(earlier)  # no budget, ever
        return
    # A budget counts what earlier runs timed too.
    if budget is None:
        budget = min(len(configs), max(16, math.ceil(len(configs) * SHARE[name])))
    if name in ("local", "prior"):  # they may end early, with nothing untimed around
        assert 0 < len(proposed) <= max(0, budget - len(earlier)) or budget <= len(earlier)
    else:
        assert len(proposed) == max(0, budget - len(earlier))


def test_exhaustive_proposes_everything_in_one_batch_in_space_order():
    configs = grid()
    search = make_search("exhaustive", SearchRequest(tuple(configs), None, 5, 0))
    batch = search.propose({})
    assert batch == configs  # the budget is ignored
    assert search.propose({}) == []  # even when no row came back


def test_a_lost_row_is_not_proposed_again():
    """A proposal the sweep never measured (a worker died) must not loop forever."""
    configs = grid()
    for name in ("random", "local"):
        search = make_search(name, SearchRequest(tuple(configs), DEFAULT, 40, 0))
        seen = []
        for _ in range(len(configs) + 1):
            batch = search.propose({})
            if not batch:
                break
            seen += [config_text(c) for c in batch]
        assert len(seen) == len(set(seen)) <= 40


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_local_finds_the_optimum_of_a_separable_objective_timing_a_fraction(seed):
    configs = grid()
    proposed, measured = drive("local", configs, separable, seed=seed, default=DEFAULT)
    assert best_of(measured) == min(map(separable, configs)) == 1.0
    assert proposed[0] == config_text(DEFAULT)  # the untuned config is the first start
    assert len(proposed) <= math.ceil(len(configs) / 3)


def test_local_steps_over_holes_and_failures():
    configs = grid(lambda c: c["BLOCK_N"] == 64 and c["num_warps"] != 8)  # a pruned band
    texts = [config_text(c) for c in configs]
    broken = {t for i, t in enumerate(texts) if i % 7 == 3 and t != config_text(TARGET)}

    def objective(c):
        return None if config_text(c) in broken else separable(c)

    for seed in range(3):
        _, measured = drive("local", configs, objective, seed=seed, default=DEFAULT)
        assert best_of(measured) == 1.0


def test_local_starts_without_a_default_and_when_every_start_fails():
    configs = grid()
    failing = {config_text(c) for c in configs if c["BLOCK_M"] == 16}

    def objective(c):
        return None if config_text(c) in failing else separable(c)

    # Starts drawn only where everything fails: the search must draw more, not give up.
    _, measured = drive("local", configs, objective, default=None)
    assert best_of(measured) == 1.0


def test_grid_moves_step_over_holes_and_include_swaps():
    # BLOCK_M=32 pruned only where BLOCK_N=64: a hole the walk must step over.
    g = Grid(grid(lambda c: c["BLOCK_M"] == 32 and c["BLOCK_N"] == 64))
    start = config_text({**DEFAULT, "BLOCK_M": 16, "BLOCK_N": 64})
    ones = set(g.one_moves(start))
    assert config_text({**DEFAULT, "BLOCK_M": 64, "BLOCK_N": 64}) in ones  # over the hole
    assert config_text({**DEFAULT, "BLOCK_M": 16, "BLOCK_N": 32}) in ones
    assert len(ones) == len(g.one_moves(start)) == 8  # 1 + 2 + 1 + 1 + 2 + 1: no edge moves
    twos = g.two_moves(start)
    assert config_text({**DEFAULT, "BLOCK_M": 64, "BLOCK_N": 16}) in twos  # swapped
    assert config_text({**DEFAULT, "BLOCK_N": 128, "num_warps": 8, "BLOCK_M": 16}) in twos
    assert start not in twos and not ones & set(twos)


def test_local_tries_two_parameter_moves_at_a_local_optimum_then_the_runner_up():
    configs = grid()
    g = Grid(configs)
    best, second = config_text(DEFAULT), config_text({**DEFAULT, "num_stages": 4})
    measured = {t: 2.0 for t in g.one_moves(best)} | {best: 1.0, second: 1.5}
    search = make_search("local", SearchRequest(tuple(configs), DEFAULT, 500, 0))
    batch = [config_text(c) for c in search.propose(measured)]
    assert batch == [t for t in g.two_moves(best) if t not in measured]
    measured |= dict.fromkeys(batch, 3.0)  # nothing better around the best
    batch = [config_text(c) for c in search.propose(measured)]
    ones = [t for t in g.one_moves(second) if t not in measured]
    assert 0 < len(ones) < LOCAL_MIN_BATCH
    # The runner-up's untimed single moves, filled up with its pairs to a pool's worth.
    assert batch[:len(ones)] == ones
    assert len(batch) == LOCAL_MIN_BATCH
    assert set(batch[len(ones):]) <= set(g.two_moves(second)) - set(measured)


def test_random_is_reproducible_by_seed_and_takes_a_quarter_by_default():
    configs = grid()
    first, _ = drive("random", configs, separable, seed=3)
    again, _ = drive("random", configs, separable, seed=3)
    other, _ = drive("random", configs, separable, seed=4)
    assert first == again != other
    assert len(first) == math.ceil(len(configs) / 4)


def test_optuna_finds_a_near_optimum_and_is_reproducible():
    pytest.importorskip("optuna")
    configs = grid(lambda c: c["BLOCK_M"] * c["BLOCK_N"] > 64 * 128)
    first, measured = drive("optuna", configs, separable, budget=32, default=DEFAULT)
    again, _ = drive("optuna", configs, separable, budget=32, default=DEFAULT)
    assert first == again and len(first) == 32
    assert first[0] == config_text(DEFAULT)
    assert best_of(measured) <= 1.1  # the optimum or one step from it


def test_optuna_learns_that_failed_configs_are_worse_than_any_that_ran():
    pytest.importorskip("optuna")
    configs = grid()

    def objective(c):
        return None if c["num_warps"] == 8 else separable(c)

    search = make_search("optuna", SearchRequest(tuple(configs), DEFAULT, 40, 0))
    measured: dict = {}
    while batch := search.propose(measured):
        measured |= {config_text(c): objective(c) for c in batch}
    times = [t.value for t in search.study.trials if t.value is not None]
    told_failed = [t.value for t in search.study.trials if t.value is not None
                   and t.params["num_warps"] == 2]  # position 2: num_warps=8
    assert told_failed and min(told_failed) > max(v for v in times if v not in told_failed)


def test_parse_search():
    assert parse_search("local") == ("local", None)
    assert parse_search(" Random:64 ") == ("random", 64)
    assert parse_search("optuna:100") == ("optuna", 100)
    for bad in ("genetic", "local:0", "local:x", "", "local:", "local:-3", "exhaustive:10"):
        with pytest.raises(TlabError, match="accepted: exhaustive, random, local, optuna"):
            parse_search(bad)


def test_make_search_refuses_unknown_names():
    with pytest.raises(TlabError, match="accepted are exhaustive, random, local, optuna"):
        make_search("annealing", SearchRequest((), None, None, 0))


def test_optuna_without_optuna_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna now raises ImportError
    with pytest.raises(TlabError, match=r"pip install 'tritonbench-lab\[optuna\]'"):
        make_search("optuna", SearchRequest(tuple(grid()), None, None, 0))


def test_replay_measures_the_loss_against_the_whole_table():
    configs = [{"X": x} for x in range(1, 9)]
    times = {config_text(c): 2.0 + abs(c["X"] - 6) / 10 for c in configs}
    times["X=6"] = None  # the smooth optimum failed: the best that ran is X=5 or X=7
    everything = replay("exhaustive", times, configs, shape="s")
    assert (everything.timed, everything.space, everything.best_ms) == (8, 8, 2.1)
    assert everything.loss == 0.0
    sample = replay("random", times, configs, budget=2, seed=1)
    picked = [t for t in times if times[t] is not None]
    assert sample.timed == 2 and sample.found_ms in [times[t] for t in picked]
    assert sample.loss == pytest.approx(sample.found_ms / 2.1 - 1)
    walk = replay("local", times, configs, default={"X": 1})
    assert walk.found_ms == 2.1 and walk.loss == pytest.approx(0.0)


def test_replay_results_replays_every_shape_of_a_results_file(tmp_path):
    from helpers.fixture_results import SHAPES, write_softmax_fixture

    folder = write_softmax_fixture(tmp_path)  # 3 configs a shape; the fastest one is wrong
    replays = replay_results([folder / "softmax.csv"], [("exhaustive", None), ("local", 2)],
                             seeds=(0, 1), defaults={"softmax": {"ROWS": 1, "num_warps": 4}})
    everything = [r for r in replays if r.strategy == "exhaustive"]
    assert [r.shape for r in everything] == [f"softmax fp32 {s}" for s in SHAPES]
    assert [r.best_ms for r in everything] == [1.0, 2.0, 3.0]  # the wrong 0.5 is no best
    assert all(r.space == 3 and r.loss == 0 for r in everything)
    local = [r for r in replays if r.strategy == "local"]
    assert len(local) == 6 and all(r.timed == 2 for r in local)
    table = summarize(replays)
    assert table["exhaustive"]["worst_loss"] == 0 and table["exhaustive"]["timed"] == 1
    assert table["local:2"]["runs"] == 6
    assert table["local:2"]["timed"] == pytest.approx(2 / 3)


def test_prior_starts_from_what_won_elsewhere_nearest_first():
    configs = grid()
    outside = {**TARGET, "BLOCK_K": 256}  # not a point of this space: never proposed
    prior = [outside, TARGET, TARGET, *configs[:PRIOR_STARTS + 3]]
    search = make_search("prior", SearchRequest(tuple(configs), DEFAULT, None, 0, tuple(prior)))
    first = [config_text(c) for c in search.propose({})]
    expected = list(dict.fromkeys(config_text(c) for c in prior[1:]))[:PRIOR_STARTS]
    assert first[:PRIOR_STARTS] == expected  # in the prior's order, repeats dropped
    assert first[PRIOR_STARTS] == config_text(DEFAULT) and len(first) == PRIOR_STARTS + 2


def test_capped_prior_search_times_its_whole_cap_in_one_batch():
    """prior:12 with a long prior: its starts, the default and a random config are the 12 it
    may time, proposed at once (each batch is a round trip of compiling and timing), and then
    it proposes nothing."""
    configs = grid()
    prior = configs[5:5 + 2 * PRIOR_STARTS]
    search = make_search("prior", SearchRequest(tuple(configs), DEFAULT, 12, 0, tuple(prior)))
    first = search.propose({})
    assert len(first) == 12
    assert search.propose({config_text(c): separable(c) for c in first}) == []


def test_prior_finds_a_far_optimum_on_a_budget_that_local_does_not():
    """The optimum sits far from the default, one move from a config that won elsewhere:
    six configs from the prior reach it, six from the default and random starts do not."""
    configs = grid()
    near = {**TARGET, "BLOCK_M": 32}
    _, measured = drive_prior(configs, separable, prior=(near,), budget=6)
    assert best_of(measured) == 1.0
    _, walked = drive("local", configs, separable, budget=6, default=DEFAULT, seed=0)
    assert best_of(walked) > 1.0


def drive_prior(configs, objective, prior, budget):
    search = make_search("prior", SearchRequest(tuple(configs), DEFAULT, budget, 0, tuple(prior)))
    measured = {}
    while batch := search.propose(measured):
        for c in batch:
            assert config_text(c) not in measured
            measured[config_text(c)] = objective(c)
    assert len(measured) <= budget
    return list(measured), measured


def test_nearest_first_orders_shapes_by_log_distance():
    shapes = ["8192x8192x8192", "512x512x512", "4096x4096x1024", "2048x2048x2048"]
    # distances 3, 9, 2 and 3 (ties keep their order)
    assert nearest_first(shapes, "4096x4096x4096", str) == [
        "4096x4096x1024", "8192x8192x8192", "2048x2048x2048", "512x512x512"]


def test_replayed_prior_leaves_the_shape_itself_out(tmp_path):
    """Each shape's prior is the other shapes' winners, nearest first, never its own."""
    from helpers.fixture_results import record

    from tritonbench_lab.data.store import append_rows

    shapes = ["64x1024", "64x4096", "64x16384"]
    configs = ["ROWS=1 num_warps=4", "ROWS=2 num_warps=4", "ROWS=4 num_warps=4"]
    # configs[i] wins at shapes[i] (1.0 ms), every other config takes 2.0 ms there
    rows = [record("triton", c, shape, 1.0 if i == j else 2.0)
            for i, shape in enumerate(shapes) for j, c in enumerate(configs)]
    append_rows(tmp_path / "softmax.csv", rows)
    replays = replay_results([tmp_path / "softmax.csv"], [("prior", 1)],
                             defaults={"softmax": {"ROWS": 8, "num_warps": 8}})
    assert len(replays) == 3
    assert all(r.timed == 1 and r.found_ms == 2.0 and r.best_ms == 1.0 for r in replays)
