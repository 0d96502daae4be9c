"""layernorm against float64 torch on awkward shapes, strided rows and configs of its space."""

import pytest
import torch
from helpers.kernel_cases import check_default_shapes, configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.layernorm import MAX_COLS, SPEC, layernorm
from tritonbench_lab.measure.verify import check
from tritonbench_lab.space import HOPPER
from tritonbench_lab.spec import Shape

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]
AWKWARD = [
    (1, 1),  # one element: centred to zero, y = b
    (1, 781),  # one row, odd width
    (7, 3),
    (37, 781),  # a prime row count (no ROWS divides it), odd width
    (3, 4097),  # just past a power of two: 4095 padded columns
    (2, MAX_COLS),
    (64, 1000),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rows_cols", AWKWARD, ids=lambda s: "x".join(map(str, s)))
def test_layernorm_awkward_shapes(rows_cols, dtype, device):
    shape = Shape.of(rows=rows_cols[0], cols=rows_cols[1])
    inputs = SPEC.make_inputs(shape, dtype, device, seed=rows_cols[0])
    configs = configs_for(SPEC, shape, dtype)
    assert len(configs) >= 3
    for config in configs:
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


def _reference(x, w, b, eps):
    x, w, b = x.double(), w.double(), b.double()
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt((x - mean).pow(2).mean(-1, keepdim=True) + eps) * w + b


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_layernorm_strided_rows_and_a_large_mean(dtype, device):
    """Rows of a wider buffer (row stride 400, offset 5), each with a mean 50 times its
    spread: E[x^2] - E[x]^2 in fp32 would lose the variance there; centring first does not."""
    gen = torch.Generator(device=device).manual_seed(5)
    x = (torch.randn((33, 400), generator=gen, device=device) + 50.0).to(dtype)[:, 5:305]
    w = (torch.rand(300, generator=gen, device=device) + 0.5).to(dtype)
    b = torch.randn(300, generator=gen, device=device).to(dtype)
    for config in configs_for(SPEC, Shape.of(rows=33, cols=300), dtype):
        y = layernorm(x, w, b, 1e-5, config)
        verdict = check((y,), (_reference(x, w, b, 1e-5),), SPEC.tolerance[dtype])
        assert verdict.ok, f"{config}: {verdict.detail}"


@pytest.mark.parametrize("rows_cols_tile", [
    (5, 3000, 1024),  # two whole tiles and a ragged third (952 columns)
    (5, 1031, 1024),  # one tile and 7 columns in the second
    (6, 4097, 2048),  # two whole tiles and a third of one column
    (9, 2048, 1024),  # tiles that divide the row; 9 rows: ROWS > 1 leaves a part-tile
    (8, 2048, 1024),  # tiles divide the row and ROWS the rows: no mask at all
    (7, 1024, 1024),  # one step a walk; ROWS=1 covers the rows, 2 and 4 leave a part-tile
    (4, 1000, 1024),  # one step wider than the row (24 padding columns)
], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_layernorm_walked_rows(rows_cols_tile, dtype, device):
    """TILE_COLS > 0: the row walked three times (sum, centred squares, output), tile by
    tile; every config of the walked kind the space keeps at this shape, and ROWS up to 4."""
    rows, cols, tile = rows_cols_tile
    shape = Shape.of(rows=rows, cols=cols)
    inputs = SPEC.make_inputs(shape, dtype, device, seed=cols)
    configs = [{"ROWS": r, "num_warps": w, "TILE_COLS": tile} for r, w in ((1, 1), (2, 4), (4, 2))]
    for config in configs:
        assert SPEC.space.why_pruned(config, dict(shape.dims), dtype.itemsize, HOPPER) is None
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


def test_layernorm_walked_rows_keep_a_large_mean_exact(device):
    """The walk centres each tile on the whole row's mean (a mean 50x the spread)."""
    gen = torch.Generator(device=device).manual_seed(7)
    x = (torch.randn((6, 2600), generator=gen, device=device) + 50.0)[:, 3:2503]
    w, b = torch.rand(2500, device=device) + 0.5, torch.randn(2500, device=device)
    y = layernorm(x, w, b, 1e-5, {"ROWS": 2, "num_warps": 4, "TILE_COLS": 1024})
    verdict = check((y,), (_reference(x, w, b, 1e-5),), SPEC.tolerance[torch.float32])
    assert verdict.ok, verdict.detail


def test_layernorm_space_walks_tiles_no_wider_than_the_padded_row():
    kept, _ = SPEC.space.prune({"rows": 16384, "cols": 4096}, 4, HOPPER)
    assert {c["TILE_COLS"] for c in kept} == {0, 1024, 2048, 4096}  # 4096: one step a walk
    narrow, pruned = SPEC.space.prune({"rows": 16384, "cols": 1000}, 4, HOPPER)
    assert {c["TILE_COLS"] for c in narrow} == {0, 1024}
    reasons = [why for _, why in pruned]
    assert any("TILE_COLS=2048 is wider than the row of 1000 padded to 1024" in why
               for why in reasons)
    # Configs committed before TILE_COLS existed hold whole rows.
    assert SPEC.space.complete({"ROWS": 2, "num_warps": 8})["TILE_COLS"] == 0


def test_layernorm_column_strided_input_is_copied_not_misread(device):
    x = torch.randn((10, 64), device=device)[:, ::2]
    w, b = torch.rand(32, device=device) + 0.5, torch.randn(32, device=device)
    assert check((layernorm(x, w, b),), (_reference(x, w, b, 1e-5),),
                 SPEC.tolerance[torch.float32]).ok


def test_layernorm_baselines_agree_with_the_reference(device):
    inputs = SPEC.make_inputs(Shape.of(rows=9, cols=300), torch.float32, device, seed=3)
    expected = SPEC.reference(inputs)
    for name in ("torch", "unfused"):
        got = SPEC.baselines[name](inputs)
        assert check((got,), expected, SPEC.tolerance[torch.float32]).ok, name


def test_layernorm_cost_counts_x_y_w_and_b():
    cost = SPEC.cost(Shape.of(rows=4, cols=10), torch.bfloat16)
    assert cost.bytes == (2 * 4 * 10 + 2 * 10) * 2 and cost.flops == 8 * 4 * 10


def test_layernorm_rejects_bad_input(device):
    x = torch.randn(4, 8, device=device)
    with pytest.raises(TlabError, match="weight must have 8"):
        layernorm(x, torch.ones(7, device=device), torch.zeros(8, device=device))
    with pytest.raises(TlabError, match="bias must have 8"):
        layernorm(x, torch.ones(8, device=device), torch.zeros(9, device=device))
    with pytest.raises(TlabError, match="2-D"):
        layernorm(x[0], torch.ones(8, device=device), torch.zeros(8, device=device))
    with pytest.raises(TlabError, match="wider"):
        SPEC.check_shape(Shape.of(rows=1, cols=MAX_COLS + 1))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_layernorm_default_shapes_on_gpu(dtype, device):
    check_default_shapes(SPEC, dtype, device, seed=6)
