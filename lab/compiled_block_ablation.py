"""Which of tlab's kernels in a compiled model-bench block cost it time (lab probe, GPU).

The block without its head, compiled with tlab's ops (mode="reduce-overhead" by default:
GPU time only), once with every kernel the compiled-graph rule lets in, and once with each
kernel kept out in turn (ops.in_compiled_graph patched to say no for it, so the graph holds
the PyTorch op there), each timed in turns with the block compiled with torch's ops.

    PYTHONPATH=. python3 lab/compiled_block_ablation.py 7b "prefill 1x2048" [plain]
    PYTHONPATH=. python3 lab/compiled_block_ablation.py 1b prefill_8x512   # "_" for " "
"""

import statistics
import sys

import torch
import torch._functorch.config
import torch._inductor.config
import triton.testing

from tritonbench_lab import ops
from tritonbench_lab.gates import modelbench as mb
from tritonbench_lab.runtime import library

KERNELS = ("matmul", "matmul_gelu", "layernorm", "rope")


def main(width_name: str, load_name: str, mode: str = "graphs") -> None:
    width = mb.WIDTHS[width_name]
    load = next(w for w in mb.WORKLOADS if w.name == load_name.replace("_", " "))
    w = mb.prepared(mb.weights(width, torch.bfloat16, "cuda"))
    inputs = mb.make_inputs(width, load, torch.bfloat16, "cuda")
    mb.keep_in_place(w, inputs)
    graphs = mode == "graphs"
    # The compile caches key a graph by what dynamo traced, before the rule decides: off.
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    rule = ops.in_compiled_graph
    print(f"== {width_name} {load_name}, compiled{' + graphs' if graphs else ''}, no head")
    for off in ((), *((k,) for k in KERNELS), KERNELS):
        ops.in_compiled_graph = lambda kernel, *a, off=off: kernel not in off and rule(kernel, *a)
        ops.clear()
        torch._dynamo.reset()
        runs = {}
        for op_set in (mb.TorchOps, mb.TlabOps):
            run = mb.Variant(op_set, compiled=True, graphs=graphs, head=False).build(w, width)
            library.opaque_calls.clear()
            for _ in range(3):
                run(inputs)
            runs[op_set.name] = run
        nodes = dict(library.opaque_calls)
        times = {name: [] for name in runs}
        for _ in range(5):
            for name, run in runs.items():
                times[name].append(triton.testing.do_bench(lambda run=run: run(inputs),
                                                           warmup=25, rep=100))
        torch_ms, tlab_ms = (statistics.median(times[n]) for n in ("torch", "tlab"))
        print(f"kept out {','.join(off) or '-':45s} torch {torch_ms * 1e3:8.1f} us  "
              f"tlab {tlab_ms * 1e3:8.1f} us  {torch_ms / tlab_ms:.3f}x  nodes {nodes}")
    ops.in_compiled_graph = rule


if __name__ == "__main__":
    main(*sys.argv[1:4])
