"""The sweep: expand (dtype x shape x provider/config) tasks, skip the ones already measured,
run the rest in the worker child, append one row per attempt, then write the winners.

Order: dtype, then shape, then the baselines, then every config of the pruned space; configs
pruned before compiling get a `skipped` row with the reason. Triton caches each compiled
config on disk, so a config compiles once per dtype and shape specialisation, not per shape.

Then the leaders are confirmed: in a fresh worker process (new allocations, nothing left of
the sweep), each shape's `confirm` fastest configs and every baseline are verified and timed
again, and winners are chosen by these times (records.standing says why). Leaders that come
out slower let the next configs into the top `confirm`, which are confirmed in turn.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import inspect
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tritonbench_lab.env import Fingerprint
from tritonbench_lab.errors import TlabError
from tritonbench_lab.records import (
    CONFIRMATION,
    OK,
    SKIPPED,
    TRITON,
    Record,
    is_confirmation,
    parse_config_text,
    resume_key,
    standing,
)
from tritonbench_lab.space import DeviceLimits, Space, config_text
from tritonbench_lab.spec import KernelSpec, Shape, dtype_name, parse_dtype, throughput
from tritonbench_lab.store import ResultsWriter, check_results_file, load_records, results_path
from tritonbench_lab.timing import BenchOptions
from tritonbench_lab.tuned import (
    clear_cache,
    compute_winners,
    configs_path,
    lookup,
    write_winners,
)
from tritonbench_lab.worker import Outcome, Task, Timeouts, Worker


@dataclass
class SweepRequest:
    spec: KernelSpec
    dtypes: list  # torch dtypes
    shapes: list[Shape]
    space: Space
    root: Path
    interpret: bool
    fingerprint: Fingerprint
    limits: DeviceLimits
    free_bytes: int
    fresh: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)
    seed: int = 0
    kernel_modules: tuple[str, ...] = ()
    bench: BenchOptions = field(default_factory=BenchOptions)
    confirm: int = 3  # leaders per shape re-timed in a fresh worker; 0: none


@dataclass
class Planned:
    task: Task
    skip_reason: str = ""  # non-empty: pruned, recorded as `skipped` without running


@dataclass
class SweepResult:
    run_id: str
    results_file: Path
    configs_file: Path
    measured: int
    already_done: int
    records: list[Record]
    winners: list[dict[str, str]]


def memory_estimate(spec: KernelSpec, shape: Shape, dtype) -> int:
    """Device bytes one shape needs: inputs and outputs (the cost model's bytes), a second
    set of outputs (a baseline's), and the float64 reference of the outputs."""
    cost = spec.cost(shape, dtype)
    return 2 * cost.bytes + cost.bytes // dtype.itemsize * 8


def check_request(request: SweepRequest) -> None:
    """Refuse, before anything runs, what cannot work; one line each."""
    spec = request.spec
    if not request.shapes:
        raise TlabError("no shapes to sweep")
    if not request.dtypes:
        raise TlabError("no dtypes to sweep")
    for dtype in request.dtypes:
        if dtype not in spec.dtypes:
            names = ", ".join(dtype_name(d) for d in spec.dtypes)
            raise TlabError(f"{spec.name} does not support {dtype_name(dtype)}: it takes {names}")
        if request.interpret and spec.interpreter_refusal(dtype):
            raise TlabError(spec.interpreter_refusal(dtype))
    for shape in request.shapes:
        spec.check_shape(shape)
        for dtype in request.dtypes:
            need = memory_estimate(spec, shape, dtype)
            if need > request.free_bytes:
                where = "host memory" if request.interpret else "free GPU memory"
                raise TlabError(
                    f"{spec.name} {dtype_name(dtype)} {shape} needs about {need / 1e9:.1f} GB "
                    f"(inputs, outputs, float64 reference); only {request.free_bytes / 1e9:.1f} GB "
                    f"of {where}"
                )
    check_results_file(results_path(request.root, request.fingerprint.gpu_slug, spec.name))


def plan(request: SweepRequest) -> list[Planned]:
    spec = request.spec
    planned = []
    for dtype in request.dtypes:
        name = dtype_name(dtype)
        for shape in request.shapes:
            planned += [Planned(Task(spec.name, b, shape.sizes, name, {}, request.seed))
                        for b in spec.baselines]
            for config in request.space:
                reason = request.space.why_pruned(config, dict(shape.dims), dtype.itemsize,
                                                  request.limits)
                task = Task(spec.name, TRITON, shape.sizes, name, dict(config), request.seed)
                planned.append(Planned(task, reason or ""))
    return planned


def _record(request: SweepRequest, run_id: str, task: Task, outcome: Outcome,
            confirmation: bool = False) -> Record:
    spec = request.spec
    fp = request.fingerprint
    shape = spec.shape(*task.sizes)
    value = None
    if outcome.p50_ms:
        value = throughput(spec.cost(shape, parse_dtype(task.dtype)), spec.metric, outcome.p50_ms)
    timing = request.bench.method(request.interpret) if outcome.p50_ms is not None else ""
    if confirmation:
        timing += CONFIRMATION  # also on a failed confirmation: it stands for the config
    return Record(
        run_id=run_id,
        timestamp=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        kernel=spec.name, provider=task.provider, dtype=task.dtype, shape=str(shape),
        config=config_text(task.config), status=outcome.status, error=outcome.error,
        max_abs_error=outcome.max_abs_error, p20_ms=outcome.p20_ms, p50_ms=outcome.p50_ms,
        p80_ms=outcome.p80_ms, throughput=value, metric=spec.metric,
        compile_s=outcome.compile_s,
        timing=timing,
        seed=task.seed, **asdict(fp),
    )


def confirm_leaders(request: SweepRequest, rows: list[Record], announce: Callable[[int], None],
                    measure: Callable[[Task], Record]) -> None:
    """Per dtype and shape: rounds of leaders_to_confirm until the `confirm` fastest are all
    confirmed, at most 1 + `confirm` rounds (on a very noisy machine a later run goes on)."""
    for dtype in request.dtypes:
        for shape in request.shapes:
            mine = [r for r in rows if (r.dtype, r.shape) == (dtype_name(dtype), str(shape))]
            for _ in range(1 + request.confirm):
                leaders = leaders_to_confirm(mine, request.confirm)
                if not leaders:
                    break
                announce(len(leaders))
                for row in leaders:
                    mine.append(measure(Task(request.spec.name, row.provider, shape.sizes,
                                             row.dtype, parse_config_text(row.config),
                                             request.seed)))


def leaders_to_confirm(rows: list[Record], count: int) -> list[Record]:
    """Of one toolchain's rows for one dtype and shape, those whose config or baseline to
    re-time: the `count` fastest Triton configs and every baseline, unless confirmed already.
    Confirmed leaders that came out slower let others into the top `count`: the next round."""
    if count <= 0:
        return []
    fastest: dict[tuple[str, ...], Record] = {}  # per key; --fresh can leave several rows
    for r in standing(rows):
        if r.status == OK and r.p50_ms and (
                r.key() not in fastest or r.p50_ms < fastest[r.key()].p50_ms):
            fastest[r.key()] = r
    ranked = sorted((r for r in fastest.values() if r.provider == TRITON), key=lambda r: r.p50_ms)
    wanted = ranked[:count] + [r for r in fastest.values() if r.provider != TRITON]
    return [r for r in wanted if not is_confirmation(r)]


def code_version(spec: KernelSpec, tlab_version: str) -> str:
    """tlab's version and a hash of the file the kernel is defined in: after any edit of the
    kernel's module, resume measures again instead of keeping numbers of the old code."""
    source = Path(inspect.getsourcefile(spec.launch) or "")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:10] if source.is_file() else "unknown"
    return f"{tlab_version}+src.{digest}"


def _key(request: SweepRequest, task: Task) -> tuple[str, ...]:
    fp = request.fingerprint
    return resume_key({
        "gpu_slug": fp.gpu_slug, "torch": fp.torch, "triton": fp.triton, "tlab": fp.tlab,
        "kernel": task.kernel,
        "provider": task.provider, "dtype": task.dtype,
        "shape": str(request.spec.shape(*task.sizes)), "config": config_text(task.config),
    })


def run_sweep(request: SweepRequest,
              on_start: Callable[[int], None] = lambda total: None,
              on_row: Callable[[Record], None] = lambda record: None) -> SweepResult:
    """Measure every planned task not measured before (all of them with `fresh`), confirm
    the leaders (module docstring), write the winners."""
    check_request(request)
    spec = request.spec
    # Rows and resume keys carry the kernel's code version in the `tlab` column.
    request = dataclasses.replace(request, fingerprint=dataclasses.replace(
        request.fingerprint, tlab=code_version(spec, request.fingerprint.tlab)))
    slug = request.fingerprint.gpu_slug
    results_file = results_path(request.root, slug, spec.name)
    done = set() if request.fresh else {r.key() for r in load_records(results_file)}
    planned = plan(request)
    todo = [p for p in planned if _key(request, p.task) not in done]
    run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + \
        uuid.uuid4().hex[:6]
    writer = ResultsWriter(results_file)
    records: list[Record] = []
    total = len(todo)
    on_start(total)
    worker = Worker(request.interpret, request.kernel_modules, request.bench)

    def keep(record: Record) -> Record:
        writer.append([record])  # flushed now: a kill loses at most the task in flight
        records.append(record)
        on_row(record)
        return record

    def more(count: int) -> None:
        nonlocal total
        total += count
        on_start(total)

    try:
        for item in todo:
            if item.skip_reason:
                outcome = Outcome(SKIPPED, item.skip_reason)
            else:
                outcome = worker.run(item.task, request.timeouts)
            keep(_record(request, run_id, item.task, outcome))
        if request.confirm:
            worker.stop()  # the leaders are timed again in a fresh process
            # With --fresh only this run's rows compete; otherwise every row of this toolchain.
            fp = request.fingerprint
            toolchain = (fp.gpu_slug, fp.torch, fp.triton, fp.tlab)  # KEY_COLUMNS[:4]
            rows = list(records) if request.fresh else [
                r for r in load_records(results_file) if r.key()[:4] == toolchain]
            confirm_leaders(request, rows, more, lambda task: keep(_record(
                request, run_id, task, worker.run(task, request.timeouts), confirmation=True)))
    finally:
        worker.stop()
    configs_file = configs_path(request.root, slug, spec.name)
    all_rows = load_records(results_file)
    winners = compute_winners(all_rows)
    if winners:
        write_winners(configs_file, winners)
        check_round_trip(spec, slug, Path(request.root) / "configs", winners)
    return SweepResult(run_id, results_file, configs_file, len(records),
                       len(planned) - len(todo), all_rows, winners)


def check_round_trip(spec: KernelSpec, slug: str, directory: Path,
                     winners: list[dict[str, str]]) -> None:
    """Looking up each tuned shape must return exactly the winner just written; anything
    else is a bug in tlab, not in the user's input."""
    clear_cache()
    for w in winners:
        sizes = dict(zip(spec.dims, (int(s) for s in w["shape"].split("x")), strict=True))
        got = lookup(spec.name, w["dtype"], gpu=slug, directory=directory, **sizes)
        if got != parse_config_text(w["config"]):
            raise RuntimeError(f"lookup({spec.name}, {w['dtype']}, {w['shape']}) returned "
                               f"{got}, not the winner {w['config']}")
