"""The sweep's progress: on a terminal, a live bar with the phase and attempt in flight,
the first pass's configs so far by outcome and an honest ETA; to a log or a pipe, no live
display (it would print only its last state, cut at 80 columns), but plain lines. Either
way, one line per finished dtype and shape (its configs by status and its winner), never
wrapped or cut.

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

from tritonbench_lab.data.records import (
    CONFIRM,
    CONTEND,
    OK,
    SKIPPED,
    SWEEP,
    TRITON,
    Record,
    parse_config_text,
)
from tritonbench_lab.data.tally import ShapeTally
from tritonbench_lab.measure.sweep import SweepEvents
from tritonbench_lab.measure.worker import Task
from tritonbench_lab.shapes import shape_text
from tritonbench_lab.space import config_short

VERBS = {SWEEP: "timing", CONTEND: "contender", CONFIRM: "confirming"}
PHASE_NAMES = {SWEEP: "first pass", CONTEND: "contenders", CONFIRM: "confirmed"}


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _seconds(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


class SweepProgress(SweepEvents):
    """A Rich progress bar driven by the sweep's events, shown live only on a terminal; use
    as a context manager."""

    def __init__(self, kernel: str, console: Console):
        self.kernel = kernel
        self.console = console
        self.live = console.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("eta {task.fields[eta]}"),
            TextColumn("{task.fields[counts]}"), console=console, transient=False)
        self.bar = self.progress.add_task(kernel, total=None, eta="?", counts="")
        self.counts = {"ok": 0, "failed": 0, "skipped": 0}  # the first pass's configs
        self.shape_began: dict[tuple[str, str], float] = {}  # its first attempt's start
        self.queued_in = {p: 0 for p in VERBS}  # tasks to measure, per phase, so far
        self.done_in = {p: 0 for p in VERBS}
        self.seconds_in = {p: 0.0 for p in VERBS}
        self.devices = 1
        self.in_flight: dict[str, tuple[float, str]] = {}  # device -> (start, phase)
        self.rows = 0  # rows written by this run, for the message after an interrupt

    def __enter__(self) -> SweepProgress:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live:
            self.progress.stop()

    def say(self, line: str) -> None:
        """A line as it is, above the live bar if there is one: never wrapped, never cut."""
        self.console.print(line, soft_wrap=True, markup=False, highlight=False)

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
        counts = "configs: " + ", ".join(f"{v} {k}" for k, v in self.counts.items())
        phases = ", ".join(f"{PHASE_NAMES[p]} {self.done_in[p]}/{self.queued_in[p]}"
                           for p in VERBS if self.queued_in[p])
        self.progress.update(self.bar, eta="?" if eta is None else _clock(eta),
                             counts=f"{counts} | {phases}" if phases else counts, **fields)

    def planned(self, to_measure: int, to_skip: int, already_done: int, devices: int = 1) -> None:
        self.devices = max(1, devices)
        self.queued_in[SWEEP] += to_measure
        self.progress.update(self.bar, total=to_measure + to_skip)
        self._refresh()
        if not self.live and to_measure:  # a log's reader hears nothing until a shape ends
            before = f", {already_done} measured before" if already_done else ""
            self.say(f"{self.kernel}: {to_measure} attempt(s) to measure, {to_skip} pruned"
                     f"{before}; a line as each dtype and shape ends")

    def compiling(self, done: int, total: int) -> None:
        self._refresh(description=f"{self.kernel}: compiled {done}/{total} configs in parallel")

    def compiled(self, summary: str) -> None:
        self.say(summary)

    def note(self, sentence: str) -> None:
        self.say(sentence)

    def queued(self, count: int, phase: str) -> None:
        self.queued_in[phase] += count
        self.progress.update(self.bar, total=(self.progress.tasks[0].total or 0) + count)
        self._refresh()

    def started(self, task: Task, phase: str, device: str = "") -> None:
        now = time.monotonic()
        self.in_flight[device] = (now, phase)
        shape = shape_text(task.sizes)
        self.shape_began.setdefault((task.dtype, shape), now)
        what = config_short(task.config) if task.config else task.provider
        where = f" on {device}" if self.devices > 1 else ""
        self._refresh(description=f"{self.kernel} {task.dtype} {shape} {VERBS[phase]} "
                      f"{what}{where}")

    def finished(self, record: Record) -> None:
        self.rows += 1
        if record.provider == TRITON and record.phase == SWEEP:  # a config, not a re-timing
            outcome = record.status if record.status in (OK, SKIPPED) else "failed"
            self.counts[outcome] += 1
        if record.status != SKIPPED:
            began = self.in_flight.pop(record.device, None)
            if began is not None:
                start, phase = began
                self.done_in[phase] += 1
                self.seconds_in[phase] += time.monotonic() - start
        self.progress.update(self.bar, advance=1)
        self._refresh()

    def shape_finished(self, tally: ShapeTally) -> None:
        """'KERNEL DTYPE SHAPE: N configs: A ok, B skipped, winner CONFIG P50 ms, TIME s',
        the time from the shape's first attempt in this run ('measured before' without one)."""
        began = self.shape_began.pop((tally.dtype, tally.shape), None)
        took = _seconds(time.monotonic() - began) if began is not None else "measured before"
        best = tally.winner
        winner = (f"winner {config_short(parse_config_text(best.config))} {best.p50_ms:.4g} ms"
                  f"{tally.winner_note()}" if best is not None else "no correct config")
        self.say(f"{self.kernel} {tally.dtype} {tally.shape}: {tally.counts_text()}, {winner}, "
                 f"{took}")
