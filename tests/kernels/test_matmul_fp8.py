"""matmul_fp8 (per-tensor and per-row scales, e4m3 and e5m2) against float64 of the
de-quantised inputs, in the interpreter; split-K in both reductions, and the overwrite bug."""

import pytest
import torch
from helpers.kernel_cases import check_configs_at, check_default_shapes

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.kernels.matmul_fp8 import (
    ATOMIC,
    NONE,
    ROWWISE_SPEC,
    SPEC,
    TWO_PASS,
    matmul_fp8,
)
from tritonbench_lab.measure.verify import check
from tritonbench_lab.space import HOPPER
from tritonbench_lab.spec import Shape, parse_dtype

SPECS = [SPEC, ROWWISE_SPEC]
FP8 = [torch.float8_e4m3fn, torch.float8_e5m2]
AWKWARD = [
    (1, 37, 19),  # one row
    (200, 1, 33),  # one column
    (129, 67, 93),  # ragged against every tile
    (17, 300, 5),  # K smaller than any BLOCK_K
    (72, 40, 1000),  # few tiles, K over many steps: split-K configs are kept
    (45, 251, 130),  # primes and near-powers
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("dtype", FP8, ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("mnk", AWKWARD, ids=lambda s: "x".join(map(str, s)))
def test_matmul_fp8_awkward_shapes(mnk, dtype, spec, device):
    shape = Shape.of(M=mnk[0], N=mnk[1], K=mnk[2])
    assert check_configs_at(spec, shape, dtype, device, seed=sum(mnk)) >= 3


def _config(split: int, reduce: int, block_k: int = 64, tma: int = 0) -> dict:
    return {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": block_k, "GROUP_M": 8, "num_warps": 4,
            "num_stages": 3, "SPLIT_K": split, "REDUCE": reduce, "TMA": tma, "FAST_ACC": 0}


# (M, N, K, BLOCK_K, TMA): K not a multiple of BLOCK_K, nor its steps of every SPLIT_K; the
# tensor-descriptor kernel takes K in multiples of 16 (its fp8 rows are K bytes). SPLIT_K up
# to K's blocks (16 of 64 in 1000; the BLOCK_K=128 cases stop at 8: 16 slices of 128 need a
# K twice as long, twice the interpreter's time).
SPLIT_CASES = [(40, 24, 1000, 64, 0), (96, 80, 900, 64, 0), (8, 136, 1100, 128, 0),
               (40, 24, 1008, 64, 1), (8, 136, 1104, 128, 1)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: "x".join(map(str, c)))
def test_split_k_adds_every_slice_once(case, spec, device):
    """K in 2 to 16 slices, both reductions, both kernels: every slice's partial counted
    exactly once. The two-pass sum adds slices in a fixed order: it repeats bit for bit."""
    M, N, K, block_k, tma = case
    dtype = torch.float8_e4m3fn
    inputs = spec.make_inputs(Shape.of(M=M, N=N, K=K), dtype, device, seed=K)
    reference = spec.reference(inputs)
    args = (inputs["a"], inputs["b"], inputs["sa"], inputs["sb"])
    for split in [s for s in (2, 3, 4, 8, 16) if s <= -(-K // block_k)]:
        for reduce in (ATOMIC, TWO_PASS):
            out = matmul_fp8(*args, _config(split, reduce, block_k, tma))
            verdict = check((out,), reference, spec.tolerance[dtype])
            assert verdict.ok, f"SPLIT_K={split} REDUCE={reduce}: {verdict.detail}"
        assert torch.equal(out, matmul_fp8(*args, _config(split, TWO_PASS, block_k, tma)))


def test_an_overwriting_split_k_fails_the_check(device):
    """The template's bug (each slice stores its partial over the others) leaves C holding
    the last slice's share of K; against the reference that misses by order one, so the
    test above fails on it."""
    M, N, K, split = 40, 24, 1024, 4
    inputs = SPEC.make_inputs(Shape.of(M=M, N=N, K=K), torch.float8_e4m3fn, device, seed=1)
    reference = SPEC.reference(inputs)
    a, b = inputs["a"].double(), inputs["b"].double()
    scale = inputs["sa"].double() * inputs["sb"].double()
    last = slice(K - K // split, K)
    overwritten = (a[:, last] @ b[last, :] * scale).to(torch.bfloat16)
    assert not check((overwritten,), reference, SPEC.tolerance[torch.float8_e4m3fn]).ok
    out = matmul_fp8(inputs["a"], inputs["b"], inputs["sa"], inputs["sb"], _config(split, ATOMIC))
    assert check((out,), reference, SPEC.tolerance[torch.float8_e4m3fn]).ok


def test_split_k_is_pruned_where_tiles_fill_the_gpu():
    kept, pruned = SPEC.space.prune({"M": 4096, "N": 4096, "K": 4096}, 1, HOPPER)
    assert kept and all(c["SPLIT_K"] == 1 for c in kept)
    assert any("already fill the 132 SMs" in why for _, why in pruned)
    kept, _ = SPEC.space.prune({"M": 512, "N": 512, "K": 16384}, 1, HOPPER)
    assert {c["SPLIT_K"] for c in kept} == {1, 2, 4, 8, 16}
    assert all((c["SPLIT_K"] == 1) == (c["REDUCE"] == NONE) for c in SPEC.space)


def test_fp8_dtype_names_and_what_takes_them():
    assert parse_dtype("fp8e4m3") is torch.float8_e4m3fn
    assert parse_dtype("float8_e5m2") is torch.float8_e5m2
    assert torch.float8_e4m3fn not in get_spec("matmul").dtypes


def test_matmul_fp8_checks_its_inputs(device):
    a = torch.randn(8, 16, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(16, 24, device=device).to(torch.float8_e4m3fn)
    one = torch.ones(1, device=device)
    with pytest.raises(TlabError, match="one value each, or 8 for a's rows and 24"):
        matmul_fp8(a, b, torch.ones(8, device=device), torch.ones(23, device=device))
    with pytest.raises(TlabError, match="one fp8 dtype"):
        matmul_fp8(a.float(), b.float(), one, one)
    with pytest.raises(TlabError, match="SPLIT_K=1 needs REDUCE=0"):
        matmul_fp8(a, b, one, one, _config(2, NONE))
    partial = {k: v for k, v in _config(1, NONE).items() if k != "FAST_ACC"}
    with pytest.raises(TlabError, match="lacks FAST_ACC: a config names every parameter"):
        matmul_fp8(a, b, one, one, partial)
    with pytest.raises(TlabError, match="B column-major"):  # b here is row-major
        matmul_fp8(a, b, one, one, _config(1, NONE, tma=1))


def test_tma_is_pruned_where_k_is_not_a_multiple_of_16():
    kept, pruned = SPEC.space.prune({"M": 72, "N": 48, "K": 1000}, 1, HOPPER)
    assert kept and not any(c["TMA"] for c in kept)
    assert any("K a multiple of 16; K=1000" in why for _, why in pruned)
    kept, _ = SPEC.space.prune({"M": 72, "N": 48, "K": 1008}, 1, HOPPER)
    assert {c["TMA"] for c in kept} == {0, 1}


@pytest.mark.gpu
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("dtype", FP8, ids=["e4m3", "e5m2"])
def test_matmul_fp8_default_shapes_on_gpu(spec, dtype, device):
    check_default_shapes(spec, dtype, device, seed=2)


@pytest.mark.gpu
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_scaled_mm_baseline_agrees_with_the_reference_on_gpu(spec, device):
    inputs = spec.make_inputs(Shape.of(M=1024, N=512, K=2048), torch.float8_e4m3fn, device, 3)
    verdict = check((spec.baselines["torch"](inputs),), spec.reference(inputs),
                    spec.tolerance[torch.float8_e4m3fn])
    assert verdict.ok, verdict.detail


def test_fast_accumulation_is_pruned_where_a_share_of_k_is_long():
    kept, pruned = SPEC.space.prune({"M": 8192, "N": 8192, "K": 8192}, 1, HOPPER)
    assert kept and not any(c["FAST_ACC"] for c in kept)
    assert any("FAST_ACC=1 sums 8192 of K" in why for _, why in pruned)
    kept, _ = SPEC.space.prune({"M": 512, "N": 512, "K": 16384}, 1, HOPPER)
    assert {c["SPLIT_K"] for c in kept if c["FAST_ACC"]} == {4, 8, 16}
    assert {c["FAST_ACC"] for c in kept if c["SPLIT_K"] == 1} == {0}


@pytest.mark.gpu
def test_full_accumulation_is_the_accurate_one_at_long_k_on_gpu(device):
    """Hopper's fast fp8 accumulation over K = 16384 misses by more than adding each
    BLOCK_K step into fp32 does, which stays within the tolerance."""
    inputs = SPEC.make_inputs(Shape.of(M=1024, N=1024, K=16384), torch.float8_e4m3fn, device, 4)
    reference = SPEC.reference(inputs)[0]
    args = (inputs["a"], inputs["b"], inputs["sa"], inputs["sb"])
    errors = {}
    for fast in (0, 1):
        config = {**_config(1, NONE, block_k=128), "FAST_ACC": fast}
        out = matmul_fp8(*args, config)
        errors[fast] = (out.double() - reference).abs().max().item()
        if not fast:
            verdict = check((out,), (reference,), SPEC.tolerance[torch.float8_e4m3fn])
            assert verdict.ok, verdict.detail
    assert errors[0] < errors[1], errors
