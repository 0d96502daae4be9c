"""Any kernel tlab knows, your own included, as a function of its inputs for model code:
`tritonbench_lab.ops.kernel(name)` gives a TunedKernel, which runs tlab's kernel under the
committed config where the measurements say it beats the PyTorch op (the spec's `torch`
baseline) and that op elsewhere, by dispatch.py's rule, as every op of ops.py does; the op
also where autograd needs it, under torch.autocast (whose dtype rules are the op's), where
an input tensor is not contiguous or holds no data (a meta tensor, a DTensor), or vmap
batches the call.

Under torch.compile, and under a TorchDispatchMode (FakeTensorMode, make_fx's tracing), a
call is one registered op, `torch.ops.tlab.kernel_<name>_<folder tag>` (runtime/library.py):
dynamo cannot trace the decision (a memo, a clock, files), nor a launch read fake tensors.
The op takes the call's inputs packed by kind, tensors, ints (symbolic under a dynamic shape)
and floats, with a text naming each input and holding its constants (bools, strings, None),
and runs the eager call, decision and all, or decomposes into the PyTorch op where the graph's
static shape says tlab's kernel does not run there, as the built-in ops do."""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Callable
from pathlib import Path

import torch

from tritonbench_lab.data.records import TORCH_OP
from tritonbench_lab.errors import TlabError
from tritonbench_lab.runtime import in_graphs, library
from tritonbench_lab.runtime.dispatch import (
    clear,
    dispatches_itself,
    in_compiled_graph,
    plan,
    tuned_state,
)
from tritonbench_lab.runtime.routes import autocasting
from tritonbench_lab.tuned import config_dir, ordered_sizes, spec_of

# A call in a compiled graph, packed: what a torch.library schema can carry of a dict.
PACKED = "(Tensor[] tensors, SymInt[] ints, float[] floats, str layout) -> Tensor[]"
# Between the layout's entries: repr() escapes it inside a string constant, so it never
# appears in one.
SEPARATOR = "\x1f"
_compiling, _modes = torch.compiler.is_compiling, torch._C._len_torch_dispatch_stack
# A tensor of torch.func's transforms (vmap's batched ones): a Triton launch cannot read it.
_transformed = torch._C._functorch.is_functorch_wrapped_tensor
_newest: dict[str, TunedKernel] = {}  # registered op -> the TunedKernel made for it last
_specs: dict[str, object] = {}  # kernel name -> the spec the runtime's memo holds launches of


def kernel(name: str, module: str | Path | None = None, *,
           configs: str | Path | None = None) -> TunedKernel:
    """`name` (a kernel of your own, or a built-in one) as a function of its inputs, for model
    code: tlab's kernel under the committed config where the measurements say it beats the
    PyTorch op (the spec's `torch` baseline), and that op elsewhere, by the rule of every op
    here. `module`: the file defining it, when it is neither loaded nor listed in the current
    folder's pyproject.toml ([tool.tlab] kernel-modules). `configs`: the configs folder to
    read (default: $TLAB_CONFIG_DIR, else the configs/ folder of the kernel's project)."""
    spec = spec_of(name, module)
    if TORCH_OP not in spec.baselines:
        raise TlabError(f"{name} has no {TORCH_OP!r} baseline, the PyTorch op the runtime "
                        "calls wherever tlab's kernel is not measured faster: add one to its "
                        "spec's baselines")
    return TunedKernel(spec, Path(configs).resolve() if configs is not None else None)


class TunedKernel:
    """A kernel called as `f(x=..., y=...)` or `f(inputs)`: the inputs by the names its
    make_inputs gives them. The shape comes from the spec's shape_of, else from sizes given
    as keywords named by its dims (also handed to the kernel as inputs); the dtype and device
    from the first input tensor of a dtype the kernel takes. Returns the outputs: the one
    tensor of a kernel with one output, else the tuple."""

    def __init__(self, spec, configs: Path | None = None):
        self.spec, self.configs, self.__name__ = spec, configs, spec.name
        self._op = spec.baselines[TORCH_OP]
        self._accepted = self._names_taken()
        # the folder its decisions read, named in the compiled graph (tuned_state): a
        # compile cache never hands back a graph decided on other configs
        self._folder = str(configs or config_dir(spec.name))
        if _specs.setdefault(spec.name, spec) is not spec:
            _specs[spec.name] = spec  # its module loaded again: forget the old code's launches
            clear()
        tag = hashlib.sha1(self._folder.encode()).hexdigest()[:8]
        op = f"kernel_{spec.name}_{tag}"  # one op per kernel and configs folder, which runs
        _newest[op] = self  # the newest TunedKernel made for it: a kernel reloaded runs anew
        self._registered = library.define(
            op, functools.partial(_packed, op, "_run_packed"),
            functools.partial(_packed, op, "_op_packed"),
            functools.partial(_packed, op, "_may_run_packed"), schema=PACKED,
            flops=functools.partial(_packed, op, "_flops_packed"))

    def __call__(self, inputs: dict | None = None, /, **named):
        if inputs is not None and not isinstance(inputs, dict):
            raise TlabError(f"{self.spec.name} takes its inputs by name (f(x=...), or a dict "
                            f"f({{'x': ...}})), got a {type(inputs).__name__} by position")
        inputs = {**inputs, **named} if inputs else named
        if self._accepted is not None and not inputs.keys() <= self._accepted:
            raise self._unknown(inputs)  # a misspelt name would pass unread
        try:
            if autocasting():  # eagerly or traced: the op, whose dtypes autocast sets
                return _one(self._op(inputs))
            return self._in_graph(inputs) if _compiling() or _modes() else self._eager(inputs)
        except KeyError as err:  # an input the kernel reads is missing: say which it takes
            raise self._missing(inputs) or err from err

    def _missing(self, inputs: dict) -> TlabError | None:
        """The error for a call lacking an input make_inputs gives (None: it lacks none)."""
        taken = self.input_names()
        missing = [n for n in taken if n not in inputs]
        if not missing:
            return None
        return TlabError(f"{self.spec.name} takes {', '.join(taken)} (as make_inputs names "
                         f"them); missing: {', '.join(missing)}")

    def _names_taken(self) -> frozenset | None:
        """The names a call may give: make_inputs' and the dims (sizes as keywords); None
        where make_inputs cannot run on the CPU, so nothing is refused."""
        try:
            self._names = self.input_names()  # kept: make_inputs cannot run in a traced call
        except Exception:  # the user's make_inputs: a GPU-only dtype, say
            return None
        return frozenset(self._names) | frozenset(self.spec.dims)

    def _unknown(self, inputs: dict) -> TlabError:
        unknown = [n for n in inputs if n not in self._accepted]  # dynamo traces no set ops
        return TlabError(f"{self.spec.name} takes {', '.join(self._names)} (as "
                         f"make_inputs names them) and its sizes {', '.join(self.spec.dims)} "
                         f"as keywords; unknown: {', '.join(unknown)}")

    def _eager(self, inputs: dict):
        """A call run now: tlab's kernel where plan says so, else the PyTorch op."""
        tensors = [v for v in inputs.values() if isinstance(v, torch.Tensor)]
        tensor = self._deciding(tensors)
        # a subclass with a dispatch of its own (DTensor) holds no data a launch can read; not
        # in _deciding, which also judges the fake tensors a compiled graph is traced with
        if tensor is not None and not any(dispatches_itself(t) for t in tensors):
            launch = plan(self.spec.name, tensor.dtype, self.sizes(inputs), tensor.get_device(),
                          self._bind, self.configs)
            if launch is not None:
                return launch(inputs)
        return _one(self._op(inputs))

    def _deciding(self, tensors: list) -> torch.Tensor | None:
        """The input a call is decided by (its dtype and device): the first tensor of a dtype
        the kernel takes; None where only the op can answer. Autograd needs the op's graph; a
        kernel is swept on make_inputs' contiguous tensors, so a strided view (x[:, ::2]) is
        not among the inputs its measurements and checks cover; a launch cannot read vmap's
        batched tensors, nor meta tensors."""
        tensor = self._typed(tensors)
        if tensor is None or (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return None
        return tensor if all(t.is_contiguous() and not _transformed(t) and not t.is_meta
                             for t in tensors) else None

    def _typed(self, tensors: list) -> torch.Tensor | None:
        """The first tensor of a dtype the kernel takes (whose dtype a call is decided by)."""
        return next((t for t in tensors if t.dtype in self.spec.dtypes), None)

    def _in_graph(self, inputs: dict):
        """A call while dynamo traces: the registered op, which dynamo keeps as one node; the
        PyTorch op, traced with the graph, where autograd needs it or an input is of a kind
        the op's schema cannot carry (pack)."""
        packed = pack(inputs)
        if packed is None:
            return _one(self._op(inputs))
        tensors, ints, floats, layout = packed
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return _one(self._op(inputs))
        out = self._registered(tensors, ints, floats, layout, tuned_state(self._folder))
        return _one(tuple(out))

    def _run_packed(self, tensors, ints, floats, layout) -> list:
        """The registered op when the graph runs: the eager call, decision and all. An output
        sharing memory with an input or an output before it (an op may hand back an input or
        a view of one) is copied: the schema promises new tensors, and the compiler plans on
        that."""
        seen = {t.untyped_storage().data_ptr() for t in tensors}
        fresh = []
        for o in _listed(self._eager(unpack(tensors, ints, floats, layout))):
            memory = o.untyped_storage().data_ptr()
            fresh.append(o.clone() if memory in seen else o)
            seen.add(memory)
        return fresh

    def _op_packed(self, tensors, ints, floats, layout) -> list:
        """The PyTorch op on packed inputs: the fake (shapes and dtypes) and the decomposition
        where tlab's kernel does not run."""
        inputs = unpack(tensors, ints, floats, layout)
        try:
            out = self._op(inputs)
        except KeyError as err:  # traced: the eager call's error, not a bare KeyError
            with _real_tensors():
                raise self._missing(inputs) or err from err
        return _listed(out)

    def _flops_packed(self, tensors, ints, floats, layout, out_val=None) -> int:
        """What FlopCounterMode counts for a call that ran as the opaque node: the flops of
        the spec's cost model at the call's shape and dtype."""
        spec, inputs = self.spec, unpack(tensors, ints, floats, layout)
        typed = self._typed(tensors)
        dtype = (tensors[0] if typed is None else typed).dtype
        return spec.cost(spec.shape(*self.sizes(inputs)), dtype).flops

    def _may_run_packed(self, tensors, ints, floats, layout) -> bool:
        """Whether the graph being traced runs tlab's kernel at these inputs' static shape
        (dispatch.in_compiled_graph's rule)."""
        tensor = self._deciding(tensors)
        if tensor is None:
            return False
        sizes, device = self.sizes(unpack(tensors, ints, floats, layout)), tensor.get_device()
        plan(self.spec.name, tensor.dtype, sizes, device, self._bind, self.configs)
        return in_compiled_graph(self.spec.name, tensor.dtype, sizes, device,
                                 in_graphs.graph_captured(), self.configs)

    def input_names(self) -> list[str]:
        """The inputs a call takes: those make_inputs draws, at the kernel's first small shape
        (on the CPU; asked only when a call lacks one)."""
        spec = self.spec
        return list(spec.make_inputs(spec.small_shapes[0], spec.dtypes[0], "cpu", 0))

    def sizes(self, inputs: dict) -> tuple[int, ...]:
        """The sizes of a call, in the kernel's dims order."""
        spec = self.spec
        if spec.shape_of is not None:
            return ordered_sizes(spec.name, dict(spec.shape_of(inputs).dims), spec.dims)
        if any(d not in inputs for d in spec.dims):
            sizes = ", ".join(f"{d}=..." for d in spec.dims)
            raise TlabError(f"{spec.name} needs its sizes as keywords ({sizes}): its spec has "
                            "no shape_of to read them from its inputs")
        return ordered_sizes(spec.name, {d: inputs[d] for d in spec.dims}, spec.dims)

    def _bind(self, config: dict) -> Callable:
        launch, allocate = self.spec.launch, self.spec.allocate_outputs
        return lambda inputs: _one(launch(inputs, config, allocate(inputs)))


def pack(inputs: dict) -> tuple[list, list, list, str] | None:
    """A call's inputs as the registered op takes them (PACKED); None where one is of a kind
    it cannot carry (a list, a dtype, a subclass of int or str such as an enum, which would
    come back as a plain int or not at all). Plain Python that dynamo traces."""
    tensors, ints, floats, layout = [], [], [], []
    for name, value in inputs.items():
        kind = type(value)
        if isinstance(value, torch.Tensor):
            tensors.append(value)
            layout.append(f"{name}:t")
        elif kind in (bool, str) or value is None:
            layout.append(f"{name}={value!r}")
        elif kind in (int, torch.SymInt):  # SymInt: a size under torch.export's tracing
            ints.append(value)
            layout.append(f"{name}:i")
        elif kind in (float, torch.SymFloat):
            floats.append(value)
            layout.append(f"{name}:f")
        else:
            return None
    return tensors, ints, floats, SEPARATOR.join(layout)


def unpack(tensors: list, ints: list, floats: list, layout: str) -> dict:
    """A call's inputs by name from the registered op's arguments: pack's inverse."""
    entries = _layouts.get(layout)
    if entries is None:  # parsed once per layout: a compiled graph's every call gives it
        entries = _layouts[layout] = [_entry(e) for e in layout.split(SEPARATOR) if e]
    taken = {"t": iter(tensors), "i": iter(ints), "f": iter(floats)}
    return {name: next(taken[kind]) if kind else constant for name, kind, constant in entries}


_layouts: dict[str, list] = {}


def _entry(entry: str) -> tuple:
    """(name, kind, None) for a packed input ("x:t"), (name, "", value) for a constant."""
    if entry[-2:] in (":t", ":i", ":f"):
        return entry[:-2], entry[-1], None
    name, _, constant = entry.partition("=")
    return name, "", ast.literal_eval(constant)


def _packed(op: str, method: str, *args, **kwargs):
    """The registered op's pieces (library.define), run by the TunedKernel made for it last."""
    return getattr(_newest[op], method)(*args, **kwargs)


def _real_tensors():
    """A block where make_inputs draws real tensors though a compiler's fake mode is on."""
    # late: the fake-tensor machinery is asked only by a traced call's error
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


def _listed(outputs) -> list:
    """A kernel's or op's outputs as the registered op returns them (Tensor[])."""
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


def _one(outputs):
    """A kernel's outputs as callers want them: the tensor itself when there is one."""
    return outputs[0] if isinstance(outputs, (tuple, list)) and len(outputs) == 1 else outputs
