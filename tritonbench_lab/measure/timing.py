"""The only place that times anything. On a GPU, two clocks, both with the L2 cache flushed
before every call so that inputs are never served from cache:

- events: `triton.testing.do_bench` (CUDA events around each call launched from Python).
  When the Python launch of a call takes longer than the flush before it (a 256 MB memset,
  tens of microseconds), the GPU waits for the launch and the wait is timed: a short kernel
  measures its launch, not itself, and more so when the CPU is busy.
- cudagraph: the same calls, flush, start event, kernel, end event, captured in one CUDA
  graph and replayed, so the GPU runs them back to back with no launch in between; each
  call is timed by its own pair of events inside the graph.

The early cut (first pass only, `BenchOptions.cut_factor`): a graph timing begins with
ESTIMATE_CALLS calls (fewer for a long kernel, as many as fill the first pass's budget), each
after a flush and timed by its own events, to size the graph. A
config whose median there is more than cut_factor x the shape's fastest first-pass time
(the worker keeps it) stops: those calls are its row (method CUT). Only where that leader
takes BOTH_CLOCKS_BELOW_MS or more, where events read what the graph does; there a slow
config's graph is what the first pass spends most of its time on (at the largest matmuls,
configs many times slower than the leader, each replayed for the whole budget). Likewise a
kernel that long whose first calls already fill the first pass's budget is timed by them
(events). Both shorten the first pass at such shapes.

`--timing both` takes both. The row's p20/p50/p80 are then the graph's when the kernel is
short (graph p50 under SHORT_KERNEL_MS), where launch overhead can masquerade as kernel
time, or when the events read more than DISAGREE above the graph (the one way they do is
host time timed as kernel time: a short kernel's events can read several times its graph
time while the compile pool loads the CPU); the events' otherwise. Both medians are kept and
`disagree` says whether they differ by more than DISAGREE. In the interpreter: wall clock,
labelled as such.

Beside the GPU's clocks, the host's: how long a call holds the calling thread (host_times,
host_ms), which an eager program waits for where it exceeds the GPU time; the sweep's
confirmations take it, and tritonbench_lab.ops weighs it for eager calls.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from tritonbench_lab.data.records import CUDAGRAPH, CUT, DO_BENCH, INTERPRETER

QUANTILES = (0.2, 0.5, 0.8)
TIMINGS = ("events", "cudagraph", "both")
SHORT_KERNEL_MS = 0.020  # under this (graph p50), a row is judged on its graph time
DISAGREE = 0.10  # events and graph medians further apart than this raise the row's flag
# At or above this, the events clock reads what the graph does (4096^3 and 8192^3 bf16
# matmuls measured events/graph medians of 1.00 and 0.98): `auto` then takes events alone,
# at half the cost, wherever the shape's fastest time so far is this long (plan.bench_for).
BOTH_CLOCKS_BELOW_MS = 0.1
# Below this, the graph judges every row that matters: the contenders are within a few
# percent of the shape's fastest row, so under SHORT_KERNEL_MS too, and a baseline slower
# than that can only read faster by the graph than by events (the graph times no launch
# gaps), which does not flatter the winner. `auto` then takes the graph alone, at half the
# cost (plan.bench_for; 512^3 and 1024^3 bf16 matmuls, of a few us, fall below it).
GRAPH_ALONE_BELOW_MS = SHORT_KERNEL_MS * 0.75
# A GPU that has idled runs its first ~100 ms of heavy load at its boost clock, then settles
# lower (at 8192^3 bf16, from about 1980 MHz to about 1500 MHz). After do_bench's 25 ms of
# warm-up, the median of six timings of one 8192^3 matmul, each after 0.5 s idle, ranged
# 14.5%; after 250 ms, 0.6%. So the timings that decide (contenders, confirmations, and
# check's, which repeats a row's budget) warm up this long at shapes of BOTH_CLOCKS_BELOW_MS
# and more (plan.bench_for); shorter kernels take too little power to move the clock.
STEADY_WARMUP_MS = 250
FLUSH_BYTES = 256 * 1024 * 1024  # what do_bench clears; more than any GPU's L2
# Calls captured in one graph (each with two event nodes): enough samples per replay, and
# a capture short enough to cost little next to the budget; a longer budget replays it more.
MAX_GRAPH_CALLS = 200
# Calls timed one by one before a graph is captured: they size it, and decide the early cut.
ESTIMATE_CALLS = 5
# The first pass's cut: a config this much slower than the leader cannot be a contender
# (contenders.py asks for a p20 within 5% of the leader's p80), so its graph is not timed.
CUT_FACTOR = 1.5


# Without a GPU, calls are wall-clock timed one by one: an interpreted kernel once (it takes
# milliseconds to seconds; a slow call only makes tlab's kernel look slower). A baseline's call
# (`repeat`), a PyTorch op of microseconds on a CPU, is repeated while its calls but the slowest
# took under INTERPRETER_REPEAT_MS, up to INTERPRETER_MAX_REPS, and judged by the median: one
# call of an op of 20 us was seen to take 11 ms once (another process's burst), which made the
# interpreter's kernel look 1.7x faster than the op and moved ops' choice at that shape to it.
INTERPRETER_REPEAT_MS = 10.0
INTERPRETER_MAX_REPS = 5

# The most a timing budget may ask (`--rep-ms` and the like): ten seconds of repeats a
# config and shape is already far past where more calls change a median; a larger number is
# a typo, and would hold a sweep for days.
MAX_REP_MS = 10_000


@dataclass(frozen=True)
class BenchOptions:
    """The timing budget in milliseconds: warm-up runs first (none beyond the calls that
    size a graph when warmup_ms is 0), then repeats for about rep_ms; and which clock(s)
    take it (TIMINGS)."""

    warmup_ms: int = 25
    rep_ms: int = 100
    # Interpreter times say nothing about a GPU (rows are labelled so); one wall-clock call
    # keeps the pipeline honest without doubling an interpreter sweep's time (a baseline's
    # short calls are repeated: INTERPRETER_REPEAT_MS).
    interpreter_reps: int = 1
    timing: str = "events"
    # The first pass's early cut (module docstring): None, never; else the factor over the
    # shape's leader past which a config's first calls end its timing.
    cut_factor: float | None = None

    def columns(self, interpreting: bool) -> dict[str, str | int | None]:
        """The method, warmup_ms and rep_ms of a row timed with these options (the method
        of a `both` row is the clock that judged it: Timed.method)."""
        if interpreting:
            return {"method": INTERPRETER, "warmup_ms": None, "rep_ms": None}
        method = CUDAGRAPH if self.timing == "cudagraph" else DO_BENCH
        return {"method": method, "warmup_ms": self.warmup_ms, "rep_ms": self.rep_ms}


@dataclass(frozen=True)
class Timed:
    """One timing: the judged p20/p50/p80 (by `method`), and each clock's median."""

    p20: float
    p50: float
    p80: float
    method: str
    events_p50: float | None = None
    graph_p50: float | None = None

    @property
    def disagree(self) -> str:
        """'yes' / 'no' when both clocks ran, '' otherwise."""
        if self.events_p50 is None or self.graph_p50 is None:
            return ""
        gap = abs(self.events_p50 - self.graph_p50) / min(self.events_p50, self.graph_p50)
        return "yes" if gap > DISAGREE else "no"


def judge(events: tuple[float, float, float] | None,
          graph: tuple[float, float, float] | None) -> Timed:
    """The rule of the module docstring: a short kernel, or one whose events time exceeds
    its graph time by more than DISAGREE, is judged on its graph time, any other on its
    events time; a clock that did not run leaves the other to judge."""
    if graph is not None and (events is None or graph[1] < SHORT_KERNEL_MS
                              or events[1] > graph[1] * (1 + DISAGREE)):
        times, method = graph, CUDAGRAPH
    elif events is not None:
        times, method = events, DO_BENCH
    else:
        raise ValueError("neither clock produced a time")
    return Timed(*times, method=method, events_p50=events[1] if events else None,
                 graph_p50=graph[1] if graph else None)


def quantiles(samples: list[float]) -> tuple[float, float, float]:
    """(p20, p50, p80) of the samples, interpolated as torch.quantile does."""
    ordered = sorted(samples)

    def at(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return at(QUANTILES[0]), at(QUANTILES[1]), at(QUANTILES[2])


def time_call(fn: Callable[[], object], options: BenchOptions, interpreting: bool,
              cut_ms: float | None = None, repeat: bool = False) -> Timed:
    """Time calls of `fn` with the clock(s) of `options`; with `cut_ms`, a graph timing whose
    first calls' median exceeds it stops there (the early cut: method CUT). Without a GPU,
    `repeat` repeats short calls (a baseline's: INTERPRETER_REPEAT_MS)."""
    if interpreting:
        samples: list[float] = []
        while len(samples) < options.interpreter_reps or (
                repeat and len(samples) < INTERPRETER_MAX_REPS
                and sum(samples) - max(samples) < INTERPRETER_REPEAT_MS):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1e3)
        if len(samples) == 1:
            return Timed(samples[0], samples[0], samples[0], INTERPRETER)
        cuts = statistics.quantiles(samples, n=10, method="inclusive")
        return Timed(cuts[1], statistics.median(samples), cuts[7], INTERPRETER)
    warm_up_gpu()
    events = _events(fn, options) if options.timing in ("events", "both") else None
    graph = None
    if options.timing in ("cudagraph", "both"):
        try:
            with _capture_stream():
                first = _first_calls(fn, options.rep_ms if options.cut_factor else None)
                early = first_pass_verdict(first.samples, options, cut_ms)
                if early is not None:
                    return early
                graph = _graph(fn, options, first)
        except Exception:  # noqa: BLE001 - a call that cannot be captured keeps its events time
            if events is None:
                events = _events(fn, options)
    return judge(events, graph)


# The host time of a call (host_ms): rounds of calls back to back, the clock read around
# each round alone. Few enough calls that the GPU's launch queue never fills (the host would
# then wait for the GPU and time it), and at most about HOST_ROUND_MS of GPU work a round.
HOST_ROUNDS = 3
HOST_CALLS = 20
HOST_ROUND_MS = 10.0


def host_times(fns: tuple[Callable[[], object], ...], sync: Callable[[], None],
               calls: int = HOST_CALLS, rounds: int = HOST_ROUNDS,
               until_done: bool = False) -> list[float]:
    """How long one call of each fn holds the calling thread, in ms: what an eager program
    waits for when it is longer than the call's GPU time (a short kernel launched from
    Python: the GPU waits for the host). Launches are asynchronous, so `calls` calls enqueued
    back to back time the host's part alone; `sync` runs after each, off the clock. The fns
    take turns within each round, so drift of the machine falls on all of them alike. The
    median over rounds of the time per call. With `until_done`, the clock stops after the
    sync: a call's time in a loop of eager calls, the longer of host and GPU time."""
    return [statistics.median(own) for own in host_rounds(fns, sync, calls, rounds, until_done)]


def host_rounds(fns: tuple[Callable[[], object], ...], sync: Callable[[], None],
                calls: int = HOST_CALLS, rounds: int = HOST_ROUNDS,
                until_done: bool = False) -> list[list[float]]:
    """host_times' rounds: per fn, its time per call in ms in each round (the fns' times of
    one round were taken in turns, so their ratio round by round is free of the drift
    between rounds)."""
    for fn in fns:
        fn()
    sync()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, own in zip(fns, samples, strict=True):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            if until_done:
                sync()
            own.append((time.perf_counter() - start) * 1e3 / calls)
            sync()
    return samples


def paired_ratio(theirs: list[float] | tuple[float, ...],
                 mine: list[float] | tuple[float, ...]) -> float:
    """theirs / mine for two fns timed in turns, round by round: the median of the rounds'
    ratios (each round's two times taken back to back, under the same clocks and host load,
    so that a drift between rounds counts for neither)."""
    return statistics.median([t / m for t, m in zip(theirs, mine, strict=True)])


def paired_interval(theirs: list[float] | tuple[float, ...],
                    mine: list[float] | tuple[float, ...]) -> tuple[float, float, float]:
    """(low, high, coverage): where paired_ratio's median lies, read from the rounds' ratios
    alone (no assumption on their noise): the k-th smallest and k-th largest ratio, k the
    largest for which the chance that the true median falls outside is at most 5% (a round's
    ratio is above it or below it with even odds). 9 rounds: the 2nd of each end, 96%."""
    ratios = sorted(t / m for t, m in zip(theirs, mine, strict=True))
    n, k, tail = len(ratios), 1, 0.5 ** len(ratios)  # tail: P(fewer than k rounds below it)
    while k < n // 2 and tail + math.comb(n, k) * 0.5 ** n <= 0.025:
        tail += math.comb(n, k) * 0.5 ** n
        k += 1
    return ratios[k - 1], ratios[n - k], 1 - 2 * tail


def bound_verdict(ratio: float, bound: float,
                  interval: tuple[float, float, float] | None = None) -> str:
    """A ratio against the least it may be: met; missed; or, where it misses but the rounds'
    interval (paired_interval) reaches the bound, not resolved (the rounds cannot tell it
    from meeting the bound)."""
    if ratio >= bound:
        return "met"
    if interval is not None and interval[1] >= bound:
        return f"not resolved: the interval reaches {bound:g}x"
    return "missed"


def host_ms(fn: Callable[[], object], sync: Callable[[], None], gpu_ms: float) -> float:
    """host_times of one fn whose GPU time is `gpu_ms`: about HOST_ROUND_MS of it a round."""
    calls = max(2, min(HOST_CALLS, int(HOST_ROUND_MS / max(gpu_ms, 1e-6))))
    return host_times((fn,), sync, calls)[0]


def first_pass_verdict(first_calls_ms: list[float], options: BenchOptions,
                       cut_ms: float | None) -> Timed | None:
    """A first pass's row from its first calls alone, or None when its graph is to be timed:
    the early cut (module docstring); or, at a kernel of BOTH_CLOCKS_BELOW_MS or more whose
    first calls already spent the budget, those calls, as events (what do_bench would time:
    a graph of as many calls would add nothing but the wait)."""
    if options.cut_factor is None:
        return None
    times = quantiles(first_calls_ms)
    if cut_ms is not None and times[1] > cut_ms:
        return Timed(*times, method=CUT, events_p50=times[1])
    if times[1] >= BOTH_CLOCKS_BELOW_MS and sum(first_calls_ms) >= options.rep_ms:
        return Timed(*times, method=DO_BENCH, events_p50=times[1])
    return None


def _events(fn: Callable[[], object], options: BenchOptions) -> tuple[float, float, float]:
    # late: `tlab --help` imports no torch
    import triton.testing

    p20, p50, p80 = triton.testing.do_bench(
        fn, warmup=options.warmup_ms, rep=options.rep_ms, quantiles=list(QUANTILES))
    return float(p20), float(p50), float(p80)


@dataclass(frozen=True)
class FirstCalls:
    samples: list[float]  # each call's own events, in ms
    per_call_ms: float  # with the flush before it: what one call of a graph will take


@contextlib.contextmanager
def _capture_stream():
    """A side stream for the first calls and the capture (CUDA graphs cannot capture the
    default stream)."""
    # late: `tlab --help` imports no torch
    import torch

    with torch.cuda.stream(torch.cuda.Stream()):
        yield


def _first_calls(fn: Callable[[], object], budget_ms: float | None = None) -> FirstCalls:
    """One warm call on this stream (allocator, workspaces), then ESTIMATE_CALLS calls, each
    after a flush and timed by its own events. With a first pass's `budget_ms`, a kernel of
    BOTH_CLOCKS_BELOW_MS or more (by its first timed call) gets only the calls that fill the
    budget, two at least: they are its row (first_pass_verdict), and a config slower than
    the leader spends fewer of its long calls (at the largest matmuls, a few timed calls a
    config instead of ESTIMATE_CALLS)."""
    flush = _flush_buffer()
    flush.zero_()
    fn()
    if budget_ms is None:
        return _timed_calls(fn, flush, ESTIMATE_CALLS)
    first = _timed_calls(fn, flush, 1)  # waits for it: the count of the rest depends on it
    took = first.samples[0]
    more = ESTIMATE_CALLS - 1
    if took >= BOTH_CLOCKS_BELOW_MS:
        more = min(more, max(1, math.ceil((budget_ms - took) / took)))
    rest = _timed_calls(fn, flush, more)
    return FirstCalls(first.samples + rest.samples,
                      (first.per_call_ms + rest.per_call_ms * more) / (1 + more))


def _timed_calls(fn: Callable[[], object], flush, count: int) -> FirstCalls:
    """`count` calls, each after a flush and between its own events, then a wait for all."""
    # late: `tlab --help` imports no torch
    import torch

    marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(count + 1)]
    whole, rest = marks[0], marks[1:]
    whole[0].record()
    for begin, done in rest:
        flush.zero_()
        begin.record()
        fn()
        done.record()
    whole[1].record()
    torch.cuda.synchronize()
    samples = [begin.elapsed_time(done) for begin, done in rest]
    return FirstCalls(samples, max(whole[0].elapsed_time(whole[1]) / count, 1e-4))


def _graph(fn: Callable[[], object], options: BenchOptions,
           first: FirstCalls) -> tuple[float, float, float]:
    """Calls of `fn`, each after an L2 flush and between two events, captured in one CUDA
    graph (on the current side stream) and sized by the `first` calls; the graph is
    replayed for the warm-up budget, then for the timing budget, every call of every
    measured replay a sample."""

    # late: `tlab --help` imports no torch
    import torch

    flush = _flush_buffer()
    per_call = first.per_call_ms
    calls = min(MAX_GRAPH_CALLS, max(5, int(options.rep_ms / per_call)))
    # external=True: event-record nodes that can be timed after a replay (torch >= 2.8).
    marks = [(torch.cuda.Event(enable_timing=True, external=True),
              torch.cuda.Event(enable_timing=True, external=True)) for _ in range(calls)]
    graph = torch.cuda.CUDAGraph()
    # capture_begin/end, not torch.cuda.graph(): that empties the allocator's cache on
    # every capture. No GC while capturing: a collected Triton kernel would unload its
    # module, which invalidates the capture (what triton.testing guards against too).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        graph.capture_begin()
        try:
            for begin, done in marks:
                flush.zero_()
                begin.record()
                fn()
                done.record()
        finally:
            graph.capture_end()
    finally:
        if gc_was_enabled:
            gc.enable()
    replay_ms = calls * per_call
    for _ in range(max(1, round(options.warmup_ms / replay_ms)) if options.warmup_ms > 0 else 0):
        graph.replay()
    samples = []
    for _ in range(max(1, round(options.rep_ms / replay_ms))):
        graph.replay()
        torch.cuda.synchronize()
        samples += [begin.elapsed_time(done) for begin, done in marks]
    del graph
    return quantiles(samples)


_flush: list = []


def _flush_buffer():
    """One FLUSH_BYTES buffer per process, zeroed before every timed call."""
    if not _flush:
        # late: `tlab --help` imports no torch
        import torch

        _flush.append(torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda"))
    return _flush[0]


_warmed = False


def warm_up_gpu(seconds: float = 0.3) -> None:
    """Once per process, before its first timed call: keep the GPU busy long enough for its
    clocks to leave idle, so that a fresh worker's first row is not timed on a cold GPU."""
    global _warmed
    if _warmed:
        return
    # late: `tlab --help` imports no torch
    import torch

    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()
    _warmed = True
