"""Any kernel tlab knows, your own included, as a function of its inputs for model code:
`tritonbench_lab.ops.kernel(name)` gives a TunedKernel, which runs tlab's kernel under the
committed config where the measurements say it beats the PyTorch op (the spec's `torch`
baseline) and that op elsewhere, by dispatch.py's rule, as every op of ops.py does; the op
also where autograd needs it or an input tensor is not contiguous."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from tritonbench_lab.data.records import TORCH_OP
from tritonbench_lab.errors import TlabError
from tritonbench_lab.runtime.dispatch import plan
from tritonbench_lab.tuned import ordered_sizes, spec_of


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

    def __call__(self, inputs: dict | None = None, /, **named):
        if inputs is not None and not isinstance(inputs, dict):
            raise TlabError(f"{self.spec.name} takes its inputs by name (f(x=...), or a dict "
                            f"f({{'x': ...}})), got a {type(inputs).__name__} by position")
        inputs = {**inputs, **named} if inputs else named
        try:
            return self._call(inputs)
        except KeyError as err:  # an input the kernel reads is missing: say which it takes
            taken = self.input_names()
            missing = [n for n in taken if n not in inputs]
            if not missing:
                raise
            raise TlabError(f"{self.spec.name} takes {', '.join(taken)} (as make_inputs names "
                            f"them); missing: {', '.join(missing)}") from err

    def _call(self, inputs: dict):
        spec = self.spec
        tensors = [v for v in inputs.values() if isinstance(v, torch.Tensor)]
        tensor = next((v for v in tensors if v.dtype in spec.dtypes), None)
        # The op where the kernel cannot stand in for it: autograd needs the op's graph, and a
        # kernel is swept on make_inputs' contiguous tensors, so a strided view (x[:, ::2]) is
        # not among the inputs its measurements and checks cover.
        if tensor is not None and not (
                torch.is_grad_enabled() and any(t.requires_grad for t in tensors)) and all(
                t.is_contiguous() for t in tensors):
            launch = plan(spec.name, tensor.dtype, self.sizes(inputs), tensor.get_device(),
                           self._bind, self.configs)
            if launch is not None:
                return launch(inputs)
        return _one(self._op(inputs))

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


def _one(outputs):
    """A kernel's outputs as callers want them: the tensor itself when there is one."""
    return outputs[0] if isinstance(outputs, (tuple, list)) and len(outputs) == 1 else outputs
