"""The timing rule (timing.py): which clock judges a row, and when the two disagree. The
clocks themselves need a GPU (test_gpu_clocks_agree_on_a_long_kernel)."""

import pytest
import torch

from tritonbench_lab.data.records import CUDAGRAPH, CUT, DO_BENCH
from tritonbench_lab.measure import timing
from tritonbench_lab.measure.timing import (
    BOTH_CLOCKS_BELOW_MS,
    CUT_FACTOR,
    DISAGREE,
    GRAPH_ALONE_BELOW_MS,
    HOST_CALLS,
    HOST_ROUNDS,
    SHORT_KERNEL_MS,
    STEADY_WARMUP_MS,
    BenchOptions,
    first_pass_verdict,
    host_ms,
    host_rounds,
    host_times,
    judge,
    quantiles,
    time_call,
)


def test_a_short_kernel_is_judged_on_its_graph_time():
    events, graph = (0.024, 0.025, 0.027), (0.0062, 0.0065, 0.0069)
    timed = judge(events, graph)
    assert (timed.p20, timed.p50, timed.p80) == graph and timed.method == CUDAGRAPH
    assert timed.events_p50 == 0.025 and timed.graph_p50 == 0.0065
    assert timed.disagree == "yes"  # launch overhead: 3.8x


def test_a_long_kernel_is_judged_on_its_events_time():
    events, graph = (1.60, 1.62, 1.65), (1.59, 1.61, 1.63)
    timed = judge(events, graph)
    assert timed.p50 == 1.62 and timed.method == DO_BENCH and timed.disagree == "no"
    # At the threshold: a graph median of exactly SHORT_KERNEL_MS is not short.
    edge = judge((0.021, 0.022, 0.023), (0.019, SHORT_KERNEL_MS, 0.021))
    assert edge.method == DO_BENCH


def test_disagreement_is_relative_to_the_faster_clock():
    just_within = judge((1.0, 1.0 + DISAGREE * 0.99, 1.2), (0.9, 1.0, 1.1))
    assert just_within.disagree == "no"
    beyond = judge((1.0, 1.0 + DISAGREE * 1.01, 1.2), (0.9, 1.0, 1.1))
    assert beyond.disagree == "yes"
    slower_graph = judge((0.9, 1.0, 1.1), (1.0, 1.0 + DISAGREE * 1.01, 1.2))
    assert slower_graph.disagree == "yes"  # flagged whichever clock is slower


def test_a_long_kernel_whose_events_read_high_is_judged_on_its_graph_time():
    # Events above the graph by more than DISAGREE can only be host time (module docstring).
    inflated = judge((0.030, 0.0330, 0.040), (0.0268, 0.0272, 0.0276))
    assert inflated.method == CUDAGRAPH and inflated.p50 == 0.0272
    within = judge((0.027, 0.0272 * (1 + DISAGREE * 0.99), 0.031), (0.0268, 0.0272, 0.0276))
    assert within.method == DO_BENCH
    # A graph slower than the events is not host time: the events still judge.
    assert judge((0.9, 1.0, 1.1), (1.2, 1.3, 1.4)).method == DO_BENCH


def test_one_clock_alone_judges_and_raises_no_flag():
    assert judge((1.0, 1.1, 1.2), None).method == DO_BENCH
    only_graph = judge(None, (0.5, 0.6, 0.7))
    assert only_graph.method == CUDAGRAPH and only_graph.disagree == ""
    with pytest.raises(ValueError):
        judge(None, None)


def test_quantiles_interpolate_like_torch():
    samples = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0]
    expected = torch.quantile(torch.tensor(samples, dtype=torch.float64),
                              torch.tensor([0.2, 0.5, 0.8], dtype=torch.float64)).tolist()
    assert quantiles(samples) == pytest.approx(expected)
    assert quantiles([2.5]) == (2.5, 2.5, 2.5)


def test_auto_timing_ranks_the_first_pass_by_graph_and_takes_both_elsewhere(tmp_path):
    import dataclasses

    from helpers.sweeps import request_for

    from tritonbench_lab.data.records import CONFIRM, CONTEND, SWEEP, TRITON
    from tritonbench_lab.kernels import get_spec

    spec = get_spec("softmax")
    request = dataclasses.replace(request_for(spec, [torch.float32], spec.small_shapes[:1],
                                              tmp_path), first_bench=BenchOptions(rep_ms=5))
    assert request.bench_for(SWEEP, TRITON).timing == "cudagraph"
    assert request.bench_for(SWEEP, TRITON).rep_ms == 5
    assert request.bench_for(SWEEP, "torch").timing == "both"
    assert request.bench_for(CONTEND, TRITON).timing == "both"
    assert request.bench_for(CONFIRM, TRITON).timing == "both"
    events = dataclasses.replace(request, timing="events")
    assert {events.bench_for(p, TRITON).timing for p in (SWEEP, CONTEND, CONFIRM)} == {"events"}
    no_first = dataclasses.replace(request, first_bench=None)
    assert no_first.bench_for(SWEEP, TRITON).timing == "both"
    # A shape whose fastest row is long: events alone after the first pass.
    long, short = BOTH_CLOCKS_BELOW_MS, BOTH_CLOCKS_BELOW_MS * 0.99
    assert request.bench_for(CONFIRM, TRITON, long).timing == "events"
    assert request.bench_for(CONTEND, "torch", long).timing == "events"
    assert request.bench_for(CONFIRM, TRITON, short).timing == "both"
    assert request.bench_for(SWEEP, TRITON, long).timing == "cudagraph"
    # A shape whose fastest row is far under SHORT_KERNEL_MS: the graph alone (it judges
    # every contender there); just above that, both clocks again; a chosen clock stays.
    tiny = GRAPH_ALONE_BELOW_MS * 0.99
    assert GRAPH_ALONE_BELOW_MS < SHORT_KERNEL_MS
    assert {request.bench_for(p, prov, tiny).timing for p, prov in
            ((CONTEND, TRITON), (CONFIRM, TRITON), (CONFIRM, "torch"))} == {"cudagraph"}
    assert request.bench_for(CONTEND, TRITON, GRAPH_ALONE_BELOW_MS).timing == "both"
    assert events.bench_for(CONFIRM, TRITON, tiny).timing == "events"
    assert dataclasses.replace(request, timing="both").bench_for(
        CONFIRM, TRITON, tiny).timing == "both"
    # ... and the timings that decide warm the GPU to its steady clock first there.
    assert request.bench_for(CONFIRM, TRITON, long).warmup_ms == STEADY_WARMUP_MS
    assert request.bench_for(CONTEND, "torch", long).warmup_ms == STEADY_WARMUP_MS
    assert events.bench_for(CONFIRM, TRITON, long).warmup_ms == STEADY_WARMUP_MS
    for phase, fastest in ((SWEEP, long), (CONFIRM, short), (CONFIRM, None)):
        assert request.bench_for(phase, TRITON, fastest).warmup_ms == request.bench.warmup_ms
    patient = dataclasses.replace(request, bench=BenchOptions(warmup_ms=STEADY_WARMUP_MS * 2))
    assert patient.bench_for(CONTEND, TRITON, long).warmup_ms == STEADY_WARMUP_MS * 2
    # Only the graph clock's first pass over the configs may cut a config early.
    assert request.bench_for(SWEEP, TRITON, long).cut_factor == CUT_FACTOR
    assert request.bench_for(SWEEP, TRITON).cut_factor == CUT_FACTOR
    assert {request.bench_for(p, prov, long).cut_factor for p, prov in
            ((SWEEP, "torch"), (CONTEND, TRITON), (CONFIRM, TRITON))} == {None}
    assert events.bench_for(SWEEP, TRITON, long).cut_factor is None
    chosen_graph = dataclasses.replace(request, timing="cudagraph")
    assert chosen_graph.bench_for(SWEEP, TRITON, long).cut_factor is None
    assert no_first.bench_for(SWEEP, TRITON, long).cut_factor is None


class FakeClock:
    """TEST DATA: time.perf_counter for timing.py, advanced by the calls timed (seconds)."""

    def __init__(self, monkeypatch):
        self.now = 0.0
        monkeypatch.setattr("tritonbench_lab.measure.timing.time.perf_counter", lambda: self.now)

    def costing(self, seconds, log=None, name=""):
        def call():
            self.now += seconds
            if log is not None:
                log.append(name)
        return call


def test_host_times_take_turns_and_keep_the_sync_off_the_clock(monkeypatch):
    clock, log = FakeClock(monkeypatch), []
    fns = (clock.costing(1e-6, log, "a"), clock.costing(3e-6, log, "b"))
    sync = clock.costing(1.0, log, "sync")  # waiting on the GPU: never a host time
    assert host_times(fns, sync, calls=4, rounds=2) == [pytest.approx(1e-3), pytest.approx(3e-3)]
    assert log == ["a", "b", "sync"] + (["a"] * 4 + ["sync"] + ["b"] * 4 + ["sync"]) * 2
    # until_done: a call's time in a loop of eager calls, the wait for the GPU included
    (eager,) = host_times(fns[:1], sync, calls=4, rounds=2, until_done=True)
    assert eager == pytest.approx((4e-6 + 1.0) / 4 * 1e3)


def test_host_rounds_give_each_rounds_time_and_host_times_their_median(monkeypatch):
    """TEST DATA: a call costing 5 us warm, then 3, 1 and 2 us a call in three rounds."""
    clock = FakeClock(monkeypatch)
    costs = iter([5e-6] + [3e-6] * 2 + [1e-6] * 2 + [2e-6] * 2)

    def call():
        clock.now += next(costs)

    assert host_rounds((call,), lambda: None, calls=2, rounds=3) == [
        [pytest.approx(3e-3), pytest.approx(1e-3), pytest.approx(2e-3)]]
    costs = iter([5e-6] + [3e-6] * 2 + [1e-6] * 2 + [2e-6] * 2)
    assert host_times((call,), lambda: None, calls=2, rounds=3) == [pytest.approx(2e-3)]


@pytest.mark.parametrize("gpu_ms, calls", [(0.003, HOST_CALLS), (1.0, 10), (50.0, 2)])
def test_host_ms_holds_about_a_round_budget_of_gpu_work(monkeypatch, gpu_ms, calls):
    clock, log = FakeClock(monkeypatch), []
    assert host_ms(clock.costing(2e-5, log), lambda: None, gpu_ms) == pytest.approx(0.02)
    assert len(log) == 1 + HOST_ROUNDS * calls


def test_a_first_pass_row_comes_from_its_first_calls_when_cut_or_long_enough():
    first_pass = BenchOptions(warmup_ms=5, rep_ms=5, timing="cudagraph", cut_factor=CUT_FACTOR)
    slow = [3.0, 3.1, 0.1, 2.9, 3.2]  # one fast outlier does not save it
    cut = first_pass_verdict(slow, first_pass, cut_ms=2.0)
    assert cut.method == CUT and cut.p50 == 3.0 and cut.events_p50 == 3.0
    # nor does one slow call condemn a fast config; short calls leave the graph to time it
    assert first_pass_verdict([0.03, 0.01, 0.01, 2.9, 0.01], first_pass, cut_ms=2.0) is None
    # A long kernel whose calls filled the 5 ms budget: they are its row, by events.
    long = [1.4, 1.5, 1.45, 1.42, 1.6]
    kept = first_pass_verdict(long, first_pass, cut_ms=2.0)
    assert kept.method == DO_BENCH and kept.p50 == 1.45
    assert first_pass_verdict(long, first_pass, cut_ms=None).method == DO_BENCH
    # ... but not when they fall short of it, or the kernel is short (events read launches)
    assert first_pass_verdict([x / 4 for x in long], first_pass, cut_ms=None) is None
    many_short = [BOTH_CLOCKS_BELOW_MS * 0.9] * 60
    assert first_pass_verdict(many_short, first_pass, cut_ms=None) is None
    # Phases other than the first pass always time their graph.
    full = BenchOptions(timing="both")
    assert first_pass_verdict(slow, full, cut_ms=2.0) is None
    assert first_pass_verdict([200.0] * 5, full, cut_ms=None) is None


def test_a_worker_cuts_only_against_a_long_leader_of_the_same_case():
    from tritonbench_lab.measure.attempt import Attempts

    child = Attempts((), BenchOptions())
    first_pass = BenchOptions(rep_ms=5, timing="cudagraph", cut_factor=CUT_FACTOR)
    assert child._cut_ms(first_pass) is None  # nothing timed here yet
    child.leader_ms = BOTH_CLOCKS_BELOW_MS * 2
    assert child._cut_ms(first_pass) == pytest.approx(CUT_FACTOR * BOTH_CLOCKS_BELOW_MS * 2)
    assert child._cut_ms(BenchOptions(timing="both")) is None  # not a first pass
    child.leader_ms = BOTH_CLOCKS_BELOW_MS * 0.9  # events may read launches there: no cut
    assert child._cut_ms(first_pass) is None


def test_a_worker_keeps_the_last_few_cases_with_their_leaders(monkeypatch):
    """A sweep times several shapes in turn while its configs compile: going back to a
    shape keeps its inputs, its reference and its early cut's leader."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.attempt import Attempts, Task
    from tritonbench_lab.measure.cases import CASES_KEPT

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = get_spec("add")
    child = Attempts((), BenchOptions())

    def visit(n, leader=None):
        child._prepare(spec, Task("add", "triton", (n,), "fp32", {}))
        if leader is not None:
            child.leader_ms = leader
        return child.inputs, child.reference, child.leader_ms

    first = visit(101, leader=0.5)
    second = visit(203, leader=0.7)
    assert second[0]["x"].shape == (203,)
    inputs, reference, leader = visit(101)  # kept: the same tensors, the same leader
    assert inputs is first[0] and reference is first[1] and leader == 0.5
    for n in range(300, 300 + CASES_KEPT - 1):  # CASES_KEPT cases in all: 101 still kept
        visit(n)
    assert visit(101)[0] is first[0]
    for n in range(400, 400 + CASES_KEPT):  # past CASES_KEPT: 101, least recently used, goes
        visit(n)
    inputs, reference, leader = visit(101)  # made again, with no leader yet
    assert inputs is not first[0] and leader is None
    assert inputs["x"].shape == (101,)


def test_a_case_that_does_not_fit_beside_the_kept_ones_is_made_again_alone(monkeypatch):
    import torch

    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.attempt import Attempts, Task

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    real = get_spec("add")

    class Tight:
        """The add spec on a device where a case of 300 elements or more fits only when
        the child keeps no other case (or never, `never_fits`)."""

        def __init__(self, child, never_fits=False):
            self.child, self.never_fits = child, never_fits

        def __getattr__(self, name):
            return getattr(real, name)

        def make_inputs(self, shape, dtype, device, seed):
            if dict(shape.dims)["n"] >= 300 and (self.never_fits or self.child.cases.kept):
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate")
            return real.make_inputs(shape, dtype, device, seed)

    def case(n):
        return Task("add", "triton", (n,), "fp32", {})

    child = Attempts((), BenchOptions())
    spec = Tight(child)
    for n in (101, 203):
        child._prepare(spec, case(n))
    assert len(child.cases.kept) == 1
    child._prepare(spec, case(301))  # does not fit beside 101 and 203: made alone
    assert child.inputs["x"].shape == (301,) and not child.cases.kept
    child._prepare(spec, case(102))  # a small one fits beside it: 301 is kept
    assert list(child.cases.kept) == [("add", (301,), "fp32", 0)]
    # With nothing kept to let go, the error is the task's, as before.
    alone = Attempts((), BenchOptions())
    with pytest.raises(torch.cuda.OutOfMemoryError):
        alone._prepare(Tight(alone, never_fits=True), case(302))
    assert alone.case_key is None and alone.inputs is None


def test_a_worker_keeps_the_fastest_uncut_first_pass_time_of_its_case(monkeypatch):
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure import attempt
    from tritonbench_lab.measure.timing import Timed

    spec = get_spec("add")

    def task_for(spec, shape, bench):
        return attempt.Task(spec.name, "triton", shape.sizes, "fp32", spec.space.default, 0, bench)
    readings = iter([(2.0, CUDAGRAPH), (1.0, CUDAGRAPH), (0.5, CUT), (3.0, CUDAGRAPH)])
    asked = []

    def scripted(fn, options, interpreting, cut_ms=None, repeat=False):
        asked.append(cut_ms)
        p50, method = next(readings)
        return Timed(p50, p50, p50, method)

    monkeypatch.setattr(attempt, "time_call", scripted)
    child = attempt.Attempts((), BenchOptions())
    first_pass = BenchOptions(rep_ms=5, timing="cudagraph", cut_factor=CUT_FACTOR)
    task = task_for(spec, spec.small_shapes[0], bench=first_pass)
    for _ in range(4):
        assert child.run(task).status == "ok"
    # 2.0 led, then 1.0; the cut row's 0.5 is not a leader's time (its calls were few)
    assert asked == [None, 2.0 * CUT_FACTOR, 1.0 * CUT_FACTOR, 1.0 * CUT_FACTOR]
    other = task_for(spec, spec.small_shapes[1], bench=first_pass)
    readings = iter([(9.0, CUDAGRAPH)])
    child.run(other)
    assert asked[-1] is None  # a new case starts without a leader


@pytest.mark.gpu
def test_gpu_clocks_agree_on_a_long_kernel_and_graph_removes_launch_gaps():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    long = time_call(lambda: a @ a, BenchOptions(timing="both"), False)
    assert long.disagree == "no" and long.method == DO_BENCH, long
    small = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)

    def slow_launch():  # ~200 us of Python before a ~5 us kernel: launch-bound by design
        sum(range(20000))
        return small @ small

    short = time_call(slow_launch, BenchOptions(timing="both"), False)
    assert short.method == CUDAGRAPH and short.graph_p50 < short.events_p50
    assert short.disagree == "yes", short


@pytest.mark.gpu
def test_gpu_a_first_pass_config_far_slower_than_its_leader_is_cut_after_its_first_calls():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    # As the sweep's first pass times it: no warm-up replay of the graph.
    first_pass = BenchOptions(warmup_ms=0, rep_ms=5, timing="cudagraph", cut_factor=CUT_FACTOR)
    whole = time_call(lambda: a @ a, first_pass, False)
    assert whole.method == CUDAGRAPH
    cut = time_call(lambda: a @ a, first_pass, False, cut_ms=whole.p50 / 2)
    assert cut.method == CUT and cut.p50 == pytest.approx(whole.p50, rel=0.2), (cut, whole)
    kept = time_call(lambda: a @ a, first_pass, False, cut_ms=whole.p50 * 2)
    assert kept.method == CUDAGRAPH


@pytest.mark.gpu
def test_gpu_a_long_first_pass_kernel_gets_only_the_calls_that_fill_its_budget():
    from tritonbench_lab.measure.timing import ESTIMATE_CALLS, _capture_stream, _first_calls

    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)  # ~1.5 ms an H200
    small = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    with _capture_stream():
        long_calls = _first_calls(lambda: big @ big, budget_ms=5)
        assert 2 <= len(long_calls.samples) < ESTIMATE_CALLS, long_calls
        # about the budget: not far short of it, nor a call past it
        assert 5 * 0.8 <= sum(long_calls.samples) < 5 + 2 * max(long_calls.samples), long_calls
        assert len(_first_calls(lambda: big @ big).samples) == ESTIMATE_CALLS
        assert len(_first_calls(lambda: small @ small, budget_ms=5).samples) == ESTIMATE_CALLS


def test_a_paired_interval_is_read_from_the_ordered_ratios_with_its_coverage():
    """TEST DATA: ratios 1/9 ... 9/9 (theirs 1 a round, mine 9 to 1): with 9 rounds the
    interval runs from the 2nd smallest ratio to the 2nd largest (96%: the true median lies
    below both with chance 10/512, above both alike); 5 rounds can only say min to max (94%);
    20 rounds keep the 6th of each end (a tail of 0.0207 each side)."""
    mine = [9, 8, 7, 6, 5, 4, 3, 2, 1]
    low, high, coverage = timing.paired_interval([1] * 9, mine)
    assert (low, high) == (pytest.approx(1 / 8), pytest.approx(1 / 2))
    assert coverage == pytest.approx(1 - 2 * 10 / 512)
    assert timing.paired_ratio([1] * 9, mine) == pytest.approx(1 / 5)
    assert timing.paired_interval([1] * 5, [1, 2, 3, 4, 5]) == (
        pytest.approx(1 / 5), 1.0, pytest.approx(1 - 2 / 32))
    low, high, coverage = timing.paired_interval([1] * 20, list(range(1, 21)))
    assert (low, high) == (pytest.approx(1 / 15), pytest.approx(1 / 6))
    assert coverage == pytest.approx(0.9586, abs=1e-4)


def test_a_ratio_short_of_its_bound_is_missed_unless_its_interval_reaches_the_bound():
    assert timing.bound_verdict(0.99, 0.98) == "met"
    assert timing.bound_verdict(0.96, 0.98) == "missed"
    assert timing.bound_verdict(0.96, 0.98, (0.94, 0.97, 0.96)) == "missed"
    assert timing.bound_verdict(0.96, 0.98, (0.93, 0.99, 0.96)) == (
        "not resolved: the interval reaches 0.98x")


def test_without_a_gpu_a_short_call_is_repeated_and_one_slow_call_does_not_decide(monkeypatch):
    """Wall-clock timing in the interpreter: a baseline's call of 0.02 ms whose first call
    took 11.65 ms (a CPU hiccup) is repeated up to INTERPRETER_MAX_REPS and judged by the
    median; one of 30 ms twice (the budget leaves the slowest call out); a kernel's call once."""
    clock = iter([])

    def scripted(durations_ms):
        nonlocal clock
        moments, now = [], 0.0
        for ms in durations_ms:
            moments += [now, now + ms / 1e3]
            now += ms / 1e3 + 1.0
        clock = iter(moments)

    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))
    calls = []
    scripted([11.65] + [0.021] * 20)
    short = time_call(lambda: calls.append(1), BenchOptions(), True, repeat=True)
    assert len(calls) == timing.INTERPRETER_MAX_REPS
    assert short.p50 == pytest.approx(0.021) and short.method == "interpreter"
    calls.clear()
    scripted([30.0] * 5)
    long = time_call(lambda: calls.append(1), BenchOptions(), True, repeat=True)
    assert len(calls) == 2 and long.p50 == pytest.approx(30.0)
    calls.clear()
    scripted([11.65] + [0.021] * 5)
    kernel = time_call(lambda: calls.append(1), BenchOptions(), True)
    assert len(calls) == 1 and kernel.p50 == pytest.approx(11.65)
