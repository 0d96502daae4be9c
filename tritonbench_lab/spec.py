"""The kernel contract: everything a harness needs to tune, verify and measure one kernel.

A kernel module fills in one `KernelSpec` (see `tritonbench_lab/kernels/matmul.py` for a
complete example, and README "Add your own kernel"). The harness then

1. draws seeded random inputs with `make_inputs(shape, dtype, device, seed)`,
2. allocates outputs with `allocate_outputs(inputs)` and poisons them with NaN,
3. runs `launch(inputs, config, outputs)` for each config of `space` that survives pruning,
4. checks the outputs against `reference(inputs)` at `tolerance[dtype]`,
5. times the correct configs and every entry of `baselines`,
6. turns times into TFLOP/s or GB/s with `cost(shape, dtype)`.

Inputs are a dict of named tensors (and scalars such as `eps`); outputs are a tuple of
tensors, so a kernel with two results (residual-add + RMSNorm writes both) fits the same
shape as one with a single result.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from tritonbench_lab.data.records import DTYPE_NAMES as NAMES
from tritonbench_lab.data.records import GBPS, TFLOPS, dtype_name_of, parse_config_text
from tritonbench_lab.errors import TlabError
from tritonbench_lab.runtime import launching
from tritonbench_lab.shapes import Shape  # re-exported: kernel modules import Shape from here
from tritonbench_lab.space import HOPPER, Config, DeviceLimits, Space, config_text

# Names users type for dtypes, in the order tlab lists them.
DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    # inputs only: the fp8 kernels' outputs are bf16 (matmul_fp8)
    "fp8e4m3": torch.float8_e4m3fn,
    "fp8e5m2": torch.float8_e5m2,
}
DTYPE_NAMES: dict[torch.dtype, str] = {v: k for k, v in DTYPES.items()}

Inputs = dict[str, Any]
Outputs = tuple[torch.Tensor, ...]


def parse_dtype(text: str) -> torch.dtype:
    """'bf16' -> torch.bfloat16; anything else is a TlabError naming the accepted names."""
    name = dtype_name_of(text)
    if name is None:
        raise TlabError(f"unknown dtype {text!r}: accepted are {', '.join(NAMES)}")
    return DTYPES[name]


def dtype_name(dtype: torch.dtype) -> str:
    return DTYPE_NAMES[dtype]


@dataclass(frozen=True)
class Tolerance:
    """An output element passes when |out - ref| <= atol + rtol * |ref| (ref in float64)."""

    atol: float
    rtol: float


@dataclass(frozen=True)
class Cost:
    """Work one call must do: floating-point operations and the fewest bytes it must move
    through device memory (each input read once, each output written once)."""

    flops: int
    bytes: int


def throughput(cost: Cost, metric: str, ms: float) -> float:
    """TFLOP/s or GB/s (10^9 bytes) of one call that took `ms` milliseconds."""
    seconds = ms * 1e-3
    if metric == TFLOPS:
        return cost.flops / seconds / 1e12
    return cost.bytes / seconds / 1e9


@dataclass(frozen=True)
class KernelSpec:
    """One kernel, described completely enough for tlab to tune, judge and serve it.

    The fields, by what they say (keyword arguments, any order; the ones with a default may be
    left out):

    What the kernel is:
        name: registry name, a lower-case identifier (`matmul`).
        summary: one line for `tlab list`.
        dims: names of the shape's sizes, e.g. ("M", "N", "K") or ("rows", "cols").
        dtypes: dtypes the kernel supports.
        metric: TFLOPS for compute-bound kernels, GBPS for memory-bound ones.
        cost: (shape, dtype) -> Cost: the work and the fewest bytes one call must move.

    How it is launched:
        launch: (inputs, config, outputs) -> outputs; runs the Triton kernel under exactly
            `config` (no autotuning inside) and writes into `outputs`. tlab hands it only
            complete configs: every parameter of `space` (a stored config from before a
            parameter existed is completed with the space's `added` value first).
        allocate_outputs: inputs -> empty output tensors of the right shapes and dtypes.
        space: the config space, with its constraints.
        check_shape: shape -> None, raising TlabError for a shape the kernel cannot run
            (sweeps refuse such shapes up front; `ops` calls the PyTorch op there).
        bind: config -> a launcher bound to that config, taking the op's own arguments
            (what `tritonbench_lab.ops` calls). Default: the kernel module's `bind`
            function, if it has one (`bound`).

    How it is judged:
        make_inputs: (shape, dtype, device, seed) -> inputs; seeded random, never zeros.
        reference: inputs -> outputs computed in float64 (the ground truth).
        tolerance: dtype -> Tolerance.
        baselines: provider name -> (inputs -> outputs), e.g. "torch" (the PyTorch op;
            every kernel should have it), "unfused", "compiled" (see `compile_baseline`).
        gpu_only_baselines: names of baselines that only run on a GPU (not planned in the
            interpreter).
        opt_in_baselines: names of baselines that tune themselves for seconds a shape
            (torch.compile's max-autotune): timed only when `--baselines` names them or
            says all.

    Which shapes:
        default_shapes: the shapes a sweep uses when none are given (GPU-sized).
        small_shapes: shapes small enough for Triton's interpreter on a CPU.
        from_size: n -> Shape for a single size on the command line (default: every dim n).
        small_from_size: the same in Triton's interpreter, where shapes must stay small
            (a row kernel: a few dozen rows of n columns); default: from_size.

    How Triton's interpreter runs it:
        interpreter_dtypes: dtypes the interpreter computes correctly for this kernel.
        interpreter_seconds: (shape, config) -> rough wall time of one launch there on one
            CPU core; shapes far too big for it are refused up front. None: no estimate.

    What search, lookup and export read:
        prior_from: names of kernels with the same main loop and space (matmul_gelu's:
            matmul), whose winners `--search prior` also starts from.
        near_sizes: sizes -> what `tuned.lookup` (and so `ops`) compares between an untuned
            shape and the tuned ones (alignment class and distance), for a kernel whose
            configs see some sizes only through a product (rope: batch x seq, the tokens).
            None: the sizes themselves.
        autotune_key: the Triton kernel's argument names for the dims (`tlab export
            --format autotune` writes them as the key); default: dims.

    How model code calls it (`tritonbench_lab.ops.kernel`):
        shape_of: inputs -> Shape: the shape of a call's inputs (the inverse of
            make_inputs), from which the runtime picks the committed config. None: callers
            pass the sizes as keywords named by the dims.
    """

    # what the kernel is
    name: str
    summary: str
    dims: tuple[str, ...]
    dtypes: tuple[torch.dtype, ...]
    # how it is launched
    launch: Callable[[Inputs, Config, Outputs], Outputs]
    allocate_outputs: Callable[[Inputs], Outputs]
    # how it is judged
    reference: Callable[[Inputs], Outputs]
    baselines: Mapping[str, Callable[[Inputs], Any]]
    space: Space
    # which shapes
    default_shapes: tuple[Shape, ...]
    small_shapes: tuple[Shape, ...]
    make_inputs: Callable[[Shape, torch.dtype, str, int], Inputs]
    tolerance: Mapping[torch.dtype, Tolerance]
    cost: Callable[[Shape, torch.dtype], Cost]
    metric: str
    # (the fields above have no default, so they come first; their groups are the docstring's)
    check_shape: Callable[[Shape], None] = field(default=lambda shape: None)
    bind: Callable[[Config], Callable] | None = None
    gpu_only_baselines: tuple[str, ...] = ()
    opt_in_baselines: tuple[str, ...] = ()
    from_size: Callable[[int], Shape] | None = None
    small_from_size: Callable[[int], Shape] | None = None
    interpreter_dtypes: tuple[torch.dtype, ...] | None = None
    interpreter_seconds: Callable[[Shape, Config], float] | None = None
    prior_from: tuple[str, ...] = ()
    near_sizes: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None
    autotune_key: tuple[str, ...] | None = None
    shape_of: Callable[[Inputs], Shape] | None = None

    def __post_init__(self) -> None:
        problems = spec_problems(self)
        if problems:
            raise TlabError(f"kernel spec {self.name!r} is incomplete: {'; '.join(problems)}")
        if launching.enabled() and not triton_interpreting():
            launching.install_for(self.launch)  # its module's kernels launch the short way

    def shape(self, *sizes: int) -> Shape:
        """Shape from sizes in `dims` order: spec.shape(4096, 4096, 1024)."""
        if len(sizes) != len(self.dims):
            raise TlabError(
                f"{self.name} shapes have {len(self.dims)} sizes ({'x'.join(self.dims)}), "
                f"got {len(sizes)}"
            )
        return Shape(tuple(zip(self.dims, sizes, strict=True)))

    def complete(self, config: Mapping[str, int]) -> Config:
        """The one rule for a stored config that lacks a parameter: completed with the
        space's `added` value (what the kernel did before the parameter existed); one that
        still lacks one, or names one the space does not have, is a TlabError naming it."""
        complete = self.space.complete(config)
        missing = [name for name in self.space.params if name not in complete]
        unknown = [name for name in complete if name not in self.space.params]
        if missing or unknown:
            parts = [f"{what} {', '.join(names)}" for what, names in
                     (("lacks", missing), ("has unknown", unknown)) if names]
            raise TlabError(f"{self.name} config {config_text(config)} {'; '.join(parts)} "
                            f"(its parameters: {', '.join(self.space.params)})")
        return complete

    def untuned_config(self, shape: Shape, dtype: torch.dtype | str,
                       limits: DeviceLimits = HOPPER) -> Config:
        """The config to run without tuning at this shape and dtype: the space's default, or
        where a constraint prunes it there the nearest config that none does (Space.default_at;
        on Hopper's limits, which the spaces target, unless given others)."""
        dtype = parse_dtype(dtype) if isinstance(dtype, str) else dtype
        found = self.space.default_at(dict(shape.dims), dtype.itemsize, limits)
        return found if found is not None else dict(self.space.default)

    def pruned_at(self, config: Mapping[str, int], sizes: tuple[int, ...],
                  dtype: torch.dtype | str, limits: DeviceLimits = HOPPER) -> str | None:
        """Why a stored config (completed by `complete`'s rule) may not run at these sizes
        (in dims order) and dtype: the reason of the constraint that prunes it there (on
        Hopper's limits unless given others, as untuned_config), or None."""
        dtype = parse_dtype(dtype) if isinstance(dtype, str) else dtype
        return self.space.why_pruned(self.complete(config), dict(self.shape(*sizes).dims),
                                     dtype.itemsize, limits)

    def config_outside(self, config: str | Mapping[str, int]) -> str | None:
        """Why a stored config (its text, or a dict), completed by `complete`'s rule, is not
        a point of this kernel's space, or None when it is."""
        try:
            parsed = parse_config_text(config) if isinstance(config, str) else dict(config)
        except ValueError as err:
            return str(err)
        return self.space.outside(self.space.complete(parsed))

    def bound(self, config: Mapping[str, int]) -> Callable | None:
        """A launcher of this kernel bound to `config` (completed), taking the op's own
        arguments: `bind`, else the kernel module's `bind` function; None when it has
        neither (then only the harness, through `launch`, runs it)."""
        bind = self.bind or getattr(inspect.getmodule(self.launch), "bind", None)
        return bind(self.complete(config)) if callable(bind) else None

    def size_to_shape(self, n: int, interpreting: bool = False) -> Shape:
        """The shape a single size means for this kernel (see `from_size`)."""
        if interpreting and self.small_from_size is not None:
            return self.small_from_size(n)
        if self.from_size is not None:
            return self.from_size(n)
        return Shape(tuple((d, n) for d in self.dims))

    def baselines_for(self, interpreting: bool, opt_in: bool = True) -> list[str]:
        """The baselines a sweep can time: without a GPU, those that run on a CPU; without
        `opt_in`, not those that tune themselves (opt_in_baselines)."""
        return [b for b in self.baselines if not (interpreting and b in self.gpu_only_baselines)
                and (opt_in or b not in self.opt_in_baselines)]

    def interpreter_refusal(self, dtype: torch.dtype) -> str | None:
        """Why this dtype cannot run in Triton's interpreter, or None when it can."""
        allowed = self.interpreter_dtypes if self.interpreter_dtypes is not None else self.dtypes
        if dtype in allowed:
            return None
        return (
            f"{self.name} in {dtype_name(dtype)} cannot run in Triton's interpreter "
            "(its tl.dot returns garbage for bfloat16, triton-lang/triton#11584); run it on a GPU"
        )


def spec_problems(spec: KernelSpec) -> list[str]:
    """Every way `spec` falls short of the contract, as short phrases (empty when complete),
    group by group (the KernelSpec docstring's)."""
    return [*_identity_problems(spec), *_launch_problems(spec), *_judging_problems(spec),
            *_shape_problems(spec)]


def _identity_problems(spec: KernelSpec) -> list[str]:
    problems = []
    if not (isinstance(spec.name, str) and spec.name.isidentifier() and spec.name.islower()):
        problems.append(f"name must be a lower-case identifier, got {spec.name!r}")
    if not spec.summary:
        problems.append("summary is empty")
    if not spec.dims:
        problems.append("dims is empty")
    if not spec.dtypes or any(d not in DTYPE_NAMES for d in spec.dtypes):
        problems.append(f"dtypes must be a non-empty subset of {', '.join(DTYPES)}")
    if spec.metric not in (TFLOPS, GBPS):
        problems.append(f"metric must be {TFLOPS!r} or {GBPS!r}")
    return problems


def _launch_problems(spec: KernelSpec) -> list[str]:
    problems = [f"{attr} is not callable" for attr in
                ("launch", "allocate_outputs", "reference", "make_inputs", "cost", "check_shape")
                if not callable(getattr(spec, attr))]
    problems += [f"{attr} is not callable" for attr in ("bind", "shape_of")
                 if getattr(spec, attr) is not None and not callable(getattr(spec, attr))]
    if not isinstance(spec.space, Space) or len(spec.space) == 0:
        problems.append("space must be a non-empty Space")
    return problems


def _judging_problems(spec: KernelSpec) -> list[str]:
    problems = []
    if not spec.baselines:
        problems.append("baselines is empty: give at least the PyTorch op to compare with")
    elif any(not callable(fn) for fn in spec.baselines.values()):
        problems.append("every baseline must be callable")
    elif set(spec.gpu_only_baselines) - set(spec.baselines):
        problems.append("gpu_only_baselines must name baselines")
    elif set(spec.opt_in_baselines) - set(spec.baselines):
        problems.append("opt_in_baselines must name baselines")
    missing_tol = [DTYPE_NAMES.get(d, str(d)) for d in spec.dtypes if d not in spec.tolerance]
    if missing_tol:
        problems.append(f"no tolerance for {', '.join(missing_tol)}")
    return problems


def _shape_problems(spec: KernelSpec) -> list[str]:
    problems = []
    for attr in ("default_shapes", "small_shapes"):
        shapes: Sequence[Shape] = getattr(spec, attr)
        if not shapes:
            problems.append(f"{attr} is empty")
        elif any(not isinstance(s, Shape) or s.names != tuple(spec.dims) for s in shapes):
            problems.append(f"{attr} must be Shapes with dims {spec.dims}")
    return problems


def triton_interpreting() -> bool:
    """True when Triton runs kernels through its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on")


@functools.cache
def sm_count(device: str, stand_in: int) -> int:
    """The SMs of a CUDA device (what a persistent grid is counted in), else `stand_in`."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(torch.device(device)).multi_processor_count
    return stand_in


# torch.compile silently falls back to eager once one function has been recompiled more
# times than dynamo's limit (8 by default); a sweep compiles once per shape and dtype.
RECOMPILE_BUDGET = 1024


def compile_baseline(fn: Callable[[Inputs], Any],
                     options: Callable[[], dict] | None = None) -> Callable[[Inputs], Any]:
    """torch.compile of `fn`, specialised per shape, compiled on first call, never eager.
    `options` returns Inductor options for this function alone (e.g. max-autotune). The
    result's `__wrapped__` is `fn` (inspect.unwrap), which the contract check calls: what
    the compiled function returns is the same, without compiling."""
    compiled = None

    def run(inputs: Inputs) -> Any:
        nonlocal compiled
        if compiled is None:
            # late: torch.compile's machinery loads only when a compiled baseline first runs
            import torch._dynamo.config as dynamo_config

            # Newer torch renamed the knobs; set whichever name this version has.
            for new_name, old_name in (("recompile_limit", "cache_size_limit"),
                                       ("accumulated_recompile_limit",
                                        "accumulated_cache_size_limit")):
                knob = new_name if hasattr(dynamo_config, new_name) else old_name
                if hasattr(dynamo_config, knob):
                    setattr(dynamo_config, knob, max(getattr(dynamo_config, knob), RECOMPILE_BUDGET))
            compiled = torch.compile(fn, dynamic=False, options=options() if options else None)
        return compiled(inputs)

    run.__name__ = f"compiled_{fn.__name__}"
    run.__doc__ = f"torch.compile({fn.__name__})"
    run.__wrapped__ = fn  # the eager formula: what tlab's contract check calls instead
    return run


def triton_max_autotune() -> dict:
    """Inductor options of torch.compile(mode="max-autotune-no-cudagraphs") with only Triton
    templates to choose from (no cuBLAS): for baselines of what Triton reaches when PyTorch
    tunes it. GPU only: on a CPU Inductor has no Triton templates (gpu_only_baselines)."""
    # late: torch.compile's machinery loads only when a compiled baseline first runs
    from torch._inductor import list_mode_options

    return {**list_mode_options("max-autotune-no-cudagraphs"), "max_autotune_gemm_backends": "TRITON"}
