"""`tlab check`: the CI gate on committed configs (exit 1 when any is broken or slow)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.options import (
    Dtypes,
    Interpret,
    KernelModules,
    Kernels,
    Root,
    kernel_modules_of,
    known_dtypes,
    prepare,
    split_list,
)
from tritonbench_lab.cli.tables import print_table
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.errors import TlabError
from tritonbench_lab.gates.retime import NOISE_FLOOR_MS
from tritonbench_lab.measure import children
from tritonbench_lab.measure.env import INTERPRETER, fingerprint


def check(
    root: Root = Path("."),
    tolerance: Annotated[float, typer.Option(
        "--tolerance", min=0.0, help="On a matching GPU: how much slower than recorded a "
        "winner may time (0.10 = 10%) before the check fails; a slowdown of "
        f"{1000 * NOISE_FLOOR_MS:g} us or less always passes (the launch floor of a few-us "
        "kernel moves that much between two GPUs of one model).")] = 0.10,
    timing: Annotated[bool, typer.Option(
        "--timing/--no-timing", help="On a GPU that matches a file's folder, time its winners "
        "again (default) or only check them.")] = True,
    repeats: Annotated[int, typer.Option(
        "--repeats", metavar="N", min=1, help="On a matching GPU: passes over the winners, "
        "each in a fresh worker process. Two time every winner; the rest re-time only those "
        "still too slow, beside the PyTorch op at their shape, so that a GPU slower than the "
        "one that recorded them is told from a slower winner. The best of the medians is "
        "held to the tolerance, and their spread is shown.")] = 4,
    regret: Annotated[bool, typer.Option(
        "--regret", help="Also tune held-out shapes between the tuned ones (on this GPU) and "
        "report how much the nearest-shape rule of lookup() loses there.")] = False,
    gpu_name: Annotated[str | None, typer.Option(
        "--gpu-name", metavar="GPU", show_default=False,
        help="Check only one GPU's configs: its folder name under ROOT/configs (e.g. "
        "nvidia-h200, interpreter) or that folder. Default: every folder's.")] = None,
    kernel: Kernels = None,
    dtype: Dtypes = None,
    interpret: Interpret = None,
    kernel_module: KernelModules = None,
) -> None:
    """Check every ROOT/configs/<gpu>/<kernel>.csv (or one GPU's): schema, known kernel,
    configs inside the space, the winners its results pick, correct at a small shape; on the
    matching GPU, not slower than recorded."""
    if interpret is not True and timing:  # first: the imports below start torch
        children.start_early()  # the timing workers' torch import runs beside this one's
    # late: `tlab --help` imports no torch
    from tritonbench_lab.gates.check import run_check

    dtypes = known_dtypes(dtype)  # a misspelt dtype is refused, not silently unmatched
    backend = prepare(interpret, kernel_module, root)
    if backend == INTERPRETER:
        children.stop_early()  # the interpreter after all: no child of the server's
    _refuse_dtypes_no_kernel_takes(split_list(kernel), dtypes)
    report = run_check(Layout(root), backend=backend, fingerprint=fingerprint(backend),
                       kernels=split_list(kernel), dtypes=dtypes, tolerance=tolerance,
                       timing=timing, regret=regret, repeats=repeats,
                       kernel_modules=kernel_modules_of(kernel_module, root),
                       gpu=Path(gpu_name).name if gpu_name else None)
    out, err = Console(), Console(stderr=True)
    for item in report.files:
        if item.timed:
            print_table(out, _timing_table(item))
        if item.regrets:
            print_table(out, _regret_table(item))
    for problem in report.problems:
        err.print(str(problem), markup=False, highlight=False, soft_wrap=True)
    out.print(report.summary(), soft_wrap=True)  # one line, however narrow the terminal
    if report.errors:
        sys.exit(1)


def _refuse_dtypes_no_kernel_takes(kernels: list[str] | None, dtypes: list[str] | None) -> None:
    """--kernel matmul --dtype fp8e4m3 would check no row and pass: refused, as sweep does."""
    if not kernels or not dtypes:
        return
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.spec import dtype_name

    takes = {dtype_name(d) for k in kernels for d in get_spec(k).dtypes}
    for name in dtypes:
        if name not in takes:
            raise TlabError(f"--dtype {name}: {', '.join(kernels)} take(s) "
                            f"{', '.join(sorted(takes))}; no row of {name} would be checked")


def _regret_table(item) -> Table:
    table = Table(title=f"{item.path}: regret of the nearest-shape rule on held-out shapes")
    for column in ("dtype", "held-out shape", "looked-up config", "its ms", "fresh winner",
                   "winner ms", "regret"):
        table.add_column(column, justify="left" if "config" in column or column == "fresh winner"
                         else "right")
    for r in item.regrets:
        mine = f"{r.looked_up_ms:.4g}" if r.looked_up_ms is not None else r.looked_up_status
        lost = f"{100 * r.regret:.1f}%" if r.regret is not None else "-"
        table.add_row(r.dtype, r.shape, r.looked_up, mine, r.winner, f"{r.winner_ms:.4g}", lost)
    return table


def _timing_table(item) -> Table:
    table = Table(title=f"{item.path}: winners timed again (best of fresh workers)")
    for column in ("line", "dtype", "shape", "recorded ms", "now ms", "now / recorded",
                   "op now / recorded", "relative", "spread"):
        table.add_column(column, justify="right")
    for t in item.timed:
        now = f"{t.measured_ms:.4g}" if t.measured_ms is not None else t.status
        ratio = f"{t.ratio:.2f}x" if t.ratio is not None else "-"
        op = f"{t.op_ratio:.2f}x" if t.op_ratio is not None else "-"
        relative = f"{t.relative:.2f}x" if t.relative is not None else "-"
        spread = f"{100 * t.spread:.1f}%" if t.spread is not None else "-"
        table.add_row(str(t.line), t.winner.dtype, t.winner.shape, f"{t.winner.p50_ms:.4g}",
                      now, ratio, op, relative, spread)
    spreads = sorted(t.spread for t in item.timed if t.spread is not None)
    if spreads:
        table.caption = (f"spread of the medians across fresh workers: median "
                         f"{100 * spreads[len(spreads) // 2]:.1f}%, largest {100 * spreads[-1]:.1f}%"
                         "; the op is timed only beside a winner slower than allowed")
    return table


def register(app: typer.Typer) -> None:
    app.command("check")(check)
