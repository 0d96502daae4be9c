"""Lab instrument, not part of the product (nothing imports it): is a committed winner tied
with torch.compile's kernel where its sweeps put it just under 1.00x? The winner and the
sweep's `compiled` baseline (torch.compile, dynamic=False, compiled per shape) timed in turns
in one process, ROUNDS rounds of do_bench each; prints the median ratio (torch.compile's
time / the winner's) and the range of the per-round ratios. How the layernorm and rope rows
of BENCHMARKS.md's "Where tlab falls short" were timed (2026-12-04 night).

    PYTHONPATH=. python3 lab/compiled_in_turns.py [kernel:dtype:shape[:key=value,...] ...]

A fourth field overrides entries of the committed config (e.g. `:num_stages=1`). With OUT
set, Inductor's generated code of each case (and its autotuner's pick) goes to
$OUT/inductor_<kernel>_<dtype>_<shape>.py. Each process's first case reads erratically
(2026-12-04: 0.92-1.10 per round): a case written `warm:kernel:dtype:shape` is timed like the
others and not reported. (Layernorm fp32 16384x1024 swings from host to host even after one:
0.96x on one H200, 1.42x on another.)
"""

import csv
import os
import pathlib
import statistics
import sys

import torch
import triton

from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.spec import parse_dtype

ROUNDS = 9
CASES = (
    *(f"layernorm:fp32:{s}" for s in ("16384x1024", "16384x2048", "16384x4096", "16384x5120",
                                      "65536x4096", "16384x8192")),
    "rope:fp32:1x65536x8x128", "rope:fp32:4x4096x32x128",
)


def committed_config(kernel: str, dtype: str, shape: str) -> dict:
    with open(f"configs/nvidia-h200/{kernel}.csv") as f:
        for row in csv.DictReader(f):
            if row["dtype"] == dtype and row["shape"] == shape:
                return parse_config_text(row["config"])
    raise KeyError((kernel, dtype, shape))


def save_inductor_code(name: str, seen: int) -> None:
    """Inductor's modules compiled since `seen`, each autotuner's picked config first."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    lines = []
    for module in list(PyCodeCache.modules)[seen:]:
        for attr in dir(module):
            obj = getattr(module, attr)
            if isinstance(obj, CachingAutotuner):
                lines.append(f"# {attr}: picked {[str(x.config) for x in obj.launchers]}")
        lines.append(pathlib.Path(module.__file__).read_text())
    pathlib.Path(os.environ["OUT"], f"inductor_{name}.py").write_text("\n".join(lines))


def ratios(kernel: str, dtype_text: str, shape_text: str, override: dict) -> tuple[dict, list[float]]:
    from torch._inductor.codecache import PyCodeCache

    spec = get_spec(kernel)
    torch._dynamo.reset()
    seen = len(PyCodeCache.modules)
    compiled = spec.baselines["compiled"]
    shape = spec.shape(*map(int, shape_text.split("x")))
    inputs = spec.make_inputs(shape, parse_dtype(dtype_text), "cuda", 0)
    config = {**committed_config(kernel, dtype_text, shape_text), **override}
    outputs = spec.allocate_outputs(inputs)
    out = []
    for _ in range(ROUNDS):
        tlab = triton.testing.do_bench(lambda: spec.launch(inputs, config, outputs),
                                       warmup=50, rep=150)
        inductor = triton.testing.do_bench(lambda: compiled(inputs), warmup=50, rep=150)
        out.append(inductor / tlab)
    if os.environ.get("OUT"):
        save_inductor_code(f"{kernel}_{dtype_text}_{shape_text}", seen)
    return config, out


def main(cases: list[str]) -> None:
    for case in cases:
        warm = case.startswith("warm:")
        kernel, dtype_text, shape_text, *rest = case.removeprefix("warm:").split(":")
        override = dict(item.split("=") for item in rest[0].split(",")) if rest else {}
        config, got = ratios(kernel, dtype_text, shape_text, {k: int(v) for k, v in override.items()})
        if warm:
            continue
        print(f"{kernel} {dtype_text} {shape_text} {config}: median "
              f"{statistics.median(got):.4f}x, range {min(got):.4f}-{max(got):.4f} over "
              f"{ROUNDS} rounds", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
