"""Compile the configs of a sweep in parallel before they are timed.

On a GPU, compiling a config (about a second for a matmul tile) costs more than timing it,
and the timing worker is one process. So before timing, a pool of processes (`--jobs`,
default: the CPU cores) runs each config's launcher once with Triton's launches turned into
compile-only warm-ups (`JITFunction.run(..., warmup=True)`: compiled, never launched). The
kernels land in Triton's on-disk cache, from which the timing worker then loads them in
milliseconds.

Each pool process makes the job's inputs on the GPU (the launcher needs real tensors to
specialise on), so the pool admits jobs only while their device bytes (`Job.footprint`, the
cost model's inputs and outputs) fit a budget (`memory_budget`): on an 80 GB GPU, sixteen
processes each holding a shape of several GB would leave the timing worker none. A process
keeps a small shape's inputs for the next config of that shape and gives a large one's back
at once.

Nothing here decides a row. A config that fails to compile in the pool fails again in the
worker, which records it as now; a pool process that dies or hangs only loses the head start
(the pool is stopped after `--compile-timeout` seconds without progress). Each config's
compile seconds are kept and added to its row's `compile_s`. Triton's interpreter compiles
nothing, so it has no pool.
"""

from __future__ import annotations

import concurrent.futures as futures
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tritonbench_lab.measure import children
from tritonbench_lab.measure.cases import storage_bytes
from tritonbench_lab.space import config_text

# (kernel, sizes, dtype, seed, config text) of one task: what the pool compiles.
Key = tuple[str, tuple[int, ...], str, int, str]
# A pool process keeps one shape's inputs for the next config of that shape only up to this
# many bytes; larger ones are freed (and the allocator's cache emptied) after each compile.
KEEP_INPUTS_BYTES = 256 << 20


@dataclass(frozen=True)
class Job:
    kernel: str
    sizes: tuple[int, ...]
    dtype: str
    seed: int
    config: dict
    footprint: int = 0  # device bytes of its inputs and outputs while it compiles; 0: unknown

    @classmethod
    def of(cls, task, footprint: int = 0) -> Job:
        return cls(task.kernel, tuple(task.sizes), task.dtype, task.seed, dict(task.config),
                   footprint)

    @property
    def key(self) -> Key:
        return (self.kernel, self.sizes, self.dtype, self.seed, config_text(self.config))


def family(key: Key) -> tuple[str, str, str]:
    """The jobs that may share one compiled kernel: a config of a kernel and dtype, at any
    shape. Triton compiles again only where a shape changes what it specialises on (sizes
    divisible by 16, constexprs a launcher derives from the shape); otherwise the job at the
    next shape finds the first one's kernel in Triton's cache, in milliseconds."""
    return (key[0], key[2], key[4])


def config_major(jobs: Iterable[Job]) -> list[Job]:
    """Jobs in timing order, regrouped so that each config's jobs at every shape follow its
    first: once its kernel is compiled, the others are cache hits, and the sweep can time that
    config at every shape while the pool compiles the next (a sweep of several shapes then
    keeps the GPU busy during the compiles, not waiting on them at its first shape)."""
    jobs = list(jobs)
    first: dict[tuple[str, str, str], int] = {}
    for job in jobs:
        first.setdefault(family(job.key), len(first))
    return sorted(jobs, key=lambda job: first[family(job.key)])  # stable within a config


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# --- inside a pool process ----------------------------------------------------------------

_inputs: dict = {}


def _start(kernel_modules: tuple[str, ...]) -> None:
    """Pool process initialiser: the GPU backend, the user's kernels, compile-only launches.
    At the lowest CPU priority: the timing worker must get a core the moment it needs one,
    or its launches fall behind the GPU and the wait is timed (short kernels then time
    several times slower while the pool compiles)."""
    try:
        os.nice(19)
    except OSError:
        pass
    os.environ["TRITON_INTERPRET"] = "0"
    # late: triton reads TRITON_INTERPRET at its first import (set just above)
    from triton.runtime.jit import JITFunction

    from tritonbench_lab.kernels import load_kernel_module

    for path in kernel_modules:
        load_kernel_module(path)
    launch = JITFunction.run

    def compile_only(self, *args, grid, warmup, **kwargs):
        return launch(self, *args, grid=grid, warmup=True, **kwargs)

    JITFunction.run = compile_only


def _begin(env: dict[str, str], start_fn, kernel_modules: tuple[str, ...]) -> None:
    """Pool process initialiser: the command's environment first (a process forked by the
    server has the server's), then `start_fn`."""
    children.apply(env)
    start_fn(kernel_modules)


def _compile(job: Job) -> tuple[Key, float, str]:
    """(key, seconds, error or ''): run the launcher once, which here only compiles."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.spec import parse_dtype

    start = time.perf_counter()
    try:
        spec = get_spec(job.kernel)
        inputs = shape_inputs(job, lambda: spec.make_inputs(
            spec.shape(*job.sizes), parse_dtype(job.dtype), "cuda", job.seed))
        spec.launch(inputs, job.config, spec.allocate_outputs(inputs))
    except Exception as err:  # the worker meets it again and records it
        return job.key, time.perf_counter() - start, f"{type(err).__name__}: {err}"[:200]
    finally:
        inputs = None
        give_back_large_inputs()
    return job.key, time.perf_counter() - start, ""


def shape_inputs(job: Job, make: Callable[[], dict]) -> dict:
    """The inputs of the job's case: kept from the last job when it was the same case (small
    inputs are kept, KEEP_INPUTS_BYTES), else made (and one case's at most held)."""
    case = (job.kernel, job.sizes, job.dtype, job.seed)
    if case not in _inputs:
        _inputs.clear()
        _inputs[case] = make()
    return _inputs[case]


def give_back_large_inputs() -> None:
    """After a compile: forget kept inputs larger than KEEP_INPUTS_BYTES and return their
    memory to the device, so that an idle pool process holds no large shape."""
    held = storage_bytes(list(_inputs.values()))
    if held > KEEP_INPUTS_BYTES:
        _inputs.clear()
        # late: `tlab --help` imports no torch
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


# --- in the sweep -------------------------------------------------------------------------

@dataclass
class Precompiled:
    """What the pool did: compile seconds per job that compiled, and what went wrong."""

    seconds: dict[Key, float] = field(default_factory=dict)
    jobs: int = 0
    failed: int = 0
    first_error: str = ""
    stopped: str = ""  # why the pool stopped early ("" when it finished)
    wall_s: float = 0.0

    def summary(self, processes: int) -> str:
        text = (f"compiled {len(self.seconds)} of {self.jobs} configs ahead in "
                f"{self.wall_s:.0f} s on {processes} processes")
        if self.failed:
            text += f"; {self.failed} failed there (first: {self.first_error})"
        if self.stopped:
            text += f"; stopped early: {self.stopped}"
        return text


class CompilePool:
    """A pool of compile processes that lives for one sweep: jobs are submitted in the order
    they will be timed (all of an exhaustive sweep at once, a search's batches as they are
    proposed), and the sweep waits for a config's own compile just before timing it, so
    compiling overlaps timing. A search also hands over the rest of its shape's space as
    background jobs: compiled only while no submitted job waits, and moved ahead the moment
    the search proposes one (or the sweep waits for it), so a search's batches find their
    kernels compiled instead of waiting on a pool that sat idle. Thread-safe: several device
    threads may wait at once. Jobs run at once only while their footprints fit
    `memory_budget` bytes (0: no limit); one job always may, however large."""

    def __init__(self, processes: int, *, kernel_modules: tuple[str, ...] = (),
                 stall_s: float = 120.0, progress: Callable[[int, int], None] | None = None,
                 compile_fn: Callable[[Job], tuple[Key, float, str]] = _compile,
                 start_fn: Callable[[tuple[str, ...]], None] = _start,
                 memory_budget: int = 0, footprint_of: Callable[[Job], int] | None = None):
        self.processes = max(1, processes)
        self.memory_budget = memory_budget
        self._footprint_of = footprint_of  # for jobs submitted without a footprint
        self._held = 0  # footprints of the jobs running now
        self.stall_s = stall_s
        self.progress = progress
        self.result = Precompiled()
        self._compile_fn = compile_fn
        # One future per key from the moment it is queued (what `wait` waits on); a job is
        # handed to a process only when one is free, first from `_now`, then `_later`.
        self._futures: dict[Key, futures.Future] = {}
        self._now: dict[Key, Job] = {}
        self._later: dict[Key, Job] = {}
        self._running = 0
        # Jobs in flight per family: a job waits while another of its family compiles, so
        # that two processes never compile one kernel, and then finds it in the cache.
        self._compiling: dict[tuple[str, str, str], int] = {}
        # Reentrant: a job that finishes before its callback is attached runs the callback,
        # which takes the lock, inside _dispatch.
        self._lock = threading.RLock()
        self._began = time.monotonic()
        self._finished = 0
        context = children.context(interpret=False)  # before the environment is copied
        self._pool = futures.ProcessPoolExecutor(
            max_workers=self.processes, mp_context=context,
            initializer=_begin, initargs=(children.environment(), start_fn,
                                          tuple(kernel_modules)))

    def submit(self, jobs: Iterable[Job], *, background: bool = False) -> None:
        """Queue jobs not seen before (a key given twice is compiled once): in timing
        order, or `background` (behind everything else). A job queued in the background
        and submitted again without is moved ahead."""
        with self._lock:
            if self.result.stopped:
                return
            for job in jobs:
                if self._footprint_of and not job.footprint:
                    job = dataclasses.replace(job, footprint=self._footprint_of(job))
                if job.key in self._futures:
                    if not background and job.key in self._later:
                        self._now[job.key] = self._later.pop(job.key)
                    continue
                future: futures.Future = futures.Future()
                future.add_done_callback(self._record)
                self._futures[job.key] = future
                (self._later if background else self._now)[job.key] = job
                self.result.jobs += 1
            self._dispatch()

    def _dispatch(self) -> None:
        """Hand queued jobs to free processes (the lock held)."""
        while self._running < self.processes:
            key = self._next_key()
            if key is None:
                return
            job = (self._now.pop(key, None) or self._later.pop(key))
            try:
                running = self._pool.submit(self._compile_fn, job)
            except RuntimeError:  # shut down: what is left stays uncompiled
                self._futures[key].cancel()
                continue
            self._running += 1
            self._held += job.footprint
            self._compiling[family(key)] = self._compiling.get(family(key), 0) + 1
            running.add_done_callback(
                lambda done, key=key, footprint=job.footprint: self._ran(key, footprint, done))

    def _next_key(self) -> Key | None:
        """The first queued job, submitted ones before background ones, whose family is not
        compiling now and whose footprint fits beside the running jobs' (the lock held);
        None when every queued job waits."""
        for queue in (self._now, self._later):
            for key, job in queue.items():
                if not self._compiling.get(family(key)) and self._fits(job.footprint):
                    return key
        return None

    def _fits(self, footprint: int) -> bool:
        return (not self.memory_budget or self._running == 0
                or self._held + footprint <= self.memory_budget)

    def ready(self, key: Key) -> bool:
        """Whether a job's compile is over (done or failed), or was never the pool's to do:
        a task that is ready is timed without waiting (the scheduler takes those first)."""
        future = self._futures.get(key)
        return future is None or future.done() or bool(self.result.stopped)

    def _ran(self, key: Key, footprint: int, done: futures.Future) -> None:
        """A process finished a job: pass its outcome to the key's future, start the next."""
        with self._lock:
            self._running -= 1
            self._held -= footprint
            self._compiling[family(key)] -= 1
            if not self.result.stopped:
                self._dispatch()
        mine = self._futures[key]
        if done.cancelled():
            mine.cancel()
        elif done.exception() is not None:
            mine.set_exception(done.exception())
        else:
            mine.set_result(done.result())

    def _record(self, future: futures.Future) -> None:
        try:
            key, seconds, error = future.result()
        except futures.CancelledError:
            return
        except futures.process.BrokenProcessPool as err:
            key, seconds, error = None, 0.0, ""
            self.result.stopped = self.result.stopped or f"a pool process died ({err})"
        except Exception as err:  # noqa: BLE001 - the pool is only a head start
            key, seconds, error = None, 0.0, f"{type(err).__name__}: {err}"
        with self._lock:
            self._finished += 1
            if error:
                self.result.failed += 1
                self.result.first_error = self.result.first_error or error
            elif key is not None:
                self.result.seconds[key] = seconds
            self.result.wall_s = time.monotonic() - self._began
            finished, total = self._finished, self.result.jobs
        if self.progress:
            self.progress(finished, total)

    def wait(self, key: Key) -> float | None:
        """This job's compile seconds once it is compiled; None when it was never
        submitted, failed (the worker meets the error itself), or did not finish within
        `stall_s` (then the pool is stopped: the worker compiles under its own deadline)."""
        future = self._futures.get(key)
        if future is None or self.result.stopped:
            return None
        with self._lock:
            if key in self._later:  # wanted now: ahead of the background
                self._now[key] = self._later.pop(key)
        try:
            _, seconds, error = future.result(timeout=self.stall_s)
        except futures.TimeoutError:
            self.result.stopped = self.result.stopped or (
                f"no config finished compiling in {self.stall_s:g} s")
            self.close()
            return None
        except Exception:  # noqa: BLE001 - recorded by _record
            return None
        return None if error else seconds

    def drain(self) -> Precompiled:
        """Wait for every submitted job (each under the stall deadline), then stop."""
        for key in list(self._futures):
            if self.result.stopped:
                break
            self.wait(key)
        self.close()
        return self.result

    def close(self) -> None:
        with self._lock:
            for key in [*self._now, *self._later]:  # never started: nothing to wait for
                self._futures[key].cancel()
            self._now.clear()
            self._later.clear()
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:  # a hung compile would otherwise outlive the sweep
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join(timeout=5)
        if self._finished < self.result.jobs:  # stopped early: the wall is until now
            self.result.wall_s = time.monotonic() - self._began


def precompile(jobs: Iterable[Job], *, processes: int, kernel_modules: tuple[str, ...] = (),
               stall_s: float = 120.0, progress: Callable[[int, int], None] | None = None,
               compile_fn: Callable[[Job], tuple[Key, float, str]] = _compile,
               start_fn: Callable[[tuple[str, ...]], None] = _start,
               memory_budget: int = 0, footprint_of: Callable[[Job], int] | None = None
               ) -> Precompiled:
    """Compile every job in a pool of `processes` and wait for all (Precompiled.seconds: the
    job keys that compiled). Stops early, keeping what it has, when no job finishes for
    `stall_s` seconds or the pool breaks."""
    unique = list({j.key: j for j in jobs}.values())
    if not unique or processes < 1:
        return Precompiled(jobs=len(unique))
    pool = CompilePool(min(processes, len(unique)), kernel_modules=kernel_modules,
                       stall_s=stall_s, progress=progress, compile_fn=compile_fn,
                       start_fn=start_fn, memory_budget=memory_budget,
                       footprint_of=footprint_of)
    pool.submit(unique)
    return pool.drain()
