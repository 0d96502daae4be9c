"""softmax against float64 torch on awkward shapes, strides, extreme values and configs."""

import dataclasses

import pytest
import torch
from helpers.kernel_cases import check_default_shapes, configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.softmax import MAX_COLS, MAX_ROW_COLS, SPEC, default_config, softmax
from tritonbench_lab.measure.verify import check
from tritonbench_lab.space import HOPPER, config_short
from tritonbench_lab.spec import Shape

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]
AWKWARD = [
    (1, 1),  # one element
    (1, 781),  # one row, odd width
    (7, 3),  # fewer columns than any thread count
    (263, 781),  # many rows (a prime count: no ROWS divides it), odd width
    (3, 4097),  # just past a power of two: nearly half the block is padding
    (2, MAX_ROW_COLS),  # the widest row one program holds
    (2, MAX_ROW_COLS + 1),  # one column more: only split or walked (TILES > 1) configs
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
    (2, MAX_ROW_COLS, 16),
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


@pytest.mark.parametrize("rows_cols_split_tiles", [
    (1, MAX_ROW_COLS + 1, 1, 8),  # one program walks the row in 8 tiles; the last holds 1
    (3, 131_075, 8, 4),  # pieces of 32,768 in tiles of 8,192; ragged last piece
    (2, 70_001, 4, 2),
    (1, 131_075, 64, 1),  # 64 pieces held in registers; most of the last ones padding
], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_softmax_wide_rows_split_and_walked(rows_cols_split_tiles, dtype, device):
    rows, cols, split, tiles = rows_cols_split_tiles
    inputs = SPEC.make_inputs(Shape.of(rows=rows, cols=cols), dtype, device, seed=cols)
    for warps, keep_last in ((1, 0), (4, int(tiles > 1))):  # walked: the last tile held too
        config = {"ROWS": 1, "num_warps": warps, "PER_SM": 0, "SPLIT": split, "TILES": tiles,
                  "KEEP_LAST": keep_last}
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


def test_softmax_online_rule_rescales_when_a_later_tile_holds_the_max(device):
    # Row 0 rises, so every tile raises the running max (a sum not rescaled by
    # exp(old max - new max) is off by orders of magnitude); row 1 falls; row 2 starts with a
    # tile of -inf (a running max of -inf must not turn the sum into NaN).
    cols = MAX_ROW_COLS + 4000
    ramp = torch.linspace(-40.0, 40.0, cols, device=device)
    x = torch.stack([ramp, ramp.flip(0), ramp.clone()])
    x[2, :20_000] = float("-inf")
    expected = (torch.softmax(x.double(), dim=-1),)
    for split, tiles, keep_last in ((1, 8, 0), (2, 4, 1), (4, 2, 0), (4, 2, 1)):
        y = softmax(x, {"ROWS": 1, "num_warps": 2, "PER_SM": 0, "SPLIT": split, "TILES": tiles,
                        "KEEP_LAST": keep_last})
        verdict = check((y,), expected, SPEC.tolerance[torch.float32])
        assert verdict.ok, f"SPLIT={split} TILES={tiles} KEEP_LAST={keep_last}: {verdict.detail}"
        assert (y[2, :20_000] == 0).all()


def test_softmax_space_for_rows_wider_than_one_program():
    fp32 = 4
    kept, pruned = SPEC.space.prune({"rows": 512, "cols": 1_048_576}, fp32, HOPPER)
    reasons = {config_short(c): why for c, why in pruned}

    def split(pieces, tiles, keep_last=0):
        return {"ROWS": 1, "num_warps": 8, "PER_SM": 0, "SPLIT": pieces, "TILES": tiles,
                "KEEP_LAST": keep_last}

    assert "need SPLIT > 1 or TILES > 1" in reasons[config_short(split(1, 1))]
    assert split(128, 1) in kept  # pieces of 8,192 in registers
    assert split(32, 4) in kept  # pieces of 32,768 walked in 4 tiles
    assert split(32, 4, keep_last=1) in kept  # ... the last tile held
    assert "TILES=1 keeps the whole piece" in SPEC.space.excluded(split(128, 1, keep_last=1))
    assert "wider than one program" in reasons[config_short(split(2, 2))]
    assert "narrower than 2048" in reasons[config_short(split(128, 8))]
    # Every piece of a row must be able to be resident at once: no more pieces than SMs.
    a100_like = dataclasses.replace(HOPPER, sms=108)
    few_sms = dict((config_short(c), why) for c, why in SPEC.space.prune(
        {"rows": 512, "cols": 1_048_576}, fp32, a100_like)[1])
    assert "108 SMs" in few_sms[config_short(split(128, 1))]
    # Rows that fit one program are never read twice.
    narrow = SPEC.space.prune({"rows": 8192, "cols": MAX_ROW_COLS}, fp32, HOPPER)[1]
    assert any("would read them twice" in why for _, why in narrow)


@pytest.mark.parametrize("cols", [4096, MAX_ROW_COLS + 1, 131_072, 1_048_576, MAX_COLS])
def test_softmax_default_config_fits_every_width(cols):
    config = SPEC.space.complete(default_config(cols))
    why = SPEC.space.why_pruned(config, {"rows": 4, "cols": cols}, 2, HOPPER)
    assert why is None, f"{cols}: {why}"


def test_softmax_without_a_config_takes_the_wide_default(device):
    x = torch.randn((2, MAX_ROW_COLS + 3), device=device)
    assert check((softmax(x),), (torch.softmax(x.double(), dim=-1),),
                 SPEC.tolerance[torch.float32]).ok


def test_softmax_space_keeps_split_for_wide_rows_only():
    fp32 = 4
    kept, pruned = SPEC.space.prune({"rows": 8192, "cols": 65536}, fp32, HOPPER)
    reasons = {config_short(c): why for c, why in pruned}
    assert {"ROWS": 1, "num_warps": 4, "PER_SM": 0, "SPLIT": 16, "TILES": 1, "KEEP_LAST": 0} in kept
    # A config of both kernels is none: out of the space, never a `skipped` row.
    for both in ({"ROWS": 2, "num_warps": 4, "PER_SM": 0, "SPLIT": 2, "TILES": 1, "KEEP_LAST": 0},
                 {"ROWS": 1, "num_warps": 4, "PER_SM": 1, "SPLIT": 1, "TILES": 2, "KEEP_LAST": 0}):
        assert "needs ROWS=1 and PER_SM=0" in SPEC.space.excluded(both)
        assert both not in list(SPEC.space) and config_short(both) not in reasons
    assert len(SPEC.space) < 500  # of a product of 4,608
    narrow_kept, narrow_pruned = SPEC.space.prune({"rows": 8192, "cols": 4096}, fp32, HOPPER)
    assert all(c["SPLIT"] == 1 for c in narrow_kept)
    assert any("narrower than 4096" in why for _, why in narrow_pruned)


def test_softmax_space_prunes_persistent_configs_that_cannot_be_resident():
    sizes, bf16 = {"rows": 8192, "cols": 32768}, 2
    kept, pruned = SPEC.space.prune(sizes, bf16, HOPPER)
    reasons = {config_short(c): why for c, why in pruned}
    # 32768 bf16 columns on 128 threads: 256 fp32 + 256 bf16 values per thread.
    assert "registers" in reasons[config_short(
        {"ROWS": 1, "num_warps": 4, "PER_SM": 1, "SPLIT": 1, "TILES": 1, "KEEP_LAST": 0})]
    # Two resident programs of 1024 threads leave 32 registers per thread; 48 are needed.
    assert "leave 32" in reasons[config_short(
        {"ROWS": 1, "num_warps": 32, "PER_SM": 2, "SPLIT": 1, "TILES": 1, "KEEP_LAST": 0})]
    assert {"ROWS": 1, "num_warps": 16, "PER_SM": 1, "SPLIT": 1, "TILES": 1, "KEEP_LAST": 0} in kept
    assert {"ROWS": 1, "num_warps": 16, "PER_SM": 0, "SPLIT": 1, "TILES": 1, "KEEP_LAST": 0} in kept
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
    with pytest.raises(TlabError, match=f"at most {MAX_COLS} columns"):
        SPEC.check_shape(Shape.of(rows=1, cols=MAX_COLS + 1))
    with pytest.raises(TlabError, match="SPLIT > 1 or TILES > 1"):
        softmax(torch.randn(1, MAX_ROW_COLS + 1, device=device), {"num_warps": 4})
    with pytest.raises(TlabError, match="2-D"):
        softmax(torch.randn(2, 3, 4, device=device))


def test_softmax_cost_model():
    cost = SPEC.cost(Shape.of(rows=8, cols=10), torch.bfloat16)
    assert cost.bytes == 2 * 8 * 10 * 2  # read once, write once


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_softmax_default_shapes_on_gpu(dtype, device):
    check_default_shapes(SPEC, dtype, device, seed=4)
