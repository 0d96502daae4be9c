"""The kernel contract checked up front: each piece of a KernelSpec called once, at its first
small shape, before `tlab list -m` shows a user's kernel or a sweep of it runs anything.

A piece that returns the wrong thing otherwise surfaces late and points the wrong way: a
reference returning a bare tensor marks every provider wrong ("1 outputs, reference has
1000"), a launch returning None or a cost returning a tuple stops the sweep with a traceback.
Here the first piece that breaks the contract is named in one line (a TlabError): which field,
what it must return, what it gave. The launch is watched more closely than the sweep can: its
outputs sit between margins wide enough for a whole block stored past the end (a missing mask
would otherwise corrupt this process's memory in the interpreter), it must return the tensors
it was given, and each Triton kernel it launches must take the space parameters handed to it
(the interpreter drops an unknown keyword where a GPU refuses it).

The calls run where the kernels run: in Triton's interpreter on CPU tensors, or on the GPU. In
the interpreter they take the first dtype it runs for the kernel (`interpreter_dtypes`); a
kernel with none there is checked without its launch, which only a GPU can run. A compiled
baseline (`spec.compile_baseline`) is called through its eager function: compiling is the
sweep's work, and what it returns is the same.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch

from tritonbench_lab.data.records import TFLOPS, TORCH_OP
from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import builtin_names, get_spec, names
from tritonbench_lab.measure.env import INTERPRETER, device_limits
from tritonbench_lab.measure.verify import guard
from tritonbench_lab.shapes import Shape
from tritonbench_lab.space import Config, DeviceLimits, config_text
from tritonbench_lab.spec import Cost, KernelSpec, Tolerance, dtype_name

# What each piece takes and returns, said after an exception it raised (a wrong arity, say).
TAKES = {
    "make_inputs": "(shape, dtype, device, seed) -> a dict of named tensors",
    "allocate_outputs": "inputs -> a tuple of tensors",
    "reference": "inputs -> a tuple of float64 tensors, one per output",
    "baseline": "inputs -> the outputs, one tensor or a tuple",
    "launch": "(inputs, config, outputs) -> the outputs",
    "cost": "(shape, dtype) -> Cost(flops, bytes)",
    "constraint": "(config, sizes, elem_bytes, limits) -> why the config is pruned, or None",
    "exclusion": "config -> why the config is left out of the space, or None",
    "from_size": "n -> a Shape",
    "interpreter_seconds": "(shape, config) -> seconds",
    "near_sizes": "sizes -> sizes",
}


# The margins around each output of the launch called here: wide enough to take a whole block
# stored past the end (an unmasked tl.store), so that a missing mask is named in one line rather
# than corrupting the memory of this process, where Triton's interpreter writes on the CPU.
LAUNCH_MARGIN_BYTES = 1 << 20

# Keywords a Triton launch takes besides the kernel's own arguments (its compile and launch
# options). A GPU launch refuses any other keyword; the interpreter drops it without a word, so
# a space parameter misspelt (num_stage) would be swept there as if it did something.
TRITON_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                  "launch_cooperative_grid", "launch_pdl", "debug")


@contextmanager
def _launches() -> Iterator[list[tuple[str, tuple[str, ...], tuple[str, ...]]]]:
    """Each launch of a Triton kernel inside the block (compiled or interpreted), as (its
    name, its arguments' names, the keywords it was given); nothing from a Triton whose
    classes are not built as expected (a GPU launch then still refuses a stray keyword)."""
    launched: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
    patched = []
    try:
        # late: optional, these classes being Triton's internals (absent: nothing recorded)
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        classes = [c for c in (InterpretedFunction, JITFunction) if callable(c.__dict__.get("run"))]
    except ImportError:
        classes = []

    def recorder(original):
        def run(self, *args, **kwargs):
            launched.append((_name(getattr(self, "fn", self)),
                             tuple(getattr(self, "arg_names", ())),
                             tuple(k for k in kwargs if k not in ("grid", "warmup"))))
            return original(self, *args, **kwargs)
        return run

    for cls in classes:
        patched.append((cls, cls.__dict__["run"]))
        cls.run = recorder(cls.__dict__["run"])
    try:
        yield launched
    finally:
        for cls, original in patched:
            cls.run = original


def check_user_kernels(backend: str, only: list[str] | None = None) -> dict[str, str]:
    """`check_contract` for each kernel loaded from a user's module (those of `only`, when
    given), where `backend` runs kernels; what was checked, by kernel name. Built-in kernels
    are checked by tlab's own tests instead."""
    chosen = [n for n in names() if n not in builtin_names() and (only is None or n in only)]
    limits = device_limits(backend)
    return {n: check_contract(get_spec(n), backend == INTERPRETER, limits) for n in chosen}


def check_contract(spec: KernelSpec, interpreting: bool, limits: DeviceLimits) -> str:
    """Call each piece of `spec` once and check what it returns; a TlabError of one line
    naming the first piece that breaks the contract. Returns what was called, for the user."""
    return _Calls(spec, interpreting, limits).run()


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _kind(value: Any) -> str:
    """What a piece returned, for a message: 'None', 'a Tensor', 'a tuple of (Tensor, int)'."""
    if value is None:
        return "None"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(type(v).__name__ for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of ({inner})" if value else f"an empty {type(value).__name__}"
    return f"a {type(value).__name__}"


def _tensors(value: Any, bare: bool = False) -> tuple[torch.Tensor, ...] | None:
    """`value` as a tuple of tensors: a tuple or list of them (or, with `bare`, one tensor,
    which the harness takes as one output); None for anything else."""
    if bare and isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(value)
    return None


def _sizes(shape: Shape) -> str:
    """'n=1000', 'rows=64 cols=1000': a shape with its dims' names, as a message says it."""
    return " ".join(f"{name}={size}" for name, size in shape.dims)


def _at(shape: Shape, dtype: torch.dtype) -> str:
    return f"at {_sizes(shape)} {dtype_name(dtype)}"


def _shapes(tensors) -> str:
    return ", ".join(str(tuple(t.shape)) for t in tensors)


def _got(result: Any, tensors: tuple | None) -> str:
    """What a piece returned where tensors were due: its kind, or the tensors' shapes."""
    return _kind(result) if tensors is None else f"tensor(s) of shapes {_shapes(tensors)}"


def _name(fn: Callable) -> str:
    name = getattr(fn, "__name__", "")
    return name if name and name != "<lambda>" else "(a lambda)"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return torch.allclose(a.float(), b.float(), rtol=0, atol=0, equal_nan=True)
        return torch.equal(a, b)
    return type(a) is type(b) and (a == b) is True


class _Calls:
    """One kernel's pieces called at one shape and dtype, in the order a sweep needs them."""

    def __init__(self, spec: KernelSpec, interpreting: bool, limits: DeviceLimits):
        self.spec, self.limits, self.interpreting = spec, limits, interpreting
        self.device = "cpu" if interpreting else "cuda"
        self.shape = spec.small_shapes[0]
        runnable = [d for d in spec.dtypes if not (interpreting and spec.interpreter_refusal(d))]
        self.dtype = (runnable or list(spec.dtypes))[0]
        self.can_launch = bool(runnable)
        self.at = _at(self.shape, self.dtype)

    def error(self, text: str) -> TlabError:
        return TlabError(f"{self.spec.name}: {text}")

    def call(self, what: str, takes: str, fn: Callable, *args) -> Any:
        """fn(*args); whatever it raises becomes one line naming `what` and what it takes."""
        try:
            result = fn(*args)
            if self.device == "cuda" and takes in ("launch", "baseline"):
                torch.cuda.synchronize()  # a fault of the kernel shows here, not later
            return result
        except Exception as err:  # the user's code: any exception is a broken piece
            raise self.error(f"{what} raised {_one_line(err)} ({self.at}); it takes "
                             f"{TAKES[takes]}") from err

    def run(self) -> str:
        self.tolerances()
        self.own_shapes()
        self.sizes_to_shapes()
        self.costs()
        config = self.pruning()
        self.estimates(config)
        inputs = self.inputs()
        outputs = self.outputs(inputs)
        reference = self.reference(inputs, outputs)
        self.baselines(inputs, reference, outputs)
        said = f"kept: each piece called once {self.at}"
        if not self.can_launch:
            return f"{said}, but launch (no dtype of the kernel runs in Triton's interpreter)"
        if config is None:
            return f"{said}, but launch (every config is pruned there)"
        self.launch(inputs, config)
        return f"{said} (launch with {config_text(config)})"

    # --- what needs no tensors ---------------------------------------------------------------

    def tolerances(self) -> None:
        for dtype in self.spec.dtypes:
            value = self.spec.tolerance[dtype]
            if not isinstance(value, Tolerance):
                raise self.error(f"tolerance must map each dtype to a Tolerance(atol, rtol), "
                                 f"got {_kind(value)} for {dtype_name(dtype)}")

    def own_shapes(self) -> None:
        """check_shape accepts the spec's own shapes, and returns None (a refusal raises)."""
        for kind, shapes in (("small", self.spec.small_shapes), ("default", self.spec.default_shapes)):
            for shape in shapes:
                try:
                    result = self.spec.check_shape(shape)
                except TlabError as err:
                    raise self.error(f"check_shape refuses its own {kind} shape "
                                     f"{_sizes(shape)}: {err}") from err
                except Exception as err:  # the user's code
                    raise self.error(f"check_shape raised {_one_line(err)} at {_sizes(shape)}; it must "
                                     "return None, or raise TlabError for a shape the kernel "
                                     "cannot run") from err
                if result is not None:
                    raise self.error(f"check_shape must return None (and raise TlabError for a "
                                     f"shape the kernel cannot run), got {_kind(result)}")

    def sizes_to_shapes(self) -> None:
        n = self.shape.sizes[-1]
        for field in ("from_size", "small_from_size"):
            fn = getattr(self.spec, field)
            if fn is None:
                continue
            shape = self.call(f"{field}({n})", "from_size", fn, n)
            if not isinstance(shape, Shape) or shape.names != tuple(self.spec.dims):
                raise self.error(f"{field} must return a Shape with dims "
                                 f"{', '.join(self.spec.dims)}, got {_kind(shape)} for {n}")

    def costs(self) -> None:
        """cost at every shape and dtype a sweep may plan: a Cost of numbers, the metric's
        one (flops for TFLOP/s, bytes for GB/s) above zero."""
        field = "flops" if self.spec.metric == TFLOPS else "bytes"
        for shape in (*self.spec.small_shapes, *self.spec.default_shapes):
            for dtype in self.spec.dtypes:
                cost = self.call("cost", "cost", self.spec.cost, shape, dtype)
                at = _at(shape, dtype)
                if not isinstance(cost, Cost):
                    raise self.error(f"cost must return a Cost(flops, bytes), got {_kind(cost)} {at}")
                if not (_number(cost.flops) and _number(cost.bytes) and cost.flops >= 0
                        and getattr(cost, field) > 0):
                    raise self.error(f"cost must return a Cost of numbers >= 0 with {field} > 0 "
                                     f"(the metric is {self.spec.metric}), got {cost} {at}")

    def pruning(self) -> Config | None:
        """Each exclusion and constraint called as a sweep calls them; the config the launch
        runs: the space's default where it is kept at the shape, else the first kept one."""
        space = self.spec.space
        first = next(iter(space))
        for index, rule in enumerate(space.excludes):
            what = f"space.excludes[{index}] {_name(rule)}"
            self.reason(what, self.call(what, "exclusion", rule, dict(first)), first)
        sizes, kept = dict(self.shape.dims), []
        for config in space:
            if self.why_pruned(config, sizes) is None:
                kept.append(config)
        default = space.default
        return default if default in kept else (kept[0] if kept else None)

    def why_pruned(self, config: Config, sizes: Mapping[str, int]) -> str | None:
        for index, constraint in enumerate(self.spec.space.constraints):
            what = f"space.constraints[{index}] {_name(constraint)}"
            reason = self.call(what, "constraint", constraint, config, sizes,
                               self.dtype.itemsize, self.limits)
            if self.reason(what, reason, config):
                return reason
        return None

    def reason(self, what: str, reason: Any, config: Config) -> bool:
        if reason is not None and not isinstance(reason, str):
            raise self.error(f"{what} must return why the config is pruned (a str) or None, "
                             f"got {_kind(reason)} ({self.at}, {config_text(config)})")
        return bool(reason)

    def estimates(self, config: Config | None) -> None:
        spec = self.spec
        if spec.interpreter_seconds is not None and config is not None:
            seconds = self.call("interpreter_seconds", "interpreter_seconds",
                                spec.interpreter_seconds, self.shape, config)
            if not _number(seconds) or seconds < 0:
                raise self.error(f"interpreter_seconds must return seconds (a number >= 0), "
                                 f"got {_kind(seconds)}")
        if spec.near_sizes is not None:
            near = self.call("near_sizes", "near_sizes", spec.near_sizes, self.shape.sizes)
            if not (isinstance(near, (tuple, list)) and all(isinstance(s, int) for s in near)):
                raise self.error(f"near_sizes must return sizes (a tuple of integers), got "
                                 f"{_kind(near)}")

    # --- the calls on tensors ----------------------------------------------------------------

    def inputs(self) -> dict:
        """make_inputs: a dict holding tensors on the device, random (never zeros), seeded."""
        args = (self.shape, self.dtype, self.device, 0)
        inputs = self.call("make_inputs", "make_inputs", self.spec.make_inputs, *args)
        tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)} \
            if isinstance(inputs, Mapping) else {}
        if not tensors:
            raise self.error(f"make_inputs must return a dict of named input tensors (and "
                             f"scalars), got {_kind(inputs)}")
        for key, tensor in tensors.items():
            if tensor.device.type != self.device:
                raise self.error(f"make_inputs must put its tensors on the device it is given "
                                 f"({self.device}): {key} is on {tensor.device.type}")
            if tensor.is_floating_point() and tensor.numel() and not bool(tensor.float().any()):
                raise self.error(f"make_inputs must draw random inputs, never zeros (a kernel "
                                 f"that writes nothing would pass): {key} is all zeros "
                                 f"({self.at})")
        again = self.call("make_inputs", "make_inputs", self.spec.make_inputs, *args)
        differ = [k for k in inputs if not (isinstance(again, Mapping) and k in again
                                            and _same(inputs[k], again[k]))]
        if differ:
            raise self.error(f"make_inputs must be seeded (draw from a torch.Generator seeded "
                             f"with `seed`): two calls with seed 0 gave different {differ[0]}")
        return dict(inputs)

    def outputs(self, inputs: dict) -> tuple[torch.Tensor, ...]:
        outputs = self.call("allocate_outputs", "allocate_outputs", self.spec.allocate_outputs,
                            inputs)
        tensors = _tensors(outputs)
        if tensors is None:
            raise self.error(f"allocate_outputs must return a tuple of tensors (one per output, "
                             f"even for one), got {_kind(outputs)}")
        return tensors

    def reference(self, inputs: dict, outputs: tuple) -> tuple[torch.Tensor, ...]:
        reference = self.call("reference", "reference", self.spec.reference, inputs)
        tensors = _tensors(reference)
        if tensors is None:
            raise self.error(f"reference must return a tuple of tensors (one per output), got "
                             f"{_kind(reference)}")
        if len(tensors) != len(outputs):
            raise self.error(f"reference must return one tensor per output ({len(outputs)}, as "
                             f"allocate_outputs gives), got {len(tensors)}")
        for index, (ref, out) in enumerate(zip(tensors, outputs, strict=True)):
            if ref.shape != out.shape:
                raise self.error(f"reference output {index} has shape {tuple(ref.shape)}, but "
                                 f"allocate_outputs gives {tuple(out.shape)} ({self.at})")
            # The tolerance is a float64 reference's: one computed in the inputs' precision
            # carries their rounding, and can pass a wrong output or fail a right one.
            if ref.is_floating_point() and ref.dtype != torch.float64:
                raise self.error(f"reference output {index} is {ref.dtype}: compute the "
                                 f"reference in float64 (inputs[...].double()) ({self.at})")
        return tensors

    def baselines(self, inputs: dict, reference: tuple, outputs: tuple) -> None:
        """Each baseline that runs here returns what the reference does (in number and
        shapes); a compiled one is called through its eager function. The `torch` one also
        in the outputs' dtypes: ops.kernel returns its outputs where tlab's kernel does not
        run, and a compiled graph plans with them (its fake) where it does."""
        for name in self.spec.baselines_for(self.interpreting):
            given = self.spec.baselines[name]
            fn = inspect.unwrap(given)
            if fn is given and name in self.spec.opt_in_baselines:
                continue  # it tunes itself for seconds: the sweep's work
            what = f"baselines[{name!r}]"
            result = self.call(what, "baseline", fn, inputs)
            tensors = _tensors(result, bare=True)
            if tensors is None or [t.shape for t in tensors] != [r.shape for r in reference]:
                raise self.error(f"{what} must return what the reference does ({len(reference)} "
                                 f"tensor(s) of shapes {_shapes(reference)}), as one tensor or a "
                                 f"tuple, got {_got(result, tensors)} ({self.at})")
            if name != TORCH_OP:
                continue
            memory = {t.untyped_storage().data_ptr(): k for k, t in inputs.items()
                      if isinstance(t, torch.Tensor)}
            shared = [memory[t.untyped_storage().data_ptr()] for t in tensors
                      if t.untyped_storage().data_ptr() in memory]
            if shared:
                raise self.error(
                    f"{what} returns input {shared[0]!r} or a view of it: "
                    f"tritonbench_lab.ops.kernel hands back its outputs where tlab's kernel "
                    f"gives new tensors, so it must return new ones (.clone()) ({self.at})")
            dtypes = [t.dtype for t in tensors]
            if dtypes != [o.dtype for o in outputs]:
                raise self.error(
                    f"{what} returns {', '.join(map(str, dtypes))} where allocate_outputs gives "
                    f"{', '.join(str(o.dtype) for o in outputs)}: tritonbench_lab.ops.kernel "
                    f"hands back one or the other by shape, so they must be of one dtype "
                    f"({self.at})")

    def stray_keywords(self, launched: list, config: Config) -> None:
        """A space parameter handed to a Triton kernel that has no argument of its name."""
        for kernel, arguments, keywords in launched:
            unknown = [k for k in keywords if k in config and k not in arguments
                       and k not in TRITON_OPTIONS]
            if unknown and arguments:
                raise self.error(
                    f"space parameter(s) {', '.join(unknown)} reach {kernel} as keywords, but it "
                    f"has no argument of that name (its arguments: {', '.join(arguments)}; "
                    f"Triton's launch options: {', '.join(TRITON_OPTIONS)}): a GPU launch "
                    f"refuses them, Triton's interpreter drops them silently ({self.at})")

    def launch(self, inputs: dict, config: Config) -> None:
        """launch under one config into NaN-poisoned outputs returns those outputs, having
        written nowhere else."""
        guarded = guard(self.outputs(inputs), LAUNCH_MARGIN_BYTES)
        outputs = guarded.outputs
        what = f"launch (with {config_text(config)})"
        with _launches() as launched:
            try:
                result = self.call(what, "launch", self.spec.launch, inputs, config, outputs)
            except TlabError:  # a GPU launch refuses a stray keyword: say it as the CPU does
                self.stray_keywords(launched, config)
                raise
        self.stray_keywords(launched, config)
        overrun = guarded.overrun()
        if overrun:
            raise self.error(f"launch {overrun}: a store out of bounds, most often a tl.store "
                             f"without a mask, or whose mask lets the last block run past the "
                             f"end ({self.at}, {config_text(config)})")
        tensors = _tensors(result, bare=True)
        if tensors is None or [(t.shape, t.dtype) for t in tensors] != [
                (o.shape, o.dtype) for o in outputs]:
            raise self.error(f"launch must return the outputs it was given (a tuple of "
                             f"{len(outputs)} tensor(s) of shapes {_shapes(outputs)}), got "
                             f"{_got(result, tensors)} ({self.at}, {config_text(config)})")
        # A launch that writes tensors of its own escapes what the sweep checks on the given
        # ones: the NaN poison (elements never written) and the guard band (writes past them).
        strays = [i for i, (t, o) in enumerate(zip(tensors, outputs, strict=True))
                  if t.data_ptr() != o.data_ptr()]
        if strays:
            raise self.error(f"launch must write into the outputs it was given and return those "
                             f"tensors; output(s) {', '.join(map(str, strays))} it returned "
                             f"are new tensors ({self.at}, {config_text(config)})")
