"""Runtime lookup of tuned configs: exact hit, nearest shape within an alignment class, sizes
by name, override folder, fallback, the packaged copy."""

import os
import warnings

import pytest
import torch
from helpers.fixture_results import winner, write_winners
from helpers.paths import REPO

from tritonbench_lab import tuned
from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.matmul import SPEC as MATMUL
from tritonbench_lab.kernels.softmax import SPEC as SOFTMAX
from tritonbench_lab.space import HOPPER
from tritonbench_lab.tuned import check_round_trip, lookup

A = "BLOCK_M=64 BLOCK_N=64 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3"
B = "BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=4"
C = "BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=3"


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


def parse(text, spec=MATMUL):
    """A config text as lookup returns it: completed by the one rule (KernelSpec.complete);
    A, B and C were written before matmul had TMA and STREAM_K, which then were 0."""
    stored = {k: int(v) for k, v in (item.split("=") for item in text.split())}
    completed = spec.complete(stored)
    assert spec is not MATMUL or completed == {**stored, "TMA": 0, "STREAM_K": 0}
    return completed


def test_a_stored_config_is_completed_and_one_that_cannot_be_is_refused(configs):
    got = lookup("matmul", "bf16", gpu="fixture-gpu", M=1024, N=1024, K=1024)
    assert list(got) == list(MATMUL.space.params)  # every parameter, in the space's order
    write_winners(configs / "fixture-gpu" / "matmul.csv", [
        winner("1024x1024x1024", A + " SPLIT_K=4"),  # a parameter matmul never had
        winner("2048x2048x2048", "BLOCK_M=64 num_warps=4")])  # lacks what was never added
    os.utime(configs / "fixture-gpu" / "matmul.csv", (1, 1))
    tuned.clear_cache()
    with pytest.raises(TlabError, match="has unknown SPLIT_K"):
        lookup("matmul", "bf16", gpu="fixture-gpu", M=1024, N=1024, K=1024)
    with pytest.raises(TlabError, match="lacks BLOCK_N, BLOCK_K, GROUP_M, num_stages"):
        lookup("matmul", "bf16", gpu="fixture-gpu", M=2048, N=2048, K=2048)


def test_exact_hit(configs):
    assert lookup("matmul", torch.bfloat16, gpu="fixture-gpu", M=4096, N=4096, K=4096) == parse(B)


@pytest.mark.parametrize("size, expected", [
    (3008, B),  # |log2(3008/4096)| * 3 = 1.34 < |log2(3008/1024)| * 3 = 4.66
    (2048, B),  # equally far from 1024 and 4096: ties go to the larger shape
    (1504, A),
    (6000, C),  # log2(8192/6000) = 0.45 < log2(6000/4096) = 0.55
    (100000, C),
])
def test_nearest_shape_rule(configs, size, expected):
    got = lookup("matmul", "bf16", gpu="fixture-gpu", M=size, N=size, K=size)
    assert got == parse(expected)


def test_nearest_shape_weighs_every_dimension(configs):
    # M=N=8192, K=1024: distance 0+0+3 = 3 to 8192^3, 1+1+2 = 4 to 4096^3, 3+3+0 = 6 to 1024^3.
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=8192, N=8192, K=1024) == parse(C)


def test_sizes_match_by_name_in_any_keyword_order(configs):
    wide = "BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3"
    write_winners(configs / "fixture-gpu" / "matmul.csv", [
        winner("4096x4096x512", A), winner("512x4096x4096", wide)])
    tuned.clear_cache()
    assert lookup("matmul", "bf16", gpu="fixture-gpu", K=512, M=4096, N=4096) == parse(A)
    assert lookup("matmul", "bf16", gpu="fixture-gpu", N=4096, K=4096, M=512) == parse(wide)


def test_a_dtype_the_kernel_does_not_take_is_an_error_naming_those_it_takes(configs):
    with pytest.raises(TlabError, match="matmul does not take float64: it takes fp32, fp16, bf16"):
        lookup("matmul", torch.float64, gpu="fixture-gpu", M=21, N=257, K=200)


@pytest.mark.parametrize("sizes, phrase", [
    ({"M": 64, "N": 64, "k": 64}, "unknown k; missing K"),
    ({"M": 64, "N": 64}, "missing K"),
    ({"rows": 8, "cols": 64}, "unknown rows, cols; missing M, N, K"),
])
def test_wrong_size_names_are_an_error_naming_the_dims(configs, sizes, phrase):
    with pytest.raises(TlabError, match=f"matmul sizes are M, N, K .*{phrase}"):
        lookup("matmul", "bf16", gpu="fixture-gpu", **sizes)


def test_a_kernel_tlab_does_not_know_names_its_dims():
    with pytest.raises(TlabError, match="unknown kernel 'mine'"):
        lookup("mine", "fp32", gpu="fixture-gpu", n=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert lookup("mine", "fp32", gpu="fixture-gpu", dims=("n",), default={"X": 1},
                      n=10) == {"X": 1}


@pytest.mark.parametrize("sizes, klass", [
    ((4096, 1024, 32), (16, 16, 16)), ((1528, 4096, 4096), (8, 16, 16)),
    ((4097, 12, 1), (1, 1, 1)), ((8, 24, 40), (8, 8, 8)),
])
def test_alignment_class(sizes, klass):
    assert tuned.alignment_class(sizes) == klass


def test_nearest_shape_stays_inside_the_alignment_class(configs):
    # 3000 = 8 x 375: divisible by 8, not 16. The 16-class shapes around it never answer.
    with pytest.warns(UserWarning, match="alignment class of 3000x3000x3000 .* 8/8/8"):
        got = lookup("matmul", "bf16", gpu="fixture-gpu", M=3000, N=3000, K=3000)
    assert got == MATMUL.space.default
    write_winners(configs / "fixture-gpu" / "matmul.csv", [
        winner("4096x4096x4096", B), winner("1528x1528x1528", A), winner("5000x5000x5000", C)])
    tuned.clear_cache()
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=3000, N=3000, K=3000) == parse(C)
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=1608, N=1608, K=1608) == parse(A)
    assert lookup("matmul", "bf16", gpu="fixture-gpu", M=3008, N=3008, K=3008) == parse(B)


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


FAST = ("BLOCK_M=128 BLOCK_N=128 BLOCK_K=128 GROUP_M=8 num_warps=8 num_stages=3 SPLIT_K=1 "
        "REDUCE=0 TMA=1 FAST_ACC=1")
FULL = FAST.replace("FAST_ACC=1", "FAST_ACC=0").replace("num_warps=8", "num_warps=4")


def test_a_nearer_config_the_kernel_prunes_at_the_shape_is_passed_over(configs):
    """matmul_fp8 prunes fast accumulation over a share of K longer than 4096 (its error
    passes the tolerance there): 4096^3's FAST_ACC=1 winner is the nearest to 4096x4096x5120,
    yet must not run there, so the farther 8192^3 winner answers, and explain names what was
    passed over; with no other row, the untuned config, with a warning that says why."""
    from tritonbench_lab.kernels.matmul_fp8 import SPEC as FP8
    from tritonbench_lab.runtime.dispatch import explain

    path = configs / "fixture-gpu" / "matmul_fp8.csv"
    write_winners(path, [
        winner("4096x4096x4096", FAST, dtype="fp8e4m3", kernel="matmul_fp8", op_p50_ms=2.0),
        winner("8192x8192x8192", FULL, dtype="fp8e4m3", kernel="matmul_fp8", p50_ms=8.0,
               op_p50_ms=16.0)])
    tuned.clear_cache()
    sizes = {"M": 4096, "N": 4096, "K": 5120}
    assert lookup("matmul_fp8", "fp8e4m3", gpu="fixture-gpu", **sizes) == parse(FULL, FP8)
    # K = 4096 is the fast config's own shape; 3072 is short enough for it
    assert lookup("matmul_fp8", "fp8e4m3", gpu="fixture-gpu", M=4096, N=4096, K=3072
                  ) == parse(FAST, FP8)
    choice = explain("matmul_fp8", "fp8e4m3", "4096x4096x5120", gpu="fixture-gpu")
    assert choice.tuned_shape == "8192x8192x8192"
    assert "passed over a nearer shape: 4096x4096x4096's config" in choice.reason
    assert "FAST_ACC=1 sums 5120 of K" in choice.reason

    write_winners(path, [winner("4096x4096x4096", FAST, dtype="fp8e4m3", kernel="matmul_fp8",
                                op_p50_ms=2.0)])
    tuned.clear_cache()
    with pytest.warns(UserWarning, match="no fp8e4m3 row for matmul_fp8 whose config runs at "
                      "4096x4096x5120 .nearest: 4096x4096x4096's config .* is pruned here"):
        got = lookup("matmul_fp8", "fp8e4m3", gpu="fixture-gpu", **sizes)
    assert got == FP8.untuned_config(FP8.shape(4096, 4096, 5120), "fp8e4m3")
    assert FP8.space.why_pruned(got, sizes, 1, HOPPER) is None
    choice = explain("matmul_fp8", "fp8e4m3", "4096x4096x5120", gpu="fixture-gpu")
    assert choice.provider == "torch" and choice.config is None
    assert "no tuned fp8e4m3 config in fixture-gpu runs at this shape" in choice.reason


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


def test_without_a_source_tree_the_packaged_configs_are_used(tmp_path, monkeypatch):
    monkeypatch.delenv(tuned.CONFIG_DIR_ENV, raising=False)
    monkeypatch.setattr(tuned, "SOURCE_CONFIG_DIR", tmp_path / "no-such-folder")
    assert tuned.config_dir() == tuned.PACKAGED_CONFIG_DIR


def test_a_wheel_installed_elsewhere_finds_the_committed_h200_configs(tmp_path):
    """Built and installed like a user's `pip install tritonbench-lab` (not editable), then
    run from a folder with no source tree around: lookup reads the configs inside the wheel."""
    import subprocess
    import sys

    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "dist")], check=True, cwd=tmp_path)
    wheel = next((tmp_path / "dist").glob("*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--no-compile", "--target",
                    str(tmp_path / "site"), str(wheel)], check=True, cwd=tmp_path)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import tritonbench_lab, tritonbench_lab.tuned as t\n"
        "assert tritonbench_lab.__file__.startswith(sys.argv[1]), tritonbench_lab.__file__\n"
        "print(t.config_dir())\n"
        "print(t.lookup('matmul', 'bf16', gpu='nvidia-h200', K=4096, M=4096, N=4096))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != tuned.CONFIG_DIR_ENV}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "site")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == str(tmp_path / "site" / "tritonbench_lab" / "configs")
    committed = tuned.find("matmul", "bf16", (4096, 4096, 4096), gpu="nvidia-h200",
                           directory=REPO / "configs").row
    assert out[1] == str(parse(committed.config))


def test_a_kernel_can_compare_shapes_by_what_its_configs_see(configs, monkeypatch):
    """A kernel's near_sizes decide which tuned shape is nearest: rope, whose batch and
    sequence enter only as their product (tokens), finds 4 x 4096 at 1 x 16384, where size by
    size (the built-in rule, a rope without near_sizes) 1 x 4096 is nearer; 8 x 2048 is of
    another alignment class size by size (batch divisible by 8), of the same by tokens."""
    import dataclasses

    from tritonbench_lab import kernels
    from tritonbench_lab.kernels.rope import SPEC as ROPE

    assert ROPE.near_sizes((4, 4096, 32, 128)) == (16384, 32, 128)
    by_size = dataclasses.replace(ROPE, name="sizes_rope", near_sizes=None)
    monkeypatch.setitem(kernels._USER, "sizes_rope", by_size)
    wide, narrow = "BLOCK=1024 num_warps=4", "BLOCK=256 num_warps=1"
    for kernel in ("rope", "sizes_rope"):
        write_winners(configs / "fixture-gpu" / f"{kernel}.csv", [
            winner("1x16384x32x128", wide, kernel=kernel),
            winner("1x4096x32x128", narrow, kernel=kernel)])
    tuned.clear_cache()
    sizes = {"batch": 4, "seq": 4096, "heads": 32, "head_dim": 128}
    assert lookup("sizes_rope", torch.bfloat16, gpu="fixture-gpu", **sizes) == parse(narrow, ROPE)
    assert lookup("rope", torch.bfloat16, gpu="fixture-gpu", **sizes) == parse(wide, ROPE)
    found = tuned.find("rope", torch.bfloat16, (4, 4096, 32, 128), gpu="fixture-gpu")
    assert found.distance == 0 and not found.exact
    assert tuned.find("sizes_rope", torch.bfloat16, (4, 4096, 32, 128),
                      gpu="fixture-gpu").distance == 2
    assert tuned.find("sizes_rope", torch.bfloat16, (8, 2048, 32, 128),
                      gpu="fixture-gpu").row is None
    assert tuned.find("rope", torch.bfloat16, (8, 2048, 32, 128), gpu="fixture-gpu").row.config == wide
    # The exact shape still comes first: 1 x 4096 finds its own row, not 1 x 16384's.
    assert lookup("rope", torch.bfloat16, gpu="fixture-gpu", batch=1, seq=4096, heads=32,
                  head_dim=128) == parse(narrow, ROPE)


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [(3312, 9344, 5664), (4096, 4096, 12288), (2048, 2048, 6144)])
def test_committed_fp8_configs_carried_to_a_long_k_stay_within_tolerance(sizes):
    """At shapes no one tuned, with K past matmul_fp8's fast-accumulation limit, the config
    lookup carries from this GPU's committed file must give a product within the tolerance
    (on an H100, the nearest row's FAST_ACC=1 config gave 1.15x and 1.68x of it at the first
    two before lookup passed over configs the constraints prune there)."""
    from tritonbench_lab.kernels.matmul_fp8 import SPEC as FP8
    from tritonbench_lab.measure.verify import as_outputs, check

    tuned.clear_cache()
    found = tuned.find("matmul_fp8", "fp8e4m3", sizes, directory=REPO / "configs")
    if found.row is None:
        pytest.skip(f"no committed matmul_fp8 configs near {sizes} on this GPU")
    config = lookup("matmul_fp8", "fp8e4m3", directory=REPO / "configs",
                    **dict(zip(FP8.dims, sizes, strict=True)))
    dtype = torch.float8_e4m3fn
    inputs = FP8.make_inputs(FP8.shape(*sizes), dtype, "cuda", 0)
    out = FP8.launch(inputs, config, FP8.allocate_outputs(inputs))
    verdict = check(as_outputs(out), FP8.reference(inputs), FP8.tolerance[dtype])
    assert verdict.ok, (config, verdict.detail)


def test_explain_says_where_a_row_was_tuned_under_another_triton(configs):
    """A row tuned under another Triton minor version still decides (its config runs), but
    explain says its times are another compiler's, as `tlab check` calls the row stale; a
    row of this Triton's minor version says nothing of it."""
    import dataclasses

    import triton

    from tritonbench_lab.runtime.dispatch import explain

    path = configs / "fixture-gpu" / "matmul.csv"
    old = dataclasses.replace(winner("4096x4096x4096", B, op_p50_ms=2.0), triton="3.0.0")
    write_winners(path, [old])
    tuned.clear_cache()
    choice = explain("matmul", "bf16", "4096x4096x4096", gpu="fixture-gpu")
    assert choice.uses_triton and choice.tuned_shape == "4096x4096x4096"  # it stands
    assert f"tuned under Triton 3.0.0, this is {triton.__version__}" in choice.reason
    patch = triton.__version__.rsplit(".", 1)[0] + ".99"  # same minor, another patch release
    write_winners(path, [dataclasses.replace(old, triton=patch)])
    tuned.clear_cache()
    assert "tuned under Triton" not in explain("matmul", "bf16", "4096x4096x4096",
                                                gpu="fixture-gpu").reason
