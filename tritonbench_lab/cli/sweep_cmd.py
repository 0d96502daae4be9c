"""`tlab sweep KERNEL`: tune, verify, measure and store; then the summary (sweep_summary.py).
With --shapes-from, the kernels and shapes a program recorded (runtime/recording.py)."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tritonbench_lab.cli.options import (
    Dtypes,
    Interpret,
    KernelModules,
    Root,
    complete_kernels,
    kernel_modules_of,
    prepare,
)
from tritonbench_lab.cli.sweep_summary import print_summary
from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import CONTEND
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure import children
from tritonbench_lab.measure.devices import parse_gpus
from tritonbench_lab.measure.env import bytecode_note
from tritonbench_lab.measure.precompile import default_jobs
from tritonbench_lab.measure.timing import MAX_REP_MS, BenchOptions
from tritonbench_lab.measure.worker import MAX_TIMEOUT_S, Timeouts
from tritonbench_lab.search.strategies import parse_search


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise typer.BadParameter("must be a finite number of seconds")
    return value


def _budget(rep_ms: int):
    return BenchOptions(warmup_ms=min(BenchOptions.warmup_ms, rep_ms), rep_ms=rep_ms)


def _first_pass_budget(rep_ms: int):
    """The first pass's: no warm-up beyond its own calls. A config's first call, its warm
    call and its estimate calls run it before it is timed, and the GPU has been busy all
    along; replaying its graph for a warm-up as well (as long as the first pass's budget)
    would add much to each config's time at a small shape. Contenders get the full warm-up."""

    return BenchOptions(warmup_ms=0, rep_ms=rep_ms)


def sweep(
    kernel: Annotated[str | None, typer.Argument(
        metavar="KERNEL", help="Kernel (see `tlab list`); with --shapes-from, default: each "
        "kernel the file holds calls of, one sweep after another.",
        autocompletion=complete_kernels, show_default=False)] = None,
    dtype: Dtypes = None,
    sizes: Annotated[str | None, typer.Option(
        "--sizes", metavar="SIZES",
        help="Sizes: 512-8192 (powers of two), 512-8192:512 (step), 1024,3000 "
        "(list) or explicit shapes like 4096x4096x1024. One size means M=N=K for matmul and "
        "the row width for row kernels (at their default row count on a GPU, a few dozen "
        "rows in the interpreter).", show_default=False)] = None,
    shapes: Annotated[str | None, typer.Option(
        "--shapes", metavar="SHAPES",
        help="Explicit shapes, comma-separated, e.g. 8192x1024,4096x4096x512.",
        show_default=False)] = None,
    shapes_from: Annotated[Path | None, typer.Option(
        "--shapes-from", metavar="FILE",
        help="The shapes and dtypes a program called tritonbench_lab.ops with, as recorded "
        "by ops.record_shapes or TLAB_RECORD_SHAPES=FILE (docs/runtime.md). Shapes the kernel "
        "refuses are left out.", show_default=False)] = None,
    space: Annotated[str, typer.Option(
        "--space", metavar="SPACE",
        help="Config space: 'full', 'default' (the untuned config only), or a JSON "
        "file mapping parameters to value lists.")] = "full",
    root: Root = Path("."),
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Measure again what was measured before (rows are appended, never "
        "rewritten).")] = False,
    interpret: Interpret = None,
    compile_timeout: Annotated[float, typer.Option(
        "--compile-timeout", metavar="SECONDS", min=1.0, max=MAX_TIMEOUT_S, callback=_finite,
        help="Seconds a config's first call "
        "(compile and one run) may take before it is a timeout row and its worker is "
        "restarted.")] = 120.0,
    timeout: Annotated[float, typer.Option(
        "--timeout", metavar="SECONDS", min=1.0, max=MAX_TIMEOUT_S, callback=_finite,
        help="Seconds a config's verification and "
        "timing may take before it is a timeout row and its worker is restarted.")] = 60.0,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the random inputs.")] = 0,
    rep_ms: Annotated[int, typer.Option(
        "--rep-ms", metavar="MS", min=1, max=MAX_REP_MS,
        help="do_bench's full timing budget, in milliseconds (its warm-up: the same, at most "
        "25): for the baselines and for the contenders of the first pass.")] = 100,
    first_rep_ms: Annotated[int | None, typer.Option(
        "--first-rep-ms", metavar="MS", min=0, max=MAX_REP_MS,
        help="Budget of the first pass, which times every config only to rank them (no "
        "warm-up beyond the calls that size its timing); the configs whose time could "
        "plausibly beat the leader's (given the noise measured; at most eight) are then "
        "timed with --rep-ms. 0: every config gets --rep-ms. Default: 5 on a GPU, 0 in the "
        "interpreter.", show_default=False)] = None,
    search: Annotated[str, typer.Option(
        "--search", metavar="STRATEGY",
        help="Which configs to time per shape: exhaustive (all), prior (a neighbourhood "
        "search from the configs that won at the nearest tuned shapes and those fast across "
        "the results file's shapes; a fifth of the space), local (the same from the "
        "default config; a third), random, optuna (needs tlab[optuna]); ':N' caps the "
        "configs timed per shape, e.g. prior:64.")] = "exhaustive",
    gpus: Annotated[str | None, typer.Option(
        "--gpus", metavar="all|0,1,...",
        help="GPUs to measure on, one isolated worker each (they must be one model). In the "
        "interpreter, CPU worker processes stand in: one per number given (all: one per "
        "core). Default: the current GPU.",
        show_default=False)] = None,
    backend: Annotated[str, typer.Option(
        "--backend", metavar="local|ray",
        help="Where the devices' workers run: local (processes of this machine) or ray (each "
        "device a Ray actor holding one GPU, on a local instance or, with --ray-address, a "
        "running cluster; pip install 'tritonbench-lab[ray]').")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", metavar="ADDRESS",
        help="The Ray cluster to join (as `ray start --head` printed it); default: a local "
        "Ray instance.", show_default=False)] = None,
    confirm_rep_ms: Annotated[int | None, typer.Option(
        "--confirm-rep-ms", metavar="MS", min=1, max=MAX_REP_MS,
        help="do_bench's budget for the confirmations, which choose the winners; a short "
        "--rep-ms then only ranks the space. Default: --rep-ms.", show_default=False)] = None,
    confirm: Annotated[int, typer.Option(
        "--confirm", metavar="N", min=0,
        help="After the sweep, verify and time again, in a fresh worker "
        "process, each shape's N fastest configs and every baseline; winners are chosen by "
        "these times, because the fastest of many noisy first times is biased low. 0 turns "
        "confirmation off.")] = 3,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", metavar="N", min=1,
        help="On a GPU, processes that compile the configs ahead of timing (1: each config "
        "compiles in the timing worker when first run). Default: the CPU cores less one per "
        "device measured on.",
        show_default=False)] = None,
    timing: Annotated[str, typer.Option(
        "--timing", metavar="auto|events|cudagraph|both",
        help="The GPU clock(s): events (triton.testing.do_bench), cudagraph (the same calls "
        "replayed from a CUDA graph, so no launch gaps are timed) or both (a row is then "
        "judged on its graph time when under 20 us, else on its events time, and flagged "
        "when the two differ by over 10%). auto, the default, times the first pass by "
        "cudagraph and everything else by both.")] = "auto",
    baselines: Annotated[str | None, typer.Option(
        "--baselines", metavar="all|none|NAMES",
        help="Which of the kernel's baselines to time (see `tlab list`), comma-separated, "
        "e.g. torch, or all, or none. Default: all but the opt-in ones, which tune "
        "themselves (inductor, torch.compile's max-autotune of matmul and matmul_gelu: "
        "8-35 s a shape on an H200).",
        show_default=False)] = None,
    kernel_module: KernelModules = None,
) -> None:
    """Tune KERNEL: verify and time every config over the shapes, store rows and winners
    (with --shapes-from, the shapes a program recorded, of each kernel it called).

    The summary lists, per dtype and shape, how many configs ended in each status and the
    first error of each kind of failure. Exit code: 0 when every shape asked for has a
    correct config; 1 when a shape has none (the summary names it and says why; its rows
    are kept); 2 for bad input, refused before anything is measured or written; 130 when
    interrupted (the rows measured so far are kept: run the command again to resume).
    """
    if shapes_from is not None and kernel is None:
        return _sweep_each_recorded(dict(locals()))
    dtype, shapes = _recorded(shapes_from, kernel, dtype, sizes, shapes)
    if interpret is not True and backend == "local" and (
            fresh or _nothing_measured_yet(root, kernel)):
        children.start_early()  # first: the imports below start torch; see the helper

    # late: `tlab --help` imports no torch
    from tritonbench_lab.measure.contract_check import check_user_kernels
    from tritonbench_lab.measure.plan import build_request, check_request, parse_baselines

    # A user's kernel keeps the contract, checked before anything reads its shapes or costs.
    check_user_kernels(prepare(interpret, kernel_module, root), only=[kernel])
    strategy, budget = parse_search(search)
    _refuse_contradictions(backend, ray_address, rep_ms, first_rep_ms, confirm, confirm_rep_ms)
    request = build_request(
        kernel, dtypes=dtype, sizes=sizes,
        shapes=shapes, space=space, root=root, interpret=interpret, fresh=fresh,
        seed=seed, timeouts=Timeouts(first_call_s=compile_timeout, measure_s=timeout),
        kernel_modules=kernel_modules_of(kernel_module, root),
        bench=_budget(rep_ms), confirm=confirm,
        confirm_bench=_budget(confirm_rep_ms) if confirm_rep_ms else None,
        search=strategy, search_budget=budget, backend=backend, ray_address=ray_address,
        baselines=parse_baselines(baselines), timing=timing)
    devices = tuple(parse_gpus(gpus, request.interpret)) if gpus is not None else ()
    first = first_rep_ms if first_rep_ms is not None else (0 if request.interpret else 5)
    request = dataclasses.replace(
        request, devices=devices,
        first_bench=_first_pass_budget(first) if 0 < first < rep_ms else None,
        jobs=jobs if jobs is not None else max(1, default_jobs() - max(1, len(devices))))
    check_request(request)  # every refusal before any output, so an error is one line
    console = Console(stderr=True)
    console.soft_wrap = not console.is_terminal  # a log's lines as long as they are
    if request.interpret:
        children.stop_early()
        _say_interpreter(request, console, given=sizes is not None or shapes is not None)
    opted_out = [b for b in request.spec.baselines_for(request.interpret)
                 if b not in request.baseline_names and b in request.spec.opt_in_baselines]
    if opted_out:
        console.print(f"Not timing {', '.join(opted_out)} (opt-in: it tunes itself for "
                      "seconds a shape); --baselines all adds it.")
    if not request.interpret:
        note = bytecode_note()
        if note:
            console.print(note)
    result = _run_with_progress(request, console)
    failed = print_summary(result, request, Console())
    if failed:
        where = ", ".join(f"{t.dtype} {t.shape}" for t in failed)
        print(f"tlab: no correct config at {len(failed)} of {len(result.shapes)} shape(s): "
              f"{where} (the summary above says why)", file=sys.stderr)
        raise typer.Exit(1)


def _refuse_contradictions(backend: str, ray_address: str | None, rep_ms: int,
                           first_rep_ms: int | None, confirm: int,
                           confirm_rep_ms: int | None) -> None:
    """Options that contradict each other, so that one of them would be silently ignored."""
    if backend not in ("local", "ray"):
        raise TlabError(f"--backend {backend!r}: accepted are local and ray")
    if ray_address is not None and backend != "ray":
        raise TlabError(f"--ray-address {ray_address} is for --backend ray; with --backend "
                        f"{backend} nothing would use it")
    if confirm == 0 and confirm_rep_ms is not None:
        raise TlabError(f"--confirm-rep-ms {confirm_rep_ms} times the confirmations, and "
                        "--confirm 0 turns them off: drop one of the two")
    if first_rep_ms is not None and first_rep_ms > rep_ms:
        raise TlabError(f"--first-rep-ms {first_rep_ms} is above --rep-ms {rep_ms}: the first "
                        "pass only ranks the configs, on a shorter budget than the full one "
                        "(0: no first pass)")


def _recorded(path: Path | None, kernel: str | None, dtype: list[str] | None,
              sizes: str | None, shapes: str | None) -> tuple[list[str] | None, str | None]:
    """--dtype and --shapes, from --shapes-from for one kernel where it is given: the dtypes
    recorded (or those of --dtype among them) and the shapes recorded for it."""
    # late: `tlab --help` imports no torch (nor runtime/)
    from tritonbench_lab.cli.options import known_dtypes
    from tritonbench_lab.runtime.recording import recorded_kernels, recorded_shapes

    if kernel is None:
        raise TlabError("which kernel? name one (`tlab list`), or give --shapes-from FILE")
    if path is None:
        return dtype, shapes
    if sizes is not None or shapes is not None:
        raise TlabError("--shapes-from gives the shapes: leave out --sizes and --shapes")
    dtypes, found, refused = recorded_shapes(path, kernel, known_dtypes(dtype))
    if not found:
        held = ", ".join(recorded_kernels(path))
        what = f"{kernel} {'/'.join(known_dtypes(dtype))}" if dtype else kernel
        raise TlabError(f"--shapes-from {str(path)!r}: no calls of {what} that the kernel "
                        f"takes are recorded there (it holds calls of {held})")
    if refused:
        print(f"{kernel}: leaving out {refused} recorded shape(s) the kernel does not take "
              "(ops calls the PyTorch op there)", file=sys.stderr)
    return dtypes, ",".join(found)


def _sweep_each_recorded(given: dict) -> None:
    """`tlab sweep --shapes-from FILE` without a kernel: each kernel the file holds calls of,
    one sweep after another; exit code 1 if any shape of any of them has no correct config."""
    # late: `tlab --help` imports no torch (nor runtime/)
    from tritonbench_lab.runtime.recording import recorded_kernels

    failed = []
    kernels = recorded_kernels(given["shapes_from"])
    for number, name in enumerate(kernels, start=1):
        print(f"[{number}/{len(kernels)}] tlab sweep {name} --shapes-from "
              f"{given['shapes_from']}", file=sys.stderr)
        try:
            sweep(**{**given, "kernel": name})
        except typer.Exit as stop:
            if stop.exit_code != 1:
                raise
            failed.append(name)
    if failed:
        raise typer.Exit(1)


def _nothing_measured_yet(root: Path, kernel: str) -> bool:
    """No rows of this kernel in the folder, for any GPU (layout.py): a sweep there has work
    for certain, so the children's server may start before torch is imported (which is what
    tells this GPU's folder and the plan). Elsewhere it starts only once the plan finds work:
    its imports beside the command's would make a re-run with nothing to measure slower."""

    layout = Layout(root)
    return not any(layout.results_file(slug, kernel).exists() for slug in layout.gpu_slugs())


def _say_interpreter(request, console: Console, given: bool) -> None:
    # late: `tlab --help` imports no torch
    from tritonbench_lab.measure.plan import estimated_total_seconds, plan

    seconds = estimated_total_seconds(request, plan(request))
    estimate = f" (about {seconds / 60:.0f} min if nothing was measured before)" \
        if seconds and seconds > 60 else ""
    console.print("[bold yellow]No GPU in use: running in Triton's interpreter on the CPU"
                  f"{'' if given else ', on small shapes'}{estimate}. Rows are labelled "
                  "'interpreter' and timed by wall clock; they are not GPU numbers.[/]")


def _run_with_progress(request, console: Console):
    # late: `tlab --help` imports no torch
    from tritonbench_lab.cli.progress import SweepProgress
    from tritonbench_lab.measure.sweep import run_sweep

    progress = SweepProgress(request.spec.name, console)
    try:
        with progress:
            result = run_sweep(request, progress)
    except KeyboardInterrupt:
        console.print(f"Interrupted: the {progress.rows} row(s) measured in this run are kept "
                      f"in {request.results_file}; the config in flight was not recorded. Run "
                      "the same command again to resume (rows already measured are skipped).")
        raise typer.Exit(130) from None
    if result.already_done:
        console.print(f"{result.already_done} task(s) already measured in "
                      f"{result.results_file} were skipped (use --fresh to measure again).")
    if result.pruned_before:  # even with --fresh: a pruning rule is not a measurement
        console.print(f"{result.pruned_before} config(s) pruned by an earlier run were not "
                      "recorded again (their skipped rows say why).")

    mine = [r for r in result.records if r.run_id == result.run_id]
    contended = sum(r.phase == CONTEND for r in mine)
    if contended:
        console.print(f"{contended} contender(s) of the first pass "
                      f"({request.first_bench.rep_ms} ms each) were timed again with the full "
                      f"budget ({request.bench.rep_ms} ms).")
    confirmed = sum(r.confirmed for r in mine)
    if confirmed:
        console.print(f"{confirmed} leader(s) and baseline(s) were timed again in a fresh "
                      "process; winners are chosen by those times.")
    if result.measured == 0:
        console.print("Nothing new to measure.")
    return result


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep)
