"""The sweep's progress bar: the phase and attempt in flight, counts so far, an honest ETA.

Pruned configs become rows instantly, so a rate over all rows would promise the end far too
early; the ETA here is, per phase (first pass, contenders, confirmations: their budgets
differ), the mean time of that phase's attempts measured so far times its attempts left to
measure, divided by the devices measuring at once. A phase not measured yet is estimated at
the mean of the others. It says '?' until one attempt has been measured, and counts only
work already queued: contenders and confirmations join when their shape's first pass ends.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tritonbench_lab.data.records import CONFIRM, CONTEND, OK, SKIPPED, SWEEP, Record
from tritonbench_lab.measure.sweep import SweepEvents
from tritonbench_lab.measure.worker import Task
from tritonbench_lab.space import config_short

VERBS = {SWEEP: "timing", CONTEND: "contender", CONFIRM: "confirming"}
PHASE_NAMES = {SWEEP: "first pass", CONTEND: "contenders", CONFIRM: "confirmed"}


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
        self.queued_in = {p: 0 for p in VERBS}  # tasks to measure, per phase, so far
        self.done_in = {p: 0 for p in VERBS}
        self.seconds_in = {p: 0.0 for p in VERBS}
        self.devices = 1
        self.in_flight: dict[str, tuple[float, str]] = {}  # device -> (start, phase)
        self.rows = 0  # rows written by this run, for the message after an interrupt

    def __enter__(self) -> SweepProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def eta_seconds(self) -> float | None:
        measured = sum(self.done_in.values())
        if not measured:
            return None
        overall = sum(self.seconds_in.values()) / measured
        left = 0.0
        for phase in VERBS:
            mean = self.seconds_in[phase] / self.done_in[phase] if self.done_in[phase] else overall
            left += max(0, self.queued_in[phase] - self.done_in[phase]) * mean
        return left / self.devices

    def _refresh(self, **fields) -> None:
        eta = self.eta_seconds()
        counts = " ".join(f"{v} {k}" for k, v in self.counts.items())
        phases = ", ".join(f"{PHASE_NAMES[p]} {self.done_in[p]}/{self.queued_in[p]}"
                           for p in VERBS if self.queued_in[p])
        self.progress.update(self.bar, eta="?" if eta is None else _clock(eta),
                             counts=f"{counts} | {phases}" if phases else counts, **fields)

    def planned(self, to_measure: int, to_skip: int, already_done: int, devices: int = 1) -> None:
        self.devices = max(1, devices)
        self.queued_in[SWEEP] += to_measure
        self.progress.update(self.bar, total=to_measure + to_skip)
        self._refresh()

    def compiling(self, done: int, total: int) -> None:
        self._refresh(description=f"{self.kernel}: compiled {done}/{total} configs in parallel")

    def compiled(self, summary: str) -> None:
        self.progress.console.print(summary)

    def note(self, sentence: str) -> None:
        self.progress.console.print(sentence)

    def queued(self, count: int, phase: str) -> None:
        self.queued_in[phase] += count
        self.progress.update(self.bar, total=(self.progress.tasks[0].total or 0) + count)
        self._refresh()

    def started(self, task: Task, phase: str, device: str = "") -> None:
        self.in_flight[device] = (time.monotonic(), phase)
        what = config_short(task.config) if task.config else task.provider
        where = f" on {device}" if self.devices > 1 else ""
        self._refresh(description=f"{self.kernel} {task.dtype} "
                      f"{'x'.join(map(str, task.sizes))} {VERBS[phase]} {what}{where}")

    def finished(self, record: Record) -> None:
        self.rows += 1
        if record.status == SKIPPED:
            self.counts["skipped"] += 1
        else:
            self.counts["ok" if record.status == OK else "failed"] += 1
            began = self.in_flight.pop(record.device, None)
            if began is not None:
                start, phase = began
                self.done_in[phase] += 1
                self.seconds_in[phase] += time.monotonic() - start
        self.progress.update(self.bar, advance=1)
        self._refresh()
