"""The sweep's progress: counts of configs, the attempt in flight, an ETA from measured
attempts, and to a log one plain line per finished shape."""

import dataclasses
import io
import types

from rich.console import Console

from tritonbench_lab.cli.progress import SweepProgress
from tritonbench_lab.measure.worker import Task


def record(status, provider="triton", phase="sweep"):
    from helpers.fixture_results import record as make

    return dataclasses.replace(make(provider, "ROWS=1 num_warps=4" if provider == "triton"
                                    else "", "64x1024", 1.0, status=status), phase=phase)


def _fake_clock(monkeypatch, clock):
    """The progress module's clock only: patching time.monotonic itself would hand the fake
    to every thread of the test process (a compile pool's manager thread, left from an
    earlier test, once ran out of it)."""
    monkeypatch.setattr("tritonbench_lab.cli.progress.time",
                        types.SimpleNamespace(monotonic=lambda: next(clock)))


def test_skipped_rows_do_not_shorten_the_eta_and_counts_add_up(monkeypatch):
    clock = iter([0.0, 10.0, 10.0, 30.0])  # two measured attempts of 10 s and 20 s
    _fake_clock(monkeypatch, clock)
    progress = SweepProgress("softmax", Console(file=io.StringIO(), width=200))
    progress.planned(to_measure=4, to_skip=100, already_done=0, devices=1)
    fields = progress.progress.tasks[0].fields
    assert fields["eta"] == "?"  # nothing measured yet: no guess
    for _ in range(50):  # instant pruned rows
        progress.finished(record("skipped"))
    assert progress.progress.tasks[0].fields["eta"] == "?"
    task = Task("softmax", "triton", (64, 1024), "fp32", {"ROWS": 1, "num_warps": 4})
    progress.started(task, "sweep", "")
    assert "64x1024 timing ROWS=1 w=4" in progress.progress.tasks[0].description
    progress.finished(record("ok"))
    progress.started(task, "sweep", "")
    progress.finished(record("wrong_result"))
    fields = progress.progress.tasks[0].fields
    assert fields["eta"] == "0:00:30"  # 2 left at the mean of 15 s, whatever the skips
    assert fields["counts"] == "configs: 1 ok, 1 failed, 50 skipped | first pass 2/4"
    progress.queued(3, "confirm")  # not measured yet: at the mean of what was
    assert progress.progress.tasks[0].total == 107
    assert progress.progress.tasks[0].fields["eta"] == "0:01:15"


def test_each_phase_is_estimated_at_its_own_mean_and_devices_share_the_work(monkeypatch):
    clock = iter([0.0, 1.0, 1.0, 11.0])  # a first-pass attempt of 1 s, a contender of 10 s
    _fake_clock(monkeypatch, clock)
    progress = SweepProgress("matmul", Console(file=io.StringIO(), width=200))
    progress.planned(to_measure=11, to_skip=0, already_done=0, devices=2)
    task = Task("matmul", "triton", (64, 64, 64), "fp32", {"BLOCK_M": 16})
    progress.started(task, "sweep", "cpu:0")
    assert "on cpu:0" in progress.progress.tasks[0].description
    progress.finished(dataclasses.replace(record("ok"), device="cpu:0"))
    progress.queued(3, "contend")
    progress.started(task, "contend", "cpu:1")
    progress.finished(dataclasses.replace(record("ok"), phase="contend", device="cpu:1"))
    # 10 first-pass attempts left at 1 s, 2 contenders at 10 s, over 2 devices.
    assert progress.eta_seconds() == (10 * 1.0 + 2 * 10.0) / 2
    assert "first pass 1/11, contenders 1/3" in progress.progress.tasks[0].fields["counts"]


def test_counts_are_the_first_pass_configs_not_the_rows(monkeypatch):
    """An 80-config space read '54 ok 0 failed 36 skipped': baselines, contenders and
    confirmations were counted as configs."""
    _fake_clock(monkeypatch, iter(range(100)))
    progress = SweepProgress("softmax", Console(file=io.StringIO(), width=200))
    progress.planned(to_measure=3, to_skip=1, already_done=0, devices=1)
    for status, provider, phase in [("ok", "torch", "sweep"), ("skipped", "triton", "sweep"),
                                    ("ok", "triton", "sweep"), ("crash", "triton", "sweep"),
                                    ("ok", "triton", "contend"), ("ok", "triton", "confirm"),
                                    ("ok", "torch", "confirm")]:
        progress.started(Task("softmax", provider, (64, 1024), "fp32", {}), phase, "")
        progress.finished(record(status, provider, phase))
    assert progress.counts == {"ok": 1, "failed": 1, "skipped": 1}
    assert progress.progress.tasks[0].fields["counts"].startswith(
        "configs: 1 ok, 1 failed, 1 skipped")


def _tally(**kw):
    from helpers.fixture_results import record as make

    from tritonbench_lab.data.tally import ShapeTally

    winner = make("triton", "BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 num_warps=8 "
                  "num_stages=3", "4096x4096x4096", 0.123)
    return ShapeTally(**{"kernel": "matmul", "dtype": "bf16", "shape": "4096x4096x4096",
                         "configs": 180, "counts": {"ok": 160, "skipped": 20},
                         "winner": winner, **kw})


def test_to_a_log_each_finished_shape_is_one_plain_line_and_nothing_else(monkeypatch):
    """Output to a log or a pipe: no live bar (Rich printed only its last state, cut at 80
    columns), a line when the work is planned (else silence until the first shape ends: half
    a minute in the interpreter), then one line per finished shape, as long as it needs."""
    _fake_clock(monkeypatch, iter([10.0, 11.5, 13.2]))
    log = io.StringIO()
    progress = SweepProgress("matmul", Console(file=log, width=80))  # not a terminal
    with progress:
        progress.planned(to_measure=1, to_skip=0, already_done=0, devices=1)
        task = Task("matmul", "triton", (4096, 4096, 4096), "bf16", {"BLOCK_M": 128})
        progress.started(task, "sweep", "")
        progress.finished(record("ok"))
        progress.shape_finished(_tally())
        progress.shape_finished(_tally(shape="8192x8192x8192", counts={"wrong_result": 180},
                                       winner=None))
    assert log.getvalue().splitlines() == [
        "matmul: 1 attempt(s) to measure, 0 pruned; a line as each dtype and shape ends",
        "matmul bf16 4096x4096x4096: 180 configs: 160 ok, 20 skipped, winner BM=128 BN=256 "
        "BK=64 GM=8 w=8 s=3 0.123 ms, 3.2 s",
        "matmul bf16 8192x8192x8192: 180 configs: 180 wrong_result, no correct config, "
        "measured before"]


def test_on_a_terminal_the_bar_is_live_and_shape_lines_print_above_it():
    terminal = Console(file=io.StringIO(), width=80, force_terminal=True)
    progress = SweepProgress("matmul", terminal)
    assert progress.live
    with progress:
        progress.shape_finished(_tally())
    assert "winner BM=128" in terminal.file.getvalue()
    assert not SweepProgress("matmul", Console(file=io.StringIO())).live
