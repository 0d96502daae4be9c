"""softmax against float64 torch on awkward shapes, strides, extreme values and configs."""

import pytest
import torch
from kernel_cases import configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.softmax import MAX_COLS, SPEC, softmax
from tritonbench_lab.space import HOPPER, config_short
from tritonbench_lab.spec import Shape
from tritonbench_lab.verify import check

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]
AWKWARD = [
    (1, 1),  # one element
    (1, 781),  # one row, odd width
    (7, 3),  # fewer columns than any thread count
    (263, 781),  # many rows (a prime count: no ROWS divides it), odd width
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


@pytest.mark.parametrize("rows_cols", [(1, 781), (7, 3), (29, 1000), (5, 4097)],
                         ids=lambda s: "x".join(map(str, s)))
def test_softmax_persistent_programs_cover_every_row(rows_cols, device):
    # In the interpreter the grid is 3 programs per "SM" count of 3, so each program walks
    # several tiles, prefetching the next; ragged last tiles and fewer rows than programs too.
    shape = Shape.of(rows=rows_cols[0], cols=rows_cols[1])
    for dtype in (torch.float32, torch.bfloat16):
        inputs = SPEC.make_inputs(shape, dtype, device, seed=11)
        for rows, per_sm in ((1, 1), (2, 2), (4, 1)):
            config = {"ROWS": rows, "num_warps": 1, "PER_SM": per_sm}
            verdict = run_and_check(SPEC, inputs, config, dtype)
            assert verdict.ok, f"{shape} {config}: {verdict.detail}"


@pytest.mark.parametrize("rows_cols_split", [
    (1, 4097, 2),  # the second piece holds one real column
    (3, 4097, 4),  # pieces of 2048: the last is all padding
    (5, 1000, 4),  # ragged last piece
    (2, 3, 8),  # fewer columns than pieces: pieces of one column, most of them padding
    (9, 300, 16),  # several rows, ragged pieces of 18-19 columns
    (2, MAX_COLS, 16),
], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_softmax_split_rows_match_torch(rows_cols_split, dtype, device):
    # Pieces of a row exchange (max, sum) through memory. On the GPU the programs wait for
    # each other; in the interpreter a first launch publishes every piece.
    rows, cols, split = rows_cols_split
    inputs = SPEC.make_inputs(Shape.of(rows=rows, cols=cols), dtype, device, seed=cols)
    for warps in (1, 4):
        config = {"ROWS": 1, "num_warps": warps, "PER_SM": 0, "SPLIT": split}
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


def test_softmax_split_handles_strides_masks_and_huge_logits(device):
    gen = torch.Generator(device=device).manual_seed(5)
    wide = 30 * torch.randn((6, 2 * 700 + 9), generator=gen, device=device)
    x = wide[:, 9::2]  # row stride 1409, column stride 2
    x[0, :350] = float("-inf")  # a piece entirely masked
    x[1, 100] = 1e4  # exp(1e4) overflows unless the row's max is subtracted
    out = torch.empty((6, 900), device=device)[:, 100:800]
    for split in (2, 4):
        out.fill_(float("nan"))
        softmax(x, {"ROWS": 1, "num_warps": 2, "PER_SM": 0, "SPLIT": split}, out=out)
        verdict = check((out,), (torch.softmax(x.double(), dim=-1),),
                        SPEC.tolerance[torch.float32])
        assert verdict.ok, f"SPLIT={split}: {verdict.detail}"
        assert (out[0, :350] == 0).all()


def test_softmax_configs_tuned_before_split_run_one_program_per_row(device):
    x = torch.randn((4, 100), device=device)
    y = softmax(x, {"ROWS": 1, "num_warps": 1, "PER_SM": 0})
    assert check((y,), (torch.softmax(x.double(), dim=-1),), SPEC.tolerance[torch.float32]).ok


def test_softmax_space_keeps_split_for_wide_rows_only():
    fp32 = 4
    kept, pruned = SPEC.space.prune({"rows": 8192, "cols": 65536}, fp32, HOPPER)
    reasons = {config_short(c): why for c, why in pruned}
    assert {"ROWS": 1, "num_warps": 4, "PER_SM": 0, "SPLIT": 16} in kept
    assert "needs ROWS=1 and PER_SM=0" in reasons[config_short(
        {"ROWS": 2, "num_warps": 4, "PER_SM": 0, "SPLIT": 2})]
    assert "needs ROWS=1 and PER_SM=0" in reasons[config_short(
        {"ROWS": 1, "num_warps": 4, "PER_SM": 1, "SPLIT": 2})]
    narrow_kept, narrow_pruned = SPEC.space.prune({"rows": 8192, "cols": 4096}, fp32, HOPPER)
    assert all(c["SPLIT"] == 1 for c in narrow_kept)
    assert any("narrower than 4096" in why for _, why in narrow_pruned)


def test_softmax_space_prunes_persistent_configs_that_cannot_be_resident():
    sizes, bf16 = {"rows": 8192, "cols": 32768}, 2
    kept, pruned = SPEC.space.prune(sizes, bf16, HOPPER)
    reasons = {config_short(c): why for c, why in pruned}
    # 32768 bf16 columns on 128 threads: 256 fp32 + 256 bf16 values per thread.
    assert "registers" in reasons[config_short(
        {"ROWS": 1, "num_warps": 4, "PER_SM": 1, "SPLIT": 1})]
    # Two resident programs of 1024 threads leave 32 registers per thread; 48 are needed.
    assert "leave 32" in reasons[config_short(
        {"ROWS": 1, "num_warps": 32, "PER_SM": 2, "SPLIT": 1})]
    assert {"ROWS": 1, "num_warps": 16, "PER_SM": 1, "SPLIT": 1} in kept
    assert {"ROWS": 1, "num_warps": 16, "PER_SM": 0, "SPLIT": 1} in kept
    few_rows = SPEC.space.prune({"rows": 3, "cols": 64}, bf16, HOPPER)[1]
    assert any("2 programs of 2 rows would idle" in why for _, why in few_rows)


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
