"""The sweep's progress bar: the attempt in flight, counts so far, and an honest ETA.

Pruned configs become rows instantly, so a rate over all rows would promise the end far too
early; the ETA here is the mean time of the attempts measured so far times the attempts left
to measure, and says '?' until one has been measured.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tritonbench_lab.records import CONFIRM, OK, SKIPPED, Record
from tritonbench_lab.space import config_short
from tritonbench_lab.sweep import SweepEvents
from tritonbench_lab.worker import Task


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


class SweepProgress(SweepEvents):
    """A Rich progress bar driven by the sweep's events; use as a context manager."""

    def __init__(self, kernel: str, console: Console):
        self.kernel = kernel
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("eta {task.fields[eta]}"),
            TextColumn("{task.fields[counts]}"), console=console, transient=False)
        self.bar = self.progress.add_task(kernel, total=None, eta="?", counts="")
        self.counts = {"ok": 0, "failed": 0, "skipped": 0}
        self.left_to_measure = 0
        self.measured = 0
        self.measuring_s = 0.0
        self.started_at: float | None = None
        self.rows = 0  # rows written by this run, for the message after an interrupt

    def __enter__(self) -> SweepProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def _refresh(self, **fields) -> None:
        eta = "?" if not self.measured else _clock(
            self.measuring_s / self.measured * self.left_to_measure)
        counts = " ".join(f"{v} {k}" for k, v in self.counts.items())
        self.progress.update(self.bar, eta=eta, counts=counts, **fields)

    def planned(self, to_measure: int, to_skip: int, already_done: int) -> None:
        self.left_to_measure = to_measure
        self.progress.update(self.bar, total=to_measure + to_skip)
        self._refresh()

    def compiling(self, done: int, total: int) -> None:
        self._refresh(description=f"{self.kernel}: compiling {done}/{total} configs in parallel")

    def compiled(self, summary: str) -> None:
        self.progress.console.print(summary)

    def confirming(self, count: int) -> None:
        self.left_to_measure += count
        total = self.progress.tasks[0].total or 0
        self.progress.update(self.bar, total=total + count)
        self._refresh()

    def started(self, task: Task, phase: str) -> None:
        self.started_at = time.monotonic()
        what = config_short(task.config) if task.config else task.provider
        verb = "confirming" if phase == CONFIRM else "measuring"
        self._refresh(description=f"{self.kernel} {task.dtype} "
                      f"{'x'.join(map(str, task.sizes))} {verb} {what}")

    def finished(self, record: Record) -> None:
        self.rows += 1
        if record.status == SKIPPED:
            self.counts["skipped"] += 1
        else:
            self.counts["ok" if record.status == OK else "failed"] += 1
            if self.started_at is not None:
                self.measured += 1
                self.measuring_s += time.monotonic() - self.started_at
                self.left_to_measure = max(0, self.left_to_measure - 1)
                self.started_at = None
        self.progress.update(self.bar, advance=1)
        self._refresh()
