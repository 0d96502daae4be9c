"""The row a measured attempt becomes: a worker's Outcome for a task of a sweep, with the
request's toolchain fingerprint, the clocks that judged it and the kernel's throughput at that
time, as a results Record; and the run id that groups one run's rows. Any number that is not a
measurement (NaN, infinite, negative, a zero time) turns the attempt into a crash row without
numbers, so no such number reaches a file.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import asdict

from tritonbench_lab.data.records import CRASH, SWEEP, Record, not_a_measurement
from tritonbench_lab.measure.plan import SweepRequest
from tritonbench_lab.measure.worker import Outcome, Task
from tritonbench_lab.space import config_text
from tritonbench_lab.spec import parse_dtype, throughput


def new_run_id() -> str:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]


def _numbers(outcome: Outcome) -> dict[str, float | None]:
    clocks = outcome.timed
    return {"max_abs_error": outcome.max_abs_error, "p20_ms": outcome.p20_ms,
            "p50_ms": outcome.p50_ms, "p80_ms": outcome.p80_ms, "compile_s": outcome.compile_s,
            "host_ms": outcome.host_ms, "events_p50_ms": clocks and clocks.events_p50,
            "graph_p50_ms": clocks and clocks.graph_p50}


def measured_only(outcome: Outcome) -> Outcome:
    """The outcome, or where a number of it is not a measurement (a timer's bug: NaN, a
    negative or zero time; records.not_a_measurement) a crash saying so, without any
    number: the attempt stays a row, and no such number reaches a file."""
    for name, value in _numbers(outcome).items():
        if value is not None and (not_a_measurement(name, value)
                                  or (name.endswith("_ms") and value == 0)):
            return Outcome(CRASH, f"{name} came out as {value!r}, not a time (a bug in the "
                           "timing): no number of this attempt was kept")
    return outcome


def make_record(request: SweepRequest, run_id: str, task: Task, outcome: Outcome,
                phase: str = SWEEP, device: str = "") -> Record:
    outcome = measured_only(outcome)
    spec = request.spec
    shape = spec.shape(*task.sizes)
    timed = outcome.p50_ms is not None
    value = throughput(spec.cost(shape, parse_dtype(task.dtype)), spec.metric,
                       outcome.p50_ms) if timed else None
    bench = task.bench or request.bench_for(phase, task.provider)
    timing = bench.columns(request.interpret) if timed else {
        "method": "", "warmup_ms": None, "rep_ms": None}
    clocks = outcome.timed
    if clocks is not None:  # which clock judged the row, and each clock's median
        timing.update(method=clocks.method, events_p50_ms=clocks.events_p50,
                      graph_p50_ms=clocks.graph_p50, disagree=clocks.disagree)
    return Record(
        run_id=run_id,
        timestamp=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        kernel=spec.name, provider=task.provider, dtype=task.dtype, shape=str(shape),
        config=config_text(task.config), status=outcome.status, error=outcome.error,
        max_abs_error=outcome.max_abs_error, p20_ms=outcome.p20_ms, p50_ms=outcome.p50_ms,
        p80_ms=outcome.p80_ms, throughput=value, metric=spec.metric,
        compile_s=outcome.compile_s, phase=phase, **timing, seed=task.seed,
        **asdict(request.fingerprint), source=request.source, device=device,
        host_ms=outcome.host_ms,
    )
