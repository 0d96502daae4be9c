"""Lab probe, not part of the product (nothing imports it): the host time tritonbench_lab.ops
adds to a call of the PyTorch op it stands in for, on this machine's CPU, no GPU needed (CPU
tensors: ops decides for the PyTorch op and memoises that, as on a GPU where tlab's kernel
does not lead). The mean of CALLS calls each, the op bare and through ops.

    env -u TRITON_INTERPRET PYTHONPATH=. python3 lab/ops_dispatch_cpu.py
"""

import time

import torch
import torch.nn.functional as F

from tritonbench_lab import ops

CALLS = 200_000


def per_call_us(fn) -> float:
    for _ in range(2000):
        fn()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    a, b = torch.randn(7, 7), torch.randn(7, 7)
    x, y = torch.randn(1000), torch.randn(1000)
    rows, w, bias = torch.randn(1, 64), torch.randn(64), torch.randn(64)
    cases = {
        "matmul 7x7x7": (lambda: torch.matmul(a, b), lambda: ops.matmul(a, b)),
        "add 1000": (lambda: torch.add(x, y), lambda: ops.add(x, y)),
        "softmax 1x64": (lambda: torch.softmax(rows, dim=-1), lambda: ops.softmax(rows)),
        "layernorm 1x64": (lambda: F.layer_norm(rows, (64,), w, bias, 1e-5),
                           lambda: ops.layernorm(rows, w, bias)),
        "rmsnorm 1x64": (lambda: F.rms_norm(rows, (64,), w, 1e-6), lambda: ops.rmsnorm(rows, w)),
    }
    print(f"torch {torch.__version__}, {CALLS} calls each")
    for name, (bare, through_ops) in cases.items():
        op_us, ops_us = per_call_us(bare), per_call_us(through_ops)
        print(f"{name:>15}: the op {op_us:.2f} us, through ops {ops_us:.2f} us, "
              f"ops adds {ops_us - op_us:.2f} us", flush=True)


if __name__ == "__main__":
    main()
