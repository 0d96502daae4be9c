"""`tlab portability FROM`: another GPU's winners timed on this one (gates/portability.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
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
from tritonbench_lab.data.portability import (
    TOLERANCE,
    beaten,
    portability_file,
    sweep_again,
    trust_file,
)
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.env import INTERPRETER, fingerprint


def portability(
    from_gpu: Annotated[str, typer.Argument(
        metavar="FROM", help="The GPU whose committed winners are carried here, by its slug "
        "under ROOT/configs (e.g. nvidia-h200).", show_default=False)],
    root: Root = Path("."),
    kernel: Kernels = None,
    dtype: Dtypes = None,
    rounds: Annotated[int, typer.Option(
        "--rounds", min=1, max=20, help="Fresh worker processes; each times every shape "
        "once, the side that goes first alternating. The best of each side's medians is "
        "kept.")] = 3,
    interpret: Interpret = None,
    kernel_module: KernelModules = None,
) -> None:
    """Time FROM's winners on this GPU at the shapes both tuned, each beside this GPU's own
    winner and the PyTorch op, in fresh workers; append the rows to
    ROOT/results/<this gpu>/portability/FROM.csv and write whether FROM's configs hold here
    (worst regret within the tolerance, per kernel and dtype) to
    ROOT/configs/<this gpu>/carried/FROM.csv, which ops and tuned.lookup read on a GPU with
    no configs of its own for a kernel and dtype."""
    backend = prepare(interpret, kernel_module, root)
    # late: triton reads TRITON_INTERPRET at its first import; `prepare` has set it
    from tritonbench_lab.gates import portability as gate
    from tritonbench_lab.measure.rows import new_run_id

    layout, dtypes = Layout(root), known_dtypes(dtype)
    fp = fingerprint(backend)
    if from_gpu == fp.gpu_slug:
        raise TlabError(f"FROM {from_gpu!r} is this GPU: name another GPU's configs folder")
    if not (layout.configs / from_gpu).is_dir():
        have = sorted(p.name for p in layout.configs.iterdir() if p.is_dir()) \
            if layout.configs.is_dir() else []
        raise TlabError(f"no configs of {from_gpu!r} under {str(layout.configs)!r}: GPUs with "
                        f"configs are {', '.join(have) or 'none'}")
    console = Console()
    found = gate.pairs(layout, from_gpu, fp.gpu_slug, split_list(kernel), dtypes, console.print)
    if not found:
        raise TlabError(f"no shape that both {from_gpu} and {fp.gpu_slug} tuned (of the kernels "
                        "and dtypes asked for): nothing to carry")
    run_id, capability, rows, trust = new_run_id(), _capability(backend), [], []
    where = portability_file(layout.results, fp.gpu_slug, from_gpu)

    def kernel_done(pairs, samples) -> None:
        """Record a kernel's rows as soon as its rounds end (a run stopped later keeps them)."""
        nonlocal trust
        new = gate.rows(pairs, samples, from_gpu, fp, capability, rounds, run_id)
        trust = gate.record(layout, fp.gpu_slug, from_gpu, new)
        rows.extend(new)
        console.print(f"{pairs[0].native.kernel}: {len(new)} shape(s) recorded in {where}")

    with Progress(TextColumn("portability"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("", total=rounds * len(found))
        gate.measure(found, rounds=rounds, interpret=backend == INTERPRETER,
                     kernel_modules=kernel_modules_of(kernel_module, root),
                     progress=lambda done, _: bar.update(task, completed=done),
                     kernel_done=kernel_done)
    print_table(console, _shapes_table(rows, from_gpu))
    print_table(console, _trust_table(trust, from_gpu, fp.gpu_slug))
    for row in beaten(rows):
        console.print(f"{row.kernel} {row.dtype} {row.shape}: {from_gpu}'s config ran "
                      f"{row.regret:.3f}x this GPU's own winner's time; measure the shape again: "
                      f"{sweep_again(row)}", soft_wrap=True, markup=False)
    console.print(f"rows: {where}   trust: "
                  f"{trust_file(layout.configs, fp.gpu_slug, from_gpu)}")


def _capability(backend: str) -> str:
    if backend == INTERPRETER:
        return INTERPRETER
    import torch  # late: `tlab --help` imports no torch

    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _shapes_table(rows, from_gpu: str) -> Table:
    table = Table(title=f"{from_gpu}'s winners here (best of fresh workers, ms)")
    for column in ("kernel", "dtype", "shape", "carried config", "own config", "carried",
                   "own", "regret", "op"):
        table.add_column(column, justify="left" if "config" in column else "right")
    for r in rows:
        regret = f"{r.regret:.3f}x" if r.regret is not None else r.status
        table.add_row(r.kernel, r.dtype, r.shape, r.carried_config,
                      "(the same)" if r.carried_config == r.native_config else r.native_config,
                      _ms(r.carried_ms), _ms(r.native_ms), regret, _ms(r.op_ms))
    return table


def _trust_table(trust, from_gpu: str, gpu: str) -> Table:
    table = Table(title=f"do {from_gpu}'s configs hold on {gpu}? (worst regret within "
                        f"{TOLERANCE:.2f}x and no failure)")
    for column in ("kernel", "dtype", "shapes", "failed", "median regret", "worst regret",
                   "at", "trusted"):
        table.add_column(column, justify="left" if column in ("kernel", "at") else "right")
    for t in trust:
        median = "-" if t.median_regret is None else f"{t.median_regret:.3f}x"
        worst = "-" if t.worst_regret is None else f"{t.worst_regret:.3f}x"
        table.add_row(t.kernel, t.dtype, str(t.shapes), str(t.failed), median, worst,
                      t.worst_shape, "yes" if t.trusted else "no")
    return table


def register(app: typer.Typer) -> None:
    app.command("portability")(portability)
