"""Pictures and the report, built from the hand-checkable fixtures in helpers/fixture_results.py."""

import re
import subprocess
import sys

import matplotlib.pyplot as plt
import pytest
from helpers.commands import tlab
from helpers.fixture_results import (
    COPY_GBPS,
    DEFAULT,
    SHAPES,
    SLUG,
    TIMES,
    write_matmul_fixture,
    write_softmax_fixture,
)

from tritonbench_lab.data.ceilings import (
    SAME_SIZE_COPY,
    ceiling_for,
    ceilings_in_force,
    copy_at,
    copy_curve,
    traffic_of,
)
from tritonbench_lab.data.store import load_records
from tritonbench_lab.errors import TlabError
from tritonbench_lab.views.plots import draw_landscape, draw_throughput
from tritonbench_lab.views.report import kernel_section
from tritonbench_lab.views.series import TUNED, series


@pytest.fixture
def softmax(tmp_path):
    folder = write_softmax_fixture(tmp_path)
    return folder, load_records(folder / "softmax.csv")


def test_series_picks_the_fastest_correct_config_per_shape(softmax):
    _, frame = softmax
    lines = series(frame, "fp32", (DEFAULT,))
    assert set(lines) == {TUNED, "triton (default config)", "torch", "unfused", "compiled"}
    for line in lines.values():
        assert list(line["shape"]) == SHAPES
    tuned = lines[TUNED]
    assert set(tuned["config"]) == {"ROWS=2 num_warps=8"}  # the faster wrong one never wins
    assert tuned["throughput"].tolist() == pytest.approx([1000.0, 500.0, 1000.0 / 3])
    # The band: throughput at the p80 time (1.25x slower) and at the p20 time (0.9x).
    assert tuned["low"].iloc[0] == pytest.approx(800.0)
    assert tuned["high"].iloc[0] == pytest.approx(1000.0 / 0.9)


def test_throughput_picture_has_every_line_the_ceiling_and_units(softmax):
    folder, frame = softmax
    ceiling = ceiling_for("GB/s", "fp32", ceilings_in_force(folder / "ceilings.csv"))
    assert ceiling == ("copy", COPY_GBPS)
    fig = draw_throughput(frame, "softmax", "fp32", ceiling, (DEFAULT,))
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    for label in (TUNED, "triton (default config)", "torch", "unfused", "compiled"):
        assert len(lines[label].get_xdata()) == len(SHAPES), label
    ceiling_lines = [line for label, line in lines.items() if label.startswith("ceiling")]
    assert len(ceiling_lines) == 1 and set(ceiling_lines[0].get_ydata()) == {COPY_GBPS}
    assert "GB/s" in ax.get_ylabel() and "columns" in ax.get_xlabel()
    assert [c.get_ylabel() for c in ax.child_axes] == ["% of copy ceiling"]
    assert "Fixture GPU" in ax.get_title() and "triton 9.9" in ax.get_title()
    plt.close(fig)


def test_landscape_marks_winner_and_default_and_draws_the_block_heatmap(tmp_path):
    folder = write_matmul_fixture(tmp_path)
    frame = load_records(folder / "matmul.csv")
    # The default's text now, and as rows from before the TMA parameter wrote it (these).
    fig = draw_landscape(frame, "matmul", "fp32", (
        "BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3 TMA=0",
        "BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3"))
    scatter, heatmap = fig.axes[0], fig.axes[1]
    labels = [h.get_label() for h in scatter.collections]
    assert "winner" in labels and "default config" in labels
    image = heatmap.get_images()[0].get_array()
    # BLOCK_M x BLOCK_N grid, best throughput at 64x64 (p50 = 1 ms -> 1000).
    assert image.shape == (2, 2) and image[1][1] == pytest.approx(1000.0)
    plt.close(fig)


def test_report_numbers_equal_those_computed_from_the_csv(softmax):
    folder, frame = softmax
    text = kernel_section(frame, "softmax", "fp32", ("copy", COPY_GBPS), (DEFAULT,), ["a.png"])
    row = next(line for line in text.splitlines() if line.startswith(f"| {SHAPES[0]} "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = next(line for line in text.splitlines() if line.startswith("| shape"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    value = dict(zip(columns, cells, strict=True))
    winner_ms = TIMES[("triton", "ROWS=2 num_warps=8")]
    assert float(value["tuned (GB/s)"]) == pytest.approx(1000.0 / winner_ms)
    assert value["tuned / torch"] == f"{TIMES[('torch', '')] / winner_ms:.2f}x"
    assert value["tuned / compiled"] == f"{TIMES[('compiled', '')] / winner_ms:.2f}x"
    assert value["% of copy"] == f"{100 * (1000.0 / winner_ms) / COPY_GBPS:.0f}%"
    assert "![softmax fp32](a.png)" in text


def test_plot_and_report_commands_write_their_files(tmp_path):
    write_softmax_fixture(tmp_path)
    out = tmp_path / "plots"
    result = tlab("plot", "--root", str(tmp_path), "--out", str(out), "--format", "svg,png")
    assert result.returncode == 0, result.stderr
    for suffix in (".png", ".svg", "-landscape.png", "-landscape.svg"):
        path = out / SLUG / f"softmax-fp32{suffix}"
        assert path.is_file() and path.stat().st_size > 1000, path
    result = tlab("report", "--root", str(tmp_path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    report = (out / SLUG / "REPORT.md").read_text()
    assert "### softmax, fp32" in report and re.search(r"\| 64x1024 \|", report)
    assert "![softmax fp32](softmax-fp32.svg)" in report


def test_pictures_and_report_are_the_same_bytes_from_the_same_rows(tmp_path):
    write_softmax_fixture(tmp_path)
    for out in ("a", "b"):
        assert tlab("plot", "--root", str(tmp_path), "--out", str(tmp_path / out),
                    "--format", "svg,png").returncode == 0
        assert tlab("report", "--root", str(tmp_path), "--out",
                    str(tmp_path / out)).returncode == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.*"))
    assert len(files) == 5  # 2 pictures x 2 formats + REPORT.md
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert b"<dc:date>" not in (tmp_path / "a" / SLUG / "softmax-fp32.svg").read_bytes()


@pytest.mark.parametrize("args, phrase", [
    (["plot", "--gpu-name", "no-such-gpu"], "no results for 'no-such-gpu'"),
    (["plot", "--kernel", "matmul"], "no results for kernel 'matmul'"),
    (["plot", "--dtype", "bf16"], "no bf16 rows for softmax"),
])
def test_missing_inputs_are_one_line_errors(args, phrase, tmp_path):
    write_softmax_fixture(tmp_path)
    result = tlab(*args, "--root", str(tmp_path), "--out", str(tmp_path / "plots"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and phrase in result.stderr
    assert not (tmp_path / "plots").exists()


def test_a_dtype_with_no_ok_row_is_skipped_and_said_unless_asked_for(tmp_path):
    """A sweep stopped early (or failing everywhere) leaves a dtype with rows but no `ok`
    one: plot and report draw everything else and name it; asked for, it is an error."""
    import dataclasses

    from helpers.fixture_results import record

    from tritonbench_lab.data.records import CRASH
    from tritonbench_lab.data.store import append_rows

    folder = write_softmax_fixture(tmp_path)
    append_rows(folder / "softmax.csv", [dataclasses.replace(
        record("triton", "ROWS=1 num_warps=4", shape, 1.0, CRASH), dtype="bf16")
        for shape in SHAPES])
    out = tmp_path / "plots"
    for command in ("plot", "report"):
        result = tlab(command, "--root", str(tmp_path), "--out", str(out))
        assert result.returncode == 0, result.stderr
        assert f"skipped {SLUG} softmax bf16: no row of it was timed ok" in result.stdout
    assert (out / SLUG / "softmax-fp32.svg").exists()
    assert not (out / SLUG / "softmax-bf16.svg").exists()
    asked = tlab("plot", "--root", str(tmp_path), "--out", str(out), "--dtype", "bf16")
    assert asked.returncode == 2 and "no ok rows for dtype 'bf16'" in asked.stderr


def test_reading_and_drawing_import_neither_torch_nor_triton():
    code = ("import sys; import tritonbench_lab.views.plots, tritonbench_lab.views.report, "
            "tritonbench_lab.views.series, tritonbench_lab.data.ceilings, tritonbench_lab.tuned, "
            "tritonbench_lab.views.compare, tritonbench_lab.data.winners, tritonbench_lab.data.store; "
            "print('torch' in sys.modules, 'triton' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_no_ok_rows_is_an_error(softmax):
    _, frame = softmax
    with pytest.raises(TlabError, match="no ok rows"):
        series(frame, "bf16")


def test_copy_curve_interpolates_in_log_bytes_and_clamps_at_the_ends():
    ceilings = {"copy": 4000.0, "copy_16MiB": 1000.0, "copy_64MiB": 3000.0, "matmul_bf16": 9.0}
    curve = copy_curve(ceilings)
    # The peak copy (4 GiB read + 4 GiB written) closes the curve.
    assert curve == [(16 * 2**20, 1000.0), (64 * 2**20, 3000.0), (8 * 2**30, 4000.0)]
    assert copy_at(32 * 2**20, curve) == pytest.approx(2000.0)  # halfway in log2(bytes)
    assert copy_at(1, curve) == 1000.0 and copy_at(2**40, curve) == 4000.0
    assert copy_at(64 * 2**20, curve) == pytest.approx(3000.0)
    # With the bytes a shape moves: the same-size copy; without, or uncalibrated: the peak.
    assert ceiling_for("GB/s", "bf16", ceilings, 16 * 2**20) == (SAME_SIZE_COPY, 1000.0)
    assert ceiling_for("GB/s", "bf16", ceilings) == ("copy", 4000.0)
    assert ceiling_for("GB/s", "bf16", {"copy": 4000.0}, 16 * 2**20) == ("copy", 4000.0)
    assert ceiling_for("TFLOP/s", "bf16", ceilings, 16 * 2**20) == ("matmul_bf16", 9.0)
    assert copy_curve({"copy": 4000.0}) == []


def test_picture_and_report_judge_each_shape_against_the_copy_of_its_bytes(softmax):
    _, frame = softmax
    tuned = series(frame, "fp32", (DEFAULT,))[TUNED]
    # Fixture rows move 1 GB each (throughput x time).
    moved = [traffic_of(r.throughput, r.p50_ms, "GB/s") for r in tuned.itertuples()]
    assert moved == pytest.approx([1e9] * len(SHAPES))
    curve = [(2**29, 2000.0), (2**31, 8000.0)]
    expected = copy_at(1e9, curve)
    fig = draw_throughput(frame, "softmax", "fp32", ("copy", COPY_GBPS), (DEFAULT,), curve)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    same = lines[f"{SAME_SIZE_COPY} (calibrated)"]
    assert list(same.get_ydata()) == pytest.approx([expected] * len(SHAPES))
    plt.close(fig)
    text = kernel_section(frame, "softmax", "fp32", ("copy", COPY_GBPS), (DEFAULT,), [], curve)
    header = next(line for line in text.splitlines() if line.startswith("| shape"))
    assert header.endswith(f"| % of copy | % of {SAME_SIZE_COPY} |")
    first = next(line for line in text.splitlines() if line.startswith(f"| {SHAPES[0]}"))
    cells = [c.strip() for c in first.strip("|").split("|")]
    assert cells[-1] == f"{100 * tuned['throughput'].iloc[0] / expected:.0f}%"


def test_an_edited_result_row_changes_the_report(tmp_path):
    # The report is made from the rows: change one winner's time and the report follows.
    write_softmax_fixture(tmp_path)
    out = tmp_path / "plots"
    assert tlab("report", "--root", str(tmp_path), "--out", str(out)).returncode == 0
    before = (out / SLUG / "REPORT.md").read_text()
    results = tmp_path / "results" / SLUG / "softmax.csv"
    lines = results.read_text().splitlines(keepends=True)
    winner = next(i for i, line in enumerate(lines) if ",ROWS=2 num_warps=8,ok," in line)
    lines[winner] = lines[winner].replace(",1000.0,GB/s,", ",1250.0,GB/s,")  # its throughput
    results.write_text("".join(lines))
    assert tlab("report", "--root", str(tmp_path), "--out", str(out)).returncode == 0
    after = (out / SLUG / "REPORT.md").read_text()
    assert after != before and "| 1250 |" in after and "| 1000 |" in before


def test_the_default_config_is_known_by_its_texts_before_and_after_an_added_parameter():
    from tritonbench_lab.kernels import default_config_text

    now, before_stream_k, before_tma = default_config_text("matmul")
    assert now.endswith("num_stages=3 TMA=0 STREAM_K=0")
    assert before_stream_k == now.removesuffix(" STREAM_K=0")
    assert before_tma == before_stream_k.removesuffix(" TMA=0")
    assert default_config_text("rmsnorm") == ("ROWS=1 num_warps=4",)  # nothing added
    assert default_config_text("no-such-kernel") is None


def test_x_axis_gives_every_shape_its_own_place():
    from tritonbench_lab.views.series import x_axis

    squares, label = x_axis(["512x512x512", "1024x1024x1024"])
    assert squares == {"512x512x512": 512.0, "1024x1024x1024": 1024.0} and "M = N = K" in label
    # Wide softmax rows all hold 2^29 elements: the row width tells them apart.
    wide, label = x_axis(["8192x65536", "4096x131072", "512x1048576", "8192x1024"])
    assert wide["512x1048576"] == 1048576.0 and wide["8192x1024"] == 1024.0
    assert label == "last size (row width)"
    # rope shapes share element counts and last sizes: evenly spaced, in order of size.
    shapes = ["4x4096x32x128", "1x4096x64x64", "1x4096x32x128", "1x16384x32x128"]
    rope, label = x_axis(shapes)
    assert label == "shape, in order of size" and len(set(rope.values())) == len(shapes)
    assert rope["1x4096x32x128"] < rope["1x4096x64x64"] < rope["1x16384x32x128"]
    assert rope["1x16384x32x128"] < rope["4x4096x32x128"]
