"""CSV files of typed rows (records.Record, Winner, Ceiling): read with one set of checks,
appended under a lock, or replaced whole.

Results and ceilings are append-only: writers hold an exclusive `fcntl.flock` while they
append, so several sweeps can write one file at once without interleaving lines. A row is
written with a single `write` of the whole line and fsync'd; a process killed in the middle
can leave at most one partial last line, which readers ignore and the next writer cuts off
before appending. Finished rows are never rewritten. Winner files are derived from results
and replaced whole (temp file + rename), so a reader never sees half a file.

Any file that is not what it should be (another tool's header, a malformed line, bytes that
are not UTF-8) is a TlabError naming the file and line, never a traceback. No torch.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from tritonbench_lab.data.records import (
    Called,
    Carried,
    Ceiling,
    HostTime,
    Record,
    Trust,
    Winner,
    row_decoder,
    to_cells,
)
from tritonbench_lab.errors import TlabError

_KIND = {Record: "results", Winner: "winners", Ceiling: "ceilings", HostTime: "host times",
         Carried: "portability", Trust: "carried configs", Called: "recorded calls"}
_cache: dict[tuple, list] = {}

# Columns added at the end of a table after files of it existed, with the cell older rows
# get. Such a file is read as if it had them; the first append rewrites it under the new
# header (every row kept, the new cells filled in), so a file never mixes two layouts.
ADDED_COLUMNS: dict[type, dict[str, str]] = {
    Record: {"device": "", "events_p50_ms": "", "graph_p50_ms": "", "disagree": "", "host_ms": ""},
    Winner: {"host_ms": "", "op_host_ms": ""}}


def older_layout(cls: type, header: list[str]) -> dict[str, str] | None:
    """The cells to add to each row of a file whose header is `cls`'s without some of its
    added columns; None when the header is neither that nor current."""
    columns = columns_of(cls)
    added = ADDED_COLUMNS.get(cls, {})
    width = len(header)
    if tuple(header) != columns[:width] or any(c not in added for c in columns[width:]):
        return None
    return {c: added[c] for c in columns[width:]}


def columns_of(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


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


# --- reading ------------------------------------------------------------------------------

def read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise TlabError(f"{str(path)!r} line {line}: not UTF-8 text (byte "
                        f"0x{data[err.start]:02x}); the file is damaged") from None
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a partial last row: its writer died mid-line
    return text


def read_table(path: Path, cls: type) -> list[Any]:
    """Every complete row of a file of `cls` rows ([] when it does not exist). Each file is
    parsed once per process until it changes."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        return []
    key = (str(path.resolve()), cls, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _cache:
        _cache[key] = _parse(path, cls)
    return list(_cache[key])


def _parse(path: Path, cls: type) -> list[Any]:
    if path.is_dir():
        raise TlabError(f"{str(path)!r} is a folder, not a tlab {_KIND[cls]} file")
    reader = csv.reader(io.StringIO(read_text(path)))
    header = next(reader, None)
    if header is None:
        return []
    columns = columns_of(cls)
    filled = older_layout(cls, header)
    if filled is None:
        missing = [c for c in columns if c not in header]
        raise TlabError(f"{str(path)!r} is not a tlab {_KIND[cls]} file: its header does not "
                        f"match results/SCHEMA.md (missing: {', '.join(missing) or 'none'})")
    decode = row_decoder(cls)
    extra = [filled[c] for c in columns[len(header):]]  # cells of columns added since
    rows = []
    for number, values in enumerate(reader, start=2):
        try:
            if len(values) != len(header):
                raise ValueError(f"{len(values)} fields, expected {len(header)}")
            rows.append(decode(values + extra if extra else values))
        except ValueError as err:
            raise TlabError(f"{str(path)!r} line {number}: {err}") from err
    return rows


def load_records(path: Path) -> list[Record]:
    return read_table(path, Record)


def load_winners(path: Path) -> list[Winner]:
    return read_table(path, Winner)


def load_ceilings(path: Path) -> list[Ceiling]:
    return read_table(path, Ceiling)


def load_host_times(path: Path) -> list[HostTime]:
    return read_table(path, HostTime)


def read_results(path: Path):
    """A results file as a pandas DataFrame, one column per Record field with its type:
    text as strings (`cuda` too), times and rates as float64, integers as Int64."""
    # late: `tlab --help` imports no pandas or matplotlib
    import pandas as pd

    rows = load_records(path)
    frame = pd.DataFrame([asdict(r) for r in rows], columns=list(columns_of(Record)))
    types = {}
    for f in fields(Record):
        hint = str(f.type)
        types[f.name] = ("float64" if hint.startswith("float") else
                         "Int64" if hint.startswith("int") else "string")
    return frame.astype(types)


# --- writing ------------------------------------------------------------------------------

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
    handle.truncate(data.rfind(b"\n") + 1)


def append_rows(path: Path, rows: Iterable[Any]) -> None:
    """Append rows (of one type) to a results or ceilings file; the file and its header are
    created with the first row, so a run that measures nothing leaves no file behind."""
    rows = list(rows)
    if not rows:
        return
    cls = type(rows[0])
    lines = "".join(_line(to_cells(r)) for r in rows)
    path = Path(path)
    make_folder(path.parent)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            _cut_partial_tail(handle)
            _upgrade_layout(handle, cls, path)
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                handle.write(_line(list(columns_of(cls))).encode())
            handle.write(lines.encode())
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _upgrade_layout(handle, cls: type, path: Path) -> None:
    """Under the append lock: rewrite a file of an older layout (ADDED_COLUMNS) in place
    with the current header, each row given the added cells. In place, not by rename, so
    that every writer keeps locking the same file."""
    handle.seek(0)
    first = handle.readline().decode("utf-8")  # the header alone: each append reads it
    if not first:
        return
    filled = older_layout(cls, next(csv.reader([first])))
    if filled is None or not filled:
        return  # current layout (a foreign one was refused before anything ran)
    handle.seek(0)
    lines = handle.read().decode("utf-8").splitlines(keepends=True)
    rewrite_in_place(handle, "".join(in_todays_layout(cls, lines)).encode())


def in_todays_layout(cls: type, lines: list[str]) -> list[str]:
    """The lines of a file of `cls` rows (its header first) in today's layout: under an older
    header (ADDED_COLUMNS) each row is given the added columns' cells; else as they are."""
    filled = older_layout(cls, next(csv.reader(lines[:1]), []))
    if not filled:
        return lines
    extra = list(filled.values())
    return [_line(list(columns_of(cls)))] + [_line(row + extra) for row in csv.reader(lines[1:])]


def rewrite_in_place(handle, data: bytes) -> None:
    """Replace a locked file's content through its open handle: in place, not by rename, so
    that every writer keeps locking the same file (a layout upgrade, `tlab archive`)."""
    handle.seek(0)
    handle.truncate()
    handle.write(data)
    handle.flush()
    os.fsync(handle.fileno())


def write_table(path: Path, rows: list[Any], cls: type) -> None:
    """Replace the file with these rows, atomically; readable by all, as any file this
    process creates (mkstemp's 0600 would hide committed configs from other users)."""
    path = Path(path)
    make_folder(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as handle:
            handle.write(_line(list(columns_of(cls))))
            handle.writelines(_line(to_cells(r)) for r in rows)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_appendable(path: Path, cls: type = Record) -> None:
    """Refuse, before anything is measured, a file this run could not append to safely."""
    path = Path(path)
    if path.exists():
        read_table(path, cls)  # raises on a file from another tool or a damaged one
        if not os.access(path, os.W_OK):
            raise TlabError(f"{_KIND[cls]} file {str(path)!r} is not writable")
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise TlabError(f"cannot create {_KIND[cls]} under {str(path.parent)!r}: "
                        f"{str(parent)!r} is not a folder")
    if not os.access(parent, os.W_OK):
        raise TlabError(f"cannot create {_KIND[cls]} under {str(parent)!r}: folder is not "
                        "writable")
