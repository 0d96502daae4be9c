"""Lab probe, not part of the product (nothing imports it): layernorm.py before
(lab/layernorm_before.py, written by `git show 0273291~1:tritonbench_lab/kernels/layernorm.py`,
the module before the masks folded away) against today's (masks folded away where the tile
divides the row and ROWS the rows; one-step walks) at the committed winners' configs, and
today's at one-step walks, each against torch.compile's kernel, timed in turns in one
process, ROUNDS rounds of do_bench; outputs checked first.

    PYTHONPATH=. python3 lab/layernorm_ab.py
"""

import csv
import importlib.util
import statistics

import torch
import triton

from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.kernels import layernorm as new
from tritonbench_lab.measure.verify import check
from tritonbench_lab.spec import Shape

spec = importlib.util.spec_from_file_location("layernorm_before", "lab/layernorm_before.py")
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
ROUNDS = 7
SHAPES = ("16384x1024", "16384x2048", "16384x4096", "16384x5120", "65536x4096", "16384x8192")


def committed(shape: str) -> dict:
    with open("configs/nvidia-h200/layernorm.csv") as f:
        for row in csv.DictReader(f):
            if row["dtype"] == "fp32" and row["shape"] == shape:
                return parse_config_text(row["config"])
    raise KeyError(shape)


def measure(shape_text: str) -> None:
    rows, cols = map(int, shape_text.split("x"))
    inputs = new.make_inputs(Shape.of(rows=rows, cols=cols), torch.float32, "cuda", 0)
    x, w, b, eps = inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"]
    out = torch.empty_like(x)
    torch._dynamo.reset()
    compiled = torch.compile(new.unfused_layernorm, dynamic=False)
    config = committed(shape_text)
    fns = {"compiled": lambda: compiled(inputs),
           f"old {config}": lambda: old.layernorm(x, w, b, eps, config, out),
           f"new {config}": lambda: new.layernorm(x, w, b, eps, config, out)}
    if cols <= 4096:
        for r, nw in ((1, 8), (1, 16), (2, 16)):
            one = {"ROWS": r, "num_warps": nw, "TILE_COLS": cols}
            fns[f"new {one}"] = lambda one=one: new.layernorm(x, w, b, eps, one, out)
    ref = new.layernorm_reference(inputs)
    for key, fn in fns.items():
        verdict = check((fn(),), ref, new.SPEC.tolerance[torch.float32])
        assert verdict.ok, (key, verdict.detail)
    times = {key: [] for key in fns}
    for _ in range(ROUNDS):
        for key, fn in fns.items():
            times[key].append(triton.testing.do_bench(fn, warmup=50, rep=150))
    base = statistics.median(times["compiled"])
    for key, t in times.items():
        med = statistics.median(t)
        print(f"fp32 {shape_text} {key}: {med * 1e3:.2f} us, {base / med:.4f}x torch.compile",
              flush=True)


if __name__ == "__main__":
    for shape_text in SHAPES:
        measure(shape_text)
