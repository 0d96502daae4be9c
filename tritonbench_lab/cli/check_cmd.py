"""`tlab check`: the CI gate on committed configs (exit 1 when any is broken or slow)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.options import Interpret, KernelModules, load_modules


def check(
    root: Annotated[Path, typer.Option("--root", help="Folder holding configs/.")] = Path("."),
    tolerance: Annotated[float, typer.Option(
        "--tolerance", min=0.0, help="On a matching GPU: how much slower than recorded a "
        "winner may time (0.10 = 10%) before the check fails.")] = 0.10,
    timing: Annotated[bool, typer.Option(
        "--timing/--no-timing", help="On a GPU that matches a file's folder, time its winners "
        "again (default) or only check them.")] = True,
    regret: Annotated[bool, typer.Option(
        "--regret", help="Also tune held-out shapes between the tuned ones (on this GPU) and "
        "report how much the nearest-shape rule of lookup() loses there.")] = False,
    kernel: Annotated[list[str] | None, typer.Option(
        "--kernel", help="Check only the config files of this kernel; repeat the option "
        "for several.")] = None,
    dtype: Annotated[list[str] | None, typer.Option(
        "--dtype", help="Check only the rows of this dtype (fp32, fp16 or bf16); repeat the "
        "option for several.")] = None,
    interpret: Interpret = None,
    kernel_module: KernelModules = None,
) -> None:
    """Check every configs/<gpu>/<kernel>.csv: schema, known kernel, configs inside the
    space and correct at a small shape; on the matching GPU, not slower than recorded."""
    from tritonbench_lab.env import INTERPRETER, choose_backend, fingerprint

    backend = choose_backend(interpret)
    load_modules(kernel_module)
    from tritonbench_lab.check import ERROR, check_rows, config_files, retime, run_configs
    from tritonbench_lab.spec import dtype_name, parse_dtype

    # Refuse a misspelt dtype (one line, exit 2) instead of checking nothing and passing.
    dtype = [dtype_name(parse_dtype(d)) for d in dtype] if dtype else None
    fp = fingerprint(backend)
    device = "cpu" if backend == INTERPRETER else "cuda"
    out, err = Console(), Console(stderr=True)
    problems, checked_rows = [], 0
    files = config_files(Path(root) / "configs", kernel)
    for path in files:
        found, rows = check_rows(path, fp.triton)
        if dtype:
            rows = [r for r in rows if r["dtype"] in dtype]
        checked_rows += len(rows)
        problems += found
        problems += run_configs(path, rows, device)
        mine = path.parent.name == fp.gpu_slug
        if timing and backend != INTERPRETER and mine:
            timed, slow = retime(path, rows, tolerance)
            problems += slow
            _print_timing(out, path, timed)
        if regret and mine and rows:
            _print_regret(out, path, _regret(path, rows, Path(root), backend, fp, kernel_module))
    for problem in problems:
        err.print(str(problem), markup=False, highlight=False, soft_wrap=True)
    errors = sum(p.severity == ERROR for p in problems)
    stale = len(problems) - errors
    where = "in Triton's interpreter" if backend == INTERPRETER else f"on {fp.gpu}"
    out.print(f"checked {len(files)} file(s), {checked_rows} valid row(s), configs run {where}: "
              f"{errors} error(s), {stale} stale")
    if errors:
        sys.exit(1)


def _regret(path: Path, rows: list[dict], root: Path, backend: str, fp, kernel_module):
    """Held-out shapes of each dtype in the file, tuned into results/<gpu>/regret/."""
    from tritonbench_lab.env import INTERPRETER, device_limits, free_device_bytes
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.regret import held_out_shapes, measure_regret
    from tritonbench_lab.spec import parse_dtype
    from tritonbench_lab.sweep import SweepRequest

    spec = get_spec(path.stem)
    found = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        tuned = [tuple(int(x) for x in r["shape"].split("x")) for r in rows if r["dtype"] == dtype]
        shapes = [spec.shape(*sizes) for sizes in held_out_shapes(tuned)]
        if not shapes:
            continue
        request = SweepRequest(
            spec=spec, dtypes=[parse_dtype(dtype)], shapes=shapes, space=spec.space,
            root=root / "results" / fp.gpu_slug / "regret", interpret=backend == INTERPRETER,
            fingerprint=fp, limits=device_limits(backend), free_bytes=free_device_bytes(backend),
            kernel_modules=tuple(str(p) for p in kernel_module or ()),
        )
        found += measure_regret(request, root / "configs")
    return found


def _print_regret(console: Console, path: Path, regrets) -> None:
    table = Table(title=f"{path}: regret of the nearest-shape rule on held-out shapes")
    for column in ("dtype", "held-out shape", "looked-up config", "its ms", "fresh winner",
                   "winner ms", "regret"):
        table.add_column(column, justify="left" if "config" in column or "winner" == column
                         else "right")
    for r in regrets:
        mine = f"{r.looked_up_ms:.4g}" if r.looked_up_ms is not None else r.looked_up_status
        lost = f"{100 * r.regret:.1f}%" if r.regret is not None else "-"
        table.add_row(r.dtype, r.shape, r.looked_up, mine, r.winner, f"{r.winner_ms:.4g}", lost)
    console.print(table)


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
