"""Quick look at one H200: tuned-ish matmul configs vs torch.matmul, compile and bench times.

Not part of the product; it tells us what to expect before the sweep exists.
"""
import time

import torch
import triton

from tritonbench_lab.kernels.matmul import SPEC, matmul
from tritonbench_lab.spec import Shape

print(torch.__version__, triton.__version__, torch.cuda.get_device_name())
props = torch.cuda.get_device_properties(0)
print("shared_memory_per_block_optin", getattr(props, "shared_memory_per_block_optin", None))
for n in (1024, 4096, 8192):
    inputs = SPEC.make_inputs(Shape.of(M=n, N=n, K=n), torch.bfloat16, "cuda", 0)
    a, b = inputs["a"], inputs["b"]
    t_torch = triton.testing.do_bench(lambda: torch.matmul(a, b))
    flops = 2 * n**3
    print(f"n={n} torch {flops / t_torch / 1e9:.0f} TFLOP/s")
    for cfg in (SPEC.space.default,
                {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
                {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
                {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}):
        t0 = time.time()
        matmul(a, b, cfg)
        torch.cuda.synchronize()
        t1 = time.time()
        ms = triton.testing.do_bench(lambda: matmul(a, b, cfg))
        t2 = time.time()
        print(f"  {cfg} first call {t1 - t0:.2f}s bench {t2 - t1:.2f}s -> "
              f"{flops / ms / 1e9:.0f} TFLOP/s ({t_torch / ms:.2f}x torch)")
