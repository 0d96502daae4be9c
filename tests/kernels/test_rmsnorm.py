"""rmsnorm and add_rmsnorm against float64 torch on awkward shapes, strides and configs."""

import pytest
import torch
from helpers.kernel_cases import check_default_shapes, configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.rmsnorm import ADD_SPEC, MAX_COLS, SPEC, rmsnorm
from tritonbench_lab.measure.verify import check
from tritonbench_lab.spec import Shape

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]
AWKWARD = [
    (1, 1),
    (1, 781),
    (7, 3),
    (263, 781),  # many rows (a prime count: no ROWS divides it), odd width
    (3, 4097),
    (2, MAX_COLS),
    (64, 1000),
]


@pytest.mark.parametrize("spec", [SPEC, ADD_SPEC], ids=lambda s: s.name)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rows_cols", AWKWARD, ids=lambda s: "x".join(map(str, s)))
def test_rmsnorm_awkward_shapes(rows_cols, dtype, spec, device):
    shape = Shape.of(rows=rows_cols[0], cols=rows_cols[1])
    inputs = spec.make_inputs(shape, dtype, device, seed=rows_cols[0])
    configs = configs_for(spec, shape, dtype)
    assert len(configs) >= 3
    for config in configs:
        verdict = run_and_check(spec, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_add_rmsnorm_strided_rows(dtype, device):
    gen = torch.Generator(device=device).manual_seed(5)

    def draw(*size):
        return torch.randn(size, generator=gen, device=device).to(dtype)

    x = draw(33, 400)[:, 5:305]  # row stride 400, offset 5
    r = draw(33, 300)
    w = draw(300).abs() + 0.5
    h = x.double() + r.double()
    expected_y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
    for config in configs_for(ADD_SPEC, Shape.of(rows=33, cols=300), dtype):
        y, h_out = rmsnorm(x, w, 1e-5, residual=r, config=config)
        verdict = check((y, h_out), (expected_y, h), ADD_SPEC.tolerance[dtype])
        assert verdict.ok, f"{config}: {verdict.detail}"


def test_rmsnorm_column_strided_input_is_copied_not_misread(device):
    x = torch.randn((10, 64), device=device)[:, ::2]
    w = torch.rand(32, device=device) + 0.5
    expected = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w
    assert check((rmsnorm(x, w),), (expected,), SPEC.tolerance[torch.float32]).ok


def test_add_rmsnorm_writes_both_outputs(device):
    # Poisoned outputs catch a kernel that skips the residual store.
    inputs = ADD_SPEC.make_inputs(Shape.of(rows=5, cols=70), torch.float32, device, seed=0)
    y = torch.full_like(inputs["x"], float("nan"))
    h = torch.full_like(inputs["x"], float("nan"))
    ADD_SPEC.launch(inputs, ADD_SPEC.space.default, (y, h))
    assert torch.isfinite(y).all() and torch.isfinite(h).all()
    assert torch.equal(h, inputs["x"] + inputs["residual"])


def test_rmsnorm_rejects_bad_input(device):
    x = torch.randn(4, 8, device=device)
    with pytest.raises(TlabError, match="weight"):
        rmsnorm(x, torch.ones(7, device=device))
    with pytest.raises(TlabError, match="residual shape"):
        rmsnorm(x, torch.ones(8, device=device), residual=torch.randn(4, 9, device=device))
    with pytest.raises(TlabError, match="wider"):
        SPEC.check_shape(Shape.of(rows=1, cols=MAX_COLS + 1))


def test_rmsnorm_cost_models():
    shape = Shape.of(rows=8, cols=10)
    assert SPEC.cost(shape, torch.float32).bytes == (2 * 80 + 10) * 4
    assert ADD_SPEC.cost(shape, torch.bfloat16).bytes == (4 * 80 + 10) * 2


@pytest.mark.gpu
@pytest.mark.parametrize("spec", [SPEC, ADD_SPEC], ids=lambda s: s.name)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rmsnorm_default_shapes_on_gpu(dtype, spec, device):
    check_default_shapes(spec, dtype, device, seed=6)
