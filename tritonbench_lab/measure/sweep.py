"""The sweep: per dtype and shape, time the baselines and the configs of the space, give
the contenders of a short first pass the full budget, confirm the leaders, write the winners.

Per dtype and shape (a pipeline, schedule.py), on one or more devices (devices.py):
1. the baselines, with the full budget (`--rep-ms`), on the shape's home device;
2. configs pruned before compiling get a `skipped` row with the reason;
3. the first pass: every config of the space (or those a `--search` strategy proposes, in
   batches, search.py), verified and timed with the first pass's budget (`--first-rep-ms`;
   without one, the full budget), spread over every device;
4. the contenders (contenders.py): the configs whose first-pass time could plausibly beat
   the leader's, timed again with the full budget on the home device (phase `contend`),
   unless the confirmation will time them all anyway (no more than `confirm` of them);
5. the confirmation: in a fresh worker process on the home device (new allocations, nothing
   left of the sweep), the `confirm` fastest configs and every baseline are verified and
   timed again, with the host time of a call (timing.host_ms), and winners are chosen by
   these times (records.standing says why). Leaders that come out slower let the next
   configs into the top `confirm`, for at most `confirm` more rounds; then the configs
   that other GPUs' configs files hold as winners at the shape (carried_winners). A shape
   is confirmed when this run measured it, or when its newest confirmation was cut short
   or lost (a kill while confirming, every config's confirmation crashed:
   contenders.confirmation_unfinished); a finished sweep run again measures nothing. A
   shape is confirmed whole, in one run: earlier runs' confirmations at it are set aside
   and their configs confirmed again, so that the winner's run holds every baseline it is
   compared with (winners.py, rule 5).

On a GPU the configs are compiled in a pool of processes (precompile.CompilePool), each
config's jobs at every shape after its first, and each task is timed once its own compile is
done; meanwhile the device times whatever is compiled, at up to LOOKAHEAD shapes at once
(schedule.py), so compiling overlaps timing and the worker loads every kernel from cache.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.data.layout import INTERPRETER_SLUG
from tritonbench_lab.data.records import (
    CONFIRM,
    CONTEND,
    OK,
    SKIPPED,
    SWEEP,
    TRITON,
    Record,
    Winner,
    parse_config_text,
    standing,
)
from tritonbench_lab.data.store import append_rows, load_records, load_winners, write_table
from tritonbench_lab.data.tally import ShapeTally, tally
from tritonbench_lab.data.winners import shape_results, winners_from_files
from tritonbench_lab.measure import children
from tritonbench_lab.measure.cases import CASES_KEPT
from tritonbench_lab.measure.plan import (
    Planned,
    SweepRequest,
    check_request,
    is_same_toolchain,
    job_footprint,
    plan,
    pruned_key,
    sweep_pool_budget,
    task_key,
)
from tritonbench_lab.measure.precompile import CompilePool, Job, config_major
from tritonbench_lab.measure.raydevices import make_devices
from tritonbench_lab.measure.rows import make_record, new_run_id
from tritonbench_lab.measure.schedule import Batch, Pipeline, Scheduler
from tritonbench_lab.measure.worker import Outcome, Task
from tritonbench_lab.search.contenders import (
    confirmation_unfinished,
    contended,
    contenders,
    leaders_to_confirm,
)
from tritonbench_lab.search.prior import prior_configs
from tritonbench_lab.search.strategies import SearchRequest, make_search
from tritonbench_lab.space import config_text
from tritonbench_lab.tuned import check_round_trip

LOOKAHEAD = CASES_KEPT  # shapes open at once while the pool compiles: the worker keeps them


class SweepEvents:
    """What a sweep reports while it runs (the CLI draws a progress bar from these). Called
    from the devices' threads when there are several: implementations must be thread-safe
    (the sweep calls them under one lock)."""

    def planned(self, to_measure: int, to_skip: int, already_done: int, devices: int) -> None:
        """The tasks known at the start: measured ones, pruned ones (instant), earlier ones."""

    def queued(self, count: int, phase: str) -> None:
        """`count` more tasks to measure: a search's proposals, contenders, confirmations."""

    def started(self, task: Task, phase: str, device: str) -> None:
        """A task went to a device's worker."""

    def finished(self, record: Record) -> None:
        """Its row was written."""

    def compiling(self, done: int, total: int) -> None:
        """The compile pool has compiled `done` of the `total` configs given to it so far."""

    def compiled(self, summary: str) -> None:
        """The compile pool finished: what it did, in a sentence."""

    def note(self, sentence: str) -> None:
        """Something to say once, in a sentence (where a prior search starts)."""

    def shape_finished(self, tally: ShapeTally) -> None:
        """A dtype and shape is done: its configs' statuses, first errors and winner."""


@dataclass
class SweepResult:
    run_id: str
    results_file: Path
    configs_file: Path
    measured: int
    already_done: int  # measured by an earlier run, not again (none with --fresh)
    records: list[Record]  # every row of the results file after the run
    winners: list[Winner]
    shapes: list[ShapeTally] = dataclasses.field(default_factory=list)  # in the plan's order
    pruned_before: int = 0  # configs pruned alike by an earlier run, not recorded again


class _Run:
    """One invocation's state: the rows so far per shape, the writer, the compile pool."""

    def __init__(self, request: SweepRequest, events: SweepEvents, rows: list[Record]):
        self.request = request
        self.events = events
        self.run_id = new_run_id()
        self.records: list[Record] = []  # written by this run
        existing = [] if request.fresh else rows  # what resume counts as done
        self.done = {r.key() for r in existing}
        self.pruned = {r.pruned_key() for r in rows if r.status == SKIPPED}  # even --fresh
        # With --fresh only this run's rows compete; otherwise every row of this toolchain.
        self.rows: dict[tuple[str, str], list[Record]] = {}
        # --fresh: configs confirmed by earlier runs of this toolchain still stand in the file
        # with their old times; each is confirmed again, so no stale one wins over this run's.
        self.earlier_confirmed: dict[tuple[str, str], list[str]] = {}
        if request.fresh:
            for r in standing([r for r in rows if is_same_toolchain(request, r)]):
                if r.provider == TRITON and r.confirmed and r.status == OK:
                    self.earlier_confirmed.setdefault((r.dtype, r.shape), []).append(r.config)
        for r in existing:
            if is_same_toolchain(request, r):
                self.rows.setdefault((r.dtype, r.shape), []).append(r)
        self.measured_now: set[tuple[str, str]] = set()
        self.history = rows  # every row of the results file, for --search prior
        self.pool: CompilePool | None = None
        self.tallies: dict[tuple[str, str], ShapeTally] = {}  # per finished dtype and shape
        self.lock = threading.Lock()
        self.stopping = False

    @functools.cached_property
    def history_results(self) -> list:
        """The results file's rows as ShapeResults (--search prior's portfolio)."""
        return shape_results(self.history)

    def is_done(self, task: Task) -> bool:
        return task_key(self.request, task) in self.done

    def recorded(self, p: Planned) -> bool:
        """Measured by this toolchain and source, or pruned alike by any (plan.pruned_key)."""
        return self.is_done(p.task) or pruned_key(self.request, p) in self.pruned

    def keep(self, record: Record) -> Record:
        with self.lock:
            # Flushed now: a kill loses at most the tasks in flight.
            append_rows(self.request.results_file, [record])
            self.records.append(record)
            self.rows.setdefault((record.dtype, record.shape), []).append(record)
            if record.status != SKIPPED:
                self.measured_now.add((record.dtype, record.shape))
            self.events.finished(record)
        return record

    def set_aside_confirmations(self, key: tuple[str, str]) -> None:
        """Before this run confirms a shape: earlier runs' confirmations there no longer
        count (their configs are confirmed again, `earlier_confirmed`), so that the whole
        confirmation, baselines included, comes from this run."""
        with self.lock:
            rows = self.rows.get(key, [])
            earlier = [r for r in rows if r.confirmed and r.run_id != self.run_id]
            again = self.earlier_confirmed.setdefault(key, [])
            for r in standing(earlier):
                if r.provider == TRITON and r.status == OK and r.config not in again:
                    again.append(r.config)
            self.rows[key] = [r for r in rows if not (r.confirmed and r.run_id != self.run_id)]

    def queued(self, count: int, phase: str) -> None:
        if count:
            with self.lock:
                self.events.queued(count, phase)

    def ready(self, task: Task) -> bool:
        """Whether the task can be timed without waiting on the compile pool."""
        return self.pool is None or task.provider != TRITON or self.pool.ready(Job.of(task).key)

    def measure(self, device, task: Task, phase: str) -> Record | None:
        with self.lock:
            self.events.started(task, phase, device.label)
        ahead = None
        if self.pool is not None and phase == SWEEP and task.provider == TRITON:
            ahead = self.pool.wait(Job.of(task).key)
        outcome = device.run(task, self.request.timeouts, fresh=phase == CONFIRM)
        if self.stopping:
            return None  # the sweep was interrupted: the worker was killed, not the task
        if ahead is not None and outcome.compile_s is not None:
            outcome = dataclasses.replace(outcome, compile_s=outcome.compile_s + ahead)
        return self.keep(make_record(self.request, self.run_id, task, outcome, phase,
                                     device.label))


def shape_pipeline(run: _Run, dtype: str, shape, items: list[Planned]) -> Pipeline:
    """The batches of one dtype and shape (module docstring, steps 1-5)."""
    request = run.request
    key = (dtype, str(shape))

    def task(config: dict, phase: str, provider: str = TRITON) -> Task:
        times = [r.p50_ms for r in run.rows.get(key, []) if r.status == OK and r.p50_ms]
        return Task(request.spec.name, provider, shape.sizes, dtype, dict(config), request.seed,
                    request.bench_for(phase, provider, min(times, default=None)),
                    host_time=phase == CONFIRM)

    for p in items:
        if p.skip_reason and not run.recorded(p):
            run.keep(make_record(request, run.run_id, p.task, Outcome(SKIPPED, p.skip_reason)))
    baselines = Batch([task({}, SWEEP, p.task.provider) for p in items
                       if p.task.provider != TRITON and not run.is_done(p.task)], SWEEP)
    kept = [p.task.config for p in items if p.task.provider == TRITON and not p.skip_reason]
    yield from first_pass(run, key, kept, lambda c: task(c, SWEEP), baselines)
    only = None  # the configs that may be confirmed, when the contend pass was skipped
    if request.first_bench is not None:
        mine = run.rows.get(key, [])
        picks = contenders(mine, always=max(1, request.confirm))
        if request.confirm >= len(picks) and not contended(mine):
            # The confirmation times every contender in any case, so their full-budget
            # times here would decide nothing (and cost ~0.25 s each).
            only = {r.config for r in picks}
        else:
            picks = [r for r in picks if r.config not in contended(mine)]
            run.queued(len(picks), CONTEND)
            yield Batch([task(parse_config_text(r.config), CONTEND) for r in picks], CONTEND)
    yield from confirmation(run, key, task, only, {config_text(c) for c in kept})


def confirmation(run: _Run, key: tuple[str, str], task_of, only: set[str] | None,
                 kept: set[str]) -> Pipeline:
    """Step 5, when this run measured the shape or its newest confirmation was cut short:
    the leaders and every baseline (of this sweep's), in rounds, then the configs that
    earlier runs confirmed and this one has not, and those other GPUs won at the shape (of
    `kept`, the shape's configs here: carried_winners)."""
    request = run.request
    wanted = set(request.baseline_names)
    if not request.confirm or (key not in run.measured_now and not confirmation_unfinished(
            run.rows.get(key, []), request.confirm, wanted)):
        return
    run.set_aside_confirmations(key)
    for _ in range(1 + request.confirm):
        rows = [r for r in run.rows.get(key, []) if r.provider == TRITON or r.provider in wanted]
        leaders = leaders_to_confirm(rows, request.confirm, only)
        if not leaders:
            break
        run.queued(len(leaders), CONFIRM)
        yield Batch([task_of(parse_config_text(r.config), CONFIRM, r.provider)
                     for r in leaders], CONFIRM)
    mine = {r.config for r in run.rows.get(key, []) if r.provider == TRITON and r.confirmed}
    more = [c for c in run.earlier_confirmed.get(key, []) if c not in mine]
    more += [c for c in carried_winners(run.request, *key, kept) if c not in mine | set(more)]
    if more:
        run.queued(len(more), CONFIRM)
        yield Batch([task_of(parse_config_text(c), CONFIRM) for c in more], CONFIRM)


def carried_winners(request: SweepRequest, dtype: str, shape: str, kept: set[str]) -> list[str]:
    """The configs that other GPUs' configs files under the root hold as winners at this
    kernel, dtype and shape, of `kept` (completed to the space as it is now). A sweep
    confirms them beside its own leaders: where one GPU's short first pass missed its best
    config and another's found it (`tlab portability` shows such shapes: data/portability
    BEATEN), sweeping that shape again settles it, for one confirmation per GPU."""
    found: list[str] = []
    space, own = request.space, {request.fingerprint.gpu_slug, INTERPRETER_SLUG}
    for path in request.layout.config_files([request.spec.name]):
        if path.parent.name in own:
            continue
        for w in load_winners(path):
            if (w.kernel, w.dtype, w.shape) == (request.spec.name, dtype, shape):
                text = config_text(space.complete(parse_config_text(w.config)))
                if text in kept and text not in found:
                    found.append(text)
    return found


def first_pass(run: _Run, key: tuple[str, str], configs: list[dict], task_of,
               baselines: Batch) -> Pipeline:
    """Steps 1 and 3: the baselines, then every config at once (exhaustive, compiled ahead
    at the start), or a search strategy's batches (search_pass)."""
    if run.request.search == "exhaustive":
        yield baselines
        yield Batch([t for t in map(task_of, configs) if not run.is_done(t)], SWEEP, pinned=False)
        return
    yield from search_pass(run, key, configs, task_of, baselines)


def search_pass(run: _Run, key: tuple[str, str], configs: list[dict], task_of,
                baselines: Batch) -> Pipeline:
    """A search strategy's batches, each compiled in the pool as it is proposed (the first
    before the baselines are timed, so that both go on at once), ahead of the rest of the
    shape's space, which the pool compiles in the background."""
    request = run.request
    search = _search_of(run, key, configs)
    # The idle pool compiles the rest of the shape's space for later proposals; not for a
    # capped search (`:N`, N configs at most), whose timing worker those compiles slowed
    # (prior:12 over held-out matmul shapes ran measurably longer with them).
    if run.pool is not None and request.search_budget is None:
        run.pool.submit((Job.of(t) for t in map(task_of, configs) if not run.is_done(t)),
                        background=True)
    for _ in range(len(configs) + 1):  # a search proposes each config at most once
        proposals = search.propose(_first_pass_times(run, key))
        if not proposals:
            break
        todo = [t for t in map(task_of, proposals) if not run.is_done(t)]
        if run.pool is not None:
            run.pool.submit(Job.of(t) for t in todo)
        run.queued(len(todo), SWEEP)
        if baselines is not None:
            yield baselines
            baselines = None
        yield Batch(todo, SWEEP, pinned=False)
    if baselines is not None:  # the search proposed nothing (all timed before)
        yield baselines


def _search_of(run: _Run, key: tuple[str, str], configs: list[dict]):
    """The shape's search strategy (`--search`), told the untuned config there (of `configs`,
    those the space leaves at the shape, the one nearest the default: Space.default_at); a
    prior search also where it starts, which it says once (events.note)."""
    request = run.request
    default = request.space.nearest_default(configs)  # the configs left at the shape
    prior = ()
    if request.search == "prior":
        found = prior_configs(request, run.history_results, *key, configs)
        with run.lock:
            run.events.note(found.sentence(request.spec.name, *key))
        prior = found.configs
    return make_search(request.search, SearchRequest(
        tuple(configs), default if default in configs else None, request.search_budget,
        request.seed, prior))


def _first_pass_times(run: _Run, key: tuple[str, str]) -> dict[str, float | None]:
    """What a search sees of the shape's first pass so far: each config's fastest time
    (None where it failed)."""
    measured: dict[str, float | None] = {}
    for r in run.rows.get(key, []):
        if r.provider == TRITON and r.phase == SWEEP and r.status != SKIPPED:
            p50 = r.p50_ms if r.status == OK else None
            old = measured.get(r.config)
            measured[r.config] = p50 if old is None else min(old, p50 or old)
    return measured


def pipelines(run: _Run, planned: list[Planned]) -> Iterator[Pipeline]:
    for (dtype, sizes), items in by_shape(planned).items():
        shape = run.request.spec.shape(*sizes)
        yield tallied(run, dtype, shape, items, shape_pipeline(run, dtype, shape, items))


def by_shape(planned: list[Planned]) -> dict[tuple[str, tuple[int, ...]], list[Planned]]:
    found: dict[tuple[str, tuple[int, ...]], list[Planned]] = {}
    for p in planned:
        found.setdefault((p.task.dtype, p.task.sizes), []).append(p)
    return found


def tallied(run: _Run, dtype: str, shape, items: list[Planned], pipeline: Pipeline) -> Pipeline:
    """The shape's pipeline, then its tally (data/tally.py), kept and reported."""
    yield from pipeline
    configs = [p for p in items if p.task.provider == TRITON]
    key = (dtype, str(shape))
    with run.lock:
        found = tally(run.request.spec.name, dtype, key[1], run.rows.get(key, []),
                      len(configs), sum(bool(p.skip_reason) for p in configs),
                      {config_text(p.task.config) for p in configs})
        run.tallies[key] = found
        run.events.shape_finished(found)


def run_sweep(request: SweepRequest, events: SweepEvents | None = None) -> SweepResult:
    """Measure every planned task not measured before (all of them with `fresh`), the
    contenders, the confirmations (module docstring), then write the winners."""
    events = events or SweepEvents()
    check_request(request)
    results_file = request.results_file
    run = _Run(request, events, load_records(results_file))
    planned = plan(request)
    todo = [p for p in planned if not run.recorded(p)]
    skips = sum(bool(p.skip_reason) for p in todo)
    exhaustive = request.search == "exhaustive"
    to_measure = [p.task for p in todo if not p.skip_reason and (
        exhaustive or p.task.provider != TRITON)]
    labels = list(request.devices) or [("cpu" if request.interpret else "cuda") + ":0"]
    events.planned(len(to_measure), skips, len(planned) - len(todo), len(labels))
    if not todo:
        children.stop_early()  # no child will start: its server's imports only cost time
    devices = make_devices(labels, interpret=request.interpret,
                           kernel_modules=request.kernel_modules, bench=request.bench,
                           backend=request.backend, address=request.ray_address)
    # On a GPU machine, starting a worker takes seconds: start them before the pool's
    # processes, so that the baselines can start at once.
    if todo and not request.interpret:
        for device in devices:
            device.prepare(confirm=request.confirm > 0)
    run.pool = start_pool(request, [t for t in to_measure if t.provider == TRITON], events) \
        if todo else None
    scheduler = Scheduler(pipelines(run, planned), devices, run.measure, ready=run.ready,
                          lookahead=LOOKAHEAD if run.pool is not None else 1)
    try:
        try:
            scheduler.run()
        except BaseException:
            run.stopping = True
            scheduler.stop()
            raise
        finally:
            if run.pool is not None:
                run.pool.close()
                events.compiled(run.pool.result.summary(run.pool.processes))
        # Every row is in: the workers give their CUDA contexts back (about a second) while
        # the winners are picked and written.
        for device in devices:
            device.ask_to_stop()
        all_rows, winners = winners_from_files(results_file)
        if winners:
            write_table(request.configs_file, winners, Winner)
            check_round_trip(request.spec, request.fingerprint.gpu_slug,
                             request.layout.configs, winners)
    finally:
        for device in devices:
            device.stop()
    shapes = [run.tallies[(d, str(request.spec.shape(*sizes)))] for d, sizes in by_shape(planned)]
    pruned_before = sum(bool(p.skip_reason) and run.recorded(p) for p in planned)
    return SweepResult(run.run_id, results_file, request.configs_file, len(run.records),
                       len(planned) - len(todo) - pruned_before, all_rows, winners, shapes,
                       pruned_before)


def start_pool(request: SweepRequest, tasks: list[Task],
               events: SweepEvents) -> CompilePool | None:
    """On a GPU, a compile pool given these Triton tasks' configs in timing order
    (precompile.py); a search's later batches are given to it as they come. None in the
    interpreter (it compiles nothing) or with fewer than 2 jobs (`--jobs`, by default the
    cores less one per device: the pool runs while the devices' workers time)."""
    if request.interpret or request.jobs < 2:
        return None
    pool = CompilePool(request.jobs, kernel_modules=request.kernel_modules,
                       stall_s=request.timeouts.first_call_s, progress=events.compiling,
                       memory_budget=sweep_pool_budget(request), footprint_of=job_footprint)
    pool.submit(config_major(Job.of(t) for t in tasks))
    return pool
