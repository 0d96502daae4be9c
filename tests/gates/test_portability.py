"""Whether one GPU's configs hold on another: the trust rule (data/portability.py), the
runtime's use of a trusted GPU's file on a GPU without configs of its own (tuned.find, ops),
and `tlab portability` end to end in Triton's interpreter."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from helpers.commands import tlab

from tritonbench_lab import ops, tuned
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.portability import (
    TOLERANCE,
    beaten,
    sweep_again,
    trust_file,
    trust_rows,
    trusted_sources,
)
from tritonbench_lab.data.records import CRASH, OK, TORCH_OP, TRITON, Carried, Trust, Winner
from tritonbench_lab.data.store import load_winners, read_table, write_table
from tritonbench_lab.gates.portability import bench_of, pairs

B = "BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=4 TMA=0 STREAM_K=0"


def carried(shape, regret, status=OK, kernel="matmul", dtype="bf16", stamp="2026-12-06T00:00:00"):
    native = 1.0
    return Carried(kernel=kernel, dtype=dtype, shape=shape, from_gpu="sim-h200",
                   carried_config="A", native_config="B", status=status,
                   carried_ms=native * regret if status == OK else None, native_ms=native,
                   op_ms=1.2, rounds=3, gpu="Sim H100", gpu_slug="sim-h100", capability="9.0",
                   torch="9", triton="9", tlab="0", source="s", run_id="r", timestamp=stamp)


def test_configs_are_trusted_only_within_the_tolerance_at_every_shape_and_without_failure():
    rows = [carried("1024x1024x1024", 1.01), carried("4096x4096x4096", 1.03),
            carried("1024x1024x1024", 1.5, kernel="softmax", dtype="fp32"),
            carried("2048x2048x2048", 1.0, kernel="softmax", dtype="fp32"),
            carried("8x8", None, CRASH, kernel="add", dtype="fp32"),
            carried("16x16", 1.0, kernel="add", dtype="fp32")]
    trust = {(t.kernel, t.dtype): t for t in trust_rows(rows)}
    matmul, softmax, add = trust["matmul", "bf16"], trust["softmax", "fp32"], trust["add", "fp32"]
    assert matmul.trusted and matmul.worst_regret == pytest.approx(1.03)
    assert matmul.worst_shape == "4096x4096x4096" and matmul.shapes == 2
    assert not softmax.trusted and softmax.worst_regret == pytest.approx(1.5)
    assert not add.trusted and add.failed == 1  # a config that fails here is never carried
    assert TOLERANCE == 1.05


def test_a_later_run_replaces_an_earlier_one_at_its_shape():
    early = carried("1024x1024x1024", 1.40, stamp="2026-12-06T00:00:00")
    late = carried("1024x1024x1024", 1.02, stamp="2026-12-07T00:00:00")
    (trust,) = trust_rows([late, early])
    assert trust.trusted and trust.worst_regret == pytest.approx(1.02) and trust.shapes == 1


def test_a_carried_config_well_ahead_of_the_own_winner_names_the_sweep_that_checks_it():
    rows = [carried("1024x1024x1024", 0.95), carried("2048x2048x2048", 0.975),
            carried("4096x4096x4096", None, CRASH)]
    (ahead,) = beaten(rows)  # 2.5% ahead is within fresh workers' noise; a crash is no win
    assert ahead.shape == "1024x1024x1024"
    assert sweep_again(ahead) == "tlab sweep matmul --dtype bf16 --shapes 1024x1024x1024 --fresh"


def winner(shape, config=B, p50_ms=1.0, op_p50_ms=1.5, kernel="matmul", dtype="bf16"):
    return Winner(kernel=kernel, dtype=dtype, shape=shape, config=config, p50_ms=p50_ms,
                  throughput=100.0, metric="TFLOP/s", method="do_bench", warmup_ms=25,
                  rep_ms=100, best_baseline="torch", baseline_p50_ms=op_p50_ms,
                  baseline_throughput=None, speedup=op_p50_ms / p50_ms, op_p50_ms=op_p50_ms,
                  gpu="Sim", torch="9", triton="9", tlab="0", source="s", date="2026-12-06",
                  run_id="r", host_ms=None, op_host_ms=None)


@pytest.fixture
def configs(tmp_path, monkeypatch):
    """An H200 stand-in that tuned matmul bf16 and softmax fp32, and an H100 stand-in that
    tuned nothing but measured which of the H200's configs hold on it: matmul bf16 (worst
    1.02x) yes, softmax fp32 (worst 1.12x) no."""
    monkeypatch.setenv(tuned.CONFIG_DIR_ENV, str(tmp_path))
    write_table(tmp_path / "sim-h200" / "matmul.csv", [winner("4096x4096x4096")], Winner)
    write_table(tmp_path / "sim-h200" / "softmax.csv", [winner(
        "8192x4096", "ROWS=1 num_warps=8 PER_SM=0 SPLIT=1 TILES=1 KEEP_LAST=0",
        kernel="softmax", dtype="fp32")], Winner)
    rows = [carried("4096x4096x4096", 1.02),
            carried("8192x4096", 1.12, kernel="softmax", dtype="fp32")]
    write_table(trust_file(tmp_path, "sim-h100", "sim-h200"), trust_rows(rows), Trust)
    tuned.clear_cache()
    ops.clear()
    yield tmp_path
    tuned.clear_cache()
    ops.clear()


def test_own_file_first(configs):
    write_table(configs / "sim-h100" / "matmul.csv", [winner("4096x4096x4096", p50_ms=2.0)],
                Winner)
    tuned.clear_cache()
    found = tuned.find("matmul", "bf16", (4096, 4096, 4096), gpu="sim-h100")
    assert found.path.parent.name == "sim-h100" and found.borrowed is None
    assert found.row.p50_ms == 2.0


def test_a_trusted_gpus_file_serves_a_gpu_with_none_of_its_own(configs):
    found = tuned.find("matmul", "bf16", (4096, 4096, 4096), gpu="sim-h100")
    assert found.path == configs / "sim-h200" / "matmul.csv" and found.exact
    assert found.borrowed.from_gpu == "sim-h200" and found.borrowed.trusted
    choice = ops.explain("matmul", "bf16", "4096x4096x4096", gpu="sim-h100")
    assert choice.provider == TRITON and choice.config == tuned.completed("matmul", {
        k: int(v) for k, v in (kv.split("=") for kv in B.split())})
    assert "from sim-h200's configs" in choice.reason and "1.020x" in choice.reason
    assert tuned.lookup("matmul", "bf16", gpu="sim-h100", M=4096, N=4096, K=4096)["BLOCK_M"] == 128


def test_an_untrusted_gpus_file_is_not_used(configs):
    found = tuned.find("softmax", "fp32", (8192, 4096), gpu="sim-h100")
    assert found.row is None and found.borrowed is None
    assert found.path == configs / "sim-h100" / "softmax.csv"
    assert ops.explain("softmax", "fp32", "8192x4096", gpu="sim-h100").provider == TORCH_OP


def test_no_file_and_no_measurement_means_the_op(configs):
    found = tuned.find("matmul", "bf16", (4096, 4096, 4096), gpu="sim-other")
    assert found.row is None and found.borrowed is None
    assert trusted_sources(configs, "sim-other", "matmul", "bf16") == []
    assert ops.explain("matmul", "bf16", "4096x4096x4096", gpu="sim-other").provider == TORCH_OP


def test_trust_is_per_dtype(configs):
    assert tuned.find("matmul", "fp16", (4096, 4096, 4096), gpu="sim-h100").row is None


def test_pairs_are_the_shapes_both_gpus_tuned_on_the_current_source(tmp_path):
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.source import source_hash

    source = source_hash(get_spec("matmul"))
    mine = [dataclasses.replace(winner(s), source=source) for s in ("1024x1024x1024", "2048x2048x2048")]
    theirs = [dataclasses.replace(winner(s, p50_ms=0.9), source=source)
              for s in ("2048x2048x2048", "4096x4096x4096")]
    theirs.append(dataclasses.replace(winner("1024x1024x1024"), source="older"))
    write_table(tmp_path / "configs" / "here" / "matmul.csv", mine, Winner)
    write_table(tmp_path / "configs" / "there" / "matmul.csv", theirs, Winner)
    write_table(tmp_path / "configs" / "there" / "add.csv", [winner("64", kernel="add")], Winner)
    notes: list[str] = []
    found = pairs(Layout(tmp_path), "there", "here", None, None, notes.append)
    assert [(p.native.shape, p.carried.p50_ms) for p in found] == [("2048x2048x2048", 0.9)]
    assert notes == ["matmul bf16 1024x1024x1024: a winner of another source of the kernel "
                     "(sweep it again first)"]  # add: only one GPU tuned it, not asked for
    pairs(Layout(tmp_path), "there", "here", ["add"], None, notes.append)
    assert notes[-1] == "add: no configs on here"


def test_a_short_winner_is_timed_by_both_clocks_as_the_gate_times_it():
    assert bench_of(winner("64", p50_ms=0.005)).timing == "both"
    assert bench_of(winner("8192x8192x8192", p50_ms=1.5)).timing == "events"


def test_a_run_stopped_part_way_has_handed_over_the_kernels_it_finished(monkeypatch):
    """measure() hands each kernel's samples over when its rounds end: an interrupt in the
    second kernel leaves the first one's (which the command records at once), and every
    worker, started or not, is stopped."""
    from tritonbench_lab.gates import portability as gate

    made = []

    class FakeWorker:
        def __init__(self, *args):
            self.stopped = False
            made.append(self)

        def start_in_background(self):
            pass

        def stop(self):
            self.stopped = True

    def fake_time_pair(worker, pair, got, carried_first):
        if pair.native.kernel == "softmax":
            raise KeyboardInterrupt
        got.carried.append(1.0)

    monkeypatch.setattr(gate, "Worker", FakeWorker)
    monkeypatch.setattr(gate, "_time_pair", fake_time_pair)
    found = [gate.Pair(winner(s), winner(s)) for s in ("64", "128")]
    found.append(gate.Pair(winner("8x64", kernel="softmax"), winner("8x64", kernel="softmax")))
    handed = []
    with pytest.raises(KeyboardInterrupt):
        gate.measure(found, rounds=3, kernel_done=lambda ps, ss: handed.append((ps, ss)))
    assert [(len(ps), [len(s.carried) for s in ss]) for ps, ss in handed] == [(2, [3, 3])]
    assert len(made) == 6 and all(w.stopped for w in made)


# --- the command, in Triton's interpreter -------------------------------------------------

@pytest.fixture(scope="module")
def tuned_here(tmp_path_factory) -> Path:
    """add fp32 tuned in the interpreter at two small sizes; the same winners filed as those of
    another GPU, one of them changed to a config that loses here."""
    root = tmp_path_factory.mktemp("portability")
    done = tlab("sweep", "add", "--dtype", "fp32", "--sizes", "1024,4096", "--baselines", "torch",
                "--root", str(root))  # the op's time is what portability reads
    assert done.returncode == 0, done.stderr
    own = load_winners(root / "configs" / "interpreter" / "add.csv")
    theirs = [dataclasses.replace(own[0], config="BLOCK=128 num_warps=4"), *own[1:]]
    write_table(root / "configs" / "sim-gpu" / "add.csv", theirs, Winner)
    return root


def test_portability_times_the_other_gpus_winners_here_and_writes_rows_and_trust(tuned_here):
    done = tlab("portability", "sim-gpu", "--root", str(tuned_here), "--rounds", "2")
    assert done.returncode == 0, done.stderr
    rows = read_table(tuned_here / "results" / "interpreter" / "portability" / "sim-gpu.csv",
                      Carried)
    assert sorted(r.shape for r in rows) == ["1024", "4096"]
    assert all(r.status == OK and r.rounds == 2 and r.op_ms for r in rows)
    changed = next(r for r in rows if r.shape == "1024")
    assert changed.carried_config == "BLOCK=128 num_warps=4" != changed.native_config
    same = next(r for r in rows if r.shape == "4096")
    assert same.regret == 1.0  # one config: timed once, for both sides
    (trust,) = read_table(trust_file(tuned_here / "configs", "interpreter", "sim-gpu"), Trust)
    assert (trust.kernel, trust.dtype, trust.shapes, trust.from_gpu) == ("add", "fp32", 2, "sim-gpu")
    assert "do sim-gpu's configs hold on interpreter?" in done.stdout
    assert "add: 2 shape(s) recorded in" in done.stdout  # as soon as add's rounds ended


@pytest.mark.parametrize("args, phrase", [
    (["interpreter"], "is this GPU"),
    (["nowhere"], "no configs of 'nowhere'"),
    (["sim-gpu", "--kernel", "softmax"], "softmax: no configs on"),
])
def test_bad_portability_requests_are_one_line_and_touch_nothing(tuned_here, args, phrase):
    before = sorted(str(p) for p in tuned_here.rglob("*"))
    done = tlab("portability", *args, "--root", str(tuned_here))
    assert phrase in done.stdout + done.stderr
    if done.returncode:
        assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert sorted(str(p) for p in tuned_here.rglob("*")) == before


def test_report_and_plot_show_the_carried_configs_as_a_table_and_a_picture(tuned_here, tmp_path):
    done = tlab("portability", "sim-gpu", "--root", str(tuned_here), "--rounds", "1")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "plots"
    for command in ("plot", "report"):
        done = tlab(command, "--gpu-name", "interpreter", "--root", str(tuned_here),
                    "--out", str(out))
        assert done.returncode == 0, done.stderr
    assert (out / "interpreter" / "portability-sim-gpu.svg").stat().st_size > 0
    report = (out / "interpreter" / "REPORT.md").read_text()
    assert "### sim-gpu's configs on interpreter" in report
    assert "![sim-gpu on interpreter](portability-sim-gpu.svg)" in report
    assert "| add | fp32 | 2 | 1 |" in report  # two shapes, one of them the same config
