"""`tlab calibrate`: the ceilings measured on the GPU itself, what every kernel's throughput is
a fraction of: the copy bandwidth (a 4 GiB device-to-device copy, and the copy curve of
16 MiB to 2 GiB moved) and torch.matmul's TFLOP/s per dtype on square operands. What they
mean and how rows are judged against them: data/ceilings.py."""

from __future__ import annotations

import datetime

import torch

from tritonbench_lab.data.ceilings import COPY_BYTES, COPY_CURVE_MIB
from tritonbench_lab.data.records import GBPS, TFLOPS, Ceiling
from tritonbench_lab.measure.timing import time_call
from tritonbench_lab.spec import dtype_name

MATMUL_SIZE = 8192


def _times(timed) -> tuple[float, float, float]:
    return timed.p20, timed.p50, timed.p80


def measure(fingerprint, bench, dtypes) -> list[Ceiling]:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    common = {"gpu": fingerprint.gpu, "gpu_slug": fingerprint.gpu_slug,
              "torch": fingerprint.torch, "triton": fingerprint.triton, "timestamp": now,
              **bench.columns(False)}
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)

    def copy_row(name: str, source_bytes: int) -> Ceiling:
        """Time copying a buffer of source_bytes (read once, written once: twice the bytes)."""
        src = torch.rand(source_bytes // 4, generator=gen, device="cuda")
        dst = torch.empty_like(src)
        p20, p50, p80 = _times(time_call(lambda: dst.copy_(src), bench, False))
        return Ceiling(name=name, metric=GBPS, value=2 * source_bytes / (p50 * 1e-3) / 1e9,
                       p20_ms=p20, p50_ms=p50, p80_ms=p80, size=f"{source_bytes} bytes",
                       **common)

    rows.append(copy_row("copy", COPY_BYTES))
    rows += [copy_row(f"copy_{mib}MiB", mib * 2**20 // 2) for mib in COPY_CURVE_MIB]
    n = MATMUL_SIZE
    for dtype in dtypes:
        a = torch.randn((n, n), generator=gen, device="cuda").to(dtype)
        b = torch.randn((n, n), generator=gen, device="cuda").to(dtype)
        p20, p50, p80 = _times(time_call(lambda a=a, b=b: torch.matmul(a, b), bench, False))
        rows.append(Ceiling(name=f"matmul_{dtype_name(dtype)}", metric=TFLOPS,
                            value=2 * n**3 / (p50 * 1e-3) / 1e12, p20_ms=p20, p50_ms=p50,
                            p80_ms=p80, size=f"{n}x{n}x{n}", **common))
        del a, b
    return rows
