"""Launching tlab's kernels in less host time than Triton's dispatch takes (opt-in:
TLAB_FAST_LAUNCH=1 before the kernel modules are imported).

Why: an eager program waits for a launch's host time wherever it exceeds the kernel's GPU
time, and a kernel of a few microseconds launched through Triton does: Triton's dispatch
holds the host several times longer than a PyTorch op's.
Per launch, Triton's JITFunction.run finds the device and stream, binds every argument and
specializes it (type, 16-byte alignment, divisibility by 16, the value 1), hashes that with
the options into a cache key, looks the compiled kernel up, checks the globals the kernel
read, and builds launch metadata for its hooks; only then does it call the compiled kernel's
launcher. The short way skips all of that for a signature seen before, which takes a good
share off an `ops` call's host time (`PYTHONPATH=. python3 lab/launch_host_time.py` times
both ways on a GPU's host; `lab/dispatch_cpu_time.py` compares them on a CPU, with a
launcher that does nothing).
It stays off by default: the compiled kernel's launcher is Triton's internal interface, which
changes between releases, and only triton 3.6 has run this on a GPU.

How: FastRun stands in for a kernel's `run` (JITFunction.__getitem__ calls `self.run`). A
call's signature is what Triton specializes on, made a little finer: the device, the keyword
arguments (constexprs and launch options, by value), each positional argument's kind (a
tensor's dtype and 16-byte alignment; an int's equality to 1, divisibility by 16 and range;
a constexpr parameter's exact value). The first call of a signature goes through Triton and
keeps the compiled kernel Triton returns; later calls of that signature call its launcher
directly with what Triton would pass: the positional arguments, then every other parameter
from the keyword arguments or its default. Anything else goes through Triton: a warm-up, a
grid that is a function, an argument of another type, a keyword argument that is not a plain
value, launch or pre-run hooks. A host-side tensor descriptor (matmul's persistent kernel)
counts by its tensor's dtype, its block shape and options, finer than Triton's
`tensordesc<dtype[block]>`: its shape, strides and address are read by the launcher, which
builds the TMA descriptor at every launch either way.
"""

from __future__ import annotations

import inspect
import os
import sys
import types

import torch

from tritonbench_lab.errors import TlabError

ENV = "TLAB_FAST_LAUNCH"
MAX_SIGNATURES = 256  # per kernel; past this the kept ones are forgotten (a leak guard)
_PLAIN = frozenset((int, bool, float, str, type(None)))
_I32 = 2**31
_U63 = 2**63
_OTHER = object()  # the key of an argument FastRun cannot vouch for
_active = [True]  # crosscompile's compile-only launches turn this off (suspend)


def enabled() -> bool:
    """Whether TLAB_FAST_LAUNCH asks for the short way: 1 on; 0, empty or unset off; any
    other value is refused (a TlabError naming it), not read as off."""
    value = os.environ.get(ENV, "").strip()
    if value not in ("", "0", "1"):
        raise TlabError(f"{ENV}={value!r}: accepted are 1 (launch the short way) and 0 or "
                        "unset (through Triton)")
    return value == "1"


def suspend() -> None:
    """Every call through Triton from now on in this process (launches that compile only)."""
    _active[0] = False


def _kind(value, _tensor=torch.Tensor, _int=int, _float=float, _bool=bool):
    """What Triton specializes a non-constexpr argument on, or finer; _OTHER when unknown.
    (Called for every argument of every launch: plain checks, no helpers.)"""
    kind = type(value)
    if kind is _tensor:  # its dtype; 'D' when 16-byte aligned
        return (value.dtype, not value.data_ptr() & 15)
    if kind is _int:  # the value 1 becomes a constexpr; 'D' when 16 divides; i32 / i64 / u64
        return (value == 1, not value & 15, -_I32 <= value < _I32, value < _U63)
    if kind is _float or kind is _bool or value is None:
        return kind
    if isinstance(value, _tensor):  # a subclass (nn.Parameter)
        return (value.dtype, not value.data_ptr() & 15)
    if kind is _descriptor_type():  # Triton: tensordesc<dtype[block]>; the rest is runtime
        return (kind, value.base.dtype, tuple(value.block_shape),
                getattr(value, "padding", None), getattr(value, "round_f32_to_tf32", None))
    return _OTHER


def _descriptor_type():
    """Triton's host-side TensorDescriptor class (None where this Triton has none)."""
    if not _descriptor:
        try:
            from triton.tools.tensor_descriptor import TensorDescriptor  # late: TRITON_INTERPRET
        except ImportError:
            TensorDescriptor = None
        _descriptor.append(TensorDescriptor)
    return _descriptor[0]


_descriptor: list = []


def _exact(value):
    """A constexpr passed positionally: compiled in by value (and type: True == 1)."""
    kind = type(value)
    return (kind, value) if kind in _PLAIN else _OTHER


class FastRun:
    """JITFunction.run for one kernel, memoised per call signature (module docstring)."""

    def __init__(self, fn):
        self.fn = fn
        self.params = tuple((p.name, p.default) for p in fn.params)
        self.keyers = tuple(_exact if p.is_constexpr else _kind for p in fn.params)
        self.positional_constexprs = _exact in self.keyers
        self.kept: dict[tuple, tuple] = {}
        self.device = self.stream = None  # the driver's lookups, bound when a kernel is kept

    def __call__(self, *args, grid, warmup, **kwargs):
        key = None if warmup or not _active[0] else self.signature(args, kwargs, grid)
        entry = self.kept.get(key) if key is not None else None
        if entry is None or _hooked(self.fn):
            kernel = type(self.fn).run(self.fn, *args, grid=grid, warmup=warmup, **kwargs)
            if key is not None and kernel is not None:
                self.keep(key, kernel, args, kwargs)
            return kernel
        launcher, function, metadata, tail, kernel = entry
        launcher(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1,
                 self.stream(key[0]), function, metadata, None, None, None, *args, *tail)
        return kernel

    def signature(self, args: tuple, kwargs: dict, grid) -> tuple | None:
        """The call's key, or None when this call must go through Triton. Keyword values
        count with their types (True and 1 are equal, and compile apart)."""
        if callable(grid) or len(args) > len(self.params):
            return None
        types = tuple(map(type, kwargs.values()))
        if not _PLAIN.issuperset(types):
            return None
        if self.positional_constexprs:
            kinds = tuple(map(_call, self.keyers, args))
        else:
            kinds = tuple(map(_kind, args))
        if _OTHER in kinds:
            return None
        device = self.device() if self.device is not None else _current_device()
        return (device, tuple(kwargs.items()), types, kinds)

    def keep(self, key: tuple, kernel, args: tuple, kwargs: dict) -> None:
        """Keep what the next calls of this signature pass to the kernel's launcher beside
        their positional arguments, when Triton's kernel has the handles to take it."""
        tail = []
        for name, default in self.params[len(args):]:
            if name in kwargs:
                tail.append(kwargs[name])
            elif default is not inspect.Parameter.empty:
                tail.append(default)
            else:
                return
        function = getattr(kernel, "function", None)
        metadata = getattr(kernel, "packed_metadata", None)
        if function is None or metadata is None:
            return
        if self.stream is None:
            # late: triton reads TRITON_INTERPRET at its first import
            from triton.runtime import driver

            self.device = driver.active.get_current_device
            self.stream = driver.active.get_current_stream
        if len(self.kept) >= MAX_SIGNATURES:
            self.kept.clear()
        self.kept[key] = (kernel.run, function, metadata, tuple(tail), kernel)


def _current_device() -> int:
    # late: triton reads TRITON_INTERPRET at its first import
    from triton.runtime import driver

    return driver.active.get_current_device()


def _call(keyer, value):
    return keyer(value)


def _hooked(fn) -> bool:
    """Whether Triton would call hooks around this launch (a profiler's, pre-run ones)."""
    if fn.pre_run_hooks:
        return True
    runtime = _knobs_runtime()
    for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook):
        if hook is not None and getattr(hook, "calls", True):
            return True
    return False


def _knobs_runtime():
    # late: triton reads TRITON_INTERPRET at its first import
    from triton import knobs

    return knobs.runtime


KERNEL_MODULES = "tritonbench_lab.kernels."


def kernels_of(launch) -> list:
    """The @triton.jit functions of the module that defines `launch`, and of the tlab kernel
    modules it imports from (matmul's persistent kernel lives beside it)."""
    # late: triton reads TRITON_INTERPRET at its first import
    from triton.runtime.jit import JITFunction

    spaces = [launch.__globals__]
    for value in list(launch.__globals__.values()):
        name = value.__name__ if isinstance(value, types.ModuleType) else \
            getattr(value, "__module__", None)
        if isinstance(name, str) and name.startswith(KERNEL_MODULES) and name in sys.modules:
            spaces.append(vars(sys.modules[name]))
    found = {id(v): v for space in spaces for v in list(space.values())
             if isinstance(v, JITFunction)}
    return list(found.values())


def install_for(launch) -> list:
    """Give each of kernels_of(launch) a FastRun; returns those given one now (none in
    Triton's interpreter, whose kernels are not JITFunctions). `del fn.run` gives Triton's
    run back."""
    given = [fn for fn in kernels_of(launch) if not isinstance(vars(fn).get("run"), FastRun)]
    for fn in given:
        fn.run = FastRun(fn)
    return given
