"""Runtime lookup of tuned configs: exact hit, nearest shape, override folder, fallback."""

import warnings

import pytest
import torch

from tritonbench_lab import tuned
from tritonbench_lab.kernels.matmul import SPEC as MATMUL
from tritonbench_lab.kernels.softmax import SPEC as SOFTMAX
from tritonbench_lab.records import Winner
from tritonbench_lab.store import write_table
from tritonbench_lab.tuned import lookup

A = "BLOCK_M=64 BLOCK_N=64 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3"
B = "BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=4"
C = "BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=3"


def winner(shape, config, dtype="bf16", kernel="matmul"):
    return Winner(kernel=kernel, dtype=dtype, shape=shape, config=config, p50_ms=1.0,
                  throughput=100.0, metric="TFLOP/s", method="do_bench", warmup_ms=25,
                  rep_ms=100, best_baseline="", baseline_p50_ms=None, baseline_throughput=None,
                  speedup=None, gpu="Fixture GPU", torch="9", triton="9", tlab="0.1.0",
                  source="s", date="2026-01-01", run_id="r")


def write_winners(path, winners):
    write_table(path, winners, Winner)


def check_round_trip(spec, slug, directory, winners):
    """What every sweep does after writing its winners (sweep.check_round_trip)."""
    from types import SimpleNamespace

    from tritonbench_lab.sweep import check_round_trip as check

    request = SimpleNamespace(spec=spec, fingerprint=SimpleNamespace(gpu_slug=slug),
                              layout=SimpleNamespace(configs=directory))
    check(request, winners)


@pytest.fixture
def configs(tmp_path, monkeypatch):
    """TEST DATA: a configs/ folder with matmul winners at 1024, 4096 and 8192 (bf16)."""
    write_winners(tmp_path / "fixture-gpu" / "matmul.csv", [
        winner("1024x1024x1024", A), winner("4096x4096x4096", B), winner("8192x8192x8192", C),
    ])
    monkeypatch.setenv(tuned.CONFIG_DIR_ENV, str(tmp_path))
    tuned.clear_cache()
    yield tmp_path
    tuned.clear_cache()


def parse(text):
    return {k: int(v) for k, v in (item.split("=") for item in text.split())}


def test_exact_hit(configs):
    assert lookup("matmul", torch.bfloat16, gpu="fixture-gpu", M=4096, N=4096, K=4096) == parse(B)


@pytest.mark.parametrize("size, expected", [
    (3000, B),  # |log2(3000/4096)| * 3 = 1.35 < |log2(3000/1024)| * 3 = 4.65
    (2048, B),  # equally far from 1024 and 4096: ties go to the larger shape
    (1500, A),
    (6000, C),  # log2(8192/6000) = 0.45 < log2(6000/4096) = 0.55
    (100000, C),
])
def test_nearest_shape_rule(configs, size, expected):
    got = lookup("matmul", "bf16", gpu="fixture-gpu", M=size, N=size, K=size)
    assert got == parse(expected)


def test_nearest_shape_weighs_every_dimension(configs):
    # M=N=8192, K=1024: distance 0+0+3 = 3 to 8192^3, 1+1+2 = 4 to 4096^3, 3+3+0 = 6 to 1024^3.
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=8192, N=8192, K=1024) == parse(C)


def test_override_folder_wins_over_the_source_tree(tmp_path, monkeypatch):
    write_winners(tmp_path / "nvidia-h200" / "matmul.csv", [winner("4096x4096x4096", A)])
    monkeypatch.setenv(tuned.CONFIG_DIR_ENV, str(tmp_path))
    tuned.clear_cache()
    assert tuned.config_dir() == tmp_path
    assert lookup("matmul", "bf16", gpu="nvidia-h200", M=4096, N=4096, K=4096) == parse(A)
    monkeypatch.delenv(tuned.CONFIG_DIR_ENV)
    tuned.clear_cache()
    # The committed H200 file (in the source tree) has a different winner at 4096.
    assert lookup("matmul", "bf16", gpu="nvidia-h200", M=4096, N=4096, K=4096) != parse(A)


def test_fallback_warns_exactly_once_naming_file_and_key(configs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            got = lookup("matmul", "fp16", gpu="fixture-gpu", M=512, N=512, K=512)
    assert got == MATMUL.space.default
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "fixture-gpu" in message and "matmul.csv" in message and "fp16" in message


def test_unknown_gpu_falls_back_with_one_warning(configs):
    with pytest.warns(UserWarning, match="no-such-gpu.*does not exist"):
        got = lookup("softmax", "fp32", gpu="no-such-gpu", rows=10, cols=100)
    assert got == SOFTMAX.space.default
    custom = {"ROWS": 2, "num_warps": 8}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # already warned for this file and key: silent now
        assert lookup("softmax", "fp32", gpu="no-such-gpu", default=custom,
                      rows=10, cols=100) == custom


def test_files_are_cached_until_they_change(configs):
    path = configs / "fixture-gpu" / "matmul.csv"
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=4096, N=4096, K=4096) == parse(B)
    write_winners(path, [winner("4096x4096x4096", C)])
    import os

    os.utime(path, (1, 1))  # a different mtime, whatever the clock's resolution
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=4096, N=4096, K=4096) == parse(C)


def test_round_trip_check_catches_a_winner_lookup_would_not_return(configs):
    check_round_trip(MATMUL, "fixture-gpu", configs, [winner("4096x4096x4096", B)])
    with pytest.raises(RuntimeError, match="not the winner"):
        check_round_trip(MATMUL, "fixture-gpu", configs, [winner("4096x4096x4096", A)])
    # The check only reads: the file still holds B.
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=4096, N=4096, K=4096) == parse(B)


def test_ops_launch_with_the_looked_up_config(configs, device, monkeypatch):
    from tritonbench_lab import ops

    seen = []
    real = tuned.lookup

    def spy(kernel, dtype, **kwargs):
        seen.append((kernel, kwargs))
        return real(kernel, dtype, **kwargs)

    monkeypatch.setattr(ops, "lookup", spy)
    monkeypatch.setattr(tuned, "current_gpu_slug", lambda: "fixture-gpu")
    a = torch.randn(70, 50, device=device)
    b = torch.randn(50, 30, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fp32 was not tuned in the fixture: default config
        c = ops.matmul(a, b)
    assert seen == [("matmul", {"M": 70, "N": 30, "K": 50})]
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-4, atol=1e-4)
