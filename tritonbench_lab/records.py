"""One measurement attempt = one CSV row. The schema lives here, once.

results/SCHEMA.md documents every column; tests/test_records.py keeps the two in sync.
This module imports neither torch nor triton, so plots and reports run anywhere.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# Statuses, in the order a config can fail.
OK = "ok"
SKIPPED = "skipped"  # pruned before compiling (the reason is in `error`)
COMPILE_ERROR = "compile_error"
OUT_OF_RESOURCES = "out_of_resources"
WRONG_RESULT = "wrong_result"
CRASH = "crash"
TIMEOUT = "timeout"
STATUSES = (OK, SKIPPED, COMPILE_ERROR, OUT_OF_RESOURCES, WRONG_RESULT, CRASH, TIMEOUT)

TRITON = "triton"  # the provider name of the kernel under test; baselines use their own names

# The two throughput units; a kernel spec says which one its users judge it by.
TFLOPS = "TFLOP/s"
GBPS = "GB/s"


@dataclass
class Record:
    """A row. Field order is column order."""

    run_id: str
    timestamp: str  # UTC, ISO 8601
    kernel: str
    provider: str  # "triton" or a baseline's name
    dtype: str
    shape: str  # sizes joined by "x", in the kernel's dims order
    config: str  # "BLOCK_M=128 BLOCK_N=256 ... num_warps=8"; empty for baselines
    status: str
    error: str  # why the status is not ok (one line), empty when ok
    max_abs_error: float | None
    p20_ms: float | None
    p50_ms: float | None
    p80_ms: float | None
    throughput: float | None  # at p50, in `metric` units
    metric: str  # "TFLOP/s" or "GB/s"
    compile_s: float | None  # first call (compile + load + run) in seconds
    timing: str  # how p20/p50/p80 were measured
    seed: int
    gpu: str  # device name, e.g. "NVIDIA H200", or "interpreter"
    gpu_slug: str
    driver: str
    cuda: str
    torch: str
    triton: str
    tlab: str  # tlab's version + "+src." + a hash of the kernel module's source

    def key(self) -> tuple[str, ...]:
        return resume_key(asdict(self))


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Record))
FLOAT_COLUMNS = ("max_abs_error", "p20_ms", "p50_ms", "p80_ms", "throughput", "compile_s")
INT_COLUMNS = ("seed",)

# A row measured under the same values of these columns is not measured again on resume.
KEY_COLUMNS = ("gpu_slug", "torch", "triton", "tlab", "kernel", "provider", "dtype", "shape",
               "config")


def resume_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(row[c]) for c in KEY_COLUMNS)


# The `timing` of a leader's confirmation (re-timed in a fresh worker after its shape was
# swept) ends with this.
CONFIRMATION = "; confirmation"


def is_confirmation(record: Record) -> bool:
    return record.timing.endswith(CONFIRMATION)


def standing(rows: list[Record]) -> list[Record]:
    """The rows that speak for their configs (or baselines): for a resume key that has a
    confirmation, only its newest confirmation; for any other key, all its rows.

    Why: a sweep's fastest config is the minimum of many noisy times, so its own time is
    biased low, and times move between processes; its confirmation, timed in another
    process after it was picked, is not chosen on its own noise. Order is kept."""
    newest: dict[tuple[str, ...], Record] = {}
    for r in rows:
        if is_confirmation(r):
            newest[r.key()] = r  # rows are in file order: the later of equal keys is newer
    return [r for r in rows if newest.get(r.key(), r) is r]


def fastest(rows: list[Record]) -> Record | None:
    """The lowest-p50 of these (standing, ok, timed) rows; among the confirmed ones when any
    is confirmed, so that a winner's time is one taken after it was chosen."""
    confirmed = [r for r in rows if is_confirmation(r)]
    return min(confirmed or rows, key=lambda r: r.p50_ms, default=None)


def to_csv_row(record: Record) -> list[str]:
    """Column values as text: floats with full precision (repr), None as empty, line breaks
    inside text turned into spaces, so that every row is exactly one line of the file (what
    lets a reader drop a torn last line after a kill)."""
    out = []
    for name in COLUMNS:
        value = getattr(record, name)
        if value is None:
            out.append("")
        elif isinstance(value, float):
            out.append(repr(value))
        else:
            out.append(" ".join(str(value).splitlines()))
    return out


def from_csv_row(values: dict[str, str]) -> Record:
    """Inverse of to_csv_row (raises ValueError on a malformed row)."""
    missing = [c for c in COLUMNS if c not in values]
    if missing:
        raise ValueError(f"missing column(s) {', '.join(missing)}")
    kwargs: dict[str, Any] = {}
    for name in COLUMNS:
        text = values[name]
        if name in FLOAT_COLUMNS:
            kwargs[name] = float(text) if text != "" else None
        elif name in INT_COLUMNS:
            kwargs[name] = int(text)
        else:
            kwargs[name] = text
    if kwargs["status"] not in STATUSES:
        raise ValueError(f"unknown status {kwargs['status']!r}")
    return Record(**kwargs)


def parse_config_text(text: str) -> dict[str, int]:
    """'BLOCK_M=128 num_warps=8' -> {'BLOCK_M': 128, 'num_warps': 8}; '' -> {}."""
    config = {}
    for item in text.split():
        name, _, value = item.partition("=")
        config[name] = int(value)
    return config
