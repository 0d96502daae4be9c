"""Where `--search prior` starts (prior.py): the portfolio's greedy choice on hand-made tables
(weights by nearness, failures, the space's own configs), the winners and the portfolio in
turns, a sweep's prior read from its configs and results files, and a sweep that starts from
it. No GPU."""

from __future__ import annotations

import dataclasses

import pytest
from helpers.fixture_results import record

from tritonbench_lab.data.records import COMPILE_ERROR, SKIPPED
from tritonbench_lab.search import prior
from tritonbench_lab.search.prior import nearness, portfolio, take_turns


def test_the_portfolio_starts_with_the_config_closest_to_the_best_everywhere():
    # a wins at A, c at B; b is 5% off the best at both: b first, then a (met first) ...
    tables = [("64x1024", {"a": 1.0, "b": 1.05, "c": 2.0}),
              ("64x4096", {"a": 2.0, "b": 1.05, "c": 1.0})]
    assert portfolio(tables, "64x2048", size=1) == ["b"]
    assert portfolio(tables, "64x2048") == ["b", "a", "c"]  # then nothing gains: it stops


def test_a_near_shape_weighs_more_than_a_far_one():
    tables = [("64x4096", {"near": 1.0, "far": 1.5}),  # one doubling away: weight 1/4
              ("64x65536", {"near": 2.0, "far": 1.0})]  # five: 4^-5
    assert portfolio(tables, "64x2048", size=1) == ["near"]
    assert nearness("64x2048", "64x4096") == pytest.approx(1 / prior.NEARNESS)
    assert nearness("64x2048", "2x64x2048") == 0  # another rank: never compared
    # ... though a far shape still counts for something where the near ones agree
    tables = [("64x4096", {"a": 1.0, "b": 1.0}), ("64x65536", {"a": 2.0, "b": 1.0})]
    assert portfolio(tables, "64x2048", size=1) == ["b"]


def test_failed_and_unknown_configs_are_never_chosen_and_the_space_bounds_the_choice():
    tables = [("64x1024", {"fails": None, "x": 1.0, "y": 1.2, "elsewhere": 0.5})]
    # x first (2x the best there, which is outside this space); y is then no gain
    assert portfolio(tables, "64x1024", allowed={"fails", "x", "y"}) == ["x"]
    assert portfolio(tables, "64x1024", allowed={"fails", "y"}) == ["y"]
    assert portfolio(tables, "64x1024", allowed=set()) == []
    assert portfolio([("64x1024", {"fails": None})], "64x1024") == []
    assert portfolio(tables, "64x1024", size=0) == []


def test_a_config_slower_than_the_worst_ratio_gains_nothing():
    far_off = prior.WORST_RATIO * 1.01
    assert portfolio([("64x1024", {"best": 1.0, "slow": far_off})], "64x1024") == ["best"]


def test_the_module_size_is_read_at_each_call(monkeypatch):
    # each config the best at one of three shapes as near as each other: ties, met first
    tables = [(shape, {c: 1.0 if c == best else 2.0 for c in "abc"})
              for shape, best in (("64x1024", "a"), ("64x4096", "b"), ("32x2048", "c"))]
    assert portfolio(tables, "64x2048") == ["a", "b", "c"]
    monkeypatch.setattr(prior, "PORTFOLIO", 2)
    assert portfolio(tables, "64x2048") == ["a", "b"]
    monkeypatch.setattr(prior, "PORTFOLIO", 0)  # winners only (lab/search_quality.py)
    assert portfolio(tables, "64x2048") == []


def test_winners_and_portfolio_take_turns_without_repeats():
    a, b, c, d = ({"X": i} for i in range(4))
    assert take_turns([a, b], [c, a, d]) == [a, c, b, d]
    assert take_turns([], [b, b]) == [b]
    assert take_turns([a], []) == [a]


def request_at(tmp_path, spec, configs_rows=()):
    from types import SimpleNamespace

    from tritonbench_lab.data.layout import Layout
    from tritonbench_lab.data.records import Winner
    from tritonbench_lab.data.store import write_table

    layout = Layout(tmp_path)
    if configs_rows:
        write_table(layout.configs_file("gpu", spec.name), list(configs_rows), Winner)
    return SimpleNamespace(configs_file=layout.configs_file("gpu", spec.name), spec=spec,
                           space=spec.space, layout=layout,
                           fingerprint=SimpleNamespace(gpu_slug="gpu"))


def test_a_sweep_reads_its_prior_from_the_configs_and_results_files(tmp_path):
    from helpers.fixture_results import write_softmax_fixture

    from tritonbench_lab.data.store import load_records
    from tritonbench_lab.data.winners import pick_winners, shape_results
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.space import config_text

    rows = load_records(write_softmax_fixture(tmp_path) / "softmax.csv")
    winners = pick_winners(rows)
    # another config wins at 64x16384 in this copy, so the two winners can be told apart
    winners[-1] = dataclasses.replace(winners[-1], config="ROWS=1 num_warps=4")
    spec = get_spec("softmax")
    request = request_at(tmp_path, spec, winners)
    space = [spec.space.complete({"ROWS": r, "num_warps": w}) for r in (1, 2, 4)
             for w in (4, 8)]
    results = shape_results(rows)
    found = prior.prior_configs(request, results, "fp32", "64x12000", space)
    got = found.configs
    # winners nearest first (64x16384's, then 64x4096's and 64x1024's, one config), in turns
    # with the portfolio of the results: ROWS=2 w8 only (the best at each shape, ROWS=4's
    # rows being wrong results; after it, no config is faster anywhere)
    assert [(p["ROWS"], p["num_warps"]) for p in got] == [(1, 4), (2, 8)]
    assert all(p == spec.space.complete(p) for p in got)
    # both starts are winners (the portfolio's one config too)
    assert (found.winners, found.portfolio, found.shapes) == (2, 0, 3)
    assert found.sentence("softmax", "fp32", "64x12000") == (
        "--search prior at softmax fp32 64x12000 starts from 2 winner(s) of other shapes "
        "(configs file) and 0 config(s) of a portfolio drawn from 3 shape(s) of the results "
        "file")
    # its own shape's rows and winner are left out; another dtype has none
    own = prior.prior_configs(request, results, "fp32", "64x16384", space).configs
    assert [(p["ROWS"], p["num_warps"]) for p in own] == [(2, 8)]
    none = prior.prior_configs(request, results, "bf16", "64x4096", space)
    assert none.configs == () and "nothing tuned on this GPU yet" in none.sentence("k", "bf16", "1")
    # the portfolio holds configs of this shape's space only
    narrow = [c for c in space if c["ROWS"] == 1]
    assert config_text(prior.prior_configs(request, results, "fp32", "64x12000",
                                           narrow).configs[0]) \
        == config_text(space[0])
    # A kernel that names softmax in prior_from starts from softmax's winners too.
    sibling = dataclasses.replace(spec, name="softmax_sibling", prior_from=("softmax",))
    assert len(prior.prior_configs(request_at(tmp_path, sibling), [], "fp32", "64x4096",
                                   space).configs) == 2


def test_pruned_and_failed_rows_do_not_enter_the_portfolio(tmp_path):
    from tritonbench_lab.data.winners import shape_results
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.space import config_text

    spec = get_spec("softmax")
    space = [spec.space.complete({"ROWS": r, "num_warps": 4}) for r in (1, 2, 4)]
    text = [config_text(c) for c in space]
    rows = [record("triton", text[0], "64x1024", 1.0, status=SKIPPED),
            record("triton", text[1], "64x1024", 0.5, status=COMPILE_ERROR),
            record("triton", text[2], "64x1024", 2.0)]
    got = prior.prior_configs(request_at(tmp_path, spec), shape_results(rows), "fp32",
                              "64x4096", space).configs
    assert [config_text(c) for c in got] == [text[2]]


def test_a_prior_sweep_starts_from_the_portfolio_of_its_results_file(tmp_path, monkeypatch):
    """No configs file yet (no winners), but the results file holds another shape where
    num_warps=8 is fastest: `--search prior:1` times that config first, and only it."""
    import torch
    from helpers.sweeps import BASELINES, WIDTHS, ScriptedWorker, request_for

    from tritonbench_lab.data.store import append_rows, load_records, load_winners
    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure import devices, sweep
    from tritonbench_lab.measure.timing import BenchOptions
    from tritonbench_lab.space import config_text

    fixed = {"ROWS": 1, "PER_SM": 0, "SPLIT": 1, "TILES": 1}
    space = SPEC.space.narrow({**{k: (v,) for k, v in fixed.items()}, "num_warps": WIDTHS})

    def text(warps):
        return config_text(space.complete({**fixed, "num_warps": warps}))

    results = tmp_path / "results" / "interpreter" / "softmax.csv"
    append_rows(results, [record("triton", text(w), "64x1024", 1.0 if w == 8 else 2.0)
                          for w in WIDTHS])
    log: list[str] = []
    worker = ScriptedWorker({b: [2.0, 2.1] for b in BASELINES} | {"w=8": [1.0, 1.1]}, log)
    monkeypatch.setattr(devices, "Worker", lambda *a, **k: worker)
    request = dataclasses.replace(
        request_for(SPEC, [torch.float32], [SPEC.shape(64, 4096)], tmp_path, space=space),
        interpret=False, bench=BenchOptions(25, 100), first_bench=BenchOptions(5, 5),
        confirm=1, search="prior", search_budget=1)
    notes: list[str] = []

    class Events(sweep.SweepEvents):
        def note(self, sentence: str) -> None:
            notes.append(sentence)

    result = sweep.run_sweep(request, Events())
    assert notes == ["--search prior at softmax fp32 64x4096 starts from 0 winner(s) of other "
                     "shapes (configs file) and 1 config(s) of a portfolio drawn from 1 "
                     "shape(s) of the results file"]
    swept = [r.config for r in load_records(result.results_file)
             if r.shape == "64x4096" and r.provider == "triton"]
    assert swept == [text(8), text(8)]  # its first pass, then its confirmation
    (winner,) = [w for w in load_winners(result.configs_file) if w.shape == "64x4096"]
    assert winner.config == text(8) and winner.p50_ms == 1.1
    assert log.count("w=8") == 2 and not any(e in log for e in ("w=1", "w=2", "w=4"))


def test_a_gpu_with_nothing_yet_starts_from_the_other_gpus_rows(tmp_path):
    from helpers.fixture_results import SLUG, write_softmax_fixture

    from tritonbench_lab.data.layout import Layout
    from tritonbench_lab.data.records import Winner
    from tritonbench_lab.data.store import load_records, write_table
    from tritonbench_lab.data.winners import pick_winners, shape_results
    from tritonbench_lab.kernels import get_spec

    rows = load_records(write_softmax_fixture(tmp_path) / "softmax.csv")
    layout = Layout(tmp_path)
    write_table(layout.configs_file(SLUG, "softmax"), pick_winners(rows), Winner)
    spec = get_spec("softmax")
    space = [spec.space.complete({"ROWS": r, "num_warps": w}) for r in (1, 2, 4)
             for w in (4, 8)]
    found = prior.prior_configs(request_at(tmp_path, spec), [], "fp32", "64x12000", space)
    assert found.borrowed == (SLUG,) and found.shapes == 3
    assert [(p["ROWS"], p["num_warps"]) for p in found.configs] == [(2, 8)]
    assert found.sentence("softmax", "fp32", "64x12000").endswith(
        f"(nothing tuned on this GPU yet: those of {SLUG})")
    # once this GPU has rows of its own, only they count
    own = [dataclasses.replace(r, gpu_slug="gpu", config="ROWS=1 num_warps=4") for r in rows
           if r.provider == "triton" and r.shape == "64x1024" and r.config.startswith("ROWS=1")]
    mine = prior.prior_configs(request_at(tmp_path, spec), shape_results(own), "fp32",
                               "64x12000", space)
    assert mine.borrowed == () and [(p["ROWS"], p["num_warps"]) for p in mine.configs] == [(1, 4)]
