"""`tlab check`: the CI gate on committed configs/<gpu>/<kernel>.csv files.

Everywhere: each file parses against the winners schema, names a known kernel, every row's
dtype, shape, numbers and config are valid, every config lies inside the kernel's space, the
file holds exactly the winners that the winner rule (winners.py) picks from the results file
beside it (when that file is there), and every distinct config computes the right result at
a small shape (in Triton's interpreter without a GPU). Rows tuned under another triton minor
version are reported as stale (a warning, not an error). On a GPU whose slug matches the
file's folder, each winner is timed again at its shape, with the budget its row was timed
with, in several fresh worker processes, and the best of their medians must not be slower
than recorded by more than the tolerance (retime says how short kernels are judged).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from tritonbench_lab.errors import TlabError
from tritonbench_lab.layout import Layout
from tritonbench_lab.records import (
    OK,
    TRITON,
    WINNER_COLUMNS,
    Winner,
    from_cells,
    parse_config_text,
    replace,
)
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.space import config_text
from tritonbench_lab.store import load_records, read_text
from tritonbench_lab.winners import pick_winners

ERROR = "error"
STALE = "stale"
# Winners recorded under this are also timed by the CUDA-graph clock in check (which judges
# those under timing.SHORT_KERNEL_MS); longer ones by events alone, at half the cost.
GRAPH_CHECK_BELOW_MS = 0.1


@dataclass(frozen=True)
class Problem:
    path: Path
    row: int  # 1-based line number in the file (1 is the header)
    severity: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.row}: {self.severity}: {self.reason}"


@dataclass(frozen=True)
class Retimed:
    line: int
    winner: Winner
    samples: tuple[float, ...]  # the judged p50 of each fresh worker that timed it
    status: str  # OK, or how the config failed to run

    @property
    def measured_ms(self) -> float | None:
        """The gate's statistic: the best of the fresh workers' medians."""
        return min(self.samples) if self.samples and self.status == OK else None

    @property
    def ratio(self) -> float | None:
        return None if self.measured_ms is None else self.measured_ms / self.winner.p50_ms

    @property
    def spread(self) -> float | None:
        """(slowest - fastest) / fastest of the medians: the noise the tolerance must cover."""
        if self.measured_ms is None or len(self.samples) < 2:
            return None
        return (max(self.samples) - self.measured_ms) / self.measured_ms


@dataclass
class FileReport:
    path: Path
    rows: list[tuple[int, Winner]] = field(default_factory=list)  # valid rows, by line
    problems: list[Problem] = field(default_factory=list)
    timed: list[Retimed] = field(default_factory=list)
    regrets: list = field(default_factory=list)  # regret.Regret


@dataclass
class CheckReport:
    files: list[FileReport]
    where: str  # "in Triton's interpreter" or "on <GPU>"

    @property
    def problems(self) -> list[Problem]:
        return [p for f in self.files for p in f.problems]

    @property
    def errors(self) -> int:
        return sum(p.severity == ERROR for p in self.problems)

    def summary(self) -> str:
        rows = sum(len(f.rows) for f in self.files)
        return (f"checked {len(self.files)} file(s), {rows} valid row(s), configs run "
                f"{self.where}: {self.errors} error(s), {len(self.problems) - self.errors} stale")


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def read_rows(path: Path) -> tuple[list[Problem], list[tuple[int, Winner]]]:
    """Each line of a winners file as a Winner, or a problem naming the line."""
    reader = csv.reader(io.StringIO(read_text(path)))
    header = next(reader, [])
    if tuple(header) != WINNER_COLUMNS:
        missing = [c for c in WINNER_COLUMNS if c not in header]
        extra = [c for c in header if c not in WINNER_COLUMNS]
        why = (f"columns do not match the winners schema (missing: {', '.join(missing) or 'none'}"
               f"; unexpected: {', '.join(extra) or 'none'})")
        return [Problem(path, 1, ERROR, why)], []
    problems, rows = [], []
    for number, values in enumerate(reader, start=2):
        try:
            if len(values) != len(WINNER_COLUMNS):
                raise ValueError(f"{len(values)} fields, expected {len(WINNER_COLUMNS)}")
            rows.append((number, from_cells(Winner, dict(zip(WINNER_COLUMNS, values, strict=True)))))
        except ValueError as err:
            problems.append(Problem(path, number, ERROR, str(err)))
    return problems, rows


def validate(path: Path, rows: list[tuple[int, Winner]], spec, triton_version: str
             ) -> tuple[list[Problem], list[tuple[int, Winner]]]:
    """Content problems; the valid rows with their configs completed (Space.added)."""
    from tritonbench_lab.spec import parse_dtype

    problems, valid = [], []
    for number, w in rows:
        found = []
        if w.kernel != spec.name:
            found.append(f"kernel {w.kernel!r} in the file of {spec.name!r}")
        try:
            if parse_dtype(w.dtype) not in spec.dtypes:
                found.append(f"{spec.name} does not support {w.dtype}")
        except TlabError as err:
            found.append(str(err))
        try:
            spec.check_shape(spec.shape(*shape_sizes(w.shape)))
        except (ValueError, TlabError) as err:
            found.append(f"bad shape {w.shape!r}: {err}")
        for name in ("p50_ms", "throughput", "baseline_p50_ms", "speedup"):
            value = getattr(w, name)
            if value is not None and not value > 0:
                found.append(f"{name} is not a positive number: {value!r}")
        try:
            config = spec.space.complete(parse_config_text(w.config))
            outside = spec.space.outside(config)
            if outside:
                found.append(f"config {w.config!r} is outside the {spec.name} space: {outside}")
        except ValueError:
            found.append(f"config {w.config!r} does not parse")
        problems += [Problem(path, number, ERROR, reason) for reason in found]
        if not found:
            valid.append((number, replace(w, config=config_text(config))))
    stale: dict[str, list[int]] = {}  # one line per file and version, not one per row
    for number, w in valid:
        if _minor(w.triton) != _minor(triton_version):
            stale.setdefault(w.triton, []).append(number)
    for version, lines in stale.items():
        span = f"{lines[0]}-{lines[-1]}" if lines == list(range(lines[0], lines[-1] + 1)) \
            else ", ".join(map(str, lines))
        problems.append(Problem(path, lines[0], STALE, f"{len(lines)} row(s) (lines {span}) "
                                f"tuned under triton {version}, this is {triton_version}: re-tune"))
    return problems, valid


def against_results(path: Path, rows: list[tuple[int, Winner]], results: Path) -> list[Problem]:
    """The file must hold what the winner rule picks from the results beside it."""
    if not results.is_file():
        return []
    picked = {(w.dtype, w.shape): w.config for w in pick_winners(load_records(results))}
    held = {(w.dtype, w.shape): (n, w.config) for n, w in rows}
    redo = f"re-run `tlab sweep {path.stem}` to rewrite it from {results}"
    problems = []
    for (dtype, shape), (number, config) in held.items():
        if (dtype, shape) not in picked:
            problems.append(Problem(path, number, ERROR, f"{dtype} {shape} has no winner in "
                                    f"{results}; {redo}"))
        elif parse_config_text(picked[(dtype, shape)]) != parse_config_text(config):
            problems.append(Problem(path, number, ERROR, f"{dtype} {shape}: the results pick "
                                    f"{picked[(dtype, shape)]!r}; {redo}"))
    missing = sorted(set(picked) - set(held))
    if missing:
        problems.append(Problem(path, 1, ERROR, f"no row for {len(missing)} winner(s) in "
                                f"{results} (e.g. {' '.join(missing[0])}); {redo}"))
    return problems


def run_configs(path: Path, rows: list[tuple[int, Winner]], device: str) -> list[Problem]:
    """Each distinct config must compute the right result at the kernel's first small shape,
    in the row's dtype, or (where the interpreter cannot run that dtype) in another one."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.spec import dtype_name, parse_dtype
    from tritonbench_lab.verify import check, poison

    problems, seen = [], set()
    for number, w in rows:
        spec = get_spec(w.kernel)
        dtype = parse_dtype(w.dtype)
        if device == "cpu" and spec.interpreter_refusal(dtype):
            dtype = next(d for d in spec.dtypes if spec.interpreter_refusal(d) is None)
        if (w.config, dtype) in seen:
            continue
        seen.add((w.config, dtype))
        shape = spec.small_shapes[0]
        inputs = spec.make_inputs(shape, dtype, device, seed=0)
        outputs = poison(spec.allocate_outputs(inputs))
        try:
            spec.launch(inputs, parse_config_text(w.config), outputs)
            verdict = check(outputs, spec.reference(inputs), spec.tolerance[dtype])
            reason = None if verdict.ok else verdict.detail
        except Exception as err:  # a config that cannot run is what this gate is for
            reason = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
        if reason:
            problems.append(Problem(path, number, ERROR, f"config {w.config!r} fails at {shape} "
                                    f"{dtype_name(dtype)}: {reason}"))
    return problems


def retime(path: Path, rows: list[tuple[int, Winner]], tolerance: float,
           kernel_modules: tuple[str, ...] = (), repeats: int = 3, interpret: bool = False
           ) -> tuple[list[Retimed], list[Problem]]:
    """Time each winner again on this GPU the way the sweep timed it (its row's budget, the
    sweep's worker with the user's kernel modules, the same seeded inputs), with both clocks
    where the kernel may be short (GRAPH_CHECK_BELOW_MS), so that a kernel under 20 us is
    judged on its CUDA-graph time (timing.judge) and launch overhead cannot pass for a
    regression. Each pass runs in a fresh worker process: two
    time every winner, up to `repeats` re-time those still slower than allowed; a winner
    fails when the best of its medians is slower than recorded by more than `tolerance`.
    The spread of the medians is reported beside it. (`interpret`: in Triton's interpreter,
    for tests: its wall-clock times say nothing about a GPU.)"""
    from tritonbench_lab.records import CUDAGRAPH
    from tritonbench_lab.timing import BenchOptions
    from tritonbench_lab.worker import Task, Timeouts, Worker

    samples: dict[int, list[float]] = {number: [] for number, _ in rows}
    failed: dict[int, str] = {}
    for attempt in range(max(1, repeats)):
        # Two passes give every winner a spread; later ones only re-time the slow.
        todo = [(n, w) for n, w in rows if n not in failed and (
            attempt < 2 or min(samples[n]) > w.p50_ms * (1 + tolerance))]
        if not todo:
            break
        worker = Worker(interpret, kernel_modules)
        try:
            for number, w in todo:
                # The graph clock only where it can judge (a short kernel): it doubles the time.
                short = w.method == CUDAGRAPH or w.p50_ms < GRAPH_CHECK_BELOW_MS
                bench = BenchOptions(warmup_ms=w.warmup_ms or BenchOptions.warmup_ms,
                                     rep_ms=w.rep_ms or BenchOptions.rep_ms,
                                     timing="both" if short else "events")
                task = Task(w.kernel, TRITON, shape_sizes(w.shape), w.dtype,
                            parse_config_text(w.config), 0, bench)
                outcome = worker.run(task, Timeouts())
                if outcome.status == OK:
                    samples[number].append(outcome.p50_ms)
                else:
                    failed[number] = outcome.status
        finally:
            worker.stop()
    results, problems = [], []
    for number, w in rows:
        item = Retimed(number, w, tuple(samples[number]), failed.get(number, OK))
        results.append(item)
        if item.status != OK:
            problems.append(Problem(path, number, ERROR, f"winner now fails: {item.status}"))
        elif item.ratio > 1 + tolerance:
            problems.append(Problem(
                path, number, ERROR, f"{item.ratio:.2f}x slower than recorded "
                f"({item.measured_ms:.4g} ms vs {w.p50_ms:.4g} ms: the best of "
                f"{len(item.samples)} fresh workers, spread {100 * (item.spread or 0):.1f}%; "
                f"tolerance {tolerance:.0%})"))
    return results, problems


def run_check(layout: Layout, *, backend: str, fingerprint, kernels: list[str] | None = None,
              dtypes: list[str] | None = None, tolerance: float = 0.10, timing: bool = True,
              regret: bool = False, kernel_modules: tuple[str, ...] = (),
              repeats: int = 3) -> CheckReport:
    """Check every configs file under `layout` (or those of `kernels`), rows of `dtypes`."""
    from tritonbench_lab.env import INTERPRETER
    from tritonbench_lab.kernels import get_spec

    files = layout.config_files(kernels)
    if not files:
        which = f" for kernel(s) {', '.join(kernels)}" if kernels else ""
        raise TlabError(f"no config files under {str(layout.configs)!r}{which}")
    device = "cpu" if backend == INTERPRETER else "cuda"
    reports = []
    for path in files:
        report = FileReport(path)
        reports.append(report)
        report.problems, rows = read_rows(path)
        if not rows and any(p.row == 1 for p in report.problems):
            continue  # the header is wrong: nothing else can be read
        try:
            spec = get_spec(path.stem)
        except TlabError as err:
            report.problems.append(Problem(path, 1, ERROR, str(err)))
            continue
        found, valid = validate(path, rows, spec, fingerprint.triton)
        report.problems += found
        report.problems += against_results(
            path, rows, layout.results_file(path.parent.name, path.stem))
        report.rows = [(n, w) for n, w in valid if not dtypes or w.dtype in dtypes]
        report.problems += run_configs(path, report.rows, device)
        mine = path.parent.name == fingerprint.gpu_slug
        if timing and device == "cuda" and mine:
            report.timed, slow = retime(path, report.rows, tolerance, kernel_modules, repeats)
            report.problems += slow
        if regret and mine and report.rows:
            from tritonbench_lab.regret import regret_of_file

            report.regrets = regret_of_file(layout, path, report.rows, kernel_modules)
    where = "in Triton's interpreter" if device == "cpu" else f"on {fingerprint.gpu}"
    return CheckReport(reports, where)
