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
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from tritonbench_lab.data.records import DTYPE_NAMES as NAMES
from tritonbench_lab.data.records import GBPS, TFLOPS, dtype_name_of
from tritonbench_lab.errors import TlabError
from tritonbench_lab.runtime import launching
from tritonbench_lab.shapes import Shape  # re-exported: kernel modules import Shape from here
from tritonbench_lab.space import Config, Space

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
    """One kernel, described completely enough for tlab to tune and judge it.

    Fields:
        name: registry name, a lower-case identifier (`matmul`).
        summary: one line for `tlab list`.
        dims: names of the shape's sizes, e.g. ("M", "N", "K") or ("rows", "cols").
        dtypes: dtypes the kernel supports.
        launch: (inputs, config, outputs) -> outputs; runs the Triton kernel under exactly
            `config` (no autotuning inside) and writes into `outputs`.
        allocate_outputs: inputs -> empty output tensors of the right shapes and dtypes.
        reference: inputs -> outputs computed in float64 (the ground truth).
        baselines: provider name -> (inputs -> outputs), e.g. "torch", "unfused", "compiled".
        gpu_only_baselines: names of baselines that only run on a GPU (not planned in the
            interpreter).
        opt_in_baselines: names of baselines that tune themselves for seconds a shape
            (torch.compile's max-autotune): timed only when `--baselines` names them or
            says all.
        autotune_key: the Triton kernel's argument names for the dims (`tlab export
            --format autotune` writes them as the key); default: dims.
        space: the config space, with its constraints.
        default_shapes: the shapes a sweep uses when none are given (GPU-sized).
        small_shapes: shapes small enough for Triton's interpreter on a CPU.
        make_inputs: (shape, dtype, device, seed) -> inputs; seeded random, never zeros.
        tolerance: dtype -> Tolerance.
        cost: (shape, dtype) -> Cost.
        metric: TFLOPS for compute-bound kernels, GBPS for memory-bound ones.
        check_shape: shape -> None, raising TlabError for a shape the kernel cannot run.
        interpreter_dtypes: dtypes Triton's interpreter computes correctly for this kernel.
        from_size: n -> Shape for a single size on the command line (default: every dim n).
        small_from_size: the same in Triton's interpreter, where shapes must stay small
            (a row kernel: a few dozen rows of n columns); default: from_size.
        interpreter_seconds: (shape, config) -> rough wall time of one launch in Triton's
            interpreter on one CPU core; shapes far too big for it are refused up front.
            None: no estimate (nothing is refused).
        prior_from: names of kernels with the same main loop and space (matmul_gelu's:
            matmul), whose winners `--search prior` also starts from.
        near_sizes: sizes -> what `tuned.lookup` (and so `ops`) compares between an untuned
            shape and the tuned ones (alignment class and distance), for a kernel whose
            configs see some sizes only through a product (rope: batch x seq, the tokens).
            None: the sizes themselves.
    """

    name: str
    summary: str
    dims: tuple[str, ...]
    dtypes: tuple[torch.dtype, ...]
    launch: Callable[[Inputs, Config, Outputs], Outputs]
    allocate_outputs: Callable[[Inputs], Outputs]
    reference: Callable[[Inputs], Outputs]
    baselines: Mapping[str, Callable[[Inputs], Any]]
    space: Space
    default_shapes: tuple[Shape, ...]
    small_shapes: tuple[Shape, ...]
    make_inputs: Callable[[Shape, torch.dtype, str, int], Inputs]
    tolerance: Mapping[torch.dtype, Tolerance]
    cost: Callable[[Shape, torch.dtype], Cost]
    metric: str
    check_shape: Callable[[Shape], None] = field(default=lambda shape: None)
    gpu_only_baselines: tuple[str, ...] = ()
    opt_in_baselines: tuple[str, ...] = ()
    # The kernel's size arguments, for an exported @triton.autotune key (default: dims).
    autotune_key: tuple[str, ...] | None = None
    interpreter_dtypes: tuple[torch.dtype, ...] | None = None
    # What a single size in `--sizes` means; by default every dim takes it (M = N = K = n).
    from_size: Callable[[int], Shape] | None = None
    small_from_size: Callable[[int], Shape] | None = None
    interpreter_seconds: Callable[[Shape, Config], float] | None = None
    prior_from: tuple[str, ...] = ()
    near_sizes: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None

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
    """Every way `spec` falls short of the contract, as short phrases (empty when complete)."""
    problems = []
    if not (isinstance(spec.name, str) and spec.name.isidentifier() and spec.name.islower()):
        problems.append(f"name must be a lower-case identifier, got {spec.name!r}")
    if not spec.summary:
        problems.append("summary is empty")
    if not spec.dims:
        problems.append("dims is empty")
    if not spec.dtypes or any(d not in DTYPE_NAMES for d in spec.dtypes):
        problems.append(f"dtypes must be a non-empty subset of {', '.join(DTYPES)}")
    for attr in ("launch", "allocate_outputs", "reference", "make_inputs", "cost", "check_shape"):
        if not callable(getattr(spec, attr)):
            problems.append(f"{attr} is not callable")
    if not spec.baselines:
        problems.append("baselines is empty: give at least the PyTorch op to compare with")
    elif any(not callable(fn) for fn in spec.baselines.values()):
        problems.append("every baseline must be callable")
    elif set(spec.gpu_only_baselines) - set(spec.baselines):
        problems.append("gpu_only_baselines must name baselines")
    elif set(spec.opt_in_baselines) - set(spec.baselines):
        problems.append("opt_in_baselines must name baselines")
    if not isinstance(spec.space, Space) or len(spec.space) == 0:
        problems.append("space must be a non-empty Space")
    missing_tol = [DTYPE_NAMES.get(d, str(d)) for d in spec.dtypes if d not in spec.tolerance]
    if missing_tol:
        problems.append(f"no tolerance for {', '.join(missing_tol)}")
    if spec.metric not in (TFLOPS, GBPS):
        problems.append(f"metric must be {TFLOPS!r} or {GBPS!r}")
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
    `options` returns Inductor options for this function alone (e.g. max-autotune)."""
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
    return run


def triton_max_autotune() -> dict:
    """Inductor options of torch.compile(mode="max-autotune-no-cudagraphs") with only Triton
    templates to choose from (no cuBLAS): for baselines of what Triton reaches when PyTorch
    tunes it. GPU only: on a CPU Inductor has no Triton templates (gpu_only_baselines)."""
    # late: torch.compile's machinery loads only when a compiled baseline first runs
    from torch._inductor import list_mode_options

    return {**list_mode_options("max-autotune-no-cudagraphs"), "max_autotune_gemm_backends": "TRITON"}
