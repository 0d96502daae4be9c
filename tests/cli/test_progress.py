"""The sweep's progress bar: counts, the attempt in flight, and an ETA from measured attempts."""

import dataclasses
import io
import types

from rich.console import Console

from tritonbench_lab.cli.progress import SweepProgress
from tritonbench_lab.measure.worker import Task


def record(status):
    from helpers.fixture_results import record as make

    return make("triton", "ROWS=1 num_warps=4", "64x1024", 1.0, status=status)


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
    assert fields["counts"] == "1 ok 1 failed 50 skipped | first pass 2/4"
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
