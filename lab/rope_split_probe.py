"""Lab probe, not part of the product (nothing imports it): is torch.compile's 0.4-0.6% lead
at fp32 rope 1x65536x8x128 the streams in flight? rope's one launch reads q and k and writes
both outputs (four streams); here also as two launches of two streams each (k given no
heads, so a launch rotates only its q), beside torch.compile's kernel, timed in turns in one
process; Inductor's generated code is saved to $OUT.

    OUT=/tmp/out PYTHONPATH=. python3 lab/rope_split_probe.py
"""

import importlib.util

import torch

from tritonbench_lab.kernels import rope as R
from tritonbench_lab.spec import Shape

spec = importlib.util.spec_from_file_location("compiled_in_turns", "lab/compiled_in_turns.py")
turns = importlib.util.module_from_spec(spec)
spec.loader.exec_module(turns)
CONFIGS = ({"BLOCK": 256, "num_warps": 1}, {"BLOCK": 512, "num_warps": 4},
           {"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 1024, "num_warps": 8})


def measure(dtype, dims) -> None:
    from torch._inductor.codecache import PyCodeCache

    name = f"{str(dtype)[6:]} {'x'.join(map(str, dims))}"
    inputs = R.make_inputs(Shape.of(batch=dims[0], seq=dims[1], heads=dims[2], head_dim=dims[3]),
                           dtype, "cuda", 0)
    q, k, cos, sin = inputs["q"], inputs["k"], inputs["cos"], inputs["sin"]
    qo, ko = R.allocate_outputs(inputs)
    none = q[:, :, :0]
    torch._dynamo.reset()
    seen = len(PyCodeCache.modules)
    compiled = R.SPEC.baselines["compiled"]
    fns = {"compiled": lambda: compiled(inputs)}
    for c in CONFIGS:
        fns[f"one launch {c}"] = lambda c=c: R.rope(q, k, cos, sin, c, qo, ko)
        fns[f"two launches {c}"] = lambda c=c: (R.rope(q, none, cos, sin, c, qo)[0],
                                                R.rope(k, none, cos, sin, c, ko)[0])
    turns.time_in_turns(name, fns, R.SPEC.reference(inputs), R.SPEC.tolerance[dtype])
    turns.save_inductor_code(f"rope_{name.replace(' ', '_')}", seen)


if __name__ == "__main__":
    measure(torch.float32, (1, 4096, 32, 128))  # a warm-up case: a process's first is erratic
    print("(the case above warms the process up)", flush=True)
    for dims in ((1, 65536, 8, 128), (4, 4096, 32, 128)):
        measure(torch.float32, dims)
