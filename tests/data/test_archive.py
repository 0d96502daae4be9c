"""tlab archive: rows of older sources leave a results file for its gzip'd archive, line for
line; skipped rows and the rows a winner needs stay; nothing is lost or duplicated."""

from __future__ import annotations

import dataclasses
import gzip
import os
import subprocess
import sys

import pandas as pd
import pytest
from helpers.fixture_results import record

from tritonbench_lab.data.archive import archive_path, archive_results
from tritonbench_lab.data.records import SKIPPED
from tritonbench_lab.data.store import append_rows, load_records
from tritonbench_lab.data.winners import pick_winners
from tritonbench_lab.errors import TlabError


def row(provider, config, shape, p50, source, when, status="ok"):
    """A fixture row of one source, measured at minute `when` (later rows are newer); a
    skipped row (p50 None) holds no time."""
    made = dataclasses.replace(record(provider, config, shape, p50 or 1.0, status), source=source,
                               run_id=f"run-{source}-{when}",
                               timestamp=f"2026-01-01T00:{when:02d}:00+00:00")
    if p50 is None:
        made = dataclasses.replace(made, p20_ms=None, p50_ms=None, p80_ms=None, throughput=None,
                                   error="pruned: fixture")
    return made


@pytest.fixture
def results(tmp_path):
    """64x1024: swept on the old source, then on the new one; 64x4096: the old one only."""
    path = tmp_path / "results" / "fixture-gpu" / "softmax.csv"
    append_rows(path, [
        row("torch", "", "64x1024", 4.0, "old", 1),
        row("triton", "ROWS=1 num_warps=4", "64x1024", 2.0, "old", 1),
        row("triton", "ROWS=8 num_warps=4", "64x1024", None, "old", 1, status=SKIPPED),
        row("triton", "ROWS=1 num_warps=4", "64x4096", 3.0, "old", 2),
        row("torch", "", "64x4096", 5.0, "old", 2),
        row("torch", "", "64x1024", 4.1, "new", 3),
        row("triton", "ROWS=1 num_warps=4", "64x1024", 2.5, "new", 3),
    ])
    return path


def lines_of(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return handle.read().splitlines(keepends=True)


def test_rows_of_older_sources_move_line_for_line(results):
    before = lines_of(results)
    winners = pick_winners(load_records(results))
    done = archive_results(results, "new")
    live, archived = lines_of(results), lines_of(archive_path(results))
    assert archive_path(results) == results.parent / "archive" / "softmax.csv.gz"
    # The two old rows of 64x1024 that measured something moved; 64x1024's skipped row and
    # 64x4096 (whose only winner is of the old source) stayed, in their order.
    assert archived == [before[0], before[1], before[2]]
    assert live == [before[0], *before[3:]]
    assert (done.moved, done.kept, done.held) == (2, 5, 3)
    assert pick_winners(load_records(results)) == winners
    assert archive_results(results, "new").moved == 0  # nothing left to move


def test_a_second_archive_is_one_more_member_of_one_csv(results):
    archive_results(results, "new")
    append_rows(results, [row("triton", "ROWS=2 num_warps=8", "64x1024", 9.0, "older", 0)])
    assert archive_results(results, "new").moved == 1
    frame = pd.read_csv(archive_path(results))  # both gzip members, one header
    assert list(frame["source"]) == ["old", "old", "older"]
    assert list(frame["p50_ms"]) == [4.0, 2.0, 9.0]


def test_a_shape_whose_newest_rows_are_of_an_older_source_keeps_them(results):
    # Someone swept the old code again, later: 64x1024's winner now comes from those rows.
    append_rows(results, [row("triton", "ROWS=2 num_warps=4", "64x1024", 1.0, "old", 9)])
    winners = pick_winners(load_records(results))
    done = archive_results(results, "new")
    assert done.moved == 0
    assert pick_winners(load_records(results)) == winners


def test_dry_run_counts_and_touches_nothing(results):
    before = (results.read_bytes(), os.stat(results).st_mtime_ns)
    done = archive_results(results, "new", dry_run=True)
    assert (done.moved, done.kept, done.held) == (2, 5, 3)
    assert (results.read_bytes(), os.stat(results).st_mtime_ns) == before
    assert not archive_path(results).parent.exists()


def test_a_torn_last_row_is_cut_not_archived(results):
    with open(results, "ab") as handle:
        handle.write(b"run-old-1,2026-01-01T00:01:00+00:00,softmax,triton,fp32,64x1")  # killed
    done = archive_results(results, "new")
    assert done.moved == 2
    assert results.read_bytes().endswith(b"\n")
    assert len(lines_of(archive_path(results))) == 3


def test_a_foreign_file_is_refused_and_left_as_it_is(tmp_path):
    path = tmp_path / "softmax.csv"
    path.write_text("name,value\nfoo,1\n")
    with pytest.raises(TlabError, match="not a results file of this tlab's layout"):
        archive_results(path, "new")
    assert path.read_text() == "name,value\nfoo,1\n"
    assert not archive_path(path).exists()


def test_the_command_moves_rows_of_sources_other_than_the_modules_today(results, tmp_path):
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.source import source_hash

    today = source_hash(get_spec("softmax"))
    records = load_records(results)
    append_rows(results, [dataclasses.replace(r, source=today, timestamp="2026-01-01T00:30:00+00:00")
                          for r in records if r.shape == "64x4096"])
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    args = [sys.executable, "-m", "tritonbench_lab", "archive", "--root", str(tmp_path)]
    dry = subprocess.run([*args, "--dry-run"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert "would move 2 row(s)" in " ".join(dry.stdout.split())
    assert not archive_path(results).exists()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "moved 2 row(s)" in " ".join(done.stdout.split())
    moved = pd.read_csv(archive_path(results))
    # 64x4096's rows of the old source; 64x1024's winner is of the source called "new" here,
    # not today's, so all of 64x1024 stays.
    assert list(moved["source"]) == ["old", "old"]
    assert set(moved["shape"]) == {"64x4096"}
    kept = pd.read_csv(results)
    assert set(kept[kept["shape"] == "64x4096"]["source"]) == {today}
    assert set(kept[kept["shape"] == "64x1024"]["source"]) == {"old", "new"}


def test_a_malformed_row_is_named_and_nothing_moves(results):
    lines = results.read_text().splitlines(keepends=True)
    lines[2] = ",".join(lines[2].split(",")[:10]) + "\n"  # a row cut short, rows after it kept
    results.write_text("".join(lines))
    with pytest.raises(TlabError, match="line 3"):
        archive_results(results, "new")
    assert results.read_text() == "".join(lines)
    assert not archive_path(results).exists()


def test_a_foreign_file_without_a_last_newline_is_left_byte_for_byte(tmp_path):
    path = tmp_path / "softmax.csv"
    path.write_bytes(b"name,value\nfoo,1\nbar")
    with pytest.raises(TlabError, match="not a results file"):
        archive_results(path, "new")
    assert path.read_bytes() == b"name,value\nfoo,1\nbar"


def test_the_command_changes_no_file_when_one_of_them_is_bad(results, tmp_path):
    """results/other-gpu/ sorts after results/fixture-gpu/: the good file must not be
    archived before the bad one is found."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.source import source_hash

    today = source_hash(get_spec("softmax"))
    append_rows(results, [dataclasses.replace(r, source=today, timestamp="2026-01-01T00:30:00+00:00")
                          for r in load_records(results) if r.shape == "64x4096"])
    bad = results.parent.parent / "other-gpu" / "softmax.csv"
    bad.parent.mkdir()
    bad.write_text("name,value\nfoo,1\n")
    before = results.read_bytes()
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-m", "tritonbench_lab", "archive", "--root",
                           str(tmp_path)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("tlab: error: ") and "not a results file" in done.stderr
    assert results.read_bytes() == before
    assert not archive_path(results).exists()


def _older_layout(path, dropped=("host_ms",)):
    """Rewrite a results file as tlab wrote it before the `dropped` columns (added last)."""
    from tritonbench_lab.data.records import COLUMNS

    width = len(COLUMNS) - len(dropped)
    assert COLUMNS[width:] == tuple(dropped)
    lines = [",".join(line.split(",")[:width]) + "\n" for line in lines_of(path)]
    path.write_text("".join(lines))
    return lines


def test_a_dry_run_counts_a_file_of_an_older_layout_and_touches_nothing(results):
    current = archive_results(results, "new", dry_run=True)
    _older_layout(results)
    before = (results.read_bytes(), os.stat(results).st_mtime_ns)
    done = archive_results(results, "new", dry_run=True)
    assert (done.moved, done.kept, done.held) == (current.moved, current.kept, current.held)
    assert (results.read_bytes(), os.stat(results).st_mtime_ns) == before
    assert not archive_path(results).parent.exists()


def test_archiving_a_file_of_an_older_layout_upgrades_it_and_moves_rows_line_for_line(results):
    """The rows leave and stay under today's header, the added cells empty, as a sweep's
    append would have upgraded the file: every row is kept, in one of the two files."""
    from tritonbench_lab.data.records import COLUMNS

    records = load_records(results)
    older = _older_layout(results)
    assert load_records(results) == records  # host_ms reads as empty
    done = archive_results(results, "new")
    assert done.moved == 2
    moved, kept = lines_of(archive_path(results)), lines_of(results)
    assert moved[0] == kept[0] == ",".join(COLUMNS) + "\n"
    # Each row is its old line with host_ms's empty cell at the end, in one file or the other.
    assert sorted(moved[1:] + kept[1:]) == sorted(line[:-1] + ",\n" for line in older[1:])
    assert sorted(map(repr, load_records(results) + pd_records(archive_path(results)))) == \
        sorted(map(repr, records))


def test_a_file_of_an_older_layout_with_nothing_to_move_is_left_as_it_is(results):
    """Against source "old", only the "new" rows could move, and 64x1024's winner needs them:
    nothing moves, so the file is not rewritten (its layout is upgraded by the next append)."""
    _older_layout(results)
    before = (results.read_bytes(), os.stat(results).st_mtime_ns)
    done = archive_results(results, "old")
    assert (done.moved, done.held) == (0, 2)
    assert (results.read_bytes(), os.stat(results).st_mtime_ns) == before


def pd_records(path):
    """The rows of an archive, read back as Records (gzip'd CSV under the results header)."""
    from tritonbench_lab.data.store import load_records as load

    plain = path.with_suffix("")
    plain.write_text("".join(lines_of(path)))
    try:
        return load(plain)
    finally:
        plain.unlink()


def test_a_dry_run_of_the_committed_results_refuses_none_of_them(tmp_path):
    """The committed results of some GPUs predate a column (host_ms): `tlab archive --dry-run`
    on them counts and writes nothing."""
    import shutil

    from helpers.paths import REPO

    shutil.copytree(REPO / "results", tmp_path / "results")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-m", "tritonbench_lab", "archive", "--dry-run",
                           "--root", str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "would move" in done.stdout
    assert subprocess.run(["diff", "-r", str(REPO / "results"), str(tmp_path / "results")],
                          capture_output=True).returncode == 0
