"""Run by test_launching.py in a process of its own (Triton imported without TRITON_INTERPRET,
TLAB_FAST_LAUNCH=1): each named built-in kernel is compiled for sm_90 and launched through a
stand-in driver whose launcher records the arguments it is given and runs nothing. Prints one
JSON line per kernel: per round of spec.launch, how many calls went through Triton's
JITFunction.run and what each launch passed to the launcher.

    python tests/launch_recorder.py KERNEL...
"""

import json
import os
import sys

os.environ["TLAB_FAST_LAUNCH"] = "1"

import torch  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime import driver  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402


class RecordingLauncher:
    calls: list[tuple] = []

    def __init__(self, src, metadata):
        pass

    def __call__(self, *args):
        RecordingLauncher.calls.append(args)


class Utils:
    def load_binary(self, name, kernel, shared, device):
        return 1, 2, 32, 0, 1024  # module, function, registers, spills, most threads

    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536,
                "warpSize": 32, "sm_clock_rate": 1, "mem_clock_rate": 1, "mem_bus_width": 1}


class StandInDriver:
    def __init__(self):
        self.target = GPUTarget("cuda", 90, 32)
        self.utils = Utils()
        self.launcher_cls = RecordingLauncher

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 7

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        return torch.device("cpu")

    def is_active(self):
        return True


driver.set_active(StandInDriver())
through_triton: list[str] = []
_triton_run = JITFunction.run


def counted_run(self, *args, **kwargs):
    through_triton.append(self.__name__)
    return _triton_run(self, *args, **kwargs)


JITFunction.run = counted_run


def describe(value):
    if isinstance(value, torch.Tensor):
        return ["tensor", str(value.dtype), list(value.shape), list(value.stride()),
                value.data_ptr() % 16 == 0]
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    if isinstance(value, tuple):
        return [describe(v) for v in value]
    if type(value).__name__ == "TensorDescriptor":
        return ["descriptor", describe(value.base), list(value.shape), list(value.strides),
                list(value.block_shape)]
    return type(value).__name__


def rounds(spec, inputs, config, count: int) -> list[dict]:
    out = []
    for _ in range(count):
        through_triton.clear()
        RecordingLauncher.calls.clear()
        spec.launch(inputs, config, spec.allocate_outputs(inputs))
        out.append({"through_triton": list(through_triton),
                    "launches": [[describe(a) for a in call] for call in RecordingLauncher.calls]})
    return out


def main(kernels: list[str]) -> None:
    from tritonbench_lab.kernels import get_spec

    for name in kernels:
        spec = get_spec(name)
        dtype = spec.dtypes[0]
        shape = spec.small_shapes[-1]
        config = spec.space.complete(spec.space.default)
        if "TMA" in config:  # the pointer kernel; "tma" below: the descriptors' one
            config = {**config, "TMA": 0}
        inputs = spec.make_inputs(shape, dtype, "cpu", 0)
        result = {"kernel": name, "rounds": rounds(spec, inputs, config, 2)}
        if name == "add":  # then x one element off its 16-byte alignment, twice
            x = inputs["x"]
            shifted = torch.empty(x.numel() + 1, dtype=x.dtype)[1:].view(x.shape)
            shifted.copy_(x)
            result["misaligned"] = rounds(spec, {**inputs, "x": shifted}, config, 2)
        if name == "layernorm":  # two configs in turn: each keeps its own kernel
            other = {**config, "ROWS": 2, "num_warps": 8}
            result["alternating"] = [rounds(spec, inputs, c, 1)[0]
                                     for c in (other, config, other, config)]
        if name == "matmul":  # tensor descriptors (new ones each call)
            result["tma"] = rounds(spec, inputs, {**config, "TMA": 1}, 2)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
