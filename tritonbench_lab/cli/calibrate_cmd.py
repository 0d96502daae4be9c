"""`tlab calibrate`: measure this GPU's ceilings (copy bandwidth and its curve over sizes,
torch.matmul per dtype)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.options import Root, complete_dtypes, known_dtypes
from tritonbench_lab.cli.tables import print_table
from tritonbench_lab.data.ceilings import append_ceilings
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import Ceiling
from tritonbench_lab.data.store import check_appendable
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.env import choose_backend, cuda_available, fingerprint
from tritonbench_lab.measure.timing import MAX_REP_MS, BenchOptions


def calibrate(
    root: Root = Path("."),
    dtype: Annotated[list[str] | None, typer.Option(
        "--dtype", metavar="DTYPES", autocompletion=complete_dtypes, show_default=False,
        help="Dtypes whose torch.matmul TFLOP/s to measure (the copy bandwidth is measured "
        "whatever they are): comma-separated or repeated. Default: bf16, fp16, fp32.")] = None,
    rep_ms: Annotated[int, typer.Option(
        "--rep-ms", min=1, max=MAX_REP_MS,
        help="do_bench's timing budget per measurement, in ms.")] = 200,
) -> None:
    """Measure the copy bandwidth of this GPU (a 4 GiB copy, and copies of 16 MiB to 2 GiB
    that GB/s kernels are judged against at their own size) and torch.matmul TFLOP/s per
    dtype (--dtype: those; default all); store them under ROOT/results/<gpu>/."""

    names = known_dtypes(dtype) or ["bf16", "fp16", "fp32"]
    if not cuda_available():
        raise TlabError("tlab calibrate measures a GPU and needs CUDA; none is visible")
    backend = choose_backend(False)
    # late: `tlab --help` imports no torch
    from tritonbench_lab.measure.calibrate import measure
    from tritonbench_lab.spec import parse_dtype

    fp = fingerprint(backend)
    path = Layout(root).ceilings_file(fp.gpu_slug)

    check_appendable(path, Ceiling)
    rows = measure(fp, BenchOptions(rep_ms=rep_ms), [parse_dtype(d) for d in names])
    append_ceilings(path, rows)
    table = Table(title=f"ceilings of {fp.gpu} (torch {fp.torch}, triton {fp.triton})")
    for column in ("name", "value", "p50 ms", "size"):
        table.add_column(column)
    for row in rows:
        table.add_row(row.name, f"{row.value:.4g} {row.metric}", f"{row.p50_ms:.4g}", row.size)
    console = Console()
    print_table(console, table)
    console.print(f"stored in {path}")


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
