"""matmul_gelu (gelu(A @ B + bias), erf and tanh forms) against float64 on awkward shapes,
through both of matmul's kernels and stream-K."""

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from helpers.kernel_cases import check_configs_at, check_default_shapes

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.kernels.matmul_gelu import EPILOGUE_FLOPS, SPEC, TANH_SPEC, matmul_gelu
from tritonbench_lab.kernels.matmul_persistent import gelu_erf
from tritonbench_lab.measure.verify import check
from tritonbench_lab.spec import Shape

SPECS = [SPEC, TANH_SPEC]
AWKWARD = [
    (1, 37, 19),  # one row
    (200, 1, 33),  # one column: one bias value
    (129, 67, 93),  # ragged against every tile
    (17, 300, 5),  # K smaller than any BLOCK_K
    (96, 80, 72),  # multiples of 8, not 16: the TMA kernel runs too
    (45, 251, 130),  # primes and near-powers
]
CPU_DTYPES = [torch.float32, torch.float16]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("dtype", CPU_DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("mnk", AWKWARD, ids=lambda s: "x".join(map(str, s)))
def test_matmul_gelu_awkward_shapes(mnk, dtype, spec, device):
    shape = Shape.of(M=mnk[0], N=mnk[1], K=mnk[2])
    assert check_configs_at(spec, shape, dtype, device, seed=sum(mnk)) >= 3


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_stream_k_applies_the_epilogue_once_per_tile(approximate, device):
    """Shared tiles are summed from partials first and take the bias and GELU once: GELU of
    a partial, or the bias added by each share, misses the reference by order one."""
    M, N, K = 96, 80, 200  # 4 tiles of 64 x 64 on the interpreter's 3 programs: one shared
    spec = get_spec("matmul_gelu" if approximate == "none" else "matmul_gelu_tanh")
    inputs = spec.make_inputs(Shape.of(M=M, N=N, K=K), torch.float32, device, seed=5)
    reference = spec.reference(inputs)
    for stream_k in (0, 1, 2):
        config = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4,
                  "num_stages": 3, "TMA": 1, "STREAM_K": stream_k}
        out = matmul_gelu(inputs["a"], inputs["b"], inputs["bias"], config, approximate)
        verdict = check((out,), reference, spec.tolerance[torch.float32])
        assert verdict.ok, f"STREAM_K={stream_k}: {verdict.detail}"


def test_the_two_forms_differ_where_gelu_does(device):
    """The tanh form is not the erf form under another name: at |x| ~ 1-3 they differ by
    ~1e-4 to 1e-3, far above fp32 rounding."""
    inputs = SPEC.make_inputs(Shape.of(M=64, N=64, K=64), torch.float32, device, seed=9)
    args = (inputs["a"], inputs["b"], inputs["bias"])
    exact, approx = matmul_gelu(*args), matmul_gelu(*args, approximate="tanh")
    assert (exact - approx).abs().max() > 1e-4
    x = inputs["a"].double() @ inputs["b"].double() + inputs["bias"].double()
    assert torch.allclose(approx.double(), F.gelu(x, approximate="tanh"), atol=1e-5, rtol=1e-5)


@triton.jit
def apply_gelu_erf(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, gelu_erf(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


def test_the_epilogues_erf_gelu_is_within_3e_7_of_float64_everywhere(device):
    """The erf form computes Phi by Abramowitz-Stegun 7.1.26 (one exp, one reciprocal), not
    libdevice's erf: over both tails, the middle and the signed zeros, its error stays at
    the formula's 1.5e-7 per unit of x, far under fp32 matmul rounding."""
    x = torch.cat([torch.linspace(-12, 12, 20001), torch.tensor([0.0, -0.0, 1e-30, -1e-30])])
    x = x.to(device)
    y = torch.empty_like(x)
    apply_gelu_erf[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    exact = F.gelu(x.double())
    error = (y.double() - exact).abs() / x.double().abs().clamp(min=1)
    assert error.max() < 3e-7, float(error.max())
    assert y[x < -9].abs().max() < 1e-15  # the left tail goes to zero, not to noise


def test_matmul_gelu_needs_its_bias(device):
    a, b = torch.randn(8, 16, device=device), torch.randn(16, 24, device=device)
    with pytest.raises(TlabError, match="contiguous bias of 24 values"):
        matmul_gelu(a, b, torch.randn(23, device=device))
    with pytest.raises(TlabError, match="contiguous bias of 24 values"):
        matmul_gelu(a, b, torch.randn(48, device=device)[::2])


def test_matmul_gelu_cost_counts_the_epilogue():
    cost = SPEC.cost(Shape.of(M=4, N=3, K=2), torch.float16)
    assert cost.flops == 2 * 4 * 3 * 2 + EPILOGUE_FLOPS * 4 * 3
    assert cost.bytes == (4 * 2 + 2 * 3 + 4 * 3 + 3) * 2


def test_matmul_gelu_shares_matmuls_space_and_refuses_bf16_in_the_interpreter():
    matmul = get_spec("matmul")
    assert SPEC.space is matmul.space and TANH_SPEC.space is matmul.space
    assert "11584" in SPEC.interpreter_refusal(torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("mnk", AWKWARD + [(1000, 1000, 1000), (3000, 3000, 3000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_gelu_bf16_on_gpu(mnk, spec, device):
    shape = Shape.of(M=mnk[0], N=mnk[1], K=mnk[2])
    check_configs_at(spec, shape, torch.bfloat16, device, seed=1, count=3)


@pytest.mark.gpu
def test_matmul_gelu_default_shapes_on_gpu(device):
    check_default_shapes(SPEC, torch.bfloat16, device, seed=2)
