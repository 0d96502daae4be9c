"""The sweep's summary: per dtype and shape, configs by status and the first error of each
kind of failure; a shape with no correct config is named and the command exits 1."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

from helpers.commands import tlab
from helpers.fixture_results import record
from helpers.paths import PLANTED
from rich.console import Console

from tritonbench_lab.cli.sweep_summary import print_tallies
from tritonbench_lab.data.tally import tally


def sweep_planted(tmp_path, space: dict):
    space_file = tmp_path / "space.json"
    space_file.write_text(json.dumps(space))
    return tlab("sweep", "planted", "-m", str(PLANTED), "--interpret", "--root",
                str(tmp_path / "out"), "--space", str(space_file),
                env={"COLUMNS": "80"})  # a log's width: nothing may be cut or wrapped


def test_a_sweep_where_every_config_fails_says_why_and_exits_1(tmp_path):
    # Every config of the space a wrong result or a compile error.
    result = sweep_planted(tmp_path, {"MODE": [1, 4]})
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert "fp32 1000: 4 configs: 2 compile_error, 2 wrong_result: no correct config" in lines
    assert "  compile_error: InterpreterError: AssertionError('planted compile error')" in lines
    assert any(line.startswith("  wrong_result: max |error| 1 is ") for line in lines)
    assert "match" not in result.stdout and "│" not in result.stdout  # no empty winners table
    assert "no winners" in result.stdout
    assert result.stderr.splitlines()[-1] == (
        "tlab: no correct config at 1 of 1 shape(s): fp32 1000 (the summary above says why)")
    assert "Traceback" not in result.stderr
    # The rows are kept; no configs file is written.
    assert (tmp_path / "out" / "results" / "interpreter" / "planted.csv").exists()
    assert not (tmp_path / "out" / "configs").exists()


def test_a_sweep_with_a_correct_config_at_every_shape_exits_0_and_counts_its_failures(tmp_path):
    result = sweep_planted(tmp_path, {"MODE": [0, 1], "BLOCK": [128]})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "fp32 1000: 2 configs: 1 ok, 1 wrong_result" in lines
    assert any(line.startswith("  wrong_result: ") for line in lines)
    assert "all 1 match" in result.stdout


def test_tallies_print_one_unwrapped_line_each_and_return_the_shapes_without_a_correct_one():
    crash = "worker killed by SIGSEGV (signal 11) " + "[detail] " * 40  # long, with brackets
    rows = [record("triton", "ROWS=1 num_warps=4", "64x1024", 1.0),
            record("triton", "ROWS=2 num_warps=4", "64x1024", 1.0, status="crash"),
            record("triton", "ROWS=1 num_warps=4", "64x4096", 1.0, status="crash")]
    rows = [r if r.status != "crash" else dataclasses.replace(r, error=crash, p50_ms=None)
            for r in rows]
    good = tally("softmax", "fp32", "64x1024", rows, configs=3, skipped=1)
    bad = tally("softmax", "fp32", "64x4096", rows, configs=2, skipped=0)
    console = Console(record=True, width=80)
    assert print_tallies([good, bad], console) == [bad]
    text = console.export_text()
    assert text.splitlines() == [
        "fp32 64x1024: 3 configs: 1 ok, 1 skipped, 1 crash",
        f"  crash: {crash.strip()[:157]}...",
        "fp32 64x4096: 2 configs: 1 crash, 1 not tried: no correct config",
        f"  crash: {crash.strip()[:157]}...",
    ]


def test_a_built_in_kernel_swept_elsewhere_is_told_how_code_reads_its_winners(tmp_path,
                                                                              monkeypatch):
    """Before: a built-in kernel swept in a project of one's own ended with "all 1 match",
    and ops went on reading tlab's configs, silently."""
    from tritonbench_lab import tuned
    from tritonbench_lab.cli.sweep_summary import _say_where_code_reads
    from tritonbench_lab.data.layout import Layout

    request = SimpleNamespace(layout=Layout(tmp_path), spec=SimpleNamespace(name="softmax"))
    console = Console(record=True, width=80)
    monkeypatch.delenv(tuned.CONFIG_DIR_ENV, raising=False)
    _say_where_code_reads(request, console)
    told = console.export_text()
    written = (tmp_path / "configs").resolve()
    assert told.startswith(f"Code reads softmax's configs from {tuned.config_dir().resolve()}, "
                           f"not {written}: run it with TLAB_CONFIG_DIR={written} ")
    assert told.count("\n") == 1  # one line, never wrapped
    monkeypatch.setenv(tuned.CONFIG_DIR_ENV, str(written))
    _say_where_code_reads(request, console := Console(record=True, width=80))
    assert console.export_text() == ""  # code reads them already


def test_a_ratio_far_below_one_keeps_its_digits():
    """The interpreter's ratios to torch are far below 0.01: '0.00x' would say nothing."""
    from tritonbench_lab.runtime.dispatch import ratio_text  # the summary's cells and reasons

    assert ratio_text(1.2345) == "1.23x" and ratio_text(0.05) == "0.05x"
    assert ratio_text(0.000123) == "0.00012x"
