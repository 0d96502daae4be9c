"""Rows of older sources of a kernel, moved out of its results file into a compressed archive
beside it: results/<gpu>/archive/<kernel>.csv.gz (`tlab archive`).

A sweep only appends, and any edit of a kernel's module (its `source` hash) measures the whole
space again, so a results file keeps every row of every earlier source. Nothing that decides
anything today reads them: the resume key includes the source, and the winners come from the
latest confirmations. After a few edits of a kernel they can be most of its results file,
and they compress well. The archive keeps them line for line, under the same header
(zcat, or `pandas.read_csv`, reads it; appending a gzip member per run keeps it one valid
file).

Kept in the results file whatever their source:
- `skipped` rows: a pruned config is recorded once per reason, not once per source, so
  moving its row would only have the next sweep write it again;
- every row of a (kernel, dtype, shape) whose winner would change without the moved rows
  (its latest confirmation is of an older source): the committed configs stay what the
  results pick.

The archive is appended and fsync'd before the results file is rewritten, in place and under
the lock every writer takes (as a layout upgrade is), so a crash between the two leaves rows in
both files, never in neither.
"""

from __future__ import annotations

import csv
import fcntl
import gzip
import os
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.data.records import SKIPPED, Record
from tritonbench_lab.data.store import (
    in_todays_layout,
    load_records,
    make_folder,
    older_layout,
    rewrite_in_place,
)
from tritonbench_lab.data.winners import pick_winners
from tritonbench_lab.errors import TlabError

ARCHIVE_FOLDER = "archive"


@dataclass(frozen=True)
class Archived:
    """What archiving one results file did (or, in a dry run, would do)."""

    results: Path
    archive: Path
    moved: int  # rows of older sources moved to the archive
    kept: int  # rows left in the results file
    held: int  # rows of older sources kept: skipped rows, and the shapes their winners need


def archive_path(results: Path) -> Path:
    return Path(results).parent / ARCHIVE_FOLDER / f"{Path(results).stem}.csv.gz"


def _winners(records: list[Record]) -> dict[tuple[str, str, str], object]:
    return {(w.kernel, w.dtype, w.shape): w for w in pick_winners(records)}


def _split(records: list[Record], source: str) -> list[bool]:
    """Which rows move: of another source, not skipped, and not needed for a winner."""
    moves = [r.source != source and r.status != SKIPPED for r in records]
    before = _winners(records)
    after = _winners([r for r, move in zip(records, moves, strict=True) if not move])
    changed = {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}
    return [move and (r.kernel, r.dtype, r.shape) not in changed
            for r, move in zip(records, moves, strict=True)]


def _append_member(path: Path, header: str, lines: list[str]) -> None:
    """One gzip member more at the end of the archive, with the header when it is new."""
    make_folder(path.parent)
    with open(path, "ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0, os.SEEK_END)
            text = ("" if handle.tell() else header) + "".join(lines)
            handle.write(gzip.compress(text.encode("utf-8")))
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def archive_results(results: Path, source: str, dry_run: bool = False) -> Archived:
    """Move the rows of `results` that are of a source other than `source` (the kernel's
    module today) to its archive, keeping what the module's docstring says; `dry_run` only
    counts. A file of an older layout (store.ADDED_COLUMNS) is read as it is; where rows
    move, both files get today's layout, as a sweep's next append would have given it."""
    results = Path(results)
    target = archive_path(results)
    try:
        handle = open(results, "rb" if dry_run else "r+b")
    except OSError as err:
        raise TlabError(f"cannot open results file {str(results)!r}: {err.strerror}") from err
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH if dry_run else fcntl.LOCK_EX)
        try:
            lines = handle.read().decode("utf-8").splitlines(keepends=True)
            if lines and not lines[-1].endswith("\n"):
                lines.pop()  # a killed writer's torn row: no row (a rewrite drops it)
            if not lines:
                return Archived(results, target, 0, 0, 0)
            records, moves = _read_and_split(results, lines, source)
            held = sum(r.source != source for r, move in zip(records, moves, strict=True)
                       if not move)
            if any(moves) and not dry_run:
                header, *body = in_todays_layout(Record, lines)
                _append_member(target, header, [line for line, move in zip(body, moves,
                                                                           strict=True) if move])
                kept = [line for line, move in zip(body, moves, strict=True) if not move]
                rewrite_in_place(handle, (header + "".join(kept)).encode("utf-8"))
            return Archived(results, target, sum(moves), len(moves) - sum(moves), held)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_and_split(results: Path, lines: list[str], source: str
                    ) -> tuple[list[Record], list[bool]]:
    """The file's rows, and which of them move (_split); TlabError for a file that is not a
    results file of today's layout or an older one, or that changed while it was read."""
    if older_layout(Record, next(csv.reader(lines[:1]))) is None:
        raise TlabError(f"{str(results)!r} is not a results file of this tlab's layout "
                        "(results/SCHEMA.md): nothing archived")
    records = load_records(results)  # a malformed row: one line naming it
    if len(records) != len(lines) - 1:
        raise TlabError(f"{str(results)!r} changed while it was read: nothing archived")
    return records, _split(records, source)
