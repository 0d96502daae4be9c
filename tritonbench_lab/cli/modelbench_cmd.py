"""`tlab model-bench`: a decoder block and an LM head through tritonbench_lab.ops against the
PyTorch ops, eagerly, compiled and with CUDA graphs (gates/modelbench.py). GPU only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tritonbench_lab.cli.options import split_list
from tritonbench_lab.errors import TlabError


def model_bench(
    width: Annotated[list[str] | None, typer.Option(
        "--width", metavar="WIDTHS", help="Block widths: 1b (hidden 2048), 7b (hidden "
        "4096), comma-separated or repeated. Default: both.", show_default=False)] = None,
    workload: Annotated[list[str] | None, typer.Option(
        "--workload", metavar="NAMES", help="Workloads by name, e.g. 'prefill 1x2048', "
        "'decode b8', or by kind: 'prefill', 'decode' (comma-separated or repeated). "
        "Default: every one.",
        show_default=False)] = None,
    graphs: Annotated[bool, typer.Option(
        "--graphs/--no-graphs", help="Also time each compiled variant with CUDA graphs "
        "(mode='reduce-overhead').")] = True,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="FILE", help="Also write the Markdown report to FILE.",
        show_default=False)] = None,
) -> None:
    """Time a GPT-NeoX-style decoder block and an LM head with GPT-2's odd vocabulary, bf16,
    with tritonbench_lab.ops and with the PyTorch ops: eagerly, compiled, and compiled with
    CUDA graphs; every variant checked against a float64 run. Prints a Markdown table and
    the speed targets; needs a GPU."""
    import torch  # late: `tlab --help` imports no torch

    from tritonbench_lab.gates import modelbench as mb  # late: the same

    widths = [_pick(mb.WIDTHS, name, "width") for name in split_list(width) or list(mb.WIDTHS)]
    loads = {load.name: load for load in mb.WORKLOADS}
    chosen = [load for name in split_list(workload) or list(loads) for load in _loads(loads, name)]
    if out is not None and not out.parent.is_dir():
        raise TlabError(f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist")
    if not torch.cuda.is_available():
        raise TlabError("tlab model-bench times a model on a GPU and needs CUDA; none is visible")
    console = Console(stderr=True)

    rows, breaks = [], {}
    for w in widths:
        breaks[w.name] = mb.graph_breaks(w, chosen[0], torch.bfloat16, "cuda")
        for load in chosen:
            rows += mb.measure(w, load, torch.bfloat16, "cuda", graphs, mb.loop_time,
                               progress=lambda text: console.print(text, highlight=False),
                               host=mb.host_time)
    text = "\n".join(mb.report(rows, breaks))
    print(text)
    if out is not None:
        out.write_text(text + "\n")


def _pick(table: dict, name: str, what: str):
    if name not in table:
        raise TlabError(f"unknown {what} {name!r}: accepted are {', '.join(table)}")
    return table[name]


def _loads(loads: dict, name: str) -> list:
    """The workload so named, or every workload of a kind ('prefill', 'decode')."""
    kind = [load for key, load in loads.items() if key.split()[0] == name]
    if not kind and name not in loads:
        kinds = sorted({key.split()[0] for key in loads})
        raise TlabError(f"unknown workload {name!r}: accepted are {', '.join(loads)}, or a kind: "
                        f"{', '.join(kinds)}")
    return kind or [loads[name]]


def register(app: typer.Typer) -> None:
    app.command("model-bench")(model_bench)
