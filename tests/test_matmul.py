"""matmul against float64 torch on awkward shapes, strides and configs from its space."""

import pytest
import torch
from kernel_cases import configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.matmul import SPEC, matmul
from tritonbench_lab.spec import Shape
from tritonbench_lab.verify import check

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
    inputs = SPEC.make_inputs(shape, dtype, device, seed=sum(mnk))
    configs = configs_for(SPEC, shape, dtype)
    assert len(configs) >= 3
    for config in configs:
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


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
@pytest.mark.parametrize("kind", ["a_transposed", "b_transposed", "both_transposed", "sliced"])
def test_matmul_bf16_strided_on_gpu(kind, device):
    a, b = _operands(kind, 1000, 700, 900, torch.bfloat16, device)
    verdict = check((matmul(a, b),), (a.double() @ b.double(),), SPEC.tolerance[torch.bfloat16])
    assert verdict.ok, verdict.detail
