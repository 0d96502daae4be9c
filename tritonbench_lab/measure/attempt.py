"""One attempt at a measurement task, as the worker's child makes it (worker.py runs it in
a child process, so that a crash or a hang costs one task).

An attempt: make the task's case current (its inputs and float64 reference, kept between
tasks for the last few shapes, cases.py, so a reference is computed once per shape, not once
per config) -> the first call into NaN-poisoned outputs, each inside a guard band
(verify.guard; this call compiles, and its wall time is `compile_s`) -> a write outside an
output, or a result that misses the reference, is a wrong result -> time the correct ones
(timing.py), and the host time of a call where the task asks. Baselines allocate their own
outputs, so they have no guard band. What a task asks (Task) and what it comes to
(Outcome) are what the worker and its child send each other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tritonbench_lab.data.records import (
    COMPILE_ERROR,
    CRASH,
    CUT,
    OK,
    OUT_OF_RESOURCES,
    TRITON,
    WRONG_RESULT,
)
from tritonbench_lab.measure import children
from tritonbench_lab.measure.cases import KeptCases, memory_estimate
from tritonbench_lab.measure.timing import BOTH_CLOCKS_BELOW_MS, BenchOptions, Timed, host_ms, time_call


@dataclass(frozen=True)
class Task:
    kernel: str
    provider: str  # TRITON or a baseline name
    sizes: tuple[int, ...]
    dtype: str
    config: dict[str, int] = field(default_factory=dict)
    seed: int = 0
    bench: BenchOptions | None = None  # this task's do_bench budget; None: the worker's
    host_time: bool = False  # also time the host's part of a call (confirmations, on a GPU)


@dataclass
class Outcome:
    status: str
    error: str = ""
    max_abs_error: float | None = None
    p20_ms: float | None = None
    p50_ms: float | None = None
    p80_ms: float | None = None
    compile_s: float | None = None
    timed: Timed | None = None  # the clocks' details (method, each median) when timed
    host_ms: float | None = None  # timing.host_ms, when the task asked for it


def classify(err: BaseException) -> str:
    """Status for an exception raised by a first call."""
    names = {cls.__name__ for cls in type(err).__mro__}
    text = str(err)
    if "OutOfResources" in names:
        return OUT_OF_RESOURCES
    # A fault on the device (its message also mentions compiling, with TORCH_USE_CUDA_DSA):
    # the CUDA context is gone, so this is a crash and the worker must be replaced.
    if "AcceleratorError" in names or "CUDA error" in text or "illegal memory access" in text:
        return CRASH
    if "CompilationError" in names or "PassManager" in text:
        return COMPILE_ERROR
    if type(err).__module__.startswith("triton"):
        return COMPILE_ERROR
    return CRASH


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}"[:500]


class Attempts:
    """What the worker's child keeps between attempts (the current case and the last few
    others, the early cut's leader) and how it makes one (`run`)."""

    def __init__(self, kernel_modules: tuple[str, ...], bench: BenchOptions, notify=None):
        # late: `tlab --help` imports no torch
        from tritonbench_lab.kernels import load_kernel_module

        for path in kernel_modules:
            load_kernel_module(path)
        self.bench = bench
        self.notify = notify or (lambda: None)  # tells the parent the first call returned
        self.interpreting = children.interpreting()  # as worker._serve set it, read by one rule
        self.device = "cpu" if self.interpreting else "cuda"
        self.case_key = None
        self.inputs = None
        self.reference = None
        self.leader_ms = None  # the case's fastest first-pass time here (the early cut's)
        self.cases = KeptCases(on_gpu=not self.interpreting)  # the other shapes' (cases.py)

    def _prepare(self, spec, task: Task):
        """Make the task's case current: kept from before (cases.py), or made now."""
        key = (task.kernel, task.sizes, task.dtype, task.seed)
        if key == self.case_key:
            return
        if self.case_key is not None:
            self.cases.put(self.case_key, (self.inputs, self.reference, self.leader_ms))
        self.inputs = self.reference = self.leader_ms = self.case_key = None
        self.inputs, self.reference, self.leader_ms = self.cases.take(
            key, lambda: self._make_case(spec, task), need=_case_bytes(spec, task))
        self.case_key = key

    def _make_case(self, spec, task: Task):
        # late: `tlab --help` imports no torch
        from tritonbench_lab.spec import parse_dtype

        shape = spec.shape(*task.sizes)
        inputs = spec.make_inputs(shape, parse_dtype(task.dtype), self.device, task.seed)
        return inputs, spec.reference(inputs), None

    def run(self, task: Task) -> Outcome:
        """One task: the first call (it compiles), then verify, then time (_time)."""
        # late: `tlab --help` imports no torch
        import torch

        from tritonbench_lab.kernels import get_spec
        from tritonbench_lab.measure.verify import as_outputs, check
        from tritonbench_lab.spec import parse_dtype

        spec = get_spec(task.kernel)
        self._prepare(spec, task)
        tolerance = spec.tolerance[parse_dtype(task.dtype)]
        call, guarded = self._call(spec, task)

        def sync():
            if not self.interpreting:
                torch.cuda.synchronize()

        start = time.perf_counter()
        try:
            result = as_outputs(call())
            sync()
        except Exception as err:  # any failure of the user's kernel becomes a status row
            return Outcome(classify(err), one_line(err))
        compile_s = time.perf_counter() - start
        self.notify()
        overrun = guarded.overrun() if guarded is not None else ""
        if overrun:
            return Outcome(WRONG_RESULT, overrun, compile_s=compile_s)
        verdict = check(result, self.reference, tolerance)
        del result
        if not verdict.ok and task.provider == TRITON:
            return Outcome(WRONG_RESULT, verdict.detail, verdict.max_abs_error,
                           compile_s=compile_s)
        return self._time(task, call, sync, verdict, compile_s)

    def _call(self, spec, task: Task):
        """The task's call on the current case's inputs, and the guard band around its
        outputs: the config's launch into NaN-poisoned, guarded outputs, or the baseline
        (which allocates its own: None)."""
        # late: `tlab --help` imports no torch
        from tritonbench_lab.measure.verify import guard

        inputs = self.inputs
        if task.provider != TRITON:
            baseline = spec.baselines[task.provider]
            return (lambda: baseline(inputs)), None
        guarded = guard(spec.allocate_outputs(inputs))

        def call():
            return spec.launch(inputs, task.config, guarded.outputs)
        return call, guarded

    def _time(self, task: Task, call, sync, verdict, compile_s: float) -> Outcome:
        """Time a verified call (and its host time, when the task asks); a first-pass time
        that was not cut may lead the case's early cut (_cut_ms)."""
        bench = task.bench or self.bench
        try:
            timed = time_call(call, bench, self.interpreting, self._cut_ms(bench),
                              repeat=task.provider != TRITON)
            sync()
            host = None
            if task.host_time and not self.interpreting and timed.method != CUT:
                host = host_ms(call, sync, timed.p50)
        except Exception as err:
            return Outcome(CRASH, "while timing: " + one_line(err), verdict.max_abs_error,
                           compile_s=compile_s)
        # Baselines are timed even when less accurate than the tolerance (the unfused bf16
        # softmax is, by a little): the row says so, and only Triton configs can win.
        status = OK if verdict.ok else WRONG_RESULT
        if bench.cut_factor is not None and status == OK and timed.method != CUT:
            self.leader_ms = min(self.leader_ms or timed.p50, timed.p50)
        return Outcome(status, verdict.detail, verdict.max_abs_error, timed.p20, timed.p50,
                       timed.p80, compile_s, timed, host)

    def _cut_ms(self, bench) -> float | None:
        """The early cut's threshold for a first-pass config (timing.py): cut_factor x the
        fastest config timed here at this case so far, where that leader is long enough
        for events to read what the graph does; None otherwise."""
        if bench.cut_factor is None or self.leader_ms is None \
                or self.leader_ms < BOTH_CLOCKS_BELOW_MS:
            return None
        return bench.cut_factor * self.leader_ms


def _case_bytes(spec, task: Task) -> int:
    # late: `tlab --help` imports no torch
    from tritonbench_lab.spec import parse_dtype

    return memory_estimate(spec, spec.shape(*task.sizes), parse_dtype(task.dtype))
