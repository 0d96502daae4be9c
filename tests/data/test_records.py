"""The row schema: results/SCHEMA.md matches the code, and rows survive a trip through CSV text."""

from __future__ import annotations

import dataclasses
import re

import pytest
from helpers.paths import REPO

from tritonbench_lab.data.records import (
    CEILING_COLUMNS,
    COLUMNS,
    KEY_COLUMNS,
    PHASES,
    STATUSES,
    WINNER_COLUMNS,
    Ceiling,
    Record,
    Winner,
    from_cells,
    parse_config_text,
    to_cells,
)

FLOAT_COLUMNS = [f.name for f in dataclasses.fields(Record) if str(f.type) == "float | None"]


def from_csv_row(row: dict[str, str]) -> Record:
    return from_cells(Record, row)

SCHEMA = REPO / "results" / "SCHEMA.md"
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")


def schema_tables() -> dict[str, list[tuple[str, str]]]:
    """Level-2 heading -> [(column, meaning)] of the `| `column` | meaning |` rows under it."""
    tables: dict[str, list[tuple[str, str]]] = {}
    heading = ""
    for line in SCHEMA.read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].replace("&lt;", "<").replace("&gt;", ">").strip()
            tables[heading] = []
        match = ROW.match(line)
        if match:
            tables[heading].append((match[1], match[2].strip()))
    return tables


def table(heading: str) -> list[str]:
    tables = schema_tables()
    assert heading in tables, f"no section '## {heading}' in {SCHEMA}: {list(tables)}"
    rows = tables[heading]
    assert all(meaning for _, meaning in rows), f"a column of {heading} has no meaning"
    return [name for name, _ in rows]


def test_schema_documents_every_results_column_in_order():
    assert tuple(table("results/<gpu-slug>/<kernel>.csv")) == COLUMNS


def test_schema_documents_every_winners_column_in_order():
    assert tuple(table("configs/<gpu-slug>/<kernel>.csv")) == WINNER_COLUMNS


def test_schema_documents_every_ceilings_column_in_order():
    assert tuple(table("results/<gpu-slug>/ceilings.csv")) == CEILING_COLUMNS


def test_schema_documents_every_host_times_column_in_order():
    from dataclasses import fields

    from tritonbench_lab.data.records import HostTime

    assert tuple(table("results/<gpu-slug>/host/<kernel>.csv")) == tuple(
        f.name for f in fields(HostTime))


@pytest.mark.parametrize("heading, name", [
    ("results/<gpu-slug>/portability/<from-gpu>.csv", "Carried"),
    ("configs/<gpu-slug>/carried/<from-gpu>.csv", "Trust"),
    ("Recorded calls (`ops.record_shapes`, `TLAB_RECORD_SHAPES`)", "Called"),
])
def test_schema_documents_every_portability_column_in_order(heading, name):
    from dataclasses import fields

    from tritonbench_lab.data import records

    assert tuple(table(heading)) == tuple(f.name for f in fields(getattr(records, name)))


def test_a_bool_cell_reads_back_as_written_and_nothing_else_passes():
    from tritonbench_lab.data.records import Trust, row_decoder, to_cells

    row = Trust("add", "fp32", "a", "b", "9.0", 2, 0, 1.0, 1.1, "64", False, "3.6", "2026-01-01")
    assert row_decoder(Trust)(to_cells(row)) == row  # "False" is not truthy text
    with pytest.raises(ValueError, match="trusted is not True or False: 'yes'"):
        row_decoder(Trust)([*to_cells(row)[:10], "yes", *to_cells(row)[11:]])


def test_schema_names_every_status():
    text = SCHEMA.read_text()
    for status in STATUSES:
        assert f"- `{status}`:" in text, status


def make_record(**changes) -> Record:
    values = dict(
        run_id="20250101T000000Z-abcdef", timestamp="2025-01-01T00:00:01+00:00",
        kernel="softmax", provider="triton", dtype="fp32", shape="37x129",
        config="ROWS=1 num_warps=4", status="ok", error="", max_abs_error=6.615572645252144e-08,
        p20_ms=0.1, p50_ms=1 / 3, p80_ms=2.0000000000000004, throughput=1e-300, metric="GB/s",
        compile_s=0.14526346599996032, phase="sweep", method="interpreter", warmup_ms=None,
        rep_ms=None, seed=7, gpu="interpreter", gpu_slug="interpreter", driver="", cuda="13.0",
        torch="2.5.1", triton="3.1.0", tlab="0.1.0", source="0123456789",
    )
    values.update(changes)
    return Record(**values)


def as_dict(record: Record) -> dict[str, str]:
    return dict(zip(COLUMNS, to_cells(record), strict=True))


def test_columns_added_after_files_existed_end_their_tables():
    """A file written before a column was added is read because its header is a prefix of
    today's (store.older_layout): a field put anywhere but after the others, or an added
    column whose default cell does not read, would make every such file unreadable."""
    from helpers.fixture_results import winner

    from tritonbench_lab.data.store import ADDED_COLUMNS

    samples = {Record: make_record(), Winner: winner("64x64x64", "BLOCK_M=32")}
    assert set(ADDED_COLUMNS) <= set(samples)
    for cls, added in ADDED_COLUMNS.items():
        columns = tuple(f.name for f in dataclasses.fields(cls))
        assert columns[len(columns) - len(added):] == tuple(added), cls.__name__
        older = dict(zip(columns, to_cells(samples[cls]), strict=True)) | added
        back = from_cells(cls, older)
        assert {getattr(back, c) for c in added} <= {None, ""}, cls.__name__


def test_round_trip_keeps_floats_exact():
    record = make_record()
    back = from_csv_row(as_dict(record))
    assert back == record
    assert back.p50_ms == 1 / 3 and back.throughput == 1e-300  # bit for bit, not rounded
    assert isinstance(back.seed, int) and back.seed == 7
    assert back.cuda == "13.0"  # text, not the float 13.0


def test_do_bench_budgets_are_integers_and_phases_round_trip():
    for phase in PHASES:
        record = make_record(method="do_bench", warmup_ms=25, rep_ms=100, phase=phase)
        back = from_csv_row(as_dict(record))
        assert back == record and back.rep_ms == 100 and back.confirmed == (phase == "confirm")
    row = as_dict(make_record())
    row["phase"] = "confirmation"
    with pytest.raises(ValueError, match="unknown phase"):
        from_csv_row(row)


def test_winners_and_ceilings_round_trip_with_their_types():
    winner = Winner(kernel="matmul", dtype="bf16", shape="512x512x512", config="BLOCK_M=64",
                    p50_ms=0.1, throughput=2.5, metric="TFLOP/s", method="do_bench",
                    warmup_ms=25, rep_ms=50, best_baseline="", baseline_p50_ms=None,
                    baseline_throughput=None, speedup=None, op_p50_ms=None, gpu="G", torch="2",
                    triton="3", tlab="0.1.0", source="abc", date="2026-01-01", run_id="r")
    cells = dict(zip(WINNER_COLUMNS, to_cells(winner), strict=True))
    assert cells["speedup"] == "" and cells["rep_ms"] == "50"
    assert from_cells(Winner, cells) == winner
    ceiling = Ceiling(name="copy", metric="GB/s", value=4283.0, p20_ms=2.0, p50_ms=2.0,
                      p80_ms=2.0, size="4294967296 bytes", method="do_bench", warmup_ms=25,
                      rep_ms=200, gpu="G", gpu_slug="g", torch="2", triton="3", timestamp="t")
    assert from_cells(Ceiling, dict(zip(CEILING_COLUMNS, to_cells(ceiling), strict=True))) \
        == ceiling


def test_round_trip_none_is_an_empty_cell():
    record = make_record(status="wrong_result", error="max |error| 1 is 9.99e+05x the tolerance",
                         p20_ms=None, p50_ms=None, p80_ms=None, throughput=None, method="")
    row = as_dict(record)
    assert row["p20_ms"] == row["p50_ms"] == row["p80_ms"] == row["throughput"] == ""
    assert from_csv_row(row) == record


def test_round_trip_baseline_with_empty_config_and_every_float_missing():
    floats = {name: None for name in FLOAT_COLUMNS}
    record = make_record(provider="torch", config="", status="crash",
                         error="RuntimeError: CUDA error, worker restarted", **floats)
    row = as_dict(record)
    assert all(row[name] == "" for name in FLOAT_COLUMNS)
    assert from_csv_row(row) == record


def test_every_status_round_trips():
    for status in STATUSES:
        assert from_csv_row(as_dict(make_record(status=status))).status == status


def test_unknown_status_is_rejected():
    row = as_dict(make_record())
    row["status"] = "fast"
    with pytest.raises(ValueError, match="unknown status 'fast'"):
        from_csv_row(row)


def test_missing_column_is_rejected_and_named():
    row = as_dict(make_record())
    del row["p50_ms"]
    with pytest.raises(ValueError, match="missing column p50_ms"):
        from_csv_row(row)


@pytest.mark.parametrize("column, text", [("p50_ms", "fast"), ("max_abs_error", "1,5"),
                                          ("compile_s", "n/a")])
def test_unparsable_float_is_rejected(column, text):
    row = as_dict(make_record())
    row[column] = text
    with pytest.raises(ValueError):
        from_csv_row(row)


def test_unparsable_seed_is_rejected():
    row = as_dict(make_record())
    row["seed"] = "seven"
    with pytest.raises(ValueError):
        from_csv_row(row)


def test_key_columns_are_columns():
    assert set(KEY_COLUMNS) <= set(COLUMNS)
    assert len(set(KEY_COLUMNS)) == len(KEY_COLUMNS)


def test_resume_key_uses_exactly_the_key_columns():
    record = make_record()
    assert record.key() == tuple(str(getattr(record, c)) for c in KEY_COLUMNS)
    for name in COLUMNS:
        original = getattr(record, name)
        if isinstance(original, str):
            changed = original + "-other"
        elif isinstance(original, int):
            changed = original + 1
        elif original is None and name.endswith("_ms") and "p" not in name[:2]:
            changed = 1  # warmup_ms, rep_ms: integers
        else:
            changed = (original or 0.0) + 1.0
        other = dataclasses.replace(record, **{name: changed})
        if name in KEY_COLUMNS:
            assert other.key() != record.key(), f"{name} is a key column but does not change it"
        else:
            assert other.key() == record.key(), f"{name} is not a key column but changes it"


def test_parse_config_text_round_trips_config_text():
    from tritonbench_lab.space import config_text

    config = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8,
              "num_stages": 3}
    text = config_text(config)
    assert text == "BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 num_warps=8 num_stages=3"
    assert parse_config_text(text) == config
    assert list(parse_config_text(text)) == list(config)  # order kept
    assert parse_config_text(config_text({})) == {}
    assert parse_config_text("") == {}


def test_parse_config_text_round_trips_every_config_of_a_space():
    from tritonbench_lab.kernels.softmax import SPACE
    from tritonbench_lab.space import config_text

    for config in SPACE:
        assert parse_config_text(config_text(config)) == config


MEASURED = ["p20_ms", "p50_ms", "p80_ms", "throughput", "compile_s", "host_ms"]


@pytest.mark.parametrize("text", ["nan", "-1.5", "inf", "-inf", "NaN"])
@pytest.mark.parametrize("column", MEASURED)
def test_a_time_or_rate_that_is_nan_infinite_or_negative_is_damage(column, text):
    row = as_dict(make_record())
    row[column] = text
    with pytest.raises(ValueError, match=rf"^{column} is {text}: not a measurement"):
        from_csv_row(row)


def test_max_abs_error_may_be_infinite_but_never_nan_or_negative():
    row = as_dict(make_record(status="wrong_result"))
    row["max_abs_error"] = "inf"  # outputs that held NaN or inf (verify.py)
    assert from_csv_row(row).max_abs_error == float("inf")
    for text in ("nan", "-0.5"):
        row["max_abs_error"] = text
        with pytest.raises(ValueError, match=f"max_abs_error is {text}"):
            from_csv_row(row)


@pytest.mark.parametrize("column", ["p50_ms", "speedup", "op_host_ms"])
def test_a_winner_with_a_nan_or_negative_number_is_never_written(column):
    from helpers.fixture_results import winner

    good = dataclasses.replace(winner("64x64x64", "BLOCK_M=32"), speedup=1.5, op_host_ms=0.01)
    assert to_cells(good)  # the row as it should be
    for value in (float("nan"), -1.0):
        with pytest.raises(ValueError, match=f"{column} is {value!r}: not a measurement"):
            to_cells(dataclasses.replace(good, **{column: value}))
