"""Results files (append-only, one flushed row per attempt), winners files (replaced whole),
and the one winner rule that turns the first into the second."""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import stat

import pytest
from helpers.fixture_results import winner, write_winners
from helpers.paths import REPO

from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import (
    COLUMNS,
    OK,
    WINNER_COLUMNS,
    WRONG_RESULT,
    Record,
    to_cells,
)
from tritonbench_lab.data.store import (
    append_rows,
    check_appendable,
    load_records,
    load_winners,
    read_results,
)
from tritonbench_lab.data.winners import pick_winners, winners_from_files
from tritonbench_lab.errors import TlabError


def configs_path(root, slug, kernel):
    return Layout(root).configs_file(slug, kernel)


def results_path(root, slug, kernel):
    return Layout(root).results_file(slug, kernel)

HEADER = ",".join(COLUMNS) + "\n"


def csv_line(record: Record) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(to_cells(record))
    return buffer.getvalue().encode()


def row(provider="triton", config="BLOCK=128", p50=1.0, status=OK, shape="1000", dtype="fp32",
        timestamp="2025-01-01T00:00:00+00:00", torch="2.5.1", triton="3.1.0",
        run_id="run-1") -> Record:
    timed = status == OK or provider != "triton"
    return Record(
        run_id=run_id, timestamp=timestamp, kernel="planted", provider=provider, dtype=dtype,
        shape=shape, config="" if provider != "triton" else config, status=status,
        error="" if status == OK else "max |error| 1 is 9.99e+05x the tolerance",
        max_abs_error=0.0, p20_ms=p50 * 0.9 if timed else None, p50_ms=p50 if timed else None,
        p80_ms=p50 * 1.1 if timed else None, throughput=8e-3 / p50 if timed else None,
        metric="GB/s", compile_s=0.01, phase="sweep", method="interpreter" if timed else "",
        warmup_ms=None, rep_ms=None, seed=0, gpu="interpreter", gpu_slug="interpreter",
        driver="", cuda="", torch=torch, triton=triton, tlab="0.1.0", source="abc",
    )


@pytest.fixture
def path(tmp_path):
    return results_path(tmp_path, "interpreter", "planted")


def test_layout_paths():
    from pathlib import Path

    layout = Layout(Path("root"))
    assert layout.results_file("nvidia-h200", "matmul") == Path(
        "root/results/nvidia-h200/matmul.csv")
    assert layout.ceilings_file("nvidia-h200") == Path("root/results/nvidia-h200/ceilings.csv")
    assert layout.configs_file("nvidia-h200", "matmul") == Path(
        "root/configs/nvidia-h200/matmul.csv")


def test_append_creates_the_file_with_one_header(path):
    append_rows(path, [row(config="BLOCK=128"), row(config="BLOCK=1024")])
    lines = path.read_text().splitlines(keepends=True)
    assert lines[0] == HEADER
    assert len(lines) == 3 and lines.count(HEADER) == 1
    assert [r.config for r in load_records(path)] == ["BLOCK=128", "BLOCK=1024"]


def test_appending_nothing_creates_no_file(path):
    append_rows(path, [])
    assert not path.exists()
    assert not path.parent.exists()


def test_appends_accumulate_under_one_header(path):
    append_rows(path, [row(config="BLOCK=128")])
    first = path.read_bytes()
    append_rows(path, [row(config="BLOCK=1024"), row(provider="torch")])
    assert path.read_bytes().startswith(first)  # earlier rows are never rewritten
    assert path.read_text().count(HEADER) == 1
    assert [(r.provider, r.config) for r in load_records(path)] == [
        ("triton", "BLOCK=128"), ("triton", "BLOCK=1024"), ("torch", "")]


def test_load_records_of_a_missing_file_is_empty(path):
    assert load_records(path) == []


def test_partial_last_line_is_ignored_and_cut_by_the_next_append(path):
    complete = [row(config="BLOCK=128"), row(config="BLOCK=1024")]
    append_rows(path, complete)
    intact = path.read_bytes()
    with open(path, "ab") as handle:  # a writer killed in the middle of its row
        handle.write(b"run-9,2025-01-01T00:00:09+00:00,planted,triton,fp32,1000,BLOC")
    assert load_records(path) == complete
    check_appendable(path)  # still appendable

    late = row(config="BLOCK=4096", run_id="run-2")
    append_rows(path, [late])
    assert path.read_bytes() == intact + csv_line(late)  # partial line gone, rows intact
    assert load_records(path) == [*complete, late]


def test_partial_header_only_is_an_empty_file(path):
    path.parent.mkdir(parents=True)
    path.write_text(HEADER[:20])  # killed while writing the header
    assert load_records(path) == []
    append_rows(path, [row()])
    assert path.read_text().startswith(HEADER) and path.read_text().count("run_id") == 1
    assert load_records(path) == [row()]


def test_foreign_header_is_refused(path):
    path.parent.mkdir(parents=True)
    path.write_text("a,b\n1,2\n")
    with pytest.raises(TlabError, match="not a tlab results file"):
        load_records(path)
    with pytest.raises(TlabError, match="not a tlab results file"):
        check_appendable(path)


def test_malformed_line_names_its_line_number(path):
    append_rows(path, [row(config="BLOCK=128"), row(config="BLOCK=1024")])
    lines = path.read_text().splitlines(keepends=True)
    lines.append(lines[2].replace(",ok,", ",fabulous,"))  # line 4
    path.write_text("".join(lines))
    with pytest.raises(TlabError, match=r"line 4\b.*unknown status 'fabulous'"):
        load_records(path)


def test_line_with_too_few_fields_names_its_line_number(path):
    append_rows(path, [row()])
    with open(path, "a") as handle:
        handle.write("1,2,3\n")  # line 3
    with pytest.raises(TlabError, match=r"line 3\b.*3 fields"):
        load_records(path)


def test_unparsable_number_names_its_line_number(path):
    append_rows(path, [row(config="BLOCK=128"), row(config="BLOCK=1024")])
    text = path.read_text().replace(",sweep,interpreter,,,0,", ",sweep,interpreter,,,zero,", 1)
    path.write_text(text)
    with pytest.raises(TlabError, match=r"line 2\b.*seed is not an integer: 'zero'"):
        load_records(path)


def test_bytes_that_are_not_utf8_name_the_file_and_line(path):
    append_rows(path, [row(config="BLOCK=128"), row(config="BLOCK=1024")])
    data = path.read_bytes().replace(b"BLOCK=1024", b"BLOCK=1\xff24")
    path.write_bytes(data)
    with pytest.raises(TlabError, match=r"planted.csv' line 3: not UTF-8 text \(byte 0xff\)"):
        load_records(path)


def test_read_results_gives_typed_columns(path):
    append_rows(path, [row(config="BLOCK=128"), row(provider="torch", p50=2.0)])
    frame = read_results(path)
    assert list(frame.columns) == list(COLUMNS)
    assert frame["p50_ms"].dtype == "float64" and frame["seed"].dtype == "Int64"
    assert frame["cuda"].dtype == "string" and frame["rep_ms"].dtype == "Int64"
    assert frame["p50_ms"].tolist() == [1.0, 2.0]
    assert read_results(path.with_name("missing.csv")).empty


# --- winners -------------------------------------------------------------------------------

def test_winner_is_the_fastest_ok_triton_row():
    rows = [
        row(provider="torch", p50=0.01),  # baselines never win, however fast
        row(config="BLOCK=128 MODE=0", p50=3.0),
        row(config="BLOCK=128 MODE=1", p50=0.5, status=WRONG_RESULT),  # fast but wrong
        row(config="BLOCK=1024 MODE=0", p50=2.0, run_id="run-w"),
        row(config="BLOCK=1024 MODE=1", status="crash"),
    ]
    (winner,) = pick_winners(rows)
    assert winner.config == "BLOCK=1024 MODE=0"
    assert winner.p50_ms == 2.0
    assert winner.run_id == "run-w" and winner.date == "2025-01-01"


def test_a_faster_wrong_result_never_wins_even_with_a_time():
    wrong = dataclasses.replace(row(config="BLOCK=128 MODE=1", p50=0.5), status=WRONG_RESULT)
    assert wrong.p50_ms == 0.5
    (winner,) = pick_winners([wrong, row(config="BLOCK=128 MODE=0", p50=4.0)])
    assert winner.config == "BLOCK=128 MODE=0"


def test_no_ok_triton_row_means_no_winner():
    rows = [row(provider="torch", p50=1.0), row(status=WRONG_RESULT), row(status="skipped")]
    assert pick_winners(rows) == []


def test_speedup_is_best_ok_baseline_p50_over_winner_p50():
    rows = [
        row(provider="torch", p50=6.0),
        row(provider="unfused", p50=3.0),  # the best baseline: fastest ok one
        row(provider="compiled", p50=1.0, status=WRONG_RESULT),  # timed but wrong: not best
        row(config="BLOCK=128", p50=2.0),
    ]
    (winner,) = pick_winners(rows)
    assert winner.best_baseline == "unfused"
    assert winner.speedup == 3.0 / 2.0 and winner.baseline_p50_ms == 3.0
    assert winner.baseline_throughput == rows[1].throughput
    assert winner.throughput == rows[3].throughput


def test_without_an_ok_baseline_speedup_is_empty():
    (winner,) = pick_winners([row(config="BLOCK=128", p50=2.0)])
    assert winner.best_baseline == ""
    assert winner.speedup is None and winner.baseline_throughput is None


def test_one_winner_per_dtype_and_shape_sorted_numerically():
    rows = [row(shape=s, dtype=d, p50=p) for s, p in (("10000", 1.0), ("9000", 2.0))
            for d in ("fp32", "fp16")]
    winners = pick_winners(rows)
    assert [(w.dtype, w.shape) for w in winners] == [
        ("fp16", "9000"), ("fp16", "10000"), ("fp32", "9000"), ("fp32", "10000")]


def test_only_the_newest_toolchain_competes():
    old = row(config="BLOCK=128", p50=0.1, triton="3.0.0", timestamp="2024-01-01T00:00:00+00:00")
    new = row(config="BLOCK=1024", p50=5.0, triton="3.1.0", timestamp="2025-01-01T00:00:00+00:00")
    (winner,) = pick_winners([old, new])
    assert winner.config == "BLOCK=1024" and winner.triton == "3.1.0"


def test_write_winners_is_atomic_and_loads_back(tmp_path):
    winners = pick_winners([row(provider="torch", p50=3.0), row(config="BLOCK=128", p50=2.0),
                               row(shape="2000", p50=1 / 3)])
    target = configs_path(tmp_path, "interpreter", "planted")
    assert target == tmp_path / "configs" / "interpreter" / "planted.csv"
    write_winners(target, winners)
    assert [p.name for p in target.parent.iterdir()] == ["planted.csv"]  # no temp file left
    assert target.read_text().splitlines()[0] == ",".join(WINNER_COLUMNS)
    assert load_winners(target) == winners
    assert load_winners(target)[1].p50_ms == 1 / 3
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600


def test_write_winners_replaces_the_whole_file(tmp_path):
    target = configs_path(tmp_path, "interpreter", "planted")
    write_winners(target, pick_winners([row(shape="1000"), row(shape="2000")]))
    newer = pick_winners([row(shape="3000")])
    write_winners(target, newer)
    assert load_winners(target) == newer
    assert sorted(p.name for p in target.parent.iterdir()) == ["planted.csv"]


def test_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    target = configs_path(tmp_path, "interpreter", "planted")
    good = pick_winners([row()])
    write_winners(target, good)
    with pytest.raises(TypeError):
        write_winners(target, [{"no such column": "x"}])
    assert load_winners(target) == good
    assert [p.name for p in target.parent.iterdir()] == ["planted.csv"]


def test_every_committed_file_reads_and_configs_hold_what_results_pick():
    from tritonbench_lab.data.layout import kernels_in
    from tritonbench_lab.data.store import load_ceilings

    layout = Layout(REPO)
    slugs = layout.gpu_slugs()
    assert slugs, "no committed results"
    for slug in slugs:
        assert load_ceilings(layout.ceilings_file(slug))
        for kernel in kernels_in(layout.gpu_results(slug)):
            rows, picked = winners_from_files(layout.results_file(slug, kernel))
            assert rows and all(r.kernel == kernel and r.gpu_slug == slug for r in rows)
            assert load_winners(layout.configs_file(slug, kernel)) == picked


@pytest.mark.parametrize("missing", [["host_ms"],
                                     ["events_p50_ms", "graph_p50_ms", "disagree", "host_ms"],
                                     ["device", "events_p50_ms", "graph_p50_ms", "disagree",
                                      "host_ms"]],
                         ids=["before host times", "before two clocks", "before the device column"])
def test_a_file_of_an_older_layout_is_read_and_upgraded_by_the_next_append(path, missing):
    old_columns = [c for c in COLUMNS if c not in missing]
    assert list(COLUMNS) == [*old_columns, *missing]  # added at the end, as ADDED_COLUMNS says
    first, second = row(config="BLOCK=1"), row(config="BLOCK=2")
    path.parent.mkdir(parents=True)
    cells = csv_line(first).decode().rstrip("\n").split(",")
    old_lines = [",".join(old_columns) + "\n", ",".join(cells[:len(old_columns)]) + "\n"]
    path.write_text("".join(old_lines))
    assert load_records(path) == [first]  # the missing cells read as the defaults
    newer = dataclasses.replace(second, device="cuda:1", events_p50_ms=0.025,
                                graph_p50_ms=0.0065, disagree="yes")
    append_rows(path, [newer])
    assert path.read_text() == HEADER + csv_line(first).decode() + csv_line(newer).decode()
    assert [(r.device, r.disagree) for r in load_records(path)] == [("", ""), ("cuda:1", "yes")]


def test_a_configs_file_from_before_host_times_reads_without_them(tmp_path):
    path = tmp_path / "matmul.csv"
    timed = winner("64x64x64", "BLOCK_M=32", p50_ms=1.0, op_p50_ms=2.0, host_ms=0.05,
                   op_host_ms=0.01)
    write_winners(path, [timed])
    header, line = path.read_text().splitlines()
    assert header.split(",")[-2:] == ["host_ms", "op_host_ms"] and line.endswith(",0.05,0.01")
    path.write_text(",".join(WINNER_COLUMNS[:-2]) + "\n" + line.rsplit(",", 2)[0] + "\n")
    assert load_winners(path) == [dataclasses.replace(timed, host_ms=None, op_host_ms=None)]


def test_a_header_missing_a_column_that_was_never_added_later_is_refused(path):
    path.parent.mkdir(parents=True)
    path.write_text(",".join(c for c in COLUMNS if c != "seed") + "\n")
    with pytest.raises(TlabError, match="missing: seed"):
        load_records(path)


def _with_cell(path, line: int, column: str, text: str) -> None:
    """Set one cell of a CSV file as a damaged file (or a bug) would hold it."""
    rows = list(csv.reader(io.StringIO(path.read_text())))
    rows[line - 1][rows[0].index(column)] = text
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue())


@pytest.mark.parametrize("column, text", [("p50_ms", "nan"), ("p20_ms", "-0.25"),
                                          ("throughput", "nan"), ("p80_ms", "inf")])
def test_a_nan_or_negative_time_is_refused_naming_the_file_and_line(path, column, text):
    append_rows(path, [row(config="BLOCK=128"), row(config="BLOCK=1024", p50=0.5)])
    _with_cell(path, 3, column, text)
    with pytest.raises(TlabError, match=rf"planted.csv' line 3: {column} is {text}: not a "
                                        "measurement"):
        winners_from_files(path)  # what a sweep reads before it writes configs


def test_a_nan_in_a_configs_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "matmul.csv"
    write_winners(path, [winner("64x64x64", "BLOCK_M=32", op_p50_ms=2.0)])
    _with_cell(path, 2, "op_p50_ms", "nan")
    with pytest.raises(TlabError, match=r"matmul.csv' line 2: op_p50_ms is nan"):
        load_winners(path)


@pytest.mark.parametrize("text", ["0x0", "64x0", "064x64", "64x", "-3"])
def test_a_shape_that_is_not_positive_sizes_is_refused_naming_the_file_and_line(path, text):
    """A shape no sweep writes (a size of 0, a stray character) is damage, as a NaN time is:
    check and report accepted `0x0` before."""
    append_rows(path, [row(config="BLOCK=128"), row(config="BLOCK=1024", p50=0.5)])
    _with_cell(path, 3, "shape", text)
    with pytest.raises(TlabError, match=rf"planted.csv' line 3: shape '{text}' is not positive "
                                        "sizes joined by 'x'"):
        load_records(path)
