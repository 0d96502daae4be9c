"""`tlab list`: every kernel with its dtypes, baselines, config space and default shapes. A
kernel from a user's module (`-m FILE`) has its contract checked first: each piece of its spec
called once at a small shape (measure/contract_check.py), the first wrong one refused in one
line."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.options import Interpret, KernelModules, Kernels, prepare, split_list
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.env import device_limits


def describe_kernels(backend: str, checked: dict[str, str] | None = None,
                     only: list[str] | None = None) -> list[dict[str, str]]:
    """One dict of printable fields per kernel (of `only`, when given), the user's own
    first; pruning uses the current GPU's limits. `checked`: what the contract check called,
    for the kernels it checked."""
    limits, checked = device_limits(backend), checked or {}
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import builtin_names, get_spec, names
    from tritonbench_lab.spec import dtype_name

    chosen = [n for n in names() if only is None or n in only]
    builtin = set(builtin_names())
    rows = []
    for spec in [get_spec(n) for n in sorted(chosen, key=lambda n: n in builtin)]:
        kept_counts = []
        for shape in spec.default_shapes:
            for dtype in spec.dtypes:
                kept, _ = spec.space.prune(dict(shape.dims), dtype.itemsize, limits)
                kept_counts.append(len(kept))
        low, high = min(kept_counts), max(kept_counts)
        kept_text = str(low) if low == high else f"{low}-{high}"
        dtypes = [
            dtype_name(d) + ("" if spec.interpreter_refusal(d) is None else " (GPU only)")
            for d in spec.dtypes
        ]
        row = {
            "kernel": spec.name,
            "summary": spec.summary,
            "metric": spec.metric,
            "dtypes": ", ".join(dtypes),
            "baselines": ", ".join(b + (" (opt-in)" if b in spec.opt_in_baselines else "")
                                   for b in spec.baselines),
            "space": f"{len(spec.space)} configs over {', '.join(spec.space.params)}; "
                     f"{kept_text} left after pruning for {limits.label}",
            "shapes": f"{'x'.join(spec.dims)}: " + ", ".join(str(s) for s in spec.default_shapes),
        }
        if backend != "cuda":  # a sweep here runs the small shapes, not those above
            row["shapes"] += ("; in the interpreter (here): "
                              + ", ".join(str(s) for s in spec.small_shapes))
        if spec.name in checked:
            row["contract"] = checked[spec.name]
        rows.append(row)
    return rows


def list_kernels(kernels: Kernels = None, kernel_module: KernelModules = None,
                 interpret: Interpret = None) -> None:
    """List the kernels, your own (-m) first: dtypes, baselines, config space (before ->
    after pruning), shapes. Your kernels are checked first: each piece of the spec is called
    once at its first small shape, and the first that returns the wrong thing is named
    (exit 2)."""
    backend = prepare(interpret, kernel_module)
    chosen = split_list(kernels)
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec, names
    from tritonbench_lab.measure.contract_check import check_user_kernels

    if chosen == []:
        raise TlabError(f"no kernels in --kernel: known kernels are {', '.join(names())}")
    for name in chosen or ():
        get_spec(name)  # an unknown name: one line naming the known ones
    rows = describe_kernels(backend, check_user_kernels(backend, chosen), chosen)
    console = Console()
    for row in rows:
        console.print(f"[bold]{row['kernel']}[/bold]  {row['summary']}")
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row("metric", row["metric"])
        grid.add_row("dtypes", row["dtypes"])
        grid.add_row("baselines", row["baselines"])
        grid.add_row("space", row["space"])
        grid.add_row("shapes", row["shapes"])
        if "contract" in row:
            grid.add_row("contract", row["contract"])
        console.print(grid, "")


def register(app: typer.Typer) -> None:
    app.command("list")(list_kernels)
    app.command("kernels", help="Same as `tlab list`.")(list_kernels)
