"""One-off H200 experiment, session 4 of issue #3: can softmax's split exchange be made cheap
enough for 65,536-wide bf16 rows? (results in BENCHMARKS.md, logs/probe-exchange.log)

probe_wide.py measured the split kernel without its exchange (a wrong softmax) at 4,082-4,159
GB/s for bf16 and with it at 2,868-3,207, while fp32 loses almost nothing. The working theory:
a waiting piece holds its registers with no loads in flight, and a bf16 piece holds half the
bytes per register of an fp32 one, so bf16 has no slack to hide the wait. This probe varies
the three things that theory says matter, on the split kernel as committed:

- SEM: the publishing atomic's ordering. tlab's kernel uses the default (acq_rel), which
  makes the first poll wait for the atomic's round trip; the (max, sum) word needs no
  ordering with anything else, so relaxed is enough.
- KEEP: what a piece holds while it waits: `num` (fp32 numerators, one exp per element, as
  committed) or `pairs` (the loaded bf16 pairs, two to an int32, and exp again afterwards).
- maxnreg: a register cap, so more pieces fit on an SM (pairs hold half the registers).
- EVICT: x loaded evict_first and y stored streaming (.cs), so polls meet a cleaner L2.

Usage: python3 scripts/probe_exchange.py [bf16] [fp32] > exchange.txt  (CUDA; prints as it goes)
Also runs in the interpreter on a small shape (TRITON_INTERPRET=1), to check the math.
"""
# The timed lambdas capture the current loop's tensors on purpose.
# ruff: noqa: B023, F821

from __future__ import annotations

import itertools
import os
import sys

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
sys.path.insert(0, "scripts")
# bf16 pairs in an int32: split into fp32 halves, packed back, made to depend on a value.
from probe_wide import NEG_INF_PAIR, _after, _hi, _lo, _pack  # noqa: E402


@triton.jit
def _word(m, s):
    """(max, sum) in one 64-bit word; never 0 (a real piece's sum is >= 1)."""
    return (m.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (
        s.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)


@triton.jit
def _exchange(stats_ptr, piece, row, m, s, SPLIT: tl.constexpr, SEM: tl.constexpr,
              PUBLISH_ONLY: tl.constexpr):
    """Publish this piece's word, wait for the row's, return the row's (max, sum)."""
    tl.atomic_xchg(stats_ptr + piece, _word(m, s), sem=SEM)
    row_max = m
    row_sum = s
    if not PUBLISH_ONLY:
        slots = stats_ptr + row * SPLIT + tl.arange(0, SPLIT)
        words = tl.load(slots, volatile=True)
        while tl.sum((words == 0).to(tl.int32), axis=0) > 0:
            words = tl.load(slots, volatile=True)
        maxes = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
        sums = words.to(tl.int32).to(tl.float32, bitcast=True)
        row_max = tl.max(maxes, axis=0)
        row_sum = tl.sum(sums * tl.exp(maxes - row_max), axis=0)
    return row_max, row_sum


@triton.jit
def num_kernel(x_ptr, y_ptr, stats_ptr, n_cols, sxm, sym, PIECE: tl.constexpr,
               SPLIT: tl.constexpr, SEM: tl.constexpr, EVICT: tl.constexpr,
               PUBLISH_ONLY: tl.constexpr):
    """tlab's split kernel (contiguous rows), with SEM and EVICT."""
    piece = tl.program_id(0)
    row = piece // SPLIT
    cols = (piece % SPLIT) * PIECE + tl.arange(0, PIECE)
    mask = cols < n_cols
    if EVICT:
        x = tl.load(x_ptr + row * sxm + cols, mask=mask, other=-float("inf"),
                    eviction_policy="evict_first")
    else:
        x = tl.load(x_ptr + row * sxm + cols, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    m = tl.max(x, axis=0)
    num = tl.exp(x - m)
    s = tl.sum(num, axis=0)
    row_max, row_sum = _exchange(stats_ptr, piece, row, m, s, SPLIT, SEM, PUBLISH_ONLY)
    if not PUBLISH_ONLY:
        out = (num * (tl.exp(m - row_max) / row_sum)).to(y_ptr.dtype.element_ty)
        if EVICT:
            tl.store(y_ptr + row * sym + cols, out, mask=mask, cache_modifier=".cs")
        else:
            tl.store(y_ptr + row * sym + cols, out, mask=mask)


@triton.jit
def pairs_kernel(x_ptr, y_ptr, stats_ptr, n_pairs, sxm, sym, zero, PAIRS: tl.constexpr,
                 SPLIT: tl.constexpr, SEM: tl.constexpr, EVICT: tl.constexpr,
                 PUBLISH_ONLY: tl.constexpr):
    """bf16 only: x and y are int32 views (two bf16 each); a piece holds its packed pairs
    while it waits and computes exp again afterwards."""
    piece = tl.program_id(0)
    row = piece // SPLIT
    offs = (piece % SPLIT) * PAIRS + tl.arange(0, PAIRS)
    mask = offs < n_pairs
    if EVICT:
        v = tl.load(x_ptr + row * sxm + offs, mask=mask, other=NEG_INF_PAIR,
                    eviction_policy="evict_first")
    else:
        v = tl.load(x_ptr + row * sxm + offs, mask=mask, other=NEG_INF_PAIR)
    m = tl.maximum(tl.max(_lo(v), axis=0), tl.max(_hi(v), axis=0))
    w = _after(v, m.to(tl.int32, bitcast=True), zero)
    s = tl.sum(tl.exp(_lo(w) - m), axis=0) + tl.sum(tl.exp(_hi(w) - m), axis=0)
    row_max, row_sum = _exchange(stats_ptr, piece, row, m, s, SPLIT, SEM, PUBLISH_ONLY)
    if not PUBLISH_ONLY:
        inv = 1.0 / row_sum
        a = _after(v, inv.to(tl.int32, bitcast=True), zero)
        out = _pack(tl.exp(_lo(a) - row_max) * inv, tl.exp(_hi(a) - row_max) * inv)
        if EVICT:
            tl.store(y_ptr + row * sym + offs, out, mask=mask, cache_modifier=".cs")
        else:
            tl.store(y_ptr + row * sym + offs, out, mask=mask)


LAST = {}


def run(kind, x, y, split, warps, sem, evict, maxnreg):
    n_rows, n_cols = x.shape
    stats = torch.zeros(n_rows * split, dtype=torch.int64, device=x.device)
    opts = dict(SPLIT=split, SEM=sem, EVICT=evict, num_warps=warps)
    if maxnreg and not INTERPRET:
        opts["maxnreg"] = maxnreg
    if kind == "num":
        kernel = num_kernel
        args = (x, y, stats, n_cols, x.stride(0), y.stride(0))
        opts["PIECE"] = triton.next_power_of_2(n_cols) // split
    else:
        kernel = pairs_kernel
        xi, yi = x.view(torch.int32), y.view(torch.int32)
        args = (xi, yi, stats, n_cols // 2, xi.stride(0), yi.stride(0), 0)
        opts["PAIRS"] = triton.next_power_of_2(n_cols // 2) // split
    grid = (n_rows * split,)
    if INTERPRET:  # programs run one at a time there: every piece publishes first
        kernel[grid](*args, PUBLISH_ONLY=True, **opts)
    LAST["k"] = kernel[grid](*args, PUBLISH_ONLY=False, **opts)


def line(*cells):
    print("\t".join(str(c) for c in cells), flush=True)


def main():
    device = "cpu" if INTERPRET else "cuda"
    shape = (5, 1000) if INTERPRET else (8192, 65536)
    if not INTERPRET:
        line("#", torch.cuda.get_device_name(), torch.__version__, triton.__version__)
    line("# exchange: dtype, shape, kernel, config, GB/s (do_bench median), max err, regs")
    gen = torch.Generator(device=device).manual_seed(0)
    names = {"bf16": torch.bfloat16, "fp32": torch.float32}
    for dtype in [names[a] for a in sys.argv[1:]] or names.values():
        x = (2 * torch.randn(shape, generator=gen, device=device)).to(dtype)
        x += (100 * (torch.rand((shape[0], 1), generator=gen, device=device) - 0.5)).to(dtype)
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), dim=-1).float()
        nbytes = 2 * x.numel() * x.element_size()
        variants = [("copy", "torch", lambda: y.copy_(x))]
        kinds = ("num", "pairs") if dtype == torch.bfloat16 else ("num",)
        for kind, split, warps, sem, evict, maxnreg in itertools.product(
                kinds, (4, 8, 16), (2, 4, 8), ("acq_rel", "relaxed"), (0, 1), (0, 32, 40)):
            per_thread = 65536 // split // (32 * warps)
            if not 16 <= per_thread <= 64 or maxnreg == 32 and per_thread > 32:
                continue
            if evict and sem == "acq_rel" or dtype == torch.float32 and maxnreg:
                continue
            if INTERPRET and (maxnreg or evict or warps != 4):
                continue
            variants.append((kind, f"SPLIT={split} w={warps} sem={sem} evict={evict} "
                                   f"maxnreg={maxnreg}",
                             lambda a=(kind, split, warps, sem, evict, maxnreg):
                             run(a[0], x, y, *a[1:])))
        only = os.environ.get("ONLY")
        for kind, config, fn in variants:
            if only and not any(o in f"{kind} {config}" for o in only.split("|")):
                continue
            try:
                y.fill_(float("nan"))
                fn()
                if not INTERPRET:
                    torch.cuda.synchronize()
                err = (y.float() - ref).abs().max().item()
                ms = None if INTERPRET else triton.testing.do_bench(fn, warmup=10, rep=30)
            except Exception as e:  # noqa: BLE001 - an experiment: record and go on
                line("exchange", str(dtype)[6:], kind, config, "ERROR", type(e).__name__,
                     str(e)[-300:].replace("\n", " "))
                continue
            k = LAST.pop("k", None)
            regs = f"regs={k.n_regs} spills={k.n_spills}" if k is not None and not INTERPRET else ""
            gbps = "-" if ms is None else round(nbytes / ms / 1e6)
            line("exchange", str(dtype)[6:], "x".join(map(str, shape)), kind, config, gbps,
                 f"{err:.2e}", regs)
        del x, y, ref


if __name__ == "__main__":
    main()
