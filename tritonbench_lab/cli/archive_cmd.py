"""`tlab archive`: rows of older sources of each kernel moved out of its results file, into
results/<gpu>/archive/<kernel>.csv.gz (tritonbench_lab/data/archive.py says what stays)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.options import KernelModules, Kernels, Root, prepare, split_list
from tritonbench_lab.data.archive import archive_results
from tritonbench_lab.data.layout import CEILINGS, Layout
from tritonbench_lab.errors import TlabError


def archive(
    root: Root = Path("."),
    kernel: Kernels = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Count what would move; touch nothing.")] = False,
    kernel_module: KernelModules = None,
) -> None:
    """Move each results row measured on a source of its kernel's module other than
    today's (a sweep measures those configs again anyway) from ROOT/results/<gpu>/<kernel>.csv
    to ROOT/results/<gpu>/archive/<kernel>.csv.gz, gzipped line for line under the same
    header. Skipped rows, and every row of a shape whose winner would change without them,
    stay. Run it when no sweep is writing under ROOT."""
    prepare(None, kernel_module, root)
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec, names
    from tritonbench_lab.measure.source import source_hash

    wanted = split_list(kernel)
    if wanted is not None:
        unknown = [k for k in wanted if k not in names()]
        if not wanted or unknown:
            raise TlabError(f"unknown kernel(s) {', '.join(unknown) or repr('')} in --kernel: "
                            f"accepted are {', '.join(names())}")
    layout = Layout(root)
    files = [f for f in sorted(layout.results.glob("*/*.csv"))
             if f.stem != CEILINGS and (wanted is None or f.stem in wanted)]
    if not files:
        raise TlabError(f"no results files under {str(layout.results)!r}")
    table = Table(title="rows of older sources " + ("that would move" if dry_run else "moved"))
    for column in ("results file", "moved", "kept", "older kept"):
        table.add_column(column, justify="left" if column == "results file" else "right")
    out, moved = Console(), 0
    for path in files:
        if path.stem not in names():
            out.print(f"{path}: left as it is (no kernel {path.stem!r} here: give its "
                      "--kernel-module)", markup=False, highlight=False)
    sources = {path: source_hash(get_spec(path.stem)) for path in files if path.stem in names()}
    # Every file read and checked before any is changed: a bad one stops the command with
    # nothing moved anywhere.
    for path, source in sources.items():
        if not dry_run and not os.access(path, os.W_OK):
            raise TlabError(f"results file {str(path)!r} is not writable: nothing archived")
        archive_results(path, source, dry_run=True)
    for path, source in sources.items():
        done = archive_results(path, source, dry_run=dry_run)
        moved += done.moved
        table.add_row(str(path.relative_to(layout.results)), str(done.moved), str(done.kept),
                      str(done.held))
    out.print(table)
    verb = "would move" if dry_run else "moved"
    out.print(f"{verb} {moved} row(s) to {layout.results}/<gpu>/archive/<kernel>.csv.gz; the "
              "older rows kept are skipped rows (recorded once per reason) and the rows of "
              "shapes whose winner needs them", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("archive")(archive)
