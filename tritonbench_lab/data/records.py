"""The three tables tlab keeps, as typed rows: Record (one measurement attempt), Winner (the
fastest correct config of a kernel, dtype and shape) and Ceiling (a rate measured on the GPU).

Each dataclass is its table's schema: field order is column order, field types say how a
cell is written and read (results/SCHEMA.md documents every column; tests keep the two in
sync). One codec turns any of them into CSV cells and back, so every table is read with the
same checks. No torch, no triton: plots and reports run anywhere.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from dataclasses import dataclass, fields
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
# The baseline that is the PyTorch op a user would otherwise call (torch.matmul, torch.softmax,
# ...): `ops` uses tlab's kernel only where it measured faster than this one.
TORCH_OP = "torch"
# The baseline that is torch.compile's code for the op (spec.compile_baseline), by convention.
COMPILED = "compiled"

# The two throughput units; a kernel spec says which one its users judge it by.
TFLOPS = "TFLOP/s"
GBPS = "GB/s"
METRICS = (TFLOPS, GBPS)

# Dtype names as rows and users write them, and the other spellings accepted for them.
DTYPE_NAMES = ("fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2")
DTYPE_ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
                 "float8_e4m3fn": "fp8e4m3", "e4m3": "fp8e4m3", "float8_e5m2": "fp8e5m2",
                 "e5m2": "fp8e5m2"}


def dtype_name_of(text: str) -> str | None:
    """'BF16' or 'bfloat16' -> 'bf16'; None for anything that is not a dtype name."""
    key = text.strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    return key if key in DTYPE_NAMES else None


# Which pass of a sweep measured a row, in the order they run (contenders.py says why).
SWEEP = "sweep"  # the pass over the space (or what a search proposed): every config once
CONTEND = "contend"  # a contender of a short first pass, timed again with the full budget
CONFIRM = "confirm"  # a leader or baseline timed again in a fresh worker after its shape
PHASES = (SWEEP, CONTEND, CONFIRM)

# How the times of a row were taken ("" when the row was not timed).
DO_BENCH = "do_bench"  # triton.testing.do_bench: CUDA events, L2 flushed before every call
CUDAGRAPH = "cudagraph"  # the same calls replayed from a CUDA graph: no launch gaps (timing.py)
INTERPRETER = "interpreter"  # wall clock of Triton's CPU interpreter: not GPU numbers
# A first-pass row cut short: its first few calls, each timed by events, read far slower
# than the shape's leader, so its budget was not spent (timing.py, "the early cut").
CUT = "cut"
METHODS = ("", DO_BENCH, CUDAGRAPH, INTERPRETER, CUT)
# How near a recorded call's shape is to what is tuned (Called.tuned): at that very shape,
# near enough for ops to carry a tuned config there (dispatch.NEAR), nothing near (where a
# sweep of the shape has the most to give), a shape the kernel does not take (ops calls the
# PyTorch op; no sweep changes that), or a CPU tensor outside the interpreter (not decided).
HERE, NEARBY, UNTUNED, REFUSED, ON_CPU = "here", "near", "none", "refused", "cpu"
NEARNESS = (HERE, NEARBY, UNTUNED, REFUSED, ON_CPU)

# Columns whose cells must be one of these words.
VOCABULARY = {"status": STATUSES, "phase": PHASES, "method": METHODS, "metric": METRICS,
              "tuned": NEARNESS}


@dataclass(frozen=True)
class Record:
    """One measurement attempt: a baseline or a Triton config at one dtype and shape."""

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
    phase: str  # SWEEP, CONTEND or CONFIRM
    method: str  # DO_BENCH, INTERPRETER, or "" when not timed
    warmup_ms: int | None  # do_bench's budgets; None for the interpreter or when not timed
    rep_ms: int | None
    seed: int
    gpu: str  # device name, e.g. "NVIDIA H200", or "interpreter"
    gpu_slug: str
    driver: str
    cuda: str
    torch: str
    triton: str
    tlab: str  # tlab's version
    source: str  # hash of the kernel module's source: an edited kernel is measured again
    # Which device of the machine measured the row ("cuda:0", "cpu:1" for the interpreter's
    # stand-ins); empty in rows written before tlab recorded it (store.ADDED_COLUMNS).
    device: str = ""
    # With `--timing both`: each clock's median (p50_ms is the judged one, by `method`), and
    # "yes" when they differ by more than timing.DISAGREE ("no" when not, "" when one ran).
    events_p50_ms: float | None = None
    graph_p50_ms: float | None = None
    disagree: str = ""
    # Confirmations on a GPU: the host time of one call (timing.host_ms), what an eager
    # program waits for when it is longer than the GPU time (ops weighs both).
    host_ms: float | None = None

    @property
    def confirmed(self) -> bool:
        return self.phase == CONFIRM

    def key(self) -> tuple[str, ...]:
        return tuple(str(getattr(self, c)) for c in KEY_COLUMNS)

    def pruned_key(self) -> tuple[str, ...]:
        """GPU, kernel, dtype, shape, config and reason of a `skipped` row (plan.pruned_key)."""
        return (self.gpu_slug, self.kernel, self.dtype, self.shape, self.config, self.error)

    def toolchain(self) -> tuple[str, ...]:
        return tuple(getattr(self, c) for c in TOOLCHAIN_COLUMNS)


@dataclass(frozen=True)
class Winner:
    """The fastest correct Triton config of one kernel, dtype and shape on one GPU."""

    kernel: str
    dtype: str
    shape: str
    config: str
    p50_ms: float
    throughput: float
    metric: str
    method: str  # how p50_ms was timed (the Record's method and budgets)
    warmup_ms: int | None
    rep_ms: int | None
    best_baseline: str  # the fastest baseline at this shape ("" when none was timed ok)
    baseline_p50_ms: float | None
    baseline_throughput: float | None
    speedup: float | None  # baseline_p50_ms / p50_ms
    op_p50_ms: float | None  # the PyTorch op's (TORCH_OP baseline's) time at this shape
    gpu: str
    torch: str
    triton: str
    tlab: str
    source: str
    date: str  # of the winning row, YYYY-MM-DD
    run_id: str
    # The host time of one call of the winner and of the PyTorch op (their confirmations'
    # Record.host_ms); empty in configs written before tlab timed it.
    host_ms: float | None = None
    op_host_ms: float | None = None


@dataclass(frozen=True)
class Ceiling:
    """A rate measured on the GPU itself, that kernels are judged against."""

    name: str  # "copy", "copy_<N>MiB", "matmul_<dtype>"
    metric: str
    value: float
    p20_ms: float
    p50_ms: float
    p80_ms: float
    size: str  # bytes moved for a copy, MxNxK for a matmul
    method: str
    warmup_ms: int | None
    rep_ms: int | None
    gpu: str
    gpu_slug: str
    torch: str
    triton: str
    timestamp: str


@dataclass(frozen=True)
class HostTime:
    """The host's part of one call (timing.host_times) of a winner, or of the PyTorch op at
    its shape, timed by `tlab host-times` beside the other in one run (hosttimes.py)."""

    kernel: str
    dtype: str
    shape: str
    provider: str  # TRITON (config: the winner's) or TORCH_OP
    config: str
    host_ms: float
    calls: int  # calls enqueued back to back per round
    launch: str  # how tlab's kernel was launched: "triton" (JITFunction.run) or "fast"
    gpu: str
    gpu_slug: str
    torch: str
    triton: str
    tlab: str
    source: str  # the kernel source the winner was tuned on (Record.source)
    run_id: str
    timestamp: str


@dataclass(frozen=True)
class Carried:
    """Another GPU's winner timed on this one at the same shape, beside this GPU's own winner
    and the PyTorch op, in the same fresh workers (`tlab portability`): what carrying that
    GPU's configs file here would cost."""

    kernel: str
    dtype: str
    shape: str
    from_gpu: str  # slug of the GPU whose winner was carried here
    carried_config: str
    native_config: str  # this GPU's own winner at the shape
    status: str  # OK, or how the carried config failed here
    carried_ms: float | None  # the best of the rounds' medians
    native_ms: float | None
    op_ms: float | None
    rounds: int
    gpu: str
    gpu_slug: str
    capability: str  # this GPU's compute capability, e.g. "9.0"
    torch: str
    triton: str
    tlab: str
    source: str  # the kernel source both winners were tuned on
    run_id: str
    timestamp: str

    @property
    def regret(self) -> float | None:
        """The carried config's time over this GPU's own winner's (1.0: nothing lost)."""
        if self.status != OK or not self.carried_ms or not self.native_ms:
            return None
        return self.carried_ms / self.native_ms


@dataclass(frozen=True)
class Called:
    """A kernel, dtype and shape a program called `tritonbench_lab.ops` with, recorded at its
    first call while recording is on (ops.record_shapes, $TLAB_RECORD_SHAPES): what `tlab
    sweep --shapes-from` tunes."""

    kernel: str
    dtype: str
    shape: str  # sizes joined by "x", in the kernel's dims order
    gpu_slug: str  # the device the call ran on; "interpreter", or "cpu" outside it
    tuned: str  # NEARNESS: how near the tuned shapes of that GPU's configs this one is
    provider: str  # what ops called there eagerly: TRITON or TORCH_OP ("" on the CPU)
    timestamp: str  # UTC, ISO 8601


@dataclass(frozen=True)
class Trust:
    """Whether one GPU's configs of a kernel and dtype hold on another, by the standing
    portability rows (`Carried`) of that pair: what `ops` and `tuned.lookup` read on a GPU
    with no configs of its own for that kernel and dtype."""

    kernel: str
    dtype: str
    from_gpu: str
    gpu_slug: str  # the GPU the carried configs were timed on
    capability: str
    shapes: int  # shapes timed
    failed: int  # shapes where the carried config did not run correctly here
    median_regret: float | None
    worst_regret: float | None
    worst_shape: str
    trusted: bool  # no failure, and the worst regret within data.portability's tolerance
    triton: str
    date: str  # of the newest row it rests on


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Record))
WINNER_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Winner))
CEILING_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Ceiling))

# The code that measured a row; rows of different toolchains are never compared.
TOOLCHAIN_COLUMNS = ("torch", "triton", "tlab", "source")
# A row measured under the same values of these columns is not measured again on resume.
KEY_COLUMNS = ("gpu_slug", *TOOLCHAIN_COLUMNS, "kernel", "provider", "dtype", "shape", "config")


def triton_minor(version: str) -> str:
    """A Triton version's major.minor ("3.6.0" -> "3.6"): configs tuned under another minor
    version are stale (their times may not hold; `tlab check` says so)."""
    return ".".join(version.split(".")[:2])


# --- the codec: typed rows <-> CSV cells --------------------------------------------------

@functools.cache
def _kinds(cls: type) -> dict[str, tuple[type, bool]]:
    """field name -> (base type, may be None), from the annotations."""
    kinds = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = typing.get_args(hint)
        optional = isinstance(hint, types.UnionType) and type(None) in args
        base = next(a for a in args if a is not type(None)) if optional else hint
        kinds[name] = (base, optional)
    return kinds


# The one number of a row that may be infinite: the error of outputs that held NaN or inf
# (verify.py). Every other number of every table is a time, a rate or a ratio of them.
MAY_BE_INFINITE = ("max_abs_error",)


def not_a_measurement(name: str, value: float, text: str | None = None) -> str | None:
    """Why a float cell cannot be what was measured (NaN, infinite, negative), or None. Such
    a number is damage or a bug: read, it would reach the winners, configs, reports and the
    gate as if it were a time, so readers refuse it and writers never write it."""
    if value >= 0 and (value != math.inf or name in MAY_BE_INFINITE):
        return None
    return (f"{name} is {text if text is not None else repr(value)}: not a measurement "
            "(times and rates are finite numbers >= 0)")


def to_cells(row: Any) -> list[str]:
    """Cells of one row: floats with full precision (repr), None as empty, line breaks inside
    text turned into spaces, so that every row is exactly one line of its file (what lets a
    reader drop a torn last line after a kill). ValueError for a float that is not a
    measurement (not_a_measurement)."""
    out = []
    for f in fields(row):
        value = getattr(row, f.name)
        if value is None:
            out.append("")
        elif isinstance(value, float):
            why = not_a_measurement(f.name, value)
            if why:
                raise ValueError(f"{type(row).__name__} of {_row_name(row)}: {why}")
            out.append(repr(value))
        else:
            out.append(" ".join(str(value).splitlines()))
    return out


def _row_name(row: Any) -> str:
    """What a row is about, for an error: its kernel, provider, dtype, shape, config (or
    name), those it has."""
    return " ".join(str(getattr(row, n)) for n in ("kernel", "provider", "dtype", "shape",
                                                   "config", "name") if getattr(row, n, ""))


def from_cells(cls: type, values: dict[str, str]) -> Any:
    """Inverse of to_cells; ValueError naming the column on a malformed cell."""
    missing = next((name for name in _kinds(cls) if name not in values), None)
    if missing is not None:
        raise ValueError(f"missing column {missing}")
    return row_decoder(cls)([values[name] for name in _kinds(cls)])


_BOOLS = {"True": True, "False": False}


def _convert(name: str, base: type, optional: bool):
    def convert(text: str):
        if text == "" and optional:
            return None
        if base is bool:  # bool("False") is True: only the two words to_cells writes
            if text not in _BOOLS:
                raise ValueError(f"{name} is not True or False: {text!r}")
            return _BOOLS[text]
        try:
            value = base(text)
        except ValueError:
            raise ValueError(f"{name} is not {'an integer' if base is int else 'a number'}: "
                             f"{text!r}") from None
        why = not_a_measurement(name, value, text) if base is float else None
        if why:
            raise ValueError(why)
        return value
    return convert


_SHAPE = re.compile(r"[1-9][0-9]*(x[1-9][0-9]*)*")  # a stored shape: 4096x4096x1024


@functools.cache
def row_decoder(cls: type):
    """A function from a row's cells, in field order, to the row (from_cells without the
    column lookups: results files hold tens of thousands of rows, read on every sweep)."""
    kinds = _kinds(cls)
    # text columns pass through as they are; the others are converted one by one
    converters = [(i, _convert(name, base, optional))
                  for i, (name, (base, optional)) in enumerate(kinds.items()) if base is not str]
    vocabulary = [(i, name, values) for i, name in enumerate(kinds)
                  for key, values in VOCABULARY.items() if key == name]
    shapes = [i for i, name in enumerate(kinds) if name == "shape"]

    def decode(cells: list[str]) -> Any:
        cells = list(cells)
        for i, convert in converters:
            cells[i] = convert(cells[i])
        for i, name, values in vocabulary:
            if cells[i] not in values:
                raise ValueError(f"unknown {name} {cells[i]!r}")
        for i in shapes:
            if not _SHAPE.fullmatch(cells[i]):
                raise ValueError(f"shape {cells[i]!r} is not positive sizes joined by 'x'")
        return cls(*cells)

    return decode


def replace(row: Any, **changes: Any) -> Any:
    return dataclasses.replace(row, **changes)


# --- which rows stand ---------------------------------------------------------------------

def newest_toolchain(rows: list[Record]) -> list[Record]:
    """The rows measured under the toolchain of the newest row among them."""
    if not rows:
        return []
    newest = max(rows, key=lambda r: r.timestamp).toolchain()
    return [r for r in rows if r.toolchain() == newest]


def standing(rows: list[Record]) -> list[Record]:
    """The rows that speak for their configs (or baselines): for a resume key that has a
    confirmation, only its newest confirmation; else, when it has contend rows (a full-budget
    time after a short first pass), those; for any other key, all its rows.

    Why: a sweep's fastest config is the minimum of many noisy times, so its own time is
    biased low, and times move between processes; its confirmation, timed in another
    process after it was picked, is not chosen on its own noise. A first pass with a short
    budget only ranks; its contenders' full-budget times replace it. Order is kept."""
    rank = {SWEEP: 0, CONTEND: 1, CONFIRM: 2}
    best: dict[tuple[str, ...], int] = {}
    newest: dict[tuple[str, ...], Record] = {}
    for r in rows:
        key = r.key()
        best[key] = max(best.get(key, 0), rank[r.phase])
        if r.confirmed:
            newest[key] = r  # rows are in file order: the later of equal keys is newer
    return [r for r in rows if rank[r.phase] == best[r.key()]
            and newest.get(r.key(), r) is r]


def fastest(rows: list[Record]) -> Record | None:
    """The lowest-p50 of these (standing, timed) rows; among the confirmed ones when any is
    confirmed, so that a winner's time is one taken after it was chosen."""
    timed = [r for r in rows if r.p50_ms is not None]
    confirmed = [r for r in timed if r.confirmed]
    return min(confirmed or timed, key=lambda r: r.p50_ms, default=None)


def parse_config_text(text: str) -> dict[str, int]:
    """'BLOCK_M=128 num_warps=8' -> {'BLOCK_M': 128, 'num_warps': 8}; '' -> {}.
    ValueError on anything else."""
    config = {}
    for item in text.split():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"config item {item!r} is not NAME=integer")
        config[name] = int(value)
    return config
