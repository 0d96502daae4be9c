"""`tlab sweep KERNEL`: tune, verify, measure and store; then the winners table."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from tritonbench_lab.cli.options import Interpret, KernelModules, load_modules
from tritonbench_lab.errors import TlabError

SPACE_PRESETS = {
    "full": "every config of the kernel's space (pruned for the device)",
    "default": "only the kernel's untuned default config",
}


def load_space(spec, text: str):
    """--space: a preset name, or a JSON file {"PARAM": [values], ...} replacing those lists."""
    if text == "full":
        return spec.space
    if text == "default":
        return narrowed(spec.space, {k: (v,) for k, v in spec.space.default.items()})
    path = Path(text)
    if not path.is_file():
        raise TlabError(f"--space {text!r}: not a preset ({', '.join(SPACE_PRESETS)}) nor a file")
    try:
        overrides = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise TlabError(f"--space file {text!r} is not valid JSON: {err}") from err
    if not isinstance(overrides, dict) or not overrides:
        raise TlabError(f"--space file {text!r} must be a JSON object of parameter -> [integers]")
    params = dict(spec.space.params)
    for name, values in overrides.items():
        if name not in params:
            raise TlabError(f"--space file {text!r}: unknown parameter {name!r} "
                            f"(known: {', '.join(params)})")
        # 0 is a value only where the kernel's own space has it (PER_SM=0: not persistent).
        lowest = 0 if 0 in params[name] else 1
        ok = isinstance(values, list) and values and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= lowest for v in values)
        if not ok:
            kind = "integers >= 0" if lowest == 0 else "positive integers"
            raise TlabError(f"--space file {text!r}: {name} must be a non-empty list of {kind}")
        params[name] = tuple(values)
    return narrowed(spec.space, params)


def narrowed(space, params):
    """`space` with these parameter lists, its constraints and other settings kept. Its
    default config stays when still inside (else the first value of each list), and so do
    the values completing configs from before an added parameter."""
    default = dict(space.default)
    if any(default[k] not in params[k] for k in params):
        default = {k: params[k][0] for k in params}
    added = {k: v for k, v in space.added.items() if v in params[k]}
    return dataclasses.replace(space, params=params, default=default, added=added)


def sweep(
    kernel: Annotated[str, typer.Argument(help="Kernel to tune (see `tlab list`).")],
    dtype: Annotated[str | None, typer.Option(
        "--dtype", help="Comma-separated dtypes (fp32, fp16, bf16). Default: all the kernel "
        "supports (in the interpreter: all it can run there).")] = None,
    sizes: Annotated[str | None, typer.Option(
        "--sizes", help="Sizes: 512-8192 (powers of two), 512-8192:512 (step), 1024,3000 "
        "(list) or explicit shapes like 4096x4096x1024. One size means M=N=K for matmul and "
        "the row width (at the kernel's default row count) for row kernels.")] = None,
    shapes: Annotated[str | None, typer.Option(
        "--shapes", help="Explicit shapes, comma-separated, e.g. 8192x1024,4096x4096x512.")] = None,
    space: Annotated[str, typer.Option(
        "--space", help="Config space: 'full', 'default' (the untuned config only), or a JSON "
        "file mapping parameters to value lists.")] = "full",
    out: Annotated[Path, typer.Option(
        "--out", help="Folder holding results/ and configs/.")] = Path("."),
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Measure again what was measured before (rows are appended, never "
        "rewritten).")] = False,
    interpret: Interpret = None,
    compile_timeout: Annotated[float, typer.Option(
        "--compile-timeout", min=1.0, help="Seconds a config's first call (compile and one "
        "run) may take before it is a timeout row and its worker is restarted.")] = 120.0,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=1.0, help="Seconds a config's verification and timing may take "
        "before it is a timeout row and its worker is restarted.")] = 60.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random inputs.")] = 0,
    rep_ms: Annotated[int, typer.Option(
        "--rep-ms", min=1, help="do_bench's timing budget per config, in milliseconds.")] = 100,
    confirm: Annotated[int, typer.Option(
        "--confirm", min=0, help="After the sweep, verify and time again, in a fresh worker "
        "process, each shape's N fastest configs and every baseline; winners are chosen by "
        "these times, because the fastest of many noisy first times is biased low. 0 turns "
        "confirmation off.")] = 3,
    kernel_module: KernelModules = None,
) -> None:
    """Tune KERNEL: verify and time every config over the shapes, store rows and winners."""
    from tritonbench_lab.env import (
        INTERPRETER,
        choose_backend,
        device_limits,
        fingerprint,
        free_device_bytes,
    )

    backend = choose_backend(interpret)
    console = Console(stderr=True)
    load_modules(kernel_module)
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.shapes import parse_sizes, to_shapes
    from tritonbench_lab.spec import dtype_name, parse_dtype
    from tritonbench_lab.sweep import SweepRequest, check_request
    from tritonbench_lab.timing import BenchOptions
    from tritonbench_lab.worker import Timeouts

    spec = get_spec(kernel)
    interpreting = backend == INTERPRETER
    if dtype is not None:
        dtypes = [parse_dtype(d) for d in dtype.split(",") if d.strip()]
        if not dtypes:
            raise TlabError(f"no dtypes in --dtype {dtype!r}: accepted are "
                            f"{', '.join(dtype_name(d) for d in spec.dtypes)}")
    else:
        dtypes = [d for d in spec.dtypes if not (interpreting and spec.interpreter_refusal(d))]
    shape_list = []
    for text in (sizes, shapes):
        if text:
            shape_list += to_shapes(parse_sizes(text), spec.dims, spec.size_to_shape, spec.name)
    # Repeats would be measured twice in one run (resume only knows earlier runs' rows).
    dtypes = list(dict.fromkeys(dtypes))
    shape_list = list(dict.fromkeys(shape_list))
    if not shape_list:
        shape_list = list(spec.small_shapes if interpreting else spec.default_shapes)
    request = SweepRequest(
        spec=spec, dtypes=dtypes, shapes=shape_list, space=load_space(spec, space), root=out,
        interpret=interpreting, fingerprint=fingerprint(backend), limits=device_limits(backend),
        free_bytes=free_device_bytes(backend), fresh=fresh, seed=seed,
        timeouts=Timeouts(first_call_s=compile_timeout, measure_s=timeout),
        kernel_modules=tuple(str(p) for p in kernel_module or ()),
        bench=BenchOptions(rep_ms=rep_ms), confirm=confirm,
    )
    check_request(request)  # every refusal before any output, so an error is one line
    if interpreting:
        console.print("[bold yellow]No GPU in use: running in Triton's interpreter on the CPU"
                      f"{'' if (sizes or shapes) else ', on small shapes'}. Rows are labelled "
                      "'interpreter' and timed by wall clock; they are not GPU numbers.[/]")
    result = _run_with_progress(request, console)
    print_summary(result, request, Console())


def _run_with_progress(request, console):
    from tritonbench_lab.records import OK, TRITON, is_confirmation
    from tritonbench_lab.store import results_path
    from tritonbench_lab.sweep import run_sweep

    best: dict[tuple[str, str], float] = {}
    kept = 0
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task(request.spec.name, total=None)

        def on_start(total: int) -> None:
            progress.update(bar, total=total)

        def on_row(record) -> None:
            nonlocal kept
            kept += 1
            key = (record.dtype, record.shape)
            if is_confirmation(record):
                so_far = "confirming the leaders"
            else:
                if record.provider == TRITON and record.status == OK and record.throughput:
                    best[key] = max(best.get(key, 0.0), record.throughput)
                so_far = f"best {best[key]:.4g} {record.metric}" if key in best else "no winner yet"
            progress.update(bar, advance=1, description=(
                f"{request.spec.name} {record.dtype} {record.shape}  {so_far}"))

        try:
            result = run_sweep(request, on_start, on_row)
        except KeyboardInterrupt:
            progress.stop()
            path = results_path(request.root, request.fingerprint.gpu_slug, request.spec.name)
            console.print(f"Interrupted: the {kept} row(s) measured in this run are kept in "
                          f"{path}; the config in flight was not recorded. Run the same "
                          "command again to resume (rows already measured are skipped).")
            raise typer.Exit(130) from None
    if result.already_done:
        console.print(f"{result.already_done} task(s) already measured in "
                      f"{result.results_file} were skipped (use --fresh to measure again).")
    confirmed = sum(r.run_id == result.run_id and is_confirmation(r) for r in result.records)
    if confirmed:
        console.print(f"{confirmed} leader(s) and baseline(s) were timed again in a fresh "
                      "process; winners are chosen by those times.")
    if result.measured == 0:
        console.print("Nothing new to measure.")
    return result


def print_summary(result, request, console: Console) -> None:
    from tritonbench_lab.calibrate import ceiling_for, ceilings_path, load_ceilings, traffic_of
    from tritonbench_lab.records import OK, TRITON, parse_config_text
    from tritonbench_lab.space import config_legend, config_short
    from tritonbench_lab.spec import dtype_name

    ceilings = load_ceilings(ceilings_path(request.root, request.fingerprint.gpu_slug))
    wanted = {(dtype_name(d), str(s)) for d in request.dtypes for s in request.shapes}
    metric = request.spec.metric
    baselines = list(request.spec.baselines)
    table = Table(title=f"{request.spec.name} on {request.fingerprint.gpu} ({metric})")
    columns = ["dtype", "shape", "winner config", "triton", *baselines, "vs best"]
    if ceilings:
        columns.append("% ceiling")
    for column in columns:
        # Numbers never wrap; on a narrow terminal the config column folds instead.
        table.add_column(column, justify="left" if column == "winner config" else "right",
                         no_wrap=column != "winner config", overflow="fold")
    latest = {}
    for r in result.records:  # newest row per (dtype, shape, provider) of this toolchain
        if r.status == OK and r.provider != TRITON and (r.dtype, r.shape) in wanted:
            latest[(r.dtype, r.shape, r.provider)] = r
    for w in result.winners:
        if (w["dtype"], w["shape"]) not in wanted:
            continue
        value = float(w["throughput"])
        cells = []
        for b in baselines:
            row = latest.get((w["dtype"], w["shape"], b))
            cells.append(f"{row.throughput:.4g}" if row else "-")
        # GB/s kernels: against a copy of the same bytes where the copy curve is calibrated.
        ceiling = ceiling_for(metric, w["dtype"], ceilings,
                              traffic_of(value, float(w["p50_ms"]), metric))
        row = [w["dtype"], w["shape"], config_short(parse_config_text(w["config"])),
               f"{value:.4g}", *cells,
               f"{float(w['speedup']):.2f}x {w['best_baseline']}" if w["speedup"] else "-"]
        if ceilings:
            row.append(f"{100 * value / ceiling[1]:.0f}% {ceiling[0]}" if ceiling else "-")
        table.add_row(*row)
    console.print(table)
    legend = config_legend(parse_config_text(w["config"]) for w in result.winners)
    if legend:
        console.print(legend)
    if not ceilings:
        console.print("No ceilings for this GPU yet: run `tlab calibrate` for % of ceiling.")
    console.print(f"rows: {result.results_file}   winners: {result.configs_file} "
                  f"(each looked up again with tuned.lookup: all {len(result.winners)} match)")


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep)
