"""Spread a sweep's tasks over its devices, one task per device at a time.

A sweep is a sequence of shape pipelines (sweep.py), one per dtype and shape. A pipeline is
a generator: it yields a Batch of tasks, is sent the rows those tasks produced, and yields
the next batch (a search's next proposals, the contenders, the confirmations) until it is
done. Here each device runs in its own thread, taking the next task it may take:

- a batch that is not `pinned` (the first pass over the space) may spread over every
  device: ranking configs does not need them to share a GPU;
- a `pinned` batch (baselines, contenders, confirmations) runs on its pipeline's home
  device only, the first device that took one of its pinned tasks, so that a winner, the
  times it was chosen against and the baselines it is compared with all come from one GPU.

A device with nothing it may take opens the next pipeline, so shapes overlap when there is
more than one device. With a `ready` test (the compile pool's: is this task's kernel
compiled yet?), a device takes the first ready task of the open pipelines, earliest pipeline
first, with up to `lookahead` pipelines open at once (opened as soon as they may be, so that
each hands its first configs to the pool at once): while the pool compiles, one GPU times
each compiled config at every shape instead of waiting at the first. One device needs no
threads: everything runs in the caller's thread (Ctrl-C then reaches the measurement
directly).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

from tritonbench_lab.data.records import Record
from tritonbench_lab.measure.worker import Task


@dataclass
class Batch:
    tasks: list[Task]
    phase: str
    pinned: bool = True


Pipeline = Generator[Batch, list[Record], None]


@dataclass
class _Open:
    """A pipeline between batches: its current batch's tasks still to take and in flight."""

    pipeline: Pipeline
    batch: Batch | None = None
    waiting: deque = field(default_factory=deque)
    in_flight: int = 0
    rows: list[Record] = field(default_factory=list)
    home: object = None


class Scheduler:
    """Run pipelines on devices. `measure(device, task, phase)` measures one task and
    returns its row (or None when the sweep is stopping)."""

    def __init__(self, pipelines: Iterator[Pipeline], devices: list,
                 measure: Callable[[object, Task, str], Record | None],
                 ready: Callable[[Task], bool] | None = None, lookahead: int = 1):
        self._ready = ready
        self._lookahead = lookahead
        self._pipelines = iter(pipelines)
        self._devices = devices
        self._measure = measure
        self._open: list[_Open] = []
        self._exhausted = False
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self.stopping = False

    def run(self) -> None:
        if len(self._devices) == 1:
            self._serve(self._devices[0])
            return
        threads = [threading.Thread(target=self._serve_safely, args=(d,), daemon=True,
                                    name=f"tlab-{getattr(d, 'label', i)}")
                   for i, d in enumerate(self._devices)]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(timeout=0.2)
        except BaseException:
            self.stop()
            raise
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        with self._cond:
            self.stopping = True
            self._cond.notify_all()

    def _serve_safely(self, device) -> None:
        try:
            self._serve(device)
        except BaseException as err:  # re-raised in the caller's thread
            with self._cond:
                self._error = self._error or err
            self.stop()

    def _serve(self, device) -> None:
        while True:
            taken = self._take(device)
            if taken is None:
                return
            state, task = taken
            row = self._measure(device, task, state.batch.phase)
            self._done(state, row)

    def _take(self, device) -> tuple[_Open, Task] | None:
        with self._cond:
            while not self.stopping:
                # With a compile pool, every pipeline that may be open is: a search hands
                # its first proposals to the pool when its pipeline opens.
                while (self._ready is not None and len(self._open) < self._lookahead
                       and self._open_next()):
                    pass
                mine = [s for s in self._open if s.waiting and (
                    not s.batch.pinned or s.home in (None, device))]
                chosen = self._first_ready(mine)
                if chosen is None and mine and (len(self._open) >= self._lookahead
                                                or not self._open_next()):
                    chosen = mine[0], 0  # nothing compiled yet: wait on the next compile
                if chosen is not None:
                    state, index = chosen
                    if state.batch.pinned:
                        state.home = device
                    state.in_flight += 1
                    task = state.waiting[index]
                    del state.waiting[index]
                    return state, task
                if mine or self._open_next():
                    continue
                if not self._open:
                    return None
                self._cond.wait(timeout=1.0)
            return None

    def _first_ready(self, states: list[_Open]) -> tuple[_Open, int] | None:
        """The first ready task of these pipelines (every task, without a `ready` test)."""
        for state in states:
            if self._ready is None:
                return state, 0
            for index, task in enumerate(state.waiting):
                if self._ready(task):
                    return state, index
        return None

    def _open_next(self) -> bool:
        """Open the next pipeline (under the lock); False when there is none."""
        if self._exhausted:
            return False
        try:
            pipeline = next(self._pipelines)
        except StopIteration:
            self._exhausted = True
            return False
        state = _Open(pipeline)
        self._open.append(state)
        self._advance(state, None)
        return True

    def _advance(self, state: _Open, rows: list[Record] | None) -> None:
        """Send the finished batch's rows and take the next non-empty batch (under the
        lock); a finished pipeline is closed."""
        try:
            batch = next(state.pipeline) if rows is None else state.pipeline.send(rows)
            while not batch.tasks:
                batch = state.pipeline.send([])
        except StopIteration:
            self._open.remove(state)
            return
        state.batch, state.rows = batch, []
        state.waiting = deque(batch.tasks)

    def _done(self, state: _Open, row: Record | None) -> None:
        with self._cond:
            state.in_flight -= 1
            if row is not None:
                state.rows.append(row)
            if not state.waiting and state.in_flight == 0 and not self.stopping:
                self._advance(state, state.rows)
            self._cond.notify_all()
