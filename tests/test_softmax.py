"""softmax against float64 torch on awkward shapes, strides, extreme values and configs."""

import pytest
import torch
from kernel_cases import configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.softmax import MAX_COLS, SPEC, softmax
from tritonbench_lab.spec import Shape
from tritonbench_lab.verify import check

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]
AWKWARD = [
    (1, 1),  # one element
    (1, 781),  # one row, odd width
    (7, 3),  # fewer columns than any thread count
    (1823, 781),  # many rows, odd width, rows not a multiple of any ROWS
    (3, 4097),  # just past a power of two: nearly half the block is padding
    (2, MAX_COLS),  # the widest supported row
    (64, 1000),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rows_cols", AWKWARD, ids=lambda s: "x".join(map(str, s)))
def test_softmax_awkward_shapes(rows_cols, dtype, device):
    shape = Shape.of(rows=rows_cols[0], cols=rows_cols[1])
    inputs = SPEC.make_inputs(shape, dtype, device, seed=rows_cols[1])
    configs = configs_for(SPEC, shape, dtype)
    assert len(configs) >= 3
    for config in configs:
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_softmax_strided_input_and_output(dtype, device):
    gen = torch.Generator(device=device).manual_seed(3)
    wide = torch.randn((40, 300), generator=gen, device=device).to(dtype)
    x = wide[:, 7:207:2]  # row stride 300, column stride 2, non-zero offset
    out = torch.empty((40, 250), dtype=dtype, device=device)[:, :100]
    reference = (torch.softmax(x.double(), dim=-1),)
    for config in configs_for(SPEC, Shape.of(rows=40, cols=100), dtype):
        out.fill_(float("nan"))
        softmax(x, config, out=out)
        verdict = check((out,), reference, SPEC.tolerance[dtype])
        assert verdict.ok, f"{config}: {verdict.detail}"


def test_softmax_is_stable_for_huge_logits(device):
    # exp(1e4) overflows fp32; a kernel that forgets to subtract the max returns NaN.
    x = torch.tensor([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4 + 2.0]], device=device)
    expected = torch.softmax(x.double(), dim=-1)
    assert check((softmax(x),), (expected,), SPEC.tolerance[torch.float32]).ok


def test_softmax_masked_entries_get_zero(device):
    x = torch.randn((3, 50), device=device)
    x[:, ::3] = float("-inf")  # attention-style masking
    y = softmax(x)
    assert (y[:, ::3] == 0).all()
    assert check((y,), (torch.softmax(x.double(), dim=-1),), SPEC.tolerance[torch.float32]).ok


def test_softmax_rejects_rows_wider_than_one_pass(device):
    with pytest.raises(TlabError, match="online"):
        SPEC.check_shape(Shape.of(rows=1, cols=MAX_COLS + 1))
    with pytest.raises(TlabError, match="2-D"):
        softmax(torch.randn(2, 3, 4, device=device))


def test_softmax_cost_model():
    cost = SPEC.cost(Shape.of(rows=8, cols=10), torch.bfloat16)
    assert cost.bytes == 2 * 8 * 10 * 2  # read once, write once


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_softmax_default_shapes_on_gpu(dtype, device):
    for shape in SPEC.default_shapes:
        inputs = SPEC.make_inputs(shape, dtype, device, seed=4)
        for config in configs_for(SPEC, shape, dtype):
            verdict = run_and_check(SPEC, inputs, config, dtype)
            assert verdict.ok, f"{shape} {config}: {verdict.detail}"
