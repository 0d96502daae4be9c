"""Confirming the leaders: after a shape is swept, its fastest configs and every baseline are
timed again in a fresh worker, and winners are chosen by those times.

The sweep loop runs here with a scripted worker (canned first and confirmation times), so
each scenario is exact (helpers/sweeps.py); test_sweep.py runs the real thing in the
interpreter.
"""

from __future__ import annotations

import dataclasses
import sys

import pytest
from helpers.sweeps import BASELINES, HOST_MS, WIDTHS, ScriptedWorker, request_for, row

from tritonbench_lab.data.records import (
    TRITON,
    WRONG_RESULT,
    Record,
    fastest,
    standing,
)
from tritonbench_lab.space import config_text

# --- which rows stand ----------------------------------------------------------------------

def test_a_confirmation_replaces_the_rows_of_its_config_and_only_those():
    first, other = row(config="w=1", p50=1.0), row(config="w=2", p50=1.1)
    confirmed = row(config="w=1", p50=1.3, confirmed=True)
    assert standing([first, other, confirmed]) == [other, confirmed]
    newer = row(config="w=1", p50=1.2, confirmed=True)
    assert standing([first, confirmed, other, newer]) == [other, newer]
    assert standing([first, other]) == [first, other]


def test_a_failed_confirmation_stands_too():
    first = row(config="w=1", p50=1.0)
    failed = row(config="w=1", p50=None, status=WRONG_RESULT, confirmed=True)
    assert standing([first, failed]) == [failed]


def test_fastest_is_among_the_confirmed_when_any_is():
    confirmed, unconfirmed = row(config="w=1", p50=1.3, confirmed=True), row(config="w=2", p50=1.1)
    assert fastest([unconfirmed, confirmed]) is confirmed
    assert fastest([unconfirmed, row(config="w=4", p50=1.2)]) is unconfirmed
    assert fastest([]) is None


def test_winner_and_its_baseline_ratio_come_from_the_confirmations():
    from tritonbench_lab.data.winners import pick_winners

    rows = [row("torch", "", 2.0), row(config="w=1", p50=1.0), row(config="w=2", p50=1.05),
            row(config="w=4", p50=1.1),
            row("torch", "", 2.2, confirmed=True), row(config="w=1", p50=1.3, confirmed=True),
            row(config="w=2", p50=1.06, confirmed=True)]
    (winner,) = pick_winners(rows)
    assert (winner.config, winner.p50_ms) == ("w=2", 1.06)
    assert winner.speedup == pytest.approx(2.2 / 1.06)


def test_a_winners_ratios_come_from_its_own_run_on_its_own_gpu():
    """Runs on different days may be different GPUs: the winner of a later run is compared
    with the baselines of that run, not with faster ones of an earlier run or a later one."""
    from tritonbench_lab.data.winners import pick_winners, shape_results

    early = [row("torch", "", 1.8, confirmed=True, run_id="a"),
             row("inductor", "", 1.5, confirmed=True, run_id="a"),
             row(config="w=1", p50=1.2, confirmed=True, run_id="a")]
    late = [row("torch", "", 2.0, confirmed=True, run_id="b"),
            row(config="w=2", p50=1.0, confirmed=True, run_id="b")]
    latest_op = [row("torch", "", 1.6, confirmed=True, run_id="c",
                     timestamp="2026-11-30T11:00:00+00:00")]
    (winner,) = pick_winners(early + late + latest_op)
    assert (winner.config, winner.run_id) == ("w=2", "b")
    # run b timed torch alone: inductor (run a) and torch's newer row (run c) stay out
    assert (winner.best_baseline, winner.op_p50_ms) == ("torch", 2.0)
    assert winner.speedup == pytest.approx(2.0)
    (result,) = shape_results(early + late + latest_op)
    assert set(result.baselines) == {"torch"}
    # A winner whose run timed no baseline keeps the baselines that stand.
    (alone,) = pick_winners(early + [row(config="w=2", p50=1.0, confirmed=True, run_id="d")])
    assert (alone.best_baseline, alone.speedup) == ("inductor", pytest.approx(1.5))


# --- which rows are re-timed -----------------------------------------------------------------

def test_leaders_to_confirm_are_the_fastest_configs_and_every_baseline():
    from tritonbench_lab.search.contenders import leaders_to_confirm

    rows = [row("torch", "", 2.0), row("compiled", "", 1.9), row(config="w=1", p50=1.2),
            row(config="w=2", p50=1.0), row(config="w=4", p50=1.1),
            row(config="w=8", p50=None, status=WRONG_RESULT)]
    got = [(r.provider, r.config) for r in leaders_to_confirm(rows, 2)]
    assert got == [(TRITON, "w=2"), (TRITON, "w=4"), ("torch", ""), ("compiled", "")]
    assert leaders_to_confirm(rows, 0) == []
    # w=2 came out slow: w=1 enters the top two; confirmed rows are not timed again.
    rows += [row(c, "", 2.0, confirmed=True) for c in ("torch", "compiled")]
    rows += [row(config="w=2", p50=1.5, confirmed=True), row(config="w=4", p50=1.1, confirmed=True)]
    assert [(r.provider, r.config) for r in leaders_to_confirm(rows, 2)] == [(TRITON, "w=1")]


def test_after_a_short_first_pass_the_leaders_are_among_the_contenders():
    """A first-pass time (5 ms of do_bench, often at the boost clock) is not comparable with
    a contender's full-budget one: a config left out of the contenders must not lead."""
    from tritonbench_lab.search.contenders import leaders_to_confirm

    rows = [row("torch", "", 2.0), row(config="w=1", p50=1.0), row(config="w=2", p50=1.01),
            row(config="w=4", p50=1.08), row(config="w=1", p50=1.10, phase="contend"),
            row(config="w=2", p50=1.12, phase="contend")]
    got = [(r.provider, r.config) for r in leaders_to_confirm(rows, 2)]
    assert got == [(TRITON, "w=1"), (TRITON, "w=2"), ("torch", "")]
    # Without contenders (every config had the full budget), every config may lead.
    assert [r.config for r in leaders_to_confirm(rows[:4], 2)] == ["w=1", "w=2", ""]


# --- the sweep loop, with a scripted worker ------------------------------------------------------

def scripted_sweep(tmp_path, monkeypatch, times, confirm, budgets=None, console=None,
                   **options):
    import torch

    from tritonbench_lab.data.store import load_records, load_winners
    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure import devices
    from tritonbench_lab.measure import sweep as sweep_mod

    log: list[str] = []
    worker = ScriptedWorker(times, log)  # the same script across the fresh worker
    if budgets is not None:
        worker.budgets = budgets

    def make_worker(interpret, kernel_modules, bench, visible=None):
        log.append("new")
        return worker

    monkeypatch.setattr(devices, "Worker", make_worker)
    space = SPEC.space.narrow({"ROWS": (1,), "num_warps": WIDTHS, "PER_SM": (0,),
                               "SPLIT": (1,), "TILES": (1,)})
    request = dataclasses.replace(
        request_for(SPEC, [torch.float32], [SPEC.shape(64, 4096)], tmp_path, space=space),
        confirm=confirm, **options)
    result = sweep_mod.run_sweep(request)
    if console is not None:  # the summary `tlab sweep` prints
        from tritonbench_lab.cli.sweep_summary import print_summary

        print_summary(result, request, console)
    (winner,) = load_winners(result.configs_file)
    return log, load_records(result.results_file), winner


def test_workers_are_told_to_stop_before_the_winners_and_joined_after(tmp_path, monkeypatch):
    """A worker takes about a second to give its CUDA context back: once every row is in, the
    sweep tells its workers to exit, picks and writes the winners meanwhile, then joins them."""
    seen: list[tuple[str, bool]] = []

    def configs_written() -> bool:
        return any((tmp_path / "configs").rglob("*.csv"))

    class Watched(ScriptedWorker):
        def ask_to_stop(self) -> None:
            seen.append(("ask", configs_written()))

        def stop(self) -> None:
            seen.append(("stop", configs_written()))

    monkeypatch.setattr(sys.modules[__name__], "ScriptedWorker", Watched)
    times = {b: [2.0, 2.2] for b in BASELINES} | {f"w={w}": [1.0, 1.0] for w in WIDTHS}
    scripted_sweep(tmp_path, monkeypatch, times, confirm=2)
    assert seen[0] == ("ask", False)  # told before the winners were written
    assert [kind for kind, _ in seen].count("stop") == 2  # the sweep's and the fresh one
    assert all(written for kind, written in seen if kind == "stop")  # joined after


def test_leaders_are_retimed_in_a_fresh_worker_and_slow_ones_let_the_next_in(
        tmp_path, monkeypatch):
    times = {b: [2.0, 2.2] for b in BASELINES}
    # first times, then confirmations: w=1 and w=2 were lucky, w=4 and w=8 are steady.
    times |= {"w=1": [1.00, 1.30], "w=2": [1.01, 1.25], "w=4": [1.02, 1.04], "w=8": [1.03, 1.10]}
    log, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=2)
    sweep_part = ["new", *BASELINES, "w=1", "w=2", "w=4", "w=8"]
    assert log[:len(sweep_part) + 1] == [*sweep_part, "new"]  # a fresh worker from here
    assert log[len(sweep_part) + 1:-2] == ["w=1", "w=2", *BASELINES, "w=4", "w=8"]
    assert log[-2:] == ["stop", "stop"]  # both workers stopped at the end
    confirmations = [r for r in rows if r.confirmed]
    assert len(confirmations) == 4 + len(BASELINES)
    assert {r.run_id for r in rows} == {confirmations[0].run_id}
    assert (winner.config, winner.p50_ms) == (
        config_text({"ROWS": 1, "num_warps": 4, "PER_SM": 0, "SPLIT": 1, "TILES": 1,
                     "KEEP_LAST": 0}), 1.04)
    assert winner.speedup == pytest.approx(2.2 / 1.04)


def test_confirmations_take_their_own_budget_and_rows_record_it(tmp_path, monkeypatch):
    from tritonbench_lab.measure.timing import STEADY_WARMUP_MS, BenchOptions

    times = {b: [2.0, 2.2] for b in BASELINES}
    times |= {"w=1": [1.00, 1.30], "w=2": [1.01, 1.25], "w=4": [1.02, 1.04], "w=8": [1.03, 1.10]}
    budgets: list = []
    short, full = BenchOptions(warmup_ms=5, rep_ms=5), BenchOptions(warmup_ms=25, rep_ms=100)
    # interpret=False: rows carry do_bench budgets (the worker is scripted, nothing runs)
    _, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=2, budgets=budgets,
                                     bench=short, confirm_bench=full, interpret=False)
    # The sweep's tasks take --rep-ms, the confirmations theirs. Without a short first pass
    # (--timing auto): both clocks until the shape has a time, events alone once its fastest
    # (here 1-2 ms, every row) is over timing.BOTH_CLOCKS_BELOW_MS.
    both = dataclasses.replace(short, timing="both")
    # The confirmations of so long a kernel also warm up to the GPU's steady clock.
    short = dataclasses.replace(short, timing="events")
    full = dataclasses.replace(full, timing="events", warmup_ms=STEADY_WARMUP_MS)
    assert budgets == [both] * len(BASELINES) + [short] * 4 + [full] * (len(BASELINES) + 4)
    assert {(r.phase, r.method, r.warmup_ms, r.rep_ms) for r in rows} == {
        ("sweep", "do_bench", 5, 5), ("confirm", "do_bench", STEADY_WARMUP_MS, 100)}
    assert winner.p50_ms == 1.04 and winner.rep_ms == 100


def test_rounds_are_capped_and_the_winner_is_still_a_confirmed_config(tmp_path, monkeypatch):
    times = {b: [2.0, 2.0] for b in BASELINES}
    times |= {f"w={w}": [1.0 + w / 100, 9.0 - w / 100] for w in WIDTHS}  # every one slower
    log, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=1)
    # Two rounds (1 + confirm): w=1 with the baselines, then w=2; w=4 stays unconfirmed.
    assert log[log.index("new", 1) + 1:-2] == ["w=1", *BASELINES, "w=2"]
    assert winner.p50_ms == 9.0 - 2 / 100 and "num_warps=2" in winner.config


def test_a_finished_sweep_run_again_confirms_nothing(tmp_path, monkeypatch):
    # The capped case leaves an unconfirmed config in the top N (w=4 above); a second run
    # must not confirm it, nor anything else: it measures nothing at all.
    times = {b: [2.0, 2.0] for b in BASELINES}
    times |= {f"w={w}": [1.0 + w / 100, 9.0 - w / 100] for w in WIDTHS}
    scripted_sweep(tmp_path, monkeypatch, times, confirm=1)
    results = tmp_path / "results" / "interpreter" / "softmax.csv"
    before = results.read_bytes()
    log, _, _ = scripted_sweep(tmp_path, monkeypatch, {}, confirm=1)
    assert [entry for entry in log if entry not in ("stop", "new")] == []
    assert results.read_bytes() == before


def test_a_fresh_sweep_confirms_again_what_earlier_runs_confirmed(tmp_path, monkeypatch):
    """An earlier run's confirmation (another day, maybe a faster GPU) would keep winning with
    its old time if --fresh only confirmed its own leaders: it is confirmed again."""
    times = {b: [2.0, 2.0] for b in BASELINES}
    times |= {"w=1": [1.00, 1.02], "w=2": [1.10], "w=4": [1.20], "w=8": [1.30]}
    _, _, first = scripted_sweep(tmp_path, monkeypatch, times, confirm=1)
    assert (first.p50_ms, "num_warps=1" in first.config) == (1.02, True)
    # Today w=1 runs slow in the first pass and w=2 leads; w=1 really is slower today.
    times = {b: [2.1, 2.1] for b in BASELINES}
    times |= {"w=1": [1.50, 1.40], "w=2": [1.10, 1.12], "w=4": [1.20], "w=8": [1.30]}
    log, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=1, fresh=True)
    assert log[log.index("new", 1) + 1:-2] == ["w=2", *BASELINES, "w=1"]
    assert (winner.p50_ms, "num_warps=2" in winner.config) == (1.12, True)
    assert winner.run_id == rows[-1].run_id != first.run_id
    # Without the second confirmation, w=1's 1.02 from the first run would stand and win.
    assert [r.p50_ms for r in standing(rows) if r.confirmed and "num_warps=1" in r.config] == [1.40]


def test_a_sweep_confirms_the_configs_other_gpus_won_at_the_shape(tmp_path, monkeypatch):
    """Another GPU's winner at the shape that this GPU's first pass ranked low is confirmed
    beside the leaders, and wins where it is fastest; one outside the space here, one at
    another shape and this GPU's own file are not confirmed."""
    import shutil

    times = {b: [2.0, 2.0] for b in BASELINES}
    times |= {"w=1": [1.3], "w=2": [1.2], "w=4": [1.1], "w=8": [1.0, 1.0]}
    other = tmp_path / "other"
    *_, theirs = scripted_sweep(other, monkeypatch, times, confirm=1)
    assert "num_warps=8" in theirs.config
    mine = tmp_path / "mine"
    (mine / "configs" / "gpu-b").mkdir(parents=True)
    shutil.copy(other / "configs" / "interpreter" / "softmax.csv",
                mine / "configs" / "gpu-b" / "softmax.csv")
    text = (other / "configs" / "interpreter" / "softmax.csv").read_text()
    (mine / "configs" / "gpu-c").mkdir()  # a config this space leaves out, another shape
    (mine / "configs" / "gpu-c" / "softmax.csv").write_text(
        text.replace("num_warps=8", "num_warps=16") + text.splitlines()[1].replace(
            "64x4096", "64x8192").replace("num_warps=8", "num_warps=2") + "\n")
    # Here w=8 runs slow in the first pass (it is not a leader) and fastest when confirmed.
    times = {b: [2.0, 2.0] for b in BASELINES}
    times |= {"w=1": [1.00, 1.01], "w=2": [1.05], "w=4": [1.06], "w=8": [1.50, 0.90]}
    log, rows, winner = scripted_sweep(mine, monkeypatch, times, confirm=1)
    assert log[log.index("new", 1) + 1:-2] == ["w=1", *BASELINES, "w=8"]
    assert "num_warps=8" in winner.config and winner.p50_ms == 0.90
    # Swept again, nothing is measured: the other GPUs' winners ride on a confirmation.
    log, _, _ = scripted_sweep(mine, monkeypatch, {}, confirm=1)
    assert [entry for entry in log if entry not in ("stop", "new")] == []


def test_a_confirmation_whose_every_config_crashed_is_done_again_by_the_next_run(
        tmp_path, monkeypatch):
    """Every config's confirmation crashed (the fresh worker out of memory): the winner would
    be a first-pass time, so the shape is not finished and the next run confirms it."""
    times = {b: [2.0, 2.0] for b in BASELINES}
    times |= {"w=1": [1.0, None], "w=2": [1.1, None], "w=4": [1.2], "w=8": [1.3]}
    log, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=1)
    assert log[log.index("new", 1) + 1:-2] == ["w=1", *BASELINES, "w=2"]
    assert not any(r.confirmed and r.status == "ok" for r in rows if r.provider == "triton")
    assert "num_warps=4" in winner.config and winner.p50_ms == 1.2  # a first-pass time
    # Run again, nothing is measured but the confirmation: set aside, the crashed rows no
    # longer stand, so the first pass's leaders are confirmed in turn as in any run.
    times = {b: [2.1] for b in BASELINES} | {"w=1": [1.3], "w=2": [1.15]}
    log, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=1)
    assert [e for e in log if e not in ("stop", "new")] == ["w=1", *BASELINES, "w=2"]
    assert "num_warps=2" in winner.config and winner.p50_ms == 1.15
    assert winner.run_id == rows[-1].run_id
    # A run whose confirmations are ok is finished: a third run measures nothing.
    log, _, _ = scripted_sweep(tmp_path, monkeypatch, {}, confirm=1)
    assert [e for e in log if e not in ("stop", "new")] == []


@pytest.mark.parametrize("kept", [0, 1, 3], ids=["none", "a leader", "leaders and torch"])
def test_a_sweep_cut_short_while_confirming_is_confirmed_whole_by_the_next_run(
        tmp_path, monkeypatch, kept):
    """A kill while confirming leaves `kept` confirmations. The next run confirms the shape
    again, whole: the leaders and every baseline, so the winner's run holds every baseline
    (before, it confirmed only what was missing, and with `leaders and torch` kept the
    winner's run had no torch: the table, report and plots showed '-' for it)."""
    from rich.console import Console

    from tritonbench_lab.data.winners import shape_results

    times = {b: [2.0, 2.2] for b in BASELINES}
    times |= {"w=1": [1.00, 1.30], "w=2": [1.01, 1.25], "w=4": [1.02, 1.04], "w=8": [1.03, 1.10]}
    scripted_sweep(tmp_path, monkeypatch, times, confirm=2)
    results = tmp_path / "results" / "interpreter" / "softmax.csv"
    # The confirmation times w=1, w=2, then the baselines, in that order: keep `kept` of them.
    lines = results.read_text().splitlines(keepends=True)
    sweep_rows = 1 + len(BASELINES) + len(WIDTHS)
    results.write_text("".join(lines[:sweep_rows + kept]))
    console = Console(record=True, width=200)
    log, rows, winner = scripted_sweep(
        tmp_path, monkeypatch, {"w=1": [1.30], "w=2": [1.25], "w=4": [1.04], "w=8": [1.10],
                                **{b: [2.2] for b in BASELINES}}, confirm=2, console=console)
    # w=1 and w=2 lead the first pass; both come out slow, and w=4 and w=8 enter.
    assert [entry for entry in log if entry not in ("stop", "new")] == [
        "w=1", "w=2", *BASELINES, "w=4", "w=8"]
    assert (winner.p50_ms, winner.run_id) == (1.04, rows[-1].run_id)
    (found,) = shape_results(rows)
    assert {b: r.run_id for b, r in found.baselines.items()} == {
        b: winner.run_id for b in BASELINES}
    table = next(line for line in console.export_text().splitlines() if "64x4096" in line)
    cells = [cell.strip() for cell in table.strip("│ ").split("│")]
    assert cells[4:4 + len(BASELINES)] == [cells[4]] * len(BASELINES) != ["-"] * len(BASELINES)
    # And the shape is finished now: the same command again measures nothing.
    again, _, _ = scripted_sweep(tmp_path, monkeypatch, {}, confirm=2)
    assert [entry for entry in again if entry not in ("stop", "new")] == []


def test_confirmations_time_the_host_and_winners_carry_it(tmp_path, monkeypatch):
    times = {b: [2.0, 2.2] for b in BASELINES}
    times |= {"w=1": [1.00, 1.30], "w=2": [1.01, 1.25], "w=4": [1.02, 1.04], "w=8": [1.03, 1.10]}
    from rich.console import Console

    console = Console(record=True, width=200)
    monkeypatch.setitem(HOST_MS, "w=4", 4.4)  # a launch that holds the host past its GPU time
    _, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=2, interpret=False,
                                     console=console)
    assert all((r.host_ms is not None) == r.confirmed for r in rows)  # asked of confirmations
    assert (winner.host_ms, winner.op_host_ms) == (4.4, pytest.approx(0.22))
    summary = console.export_text()
    assert "eager vs torch" in summary and "0.50x" in summary  # max(2.2, 0.22) / max(1.04, 4.4)
    assert "2.12x" in summary  # on GPU time, 2.2 / 1.04


def test_confirmations_from_before_host_times_are_not_timed_again(tmp_path, monkeypatch):
    """Rows confirmed before tlab timed a call's host time: a run again over them measures
    nothing (their GPU times stand; `tlab host-times` adds the host's part, hosttimes.py),
    and the winner has no host times until then."""
    from tritonbench_lab.data.store import load_records, write_table

    times = {b: [2.0, 2.2] for b in BASELINES}
    times |= {"w=1": [1.00, 1.30], "w=2": [1.01, 1.25], "w=4": [1.02, 1.04], "w=8": [1.03, 1.10]}
    scripted_sweep(tmp_path, monkeypatch, times, confirm=2, interpret=False)
    results = tmp_path / "results" / "interpreter" / "softmax.csv"
    older = [dataclasses.replace(r, host_ms=None) for r in load_records(results)]
    write_table(results, older, Record)
    log, _, winner = scripted_sweep(tmp_path, monkeypatch, {}, confirm=2, interpret=False)
    assert [e for e in log if e not in ("stop", "new")] == []
    assert (winner.p50_ms, winner.host_ms, winner.op_host_ms) == (1.04, None, None)


def test_a_shape_is_confirmed_when_one_run_confirmed_its_leaders_and_every_baseline():
    from tritonbench_lab.search.contenders import confirmation_unfinished

    rows = [row("torch", "", 2.0, confirmed=True, host_ms=None),
            row(config="w=1", p50=1.0, confirmed=True, host_ms=None)]
    assert not confirmation_unfinished(rows)  # host times or not
    assert confirmation_unfinished([row(config="w=1", p50=1.0)])  # none confirmed
    assert confirmation_unfinished([*rows, row("unfused", "", 3.0)])  # a baseline is not
    # ...unless this sweep does not time that baseline
    assert not confirmation_unfinished([*rows, row("unfused", "", 3.0)], baselines={"torch"})
    # Two leaders asked for, and two configs ok: one confirmed is a confirmation cut short.
    second = row(config="w=2", p50=1.1)
    assert confirmation_unfinished([*rows, second], count=2)
    assert not confirmation_unfinished([*rows, second], count=1)
    assert not confirmation_unfinished(rows, count=2)  # the only config ok is confirmed
    # The newest run that confirmed anything is the one that counts.
    newer = row(config="w=2", p50=1.1, confirmed=True, run_id="later")
    assert confirmation_unfinished([*rows, second, newer])  # that run confirmed no torch


def test_plots_pick_the_same_winner(tmp_path, monkeypatch):
    from tritonbench_lab.views.series import TUNED, series

    times = {b: [2.0, 2.2] for b in BASELINES}
    times |= {"w=1": [1.00, 1.30], "w=2": [1.01, 1.25], "w=4": [1.02, 1.04], "w=8": [1.03, 1.10]}
    _, rows, winner = scripted_sweep(tmp_path, monkeypatch, times, confirm=2)
    lines = series(rows, "fp32")
    assert list(lines[TUNED]["p50_ms"]) == [winner.p50_ms] == [1.04]
    assert list(lines["torch"]["p50_ms"]) == [2.2]


# --- tlab check times a winner as it was timed -----------------------------------------------

def test_a_winner_carries_the_do_bench_budget_it_was_timed_with():
    from tritonbench_lab.data.winners import pick_winners

    rows = [row(config="w=1", p50=1.0, rep_ms=50, warmup_ms=10),
            row(config="w=2", p50=1.2, rep_ms=100, confirmed=True, run_id="b", warmup_ms=25)]
    (winner,) = pick_winners(rows)
    assert (winner.config, winner.method, winner.warmup_ms, winner.rep_ms) == (
        "w=2", "do_bench", 25, 100)
