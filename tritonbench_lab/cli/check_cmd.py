"""`tlab check`: the CI gate on committed configs (exit 1 when any is broken or slow)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.options import Interpret


def check(
    root: Annotated[Path, typer.Option("--root", help="Folder holding configs/.")] = Path("."),
    tolerance: Annotated[float, typer.Option(
        "--tolerance", min=0.0, help="On a matching GPU: how much slower than recorded a "
        "winner may time (0.10 = 10%) before the check fails.")] = 0.10,
    timing: Annotated[bool, typer.Option(
        "--timing/--no-timing", help="On a GPU that matches a file's folder, time its winners "
        "again (default) or only check them.")] = True,
    interpret: Interpret = None,
) -> None:
    """Check every configs/<gpu>/<kernel>.csv: schema, known kernel, configs inside the
    space and correct at a small shape; on the matching GPU, not slower than recorded."""
    from tritonbench_lab.env import INTERPRETER, choose_backend, fingerprint

    backend = choose_backend(interpret)
    from tritonbench_lab.check import ERROR, check_rows, config_files, retime, run_configs

    fp = fingerprint(backend)
    device = "cpu" if backend == INTERPRETER else "cuda"
    out, err = Console(), Console(stderr=True)
    problems, checked_rows = [], 0
    files = config_files(Path(root) / "configs")
    for path in files:
        found, rows = check_rows(path, fp.triton)
        checked_rows += len(rows)
        problems += found
        problems += run_configs(path, rows, device)
        if timing and backend != INTERPRETER and path.parent.name == fp.gpu_slug:
            timed, slow = retime(path, rows, tolerance)
            problems += slow
            _print_timing(out, path, timed)
    for problem in problems:
        err.print(str(problem), markup=False, highlight=False, soft_wrap=True)
    errors = sum(p.severity == ERROR for p in problems)
    stale = len(problems) - errors
    where = "in Triton's interpreter" if backend == INTERPRETER else f"on {fp.gpu}"
    out.print(f"checked {len(files)} file(s), {checked_rows} valid row(s), configs run {where}: "
              f"{errors} error(s), {stale} stale")
    if errors:
        sys.exit(1)


def _print_timing(console: Console, path: Path, timed) -> None:
    table = Table(title=f"{path}: winners timed again")
    for column in ("line", "dtype", "shape", "recorded ms", "now ms", "now / recorded"):
        table.add_column(column, justify="right")
    for t in timed:
        now = f"{t.measured_ms:.4g}" if t.measured_ms is not None else t.status
        ratio = f"{t.ratio:.2f}x" if t.ratio is not None else "-"
        table.add_row(str(t.line), t.dtype, t.shape, f"{t.recorded_ms:.4g}", now, ratio)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
