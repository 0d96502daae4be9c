"""Recording the shapes a program calls ops with (runtime/recording.py, ops.record_shapes,
$TLAB_RECORD_SHAPES), and `tlab sweep --shapes-from` tuning them: run the model once, tune
what it called, and ops finds those shapes tuned."""

import os
import subprocess
import sys
import warnings

import pytest
import torch
from helpers.backend import INTERPRETING
from helpers.commands import tlab
from helpers.fixture_results import winner, write_winners
from helpers.paths import REPO

from tritonbench_lab import ops
from tritonbench_lab.data.records import HERE, NEARBY, REFUSED, TORCH_OP, UNTUNED, Called
from tritonbench_lab.data.store import read_table
from tritonbench_lab.runtime import recording

pytestmark = pytest.mark.skipif(not INTERPRETING, reason="ops on CPU tensors run the "
                                "interpreter's decision only with TRITON_INTERPRET=1")


@pytest.fixture(autouse=True)
def fresh_memo():
    ops.clear()
    yield
    recording.stop()
    ops.clear()


def calls(path) -> list[tuple[str, str, str, str]]:
    return [(r.kernel, r.dtype, r.shape, r.tuned) for r in read_table(path, Called)]


def random(*shape, dtype=torch.float32):
    generator = torch.Generator().manual_seed(sum(shape))
    return torch.randn(*shape, generator=generator).to(dtype)


def test_each_new_kernel_dtype_and_shape_is_recorded_once(tmp_path):
    path = tmp_path / "calls.csv"
    a, b = random(33, 17), random(17, 9)
    with ops.record_shapes(path):
        ops.matmul(a, b)
        ops.matmul(a, b)  # memoised: not recorded again
        ops.softmax(random(3, 100))
        ops.softmax(random(5, 100))
        ops.add(random(10), random(10))
    ops.softmax(random(7, 100))  # after the block: nothing recorded
    assert calls(path) == [("matmul", "fp32", "33x9x17", UNTUNED),
                           ("softmax", "fp32", "3x100", UNTUNED),
                           ("softmax", "fp32", "5x100", UNTUNED),
                           ("add", "fp32", "10", UNTUNED)]
    assert {r.gpu_slug for r in read_table(path, Called)} == {"interpreter"}
    assert {r.provider for r in read_table(path, Called)} == {TORCH_OP}


def test_calls_under_autocast_record_nothing_and_say_so(tmp_path):
    """Under torch.autocast ops calls the PyTorch op without a decision, so nothing records:
    one warning names why, rather than a file that ends empty without a word."""
    path = tmp_path / "calls.csv"
    with ops.record_shapes(path), torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.warns(UserWarning, match="under torch.autocast run the PyTorch op"):
            ops.softmax(random(3, 100))
    assert not path.exists() or calls(path) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not recording: no warning
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ops.softmax(random(3, 100))


def test_a_shape_decided_before_recording_started_is_recorded_too(tmp_path):
    """The memo is cleared as recording starts: a warm process still records every shape."""
    x = random(3, 100)
    ops.softmax(x)
    with ops.record_shapes(tmp_path / "calls.csv"):
        ops.softmax(x)
    assert calls(tmp_path / "calls.csv") == [("softmax", "fp32", "3x100", UNTUNED)]


def test_recording_again_keeps_the_rows_and_adds_only_new_calls(tmp_path):
    path = tmp_path / "calls.csv"
    with ops.record_shapes(path):
        ops.softmax(random(3, 100))
    with ops.record_shapes(path):
        ops.softmax(random(3, 100))
        ops.softmax(random(4, 100))
    assert [c[2] for c in calls(path)] == ["3x100", "4x100"]


def test_how_near_the_tuned_shapes_a_call_is(tmp_path, monkeypatch):
    """here: tuned at that shape; near: a tuned shape within NEAR; none: nothing near."""
    configs = tmp_path / "configs"
    write_winners(configs / "interpreter" / "softmax.csv", [
        winner("64x1024", "ROWS=1 num_warps=4", dtype="fp32", kernel="softmax",
               p50_ms=1.0, op_p50_ms=2.0)])
    monkeypatch.setenv("TLAB_CONFIG_DIR", str(configs))
    path = tmp_path / "calls.csv"
    with ops.record_shapes(path):
        for rows, cols in ((64, 1024), (48, 1024), (64, 16384)):
            ops.softmax(random(rows, cols))
    assert [(c[2], c[3]) for c in calls(path)] == [
        ("64x1024", HERE), ("48x1024", NEARBY), ("64x16384", UNTUNED)]


def test_a_call_whose_layout_sends_a_tuned_shape_to_the_op_is_recorded_as_the_op(
        tmp_path, monkeypatch):
    """Before: recorded as tlab's kernel, though a TMA config cannot take a transposed
    weight and the call ran torch.matmul."""
    configs = tmp_path / "configs"
    write_winners(configs / "interpreter" / "matmul.csv", [winner(
        "96x80x72", "BLOCK_M=64 BLOCK_N=64 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3 "
        "TMA=1 STREAM_K=0", dtype="fp32", p50_ms=1.0, op_p50_ms=2.0)])
    monkeypatch.setenv("TLAB_CONFIG_DIR", str(configs))
    a, w = random(96, 72), random(80, 72)
    path = tmp_path / "calls.csv"
    with ops.record_shapes(path):
        torch.testing.assert_close(ops.matmul(a, w.t().contiguous()), a @ w.t())
        assert [r.provider for r in read_table(path, Called)] == ["triton"]
        torch.testing.assert_close(ops.matmul(a, w.t()), a @ w.t())  # strided: the op
    rows = read_table(path, Called)
    assert [(r.shape, r.tuned, r.provider) for r in rows] == [
        ("96x80x72", HERE, "triton"), ("96x80x72", HERE, TORCH_OP)]


def test_a_shape_the_kernel_refuses_is_recorded_as_refused_and_not_swept(tmp_path):
    """layernorm holds a row in one program's registers, 65,536 columns at most: ops calls
    F.layer_norm at a wider row, and a sweep there could not help."""
    path = tmp_path / "calls.csv"
    wide = 65_537
    with ops.record_shapes(path):
        ops.layernorm(random(1, wide), random(wide), random(wide))
        ops.layernorm(random(2, 64), random(64), random(64))
    assert calls(path) == [("layernorm", "fp32", f"1x{wide}", REFUSED),
                           ("layernorm", "fp32", "2x64", UNTUNED)]
    assert recording.recorded_shapes(path, "layernorm") == (["fp32"], ["2x64"], 1)


def test_an_empty_call_is_not_recorded(tmp_path):
    """A batch of no rows (a server's idle step): nothing to tune, and a size 0 is no shape
    `tlab sweep --shapes-from` reads (the whole file was refused)."""
    path = tmp_path / "calls.csv"
    with ops.record_shapes(path):
        ops.softmax(random(0, 96))
        ops.softmax(random(2, 96))
    assert calls(path) == [("softmax", "fp32", "2x96", UNTUNED)]
    assert recording.recorded_shapes(path, "softmax") == (["fp32"], ["2x96"], 0)


def test_the_environment_variable_records_from_the_first_call(tmp_path):
    path = tmp_path / "calls.csv"
    program = ("import torch\nfrom tritonbench_lab import ops\n"
               "g = torch.Generator().manual_seed(0)\n"
               "ops.add(torch.randn(77, generator=g), torch.randn(77, generator=g))\n")
    env = {**os.environ, "TRITON_INTERPRET": "1", "TLAB_RECORD_SHAPES": str(path),
           "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert calls(path) == [("add", "fp32", "77", UNTUNED)]


def test_record_then_sweep_then_the_shapes_are_tuned(tmp_path, monkeypatch):
    """The three steps end to end in the interpreter: a program's calls recorded, `tlab sweep
    --shapes-from` (every kernel in the file), and the same program finds each shape tuned;
    recorded again into the same file, each call gains a row saying so."""
    first = tmp_path / "calls.csv"

    def program(path):
        with ops.record_shapes(path):
            ops.add(random(300), random(300))
            ops.softmax(random(5, 72))

    program(first)
    done = tlab("sweep", "--shapes-from", str(first), "--interpret", "--space", "default",
                "--confirm", "0", "--baselines", "torch", "--root", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[1/2] tlab sweep add" in done.stderr and "[2/2] tlab sweep softmax" in done.stderr
    monkeypatch.setenv("TLAB_CONFIG_DIR", str(tmp_path / "configs"))
    ops.clear()
    program(first)
    assert calls(first) == [("add", "fp32", "300", UNTUNED), ("softmax", "fp32", "5x72", UNTUNED),
                            ("add", "fp32", "300", HERE), ("softmax", "fp32", "5x72", HERE)]
