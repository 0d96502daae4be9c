"""Where a compiled model-bench block's host time goes (lab probe, GPU).

For one width and workload of `tlab model-bench`, the block without its head compiled with
torch's ops and with tlab's: each variant's GPU time (do_bench) and host time per call
(model-bench's host_time), then a cProfile of the tlab variant's calls (top functions by own
time), then the host time of one call of each tlab op at the block's shapes: the eager op,
its registered opaque node (what the compiled graph calls) and the PyTorch op.

    PYTHONPATH=. python3 lab/compiled_block_host.py 1b "prefill 1x2048"
    TLAB_FAST_LAUNCH=1 PYTHONPATH=. python3 lab/compiled_block_host.py 1b "prefill 1x2048"
"""

import cProfile
import io
import os
import pstats
import sys

import torch
import torch.nn.functional as F
import triton.testing

from tritonbench_lab import ops
from tritonbench_lab.gates import modelbench as mb


def host_us(fn, calls=50, rounds=5):
    return min(mb.host_time(fn, calls) for _ in range(rounds)) * 1e3


def main(width_name: str, load_name: str) -> None:
    width = mb.WIDTHS[width_name]
    load = next(w for w in mb.WORKLOADS if w.name == load_name)
    w = mb.prepared(mb.weights(width, torch.bfloat16, "cuda"))
    inputs = mb.make_inputs(width, load, torch.bfloat16, "cuda")
    mb.keep_in_place(w, inputs)
    print(f"== {width_name} {load_name}, TLAB_FAST_LAUNCH={os.environ.get('TLAB_FAST_LAUNCH', '')}")
    runs = {}
    for op_set in (mb.TorchOps, mb.TlabOps):
        torch._dynamo.reset()
        run = mb.Variant(op_set, compiled=True, head=False).build(w, width)
        for _ in range(3):
            run(inputs)
        torch.cuda.synchronize()
        runs[op_set.name] = run
    for name, run in list(runs.items()) * 2:  # twice, in turns
        gpu = triton.testing.do_bench(lambda run=run: run(inputs), warmup=50, rep=300)
        print(f"{name:6s} compiled, no head: {gpu * 1e3:8.1f} us a call, "
              f"host {host_us(lambda run=run: run(inputs)):8.1f} us")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(200):
        runs["tlab"](inputs)
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(30)
    print("\n".join(text.getvalue().splitlines()[:60]))

    # One op at the block's shapes: eager op, opaque node, the PyTorch op.
    tokens = load.batch * load.tokens
    x = torch.randn(tokens, width.hidden, device="cuda", dtype=torch.bfloat16)
    calls = {
        "matmul_gelu": (lambda: ops.matmul_gelu(x, w["w_up"], w["b_up"]),
                        lambda: torch.ops.tlab.matmul_gelu_eager(x, w["w_up"], w["b_up"], "none"),
                        lambda: F.gelu(torch.addmm(w["b_up"], x, w["w_up"]))),
        "addmm qkv": (lambda: ops.addmm(w["b_qkv"], x, w["w_qkv"]),
                      lambda: torch.ops.tlab.addmm_eager(w["b_qkv"], x, w["w_qkv"]),
                      lambda: torch.addmm(w["b_qkv"], x, w["w_qkv"])),
        "layernorm": (lambda: ops.layernorm(x, w["ln1_w"], w["ln1_b"]),
                      lambda: torch.ops.tlab.layernorm_eager(x, w["ln1_w"], w["ln1_b"], 1e-5),
                      lambda: F.layer_norm(x, (width.hidden,), w["ln1_w"], w["ln1_b"])),
    }
    for name, (eager, node, torch_op) in calls.items():
        try:
            node()
        except Exception as err:  # noqa: BLE001 - the op not defined yet: say so
            print(f"{name}: opaque node failed: {err}")
            continue
        eager(), torch_op()
        torch.cuda.synchronize()
        print(f"{name:12s} host us: ops {host_us(eager):7.1f}  opaque node {host_us(node):7.1f}  "
              f"torch {host_us(torch_op):7.1f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
