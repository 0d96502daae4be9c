"""Results files (append-only, one flushed row per attempt) and the winners computed from them."""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from tritonbench_lab.errors import TlabError
from tritonbench_lab.records import COLUMNS, OK, WRONG_RESULT, Record, to_csv_row
from tritonbench_lab.store import ResultsWriter, check_results_file, load_records, results_path
from tritonbench_lab.tuned import (
    WINNER_COLUMNS,
    compute_winners,
    configs_path,
    load_winners,
    write_winners,
)

HEADER = ",".join(COLUMNS) + "\n"


def csv_line(record: Record) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(to_csv_row(record))
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
        metric="GB/s", compile_s=0.01, timing="interpreter wall clock, median of 3" if timed else "",
        seed=0, gpu="interpreter", gpu_slug="interpreter", driver="", cuda="", torch=torch,
        triton=triton, tlab="0.1.0",
    )


@pytest.fixture
def path(tmp_path):
    return results_path(tmp_path, "interpreter", "planted")


def test_results_path():
    from pathlib import Path

    assert results_path(Path("root"), "nvidia-h200", "matmul") == Path(
        "root/results/nvidia-h200/matmul.csv")


def test_append_creates_the_file_with_one_header(path):
    ResultsWriter(path).append([row(config="BLOCK=128"), row(config="BLOCK=1024")])
    lines = path.read_text().splitlines(keepends=True)
    assert lines[0] == HEADER
    assert len(lines) == 3 and lines.count(HEADER) == 1
    assert [r.config for r in load_records(path)] == ["BLOCK=128", "BLOCK=1024"]


def test_appending_nothing_creates_no_file(path):
    ResultsWriter(path).append([])
    assert not path.exists()
    assert not path.parent.exists()


def test_appends_accumulate_under_one_header(path):
    writer = ResultsWriter(path)
    writer.append([row(config="BLOCK=128")])
    first = path.read_bytes()
    ResultsWriter(path).append([row(config="BLOCK=1024"), row(provider="torch")])
    assert path.read_bytes().startswith(first)  # earlier rows are never rewritten
    assert path.read_text().count(HEADER) == 1
    assert [(r.provider, r.config) for r in load_records(path)] == [
        ("triton", "BLOCK=128"), ("triton", "BLOCK=1024"), ("torch", "")]


def test_load_records_of_a_missing_file_is_empty(path):
    assert load_records(path) == []


def test_partial_last_line_is_ignored_and_cut_by_the_next_append(path):
    complete = [row(config="BLOCK=128"), row(config="BLOCK=1024")]
    ResultsWriter(path).append(complete)
    intact = path.read_bytes()
    with open(path, "ab") as handle:  # a writer killed in the middle of its row
        handle.write(b"run-9,2025-01-01T00:00:09+00:00,planted,triton,fp32,1000,BLOC")
    assert load_records(path) == complete
    check_results_file(path)  # still appendable

    late = row(config="BLOCK=4096", run_id="run-2")
    ResultsWriter(path).append([late])
    assert path.read_bytes() == intact + csv_line(late)  # partial line gone, rows intact
    assert load_records(path) == [*complete, late]


def test_partial_header_only_is_an_empty_file(path):
    path.parent.mkdir(parents=True)
    path.write_text(HEADER[:20])  # killed while writing the header
    assert load_records(path) == []
    ResultsWriter(path).append([row()])
    assert path.read_text().startswith(HEADER) and path.read_text().count("run_id") == 1
    assert load_records(path) == [row()]


def test_foreign_header_is_refused(path):
    path.parent.mkdir(parents=True)
    path.write_text("a,b\n1,2\n")
    with pytest.raises(TlabError, match="not a tlab results file"):
        load_records(path)
    with pytest.raises(TlabError, match="not a tlab results file"):
        check_results_file(path)


def test_malformed_line_names_its_line_number(path):
    ResultsWriter(path).append([row(config="BLOCK=128"), row(config="BLOCK=1024")])
    lines = path.read_text().splitlines(keepends=True)
    lines.append(lines[2].replace(",ok,", ",fabulous,"))  # line 4
    path.write_text("".join(lines))
    with pytest.raises(TlabError, match=r"line 4\b.*unknown status 'fabulous'"):
        load_records(path)


def test_line_with_too_few_fields_names_its_line_number(path):
    ResultsWriter(path).append([row()])
    with open(path, "a") as handle:
        handle.write("1,2,3\n")  # line 3
    with pytest.raises(TlabError, match=r"line 3\b.*3 fields"):
        load_records(path)


def test_unparsable_number_names_its_line_number(path):
    ResultsWriter(path).append([row(config="BLOCK=128"), row(config="BLOCK=1024")])
    text = path.read_text().replace("interpreter wall clock, median of 3\",0,",
                                    "interpreter wall clock, median of 3\",zero,", 1)
    path.write_text(text)
    with pytest.raises(TlabError, match=r"line 2\b"):
        load_records(path)


# --- winners -------------------------------------------------------------------------------

def test_winner_is_the_fastest_ok_triton_row():
    rows = [
        row(provider="torch", p50=0.01),  # baselines never win, however fast
        row(config="BLOCK=128 MODE=0", p50=3.0),
        row(config="BLOCK=128 MODE=1", p50=0.5, status=WRONG_RESULT),  # fast but wrong
        row(config="BLOCK=1024 MODE=0", p50=2.0, run_id="run-w"),
        row(config="BLOCK=1024 MODE=1", status="crash"),
    ]
    (winner,) = compute_winners(rows)
    assert winner["config"] == "BLOCK=1024 MODE=0"
    assert float(winner["p50_ms"]) == 2.0
    assert winner["run_id"] == "run-w" and winner["date"] == "2025-01-01"
    assert tuple(winner) == WINNER_COLUMNS


def test_a_faster_wrong_result_never_wins_even_with_a_time():
    wrong = dataclasses.replace(row(config="BLOCK=128 MODE=1", p50=0.5), status=WRONG_RESULT)
    assert wrong.p50_ms == 0.5
    (winner,) = compute_winners([wrong, row(config="BLOCK=128 MODE=0", p50=4.0)])
    assert winner["config"] == "BLOCK=128 MODE=0"


def test_no_ok_triton_row_means_no_winner():
    rows = [row(provider="torch", p50=1.0), row(status=WRONG_RESULT), row(status="skipped")]
    assert compute_winners(rows) == []


def test_speedup_is_best_ok_baseline_p50_over_winner_p50():
    rows = [
        row(provider="torch", p50=6.0),
        row(provider="unfused", p50=3.0),  # the best baseline: fastest ok one
        row(provider="compiled", p50=1.0, status=WRONG_RESULT),  # timed but wrong: not best
        row(config="BLOCK=128", p50=2.0),
    ]
    (winner,) = compute_winners(rows)
    assert winner["best_baseline"] == "unfused"
    assert float(winner["speedup"]) == 3.0 / 2.0
    assert float(winner["baseline_throughput"]) == rows[1].throughput
    assert float(winner["throughput"]) == rows[3].throughput


def test_without_an_ok_baseline_speedup_is_empty():
    (winner,) = compute_winners([row(config="BLOCK=128", p50=2.0)])
    assert winner["best_baseline"] == winner["speedup"] == winner["baseline_throughput"] == ""


def test_one_winner_per_dtype_and_shape_sorted_numerically():
    rows = [row(shape=s, dtype=d, p50=p) for s, p in (("10000", 1.0), ("9000", 2.0))
            for d in ("fp32", "fp16")]
    winners = compute_winners(rows)
    assert [(w["dtype"], w["shape"]) for w in winners] == [
        ("fp16", "9000"), ("fp16", "10000"), ("fp32", "9000"), ("fp32", "10000")]


def test_only_the_newest_toolchain_competes():
    old = row(config="BLOCK=128", p50=0.1, triton="3.0.0", timestamp="2024-01-01T00:00:00+00:00")
    new = row(config="BLOCK=1024", p50=5.0, triton="3.1.0", timestamp="2025-01-01T00:00:00+00:00")
    (winner,) = compute_winners([old, new])
    assert winner["config"] == "BLOCK=1024" and winner["triton"] == "3.1.0"


def test_write_winners_is_atomic_and_loads_back(tmp_path):
    winners = compute_winners([row(provider="torch", p50=3.0), row(config="BLOCK=128", p50=2.0),
                               row(shape="2000", p50=1 / 3)])
    target = configs_path(tmp_path, "interpreter", "planted")
    assert target == tmp_path / "configs" / "interpreter" / "planted.csv"
    write_winners(target, winners)
    assert [p.name for p in target.parent.iterdir()] == ["planted.csv"]  # no temp file left
    assert target.read_text().splitlines()[0] == ",".join(WINNER_COLUMNS)
    assert load_winners(target) == winners
    assert float(load_winners(target)[1]["p50_ms"]) == 1 / 3


def test_write_winners_replaces_the_whole_file(tmp_path):
    target = configs_path(tmp_path, "interpreter", "planted")
    write_winners(target, compute_winners([row(shape="1000"), row(shape="2000")]))
    newer = compute_winners([row(shape="3000")])
    write_winners(target, newer)
    assert load_winners(target) == newer
    assert sorted(p.name for p in target.parent.iterdir()) == ["planted.csv"]


def test_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    target = configs_path(tmp_path, "interpreter", "planted")
    good = compute_winners([row()])
    write_winners(target, good)
    with pytest.raises(ValueError):
        write_winners(target, [{"no such column": "x"}])
    assert load_winners(target) == good
    assert [p.name for p in target.parent.iterdir()] == ["planted.csv"]
