"""The ops benchmark's shape list and report (the timing itself needs a GPU: `tlab ops-bench`)."""

import dataclasses

import pytest
from helpers.backend import INTERPRETING
from helpers.ops_state import ops_reading

from tritonbench_lab.gates.opsbench import SHAPES, OpsRow, report
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.tuned import alignment_class


def test_the_shapes_are_untuned_and_cover_what_users_have():
    assert len(SHAPES) >= 30
    for kernel, _dtype, sizes in SHAPES:
        spec = get_spec(kernel)
        n = len(spec.dims)
        assert len(sizes) == n or (kernel == "rope" and len(sizes) == n + 1), (kernel, sizes)
        assert spec.shape(*sizes[:n]) not in spec.default_shapes or len(sizes) > n, sizes
    grouped = [s for k, _, s in SHAPES if k == "rope" and len(s) == 5]
    assert grouped and all(s[4] < s[2] for s in grouped)  # k with fewer heads than q
    rows = [s[0] for k, _, s in SHAPES if k in ("softmax", "rmsnorm", "add_rmsnorm", "layernorm")]
    assert min(rows) == 1 and max(rows) == 65536
    assert {k for k, _, _ in SHAPES} >= {"matmul", "matmul_gelu", "softmax", "rmsnorm",
                                         "add_rmsnorm", "layernorm", "rope", "add"}
    classes = {alignment_class(s) for k, _, s in SHAPES if k == "matmul"}
    assert {(16, 16, 16), (8, 8, 8), (1, 1, 1)} <= classes


@pytest.fixture
def no_configs(tmp_path, monkeypatch):
    """ops with an empty configs folder (so it calls the PyTorch op everywhere), forgotten
    after the test."""
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        yield


def test_each_kernel_of_the_benchmark_calls_ops_and_the_op_it_stands_in_for(device, no_configs):
    """What ops-bench times for each kernel agrees with the PyTorch op it is timed against
    (here, with no configs, ops is that op; on a GPU the kernel's result is checked too)."""
    import torch

    from tritonbench_lab.gates.opsbench import _calls, make_inputs
    from tritonbench_lab.measure.verify import as_outputs

    small = [("matmul", (9, 7, 5)), ("matmul_gelu", (9, 7, 5)), ("softmax", (3, 33)),
             ("rmsnorm", (3, 33)), ("add_rmsnorm", (3, 33)), ("layernorm", (3, 33)),
             ("rope", (1, 3, 2, 8)), ("rope", (2, 3, 4, 8, 1)), ("add", (33,))]
    assert {k for k, _ in small} == {k for k, _, _ in SHAPES}
    for kernel, sizes in small:
        inputs = make_inputs(kernel, sizes, torch.float32, device, seed=3)
        ops_call, torch_call, bound_call, call_sizes, _ = _calls(kernel, inputs)
        assert call_sizes == sizes[:len(get_spec(kernel).dims)]
        outputs = as_outputs(ops_call())
        if len(sizes) == 5:  # rope's k of one head beside q's four
            assert outputs[1].shape == (2, 3, 1, 8) and outputs[0].shape == (2, 3, 4, 8)
        for got, want, bound in zip(outputs, as_outputs(torch_call()), as_outputs(bound_call()),
                                    strict=True):
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(bound, want)


def _row(kernel, ops_ms, torch_ms, host, bare, calls="triton", eager=(1.0, 1.0, 1.0)):
    ops_eager, torch_eager, bound_eager = eager
    return OpsRow(kernel, "bf16", "8x8", calls, True, ops_ms, torch_ms, ops_ms, torch_ms,
                  host, bare, *eager, torch_eager / ops_eager, torch_eager / bound_eager)


def test_eager_ratios_are_the_medians_of_the_rounds_ratios():
    """TEST DATA: three rounds (ms) of ops, the op and bind's function, in turns; the host ran
    slow in the second round for all three."""
    from tritonbench_lab.gates.opsbench import _eager

    ops_us, torch_us, bound_us, eager, bound, interval = _eager(
        [[1.1, 2.2, 1.0], [1.0, 2.0, 1.0], [1.0, 2.2, 1.05]])
    assert (ops_us, torch_us, bound_us) == pytest.approx((1100.0, 1000.0, 1050.0))
    # round by round: ops 0.91x, 0.91x, 1.0x; bind's 1.0x, 0.91x, 0.95x
    assert eager == pytest.approx(1.0 / 1.1) and bound == pytest.approx(1.0 / 1.05)
    # three rounds: their interval is min to max, covering 75%
    assert interval == pytest.approx((1.0 / 1.1, 1.0, 0.75))


def test_the_bind_verdict_reads_the_rounds_interval():
    """A 0.96x whose rounds reach 0.99x is not resolved; one whose rounds stay below 0.97x
    misses; either way the line shows the interval."""
    def line(interval):
        row = _row("layernorm", 1.0, 1.0, 10.0, 9.0, "torch", eager=(10.0, 9.6, 10.0))
        row = dataclasses.replace(row, bound_interval=interval)
        return next(t for t in report([row]) if "ops.bind's function" in t)

    assert line((0.93, 0.99, 0.96)).endswith(
        "(96% interval 0.930-0.990x; target 0.97x: not resolved: the interval reaches 0.97x)")
    assert line((0.95, 0.965, 0.96)).endswith(
        "(96% interval 0.950-0.965x; target 0.97x: missed)")


def test_report_names_the_slowest_shape_and_the_most_overhead():
    rows = [_row("softmax", 1.0, 2.0, 12.0, 10.0, eager=(50.0, 20.0, 40.0)),
            _row("matmul", 1.0, 0.9, 9.0, 3.0, "torch", eager=(8.0, 6.0, 5.0))]
    lines = report(rows)
    assert lines[2].startswith(
        "| softmax | bf16 | 8x8 | triton | yes | 2.000 | 2.000 | 0.400 | 0.500 | 12.0 |")
    text = "\n".join(lines)
    assert "slowest against the PyTorch op (do_bench): 0.900x at matmul" in text
    assert "slowest against the PyTorch op (eager, calls back to back): 0.400x at softmax" in text
    assert ("slowest against the PyTorch op (eager, ops.bind's function): 0.500x at softmax "
            "bf16 8x8 (target 0.97x: missed)") in text
    assert ("slowest against the PyTorch op (graph replay): 0.900x at matmul bf16 8x8 (target "
            "0.97x: missed)") in text
    assert "most host time ops adds per call: 6.0 us at matmul" in lines[-1]
    assert "tlab's kernel at 1, correct: 2" in text


@pytest.mark.skipif(not INTERPRETING, reason="on a GPU machine the command runs instead")
def test_ops_bench_without_a_gpu_is_refused():
    from typer.testing import CliRunner

    from tritonbench_lab.cli import app

    result = CliRunner().invoke(app, ["ops-bench"])
    assert result.exit_code != 0 and "needs CUDA" in str(result.exception)
