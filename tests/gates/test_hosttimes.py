"""`tlab host-times` (hosttimes.py) and the winner rule's host times (winners.py, rule 7):
which winners are timed, what is recorded and written, what is refused with every file left
as it was, and which host times a winner carries. The timing itself runs for real in the
interpreter (and on a GPU, marked `gpu`)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from helpers.fixture_results import SLUG, winner, write_softmax_fixture

from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import TORCH_OP, TRITON, HostTime, Winner
from tritonbench_lab.data.store import load_host_times, load_records, load_winners, write_table
from tritonbench_lab.data.winners import pick_winners
from tritonbench_lab.errors import TlabError
from tritonbench_lab.gates import hosttimes

FP = SimpleNamespace(gpu="Fixture GPU", gpu_slug=SLUG, torch="9.9", triton="9.9", tlab="0")


@pytest.fixture
def root(tmp_path, monkeypatch):
    """The softmax fixture's results and the configs they pick; its rows' source is
    'fixture', taken here for the kernel's current source."""
    layout = Layout(tmp_path)
    write_softmax_fixture(tmp_path)
    write_table(layout.configs_file(SLUG, "softmax"),
                pick_winners(load_records(layout.results_file(SLUG, "softmax"))), Winner)
    monkeypatch.setattr(hosttimes, "source_hash", lambda spec: "fixture")
    return layout


def scripted(monkeypatch, seen=None):
    """time_winner answering 10 us + the shape's index for tlab and 7 us for the op."""
    def fake(spec, winner, device, seed=0):
        (seen if seen is not None else []).append((winner.shape, device))
        index = ["64x1024", "64x4096", "64x16384"].index(winner.shape)
        return hosttimes.Timed((10 + index) / 1e3, 7 / 1e3, 20)

    monkeypatch.setattr(hosttimes, "time_winner", fake)


def run(layout, dtypes=None, fp=FP, notes=None):
    from tritonbench_lab.kernels import get_spec

    notes = [] if notes is None else notes
    return hosttimes.run_kernel(get_spec("softmax"), layout, fp, "cpu", dtypes, notes.append,
                                "host-run")


def test_each_winner_and_the_op_are_timed_recorded_and_written_into_the_configs(root, monkeypatch):
    seen: list = []
    scripted(monkeypatch, seen)
    before = load_winners(root.configs_file(SLUG, "softmax"))
    assert all(w.host_ms is None for w in before)
    notes: list[str] = []
    assert run(root, notes=notes) == 3
    assert seen == [("64x1024", "cpu"), ("64x4096", "cpu"), ("64x16384", "cpu")]
    rows = load_host_times(root.host_times_file(SLUG, "softmax"))
    assert root.host_times_file(SLUG, "softmax").parent.name == "host"
    assert [(r.shape, r.provider, r.host_ms) for r in rows] == [
        (s, p, ms) for i, s in enumerate(["64x1024", "64x4096", "64x16384"])
        for p, ms in ((TRITON, (10 + i) / 1e3), (TORCH_OP, 7 / 1e3))]
    assert {(r.run_id, r.source, r.torch, r.calls, r.launch) for r in rows} == {
        ("host-run", "fixture", "9.9", 20, "triton")}
    assert rows[0].config == before[0].config and rows[1].config == ""
    after = load_winners(root.configs_file(SLUG, "softmax"))
    assert [(w.host_ms, w.op_host_ms) for w in after] == [(0.010, 0.007), (0.011, 0.007),
                                                          (0.012, 0.007)]
    # nothing else of the configs changed
    assert [dataclasses.replace(w, host_ms=None, op_host_ms=None) for w in after] == before
    assert notes[0] == "softmax fp32 64x1024: tlab 10.0 us, the PyTorch op 7.0 us a call on the host"


def test_the_plan_hands_the_compile_pool_each_winner_at_its_shape(root):
    from tritonbench_lab.kernels import get_spec

    spec = get_spec("softmax")
    plan = hosttimes.plan_kernel(spec, root, FP, None, print)
    jobs = plan.jobs()
    assert [(j.kernel, j.sizes, j.dtype, j.seed) for j in jobs] == [
        ("softmax", (64, 1024), "fp32", 0), ("softmax", (64, 4096), "fp32", 0),
        ("softmax", (64, 16384), "fp32", 0)]
    assert all(j.config == spec.space.complete({"ROWS": 2, "num_warps": 8}) for j in jobs)


def test_winners_that_cannot_be_timed_here_are_named_and_nothing_is_written(root, monkeypatch):
    scripted(monkeypatch)
    configs = root.configs_file(SLUG, "softmax")
    before = configs.read_bytes()
    notes: list[str] = []
    assert run(root, fp=SimpleNamespace(**{**FP.__dict__, "triton": "9.8"}), notes=notes) == 0
    assert len(notes) == 3 and all("tuned under torch 9.9, triton 9.9" in n and
                                   "sweep it again first" in n for n in notes)
    assert run(root, dtypes=["bf16"]) == 0  # none of that dtype
    assert configs.read_bytes() == before
    assert not root.host_times_file(SLUG, "softmax").exists()


def test_to_time_names_why_each_winner_is_left_out():
    ok = dataclasses.replace(winner("64x64", "ROWS=1"), torch="t", triton="tr", tlab="tl",
                             source="s", op_p50_ms=1.0)
    stale = dataclasses.replace(ok, shape="64x128", source="old")
    alone = dataclasses.replace(ok, shape="64x256", op_p50_ms=None)
    todo, skipped = hosttimes.to_time([ok, stale, alone], ("t", "tr", "tl"), "s")
    assert todo == [ok]
    assert "another source of the kernel" in skipped[0]
    assert "no PyTorch op was timed" in skipped[1]


def test_a_configs_file_the_results_do_not_pick_is_refused_before_any_timing(root, monkeypatch):
    seen: list = []
    scripted(monkeypatch, seen)
    configs = root.configs_file(SLUG, "softmax")
    edited = load_winners(configs)
    edited[0] = dataclasses.replace(edited[0], config="ROWS=1 num_warps=4")
    write_table(configs, edited, Winner)
    before = configs.read_bytes()
    with pytest.raises(TlabError, match="does not hold what its results pick"):
        run(root)
    assert seen == [] and configs.read_bytes() == before
    assert not root.host_times_file(SLUG, "softmax").exists()


def test_a_kernel_without_results_is_skipped(tmp_path, monkeypatch):
    layout = Layout(tmp_path)
    write_softmax_fixture(tmp_path)
    configs = layout.configs_file(SLUG, "softmax")
    write_table(configs, pick_winners(load_records(layout.results_file(SLUG, "softmax"))), Winner)
    layout.results_file(SLUG, "softmax").unlink()
    notes: list[str] = []
    assert run(layout, notes=notes) == 0 and "no results file" in notes[0]


# --- rule 7: which host times a winner carries ----------------------------------------------

def host(provider, ms, run_id="h1", when="2026-02-01T00:00:00+00:00", config="ROWS=2 num_warps=8",
         **kw):
    base = dict(kernel="softmax", dtype="fp32", shape="64x1024", provider=provider,
                config=config if provider == TRITON else "", host_ms=ms, calls=20,
                launch="triton", gpu="Fixture GPU", gpu_slug=SLUG, torch="9.9", triton="9.9",
                tlab="0", source="fixture", run_id=run_id, timestamp=when)
    return HostTime(**{**base, **kw})


def picked_host(rows, host_rows):
    (first, *_) = pick_winners(rows, host_rows)
    return first.host_ms, first.op_host_ms


def test_a_winner_carries_the_newest_pair_of_its_config_toolchain_and_source(tmp_path):
    rows = [r for r in load_records(write_softmax_fixture(tmp_path) / "softmax.csv")
            if r.shape == "64x1024"]
    assert picked_host(rows, []) == (None, None)  # the fixture's rows have no host times
    pair = [host(TRITON, 0.010), host(TORCH_OP, 0.007)]
    assert picked_host(rows, pair) == (0.010, 0.007)
    newer = [host(TRITON, 0.004, "h2", "2026-03-01T00:00:00+00:00"),
             host(TORCH_OP, 0.006, "h2", "2026-03-01T00:00:00+00:00")]
    assert picked_host(rows, pair + newer) == (0.004, 0.006)
    # half a pair, another config, toolchain or source, another shape: not this winner's
    others = [host(TRITON, 0.001, "h3", "2026-04-01T00:00:00+00:00"),
              host(TRITON, 0.001, "h4", config="ROWS=1 num_warps=4"), host(TORCH_OP, 0.001, "h4"),
              host(TRITON, 0.001, "h5", triton="9.8"), host(TORCH_OP, 0.001, "h5", triton="9.8"),
              host(TRITON, 0.001, "h6", source="old"), host(TORCH_OP, 0.001, "h6", source="old"),
              host(TRITON, 0.001, "h7", shape="64x4096"), host(TORCH_OP, 0.001, "h7", shape="64x4096")]
    assert picked_host(rows, pair + others) == (0.010, 0.007)


def test_a_confirmation_newer_than_the_host_run_speaks_for_the_winner(tmp_path):
    rows = [r for r in load_records(write_softmax_fixture(tmp_path) / "softmax.csv")
            if r.shape == "64x1024"]
    timed = [dataclasses.replace(r, host_ms=0.5, timestamp="2026-05-01T00:00:00+00:00")
             for r in rows]
    older = [host(TRITON, 0.010), host(TORCH_OP, 0.007)]
    assert picked_host(timed, older) == (0.5, 0.5)
    newer = [host(TRITON, 0.010, when="2026-06-01T00:00:00+00:00"),
             host(TORCH_OP, 0.007, when="2026-06-01T00:00:00+00:00")]
    assert picked_host(timed, newer) == (0.010, 0.007)


# --- the timing itself ------------------------------------------------------------------------

def test_time_winner_times_both_calls_in_turns(device):
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.space import config_text

    spec = get_spec("softmax")
    config = spec.space.complete(spec.space.default)
    w = winner("3x100", config_text(config), dtype="fp32", kernel="softmax", p50_ms=0.01,
               op_p50_ms=0.01)
    timed = hosttimes.time_winner(spec, w, device)
    assert timed.mine_ms > 0 and timed.op_ms > 0 and timed.calls == 20
    slow = hosttimes.time_winner(spec, dataclasses.replace(w, op_p50_ms=4.0), device)
    assert slow.calls == 2  # about HOST_ROUND_MS of the longer GPU time a round, 2 at least


def test_the_gate_wants_a_winners_host_times_backed_by_rows(root, monkeypatch):
    from tritonbench_lab.data.store import read_table
    from tritonbench_lab.gates.check import against_results

    scripted(monkeypatch)
    run(root)
    configs, results = root.configs_file(SLUG, "softmax"), root.results_file(SLUG, "softmax")
    held = list(enumerate(read_table(configs, Winner), start=2))
    assert against_results(configs, held, results) == []
    root.host_times_file(SLUG, "softmax").unlink()  # committed the configs without it
    problems = against_results(configs, held, results)
    assert len(problems) == 3 and all("host times 0.01" in p.reason and
                                      "tlab host-times" in p.reason for p in problems)


def test_host_shift_names_the_eager_choices_a_slower_host_moved():
    """GPU 40 us against the op's 40 us: tlab's launch of 19 us (x HOST_SLACK 2 = 38) leaves
    the call GPU-bound, 33 us (66) makes the op the eager choice; the op's host is 1.5x too."""
    from helpers.fixture_results import winner

    def pair(shape, mine, op, p50=0.039, config="c"):
        return winner(shape, config, p50_ms=p50, op_p50_ms=0.040, host_ms=mine / 1e3,
                      op_host_ms=op / 1e3 if op else None)

    before = [pair("1", 19, 8), pair("2", 10, 8), pair("3", 10, 8), pair("4", 10, None),
              pair("5", 10, 8)]
    after = [pair("1", 33, 12), pair("2", 12, 12), pair("3", 8, 12), pair("4", 12, 12),
             pair("5", 12, 12, config="other")]  # 4: no pair before; 5: another config
    shift = hosttimes.host_shift(before, after)
    assert shift.winners == 3
    assert shift.mine == pytest.approx(1.2) and shift.op == pytest.approx(1.5)
    assert shift.moved == ["matmul bf16 1 (tlab -> the op)"]
    text = shift.sentence()
    assert "tlab's 1.20x, the op's 1.50x" in text and "moved at 1 of 3 winner(s)" in text
    assert "matmul bf16 1 (tlab -> the op)" in text
    assert "nothing to compare" in hosttimes.host_shift([], after).sentence()
    many = hosttimes.host_shift(before[:1] * 8, after[:1] * 8)
    assert many.sentence(shown=6).endswith("and 2 more")


def test_a_run_says_how_far_it_moved_the_configs_host_times(root, monkeypatch):
    """What `tlab host-times` prints last (shift_since over the plans it timed): nothing to
    compare on a first run; a host twice as slow on the next."""
    from tritonbench_lab.kernels import get_spec

    def timed_with(scale):
        def fake(spec, winner, device, seed=0):
            index = ["64x1024", "64x4096", "64x16384"].index(winner.shape)
            return hosttimes.Timed(scale * (10 + index) / 1e3, scale * 7 / 1e3, 20)
        monkeypatch.setattr(hosttimes, "time_winner", fake)
        plan = hosttimes.plan_kernel(get_spec("softmax"), root, FP, None, lambda _: None)
        hosttimes.time_kernel(plan, root, FP, "cpu", lambda _: None, f"run-{scale}")
        return hosttimes.shift_since([plan], root, SLUG)

    first = timed_with(1)
    assert first.winners == 0 and "nothing to compare" in first.sentence()
    second = timed_with(2)
    assert second.winners == 3
    assert (second.mine, second.op) == (pytest.approx(2.0), pytest.approx(2.0))
    assert "tlab's 2.00x, the op's 2.00x" in second.sentence()
