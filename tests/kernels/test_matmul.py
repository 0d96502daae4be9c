"""matmul against float64 torch on awkward shapes, strides and configs from its space."""

import dataclasses

import pytest
import torch
from helpers.kernel_cases import check_configs_at, configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.matmul import SPEC, alignment, matmul, tma_ready, whole_tiles
from tritonbench_lab.measure.verify import check
from tritonbench_lab.space import HOPPER, config_text
from tritonbench_lab.spec import Shape

AWKWARD = [
    (1, 37, 19),  # one row
    (200, 1, 33),  # one column
    (129, 67, 93),  # every dimension ragged against every tile size
    (17, 300, 5),  # K smaller than any BLOCK_K
    (333, 65, 257),  # K over several steps with a ragged last step
    (64, 128, 96),  # exact tiles in M and N, ragged K for BLOCK_K=64
    (45, 251, 130),  # non-square, primes and near-powers
]
CPU_DTYPES = [torch.float32, torch.float16]


@pytest.mark.parametrize("dtype", CPU_DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("mnk", AWKWARD, ids=lambda s: "x".join(map(str, s)))
def test_matmul_awkward_shapes(mnk, dtype, device):
    shape = Shape.of(M=mnk[0], N=mnk[1], K=mnk[2])
    assert check_configs_at(SPEC, shape, dtype, device, seed=sum(mnk)) >= 3


def _operands(kind, M, N, K, dtype, device):
    gen = torch.Generator(device=device).manual_seed(7)

    def draw(rows, cols):
        return torch.randn((rows, cols), generator=gen, device=device).to(dtype)

    if kind == "a_transposed":
        return draw(K, M).t(), draw(K, N) * K**-0.5
    if kind == "b_transposed":
        return draw(M, K), (draw(N, K) * K**-0.5).t()
    if kind == "both_transposed":
        return draw(K, M).t(), (draw(N, K) * K**-0.5).t()
    # Views into wider buffers: row strides larger than the row, non-zero offsets.
    return draw(M, K + 11)[:, 3:K + 3], (draw(K, N + 5) * K**-0.5)[:, 2:N + 2]


@pytest.mark.parametrize("dtype", CPU_DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("kind", ["a_transposed", "b_transposed", "both_transposed", "sliced"])
def test_matmul_strided_inputs(kind, dtype, device):
    M, N, K = 77, 45, 70
    a, b = _operands(kind, M, N, K, dtype, device)
    assert not (a.is_contiguous() and b.is_contiguous())
    reference = (a.double() @ b.double(),)
    shape = Shape.of(M=M, N=N, K=K)
    for config in configs_for(SPEC, shape, dtype):
        verdict = check((matmul(a, b, config),), reference, SPEC.tolerance[dtype])
        assert verdict.ok, f"{kind} {config}: {verdict.detail}"


def test_matmul_writes_strided_output(device):
    a, b = _operands("sliced", 50, 40, 30, torch.float32, device)
    big = torch.full((50, 60), float("nan"), device=device)
    out = big[:, 10:50]
    matmul(a, b, out=out)
    assert check((out,), (a.double() @ b.double(),), SPEC.tolerance[torch.float32]).ok
    # Columns outside the view are untouched.
    assert torch.isnan(big[:, :10]).all() and torch.isnan(big[:, 50:]).all()


# Shapes whose rows are multiples of 16 bytes in fp16 and fp32 (K and N multiples of 8), so
# the persistent TMA kernel can run them, and whose sizes are not multiples of 16, so the
# plain kernel is launched with ALIGN=8.
TMA_SHAPES = [
    (1, 8, 8),  # one row, one tile
    (96, 80, 72),  # multiples of 8, not 16
    (130, 72, 200),  # ragged against every tile
    (200, 136, 24),  # K shorter than any BLOCK_K
    (333, 264, 520),  # several tiles per program (the interpreter runs 3 programs)
    (64, 64, 64),  # exact tiles
]


def _tma_configs(shape, dtype):
    kept, _ = SPEC.space.prune(dict(shape.dims), dtype.itemsize, HOPPER)
    tma = [c for c in kept if c["TMA"] == 1]
    assert tma, shape
    # the smallest and the largest tile, and one with a deep K step
    by_tile = sorted(tma, key=lambda c: c["BLOCK_M"] * c["BLOCK_N"])
    deep = next(c for c in tma if c["BLOCK_K"] == 128)
    return [by_tile[0], by_tile[-1], deep]


@pytest.mark.parametrize("dtype", CPU_DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("mnk", TMA_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_tma_and_aligned_kernels_at_awkward_shapes(mnk, dtype, device):
    shape = Shape.of(M=mnk[0], N=mnk[1], K=mnk[2])
    inputs = SPEC.make_inputs(shape, dtype, device, seed=sum(mnk))
    plain = {**SPEC.space.default, "TMA": 0}
    for config in [*_tma_configs(shape, dtype), plain]:
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


def test_matmul_tma_store_stays_inside_its_view(device):
    """A guard band of NaN around a view of a wider output: a descriptor store must write
    the view and nothing past its edges (triton-lang/triton#11583 reports writes past an
    odd-width output)."""
    M, N, K = 70, 40, 24
    gen = torch.Generator(device=device).manual_seed(3)
    a = torch.randn((M, K), generator=gen, device=device).half()
    b = torch.randn((K, N), generator=gen, device=device).half()
    big = torch.full((M + 2, N + 24), float("nan"), device=device).half()
    out = big[1:M + 1, 8:N + 8]  # rows of 64 elements, 16-byte aligned start
    config = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
              "num_stages": 3, "TMA": 1}
    matmul(a, b, config, out=out)
    assert check((out,), (a.double() @ b.double(),), SPEC.tolerance[torch.float16]).ok
    band = torch.cat([big[0], big[-1], big[1:-1, :8].flatten(), big[1:-1, N + 8:].flatten()])
    assert torch.isnan(band.float()).all()


def test_tma_refuses_what_descriptors_cannot_describe(device):
    a = torch.randn(10, 12, device=device).half()  # rows of 24 bytes
    b = torch.randn(12, 16, device=device).half()
    config = {**SPEC.space.default, "BLOCK_K": 64, "BLOCK_M": 64, "TMA": 1}
    with pytest.raises(TlabError, match="16-byte aligned rows"):
        matmul(a, b, config)
    assert tma_ready(b.t().contiguous().t()) == (
        "TMA=1 needs every matrix with unit column stride (row-major)")
    reasons = dict((config_text(c), why) for c, why in SPEC.space.prune(
        {"M": 10, "N": 16, "K": 12}, 2, HOPPER)[1])
    assert any("TMA=1 needs rows of a multiple of 16 bytes; K=12" in r for r in reasons.values())


def test_whole_tiles_leaves_the_partial_wave_to_stream_k():
    assert whole_tiles(288, 132, 0) == 288
    assert whole_tiles(288, 132, 1) == 264  # two whole waves, 24 tiles shared
    assert whole_tiles(288, 132, 2) == 132  # one whole wave, 156 tiles shared
    assert whole_tiles(64, 132, 1) == 0  # fewer tiles than programs: all shared
    assert whole_tiles(264, 132, 1) == 264  # whole waves: nothing to share
    assert whole_tiles(100, 132, 2) == 0


# (M, N, K, BLOCK_K): with the interpreter's 3 programs and 64 x 64 tiles, shared tiles whose
# K-steps span two and three programs, a ragged last K-step, and a partial last wave.
STREAM_K_CASES = [(64, 64, 1000, 32), (96, 80, 72, 64), (300, 104, 520, 64), (136, 72, 296, 32),
                  (8, 8, 4000, 64)]


@pytest.mark.parametrize("dtype", CPU_DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("case", STREAM_K_CASES, ids=lambda c: "x".join(map(str, c)))
def test_stream_k_adds_every_share_once(case, dtype, device):
    """A share written over another's (the overwrite of a broken split-K) or added twice
    misses the float64 reference by whole products; a flag left set by one call would hand
    the next call a stale partial, so two calls must agree bit for bit."""
    M, N, K, block_k = case
    shape = Shape.of(M=M, N=N, K=K)
    inputs = SPEC.make_inputs(shape, dtype, device, seed=M + K)
    reference = SPEC.reference(inputs)
    for stream_k in (1, 2):
        config = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": block_k, "GROUP_M": 8,
                  "num_warps": 4, "num_stages": 3, "TMA": 1, "STREAM_K": stream_k}
        first = matmul(inputs["a"], inputs["b"], config)
        verdict = check((first,), reference, SPEC.tolerance[dtype])
        assert verdict.ok, f"{config}: {verdict.detail}"
        assert torch.equal(first, matmul(inputs["a"], inputs["b"], config))


def test_tma_is_pruned_where_the_device_has_none():
    no_tma = dataclasses.replace(HOPPER, tma=False, label="sm_80")
    kept, pruned = SPEC.space.prune({"M": 4096, "N": 4096, "K": 4096}, 2, no_tma)
    assert kept and all(c["TMA"] == 0 for c in kept)
    assert any("(Hopper or newer); sm_80 has none" in why for _, why in pruned)


def test_alignment_is_what_triton_cannot_see_itself():
    assert alignment(1528, 1528, 1528) == 8
    assert alignment(4096, 4096, 4096) == 1  # multiples of 16: Triton specialises itself
    assert alignment(4096, 1000) == 8
    assert alignment(100, 4096) == 4
    assert alignment(4097, 4096) == 1


def test_matmul_rejects_mismatched_inputs(device):
    a = torch.randn(4, 5, device=device)
    with pytest.raises(TlabError, match="M x K"):
        matmul(a, torch.randn(6, 3, device=device))
    with pytest.raises(TlabError, match="fp32, fp16 or bf16"):
        matmul(a.double(), torch.randn(5, 3, device=device).double())


def test_matmul_bf16_is_refused_in_the_interpreter():
    assert SPEC.interpreter_refusal(torch.bfloat16) is not None
    assert "11584" in SPEC.interpreter_refusal(torch.bfloat16)
    assert SPEC.interpreter_refusal(torch.float16) is None


def test_matmul_cost_model():
    cost = SPEC.cost(Shape.of(M=4, N=3, K=2), torch.float16)
    assert cost.flops == 2 * 4 * 3 * 2
    assert cost.bytes == (4 * 2 + 2 * 3 + 4 * 3) * 2


@pytest.mark.gpu
@pytest.mark.parametrize("mnk", AWKWARD + [(4096, 4096, 4096), (8192, 8192, 8192)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_bf16_on_gpu(mnk, device):
    dtype = torch.bfloat16
    shape = Shape.of(M=mnk[0], N=mnk[1], K=mnk[2])
    inputs = SPEC.make_inputs(shape, dtype, device, seed=1)
    for config in configs_for(SPEC, shape, dtype):
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["fp32", "fp16", "bf16"])
def test_matmul_default_shapes_on_gpu(dtype, device):
    for shape in SPEC.default_shapes:
        inputs = SPEC.make_inputs(shape, dtype, device, seed=2)
        for config in configs_for(SPEC, shape, dtype, count=1):
            verdict = run_and_check(SPEC, inputs, config, dtype)
            assert verdict.ok, f"{shape} {config}: {verdict.detail}"


@pytest.mark.gpu
@pytest.mark.parametrize("mnk", [(1000, 1000, 1000), (1528, 1528, 1528), (3000, 3000, 3000),
                                 (1024, 1024, 16384), (512, 512, 16376)],
                         ids=lambda s: "x".join(map(str, s)))
def test_stream_k_bf16_on_gpu(mnk, device):
    """Every stream-K config the space keeps at these shapes (K split into 2 to 20+ shares,
    K not a multiple of BLOCK_K at two), correct and the same on a second call."""
    dtype = torch.bfloat16
    shape = Shape.of(M=mnk[0], N=mnk[1], K=mnk[2])
    inputs = SPEC.make_inputs(shape, dtype, device, seed=3)
    reference = SPEC.reference(inputs)
    kept, _ = SPEC.space.prune(dict(shape.dims), 2, HOPPER)
    configs = [c for c in kept if c["STREAM_K"]]
    assert configs
    for config in configs:
        first = matmul(inputs["a"], inputs["b"], config)
        verdict = check((first,), reference, SPEC.tolerance[dtype])
        assert verdict.ok, f"{config_text(config)}: {verdict.detail}"
        assert torch.equal(first, matmul(inputs["a"], inputs["b"], config)), config_text(config)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["a_transposed", "b_transposed", "both_transposed", "sliced"])
def test_matmul_bf16_strided_on_gpu(kind, device):
    a, b = _operands(kind, 1000, 700, 900, torch.bfloat16, device)
    verdict = check((matmul(a, b),), (a.double() @ b.double(),), SPEC.tolerance[torch.bfloat16])
    assert verdict.ok, verdict.detail
