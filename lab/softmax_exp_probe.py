"""Lab probe, not part of the product (nothing imports it): does computing exp as
ex2((x - m) * log2 e) (three sm_90 instructions an element, tl.exp six) speed softmax up?

At each default softmax shape, the committed winner's config run by softmax.py before
(lab/softmax_before.py, written by `git show 6cdb952~1:tritonbench_lab/kernels/softmax.py`,
the module before exp became ex2) and by today's, and a copy of the same tensor, timed in
turns in one process, ROUNDS rounds of do_bench; outputs checked against float64 first.
Prints each median, the new/old speed ratio and both against the copy.

    PYTHONPATH=. python3 lab/softmax_exp_probe.py
"""

import csv
import importlib.util
import statistics

import torch
import triton

from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.kernels import softmax as new
from tritonbench_lab.measure.verify import check
from tritonbench_lab.spec import Shape

spec = importlib.util.spec_from_file_location("softmax_before", "lab/softmax_before.py")
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
ROUNDS = 5
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def measure(dtype_text: str, shape_text: str, config: dict) -> str:
    rows, cols = map(int, shape_text.split("x"))
    dtype = DTYPES[dtype_text]
    x = new.make_inputs(Shape.of(rows=rows, cols=cols), dtype, "cuda", 0)["x"]
    out, copy = torch.empty_like(x), torch.empty_like(x)
    fns = {"old": lambda: old.softmax(x, config, out), "new": lambda: new.softmax(x, config, out),
           "copy": lambda: copy.copy_(x)}
    ref = torch.softmax(x.double(), dim=-1)
    for key in ("old", "new"):
        verdict = check((fns[key](),), (ref,), new.SPEC.tolerance[dtype])
        assert verdict.ok, (key, dtype_text, shape_text, verdict.detail)
    del ref
    times = {key: [] for key in fns}
    for _ in range(ROUNDS):
        for key, fn in fns.items():
            times[key].append(triton.testing.do_bench(fn, warmup=25, rep=100))
    med = {key: statistics.median(t) for key, t in times.items()}
    per_round = [o / n for o, n in zip(times["old"], times["new"], strict=True)]
    return (f"{dtype_text} {shape_text} {config}: old {med['old'] * 1e3:.1f} us "
            f"({med['copy'] / med['old']:.3f} of copy), new {med['new'] * 1e3:.1f} us "
            f"({med['copy'] / med['new']:.3f} of copy), new speed {med['old'] / med['new']:.4f}x "
            f"old (rounds {min(per_round):.4f}-{max(per_round):.4f})")


def main():
    with open("configs/nvidia-h200/softmax.csv") as f:
        winners = [(r["dtype"], r["shape"], parse_config_text(r["config"])) for r in csv.DictReader(f)]
    for dtype_text, shape_text, config in sorted(winners, key=lambda w: (w[0], int(w[1].split("x")[1]))):
        print(measure(dtype_text, shape_text, config), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
