"""Tables print their numbers whole, however narrow the console (an 80-column log)."""

import io

from rich.console import Console
from rich.table import Table

from tritonbench_lab.cli.tables import print_table


def _table() -> Table:
    table = Table(title="matmul_fp8 on NVIDIA H200 (TFLOP/s)")
    for name in ("dtype", "shape", "winner config", "triton", "torch", "torch_fast", "vs best"):
        config = name == "winner config"
        table.add_column(name, no_wrap=not config, overflow="fold", max_width=28 if config else None)
    table.add_row("fp8e4m3", "256x4096x14336",
                  "BM=128 BN=256 BK=128 GM=8 w=8 s=4 SK=4 RED=2 TMA=1 FACC=1",
                  "823.4", "859.6", "881.4", "0.96x torch")
    return table


def test_rich_alone_cuts_the_numbers_of_a_wide_table_short():
    out = io.StringIO()
    Console(file=out, width=60).print(_table())
    assert "859.6" not in out.getvalue()  # what print_table exists for


def test_print_table_keeps_every_number_and_header_on_a_narrow_console():
    out = io.StringIO()
    print_table(Console(file=out, width=60), _table())
    text = out.getvalue()
    for cell in ("823.4", "859.6", "881.4", "0.96x torch", "256x4096x14336", "torch_fast"):
        assert cell in text
    assert max(len(line) for line in text.splitlines()) > 60


def test_a_table_that_fits_prints_at_the_console_width():
    out = io.StringIO()
    print_table(Console(file=out, width=200), _table())
    assert "859.6" in out.getvalue() and max(map(len, out.getvalue().splitlines())) <= 200
