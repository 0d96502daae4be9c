"""A short first pass, then the full budget for its contenders only (contenders.py), then the
confirmations: which configs are contenders, which rows stand, and the sweep loop with a
scripted worker so that every scenario is exact."""

from __future__ import annotations

import dataclasses

import pytest
from helpers.sweeps import BASELINES, WIDTHS, ScriptedWorker, request_for, row

from tritonbench_lab.data.records import CONTEND, OK, WRONG_RESULT, standing
from tritonbench_lab.measure.timing import BenchOptions
from tritonbench_lab.search.contenders import MARGIN, contenders


def first(config, p50, spread=0.0, **kw):
    """A first-pass row whose p20..p80 band is p50 * (1 -/+ spread)."""
    return row(config=config, p50=p50, p20_ms=p50 * (1 - spread), p80_ms=p50 * (1 + spread),
               rep_ms=5, **kw)


def names(rows):
    return [r.config for r in rows]


def test_contenders_are_the_configs_whose_band_reaches_the_leaders():
    rows = [first("a", 1.00, 0.01), first("b", 1.05, 0.01), first("c", 1.07, 0.0),
            first("d", 1.20, 0.10), first("e", 1.30, 0.05)]
    # leader's p80 1.01 widened by the margin: 1.0605. b's p20 1.0395 and d's 1.08 ...
    reach = 1.01 * (1 + MARGIN)
    expected = [r.config for r in rows if r.p20_ms <= reach]
    assert names(contenders(rows, always=1)) == expected == ["a", "b"]
    # A noisier leader reaches further: its own band says so.
    noisy = [first("a", 1.00, 0.10), *rows[1:]]
    assert names(contenders(noisy, always=1)) == ["a", "b", "c", "d"]


def test_the_confirmed_count_are_always_contenders_and_the_cap_keeps_the_fastest():
    rows = [first("a", 1.0), first("b", 2.0), first("c", 3.0)]
    assert names(contenders(rows, always=1)) == ["a"]
    assert names(contenders(rows, always=3)) == ["a", "b", "c"]
    tied = [first(f"x{i}", 1.0 + i / 1000) for i in range(40)]
    assert names(contenders(tied, always=3, cap=16)) == [f"x{i}" for i in range(16)]


def test_only_ok_first_pass_triton_rows_compete():
    rows = [first("a", 0.5, status=WRONG_RESULT), row("torch", "", 0.1, rep_ms=5),
            first("b", 1.0), first("c", 1.01), row(config="d", p50=0.2, phase="contend"),
            first("b", 1.2)]  # b twice (--fresh): its fastest row speaks for it
    assert names(contenders(rows, always=1)) == ["b", "c"]
    assert contenders([], always=3) == []


def test_a_contend_row_replaces_the_first_pass_and_a_confirmation_replaces_both():
    a1, b1 = first("a", 1.0), first("b", 1.1)
    a2 = row(config="a", p50=1.2, phase=CONTEND)
    assert standing([a1, b1, a2]) == [b1, a2]
    a3 = row(config="a", p50=1.25, confirmed=True)
    assert standing([a1, b1, a2, a3]) == [b1, a3]


def scripted(tmp_path, monkeypatch, times, first_rep_ms=5, log=None, **options):
    import torch

    from tritonbench_lab.data.store import load_records, load_winners
    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure import devices
    from tritonbench_lab.measure import sweep as sweep_mod

    log = [] if log is None else log
    worker = ScriptedWorker(times, log)
    monkeypatch.setattr(devices, "Worker", lambda *a, **k: log.append("new") or worker)
    space = SPEC.space.narrow({"ROWS": (1,), "num_warps": WIDTHS, "PER_SM": (0,),
                               "SPLIT": (1,), "TILES": (1,)})
    request = dataclasses.replace(
        request_for(SPEC, [torch.float32], [SPEC.shape(64, 4096)], tmp_path, space=space),
        interpret=False, bench=BenchOptions(25, 100),
        first_bench=BenchOptions(5, first_rep_ms) if first_rep_ms else None, **options)
    result = sweep_mod.run_sweep(request)
    (winner,) = load_winners(result.configs_file)
    return log, load_records(result.results_file), winner, worker.budgets


def test_only_contenders_get_the_full_budget_and_the_winner_is_confirmed(tmp_path, monkeypatch):
    # First pass: w=1 and w=2 within noise of each other, w=4 and w=8 clearly slower.
    times = {b: [2.0, 2.1] for b in BASELINES}
    times |= {"w=1": [1.00, 1.02, 1.03], "w=2": [1.01, 0.99, 1.00], "w=4": [1.5], "w=8": [2.5]}
    log, rows, winner, budgets = scripted(tmp_path, monkeypatch, times, confirm=1)
    # On a GPU the sweep and confirmation workers start in the background before any task.
    assert log[:4] == ["new", "start", "new", "start"]
    work = [e for e in log if e not in ("new", "start", "stop")]
    assert work == [*BASELINES, "w=1", "w=2", "w=4", "w=8",  # first pass
                    "w=1", "w=2",  # contenders, full budget
                    "w=2", *BASELINES]  # confirmation of the fastest contender
    assert [b.rep_ms for b in budgets] == [100] * 3 + [5] * 4 + [100] * 6
    phases = [(r.phase, r.rep_ms) for r in rows if r.provider == "triton"]
    assert phases == [("sweep", 5)] * 4 + [("contend", 100)] * 2 + [("confirm", 100)]
    assert (winner.config.split()[1], winner.p50_ms, winner.rep_ms) == ("num_warps=2", 1.0, 100)


def test_contenders_the_confirmation_covers_go_to_it_directly(tmp_path, monkeypatch):
    # Two contenders (w=1, w=2) and two confirmations: a full-budget pass over them would
    # decide nothing, so there is none, and no other config can lead the confirmation.
    times = {b: [2.0, 2.1] for b in BASELINES}
    times |= {"w=1": [1.00, 1.20], "w=2": [1.01, 1.10], "w=4": [1.30], "w=8": [2.5]}
    log, rows, winner, budgets = scripted(tmp_path, monkeypatch, times, confirm=2)
    work = [e for e in log if e not in ("new", "start", "stop")]
    # w=4's first pass (1.30) beats both confirmations, but it was no contender.
    assert work == [*BASELINES, "w=1", "w=2", "w=4", "w=8", "w=1", "w=2", *BASELINES]
    assert not any(r.phase == CONTEND for r in rows)
    assert [b.rep_ms for b in budgets] == [100] * 3 + [5] * 4 + [100] * 5
    assert (winner.config.split()[1], winner.p50_ms) == ("num_warps=2", 1.10)


def test_a_search_proposes_to_the_pool_before_its_baselines_are_timed(tmp_path, monkeypatch):
    # So that the pool compiles a search's first batch while the device times its baselines.
    from tritonbench_lab.measure import sweep as sweep_mod

    log: list[str] = []

    class Pool:  # stands in for the compile pool: records what it is given, and when
        processes = 2
        result = type("R", (), {"summary": lambda self, n: ""})()

        def submit(self, jobs, background=False):
            log.append(f"submit {len(list(jobs))}")

        def ready(self, key):
            return True

        def wait(self, key):
            return None

        def close(self):
            pass

    monkeypatch.setattr(sweep_mod, "start_pool", lambda *a: Pool())
    times = {b: [2.0, 2.1] for b in BASELINES}
    times |= {"w=1": [1.00, 1.20], "w=2": [1.01, 1.10], "w=4": [1.30], "w=8": [2.5]}
    _, rows, winner, _ = scripted(tmp_path, monkeypatch, times, confirm=2, search="random",
                                  search_budget=4, log=log)
    work = [e for e in log if e not in ("new", "start", "stop")]
    assert work[:4] == ["submit 4", *BASELINES]
    assert sorted(work[4:8]) == ["w=1", "w=2", "w=4", "w=8"]
    assert (winner.config.split()[1], winner.p50_ms) == ("num_warps=2", 1.10)


def test_a_finished_first_pass_sweep_run_again_measures_nothing(tmp_path, monkeypatch):
    times = {b: [2.0, 2.1] for b in BASELINES}
    times |= {"w=1": [1.00, 1.02, 1.03], "w=2": [1.01, 0.99, 1.00], "w=4": [1.5], "w=8": [2.5]}
    scripted(tmp_path, monkeypatch, times, confirm=1)
    results = tmp_path / "results" / "interpreter" / "softmax.csv"
    before = results.read_bytes()
    log, *_ = scripted(tmp_path, monkeypatch, {}, confirm=1)
    assert log == []  # not even a worker started (seconds on a GPU machine)
    assert results.read_bytes() == before


@pytest.mark.parametrize("confirm", [0, 2])
def test_without_a_first_pass_budget_nothing_is_contended(tmp_path, monkeypatch, confirm):
    times = {b: [2.0, 2.1] for b in BASELINES} | {f"w={w}": [1.0 + w / 10] * 2 for w in WIDTHS}
    log, rows, winner, _ = scripted(tmp_path, monkeypatch, times, confirm=confirm,
                                    first_rep_ms=None)
    assert not any(r.phase == CONTEND for r in rows)
    assert winner.config.split()[1] == "num_warps=1" and all(r.status == OK for r in rows)


def test_first_pass_request_budgets_by_phase():
    from tritonbench_lab.measure.plan import SweepRequest

    short, full, long = BenchOptions(5, 5), BenchOptions(25, 100), BenchOptions(25, 200)
    request = SweepRequest(*[None] * 9, bench=full, first_bench=short, confirm_bench=long)
    def budget(phase, provider="triton"):
        b = request.bench_for(phase, provider)
        return BenchOptions(b.warmup_ms, b.rep_ms)  # the clocks: test_timing.py

    assert budget("sweep") == short
    assert budget("sweep", "torch") == full  # baselines are not ranked, only timed
    assert budget("contend") == full and budget("confirm") == long
