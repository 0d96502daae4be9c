"""`tlab compare`: winners across GPUs, % of own ceiling, config portability, pictures.

The GPUs here are TEST DATA, not measurements: results folders 'fixture-a' and 'fixture-b'
written by the real writer (store.append_rows) with hand-picked times, so every number
below can be checked by hand. Matmul shapes are round (1000^3 = 2e9 flops), so throughput
= 2*M*N*K / p50 is a round number too.
"""

import math
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.commands import tlab
from helpers.paths import REPO

from tritonbench_lab.data.records import (
    GBPS,
    OK,
    OUT_OF_RESOURCES,
    TFLOPS,
    TORCH_OP,
    TRITON,
    Ceiling,
    Record,
)
from tritonbench_lab.data.store import append_rows, load_winners
from tritonbench_lab.errors import TlabError
from tritonbench_lab.views import compare as cmp

REAL_H200 = REPO / "results" / "nvidia-h200"

SMALL = "BLOCK_M=64 BLOCK_N=64 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3"
MID = "BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=3"
BIG = "BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=4"
S1, S2, S4 = "1000x1000x1000", "2000x2000x2000", "4000x4000x4000"

# (shape, config, p50_ms or None, status) per fixture GPU, matmul bf16.
FIXTURE_A = [
    (S1, SMALL, 0.02, OK),  # winner: 2e9 / 0.02 ms = 100 TFLOP/s
    (S2, SMALL, 0.5, OK),
    (S2, MID, 0.2, OK),  # winner: 1.6e10 / 0.2 ms = 80 TFLOP/s
    (S4, MID, 2.0, OK),  # winner: 1.28e11 / 2 ms = 64 TFLOP/s
    (S4, BIG, 4.0, OK),  # B's winner here runs at 2.0 / 4.0 = 50% of A's best
    ("8000x8000x8000", MID, 16.0, OK),  # only on A
]
FIXTURE_B = [
    (S1, SMALL, 0.04, OK),  # same winner config as A: 100% both ways; 50 TFLOP/s
    (S2, MID, 1.25, OK),  # A's winner on B: 1.0 / 1.25 = 80% of B's best
    (S2, BIG, 1.0, OK),  # winner: 16 TFLOP/s; A never measured BIG here -> NaN
    (S4, MID, None, OUT_OF_RESOURCES),  # A's winner cannot run on B -> NaN
    (S4, BIG, 1.6, OK),  # winner: 80 TFLOP/s
    ("500x500x500", SMALL, 0.01, OK),  # only on B
]


def throughput(kernel: str, shape: str, p50_ms: float) -> tuple[float, str]:
    """matmul: 2*M*N*K flops in TFLOP/s; a row kernel: bf16 read + written once, in GB/s."""
    size = math.prod(int(s) for s in shape.split("x"))
    if kernel == "matmul":
        return 2 * size / (p50_ms * 1e-3) / 1e12, TFLOPS
    return 2 * 2 * size / (p50_ms * 1e-3) / 1e9, GBPS


def fixture_record(slug: str, shape: str, config: str, p50: float | None, status: str,
                   kernel: str = "matmul", dtype: str = "bf16") -> Record:
    timed = p50 is not None
    value, metric = throughput(kernel, shape, p50 or 1.0)
    return Record(
        run_id="20250101T000000Z-fixtur", timestamp="2025-01-01T00:00:00+00:00",
        kernel=kernel, provider=TRITON, dtype=dtype, shape=shape, config=config,
        status=status, error="" if status == OK else "test data", max_abs_error=None,
        p20_ms=p50 if timed else None, p50_ms=p50, p80_ms=p50 if timed else None,
        throughput=value if timed else None, metric=metric, compile_s=None, phase="sweep",
        method="do_bench" if timed else "", warmup_ms=None, rep_ms=None, seed=0,
        gpu=f"TEST FIXTURE {slug}", gpu_slug=slug, driver="", cuda="", torch="test",
        triton="test", tlab="test", source="TEST DATA")


def write_gpu(root: Path, slug: str, rows, kernel: str = "matmul", dtype: str = "bf16") -> Path:
    folder = root / "results" / slug
    append_rows(folder / f"{kernel}.csv",
                [fixture_record(slug, *row, kernel=kernel, dtype=dtype) for row in rows])
    return folder


@pytest.fixture(scope="module")
def gpus(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    a = write_gpu(root, "fixture-a", FIXTURE_A)
    b = write_gpu(root, "fixture-b", FIXTURE_B)
    # Only A is calibrated: matmul_bf16 ceiling of 200 TFLOP/s (test data).
    append_rows(a / "ceilings.csv", [Ceiling(
        name="matmul_bf16", metric=TFLOPS, value=200.0, p20_ms=1.0, p50_ms=1.0, p80_ms=1.0,
        size="test", method="do_bench", warmup_ms=None, rep_ms=None, gpu="test", gpu_slug="a",
        torch="test", triton="test", timestamp="2025-01-01")])
    return a, b


def test_table_values_throughput_and_pct_of_own_ceiling(gpus):
    frame = cmp.compare_frame(list(gpus), "matmul", "bf16")
    assert list(frame["shape"]) == [S1, S1, S2, S2, S4, S4]  # common shapes only, by size
    assert list(frame["gpu"]) == ["fixture-a", "fixture-b"] * 3
    got = {(r.gpu, r.shape): r for r in frame.itertuples()}
    expected = {S1: (100, 50), S2: (80, 16), S4: (64, 80)}
    for shape, (on_a, on_b) in expected.items():
        assert got[("fixture-a", shape)].throughput == pytest.approx(on_a)
        assert got[("fixture-b", shape)].throughput == pytest.approx(on_b)
        assert got[("fixture-a", shape)].pct_ceiling == pytest.approx(on_a / 2)  # of 200
        assert math.isnan(got[("fixture-b", shape)].pct_ceiling)  # B is not calibrated
    assert got[("fixture-a", S2)].winner_config == MID
    assert got[("fixture-b", S2)].winner_config == BIG
    assert set(frame["metric"]) == {TFLOPS}


def test_portability_both_ways(gpus):
    a, b = gpus
    a_on_b = cmp.portability(a, b, "matmul", "bf16").set_index("shape")
    assert a_on_b.loc[S1, "runs_at_pct"] == pytest.approx(100)  # same winner config
    assert a_on_b.loc[S2, "runs_at_pct"] == pytest.approx(80)  # 1.0 ms / 1.25 ms
    assert math.isnan(a_on_b.loc[S4, "runs_at_pct"])
    assert a_on_b.loc[S4, "status_on_target"] == OUT_OF_RESOURCES
    assert set(a_on_b["config_from"]) == {"fixture-a"} and set(a_on_b["config_on"]) == {
        "fixture-b"}
    b_on_a = cmp.portability(b, a, "matmul", "bf16").set_index("shape")
    assert b_on_a.loc[S4, "runs_at_pct"] == pytest.approx(50)  # 2.0 ms / 4.0 ms
    assert math.isnan(b_on_a.loc[S2, "runs_at_pct"])  # A has no row with B's config
    assert b_on_a.loc[S2, "status_on_target"] == cmp.NOT_MEASURED
    assert "8000x8000x8000" not in a_on_b.index and "500x500x500" not in b_on_a.index


def test_portability_rows_timed_side_by_side_come_first(gpus, tmp_path):
    """`tlab portability`'s rows on B, where they time the winners standing now, replace B's
    sweep rows (which failed A's config at S4: an out-of-memory of concurrent workers, say);
    a row whose native winner has changed since is stale, and the sweep rows answer."""
    import shutil

    from tritonbench_lab.data.portability import portability_file
    from tritonbench_lab.data.records import Carried

    a, b = (shutil.copytree(g, tmp_path / "results" / g.name) for g in gpus)
    wins_a = cmp.winners_frame(a, "matmul", "bf16").set_index("shape")["winner_config"]
    wins_b = cmp.winners_frame(b, "matmul", "bf16").set_index("shape")["winner_config"]

    def carried(shape, native, carried_ms, native_ms):
        return Carried(
            kernel="matmul", dtype="bf16", shape=shape, from_gpu="fixture-a",
            carried_config=wins_a[shape], native_config=native, status=OK,
            carried_ms=carried_ms, native_ms=native_ms, op_ms=1.0, rounds=3, gpu="test",
            gpu_slug="fixture-b", capability="9.0", torch="test", triton="test",
            tlab="test", source="TEST DATA", run_id="r", timestamp="2025-01-02T00:00:00+00:00")

    append_rows(portability_file(tmp_path / "results", "fixture-b", "fixture-a"), [
        carried(S4, wins_b[S4], 2.0, 1.6),  # measured ok where the sweep failed it
        carried(S1, "BLOCK_M=16 num_warps=1", 9.0, 1.0)])  # another native winner then
    a_on_b = cmp.portability(a, b, "matmul", "bf16").set_index("shape")
    assert a_on_b.loc[S4, "runs_at_pct"] == pytest.approx(80)  # 1.6 ms / 2.0 ms
    assert a_on_b.loc[S4, "source"] == cmp.MEASURED
    assert a_on_b.loc[S1, "runs_at_pct"] == pytest.approx(100)  # the sweep's, not 1/9
    assert a_on_b.loc[S1, "source"] == a_on_b.loc[S2, "source"] == cmp.SWEPT


def test_partial_overlap_is_noted_and_pictures_are_written(gpus, tmp_path):
    comparisons, notes = cmp.compare(list(gpus))
    (only,) = comparisons
    assert (only.kernel, only.dtype) == ("matmul", "bf16")
    assert only.left_out == {"fixture-a": ["8000x8000x8000"], "fixture-b": ["500x500x500"]}
    assert len(only.portability) == 6  # 3 shared shapes x 2 directions
    paths = cmp.draw(only, tmp_path, ("svg", "png"))
    stem = tmp_path / "compare" / "matmul-bf16-fixture-a-vs-fixture-b"
    assert paths == [stem.with_name(stem.name + ".svg"), stem.with_name(stem.name + ".png")]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_no_common_dtype_kernel_or_shape_names_what_each_side_has(gpus, tmp_path):
    a, _ = gpus
    fp32 = write_gpu(tmp_path, "fixture-fp32", [(S1, SMALL, 0.02, OK)], dtype="fp32")
    with pytest.raises(TlabError, match=r"matmul: no dtype on every GPU: fixture-a has bf16; "
                                        r"fixture-fp32 has fp32$"):
        cmp.compare([a, fp32])
    other = write_gpu(tmp_path, "fixture-shapes", [("3000x3000x3000", SMALL, 0.5, OK)])
    with pytest.raises(TlabError, match=r"matmul bf16: no shape in common: fixture-a has "
                                        r"1000x1000x1000, .*8000x8000x8000; fixture-shapes "
                                        r"has 3000x3000x3000$"):
        cmp.compare([a, other])
    softmax = write_gpu(tmp_path, "fixture-softmax", [("8x1024", "ROWS=1 num_warps=4", 0.01,
                                                       OK)], kernel="softmax")
    with pytest.raises(TlabError, match="no kernel in common: fixture-a has matmul; "
                                        "fixture-softmax has softmax"):
        cmp.compare([a, softmax])
    with pytest.raises(TlabError, match="no results for kernel 'softmax' in .*fixture-a"):
        cmp.compare([a, softmax], kernel=["softmax"])


def test_cli_prints_the_table_and_the_picture_path(gpus, tmp_path):
    a, b = gpus
    # B given as a GPU slug under --root, A as a folder.
    result = tlab("compare", str(a), "fixture-b", "--root", str(b.parents[1]),
                  "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "matmul bf16: tuned Triton winner per shape and GPU" in out
    assert "80% on fixture-b" in out and "out of resources on fixture-b" in out
    assert "50% on fixture-a" in out and "not measured on fixture-a" in out
    assert "40% matmul_bf16" in out  # 80 TFLOP/s of A's 200
    assert "left out: fixture-a has 8000x8000x8000" in out
    assert "No ceilings for fixture-b" in out
    assert (tmp_path / "compare" / "matmul-bf16-fixture-a-vs-fixture-b.svg").is_file()
    assert f"picture: {tmp_path / 'compare'}" in out
    # to a pipe of 80 columns: the Markdown's rows and the summary lines stay whole
    narrow = tlab("compare", str(a), str(b), "--out", str(tmp_path), env={"COLUMNS": "80"})
    table = (tmp_path / "compare" / "fixture-a-vs-fixture-b.md").read_text().splitlines()
    rows = [line for line in table if line.startswith("| matmul")]
    assert rows and all(row in narrow.stdout.splitlines() for row in rows)
    assert any(line.startswith("fixture-a's winner configs run on fixture-b at") and
               line.endswith("shared shapes (from fixture-b's sweep rows: not timed side by "
                             "side).") for line in narrow.stdout.splitlines())


@pytest.mark.parametrize("args, phrase", [
    (["no/such/folder"], "no results for 'no/such/folder'"),
    (["--kernel", "softmax"], "no results for kernel 'softmax'"),
])
def test_cli_missing_input_is_one_line_exit_2(gpus, tmp_path, args, phrase):
    a, b = gpus
    targets = [str(a), *args] if "/" in args[0] else [str(a), str(b), *args]
    result = tlab("compare", *targets, "--out", str(tmp_path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tlab: error: ") and phrase in lines[0]
    assert "Traceback" not in result.stderr and not (tmp_path / "compare").exists()


@pytest.mark.skipif(not (REAL_H200 / "matmul.csv").is_file(), reason="no H200 results here")
def test_real_h200_results_against_a_fixture(tmp_path):
    # The fixture runs the H200's 2048^3 winner (as committed) 4x slower than its own best
    # (test data).
    (h200_winner,) = [w.config for w in load_winners(REPO / "configs" / "nvidia-h200" / "matmul.csv")
                      if (w.dtype, w.shape) == ("bf16", "2048x2048x2048")]
    fixture = write_gpu(tmp_path, "fixture-b", [
        ("1024x1024x1024", SMALL, 0.05, OK),
        ("2048x2048x2048", MID, 0.1, OK),
        ("2048x2048x2048", h200_winner, 0.4, OK),
    ])
    comparisons, _ = cmp.compare([REAL_H200, fixture], kernel=["matmul"], dtype=["bf16"])
    (only,) = comparisons
    assert set(only.frame["shape"]) == {"1024x1024x1024", "2048x2048x2048"}
    h200 = only.frame[only.frame["gpu"] == "nvidia-h200"].set_index("shape")
    assert h200.loc["2048x2048x2048", "winner_config"] == h200_winner
    assert 0 < h200.loc["2048x2048x2048", "pct_ceiling"] < 150  # the H200 is calibrated
    moves = only.portability.set_index(["config_from", "shape"])
    assert moves.loc[("nvidia-h200", "2048x2048x2048"), "runs_at_pct"] == pytest.approx(25)
    assert all(p.is_file() for p in cmp.draw(only, tmp_path))


def test_speed_ratios_set_each_kernel_against_its_ceilings_ratio(gpus, tmp_path):
    """A runs 100/50, 80/16 and 64/80 times B's speed at the three shapes: a geomean of 2.
    Uncalibrated, B's side gives nothing to judge by; calibrated at half A's matmul ceiling
    the kernel follows its ceiling; at three quarters, it falls short of it on B."""
    a, b = gpus
    comparisons, _ = cmp.compare([a, b])
    ratios = cmp.speed_ratios(comparisons, [a, b]).set_index("kernel")
    assert ratios.loc["matmul", "ratio"] == pytest.approx(2.0)
    assert math.isnan(ratios.loc["matmul", "ceiling_ratio"])
    assert math.isnan(ratios.loc["matmul", "op_ratio"])  # no PyTorch op timed either
    assert ratios.loc["matmul", "verdict"] == "nothing to judge by"
    for b_ceiling, verdict in ((100.0, "follows its ceiling"),
                               (150.0, "short of its ceiling on fixture-b (1.50x)")):
        calibrated = tmp_path / f"b{int(b_ceiling)}" / "results" / "fixture-b"
        calibrated.mkdir(parents=True)
        (calibrated / "matmul.csv").write_text((b / "matmul.csv").read_text())
        append_rows(calibrated / "ceilings.csv", [Ceiling(
            name="matmul_bf16", metric=TFLOPS, value=b_ceiling, p20_ms=1.0, p50_ms=1.0,
            p80_ms=1.0, size="test", method="do_bench", warmup_ms=None, rep_ms=None,
            gpu="test", gpu_slug="b", torch="test", triton="test", timestamp="2025-01-01")])
        comparisons, _ = cmp.compare([a, calibrated])
        ratios = cmp.speed_ratios(comparisons, [a, calibrated]).set_index("kernel")
        assert ratios.loc["matmul", "ceiling_ratio"] == pytest.approx(200.0 / b_ceiling)
        assert ratios.loc["matmul", "verdict"] == verdict
    text = cmp.ratios_markdown(ratios.reset_index(), ["fixture-a", "fixture-b"])
    assert "| matmul | bf16 | 3 | 2.00 | matmul_bf16 | 1.33 | - | short of its ceiling" in text


def test_a_tflops_kernel_is_judged_by_the_pytorch_op_at_the_same_shapes(gpus, tmp_path):
    """Where both sweeps timed the PyTorch op at every shape, a TFLOP/s kernel is set
    against the op's own speed ratio there, not the ceilings calibrated at one size: B is
    calibrated at 150 (A's ratio 2.0 is 1.5x the ceilings' 1.33), but torch.matmul runs
    2x (then 1.5x) slower on B at these shapes: the kernel follows it (then outruns it)."""
    a, b = gpus
    for slowdown, verdict in ((2.0, "follows the PyTorch op"),
                              (1.5, "short of the PyTorch op on fixture-b (1.33x)")):
        folders = []
        for folder, factor in ((a, 1.0), (b, slowdown)):
            copy = tmp_path / str(slowdown) / "results" / folder.name
            copy.mkdir(parents=True)
            for name in ("matmul.csv", "ceilings.csv"):
                if (folder / name).is_file():
                    (copy / name).write_text((folder / name).read_text())
            ops = [replace(fixture_record(folder.name, shape, "", 0.01 * shape_ms * factor, OK),
                           provider=TORCH_OP) for shape, shape_ms in ((S1, 1), (S2, 8), (S4, 64))]
            append_rows(copy / "matmul.csv", ops)
            folders.append(copy)
        append_rows(folders[1] / "ceilings.csv", [Ceiling(
            name="matmul_bf16", metric=TFLOPS, value=150.0, p20_ms=1.0, p50_ms=1.0,
            p80_ms=1.0, size="test", method="do_bench", warmup_ms=None, rep_ms=None,
            gpu="test", gpu_slug="b", torch="test", triton="test", timestamp="2025-01-01")])
        comparisons, _ = cmp.compare(folders)
        ratios = cmp.speed_ratios(comparisons, folders).set_index("kernel")
        assert ratios.loc["matmul", "ceiling_ratio"] == pytest.approx(200.0 / 150.0)
        assert ratios.loc["matmul", "op_ratio"] == pytest.approx(slowdown)
        assert ratios.loc["matmul", "verdict"] == verdict
    text = cmp.ratios_markdown(ratios.reset_index(), ["fixture-a", "fixture-b"])
    assert "| 1.33 | 1.50 | short of the PyTorch op on fixture-b (1.33x) |" in text
