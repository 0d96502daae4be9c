"""A sweep request, built in one place from what users type, checked before anything runs,
and expanded into tasks.

`build_request` turns the command line's words (kernel, dtypes, sizes, space, root, ...)
into a SweepRequest; `check_request` refuses, one line each, what cannot work (an unknown
dtype, a shape the kernel cannot run or that cannot fit in memory, a shape at which no
config of the space is left, a shape far too big for Triton's interpreter, a results file
that is not tlab's); `plan` lists the tasks: per dtype and shape, every baseline, then every
config of the space, pruned ones marked with their reason.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path

from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import CONFIRM, CONTEND, KEY_COLUMNS, SWEEP, TRITON, Record
from tritonbench_lab.data.store import check_appendable
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.cases import memory_estimate, worker_bytes
from tritonbench_lab.measure.env import (
    INTERPRETER,
    Fingerprint,
    choose_backend,
    device_limits,
    fingerprint,
    free_device_bytes,
)
from tritonbench_lab.measure.raydevices import check_address
from tritonbench_lab.measure.source import source_hash
from tritonbench_lab.measure.timing import (
    BOTH_CLOCKS_BELOW_MS,
    CUT_FACTOR,
    GRAPH_ALONE_BELOW_MS,
    STEADY_WARMUP_MS,
    TIMINGS,
    BenchOptions,
)
from tritonbench_lab.measure.worker import Task, Timeouts
from tritonbench_lab.shapes import parse_sizes, to_shapes
from tritonbench_lab.space import DeviceLimits, Space, config_text, load_space
from tritonbench_lab.spec import KernelSpec, Shape, dtype_name, parse_dtype, throughput

# In the interpreter, a shape is refused when its configs would take longer than this in all
# (the interpreter is for checking kernels on small shapes, not for tuning), or when its
# median config would take TOO_SLOW times the verify-and-time deadline (most would be
# timeout rows).
INTERPRETER_BUDGET_S = 600.0
TOO_SLOW = 2.0


@dataclass
class SweepRequest:
    spec: KernelSpec
    dtypes: list  # torch dtypes
    shapes: list[Shape]
    space: Space
    root: Path  # holds results/ and configs/
    interpret: bool
    fingerprint: Fingerprint
    limits: DeviceLimits
    free_bytes: int
    fresh: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)
    seed: int = 0
    kernel_modules: tuple[str, ...] = ()
    bench: BenchOptions = field(default_factory=BenchOptions)
    confirm: int = 3  # leaders per shape re-timed in a fresh worker; 0: none
    jobs: int = 0  # processes compiling configs ahead of timing (precompile.py); < 2: none
    confirm_bench: BenchOptions | None = None  # the confirmations' budget; None: `bench`
    # The first pass's budget (`--first-rep-ms`): every config is timed with it, then only
    # the contenders with `bench` (contenders.py). None: every config gets `bench`.
    first_bench: BenchOptions | None = None
    search: str = "exhaustive"  # search.SEARCHES: which configs of the space are timed
    search_budget: int | None = None  # most configs a search times per shape; None: its own
    devices: tuple[str, ...] = ()  # devices.parse_gpus labels; empty: the one default device
    backend: str = "local"  # or "ray" (raydevices.py)
    ray_address: str | None = None
    baselines: tuple[str, ...] | None = None  # `--baselines`: which to time; None: all
    timing: str = "auto"  # `--timing`: timing.TIMINGS or auto (bench_for)

    @property
    def baseline_names(self) -> list[str]:
        """The baselines this sweep times: by default the kernel's that run here, less those
        that tune themselves (opt-in); with `--baselines all`, every one that runs here;
        else the chosen."""
        if self.baselines is None:
            return self.spec.baselines_for(self.interpret, opt_in=False)
        names = self.spec.baselines_for(self.interpret)
        return names if self.baselines == ALL_BASELINES else [b for b in names
                                                              if b in self.baselines]

    def bench_for(self, phase: str, provider: str = TRITON,
                  fastest_ms: float | None = None) -> BenchOptions:
        """The timing budget of a phase: the first pass over the configs takes
        `first_bench` when there is one, its contenders and the baselines `bench`, the
        confirmations `confirm_bench` (`--confirm-rep-ms`) when given. And its clocks
        (`--timing`): 'auto' ranks the first pass by the CUDA-graph clock alone (launch
        overhead cannot reorder short kernels, at no extra cost) and takes both clocks
        everywhere else (timing.py: which judges), except at a shape whose fastest row so far
        (`fastest_ms`) takes timing.BOTH_CLOCKS_BELOW_MS or more, where events alone do, and
        the contenders and confirmations warm up for timing.STEADY_WARMUP_MS at least; and
        at one whose fastest row takes under timing.GRAPH_ALONE_BELOW_MS, where the graph
        alone does (it would judge every contender there anyway). A
        first pass by the graph clock stops a config far slower than the leader early
        (timing.py, the early cut)."""

        first_pass = phase == SWEEP and provider == TRITON and self.first_bench is not None
        if phase == CONFIRM and self.confirm_bench:
            bench = self.confirm_bench
        elif first_pass:
            bench = self.first_bench
        else:
            bench = self.bench
        timing = self.timing
        long = fastest_ms is not None and fastest_ms >= BOTH_CLOCKS_BELOW_MS
        short = fastest_ms is not None and fastest_ms < GRAPH_ALONE_BELOW_MS
        if timing == "auto":
            timing = "cudagraph" if first_pass or short else "events" if long else "both"
        warmup = bench.warmup_ms
        if long and phase in (CONTEND, CONFIRM):
            warmup = max(warmup, STEADY_WARMUP_MS)
        # auto's first pass (by the graph clock) may stop a config early; a clock the user
        # chose times every config in full.
        cut = CUT_FACTOR if first_pass and self.timing == "auto" else None
        return dataclasses.replace(bench, timing=timing, warmup_ms=warmup, cut_factor=cut)

    @property
    def layout(self) -> Layout:
        return Layout(self.root)

    @functools.cached_property
    def source(self) -> str:
        return source_hash(self.spec)

    @property
    def results_file(self) -> Path:
        return self.layout.results_file(self.fingerprint.gpu_slug, self.spec.name)

    @property
    def configs_file(self) -> Path:
        return self.layout.configs_file(self.fingerprint.gpu_slug, self.spec.name)


@dataclass
class Planned:
    task: Task
    skip_reason: str = ""  # non-empty: pruned, recorded as `skipped` without running


def parse_dtypes(spec: KernelSpec, texts: list[str] | None, interpreting: bool) -> list:
    """`--dtype` values (each may be a comma list) as torch dtypes, without repeats; none
    given: every dtype the kernel supports (in the interpreter: those it can run there)."""
    if texts is None:
        return [d for d in spec.dtypes if not (interpreting and spec.interpreter_refusal(d))]
    names = [part for text in texts for part in text.split(",") if part.strip()]
    if not names:
        raise TlabError(f"no dtypes in --dtype {','.join(texts)!r}: accepted are "
                        f"{', '.join(dtype_name(d) for d in spec.dtypes)}")
    return list(dict.fromkeys(parse_dtype(n) for n in names))


def parse_shapes(spec: KernelSpec, sizes: str | None, shapes: str | None,
                 interpreting: bool) -> list[Shape]:
    """`--sizes` and `--shapes` as the kernel's shapes, without repeats; neither given: the
    kernel's default shapes (small ones in the interpreter). An empty value is refused: it
    is usually an unset shell variable, not a wish for the default sweep."""

    found: list[Shape] = []
    for option, text in (("--sizes", sizes), ("--shapes", shapes)):
        if text is None:
            continue
        if not text.strip():
            raise TlabError(f"{option} is empty: give sizes such as 512-8192, 1024,3000 or "
                            "4096x4096x1024, or leave the option out for the default shapes")
        found += to_shapes(parse_sizes(text), spec.dims,
                           lambda n: spec.size_to_shape(n, interpreting), spec.name)
    if sizes is None and shapes is None:
        found = list(spec.small_shapes if interpreting else spec.default_shapes)
    return list(dict.fromkeys(found))


def build_request(kernel: str, *, dtypes: list[str] | None = None, sizes: str | None = None,
                  shapes: str | None = None, space: str = "full", root: Path = Path("."),
                  interpret: bool | None = None, **options) -> SweepRequest:
    """The one place a SweepRequest is made from what a user typed. Chooses the backend
    (before any kernel module imports triton), loads nothing else."""
    # late: triton reads TRITON_INTERPRET at its first import; choose_backend sets it
    from tritonbench_lab.kernels import get_spec

    backend = choose_backend(interpret)
    interpreting = backend == INTERPRETER
    spec = get_spec(kernel)
    dtypes, shapes = parse_dtypes(spec, dtypes, interpreting), parse_shapes(spec, sizes, shapes,
                                                                             interpreting)
    limits = device_limits(backend)
    where = [(dict(s.dims), d.itemsize) for s in shapes for d in dtypes]  # (`--space default`)
    return SweepRequest(
        spec=spec, dtypes=dtypes, shapes=shapes, space=load_space(spec.space, space, where, limits),
        root=Path(root), interpret=interpreting, fingerprint=fingerprint(backend), limits=limits,
        free_bytes=free_device_bytes(backend), **options)


# `--baselines all`: every baseline, the self-tuning ones too (None: the default set).
ALL_BASELINES = ("all",)


def parse_baselines(text: str | None) -> tuple[str, ...] | None:
    """`--baselines`: None (the default set) when nothing is given, ALL_BASELINES for 'all',
    () for 'none', else the names."""
    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise TlabError(f"--baselines {text!r} names nothing: give baseline names, or all, "
                        "or none")
    if len(names) > 1 and {"all", "none"} & set(names):
        raise TlabError(f"--baselines {text}: all and none stand alone, not in a list of "
                        "names")
    if names == ALL_BASELINES:
        return ALL_BASELINES
    return () if names == ("none",) else names


def job_footprint(job) -> int:
    """Device bytes a compile job (precompile.Job) holds while it compiles: its inputs and
    outputs, the cost model's bytes."""
    # late: triton reads TRITON_INTERPRET at its first import; the command has set it
    from tritonbench_lab.kernels import get_spec

    spec = get_spec(job.kernel)
    return spec.cost(spec.shape(*job.sizes), parse_dtype(job.dtype)).bytes


def pool_memory_budget(free_bytes: int, held_by_workers: int = 0) -> int:
    """Device bytes the compile pool's jobs may hold at once: half of the free memory that
    the timing workers leave (each pool process also holds a CUDA context, and the
    allocator keeps some slack)."""
    return max(1, (free_bytes - held_by_workers) // 2)


def sweep_pool_budget(request: SweepRequest) -> int:
    """The pool's budget in a sweep: beside it, two timing workers (the sweep's and a fresh
    one confirming) may each hold their kept cases' share of the device or the largest shape
    (cases.worker_bytes; the free memory stands for the device's, a context short)."""
    largest = max((memory_estimate(request.spec, shape, dtype)
                   for shape in request.shapes for dtype in request.dtypes), default=0)
    return pool_memory_budget(request.free_bytes,
                              2 * worker_bytes(largest, request.free_bytes))


def interpreter_seconds(request: SweepRequest, shape: Shape, configs: list
                        ) -> tuple[float, float] | None:
    """Estimated interpreter wall time of the attempts of these configs at `shape` (each:
    the first call, verification, the timed runs): (all of them, the median one); None
    without an estimate."""
    estimate = request.spec.interpreter_seconds
    if estimate is None or not configs:
        return None
    calls = 2 + request.bench.interpreter_reps
    times = sorted(calls * estimate(shape, c) for c in configs)
    return sum(times), times[len(times) // 2]


def _too_slow(request: SweepRequest, seconds: tuple[float, float] | None) -> bool:
    return seconds is not None and (seconds[0] > INTERPRETER_BUDGET_S
                                    or seconds[1] > TOO_SLOW * request.timeouts.measure_s)


def _smaller(request: SweepRequest, shape: Shape, configs: list) -> Shape | None:
    """A shape the interpreter can do: the first size (rows, or M) halved until it fits, or
    failing that every size halved."""
    for halve in ([0], range(len(shape.sizes))):
        sizes = list(shape.sizes)
        while any(sizes[i] > 1 for i in halve):
            sizes = [max(1, s // 2) if i in halve else s for i, s in enumerate(sizes)]
            smaller = request.spec.shape(*sizes)
            if not _too_slow(request, interpreter_seconds(request, smaller, configs)):
                return smaller
    return None


def check_request(request: SweepRequest) -> None:
    """Refuse, before anything runs, what cannot work; one line each."""
    _check_options(request)
    _check_dtypes(request)
    for shape in request.shapes:
        request.spec.check_shape(shape)
        for dtype in request.dtypes:
            what = f"{request.spec.name} {dtype_name(dtype)} {shape}"
            _check_memory(request, what, shape, dtype)
            kept, pruned = request.space.prune(dict(shape.dims), dtype.itemsize, request.limits)
            if not kept:
                raise TlabError(f"no config of the space can run {what}: every one is pruned "
                                f"(e.g. {config_text(pruned[0][0])}: {pruned[0][1]})")
            if request.interpret:
                _check_interpreter_time(request, what, shape, kept)
    check_appendable(request.results_file)


def _check_options(request: SweepRequest) -> None:
    """Shapes to sweep, a known clock (`--timing`), the kernel's own baselines, a Ray
    cluster that answers at `--ray-address`."""
    spec = request.spec
    if not request.shapes:
        raise TlabError("no shapes to sweep")
    if request.timing not in ("auto", *TIMINGS):
        raise TlabError(f"--timing {request.timing!r}: accepted are auto, {', '.join(TIMINGS)}")
    if request.interpret and request.timing != "auto":
        raise TlabError(f"--timing {request.timing} chooses a GPU's clock; Triton's "
                        "interpreter is timed by wall clock: leave --timing out there")
    unknown = sorted(set(request.baselines or ()) - set(spec.baselines) - set(ALL_BASELINES))
    if unknown:
        raise TlabError(f"--baselines {','.join(unknown)}: {spec.name}'s baselines are "
                        f"{', '.join(spec.baselines) or 'none'} (or all, none)")
    if request.backend == "ray" and request.ray_address:
        check_address(request.ray_address)  # refused within seconds, not a hang in ray.init


def _check_dtypes(request: SweepRequest) -> None:
    """Dtypes to sweep, each one the kernel takes (and, in the interpreter, one it can run
    there)."""
    spec = request.spec
    if not request.dtypes:
        raise TlabError("no dtypes to sweep")
    for dtype in request.dtypes:
        if dtype not in spec.dtypes:
            names = ", ".join(dtype_name(d) for d in spec.dtypes)
            raise TlabError(f"{spec.name} does not support {dtype_name(dtype)}: it takes {names}")
        if request.interpret and spec.interpreter_refusal(dtype):
            raise TlabError(spec.interpreter_refusal(dtype))


def _check_memory(request: SweepRequest, what: str, shape: Shape, dtype) -> None:
    """The shape must fit in the memory free where it runs (memory_estimate)."""
    need = memory_estimate(request.spec, shape, dtype)
    if need > request.free_bytes:
        where = "host memory" if request.interpret else "free GPU memory"
        raise TlabError(f"{what} needs about {need / 1e9:.1f} GB (inputs, outputs, "
                        f"float64 reference); only {request.free_bytes / 1e9:.1f} GB "
                        f"of {where}")


def _check_interpreter_time(request: SweepRequest, what: str, shape: Shape, kept: list) -> None:
    """In the interpreter, the configs left at the shape must not take too long
    (INTERPRETER_BUDGET_S, TOO_SLOW); the refusal suggests a smaller shape that would do."""
    seconds = interpreter_seconds(request, shape, kept)
    if _too_slow(request, seconds):
        smaller = _smaller(request, shape, kept)
        hint = f"; try {smaller}" if smaller else ""
        raise TlabError(
            f"{what} is too big for Triton's interpreter: its {len(kept)} configs "
            f"would take about {seconds[0] / 60:.0f} min (the median one "
            f"{seconds[1]:.0f} s, --timeout {request.timeouts.measure_s:g} s){hint}, "
            "or run it on a GPU")


def plan(request: SweepRequest) -> list[Planned]:
    spec = request.spec
    planned = []
    for dtype in request.dtypes:
        name = dtype_name(dtype)
        for shape in timing_order(request, dtype):
            planned += [Planned(Task(spec.name, b, shape.sizes, name, {}, request.seed))
                        for b in request.baseline_names]
            for config in request.space:
                reason = request.space.why_pruned(config, dict(shape.dims), dtype.itemsize,
                                                  request.limits)
                task = Task(spec.name, TRITON, shape.sizes, name, dict(config), request.seed)
                planned.append(Planned(task, reason or ""))
    return planned


def timing_order(request: SweepRequest, dtype) -> list:
    """A dtype's shapes in the order the sweep times them: as given, except where a compile
    pool runs (a GPU, `--jobs` 2 or more), largest work first. The first shape's first pass
    waits on the pool's compiles; a large shape's configs each keep the GPU busy for as long
    as the pool takes to compile the next ones, a small shape's are timed in a few ms and
    wait (timed first, a small shape's first pass spends most of its time waiting on
    compiles), and its short kernels are timed while the pool's processes load the CPU."""
    if request.interpret or request.jobs < 2:
        return list(request.shapes)
    spec = request.spec  # the work of a call: its throughput in a millisecond
    return sorted(request.shapes, key=lambda s: -throughput(spec.cost(s, dtype), spec.metric, 1.0))


def task_key(request: SweepRequest, task: Task) -> tuple[str, ...]:
    """The resume key (records.KEY_COLUMNS) a row of this task will have."""
    fp = request.fingerprint
    values = {"gpu_slug": fp.gpu_slug, "torch": fp.torch, "triton": fp.triton, "tlab": fp.tlab,
              "source": request.source, "kernel": task.kernel, "provider": task.provider,
              "dtype": task.dtype, "shape": str(request.spec.shape(*task.sizes)),
              "config": config_text(task.config)}
    return tuple(str(values[c]) for c in KEY_COLUMNS)


def pruned_key(request: SweepRequest, p: Planned) -> tuple[str, ...] | None:
    """What a `skipped` row of this planned config says (Record.pruned_key), None when it is
    not pruned. A sweep writes the row once per GPU and reason, not again for a new toolchain
    or source as it measures again: the row holds no measurement, and every edit of a module
    would otherwise append its whole pruned space (softmax: 90,000 rows)."""
    if not p.skip_reason:
        return None
    return (request.fingerprint.gpu_slug, p.task.kernel, p.task.dtype,
            str(request.spec.shape(*p.task.sizes)), config_text(p.task.config), p.skip_reason)


def estimated_total_seconds(request: SweepRequest, planned: list[Planned]) -> float | None:
    """Rough interpreter time of the planned attempts (None on a GPU or without a model)."""
    if not request.interpret or request.spec.interpreter_seconds is None:
        return None
    by_shape: dict[tuple[int, ...], list] = {}
    for item in planned:
        if item.task.provider == TRITON and not item.skip_reason:
            by_shape.setdefault(item.task.sizes, []).append(item.task.config)
    return sum(interpreter_seconds(request, request.spec.shape(*sizes), configs)[0]
               for sizes, configs in by_shape.items())


def is_same_toolchain(request: SweepRequest, row: Record) -> bool:
    fp = request.fingerprint
    return (row.gpu_slug, row.torch, row.triton, row.tlab, row.source) == (
        fp.gpu_slug, fp.torch, fp.triton, fp.tlab, request.source)

