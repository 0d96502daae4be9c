"""The timing rule (timing.py): which clock judges a row, and when the two disagree. The
clocks themselves need a GPU (test_gpu_clocks_agree_on_a_long_kernel)."""

import pytest
import torch

from tritonbench_lab.records import CUDAGRAPH, DO_BENCH
from tritonbench_lab.timing import (
    BOTH_CLOCKS_BELOW_MS,
    DISAGREE,
    SHORT_KERNEL_MS,
    STEADY_WARMUP_MS,
    BenchOptions,
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

    from test_sweep import request_for

    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.records import CONFIRM, CONTEND, SWEEP, TRITON

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
    # ... and the timings that decide warm the GPU to its steady clock first there.
    assert request.bench_for(CONFIRM, TRITON, long).warmup_ms == STEADY_WARMUP_MS
    assert request.bench_for(CONTEND, "torch", long).warmup_ms == STEADY_WARMUP_MS
    assert events.bench_for(CONFIRM, TRITON, long).warmup_ms == STEADY_WARMUP_MS
    for phase, fastest in ((SWEEP, long), (CONFIRM, short), (CONFIRM, None)):
        assert request.bench_for(phase, TRITON, fastest).warmup_ms == request.bench.warmup_ms
    patient = dataclasses.replace(request, bench=BenchOptions(warmup_ms=STEADY_WARMUP_MS * 2))
    assert patient.bench_for(CONTEND, TRITON, long).warmup_ms == STEADY_WARMUP_MS * 2


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
