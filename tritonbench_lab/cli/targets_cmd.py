"""`tlab targets`: the speed targets, judged from committed winners (exit 1 on a miss)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from tritonbench_lab.cli.options import GpuName, Root
from tritonbench_lab.errors import TlabError


def targets(gpu_name: GpuName = None, root: Root = Path(".")) -> None:
    """Print, as Markdown, whether the winners under ROOT/configs/ meet tlab's speed targets:
    matmul within 10% of torch.matmul at 2048-8192, row kernels at 0.85 of a copy of their
    bytes where they move at least 64 MB."""
    from tritonbench_lab.layout import Layout
    from tritonbench_lab.targets import targets_report

    layout = Layout(root)
    gpus = [gpu_name] if gpu_name else sorted({p.parent.name for p in layout.config_files()})
    if not gpus or not any(layout.config_files() for _ in gpus):
        raise TlabError(f"no config files under {str(layout.configs)!r}")
    missed = 0
    for gpu in gpus:
        lines, count = targets_report(layout, gpu)
        print("\n".join(lines))
        missed += count
    sys.exit(1 if missed else 0)


def register(app: typer.Typer) -> None:
    app.command("targets")(targets)
