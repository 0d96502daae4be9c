"""tlab check (the CI gate on committed configs), on copies of configs/. (The committed configs
themselves are checked by `make check`, which CI runs after the tests.)"""

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from helpers.commands import tlab
from helpers.paths import PLANTED, REPO

COMMITTED = REPO / "configs"


@pytest.fixture
def root(tmp_path):
    """A copy of one GPU's committed configs (the H200's) to corrupt: each check below runs
    every config it reads in the interpreter, and the other GPUs' add nothing to what these
    tests ask (`make check` runs them all)."""
    shutil.copytree(COMMITTED / "nvidia-h200", tmp_path / "configs" / "nvidia-h200")
    return tmp_path


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count))


def test_configs_that_are_not_what_their_results_pick_fail(tmp_path):
    from helpers.fixture_results import SLUG, write_softmax_fixture

    from tritonbench_lab.data.layout import Layout
    from tritonbench_lab.data.records import Winner
    from tritonbench_lab.data.store import load_records, write_table
    from tritonbench_lab.data.winners import pick_winners

    layout = Layout(tmp_path)
    write_softmax_fixture(tmp_path)
    winners = pick_winners(load_records(layout.results_file(SLUG, "softmax")))
    assert len(winners) == 3
    # A winner swapped for a slower config, and the last shape's row lost.
    edited = [winners[0], dataclasses.replace(winners[1], config="ROWS=1 num_warps=4")]
    write_table(layout.configs_file(SLUG, "softmax"), edited, Winner)
    result = tlab("check", "--root", str(tmp_path), "--interpret", "--no-timing")
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 2, result.stderr
    assert "softmax.csv:3: error: fp32 64x4096: the results pick 'ROWS=2 num_warps=8'" in errors[0]
    assert "no row for 1 winner(s)" in errors[1] and "fp32 64x16384" in errors[1]
    assert "re-run `tlab sweep softmax`" in errors[0]


def test_configs_tuned_before_a_parameter_was_added_still_pass(root):
    # softmax gained PER_SM, SPLIT, TILES and KEEP_LAST after configs had been committed; rows
    # written without them mean one program per tile, and check must accept (and run) them.
    path = root / "configs" / "nvidia-h200" / "softmax.csv"
    text = path.read_text()
    assert " PER_SM=0 SPLIT=1 TILES=1 KEEP_LAST=0," in text
    path.write_text(text.replace(" PER_SM=0 SPLIT=1 TILES=1 KEEP_LAST=0,", ","))
    result = tlab("check", "--root", str(root), "--interpret", "--kernel", "softmax",
                  "--dtype", "fp32")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 error(s)" in result.stdout


def test_corrupted_files_fail_with_one_line_per_problem(root):
    folder = root / "configs" / "nvidia-h200"
    for path in folder.glob("*.csv"):  # a few rows a file: `make check` runs every one
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:5]))
    edit(folder / "matmul.csv", "p50_ms,throughput", "p50,throughput")
    edit(folder / "softmax.csv", "ROWS=1 num_warps=4", "ROWS=3 num_warps=4")
    edit(folder / "rmsnorm.csv", "ROWS=1 num_warps=4", "ROWS=1 num_warps=4 SPLIT=2")
    # An unparsable number: the first p50 of add_rmsnorm becomes "fast".
    lines = (folder / "add_rmsnorm.csv").read_text().splitlines()
    fields = lines[1].split(",")
    fields[4] = "fast"
    lines[1] = ",".join(fields)
    (folder / "add_rmsnorm.csv").write_text("\n".join(lines) + "\n")
    shutil.copy(folder / "rmsnorm.csv", folder / "groupnorm.csv")  # an unknown kernel

    result = tlab("check", "--root", str(root), "--interpret")
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    expected = {
        "matmul.csv:1": "columns do not match the winners schema (missing: p50_ms; unexpected: p50)",
        "softmax.csv:": "is outside the softmax space: ROWS=3 is not one of",
        "rmsnorm.csv:": "unknown parameter(s) SPLIT",
        "add_rmsnorm.csv:2": "p50_ms is not a number: 'fast'",
        "groupnorm.csv:1": "unknown kernel 'groupnorm'",
    }
    for where, reason in expected.items():
        hits = [e for e in errors if where in e and reason in e]
        assert len(hits) >= 1, f"no error for {where}: {reason}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    assert len(errors) == 5 and "5 error(s)" in result.stdout, result.stdout + result.stderr


def test_a_config_that_computes_wrong_is_an_error():
    # Every config of the built-in spaces is correct, so plant a wrong one: the test kernel
    # module's MODE=1 adds 1 to every output.
    from helpers.fixture_results import kernel_winner

    from tritonbench_lab.gates.check import run_configs
    from tritonbench_lab.kernels import load_kernel_module

    load_kernel_module(PLANTED)
    rows = [(2 + m, dataclasses.replace(kernel_winner("planted", "fp32", "1000", 1.0, 1.0, "GB/s"),
                                        config=f"BLOCK=128 MODE={m} num_warps=4"))
            for m in (0, 1)]
    problems = run_configs(Path("planted.csv"), rows, "cpu" if os.environ.get(
        "TRITON_INTERPRET") == "1" else "cuda")
    assert [p.row for p in problems] == [3]
    assert "MODE=1" in problems[0].reason and "tolerance" in problems[0].reason


def test_a_config_two_files_share_runs_once_and_fails_in_both(monkeypatch):
    """Two GPUs' files holding the same wrong config: each file gets its error at its own
    row, and the config runs once (the check's verdicts are kept across files)."""
    from helpers.fixture_results import kernel_winner

    from tritonbench_lab.gates import check as check_module
    from tritonbench_lab.kernels import load_kernel_module

    load_kernel_module(PLANTED)
    calls = []
    real = check_module.run_config
    monkeypatch.setattr(check_module, "run_config",
                        lambda *a: calls.append(a[1]) or real(*a))
    wrong = dataclasses.replace(kernel_winner("planted", "fp32", "1000", 1.0, 1.0, "GB/s"),
                                config="BLOCK=128 MODE=1 num_warps=4")
    right = dataclasses.replace(wrong, config="BLOCK=128 MODE=0 num_warps=4")
    device = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
    ran = {}
    first = check_module.run_configs(Path("a/planted.csv"), [(2, right), (3, wrong)], device, ran)
    second = check_module.run_configs(Path("b/planted.csv"), [(5, wrong)], device, ran)
    assert [(p.path, p.row) for p in first + second] == [(Path("a/planted.csv"), 3),
                                                         (Path("b/planted.csv"), 5)]
    assert len(calls) == 2 and all("MODE=1" in p.reason for p in first + second)


def test_stale_rows_are_warnings_not_errors(root):
    folder = root / "configs" / "nvidia-h200"
    text = (folder / "matmul.csv").read_text()
    import triton

    current = triton.__version__
    stale = "2.9.0" if not current.startswith("2.9") else "3.0.0"
    (folder / "matmul.csv").write_text(text.replace(",3.6.0,", f",{stale},"))
    result = tlab("check", "--root", str(root), "--interpret", "--kernel", "matmul")
    assert result.returncode == 0
    assert f"tuned under triton {stale}" in result.stderr


def test_rows_of_another_source_of_the_module_are_stale(root):
    """A winner tuned on code the module no longer has is a warning (a sweep would measure its
    shape again), named with both hashes; rows of today's source are not."""
    import csv

    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.source import source_hash

    path = root / "configs" / "nvidia-h200" / "rope.csv"
    rows = list(csv.DictReader(path.open()))
    current = source_hash(get_spec("rope"))
    assert {r["source"] for r in rows} == {current}  # the committed rows are today's
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace(f",{current},", ",0123456789,")
    path.write_text("".join(lines))
    result = tlab("check", "--root", str(root), "--interpret", "--kernel", "rope", "--no-timing")
    assert result.returncode == 0, result.stderr
    stale = [line for line in result.stderr.splitlines() if "another source" in line]
    assert stale == [f"{path}:3: stale: 1 row(s) (line 3) tuned on another source of rope's "
                     f"module (0123456789, this is {current}): re-tune"]


def test_kernel_and_dtype_filters_pick_the_files_and_rows_checked(root):
    result = tlab("check", "--root", str(root), "--interpret", "--kernel", "matmul",
                  "--dtype", "fp16")
    assert result.returncode == 0, result.stderr
    files = sorted((root / "configs").glob("*/matmul.csv"))  # every GPU's
    fp16_rows = [line for f in files for line in f.read_text().splitlines() if ",fp16," in line]
    assert fp16_rows
    assert f"checked {len(files)} file(s), {len(fp16_rows)} valid row(s)" in result.stdout
    for f in (root / "configs").glob("*/layernorm.csv"):
        f.unlink()  # none yet
    missing = tlab("check", "--root", str(root), "--interpret", "--kernel", "layernorm")
    assert missing.returncode == 2
    assert "for kernel(s) layernorm; kernels with configs there: add," in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def test_gpu_name_checks_one_gpus_folder_and_refuses_an_unknown_one(root):
    other = root / "configs" / "other-gpu"
    other.mkdir()
    edit_from = root / "configs" / "nvidia-h200" / "softmax.csv"
    (other / "softmax.csv").write_text(edit_from.read_text().replace("ROWS=", "ROWZ=", 1))
    both = tlab("check", "--root", str(root), "--interpret", "--no-timing", "--kernel",
                "softmax", "--dtype", "fp32")
    assert both.returncode == 1 and "other-gpu/softmax.csv" in both.stderr
    one = tlab("check", "--root", str(root), "--interpret", "--no-timing", "--kernel",
               "softmax", "--dtype", "fp32", "--gpu-name", str(root / "configs" / "nvidia-h200"))
    assert one.returncode == 0, one.stderr
    assert "checked 1 file(s)" in one.stdout and "other-gpu" not in one.stdout + one.stderr
    unknown = tlab("check", "--root", str(root), "--interpret", "--gpu-name", "nvidia-b200")
    assert unknown.returncode == 2
    lines = unknown.stderr.strip().splitlines()
    assert len(lines) == 1 and "'nvidia-b200'" in lines[0]
    assert "nvidia-h200" in lines[0] and "other-gpu" in lines[0]
    kernel = tlab("check", "--root", str(root), "--interpret", "--gpu-name", "other-gpu",
                  "--kernel", "matmul")
    assert kernel.returncode == 2
    lines = kernel.stderr.strip().splitlines()
    assert len(lines) == 1 and "'other-gpu'" in lines[0] and "for kernel(s) matmul" in lines[0]
    with_matmul = sorted(f.parent.name for f in (root / "configs").glob("*/matmul.csv"))
    assert "nvidia-h200" in with_matmul and "other-gpu" not in with_matmul
    assert lines[0].endswith(f"folders with them: {', '.join(with_matmul)}")


def test_check_runs_configs_completed_with_added_parameters(tmp_path):
    # The planted kernel's launcher reads MODE itself; a row written before MODE existed
    # only runs if check launches the completed config.
    from helpers.fixture_results import kernel_winner

    from tritonbench_lab.data.records import Winner
    from tritonbench_lab.data.store import write_table

    row = dataclasses.replace(kernel_winner("planted", "fp32", "1000", 1.0, 1.0, "GB/s"),
                              config="BLOCK=128 num_warps=4")
    write_table(tmp_path / "configs" / "interpreter" / "planted.csv", [row], Winner)
    result = tlab("check", "--root", str(tmp_path), "--interpret", "--kernel-module",
                  str(PLANTED))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 valid row(s)" in result.stdout and "0 error(s)" in result.stdout


AXPY = str(REPO / "examples" / "axpy.py")


def test_a_user_kernel_module_swept_then_checked_passes(tmp_path):
    """The gate on a user's own kernel: the sweep's winners, checked with the same module;
    and retime, the GPU part of the gate, run here in the interpreter: its worker loads the
    user's module (without it every winner was a 'crash') and its statistic is the best of
    one median per fresh worker. Interpreter times: only that plumbing is under test."""
    from tritonbench_lab.data.records import replace
    from tritonbench_lab.gates.check import read_rows
    from tritonbench_lab.gates.retime import retime
    from tritonbench_lab.kernels import load_kernel_module

    sweep = tlab("sweep", "axpy", "--kernel-module", AXPY, "--interpret", "--root", str(tmp_path),
                 "--sizes", "1000,4099", "--dtype", "fp32", "--confirm", "1")
    assert sweep.returncode == 0, sweep.stderr
    result = tlab("check", "--root", str(tmp_path), "--interpret", "--kernel-module", AXPY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 valid row(s)" in result.stdout and "0 error(s)" in result.stdout
    # Without the module (from a folder whose pyproject.toml lists none) the kernel is
    # unknown: one error naming it, not a pass.
    unknown = tlab("check", "--root", str(tmp_path), "--interpret", cwd=tmp_path)
    assert unknown.returncode == 1 and "axpy" in unknown.stderr
    # Listed in the project's pyproject.toml, as this repository lists it: after the README's
    # sweep of axpy, `make check` (`tlab check`) knows it without -m.
    (tmp_path / "pyproject.toml").write_text(f'[tool.tlab]\nkernel-modules = ["{AXPY}"]\n')
    listed = tlab("check", "--root", str(tmp_path), "--interpret")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "2 valid row(s)" in listed.stdout and "0 error(s)" in listed.stdout

    load_kernel_module(AXPY)
    path = tmp_path / "configs" / "interpreter" / "axpy.csv"
    _, rows = read_rows(path)
    rows = rows[:1]
    timed = retime([(path, n, w) for n, w in rows], 1e9, (AXPY,), repeats=2, interpret=True)
    assert [t.status for t in timed] == ["ok"] and timed[0].failure(1e9) is None
    assert len(timed[0].samples) == 2 and timed[0].measured_ms == min(timed[0].samples)
    # Recorded 1000x faster than measured: the gate must fail it, naming its statistic.
    fast = [(n, replace(w, p50_ms=timed[0].measured_ms / 1000)) for n, w in rows]
    slow = retime([(path, n, w) for n, w in fast], 0.10, (AXPY,), repeats=2, interpret=True)
    assert "best of 2 fresh workers" in slow[0].failure(0.10)


@pytest.mark.gpu
def test_a_user_kernel_module_swept_then_checked_on_the_gpu(tmp_path):
    sweep = tlab("sweep", "axpy", "--kernel-module", AXPY, "--root", str(tmp_path),
                 "--sizes", "1000000,16777216")
    assert sweep.returncode == 0, sweep.stderr
    said = " ".join(sweep.stdout.split())  # each confirmation timed its host time too
    assert "eager vs torch: the PyTorch op's time over the winner's" in said
    from tritonbench_lab.data.store import load_winners

    (configs,) = (tmp_path / "configs").glob("*/axpy.csv")
    winners = load_winners(configs)
    assert winners and all(w.host_ms > 0 and w.op_host_ms > 0 for w in winners)
    result = tlab("check", "--root", str(tmp_path), "--kernel-module", AXPY)
    assert result.returncode == 0, result.stdout + result.stderr
    said = " ".join(result.stdout.split())  # a long tmp path wraps the table's title
    assert "0 error(s)" in said and "winners timed again" in said


class _ScriptedWorker:
    """Stands in for the fresh worker process of check's retime: each provider's p50."""

    times: dict = {}
    calls: list = []

    def __init__(self, *args, **kwargs):
        pass

    def run(self, task, timeouts):
        from tritonbench_lab.measure.worker import Outcome

        _ScriptedWorker.calls.append(task.provider)
        return Outcome("ok", p50_ms=_ScriptedWorker.times[task.provider])

    def stop(self):
        pass


# Passes: two for every winner, then one at a time while it is still too slow (4 at most).
@pytest.mark.parametrize("triton_ms, op_ms, op_recorded, fails, passes", [
    (1.20, 1.15, 1.0, False, 3),  # the whole GPU is 15% slower: the winner is not
    (1.50, 1.00, 1.0, True, 4),  # a slowed winner on a GPU as fast as the recording one
    (1.50, 1.15, 1.0, True, 4),  # a slowed winner on a slower GPU: 1.30x relative
    (1.20, None, None, True, 4),  # no op recorded: judged on the plain ratio
    (1.05, None, 1.0, False, 2),  # within tolerance: the op is never timed
])
def test_check_divides_a_slower_gpu_out_but_not_a_slower_winner(
        monkeypatch, triton_ms, op_ms, op_recorded, fails, passes):
    from tritonbench_lab.data.records import replace
    from tritonbench_lab.data.store import load_winners
    from tritonbench_lab.gates import retime as retime_module
    from tritonbench_lab.gates.retime import retime

    base = load_winners(REPO / "configs" / "nvidia-h200" / "matmul.csv")[-1]
    row = replace(base, p50_ms=1.0, op_p50_ms=op_recorded, method="do_bench")
    monkeypatch.setattr(retime_module, "Worker", _ScriptedWorker)
    _ScriptedWorker.times, _ScriptedWorker.calls = {"triton": triton_ms, "torch": op_ms}, []
    item = retime([(Path("m.csv"), 2, row)], 0.10, repeats=4)[0]
    assert bool(item.failure(0.10)) == fails
    timed_op = op_recorded is not None and triton_ms > 1.10
    assert len(item.samples) == passes
    assert _ScriptedWorker.calls.count("torch") == (passes - 2 if timed_op else 0)
    if timed_op:
        assert item.op_ratio == pytest.approx(op_ms / op_recorded)
        assert item.relative == pytest.approx(triton_ms / op_ms)
    if fails and timed_op:
        assert "relative to the PyTorch op" in item.failure(0.10)


@pytest.mark.parametrize("now_us, fails", [
    (4.6, False),  # 1.15x, but 0.6 us: what unchanged code moves between two H200s
    (5.2, True),  # 1.30x and 1.2 us: past both
    (4.3, False),  # within the tolerance
])
def test_a_few_microseconds_slower_is_not_a_regression_at_the_launch_floor(
        monkeypatch, now_us, fails):
    """A 4 us winner (rope at one decode token) is judged on the tolerance and on an
    absolute floor: no op recorded here, so only the plain ratio and the floor decide."""
    from tritonbench_lab.data.records import replace
    from tritonbench_lab.data.store import load_winners
    from tritonbench_lab.gates import retime as retime_module
    from tritonbench_lab.gates.retime import NOISE_FLOOR_MS, retime

    base = load_winners(REPO / "configs" / "nvidia-h200" / "rope.csv")[0]
    row = replace(base, p50_ms=0.004, op_p50_ms=None, method="cudagraph")
    monkeypatch.setattr(retime_module, "Worker", _ScriptedWorker)
    _ScriptedWorker.times, _ScriptedWorker.calls = {"triton": now_us / 1000}, []
    item = retime([(Path("rope.csv"), 2, row)], 0.10, repeats=4)[0]
    assert item.ratio == pytest.approx(now_us / 4.0)
    assert bool(item.failure(0.10)) == fails
    assert len(item.samples) == (4 if fails else 2)  # only a failing winner is timed again
    if fails:
        assert f"{1000 * NOISE_FLOOR_MS:g} us at least" in item.failure(0.10)


def test_check_starts_one_fresh_worker_per_pass_for_all_files(monkeypatch):
    from tritonbench_lab.data.records import replace
    from tritonbench_lab.data.store import load_winners
    from tritonbench_lab.gates import retime as retime_module
    from tritonbench_lab.gates.retime import retime

    started = []

    class Counting(_ScriptedWorker):
        def __init__(self, *args, **kwargs):
            started.append(self)

    base = load_winners(REPO / "configs" / "nvidia-h200" / "matmul.csv")[-1]
    items = [(Path(f"{name}.csv"), line, replace(base, p50_ms=1.0))
             for name in ("a", "b", "c") for line in (2, 3)]
    monkeypatch.setattr(retime_module, "Worker", Counting)
    _ScriptedWorker.times, _ScriptedWorker.calls = {"triton": 1.0, "torch": 1.0}, []
    timed = retime(items, 0.10, repeats=4)
    assert len(started) == 2  # two passes, each one process over every file's winners
    assert [(t.path.name, t.line) for t in timed] == [(p.name, n) for p, n, _ in items]
    assert all(len(t.samples) == 2 and t.failure(0.10) is None for t in timed)


def test_check_runs_each_config_at_its_cheapest_small_shape():
    """A softmax winner that shares each row among 128 programs runs at 2 x 1000 (512
    interpreted programs), not at the first small shape, 37 x 129 (9,472); a config written
    before TILES existed is completed first; without an estimate, the first small shape."""
    import dataclasses

    from tritonbench_lab.gates.check import verify_shape
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.spec import Shape

    softmax = get_spec("softmax")
    wide = {"ROWS": 1, "num_warps": 4, "PER_SM": 0, "SPLIT": 128}
    assert softmax.small_shapes[0] == Shape.of(rows=37, cols=129)
    assert verify_shape(softmax, wide) == Shape.of(rows=2, cols=1000)
    unknown = dataclasses.replace(softmax, interpreter_seconds=None)
    assert verify_shape(unknown, wide) == Shape.of(rows=37, cols=129)
