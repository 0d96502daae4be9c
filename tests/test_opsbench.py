"""The ops benchmark's shape list and report (the timing itself needs a GPU: `tlab ops-bench`)."""

import pytest
from conftest import INTERPRETING

from tritonbench_lab.kernels import get_spec
from tritonbench_lab.opsbench import SHAPES, OpsRow, report
from tritonbench_lab.tuned import alignment_class


def test_the_shapes_are_untuned_and_cover_what_users_have():
    assert len(SHAPES) >= 30
    for kernel, _dtype, sizes in SHAPES:
        spec = get_spec(kernel)
        assert len(sizes) == len(spec.dims)
        assert spec.shape(*sizes) not in spec.default_shapes, (kernel, sizes)
    rows = [s[0] for k, _, s in SHAPES if k in ("softmax", "rmsnorm", "add_rmsnorm", "layernorm")]
    assert min(rows) == 1 and max(rows) == 65536
    assert {k for k, _, _ in SHAPES} >= {"matmul", "softmax", "rmsnorm", "add_rmsnorm",
                                         "layernorm", "rope", "add"}
    classes = {alignment_class(s) for k, _, s in SHAPES if k == "matmul"}
    assert {(16, 16, 16), (8, 8, 8), (1, 1, 1)} <= classes


def _row(kernel, ops_ms, torch_ms, host, bare, calls="triton"):
    return OpsRow(kernel, "bf16", "8x8", calls, True, ops_ms, torch_ms, ops_ms, torch_ms,
                  host, bare)


def test_report_names_the_slowest_shape_and_the_most_overhead():
    rows = [_row("softmax", 1.0, 2.0, 12.0, 10.0), _row("matmul", 1.0, 0.9, 9.0, 3.0, "torch")]
    lines = report(rows)
    assert lines[2].startswith("| softmax | bf16 | 8x8 | triton | yes | 2.000 | 2.000 | 12.0 |")
    assert "slowest against the PyTorch op (do_bench): 0.900x at matmul" in "\n".join(lines)
    assert "most host time ops adds per call: 6.0 us at matmul" in lines[-1]
    assert "tlab's kernel at 1, correct: 2" in "\n".join(lines)


@pytest.mark.skipif(not INTERPRETING, reason="on a GPU machine the command runs instead")
def test_ops_bench_without_a_gpu_is_refused():
    from typer.testing import CliRunner

    from tritonbench_lab.cli import app

    result = CliRunner().invoke(app, ["ops-bench"])
    assert result.exit_code != 0 and "needs CUDA" in str(result.exception)
