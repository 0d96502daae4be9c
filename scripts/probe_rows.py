"""One-off H200 experiment behind the row-kernel work of issue #3 (results in BENCHMARKS.md).

Questions:
1. How fast is a plain device copy at the byte counts of the row shapes (32 MB .. 4 GB)?
   do_bench clears L2 by writing 256 MB of zeros, which leaves L2 full of dirty lines that a
   short kernel pays to write back; a flush that only reads leaves clean lines. Both.
2. Does multiplying by the row's reciprocal (one divide per row) beat a divide per element?
3. For wide rows: a persistent two-pass kernel over chunks (online max/sum, then a second
   read that should hit L2 when few rows are in flight) vs the one-pass register kernel.

4. (Not run yet) `wide`: 65,536-wide bf16 rows kept packed in the input dtype, with the
   exponentials computed twice, against the one-pass kernel.

Usage: python3 scripts/probe_rows.py [copy softmax rmsnorm wide] > probe.txt   (CUDA only)
"""
# The timed lambdas capture the current loop's tensors on purpose: each is timed before the
# loop moves on (and before the tensors are freed).
# ruff: noqa: B023, F821

from __future__ import annotations

import itertools
import sys

import torch
import triton
import triton.language as tl
import triton.testing

from tritonbench_lab.kernels import rmsnorm as rmsnorm_mod
from tritonbench_lab.kernels import softmax as softmax_mod

REP_MS = 30
CACHE = None  # 256 MB, made in main


def bench_read_flush(fn, rep_ms=REP_MS):
    """do_bench's loop, but L2 is cleared by reading 256 MB (clean lines), not writing it."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        CACHE.sum()
        fn()
    end.record()
    torch.cuda.synchronize()
    n = max(1, int(rep_ms / (start.elapsed_time(end) / 5)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        CACHE.sum()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))
    return times[len(times) // 2]


def bench_zero_flush(fn, rep_ms=REP_MS):
    return triton.testing.do_bench(fn, warmup=10, rep=rep_ms, return_mode="median")


@triton.jit
def softmax_recip_kernel(x_ptr, y_ptr, n_rows, n_cols, sxm, sym,
                         BLOCK_COLS: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_COLS)
    safe_rows = rows % n_rows
    col_mask = cols[None, :] < n_cols
    x = tl.load(x_ptr + safe_rows[:, None] * sxm + cols[None, :], mask=col_mask,
                other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = num * (1.0 / tl.sum(num, axis=1))[:, None]
    tl.store(y_ptr + rows[:, None] * sym + cols[None, :], y.to(y_ptr.dtype.element_ty),
             mask=(rows[:, None] < n_rows) & col_mask)


@triton.jit
def softmax_chunked_kernel(x_ptr, y_ptr, n_rows, n_cols, sxm, sym, CHUNK: tl.constexpr):
    # Persistent: few rows in flight, so the second read of a row comes from L2.
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + row * sxm
        row_max = -float("inf")
        row_sum = 0.0
        for start in range(0, n_cols, CHUNK):
            cols = start + tl.arange(0, CHUNK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            new_max = tl.maximum(row_max, tl.max(x, axis=0))
            row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
            row_max = new_max
        inv = 1.0 / row_sum
        y_row = y_ptr + row * sym
        for start in range(0, n_cols, CHUNK):
            cols = start + tl.arange(0, CHUNK)
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
            tl.store(y_row + cols, (tl.exp(x - row_max) * inv).to(y_ptr.dtype.element_ty),
                     mask=mask)


@triton.jit
def softmax_recompute_kernel(x_ptr, y_ptr, n_cols, sxm, sym, BLOCK_COLS: tl.constexpr):
    # The row stays in its input dtype (half the registers of fp32 for bf16); the exponentials
    # are computed twice instead of being kept. Aimed at 65,536-wide bf16 rows, which spill.
    cols = tl.arange(0, BLOCK_COLS)
    mask = cols < n_cols
    x = tl.load(x_ptr + tl.program_id(0) * sxm + cols, mask=mask, other=-float("inf"))
    row_max = tl.max(x, axis=0).to(tl.float32)
    inv = 1.0 / tl.sum(tl.exp(x.to(tl.float32) - row_max), axis=0)
    y = tl.exp(x.to(tl.float32) - row_max) * inv
    tl.store(y_ptr + tl.program_id(0) * sym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def run_recompute(x, y, warps):
    n_rows, n_cols = x.shape
    softmax_recompute_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0),
                                        BLOCK_COLS=triton.next_power_of_2(n_cols), num_warps=warps)


SMS = 132  # set in main


def committed_winners():
    """(dtype, shape) -> the committed H200 softmax winner's config."""
    import csv

    from tritonbench_lab.records import parse_config_text
    with open("configs/nvidia-h200/softmax.csv") as f:
        return {(r["dtype"], r["shape"]): parse_config_text(r["config"]) for r in csv.DictReader(f)}


WINNERS = committed_winners()


def run_recip(x, y, rows, warps):
    n_rows, n_cols = x.shape
    softmax_recip_kernel[(triton.cdiv(n_rows, rows),)](
        x, y, n_rows, n_cols, x.stride(0), y.stride(0),
        BLOCK_COLS=triton.next_power_of_2(n_cols), ROWS=rows, num_warps=warps)


def run_chunked(x, y, chunk, warps, per_sm):
    n_rows, n_cols = x.shape
    softmax_chunked_kernel[(min(n_rows, SMS * per_sm),)](
        x, y, n_rows, n_cols, x.stride(0), y.stride(0), CHUNK=chunk, num_warps=warps)


def gbps(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9


def line(*parts):
    print("\t".join(str(p) for p in parts), flush=True)


def copy_curve():
    line("# copy: traffic MB, GB/s zero-flush (do_bench), GB/s read-flush")
    for mb in (32, 64, 96, 128, 256, 512, 1024, 4096):
        n = mb * 2**20 // 2 // 4  # read + write = mb
        src = torch.randn(n, device="cuda")
        dst = torch.empty_like(src)
        fn = lambda: dst.copy_(src)  # noqa: E731
        line("copy", mb, round(gbps(mb * 2**20, bench_zero_flush(fn))),
             round(gbps(mb * 2**20, bench_read_flush(fn))))
        del src, dst


def softmax_shapes():
    line("# softmax: dtype, shape, variant, config, GB/s zero-flush, max err")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dtype, cols in itertools.product((torch.bfloat16, torch.float32),
                                         (1024, 4096, 16384, 32768, 65536)):
        rows = 8192
        x = (2 * torch.randn((rows, cols), generator=gen, device="cuda")).to(dtype)
        y = torch.empty_like(x)
        ref = torch.softmax(x.float(), dim=-1)
        nbytes = 2 * x.numel() * x.element_size()
        name = f"{str(dtype)[6:]}\t{rows}x{cols}"
        results = []

        def measure(variant, config, fn):
            try:
                fn()
                torch.cuda.synchronize()
                err = (y.float() - ref).abs().max().item()
                ms = bench_zero_flush(fn)
            except Exception as e:  # noqa: BLE001 - an experiment: record and go on
                line("softmax", name, variant, config, "ERROR", type(e).__name__)
                return
            results.append((gbps(nbytes, ms), variant, config, err, fn))

        block = triton.next_power_of_2(cols)
        # The committed winner (divide per element), then the reciprocal over a small grid.
        won = WINNERS.get((str(dtype)[6:].replace("float32", "fp32").replace("bfloat16", "bf16"),
                           f"{rows}x{cols}"))
        if won:
            measure("divide", won, lambda: softmax_mod.softmax(x, won, out=y))
        for r, w in itertools.product((1, 2, 4), (4, 8, 16, 32)):
            per_thread = r * block // (32 * w)
            if r > 1 and r * block > 16384 or per_thread > 256 or per_thread < 4:
                continue
            measure("recip", f"ROWS={r} w={w}", lambda r=r, w=w: run_recip(x, y, r, w))
        if cols >= 8192:
            for c, w, k in itertools.product((2048, 4096, 8192), (4, 8, 16), (1, 2, 4)):
                if c // (32 * w) < 4:
                    continue
                measure("chunked", f"CHUNK={c} w={w} per_sm={k}",
                        lambda c=c, w=w, k=k: run_chunked(x, y, c, w, k))
        results.sort(key=lambda t: -t[0])
        best_by_variant = {}
        for r in results:
            best_by_variant.setdefault(r[1], r)
        for g, variant, cfg, err, fn in best_by_variant.values():
            line("softmax", name, variant, cfg, round(g), f"{err:.2e}",
                 "read-flush", round(gbps(nbytes, bench_read_flush(fn))))
        del x, y, ref


def wide_rows():
    """65,536-wide bf16 rows: the committed winner's config against the recompute kernel."""
    line("# wide: dtype, shape, variant, config, GB/s zero-flush, max err")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (torch.bfloat16, torch.float16):
        x = (2 * torch.randn((8192, 65536), generator=gen, device="cuda")).to(dtype)
        y = torch.empty_like(x)
        ref = torch.softmax(x.float(), dim=-1)
        nbytes = 2 * x.numel() * x.element_size()
        variants = [("one-pass", w, lambda w=w: softmax_mod.softmax(
            x, {"ROWS": 1, "num_warps": w, "PER_SM": 0}, out=y)) for w in (16, 32)]
        variants += [("recompute", w, lambda w=w: run_recompute(x, y, w)) for w in (8, 16, 32)]
        for variant, w, fn in variants:
            fn()
            torch.cuda.synchronize()
            err = (y.float() - ref).abs().max().item()
            line("wide", str(dtype)[6:], "8192x65536", variant, f"w={w}",
                 round(gbps(nbytes, bench_zero_flush(fn))), f"{err:.2e}")
        del x, y, ref


def rmsnorm_shapes():
    line("# rmsnorm: kernel, dtype, shape, config, GB/s zero-flush, GB/s read-flush")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for residual, dtype, cols in itertools.product((False, True), (torch.bfloat16, torch.float32),
                                                   (1024, 2048)):
        rows = 16384
        x = torch.randn((rows, cols), generator=gen, device="cuda").to(dtype)
        r = torch.randn((rows, cols), generator=gen, device="cuda").to(dtype)
        w = torch.randn(cols, generator=gen, device="cuda").to(dtype)
        nbytes = (4 if residual else 2) * x.numel() * x.element_size()
        best = None
        for rr, ww in itertools.product((1, 2, 4, 8), (1, 2, 4, 8)):
            if rr * cols // (32 * ww) > 256 or rr * cols // (32 * ww) < 2:
                continue
            fn = (lambda rr=rr, ww=ww: rmsnorm_mod.rmsnorm(
                x, w, residual=r if residual else None, config={"ROWS": rr, "num_warps": ww}))
            ms = bench_zero_flush(fn)
            if best is None or ms < best[0]:
                best = (ms, f"ROWS={rr} w={ww}", fn)
        ms, cfg, fn = best
        line("add_rmsnorm" if residual else "rmsnorm", str(dtype)[6:], f"{rows}x{cols}", cfg,
             round(gbps(nbytes, ms)), round(gbps(nbytes, bench_read_flush(fn))))


if __name__ == "__main__":
    CACHE = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    SMS = torch.cuda.get_device_properties(0).multi_processor_count
    line("#", torch.cuda.get_device_name(), torch.__version__, triton.__version__, SMS, "SMs")
    for part in sys.argv[1:] or ("copy", "softmax", "rmsnorm"):
        {"copy": copy_curve, "softmax": softmax_shapes, "rmsnorm": rmsnorm_shapes,
         "wide": wide_rows}[part]()
