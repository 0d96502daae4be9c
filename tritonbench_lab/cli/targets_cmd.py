"""`tlab targets`: the speed targets, judged from committed winners (exit 1 on a miss)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from tritonbench_lab.cli.options import GpuName, KernelModules, Root, own_kernels
from tritonbench_lab.data.layout import INTERPRETER_SLUG, Layout
from tritonbench_lab.errors import TlabError
from tritonbench_lab.views.targets import targets_report

NOT_JUDGED = "the interpreter's are not judged: its times are not GPU numbers"


def targets(gpu_name: GpuName = None, root: Root = Path("."),
            kernel_module: KernelModules = None) -> None:
    """Print, as Markdown, whether the winners under ROOT/configs/ meet tlab's speed targets:
    matmul within 10% of torch.matmul at 2048-8192, row kernels at 0.85 of a copy of their
    bytes where they move at least 64 MB; your own kernels faster than the PyTorch op at
    each tuned shape (the rule tritonbench_lab.ops runs them by)."""
    own = tuple(own_kernels(kernel_module, root))
    layout = Layout(root)
    tuned = sorted({p.parent.name for p in layout.config_files()} - {INTERPRETER_SLUG})
    if gpu_name:  # a slug, or a GPU's results folder (named by its slug)
        gpus = [Path(gpu_name).name if Path(gpu_name).is_dir() else gpu_name]
        if gpus[0] not in tuned:
            raise TlabError(f"no GPU config files for {gpus[0]!r} under "
                            f"{str(layout.configs)!r} ({NOT_JUDGED}); GPUs with configs "
                            f"there: {', '.join(tuned) or 'none'}")
    else:
        gpus = tuned
    if not gpus:
        raise TlabError(f"no GPU's config files under {str(layout.configs)!r} ({NOT_JUDGED})")
    missed = 0
    for gpu in gpus:
        lines, count = targets_report(layout, gpu, own)
        print("\n".join(lines))
        missed += count
    sys.exit(1 if missed else 0)


def register(app: typer.Typer) -> None:
    app.command("targets")(targets)
