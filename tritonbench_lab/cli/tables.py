"""Printing tables whose numbers must never be cut short.

Rich fits a table to the console's width, and where folding the text columns is not enough
it crops the others: on an 80-column log (CI, a GPU job's output, `| tee`) a sweep's table
cropped a throughput of "859.6" to "85". A table here is printed at the width its cells need
instead, long lines and all, when the console is narrower than that.
"""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

UNLIMITED = 10_000  # columns: wide enough to measure any table unfolded


def print_table(console: Console, table: Table) -> None:
    need = Measurement.get(console, console.options.update_width(UNLIMITED), table).maximum
    if need > console.width:
        console = Console(file=console.file, width=need, force_terminal=console.is_terminal,
                          color_system=console.color_system, no_color=console.no_color)
    console.print(table)
