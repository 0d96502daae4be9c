"""Lab runbook step, not part of the product (nothing imports it): record the shapes `tlab
model-bench`'s block and LM head call tritonbench_lab.ops with, at every width and workload,
by running tlab's op set once eagerly under ops.record_shapes (seconds; nothing timed), so that
`tlab sweep --shapes-from FILE` can tune them (issue 51, item 6: the model's shapes tuned
through item 1). Needs a GPU (bf16, the model-bench's dtype).

    PYTHONPATH=. python3 lab/record_model_shapes.py FILE
"""

import sys

import torch

from tritonbench_lab import ops
from tritonbench_lab.gates import modelbench as mb


def main(path: str) -> None:
    with torch.inference_mode(), ops.record_shapes(path):
        for width in mb.WIDTHS.values():
            w = mb.prepared(mb.weights(width, torch.bfloat16, "cuda"))
            for load in mb.WORKLOADS:
                inputs = mb.make_inputs(width, load, torch.bfloat16, "cuda")
                mb.block(mb.TlabOps, w, width, inputs)
                print(f"recorded {width.name} {load.name}")
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1])
