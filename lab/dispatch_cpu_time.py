"""Lab probe, not part of the product (nothing imports it): host time of one launch of tlab's
layernorm, and of its persistent (tensor-descriptor) matmul, on this machine's CPU, no GPU
needed, through Triton's JITFunction.run and the
short way (tritonbench_lab/runtime/launching.py), with the stand-in driver of
tests/launch_recorder.py, whose launcher does nothing. What the GPU's own launch costs on top
is the same both ways; lab/launch_host_time.py times the whole on a GPU.

    env -u TRITON_INTERPRET PYTHONPATH=. python3 lab/dispatch_cpu_time.py
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import launch_recorder  # noqa: E402  (sets TLAB_FAST_LAUNCH=1 and the stand-in driver)
import torch  # noqa: E402
import triton  # noqa: E402

from tritonbench_lab.kernels import layernorm as ln  # noqa: E402
from tritonbench_lab.kernels import matmul as mm  # noqa: E402
from tritonbench_lab.runtime import launching  # noqa: E402

CALLS = 20000


def per_call_us(fn) -> float:
    for _ in range(500):
        fn()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    x, w, b = torch.randn(1, 3072), torch.randn(3072), torch.randn(3072)
    out = torch.empty_like(x)
    args = (x, w, b, out, 1, x.stride(0), out.stride(0), 1e-5)
    consts = dict(N_COLS=3072, BLOCK_COLS=4096, ROWS=1, TILE_COLS=0, EVEN_ROWS=True,
                  EVEN_COLS=False, num_warps=16, num_stages=1)
    config = {"ROWS": 1, "num_warps": 16, "TILE_COLS": 0}
    a, bm = torch.randn(256, 256, dtype=torch.bfloat16), torch.randn(256, 256,
                                                                     dtype=torch.bfloat16)
    tma = mm.bind({**mm.SPACE.complete(mm.DEFAULT_CONFIG), "TMA": 1})
    c = torch.empty(256, 256, dtype=torch.bfloat16)
    forms = {"kernel[grid](...)": lambda: ln.layernorm_kernel[(1,)](*args, **consts),
             "tlab's launcher": lambda: ln.layernorm(x, w, b, 1e-5, config, out),
             "matmul TMA bf16 256^3": lambda: tma(a, bm, c)}
    launch_recorder.RecordingLauncher.__call__ = lambda self, *args: None  # records nothing
    print(f"triton {triton.__version__}: layernorm fp32 1x3072, matmul bf16 256^3; a launcher "
          "that does nothing")
    for fast in (False, True):
        launching._active[0] = fast
        for name, fn in forms.items():
            way = "the short way" if fast else "through Triton"
            print(f"{name:>18}, {way:>14}: {per_call_us(fn):5.1f} us a call", flush=True)


if __name__ == "__main__":
    main()
