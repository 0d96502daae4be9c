"""`tlab compare A B [C ...]`: one kernel's tuned winners across GPUs, side by side."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tritonbench_lab.cli.options import (
    GENERATED,
    Dtypes,
    Kernels,
    Root,
    known_dtypes,
    split_list,
)
from tritonbench_lab.cli.tables import print_table
from tritonbench_lab.data.layout import locate
from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import config_legend, config_short


def compare(
    targets: Annotated[list[str], typer.Argument(
        help="Two or more results folders (results/nvidia-h200) or GPU slugs (nvidia-h200, "
        "looked up under ROOT/results).", show_default=False)],
    kernel: Kernels = None,
    dtype: Dtypes = None,
    out: Annotated[Path, typer.Option(
        "--out", help="Folder the pictures go under (in <out>/compare/; git ignores the "
        "default, `make plots` writes the committed plots/).")] = GENERATED,
    root: Root = Path("."),
) -> None:
    """Compare tuned winners across GPUs: throughput, % of each GPU's own ceiling, and how
    each GPU's winning config does on the others; then the first GPU's speed over the
    second's per kernel beside their ceilings' and the PyTorch op's ratios. Prints tables,
    draws a picture each, and writes the ratios to <out>/compare/<first>-vs-<second>.md."""
    # late: `tlab --help` imports no pandas or matplotlib
    from tritonbench_lab.views.compare import compare as run_compare
    from tritonbench_lab.views.compare import draw, gpu_labels, ratios_markdown, speed_ratios

    if len(targets) < 2:
        raise TlabError("compare needs at least two results folders or GPU slugs")
    folders = _distinct_folders(targets, root)
    # Every refusal before any output.
    comparisons, notes = run_compare(folders, split_list(kernel), known_dtypes(dtype))
    console = Console()
    for note in notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    for comparison in comparisons:
        for gpu, shapes in comparison.left_out.items():
            console.print(f"[yellow]note:[/] {comparison.kernel} {comparison.dtype}: shapes "
                          f"not on every GPU, left out: {escape(gpu)} has {', '.join(shapes)}")
        print_table(console, comparison_table(comparison))
        for line in portability_summary(comparison):
            console.print(line, soft_wrap=True)
        uncalibrated = [g for g, rows in comparison.frame.groupby("gpu", sort=False)
                        if rows["pct_ceiling"].isna().all()]
        if uncalibrated:
            console.print(f"No ceilings for {', '.join(uncalibrated)}: run `tlab calibrate` "
                          "on that GPU for % of ceiling.")
        legend = config_legend(parse_config_text(c) for c in comparison.frame["winner_config"])
        if legend:
            console.print(legend)
        for path in draw(comparison, out):
            console.print(f"picture: {path}\n", soft_wrap=True, markup=False)
    if comparisons:
        labels = gpu_labels(folders)
        text = ratios_markdown(speed_ratios(comparisons, folders), labels)
        # Markdown rows must stay whole (a pipe's 80 columns cut them)
        console.print(text, markup=False, highlight=False, soft_wrap=True)
        path = Path(out) / "compare" / f"{labels[0]}-vs-{labels[1]}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        console.print(f"table: {path}", soft_wrap=True, markup=False)


def _distinct_folders(targets: list[str], root: Path) -> list[Path]:
    """Each target's results folder (layout.locate); one folder named twice, as a slug or a
    path, would compare a GPU with itself."""
    folders, seen = [], {}
    for target in targets:
        folder = locate(target, root)
        if folder.resolve() in seen:
            raise TlabError(f"compare got the results folder {str(folder)!r} twice "
                            f"({seen[folder.resolve()]!r} and {target!r}): name different GPUs")
        seen[folder.resolve()] = target
        folders.append(folder)
    return folders


def comparison_table(comparison) -> Table:
    from tritonbench_lab.views.compare import SWEPT  # late: `tlab --help` imports no pandas

    frame, moves = comparison.frame, comparison.portability
    metric = frame["metric"].iloc[0]
    table = Table(title=f"{comparison.kernel} {comparison.dtype}: tuned Triton winner per "
                  "shape and GPU", caption="its config elsewhere: this winner config run on "
                  "another GPU, as % of that GPU's own best there: timed beside it by `tlab "
                  "portability`, or (~) from that GPU's sweep rows")
    for column in ("shape", "gpu", metric, "% own ceiling", "winner config",
                   "its config elsewhere"):
        # Numbers never wrap; on a narrow terminal the text columns fold instead.
        wraps = column in ("winner config", "its config elsewhere")
        table.add_column(column, justify="left" if wraps or column == "gpu" else "right",
                         no_wrap=not wraps, overflow="fold")
    last_of_shape = frame["shape"] != frame["shape"].shift(-1)
    for (_, row), end in zip(frame.iterrows(), last_of_shape, strict=True):
        mine = moves[(moves["shape"] == row["shape"]) & (moves["config_from"] == row["gpu"])]
        elsewhere = "; ".join(
            ("~" if m["source"] == SWEPT else "")
            + (f"{m['runs_at_pct']:.0f}% on {m['config_on']}" if not math.isnan(m["runs_at_pct"])
               else f"{m['status_on_target'].replace('_', ' ')} on {m['config_on']}")
            for _, m in mine.iterrows())
        pct = row["pct_ceiling"]
        table.add_row(row["shape"], row["gpu"], f"{row['throughput']:.4g}",
                      "-" if math.isnan(pct) else f"{pct:.0f}% {row['ceiling']}",
                      config_short(parse_config_text(row["winner_config"])), elsewhere,
                      end_section=bool(end))
    return table


def portability_summary(comparison) -> list[str]:
    """One line per ordered GPU pair: how far one GPU's winners get on the other."""
    from tritonbench_lab.views.compare import SWEPT  # late: `tlab --help` imports no pandas

    lines = []
    for (source, target), rows in comparison.portability.groupby(["config_from", "config_on"],
                                                                 sort=False):
        timed = rows["runs_at_pct"].dropna()
        if timed.empty:
            lines.append(f"{source}'s winner configs were not measured ok on {target}.")
            continue
        low, high = f"{timed.min():.0f}%", f"{timed.max():.0f}%"
        spread = low if low == high else f"{low} to {high} (median {timed.median():.0f}%)"
        swept = int((rows["source"] == SWEPT).sum())
        how = ("timed side by side by `tlab portability`" if not swept else
               f"from {target}'s sweep rows: not timed side by side" if swept == len(rows) else
               f"{swept} from {target}'s sweep rows, the rest timed side by side by "
               "`tlab portability`")
        lines.append(f"{source}'s winner configs run on {target} at {spread} of {target}'s "
                     f"best, over {len(timed)} of {len(rows)} shared shapes ({how}).")
    return lines


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
