"""The model benchmark's block (gates/modelbench.py): both op sets compute the same block as
its float64 run, in prefill and in decode, at a tiny width on the CPU; the report's ratios and
targets from rows whose numbers are chosen by hand. Its timings are GPU work (`tlab
model-bench`)."""

import time

import pytest
import torch
from helpers.backend import INTERPRETING
from helpers.fixture_results import winner, write_winners
from helpers.ops_state import ops_reading

from tritonbench_lab.gates import modelbench as mb

TINY = mb.Width("tiny", 64, 2, 96, vocab=97)  # an odd vocabulary, as GPT-2's
LOADS = (mb.Workload("prefill 2x8", 2, 8), mb.Workload("decode b3", 3, 1, 5))


@pytest.mark.parametrize("load", LOADS, ids=lambda w: w.name)
@pytest.mark.parametrize("op", mb.OP_SETS, ids=lambda o: o.name)
def test_each_op_set_computes_the_block_of_the_float64_run(op, load):
    ref = mb.block(mb.TorchOps, mb.weights(TINY, torch.float64, "cpu"), TINY,
                   mb.make_inputs(TINY, load, torch.float64, "cpu"))
    out = mb.block(op, mb.prepared(mb.weights(TINY, torch.float32, "cpu")), TINY,
                   mb.make_inputs(TINY, load, torch.float32, "cpu"))
    assert out.shape == (load.batch, load.tokens, TINY.vocab)
    assert mb.error_of(out, ref) < 1e-5
    assert ref.abs().max() > 0.1  # activations of unit size, not vanishing


def test_decode_attends_over_the_cache_and_prefill_is_causal():
    """A decode step's output changes with the cache; a prefill's first token does not see
    the second."""
    load = LOADS[1]
    w = mb.weights(TINY, torch.float64, "cpu")
    inputs = mb.make_inputs(TINY, load, torch.float64, "cpu")
    before = mb.block(mb.TorchOps, w, TINY, inputs)
    inputs.v_cache = inputs.v_cache + 1.0
    assert not torch.allclose(before, mb.block(mb.TorchOps, w, TINY, inputs))
    prefill = mb.make_inputs(TINY, LOADS[0], torch.float64, "cpu")
    first = mb.block(mb.TorchOps, w, TINY, prefill)[:, 0]
    prefill.x[:, 1] += 1.0
    assert torch.allclose(first, mb.block(mb.TorchOps, w, TINY, prefill)[:, 0])


def test_the_lm_head_is_timed_alone_prepared_against_torch_matmul():
    load = LOADS[0]
    w = mb.prepared(mb.weights(TINY, torch.float32, "cpu"))
    inputs = mb.make_inputs(TINY, load, torch.float32, "cpu")
    called = []

    def bench(fn):
        called.append(tuple(fn().shape))
        return 2.0 if len(called) == 1 else 0.5

    rows = mb.measure_head(TINY, load, w, inputs, bench)
    assert [r.variant for r in rows] == ["torch head", "tlab head"]
    assert called == [(16, 97), (16, 97)]  # 2 x 8 tokens, the odd vocabulary
    assert all(r.error < 1e-5 for r in rows)
    assert w["head"].padded.shape == (64, 128)  # 97 columns padded to 128, once
    assert mb.ratios(rows) == [("tiny", load.name, "tlab head", 4.0)]


def test_the_report_sets_each_tlab_variant_against_its_pytorch_counterpart():
    rows = [mb.Timed("1b", "prefill 1x2048", "torch eager", 2.0, 1e-3),
            mb.Timed("1b", "prefill 1x2048", "tlab eager", 1.6, 1e-3, host_ms=0.25),
            mb.Timed("1b", "prefill 1x2048", "torch compiled", 1.0, 1e-3, spread=0.01),
            mb.Timed("1b", "prefill 1x2048", "tlab compiled", 1.04, 1e-3, spread=0.06),
            mb.Timed("1b", "prefill 1x2048", "torch eager, no head", 1.0, 1e-3),
            mb.Timed("1b", "prefill 1x2048", "tlab eager, no head", 0.8, 1e-3),
            mb.Timed("1b", "decode b1", "torch eager", 0.1, 1e-3),
            mb.Timed("1b", "decode b1", "tlab eager", None, None, "RuntimeError: boom")]
    assert sorted(mb.ratios(rows)) == [("1b", "prefill 1x2048", "tlab compiled", 1.0 / 1.04),
                                       ("1b", "prefill 1x2048", "tlab eager", 2.0 / 1.6),
                                       ("1b", "prefill 1x2048", "tlab eager, no head", 1.25)]
    text = "\n".join(mb.report(rows, {"1b": 3}))
    assert "| 1b | prefill 1x2048 | tlab eager | 1.6 | 1.25x | 1.00e-03 | 0.25 |" in text
    assert "| 1b | decode b1 | tlab eager | - | - | - | - | RuntimeError: boom |" in text
    assert "compiled with ops >= 1.03x torch.compile, prefill: 0.962x (missed)" in text
    assert "ops eager >= 1.10x PyTorch eager, prefill: 1.250x (met)" in text
    assert ("worst 0.962x (1b prefill 1x2048, tlab compiled; rounds' spread (6%) and (1%); "
            "missed)") in text
    assert "| 1b | prefill 1x2048 | tlab compiled | 1.04 (6%) | 0.96x |" in text
    assert "graph breaks in the 1b block with tlab's ops: 3 (missed; target 0)" in text
    assert "LM head, odd vocabulary, prepared >= 2x torch.matmul, prefill: not measured" in text
    assert "the block alone, ops eager over PyTorch eager, prefill: 1.250x (no target)" in text


def test_the_slowest_variant_leaves_out_pairs_that_run_the_same_code_and_says_so():
    """A compiled block without the head whose graph ran no tlab node is Inductor's code for
    the PyTorch ops on both sides: its 0.90x is noise, named but not the verdict; the same
    ratio with a tlab node, or with the (prepared) head, is the verdict."""
    def pair(variant, mine, note):
        return [mb.Timed("1b", "decode b1", f"torch {variant}", 1.0, 1e-3),
                mb.Timed("1b", "decode b1", f"tlab {variant}", mine, 1e-3, note)]

    rows = (pair("compiled, no head", 1.0 / 0.9, "tlab nodes: none")
            + pair("compiled", 1.0 / 0.99, "tlab nodes: none")
            + pair("eager", 1.0, ""))
    text = "\n".join(mb.report(rows, {}))
    assert ("worst 0.990x (1b decode b1, tlab compiled; met); 1 pairs running the same code "
            "both sides left out (block alone, compiled, no tlab node), their worst 0.900x") in text
    rows = pair("compiled, no head", 1.0 / 0.9, "tlab nodes: layernorm x2") + pair("eager", 1.0, "")
    assert "worst 0.900x (1b decode b1, tlab compiled, no head; missed)" in "\n".join(
        mb.report(rows, {}))


def test_a_slowest_pair_whose_interval_reaches_the_bound_is_not_resolved():
    """The worst pair's verdict reads its rounds' interval (timing.paired_interval): a 0.96x
    whose rounds spread from 0.90x to 1.02x cannot be told from 2% slower or better (not
    resolved); the same median with rounds from 0.95x to 0.97x is a miss.
    TEST DATA: torch 1.0 ms every round; tlab's rounds give the ratios listed."""
    def rows(ratios):
        mine = tuple(1.0 / r for r in ratios)
        return [mb.Timed("1b", "decode b1", "torch compiled", 1.0, 1e-3, spread=0.0,
                         rounds=(1.0,) * len(ratios)),
                mb.Timed("1b", "decode b1", "tlab compiled", 1.0 / 0.96, 1e-3, spread=0.1,
                         rounds=mine)]

    wide = "\n".join(mb.report(rows((0.90, 0.91, 0.93, 0.95, 0.96, 0.97, 0.99, 1.01, 1.02)), {}))
    assert ("worst 0.960x (1b decode b1, tlab compiled; rounds' spread (10%) and (0%), 96% "
            "interval 0.910-1.010x; not resolved: the interval reaches 0.98x)") in wide
    narrow = "\n".join(mb.report(rows((0.95, 0.95, 0.955, 0.96, 0.96, 0.96, 0.965, 0.97, 0.97)),
                                 {}))
    assert "96% interval 0.950-0.970x; missed)" in narrow


def test_a_ratio_of_pairs_timed_in_turns_is_the_median_of_its_rounds_ratios():
    """TEST DATA: three rounds in which the GPU ran 2x slower once for both sides: round by
    round tlab is 0.91x, 0.95x and 1.05x torch (median 0.95x); the medians' ratio would say
    0.91x, and the fastest rounds' 0.95x by luck."""
    rows = [mb.Timed("1b", "decode b1", "torch eager", 1.0, 1e-3, rounds=(1.0, 1.0, 2.0)),
            mb.Timed("1b", "decode b1", "tlab eager", 1.1, 1e-3, rounds=(1.1, 1.05, 1.9))]
    ((*_, ratio),) = mb.ratios(rows)
    assert ratio == pytest.approx(1.0 / 1.05)


def test_every_variant_is_checked_and_timed_with_and_without_the_head(tmp_path, monkeypatch):
    """`measure` on the CPU with a stand-in clock: each eager and compiled variant of both op
    sets, with the head and without, checked against its own float64 run, then the head
    alone; each compiled variant with tlab's ops notes the opaque nodes its graph ran.
    TEST DATA: layernorm tuned at the decode step's 3 rows of 64, 2x the op."""
    write_winners(tmp_path / "interpreter" / "layernorm.csv", [
        winner("3x64", "ROWS=1 num_warps=4 TILE_COLS=0", kernel="layernorm", dtype="fp32",
               p50_ms=1.0, op_p50_ms=2.0)])
    with ops_reading(monkeypatch, tmp_path):
        rows = mb.measure(TINY, LOADS[1], torch.float32, "cpu", False,
                          lambda fn: (fn(), 1.0)[1], host=lambda fn: (fn(), 0.5)[1])
    names = [r.variant for r in rows]
    assert names == [f"{op} {how}{tail}" for tail in ("", ", no head")
                     for how in ("eager", "compiled") for op in ("torch", "tlab")] + [
        "torch head", "tlab head"]
    assert all(r.ms == 1.0 and r.error < 1e-5 for r in rows), rows
    assert [r.host_ms for r in rows] == [0.5] * (len(rows) - 2) + [None, None]  # not the head's
    notes = {r.variant: r.note for r in rows if r.note}
    # CPU tensors run tlab's kernels only in the interpreter (whose configs these are)
    ran = "tlab nodes: layernorm x2" if INTERPRETING else "tlab nodes: none"
    assert notes == {"tlab compiled": ran, "tlab compiled, no head": ran}


def test_a_variant_and_its_counterpart_are_timed_in_turns(monkeypatch):
    """Each pair's calls alternate (torch, tlab, torch, ...), each variant's time the median
    of its ROUNDS: with a clock that only grows, timing one after the other would give the
    first the smaller median."""
    clock = iter(range(1, 1000))
    rows = mb.measure(TINY, LOADS[1], torch.float32, "cpu", False,
                      lambda fn: float(next(clock)))
    ms = {r.variant: r.ms for r in rows}
    turns = 2 * mb.ROUNDS  # calls of one pair: torch's the odd ones, tlab's the even
    middle = 2.0 * (mb.ROUNDS // 2) + 1  # the median of 1, 3, ..., 2 ROUNDS - 1
    assert [ms["torch eager"], ms["tlab eager"]] == [middle, middle + 1]
    assert [ms["torch compiled"], ms["tlab compiled"]] == [turns + middle, turns + middle + 1]
    rounds = {r.variant: r.rounds for r in rows}
    assert rounds["tlab eager"] == tuple(2.0 * i for i in range(1, mb.ROUNDS + 1))
    spread = {r.variant: r.spread for r in rows}  # torch eager's times: 1, 3, ..., 2 ROUNDS - 1
    assert spread["torch eager"] == pytest.approx((2 * mb.ROUNDS - 2) / middle)


def test_host_time_is_the_time_to_issue_a_call():
    calls = []
    ms = mb.host_time(lambda: calls.append(time.sleep(0.002)), calls=5, rounds=2)
    assert len(calls) == 11 and 2.0 <= ms < 50.0  # one call before the clock starts


def test_the_block_with_tlabs_ops_compiles_without_a_graph_break():
    """What `tlab model-bench` reports as graph breaks, at the tiny width: the registered ops
    (runtime/library.py) keep the whole block one graph."""
    assert mb.graph_breaks(TINY, LOADS[0], torch.float32, "cpu") == 0
    assert mb.graph_breaks(TINY, LOADS[1], torch.float32, "cpu") == 0


def test_the_weights_tables_and_cache_are_kept_in_place_for_cuda_graphs():
    """A CUDA graph reads a static input where it is; any other it copies at every replay:
    a model's weights (the prepared head's buffers too) and a decode loop's cache are static."""
    load = LOADS[1]
    w = mb.prepared(mb.weights(TINY, torch.float32, "cpu"))
    inputs = mb.make_inputs(TINY, load, torch.float32, "cpu")
    mb.keep_in_place(w, inputs)
    static = [*(t for k, t in w.items() if k != "head"), *w["head"].buffers(), inputs.cos,
              inputs.sin, inputs.k_cache, inputs.v_cache]
    assert all(getattr(t, "_dynamo_static_input_type", None) for t in static)
    assert getattr(inputs.x, "_dynamo_static_input_type", None) is None  # the step's input


def test_loop_time_is_a_calls_time_in_a_loop_of_calls_finished(monkeypatch):
    """loop_time: two untimed calls (the first warms, the second sizes the loop), then as
    many calls as take about loop_ms back to back (timing.host_times, after its own warm
    call), the clock stopped after the sync.
    TEST DATA: a clock that each call moves by 2 ms, and the sync by 0.5 ms."""
    clock = [0.0]
    monkeypatch.setattr(mb.time, "perf_counter", lambda: clock[0])
    calls, syncs = [], []

    def call():
        calls.append(clock[0])
        clock[0] += 0.002

    def sync():
        syncs.append(clock[0])
        clock[0] += 0.0005

    got = mb.loop_time(call, sync, loop_ms=26.0)
    assert len(calls) == 3 + 10  # the sizing call took 2.5 ms with its sync: 26 // 2.5
    assert got == pytest.approx((10 * 2.0 + 0.5) / 10)  # the loop's sync is on the clock
    assert len(syncs) == 5  # after each untimed call, the loop, and after the round
