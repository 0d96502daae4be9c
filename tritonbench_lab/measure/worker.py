"""Run one measurement task in a child process, so that a crash or a hang costs one task.

A kernel that faults (illegal or misaligned address) leaves its process's CUDA context
unusable; one that never terminates blocks its process. Both stay inside a child (children.py):
the parent sees the child die or miss its deadline, records `crash` or `timeout`, starts a
fresh child and goes on.

Inside the child, each task is an attempt (attempt.py): first call, verify, time, on inputs
and a reference the child keeps between tasks for the last few shapes.
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
from dataclasses import dataclass

from tritonbench_lab.data.records import CRASH, TIMEOUT
from tritonbench_lab.measure import children
from tritonbench_lab.measure.attempt import Attempts, Outcome, Task, one_line
from tritonbench_lab.measure.timing import BenchOptions

# A fresh child imports torch and triton and initialises CUDA before its first task.
STARTUP_TIMEOUT_S = 300.0


# The longest deadline an attempt's phase may be given (`--timeout`, `--compile-timeout`):
# an hour; a config that has not compiled or been timed by then is hung.
MAX_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Timeouts:
    """Deadlines of one task's two phases. The first call compiles (about a second for a
    matmul config, much longer for a big kernel on a busy machine) and runs once; verifying
    and timing then take a few hundred milliseconds. A config that hangs is caught by
    whichever phase it hangs in."""

    first_call_s: float = 120.0  # compile + load + one run
    measure_s: float = 60.0  # verify + do_bench


def exit_text(code: int | None) -> str:
    """How a child ended, for its crash row: a negative exit code is the signal that killed
    it (multiprocessing's convention), named as the OS names it."""
    if code is None or code >= 0:
        return f"worker exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:  # a number the OS has no name for
        return f"worker killed by signal {-code}"
    hint = (" (an access out of bounds? most often a tl.load or tl.store without a mask)"
            if name in ("SIGSEGV", "SIGBUS", "SIGABRT") else "")
    return f"worker killed by {name} (signal {-code}){hint}"


def _serve(inbox, outbox, kernel_modules, bench, interpret: bool, parent_pid: int,
           visible: str | None = None, env: dict[str, str] | None = None) -> None:
    """The child process: set its environment, make its Attempts, then serve tasks."""
    # Ctrl-C reaches the whole process group: the parent handles it and stops this child.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    children.apply(env)  # the command's environment, not the fork server's old copy
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    if visible is not None:  # before CUDA starts (torch starts it lazily): this GPU alone
        os.environ["CUDA_VISIBLE_DEVICES"] = visible
    try:
        attempts = Attempts(tuple(kernel_modules), bench,
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
    _serve_tasks(attempts, inbox, outbox, parent_pid)


def _serve_tasks(attempts: Attempts, inbox, outbox, parent_pid: int) -> None:
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
            outcome = attempts.run(task)
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
                        return ("died", exit_text(self._process.exitcode))
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
