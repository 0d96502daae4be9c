"""`tlab check`: the CI gate on committed configs/<gpu>/<kernel>.csv files.

Everywhere: each file parses against the winners schema, names a known kernel, every row's
dtype, shape, numbers and config are valid, every config lies inside the kernel's space, and
every distinct config computes the right result at a small shape (in Triton's interpreter
without a GPU). Rows tuned under another triton minor version are reported as stale
(a warning, not an error). On a GPU whose slug matches the file's folder, each winner is
timed again at its shape and must not be slower than recorded by more than the tolerance
(re-measured before it fails, so noise alone does not fail CI), with the do_bench budget it
was recorded with (the `timing` of its row in results/<gpu>/<kernel>.csv): on the H200 a
winner timed for 50 ms by its sweep measured up to 13% slower timed for 100 ms.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.errors import TlabError
from tritonbench_lab.records import parse_config_text
from tritonbench_lab.space import config_text
from tritonbench_lab.tuned import WINNER_COLUMNS

ERROR = "error"
STALE = "stale"
NUMBER_COLUMNS = ("p50_ms", "throughput")
OPTIONAL_NUMBER_COLUMNS = ("baseline_throughput", "speedup")


@dataclass(frozen=True)
class Problem:
    path: Path
    row: int  # 1-based line number in the file (1 is the header)
    severity: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.row}: {self.severity}: {self.reason}"


def config_files(config_root: Path, kernels: list[str] | None = None) -> list[Path]:
    """configs/<gpu>/<kernel>.csv, every kernel's or only those of `kernels`."""
    files = sorted(Path(config_root).glob("*/*.csv"))
    if kernels:
        files = [f for f in files if f.stem in kernels]
    if not files:
        which = f" for kernel(s) {', '.join(kernels)}" if kernels else ""
        raise TlabError(f"no config files under {str(config_root)!r}{which}")
    return files


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def check_rows(path: Path, triton_version: str) -> tuple[list[Problem], list[dict]]:
    """Schema and content problems of one file, and its valid rows (for the runs)."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.spec import parse_dtype

    def problem(row: int, reason: str, severity: str = ERROR) -> Problem:
        return Problem(path, row, severity, reason)

    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        lines = list(reader)
    if tuple(header) != WINNER_COLUMNS:
        missing = [c for c in WINNER_COLUMNS if c not in header]
        extra = [c for c in header if c not in WINNER_COLUMNS]
        return [problem(1, "columns do not match the winners schema (missing: "
                           f"{', '.join(missing) or 'none'}; "
                           f"unexpected: {', '.join(extra) or 'none'})")], []
    try:
        spec = get_spec(path.stem)
    except TlabError as err:
        return [problem(1, str(err))], []
    problems, valid = [], []
    for number, values in enumerate(lines, start=2):
        if len(values) != len(WINNER_COLUMNS):
            problems.append(problem(number, f"{len(values)} fields, expected {len(WINNER_COLUMNS)}"))
            continue
        row = dict(zip(WINNER_COLUMNS, values, strict=True))
        before = len(problems)
        if row["kernel"] != spec.name:
            problems.append(problem(number, f"kernel {row['kernel']!r} in the file of {spec.name!r}"))
        try:
            dtype = parse_dtype(row["dtype"])
            if dtype not in spec.dtypes:
                problems.append(problem(number, f"{spec.name} does not support {row['dtype']}"))
        except TlabError as err:
            problems.append(problem(number, str(err)))
        try:
            sizes = tuple(int(s) for s in row["shape"].split("x"))
            spec.check_shape(spec.shape(*sizes))
        except (ValueError, TlabError) as err:
            problems.append(problem(number, f"bad shape {row['shape']!r}: {err}"))
        for column in NUMBER_COLUMNS + OPTIONAL_NUMBER_COLUMNS:
            text = row[column]
            if text == "" and column in OPTIONAL_NUMBER_COLUMNS:
                continue
            try:
                if not float(text) > 0:
                    raise ValueError
            except ValueError:
                problems.append(problem(number, f"{column} is not a positive number: {text!r}"))
        try:
            config = spec.space.complete(parse_config_text(row["config"]))
            outside = spec.space.outside(config)
            if outside:
                problems.append(problem(number, f"config {row['config']!r} is outside the "
                                                f"{spec.name} space: {outside}"))
        except ValueError:
            problems.append(problem(number, f"config {row['config']!r} does not parse"))
        if len(problems) == before:
            # Runs and re-timings launch the completed config (see Space.added).
            valid.append({**row, "config": config_text(config), "line": number})
    # Stale rows: one line per file and version, not one per row.
    stale: dict[str, list[int]] = {}
    for row in valid:
        if _minor(row["triton"]) != _minor(triton_version):
            stale.setdefault(row["triton"], []).append(row["line"])
    for version, lines in stale.items():
        problems.append(problem(lines[0], f"{len(lines)} row(s) (lines {_spans(lines)}) tuned "
                                          f"under triton {version}, this is {triton_version}: "
                                          "re-tune", STALE))
    return problems, valid


def _spans(lines: list[int]) -> str:
    return f"{lines[0]}-{lines[-1]}" if lines == list(range(lines[0], lines[-1] + 1)) \
        else ", ".join(map(str, lines))


def run_configs(path: Path, rows: list[dict], device: str) -> list[Problem]:
    """Each distinct config must compute the right result at the kernel's first small shape,
    in the row's dtype, or (where the interpreter cannot run that dtype) in another one."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.spec import dtype_name, parse_dtype
    from tritonbench_lab.verify import check, poison

    problems, seen = [], set()
    for row in rows:
        spec = get_spec(row["kernel"])
        dtype = parse_dtype(row["dtype"])
        if device == "cpu" and spec.interpreter_refusal(dtype):
            dtype = next(d for d in spec.dtypes if spec.interpreter_refusal(d) is None)
        key = (row["config"], dtype)
        if key in seen:
            continue
        seen.add(key)
        shape = spec.small_shapes[0]
        inputs = spec.make_inputs(shape, dtype, device, seed=0)
        outputs = poison(spec.allocate_outputs(inputs))
        try:
            spec.launch(inputs, parse_config_text(row["config"]), outputs)
            verdict = check(outputs, spec.reference(inputs), spec.tolerance[dtype])
            reason = None if verdict.ok else verdict.detail
        except Exception as err:  # a config that cannot run is what this gate is for
            reason = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
        if reason:
            problems.append(Problem(path, row["line"], ERROR, f"config {row['config']!r} fails "
                                    f"at {shape} {dtype_name(dtype)}: {reason}"))
    return problems


@dataclass(frozen=True)
class Retimed:
    line: int
    kernel: str
    dtype: str
    shape: str
    config: str
    recorded_ms: float
    measured_ms: float | None  # best of the attempts; None when the config failed to run
    status: str

    @property
    def ratio(self) -> float | None:
        return None if self.measured_ms is None else self.measured_ms / self.recorded_ms


def recorded_budgets(path: Path) -> dict:
    """(run_id, dtype, shape, config) -> the BenchOptions its row in the results file beside
    configs/ (results/<gpu>/<kernel>.csv) was timed with; empty without that file."""
    from tritonbench_lab.store import load_records
    from tritonbench_lab.timing import BenchOptions

    results = path.parents[2] / "results" / path.parent.name / path.name
    budgets = {}
    for r in load_records(results) if results.is_file() else []:
        bench = BenchOptions.of_method(r.timing)
        if bench and r.p50_ms:
            budgets[(r.run_id, r.dtype, r.shape, r.config)] = bench
    return budgets


def retime(path: Path, rows: list[dict], tolerance: float,
           attempts: int = 3) -> tuple[list[Retimed], list[Problem]]:
    """Time each winner again on this GPU, for as long as it was timed when recorded (tlab's
    default when its row is not found); a winner slower than recorded by more than `tolerance`
    is measured up to `attempts` times (best kept) before it counts as a problem."""
    from tritonbench_lab.records import OK, TRITON
    from tritonbench_lab.timing import BenchOptions
    from tritonbench_lab.worker import Task, Timeouts, Worker

    budgets = recorded_budgets(path)
    workers: dict = {}  # one per do_bench budget
    results, problems = [], []
    try:
        for row in rows:
            bench = budgets.get((row["run_id"], row["dtype"], row["shape"], row["config"]),
                                BenchOptions())
            worker = workers.setdefault(bench, Worker(interpret=False, bench=bench))
            task = Task(row["kernel"], TRITON, tuple(int(s) for s in row["shape"].split("x")),
                        row["dtype"], parse_config_text(row["config"]), 0)
            recorded = float(row["p50_ms"])
            best, status = None, OK
            for _ in range(attempts):
                outcome = worker.run(task, Timeouts())
                if outcome.status != OK:
                    best, status = None, outcome.status
                    break
                best = outcome.p50_ms if best is None else min(best, outcome.p50_ms)
                if best <= recorded * (1 + tolerance):
                    break
            item = Retimed(row["line"], row["kernel"], row["dtype"], row["shape"],
                           row["config"], recorded, best, status)
            results.append(item)
            if status != OK:
                problems.append(Problem(path, row["line"], ERROR, f"winner now fails: {status}"))
            elif item.ratio > 1 + tolerance:
                problems.append(Problem(path, row["line"], ERROR,
                                        f"{item.ratio:.2f}x slower than recorded "
                                        f"({best:.4g} ms vs {recorded:.4g} ms, tolerance "
                                        f"{tolerance:.0%}, best of {attempts})"))
    finally:
        for worker in workers.values():
            worker.stop()
    return results, problems
