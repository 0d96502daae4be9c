"""`tlab host-times`: time the host's part of a call of each committed winner and of the
PyTorch op at its shape again, without timing the GPU again (hosttimes.py)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from tritonbench_lab.cli.options import (
    Dtypes,
    KernelModules,
    Kernels,
    Root,
    kernel_modules_of,
    known_dtypes,
    prepare,
    split_list,
)
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.env import cuda_available, fingerprint, free_device_bytes
from tritonbench_lab.measure.precompile import default_jobs, precompile


def host_times(root: Root = Path("."), kernels: Kernels = None, dtype: Dtypes = None,
               kernel_modules: KernelModules = None) -> None:
    """Time how long one call of each winner in ROOT/configs/<this gpu>/ holds the calling
    thread, and one call of the PyTorch op at its shape, in turns (what tritonbench_lab.ops
    weighs for eager calls); append them to ROOT/results/<gpu>/host/<kernel>.csv and write
    the configs files again with them. No GPU time is measured again: for winners confirmed
    before tlab timed host times, or after tlab's launch path changed. Winners tuned on
    another toolchain or kernel source are skipped and named. Needs a CUDA GPU."""
    names = known_dtypes(dtype)
    chosen = split_list(kernels)
    if chosen == []:
        raise TlabError("no kernels in --kernel: name some, or leave it out for every kernel "
                        "with a configs file for this GPU")
    if not cuda_available():
        raise TlabError("tlab host-times times a GPU's host and needs CUDA; none is visible")
    backend = prepare(False, kernel_modules, root)
    # late: `tlab --help` imports no torch, and triton only after `prepare`
    from tritonbench_lab.gates.hosttimes import plan_kernel, shift_since, time_kernel
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.plan import job_footprint, pool_memory_budget
    from tritonbench_lab.measure.rows import new_run_id

    fp = fingerprint(backend)
    layout = Layout(root)
    here = sorted(p.stem for p in (layout.configs / fp.gpu_slug).glob("*.csv"))
    if chosen is None and not here:
        raise TlabError(f"no configs for {fp.gpu} ({fp.gpu_slug}) under {layout.configs}: "
                        "sweep a kernel on this GPU first")
    specs = [get_spec(name) for name in (chosen or here)]
    console = Console()
    # Every kernel checked before any is timed; then the winners' configs compiled in a
    # pool of processes (Triton's cache serves this one), then timed one by one.
    plans = [plan_kernel(spec, layout, fp, names, console.print) for spec in specs]
    jobs = [job for plan in plans for job in plan.jobs()]
    if jobs:
        console.print(f"compiling {len(jobs)} winner config(s) in a pool of processes")
        precompile(jobs, processes=default_jobs(),
                   kernel_modules=kernel_modules_of(kernel_modules, root),
                   memory_budget=pool_memory_budget(free_device_bytes("cuda")),
                   footprint_of=job_footprint)
    run_id = new_run_id()
    timed = sum(time_kernel(plan, layout, fp, "cuda", console.print, run_id) for plan in plans)
    console.print(f"{timed} winner(s) timed on {fp.gpu}'s host (run {run_id}); rows in "
                  f"{layout.gpu_results(fp.gpu_slug) / 'host'}")
    # Host times differ between hosts of one GPU model: say how far this one moved ops'
    # eager choices, which the configs now rest on.
    console.print(shift_since(plans, layout, fp.gpu_slug).sentence())


def register(app: typer.Typer) -> None:
    app.command("host-times")(host_times)
