"""`tlab ops-bench`: tritonbench_lab.ops against the PyTorch op on untuned shapes (GPU only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from tritonbench_lab.cli.options import Kernels, split_list
from tritonbench_lab.errors import TlabError


def ops_bench(
    kernel: Kernels = None,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="FILE", help="Also write the Markdown table to FILE.",
        show_default=False)] = None,
) -> None:
    """Time what user code calls, tritonbench_lab.ops, against the PyTorch op it stands in for,
    on shapes no default sweep tunes (opsbench.SHAPES): correctness against float64, GPU time
    (do_bench with the L2 flushed, and CUDA-graph replay) and the host time ops adds per call.
    Prints a Markdown table; needs a GPU."""
    import torch  # late: `tlab --help` imports no torch

    from tritonbench_lab.gates.opsbench import SHAPES, measure, report  # late: the same

    wanted = split_list(kernel)
    cases = [c for c in SHAPES if not wanted or c[0] in wanted]
    if not cases:
        raise TlabError(f"no ops-bench shapes for kernel(s) {', '.join(wanted)}: it covers "
                        f"{', '.join(dict.fromkeys(c[0] for c in SHAPES))}")
    if out is not None and not out.parent.is_dir():
        raise TlabError(f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist")
    if not torch.cuda.is_available():
        raise TlabError("tlab ops-bench times GPU kernels and needs CUDA; none is visible")
    rows = []
    with Progress(transient=True) as progress:
        task = progress.add_task("ops-bench", total=len(cases))
        for name, dtype, sizes in cases:
            progress.update(task, description=f"{name} {dtype} {'x'.join(map(str, sizes))}")
            rows.append(measure(name, dtype, sizes))
            progress.advance(task)
    text = "\n".join(report(rows))
    print(text)
    if out is not None:
        out.write_text(text + "\n")


def register(app: typer.Typer) -> None:
    app.command("ops-bench")(ops_bench)
