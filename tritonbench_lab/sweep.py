"""The sweep: run every planned task not measured before in the worker child, append one row
per attempt, confirm the leaders, write the winners.

Order (plan.py): dtype, then shape, then the baselines, then every config of the space;
configs pruned before compiling get a `skipped` row with the reason. Triton caches each
compiled config on disk, so a config compiles once per dtype and shape specialisation.

On a GPU the configs to measure are first compiled in a pool of processes (precompile.py),
so that the worker loads them from Triton's cache instead of compiling one after another.

Then the leaders are confirmed: in a fresh worker process (new allocations, nothing left of
the sweep), each shape's `confirm` fastest configs and every baseline are verified and timed
again, and winners are chosen by these times (records.standing says why). Leaders that come
out slower let the next configs into the top `confirm`, which are confirmed in turn, for at
most `confirm` more rounds. A shape is confirmed when this run measured it, or when its
confirmation never finished (its baselines have none): a finished sweep run again measures
nothing.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from tritonbench_lab.plan import (
    SweepRequest,
    check_request,
    is_same_toolchain,
    plan,
    task_key,
)
from tritonbench_lab.precompile import Job, Precompiled, pin_triton_cache_dir, precompile
from tritonbench_lab.records import (
    CONFIRM,
    OK,
    SKIPPED,
    SWEEP,
    TRITON,
    Record,
    Winner,
    parse_config_text,
    standing,
)
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.space import config_text
from tritonbench_lab.spec import dtype_name, parse_dtype, throughput
from tritonbench_lab.store import append_rows, load_records, write_table
from tritonbench_lab.tuned import clear_cache, lookup
from tritonbench_lab.winners import pick_winners
from tritonbench_lab.worker import Outcome, Task, Worker


class SweepEvents:
    """What a sweep reports while it runs (the CLI draws a progress bar from these)."""

    def planned(self, to_measure: int, to_skip: int, already_done: int) -> None:
        """The tasks of this run: measured ones, pruned ones (instant), and earlier ones."""

    def started(self, task: Task, phase: str) -> None:
        """A task went to the worker."""

    def finished(self, record: Record) -> None:
        """Its row was written."""

    def compiling(self, done: int, total: int) -> None:
        """The compile pool has compiled `done` of `total` configs (precompile.py)."""

    def compiled(self, summary: str) -> None:
        """The compile pool finished: what it did, in a sentence."""

    def confirming(self, count: int) -> None:
        """`count` more tasks: leaders and baselines to time again in a fresh worker."""


@dataclass
class SweepResult:
    run_id: str
    results_file: Path
    configs_file: Path
    measured: int
    already_done: int
    records: list[Record]  # every row of the results file after the run
    winners: list[Winner]


def new_run_id() -> str:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]


def make_record(request: SweepRequest, run_id: str, task: Task, outcome: Outcome,
                phase: str = SWEEP) -> Record:
    spec = request.spec
    shape = spec.shape(*task.sizes)
    timed = outcome.p50_ms is not None
    value = throughput(spec.cost(shape, parse_dtype(task.dtype)), spec.metric,
                       outcome.p50_ms) if timed else None
    timing = request.bench_for(phase).columns(request.interpret) if timed else {
        "method": "", "warmup_ms": None, "rep_ms": None}
    return Record(
        run_id=run_id,
        timestamp=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        kernel=spec.name, provider=task.provider, dtype=task.dtype, shape=str(shape),
        config=config_text(task.config), status=outcome.status, error=outcome.error,
        max_abs_error=outcome.max_abs_error, p20_ms=outcome.p20_ms, p50_ms=outcome.p50_ms,
        p80_ms=outcome.p80_ms, throughput=value, metric=spec.metric,
        compile_s=outcome.compile_s, phase=phase, **timing, seed=task.seed,
        **asdict(request.fingerprint), source=request.source,
    )


def leaders_to_confirm(rows: list[Record], count: int) -> list[Record]:
    """Of one toolchain's rows for one dtype and shape, those whose config or baseline to
    re-time: the `count` fastest Triton configs and every baseline, unless confirmed already
    (Triton configs first: a round cut short leaves its baselines unconfirmed, which is how
    a later run knows to confirm the shape). Confirmed leaders that came out slower let
    others into the top `count`: the next round."""
    if count <= 0:
        return []
    fastest: dict[tuple[str, ...], Record] = {}  # per key; --fresh can leave several rows
    for r in standing(rows):
        if r.status == OK and r.p50_ms and (
                r.key() not in fastest or r.p50_ms < fastest[r.key()].p50_ms):
            fastest[r.key()] = r
    ranked = sorted((r for r in fastest.values() if r.provider == TRITON), key=lambda r: r.p50_ms)
    wanted = ranked[:count] + [r for r in fastest.values() if r.provider != TRITON]
    return [r for r in wanted if not r.confirmed]


def confirmation_unfinished(rows: list[Record]) -> bool:
    """True when a shape's rows have no confirmations, or a baseline timed ok has none."""
    confirmed = {r.provider for r in rows if r.confirmed}
    timed = {r.provider for r in rows if r.status == OK and r.p50_ms}
    return not confirmed or any(p != TRITON and p not in confirmed for p in timed)


def confirm_leaders(request: SweepRequest, rows: list[Record], measured_now: set,
                    events: SweepEvents, measure: Callable[[Task], Record]) -> None:
    """Per dtype and shape that needs it (module docstring): rounds of leaders_to_confirm
    until the `confirm` fastest are all confirmed, at most 1 + `confirm` rounds."""
    for dtype in request.dtypes:
        for shape in request.shapes:
            key = (dtype_name(dtype), str(shape))
            mine = [r for r in rows if (r.dtype, r.shape) == key]
            if key not in measured_now and not confirmation_unfinished(mine):
                continue
            for _ in range(1 + request.confirm):
                leaders = leaders_to_confirm(mine, request.confirm)
                if not leaders:
                    break
                events.confirming(len(leaders))
                for row in leaders:
                    mine.append(measure(Task(request.spec.name, row.provider, shape.sizes,
                                             row.dtype, parse_config_text(row.config),
                                             request.seed)))


def run_sweep(request: SweepRequest, events: SweepEvents | None = None) -> SweepResult:
    """Measure every planned task not measured before (all of them with `fresh`), confirm
    the leaders (module docstring), write the winners."""
    events = events or SweepEvents()
    check_request(request)
    results_file = request.results_file
    done = set() if request.fresh else {r.key() for r in load_records(results_file)}
    planned = plan(request)
    todo = [p for p in planned if task_key(request, p.task) not in done]
    skips = sum(bool(p.skip_reason) for p in todo)
    events.planned(len(todo) - skips, skips, len(planned) - len(todo))
    run_id = new_run_id()
    records: list[Record] = []
    compiled = compile_ahead(request, [p.task for p in todo if not p.skip_reason], events).seconds
    worker = Worker(request.interpret, request.kernel_modules, request.bench)

    def keep(record: Record) -> Record:
        append_rows(results_file, [record])  # flushed now: a kill loses at most the task in flight
        records.append(record)
        events.finished(record)
        return record

    def measure(task: Task, phase: str) -> Record:
        events.started(task, phase)
        outcome = worker.run(task, request.timeouts)
        ahead = compiled.pop(Job.of(task).key, None) if phase == SWEEP else None
        if ahead is not None and outcome.compile_s is not None:
            outcome = dataclasses.replace(outcome, compile_s=outcome.compile_s + ahead)
        return keep(make_record(request, run_id, task, outcome, phase))

    try:
        for item in todo:
            if item.skip_reason:
                keep(make_record(request, run_id, item.task, Outcome(SKIPPED, item.skip_reason)))
            else:
                measure(item.task, SWEEP)
        if request.confirm:
            worker.stop()  # the leaders are timed again in a fresh process, with their budget
            worker = Worker(request.interpret, request.kernel_modules, request.bench_for(CONFIRM))
            # With --fresh only this run's rows compete; otherwise every row of this toolchain.
            rows = list(records) if request.fresh else [
                r for r in load_records(results_file) if is_same_toolchain(request, r)]
            measured_now = {(r.dtype, r.shape) for r in records if r.status != SKIPPED}
            confirm_leaders(request, rows, measured_now, events,
                            lambda task: measure(task, CONFIRM))
    finally:
        worker.stop()
    all_rows = load_records(results_file)
    winners = pick_winners(all_rows)
    if winners:
        write_table(request.configs_file, winners, Winner)
        check_round_trip(request, winners)
    return SweepResult(run_id, results_file, request.configs_file, len(records),
                       len(planned) - len(todo), all_rows, winners)


def compile_ahead(request: SweepRequest, tasks: list[Task], events: SweepEvents) -> Precompiled:
    """On a GPU, compile the Triton configs of these tasks in a pool first (precompile.py).
    Nothing in the interpreter or with jobs < 2."""
    jobs = [Job.of(t) for t in tasks if t.provider == TRITON]
    if request.interpret or request.jobs < 2 or not jobs:
        return Precompiled()
    pin_triton_cache_dir()
    result = precompile(jobs, processes=request.jobs, kernel_modules=request.kernel_modules,
                        stall_s=request.timeouts.first_call_s, progress=events.compiling)
    events.compiled(result.summary(min(request.jobs, result.jobs)))
    return result


def check_round_trip(request: SweepRequest, winners: list[Winner]) -> None:
    """Looking up each tuned shape must return exactly the winner just written; anything
    else is a bug in tlab, not in the user's input."""
    clear_cache()
    spec, slug = request.spec, request.fingerprint.gpu_slug
    for w in winners:
        shape = spec.shape(*shape_sizes(w.shape))
        got = lookup(spec.name, w.dtype, gpu=slug, directory=request.layout.configs, dims=spec.dims,
                     **dict(shape.dims))
        if got != parse_config_text(w.config):
            raise RuntimeError(f"lookup({spec.name}, {w.dtype}, {w.shape}) returned "
                               f"{got}, not the winner {w.config}")

