"""`tlab check`: the CI gate on committed configs/<gpu>/<kernel>.csv files.

Everywhere: each file parses against the winners schema, names a known kernel, every row's
dtype, shape, numbers and config are valid, every config lies inside the kernel's space, the
file holds exactly the winners that the winner rule (winners.py) picks from the results file
beside it (when that file is there), and every distinct config computes the right result at
a small shape (in Triton's interpreter without a GPU). Rows tuned under another triton minor
version, or on another source of the kernel's module (its `source` hash: a sweep would
measure their shapes again), are reported as stale (a warning, not an error). On a GPU whose
slug matches the file's folder, each winner is timed again at its shape, with the budget its
row was timed with, in several fresh worker processes, and the best of their medians must
not be slower than recorded by more than the tolerance, relative to the PyTorch op where the
row recorded it, and by more than retime.NOISE_FLOOR_MS (retime.py says how, and how short
kernels are judged).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from tritonbench_lab.data.layout import Layout, host_times_beside
from tritonbench_lab.data.records import (
    WINNER_COLUMNS,
    Winner,
    from_cells,
    parse_config_text,
    replace,
    triton_minor,
)
from tritonbench_lab.data.store import ADDED_COLUMNS, older_layout, read_text
from tritonbench_lab.data.winners import winners_from_files
from tritonbench_lab.errors import TlabError
from tritonbench_lab.gates.regret import regret_of_file
from tritonbench_lab.gates.retime import retime
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.measure.env import INTERPRETER, free_device_bytes
from tritonbench_lab.measure.plan import job_footprint, pool_memory_budget
from tritonbench_lab.measure.precompile import Job, default_jobs, precompile
from tritonbench_lab.measure.source import source_hash
from tritonbench_lab.measure.verify import check, poison
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.space import config_text
from tritonbench_lab.spec import dtype_name, parse_dtype

ERROR = "error"
STALE = "stale"


@dataclass(frozen=True)
class Problem:
    path: Path
    row: int  # 1-based line number in the file (1 is the header)
    severity: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.row}: {self.severity}: {self.reason}"


@dataclass
class FileReport:
    path: Path
    rows: list[tuple[int, Winner]] = field(default_factory=list)  # valid rows, by line
    problems: list[Problem] = field(default_factory=list)
    timed: list = field(default_factory=list)  # retime.Retimed
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


def read_rows(path: Path) -> tuple[list[Problem], list[tuple[int, Winner]]]:
    """Each line of a winners file as a Winner, or a problem naming the line."""
    reader = csv.reader(io.StringIO(read_text(path)))
    header = next(reader, [])
    added = older_layout(Winner, header)  # the cells of columns added since, if any
    if added is None:
        missing = [c for c in WINNER_COLUMNS if c not in header and c not in ADDED_COLUMNS[Winner]]
        extra = [c for c in header if c not in WINNER_COLUMNS]
        why = (f"columns do not match the winners schema (missing: {', '.join(missing) or 'none'}"
               f"; unexpected: {', '.join(extra) or 'none'})")
        return [Problem(path, 1, ERROR, why)], []
    problems, rows = [], []
    for number, values in enumerate(reader, start=2):
        try:
            if len(values) != len(header):
                raise ValueError(f"{len(values)} fields, expected {len(header)}")
            cells = dict(zip(header, values, strict=True)) | added
            rows.append((number, from_cells(Winner, cells)))
        except ValueError as err:
            problems.append(Problem(path, number, ERROR, str(err)))
    return problems, rows


def validate(path: Path, rows: list[tuple[int, Winner]], spec, triton_version: str
             ) -> tuple[list[Problem], list[tuple[int, Winner]]]:
    """Content problems; the valid rows with their configs completed (Space.added)."""
    problems, valid = [], []
    for number, w in rows:
        found = _identity_problems(w, spec) + _number_problems(w)
        config, wrong = _config_problems(w, spec)
        found += wrong
        problems += [Problem(path, number, ERROR, reason) for reason in found]
        if not found:
            valid.append((number, replace(w, config=config_text(config))))
    problems += _stale_triton(path, valid, triton_version)
    problems += _stale_source(path, valid, spec)
    return problems, valid


def _identity_problems(w: Winner, spec) -> list[str]:
    """What is wrong with the row's kernel, dtype and shape for `spec`."""
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
    return found


def _number_problems(w: Winner) -> list[str]:
    """The row's measured numbers that are given but not positive."""
    found = []
    for name in ("p50_ms", "throughput", "baseline_p50_ms", "speedup"):
        value = getattr(w, name)
        if value is not None and not value > 0:
            found.append(f"{name} is not a positive number: {value!r}")
    return found


def _config_problems(w: Winner, spec) -> tuple[dict | None, list[str]]:
    """The row's config completed (Space.added), and what is wrong with it: it does not
    parse, or it lies outside the kernel's space."""
    try:
        config = spec.space.complete(parse_config_text(w.config))
        outside = spec.space.outside(config)
    except ValueError:
        return None, [f"config {w.config!r} does not parse"]
    if outside:
        return config, [f"config {w.config!r} is outside the {spec.name} space: {outside}"]
    return config, []


def _stale_triton(path: Path, valid: list[tuple[int, Winner]], triton_version: str
                  ) -> list[Problem]:
    """Rows tuned under another triton minor version: one line per file and version, not
    one per row."""
    stale: dict[str, list[int]] = {}
    for number, w in valid:
        if triton_minor(w.triton) != triton_minor(triton_version):
            stale.setdefault(w.triton, []).append(number)
    return [Problem(path, lines[0], STALE, f"{_rows(lines)} tuned under triton {version}, "
                    f"this is {triton_version}: re-tune") for version, lines in stale.items()]


def _stale_source(path: Path, valid: list[tuple[int, Winner]], spec) -> list[Problem]:
    """Rows of another source of the kernel's module: winners still, but a sweep would
    measure their shapes again (resume keeps only rows of the code as it is)."""
    current, sources = source_hash(spec), {}
    for number, w in valid:
        if w.source and current != "unknown" and w.source != current:
            sources.setdefault(w.source, []).append(number)
    return [Problem(path, lines[0], STALE, f"{_rows(lines)} tuned on another source of "
                    f"{spec.name}'s module ({source}, this is {current}): re-tune")
            for source, lines in sources.items()]


def _rows(lines: list[int]) -> str:
    """'3 row(s) (lines 2-4)', the lines listed where they are not consecutive, '(line 3)'."""
    if len(lines) == 1:
        return f"1 row(s) (line {lines[0]})"
    span = f"{lines[0]}-{lines[-1]}" if lines == list(range(lines[0], lines[-1] + 1)) \
        else ", ".join(map(str, lines))
    return f"{len(lines)} row(s) (lines {span})"


def against_results(path: Path, rows: list[tuple[int, Winner]], results: Path) -> list[Problem]:
    """The file must hold what the winner rule picks from the results beside it (and their
    host-times file: a winner's host times must be backed by rows, winners.py rule 7)."""
    if not results.is_file():
        return []
    winners = {(w.dtype, w.shape): w for w in winners_from_files(results)[1]}
    held = {(w.dtype, w.shape): (n, w) for n, w in rows}
    redo = f"re-run `tlab sweep {path.stem}` to rewrite it from {results}"
    problems = []
    for (dtype, shape), (number, mine) in held.items():
        picked = winners.get((dtype, shape))
        if picked is None:
            problems.append(Problem(path, number, ERROR, f"{dtype} {shape} has no winner in "
                                    f"{results}; {redo}"))
        elif parse_config_text(picked.config) != parse_config_text(mine.config):
            problems.append(Problem(path, number, ERROR, f"{dtype} {shape}: the results pick "
                                    f"{picked.config!r}; {redo}"))
        elif (mine.host_ms, mine.op_host_ms) != (picked.host_ms, picked.op_host_ms):
            problems.append(Problem(path, number, ERROR, f"{dtype} {shape}: host times "
                                    f"{mine.host_ms}, {mine.op_host_ms} ms where the results "
                                    f"and {host_times_beside(results)} give {picked.host_ms}, "
                                    f"{picked.op_host_ms}; commit that file with the configs, "
                                    "or run `tlab host-times` again"))
    missing = sorted(set(winners) - set(held))
    if missing:
        problems.append(Problem(path, 1, ERROR, f"no row for {len(missing)} winner(s) in "
                                f"{results} (e.g. {' '.join(missing[0])}); {redo}"))
    return problems


def verify_shape(spec, config):
    """The small shape a committed config is run at: of the kernel's small shapes, the one
    its interpreter estimate says is cheapest under that config (else the first). A softmax
    config tuned for million-column rows shares each row among 128 programs: 9,472
    interpreted programs at 37 rows (a minute), 512 at 2."""
    if spec.interpreter_seconds is None:
        return spec.small_shapes[0]
    config = spec.space.complete(config)  # (rows tuned before a parameter was added)
    return min(spec.small_shapes, key=lambda shape: spec.interpreter_seconds(shape, config))


def run_configs(path: Path, rows: list[tuple[int, Winner]], device: str,
                ran: dict | None = None) -> list[Problem]:
    """Each distinct config must compute the right result at a small shape (verify_shape),
    in the row's dtype, or (where the interpreter cannot run that dtype) in another one.
    `ran` holds the verdicts of configs already run (by kernel, config and dtype), so that
    a config two GPUs' files share runs once; each file still reports its own first row."""

    problems, seen = [], set()
    ran = {} if ran is None else ran
    for number, w in rows:
        spec = get_spec(w.kernel)
        dtype = parse_dtype(w.dtype)
        if device == "cpu" and spec.interpreter_refusal(dtype):
            dtype = next(d for d in spec.dtypes if spec.interpreter_refusal(d) is None)
        if (w.config, dtype) in seen:
            continue
        seen.add((w.config, dtype))
        key = (w.kernel, w.config, dtype)
        if key not in ran:
            ran[key] = run_config(spec, parse_config_text(w.config), dtype, device)
        shape, reason = ran[key]
        if reason:
            problems.append(Problem(path, number, ERROR, f"config {w.config!r} fails at {shape} "
                                    f"{dtype_name(dtype)}: {reason}"))
    return problems


def run_config(spec, config: dict, dtype, device: str):
    """(the small shape, why the config's output there is wrong or None)."""
    shape = verify_shape(spec, config)
    inputs = spec.make_inputs(shape, dtype, device, seed=0)
    outputs = poison(spec.allocate_outputs(inputs))
    try:
        spec.launch(inputs, config, outputs)
        verdict = check(outputs, spec.reference(inputs), spec.tolerance[dtype])
        return shape, None if verdict.ok else verdict.detail
    except Exception as err:  # a config that cannot run is what this gate is for
        return shape, f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"


def run_check(layout: Layout, *, backend: str, fingerprint, kernels: list[str] | None = None,
              dtypes: list[str] | None = None, tolerance: float = 0.10, timing: bool = True,
              regret: bool = False, kernel_modules: tuple[str, ...] = (),
              repeats: int = 4, gpu: str | None = None) -> CheckReport:
    """Check every configs file under `layout` (or those of `kernels`, of the GPU folder
    `gpu`), rows of `dtypes`."""

    files = _files_to_check(layout, kernels, gpu)
    device = "cpu" if backend == INTERPRETER else "cuda"
    if device == "cuda":
        compile_ahead(files, kernel_modules, timed_gpu=fingerprint.gpu_slug if timing else None)
    reports, ran = [], {}
    for path in files:
        report = check_file(layout, path, device, fingerprint.triton, dtypes, ran)
        reports.append(report)
        mine = path.parent.name == fingerprint.gpu_slug
        if regret and mine and report.rows:
            report.regrets = regret_of_file(layout, path, report.rows, kernel_modules)
    if timing and device == "cuda":
        _retime_reports([r for r in reports if r.path.parent.name == fingerprint.gpu_slug],
                        tolerance, kernel_modules, repeats)
    where = "in Triton's interpreter" if device == "cpu" else f"on {fingerprint.gpu}"
    return CheckReport(reports, where)


def _files_to_check(layout: Layout, kernels: list[str] | None, gpu: str | None) -> list[Path]:
    """The configs files of `kernels` (all when None) in the folder of `gpu` (all when None);
    none is a TlabError naming where it looked."""
    files = layout.config_files(kernels)
    which = f" for kernel(s) {', '.join(kernels)}" if kernels else ""
    if gpu and files:
        folders = sorted({f.parent.name for f in files})
        files = [f for f in files if f.parent.name == gpu]
        if not files:
            raise TlabError(f"no config files of {gpu!r} under {str(layout.configs)!r}{which}; "
                            f"folders with them: {', '.join(folders)}")
    if not files:
        having = sorted({f.stem for f in layout.config_files()})
        hint = f"; kernels with configs there: {', '.join(having)}" if kernels and having else ""
        raise TlabError(f"no config files under {str(layout.configs)!r}{which}{hint}")
    return files


def check_file(layout: Layout, path: Path, device: str, triton_version: str,
               dtypes: list[str] | None, ran: dict | None = None) -> FileReport:
    """Everything the gate checks in one file but the timing: its rows parse, their content
    is valid, they are what the results beside it pick, and their configs run (at a small
    shape, on `device`). The report's rows are its valid rows of `dtypes` (all when None)."""
    report = FileReport(path)
    report.problems, rows = read_rows(path)
    if not rows and any(p.row == 1 for p in report.problems):
        return report  # the header is wrong: nothing else can be read
    try:
        spec = get_spec(path.stem)
    except TlabError as err:
        report.problems.append(Problem(path, 1, ERROR, str(err)))
        return report
    found, valid = validate(path, rows, spec, triton_version)
    report.problems += found
    report.problems += against_results(
        path, rows, layout.results_file(path.parent.name, path.stem))
    report.rows = [(n, w) for n, w in valid if not dtypes or w.dtype in dtypes]
    report.problems += run_configs(path, report.rows, device, ran)
    return report


def _retime_reports(reports: list[FileReport], tolerance: float,
                    kernel_modules: tuple[str, ...], repeats: int) -> None:
    """Time the rows of these files (this GPU's) again (retime.py); each report gets its
    times, and an error for each winner slower than recorded beyond the tolerance."""
    timed = retime([(r.path, n, w) for r in reports for n, w in r.rows], tolerance,
                   kernel_modules, repeats)
    for report in reports:
        report.timed = [t for t in timed if t.path == report.path]
        report.problems += [Problem(t.path, t.line, ERROR, t.failure(tolerance))
                            for t in report.timed if t.failure(tolerance)]


def compile_ahead(files: list[Path], kernel_modules: tuple[str, ...],
                  timed_gpu: str | None) -> None:
    """Compile every config the check will run (at the small shape, and at the winner's own
    shape in the files of `timed_gpu`, which it times) in a pool of processes, as a sweep
    does, so that a cold Triton cache costs seconds, not a minute of compiles one after
    another (which can run a first check on a fresh machine out of time)."""

    jobs = []
    for path in files:
        _, rows = read_rows(path)
        try:
            spec = get_spec(path.stem)
        except TlabError:
            continue  # reported by the check itself
        for _, w in rows:
            try:
                config = parse_config_text(w.config)
            except ValueError:
                continue  # reported by the check itself
            jobs.append(Job(w.kernel, tuple(verify_shape(spec, config).sizes), w.dtype, 0, config))
            if path.parent.name == timed_gpu:
                jobs.append(Job(w.kernel, shape_sizes(w.shape), w.dtype, 0, config))
    precompile(jobs, processes=default_jobs(), kernel_modules=kernel_modules,
               memory_budget=pool_memory_budget(free_device_bytes("cuda")),
               footprint_of=job_footprint)
