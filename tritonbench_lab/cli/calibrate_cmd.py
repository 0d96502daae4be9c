"""`tlab calibrate`: measure this GPU's ceilings (copy bandwidth and its curve over sizes,
torch.matmul per dtype)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tritonbench_lab.errors import TlabError


def calibrate(
    out: Annotated[Path, typer.Option("--out", help="Folder holding results/.")] = Path("."),
    dtype: Annotated[str, typer.Option(
        "--dtype", help="Comma-separated dtypes for the torch.matmul ceiling.")] = "bf16,fp16,fp32",
    rep_ms: Annotated[int, typer.Option(
        "--rep-ms", min=1, help="do_bench's timing budget per measurement, in ms.")] = 200,
) -> None:
    """Measure the copy bandwidth of this GPU (a 4 GiB copy, and copies of 16 MiB to 2 GiB
    that GB/s kernels are judged against at their own size) and torch.matmul TFLOP/s per
    dtype; store them per GPU."""
    from tritonbench_lab.env import choose_backend, cuda_available, fingerprint

    if not cuda_available():
        raise TlabError("tlab calibrate measures a GPU and needs CUDA; none is visible")
    backend = choose_backend(False)
    from tritonbench_lab.calibrate import append_ceilings, ceilings_path, measure
    from tritonbench_lab.spec import parse_dtype
    from tritonbench_lab.timing import BenchOptions

    dtypes = [parse_dtype(d) for d in dtype.split(",") if d.strip()]
    fp = fingerprint(backend)
    path = ceilings_path(out, fp.gpu_slug)
    rows = measure(fp, BenchOptions(rep_ms=rep_ms), dtypes)
    append_ceilings(path, rows)
    table = Table(title=f"ceilings of {fp.gpu} (torch {fp.torch}, triton {fp.triton})")
    for column in ("name", "value", "p50 ms", "size"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["name"], f"{float(row['value']):.4g} {row['metric']}",
                      f"{float(row['p50_ms']):.4g}", row["size"])
    console = Console()
    console.print(table)
    console.print(f"stored in {path}")


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
