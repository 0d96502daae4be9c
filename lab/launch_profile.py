"""Lab probe, not part of the product (nothing imports it): where the host time of a launch
of tlab's persistent (TMA) matmul, its GELU form and layernorm goes, under the committed
configs of the GPU it runs on (ops' choice at each shape).

For each call: its host time (CALLS calls enqueued back to back, then a sync off the clock;
the median of ROUNDS rounds), the same for the pieces of matmul's launch done apart (three
TensorDescriptor.from_tensor, tma_ready, the stream-K buffers' lookup, torch.cuda.
current_stream), then a cProfile of PROFILED calls, the top 18 functions by own time.

    PYTHONPATH=. python3 lab/launch_profile.py          # Triton's dispatch
    TLAB_FAST_LAUNCH=1 PYTHONPATH=. python3 lab/launch_profile.py   # the short way
    PYTHONPATH=. python3 lab/launch_profile.py --fast   # the same (gpu_plan.sh passes no env)
"""

import cProfile
import os
import pstats
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from triton.tools.tensor_descriptor import TensorDescriptor

CALLS, ROUNDS, PROFILED = 20, 9, 400


def host_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        samples.append((time.perf_counter() - start) / CALLS * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def profile(name: str, fn) -> None:
    prof = cProfile.Profile()

    def loop():
        for i in range(PROFILED):
            fn()
            if i % CALLS == CALLS - 1:
                torch.cuda.synchronize()

    prof.runcall(loop)
    print(f"--- {name}: {PROFILED} calls, top by own time")
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def main() -> None:
    unknown = [arg for arg in sys.argv[1:] if arg != "--fast"]
    if unknown:
        print(f"launch_profile.py: unknown argument {unknown[0]!r}; accepted: --fast (the short "
              "launch, TLAB_FAST_LAUNCH=1) or none", file=sys.stderr)
        sys.exit(2)
    if "--fast" in sys.argv[1:]:
        os.environ["TLAB_FAST_LAUNCH"] = "1"
    # late: TLAB_FAST_LAUNCH is read when the kernel modules are imported
    from tritonbench_lab import ops
    from tritonbench_lab.kernels import matmul_persistent as mp

    print(f"TLAB_FAST_LAUNCH={os.environ.get('TLAB_FAST_LAUNCH', '')!r}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    gen = torch.Generator(device="cuda").manual_seed(0)
    bf16 = dict(dtype=torch.bfloat16, device="cuda", generator=gen)
    a, b = torch.randn(4096, 4096, **bf16), torch.randn(4096, 4096, **bf16)
    a2, b2, bias = torch.randn(4096, 2048, **bf16), torch.randn(2048, 8192, **bf16), \
        torch.randn(8192, **bf16)
    x, w, beta = torch.randn(4096, 4096, **bf16), torch.randn(4096, **bf16), \
        torch.randn(4096, **bf16)
    with torch.inference_mode():
        ops.matmul(a, b), ops.matmul_gelu(a2, b2, bias), ops.layernorm(x, w, beta)
        mm = ops.bound_launch("matmul", torch.bfloat16, (4096, 4096, 4096), 0)
        gelu = ops.bound_launch("matmul_gelu", torch.bfloat16, (4096, 8192, 2048), 0)
        ln = ops.bound_launch("layernorm", torch.bfloat16, (4096, 4096), 0)
        print("bound:", {k: (v is not None, getattr(v, "tma", None))
                         for k, v in (("matmul", mm), ("matmul_gelu", gelu), ("layernorm", ln))})
        out = torch.empty(4096, 4096, dtype=torch.bfloat16, device="cuda")
        forms = {
            "torch.matmul": lambda: torch.matmul(a, b),
            "ops.matmul": lambda: ops.matmul(a, b),
            "F.gelu(addmm)": lambda: F.gelu(torch.addmm(bias, a2, b2)),
            "ops.matmul_gelu": lambda: ops.matmul_gelu(a2, b2, bias),
            "F.layer_norm": lambda: F.layer_norm(x, (4096,), w, beta),
            "ops.layernorm": lambda: ops.layernorm(x, w, beta),
            "3 x TensorDescriptor.from_tensor": lambda: (
                TensorDescriptor.from_tensor(a, [128, 64]),
                TensorDescriptor.from_tensor(b, [64, 256]),
                TensorDescriptor.from_tensor(out, [128, 256])),
            "tma_ready(a, b, out)": lambda: mp.tma_ready(a, b, out),
            "torch.cuda.current_stream(dev)": lambda: torch.cuda.current_stream(a.device),
            "_stream_k_buffers": lambda: mp._stream_k_buffers(a.device, 132, 128 * 256),
            "torch.empty (C)": lambda: torch.empty((4096, 4096), dtype=a.dtype, device=a.device),
        }
        if mm is not None:
            forms["matmul's bound launch"] = lambda: mm(a, b)
        if gelu is not None:
            forms["matmul_gelu's bound launch"] = lambda: gelu(a2, b2, None, bias)
        if ln is not None:
            forms["layernorm's bound launch"] = lambda: ln(x, w, beta, 1e-5)
        for name, fn in forms.items():
            print(f"{name:>34}: {host_us(fn):7.1f} us host a call", flush=True)
        for name in ("matmul's bound launch", "matmul_gelu's bound launch",
                     "layernorm's bound launch"):
            if name in forms:
                profile(name, forms[name])


if __name__ == "__main__":
    main()
