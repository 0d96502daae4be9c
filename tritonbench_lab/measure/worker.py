"""Run one measurement task in a child process, so that a crash or a hang costs one task.

A kernel that faults (illegal or misaligned address) leaves its process's CUDA context
unusable; one that never terminates blocks its process. Both stay inside a child (children.py):
the parent sees the child die or miss its deadline, records `crash` or `timeout`, starts a
fresh child and goes on. The child keeps the inputs and float64 reference of the last few
shapes between tasks, so a reference is computed once per shape, not once per config.

Inside the child, one task is: first call into NaN-poisoned outputs (this compiles; its wall
time is `compile_s`) -> verify against the reference -> time the correct ones.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field

from tritonbench_lab.data.records import (
    COMPILE_ERROR,
    CRASH,
    CUT,
    OK,
    OUT_OF_RESOURCES,
    TIMEOUT,
    TRITON,
    WRONG_RESULT,
)
from tritonbench_lab.measure import children
from tritonbench_lab.measure.cases import KeptCases
from tritonbench_lab.measure.timing import BOTH_CLOCKS_BELOW_MS, BenchOptions, Timed, host_ms, time_call

# A fresh child imports torch and triton and initialises CUDA before its first task.
STARTUP_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Timeouts:
    """Deadlines of one task's two phases. The first call compiles (about a second for a
    matmul config, much longer for a big kernel on a busy machine) and runs once; verifying
    and timing then take a few hundred milliseconds. A config that hangs is caught by
    whichever phase it hangs in."""

    first_call_s: float = 120.0  # compile + load + one run
    measure_s: float = 60.0  # verify + do_bench


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


class _Child:
    """State and logic of the child process."""

    def __init__(self, kernel_modules: tuple[str, ...], bench: BenchOptions, notify=None):
        # late: `tlab --help` imports no torch
        from tritonbench_lab.kernels import load_kernel_module

        for path in kernel_modules:
            load_kernel_module(path)
        self.bench = bench
        self.notify = notify or (lambda: None)  # tells the parent the first call returned
        self.interpreting = children.interpreting()  # as _serve set it, read by one rule
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
            key, lambda: self._make_case(spec, task))
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
        call = self._call(spec, task)

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
        verdict = check(result, self.reference, tolerance)
        del result
        if not verdict.ok and task.provider == TRITON:
            return Outcome(WRONG_RESULT, verdict.detail, verdict.max_abs_error,
                           compile_s=compile_s)
        return self._time(task, call, sync, verdict, compile_s)

    def _call(self, spec, task: Task):
        """The task's call on the current case's inputs: the config's launch into
        NaN-poisoned outputs, or the baseline."""
        # late: `tlab --help` imports no torch
        from tritonbench_lab.measure.verify import poison

        inputs = self.inputs
        if task.provider == TRITON:
            outputs = poison(spec.allocate_outputs(inputs))

            def call():
                return spec.launch(inputs, task.config, outputs)
        else:
            baseline = spec.baselines[task.provider]

            def call():
                return baseline(inputs)
        return call

    def _time(self, task: Task, call, sync, verdict, compile_s: float) -> Outcome:
        """Time a verified call (and its host time, when the task asks); a first-pass time
        that was not cut may lead the case's early cut (_cut_ms)."""
        bench = task.bench or self.bench
        try:
            timed = time_call(call, bench, self.interpreting, self._cut_ms(bench))
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


def _serve(inbox, outbox, kernel_modules, bench, interpret: bool, parent_pid: int,
           visible: str | None = None, env: dict[str, str] | None = None) -> None:
    """The child process: set its environment, make its _Child, then serve tasks."""
    # Ctrl-C reaches the whole process group: the parent handles it and stops this child.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    children.apply(env)  # the command's environment, not the fork server's old copy
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    if visible is not None:  # before CUDA starts (torch starts it lazily): this GPU alone
        os.environ["CUDA_VISIBLE_DEVICES"] = visible
    try:
        child = _Child(tuple(kernel_modules), bench,
                       notify=lambda: outbox.put(("first_call_done", None)))
    except Exception as err:
        outbox.put(("failed", one_line(err)))
        return
    outbox.put(("ready", None))
    if not interpret:  # start CUDA while no task waits for it (after a background start)
        with contextlib.suppress(Exception):  # a failure shows again in the first task
            # late: `tlab --help` imports no torch
            import torch

            torch.empty(1, device="cuda")
    _serve_tasks(child, inbox, outbox, parent_pid)


def _serve_tasks(child: _Child, inbox, outbox, parent_pid: int) -> None:
    """Run the tasks of `inbox` one at a time, each outcome to `outbox`, until told to stop
    (None), the parent is gone, or a task crashed."""
    while True:
        try:
            task = inbox.get(timeout=1.0)
        except queue.Empty:
            if _parent_gone(parent_pid):  # the parent was killed (kill -9): do not linger
                return
            continue
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            outcome = child.run(task)
        except Exception as err:  # a bug in tlab or the spec: keep it, with where it was
            where = traceback.extract_tb(err.__traceback__)[-1]
            outcome = Outcome(CRASH, f"{one_line(err)} at {where.filename}:{where.lineno}")
        outbox.put(("done", outcome))
        if outcome.status == CRASH:
            return  # the CUDA context may be unusable now: let the parent start a fresh child


def _parent_gone(parent_pid: int) -> bool:
    """Whether the process that started this one has ended. A child of the fork server
    (children.py) has the server as its OS parent, so ask multiprocessing, which keeps a
    pipe from the starting process open in every child it starts."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        return not parent.is_alive()
    return os.getppid() != parent_pid


@contextlib.contextmanager
def _sigint_held():
    """Hold Ctrl-C while a child is spawned: interrupted half-way, start() leaves a child that
    dies printing a traceback and a Process that cannot be joined. A Ctrl-C that lands here
    is noted and raised as soon as the child has its arguments. A Python handler, not a
    signal mask: the OS gives the signal to any thread that does not block it, and Python
    then runs its handler in the main thread wherever that thread is. (Only the main thread
    may set handlers, and only it receives KeyboardInterrupt.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pending and previous is not signal.SIG_IGN:
            if callable(previous):
                previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
            else:
                raise KeyboardInterrupt


class Worker:
    """A child process that runs Tasks one at a time; restarted after a crash or timeout."""

    def __init__(self, interpret: bool, kernel_modules: tuple[str, ...] = (),
                 bench: BenchOptions | None = None, visible: str | None = None):
        """`visible`: the CUDA_VISIBLE_DEVICES of the child (one GPU of several); None:
        inherit the parent's."""
        self.interpret = interpret
        self.visible = visible
        self.kernel_modules = tuple(str(p) for p in kernel_modules)
        self.bench = bench or BenchOptions()
        self._context = children.context(interpret)
        self._process = None
        self._starter: threading.Thread | None = None
        self.restarts = 0

    def start_in_background(self) -> None:
        """Spawn the child now, on a thread, so that its first task does not wait for the
        spawn, the imports and CUDA's start (seconds on a GPU machine)."""
        if self._process is None and self._starter is None:
            self._starter = threading.Thread(target=self._start_quietly, daemon=True)
            self._starter.start()

    def _start_quietly(self) -> None:
        try:
            self._start()
        except Exception:  # noqa: BLE001 - the first task starts it again and says why not
            self._process = None

    def _started(self) -> None:
        if self._starter is not None:
            self._starter.join()
            self._starter = None

    def _start(self) -> None:
        self._inbox = self._context.Queue()
        self._outbox = self._context.Queue()
        self._process = self._context.Process(
            target=_serve,
            args=(self._inbox, self._outbox, self.kernel_modules, self.bench, self.interpret,
                  os.getpid(), self.visible, children.environment()),
            daemon=True,
        )
        with _sigint_held():
            self._process.start()
        kind, detail = self._receive(STARTUP_TIMEOUT_S) or ("timeout", "worker did not start")
        if kind != "ready":
            self.stop()
            raise RuntimeError(f"measurement worker failed to start: {detail}")

    def _receive(self, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                return self._outbox.get(timeout=min(0.2, max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                if not self._process.is_alive():
                    try:  # it may have answered just before it exited
                        return self._outbox.get(timeout=0.5)
                    except queue.Empty:
                        return ("died", f"worker exited with code {self._process.exitcode}")
        return None

    def run(self, task: Task, timeouts: Timeouts) -> Outcome:
        self._started()
        if self._process is None or not self._process.is_alive():
            if self._process is not None:
                self.restarts += 1
            self._start()
        self._inbox.put(task)
        message = self._receive(timeouts.first_call_s)
        if message is None:
            self.stop()
            return Outcome(TIMEOUT, f"first call (compile + one run) took over "
                                    f"{timeouts.first_call_s:g} s; worker killed")
        if message[0] == "first_call_done":
            message = self._receive(timeouts.measure_s)
            if message is None:
                self.stop()
                return Outcome(TIMEOUT, f"verify + timing took over {timeouts.measure_s:g} s; "
                                        "worker killed")
        kind, payload = message
        if kind == "died":
            self.stop()
            return Outcome(CRASH, payload)
        if payload.status == CRASH:
            # The child is exiting; wait for it, or the next task could be sent to it and be
            # blamed for its exit.
            self.stop()
        return payload

    def ask_to_stop(self) -> None:
        """Tell a started child to exit, without waiting for it (`stop` waits): a child takes
        about a second to give its CUDA context back, and several can do that at once."""
        process = self._process
        starting = self._starter is not None and self._starter.is_alive()
        if not starting and process is not None and process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                self._inbox.put(None)

    def stop(self) -> None:
        self._started()
        process, self._process = self._process, None
        # pid is None when start() never completed (Ctrl-C while spawning): nothing to stop.
        if process is None or process.pid is None:
            return
        if process.is_alive():
            try:
                self._inbox.put(None)
                process.join(timeout=2)
            except (OSError, ValueError):
                pass
        if process.is_alive():
            process.kill()
        process.join(timeout=5)
