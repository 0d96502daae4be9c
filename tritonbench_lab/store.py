"""Append-only CSV files of Records: one row per attempt, flushed as soon as it is measured.

Writers hold an exclusive `fcntl.flock` on the file while they append, so several sweeps can
write one file at once without interleaving lines. A row is written with a single `write` of
the whole line; a process killed in the middle can leave at most one partial last line, which
loaders ignore and the next writer cuts off before appending. Finished rows are never
rewritten. No torch, no triton.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
from collections.abc import Iterable
from pathlib import Path

from tritonbench_lab.errors import TlabError
from tritonbench_lab.records import COLUMNS, Record, from_csv_row, to_csv_row


def results_path(root: Path, gpu_slug: str, kernel: str) -> Path:
    return Path(root) / "results" / gpu_slug / f"{kernel}.csv"


def make_folder(path: Path) -> Path:
    """mkdir -p, with a one-line TlabError instead of a traceback when it cannot be done."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TlabError(f"cannot create folder {str(path)!r}: {err.strerror}") from err
    return Path(path)


def _line(values: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue()


def _cut_partial_tail(handle) -> None:
    """Drop a last line without its newline (a writer was killed mid-row)."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    if size == 0:
        return
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return
    handle.seek(0)
    data = handle.read()
    keep = data.rfind(b"\n") + 1
    handle.truncate(keep)


class ResultsWriter:
    """Appends Records to one CSV file; creates it (with its header) on the first row only,
    so a run that measures nothing leaves no file behind."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def append(self, records: Iterable[Record]) -> None:
        lines = "".join(_line(to_csv_row(r)) for r in records)
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                _cut_partial_tail(handle)
                handle.seek(0, os.SEEK_END)
                if handle.tell() == 0:
                    handle.write(_line(list(COLUMNS)).encode())
                handle.write(lines.encode())
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def check_results_file(path: Path) -> None:
    """Refuse, before anything is measured, a file this run could not append to safely."""
    path = Path(path)
    if path.exists():
        load_records(path)  # raises on a file from another tool
        if not os.access(path, os.W_OK):
            raise TlabError(f"results file {str(path)!r} is not writable")
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise TlabError(f"cannot create results under {str(path.parent)!r}: "
                        f"{str(parent)!r} is not a folder")
    if not os.access(parent, os.W_OK):
        raise TlabError(f"cannot create results under {str(parent)!r}: folder is not writable")


def load_records(path: Path) -> list[Record]:
    """Every complete row of a results file ([] when it does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a partial last row: its writer died mid-line
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        return []
    if tuple(header) != COLUMNS:
        raise TlabError(
            f"{str(path)!r} is not a tlab results file: its header does not match "
            "results/SCHEMA.md"
        )
    records = []
    for line_number, values in enumerate(reader, start=2):
        try:
            if len(values) != len(COLUMNS):
                raise ValueError(f"{len(values)} fields, expected {len(COLUMNS)}")
            records.append(from_csv_row(dict(zip(COLUMNS, values, strict=True))))
        except ValueError as err:
            raise TlabError(f"{str(path)!r} line {line_number}: {err}") from err
    return records
