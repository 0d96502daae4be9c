"""What `tlab sweep` prints when it is done: the winners table of the shapes asked for (with
% of ceiling and the eager ratio where they are known), one line per dtype and shape counting
its configs by status with the first error of each kind of failure, what to run next, and where
the rows and winners were written.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.tables import print_table
from tritonbench_lab.data.ceilings import ceiling_for, ceilings_in_force, traffic_of
from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.data.winners import shape_results, winner_of
from tritonbench_lab.space import config_legend, config_short
from tritonbench_lab.tuned import config_dir

CONFIG_WIDTH = 28  # columns of the winner's config before it folds onto the next line


def print_summary(result, request, console: Console) -> list:
    """The winners of the shapes asked for, as a table with a line on each column that needs
    one; what each shape's configs came to (print_tallies); then where the rows and winners
    were written. Returns the tallies of the shapes with no correct config."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.spec import dtype_name

    ceilings = ceilings_in_force(request.layout.ceilings_file(request.fingerprint.gpu_slug))
    eager = any(w.host_ms is not None and w.op_host_ms is not None for w in result.winners)
    table = _summary_table(request, bool(ceilings), eager)
    wanted = {(dtype_name(d), str(s)) for d in request.dtypes for s in request.shapes}
    shown = []
    for found in shape_results(result.records):
        w = winner_of(found)
        if w is None or (w.dtype, w.shape) not in wanted:
            continue
        shown.append(w)
        table.add_row(*_summary_row(w, found, request, ceilings, eager))
    if shown:
        print_table(console, table)
        legend = config_legend(parse_config_text(w.config) for w in shown)
        if legend:
            console.print(legend)
    if request.interpret:
        _say_what_runs_here(request, console)
    elif shown and not ceilings:
        console.print("No ceilings for this GPU yet: run `tlab calibrate` for % of ceiling.")
    if shown and eager:
        console.print("eager vs torch: the PyTorch op's time over the winner's, each the longer "
                      "of its GPU time and a call's host time (what code calling one op after "
                      "another waits for; tritonbench_lab.ops decides such calls on it).")
    failed = print_tallies(result.shapes, console)
    if result.winners:
        _plain(console, f"rows: {result.results_file}   winners: {result.configs_file} (each "
               f"looked up again with tuned.lookup: all {len(result.winners)} match)")
        _say_where_code_reads(request, console)
    else:
        _plain(console, f"rows: {result.results_file}   no winners: no shape of "
               f"{request.spec.name} has a correct config, so {result.configs_file} was not "
               "written")
    return failed


def _say_where_code_reads(request, console: Console) -> None:
    """Where tritonbench_lab.ops and tuned.lookup read this kernel's configs, when that is not
    the folder just written: a built-in kernel swept in a project of one's own is read from
    tlab's configs unless $TLAB_CONFIG_DIR names the project's."""
    written = request.layout.configs.resolve()
    read = config_dir(request.spec.name).resolve()
    if read != written:
        _plain(console, f"Code reads {request.spec.name}'s configs from {read}, not {written}: "
               f"run it with TLAB_CONFIG_DIR={written} for tritonbench_lab.ops and "
               "tuned.lookup to use these winners.")


def print_tallies(tallies, console: Console) -> list:
    """One line per dtype and shape, counts by status (data/tally.py), and under it the first
    error of each kind of failure; never wrapped or cut. Returns the shapes with no correct
    config."""
    for t in tallies:
        verdict = "" if t.correct else ": no correct config"
        _plain(console, f"{t.dtype} {t.shape}: {t.counts_text()}{verdict}")
        for status, error in t.first_errors.items():
            _plain(console, f"  {status}: {error}")
    return [t for t in tallies if not t.correct]


def _plain(console: Console, line: str) -> None:
    console.print(line, soft_wrap=True, markup=False, highlight=False)


def _say_what_runs_here(request, console: Console) -> None:
    """After an interpreter sweep: what looks at its rows here (ceilings, and so `tlab
    calibrate`, are a GPU's)."""
    root = "" if request.root == Path(".") else f" --root {request.root}"
    console.print(f"Pictures and a report of the interpreter's rows: `tlab plot --gpu-name "
                  f"interpreter{root}`, `tlab report --gpu-name interpreter{root}`.",
                  soft_wrap=True, markup=False, highlight=False)


def _summary_table(request, ceilings: bool, eager: bool) -> Table:
    """The winners table's columns: the % of ceiling one where this GPU has ceilings, the
    eager one where winners have host times."""
    table = Table(title=f"{request.spec.name} on {request.fingerprint.gpu} "
                  f"({request.spec.metric})")
    columns = ["dtype", "shape", "winner config", "triton", *request.baseline_names, "vs best"]
    if ceilings:
        columns.append("% ceiling")
    if eager:
        columns.append("eager vs torch")
    for column in columns:
        # Numbers never wrap; the config column folds at CONFIG_WIDTH (print_table).
        config = column == "winner config"
        table.add_column(column, justify="left" if config else "right", no_wrap=not config,
                         overflow="fold", max_width=CONFIG_WIDTH if config else None)
    return table


def _summary_row(w, found, request, ceilings, eager: bool) -> list[str]:
    """One winner's cells, in _summary_table's columns."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.ops import eager_speedup
    from tritonbench_lab.runtime.dispatch import ratio_text

    metric = request.spec.metric
    cells = []
    for b in request.baseline_names:
        row = found.baselines.get(b)
        cells.append(f"{row.throughput:.4g}" if row and row.throughput else "-")
    # GB/s kernels: against a copy of the same bytes where the copy curve is calibrated.
    ceiling = ceiling_for(metric, w.dtype, ceilings, traffic_of(w.throughput, w.p50_ms, metric))
    row = [w.dtype, w.shape, config_short(parse_config_text(w.config)),
           f"{w.throughput:.4g}", *cells,
           f"{ratio_text(w.speedup)} {w.best_baseline}" if w.speedup else "-"]
    if ceilings:
        row.append(f"{100 * w.throughput / ceiling[1]:.0f}% {ceiling[0]}" if ceiling else "-")
    if eager:
        ratio = eager_speedup(w)
        row.append(f"{ratio:.2f}x" if ratio else "-")
    return row
