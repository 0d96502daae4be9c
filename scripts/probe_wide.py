"""One-off H200 experiment behind softmax's SPLIT: 65,536-wide rows (issue #3; results in
BENCHMARKS.md and results/nvidia-h200/logs/probe-wide.log).

A 65,536-wide fp32 row is 256 KB, an SM's whole register file, and the bf16 row becomes the
same 256 KB once converted to fp32 for the math: the one-pass kernel spills (fp32 reached
0.76 and bf16 0.67 of a same-size copy). Ways around it, each timed against the one-pass
kernel on the same tensors and checked against float64 torch:

- `hybrid`: one persistent program per SM holds the first HELD columns in registers and
  streams the rest twice (online max/sum, then the output); the second read should hit L2
  because only one row per SM is in flight. Eviction hints optional.
- `split`: SPLIT programs share a row, each holding 1/SPLIT of it in registers; they swap
  (max, sum) through global memory and wait for each other. Options: TICKET (an atomic
  counter hands out pieces in start order), POLL (one thread counts arrivals), ONE_EXP (keep
  the numerators and rescale; what tlab's kernel does), SYNC=0 (no exchange: a wrong
  softmax, timed to see what the exchange costs).
- `packed` (bf16): pairs kept in one int32, unpacked (optionally in asm) where used.
- `psplit`: persistent split programs that load their next piece before they wait.
- `lowreg` (bf16): packed, processed a quarter at a time to lower the peak register count.
- `fixup`: no program waits; the last piece of a row to arrive writes the whole row.
- `cluster`: the one-program kernel with num_ctas > 1 (a thread-block cluster per row).

Usage: python3 scripts/probe_wide.py [fp32] [bf16] > wide.txt   (CUDA only; prints as it goes)
"""
# The timed lambdas capture the current loop's tensors on purpose (see probe_rows.py).
# ruff: noqa: B023, F821

from __future__ import annotations

import itertools
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, "scripts")
from probe_rows import bench_zero_flush, gbps, line  # noqa: E402

from tritonbench_lab.kernels import softmax as softmax_mod  # noqa: E402


@triton.jit
def hybrid_kernel(x_ptr, y_ptr, n_rows, n_cols, sxm, sym, HELD: tl.constexpr,
                  CHUNK: tl.constexpr, KEEP: tl.constexpr, DROP: tl.constexpr):
    held = tl.arange(0, HELD)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + row * sxm
        y_row = y_ptr + row * sym
        xh = tl.load(x_row + held, mask=held < n_cols, other=-float("inf"),
                     eviction_policy=DROP).to(tl.float32)
        m = -float("inf")
        s = 0.0
        for start in range(HELD, n_cols, CHUNK):
            cols = start + tl.arange(0, CHUNK)
            xc = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"),
                         eviction_policy=KEEP).to(tl.float32)
            new_m = tl.maximum(m, tl.max(xc, axis=0))
            s = s * tl.exp(m - new_m) + tl.sum(tl.exp(xc - new_m), axis=0)
            m = new_m
        mh = tl.max(xh, axis=0)
        new_m = tl.maximum(m, mh)
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(xh - new_m), axis=0)
        m = new_m
        inv = 1.0 / s
        tl.store(y_row + held, (tl.exp(xh - m) * inv).to(y_ptr.dtype.element_ty),
                 mask=held < n_cols, eviction_policy=DROP)
        for start in range(HELD, n_cols, CHUNK):
            cols = start + tl.arange(0, CHUNK)
            xc = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"),
                         eviction_policy=DROP).to(tl.float32)
            tl.store(y_row + cols, (tl.exp(xc - m) * inv).to(y_ptr.dtype.element_ty),
                     mask=cols < n_cols, eviction_policy=DROP)


@triton.jit
def split_kernel(x_ptr, y_ptr, stats_ptr, count_ptr, ticket_ptr, n_cols, sxm, sym,
                 CHUNK: tl.constexpr, SPLIT: tl.constexpr, TICKET: tl.constexpr,
                 POLL: tl.constexpr, ONE_EXP: tl.constexpr = 0, SYNC: tl.constexpr = 1):
    if TICKET:
        piece = tl.atomic_add(ticket_ptr, 1)
    else:
        piece = tl.program_id(0)
    row = piece // SPLIT
    cols = (piece % SPLIT) * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    num = tl.exp(x - m)
    s = tl.sum(num, axis=0)
    # (max, sum) in one 64-bit word, so one store publishes both; sum >= 1, so never 0.
    packed = (m.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (
        s.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
    if SYNC:
        tl.atomic_xchg(stats_ptr + piece, packed)
    else:  # timing only: every piece normalises by its own (max, sum), a wrong softmax
        tl.store(y_ptr + row * sym + cols, (num * (1.0 / s)).to(y_ptr.dtype.element_ty),
                 mask=mask)
        return
    if ONE_EXP:  # keep exp(x - own max), rescale by exp(own max - row max): one exp per element
        row_max, row_sum = _wait_for_row(stats_ptr, row, SPLIT)
        scale = tl.exp(m - row_max) / row_sum
        tl.store(y_ptr + row * sym + cols, (num * scale).to(y_ptr.dtype.element_ty), mask=mask)
        return
    if POLL:
        # One thread counts the arrivals (a scalar atomic), instead of every warp reading.
        tl.atomic_add(count_ptr + row, 1, sem="release")
        while tl.atomic_add(count_ptr + row, 0, sem="acquire") < SPLIT:
            pass
    row_max, row_sum = _wait_for_row(stats_ptr, row, SPLIT)
    inv = 1.0 / row_sum
    tl.store(y_ptr + row * sym + cols, (tl.exp(x - row_max) * inv).to(y_ptr.dtype.element_ty),
             mask=mask)


@triton.jit
def _unpack(v, INLINE: tl.constexpr):
    """Two bf16 in an int32 -> two fp32: a bf16 is the top half of the fp32 it rounds.
    INLINE hides the shifts in asm the compiler may not merge, so each use recomputes them
    instead of keeping the fp32 values alive."""
    if INLINE:
        lo = tl.inline_asm_elementwise("shl.b32 $0, $1, 16;", "=r,r", [v], dtype=tl.int32,
                                       is_pure=False, pack=1)
        hi = tl.inline_asm_elementwise("and.b32 $0, $1, -65536;", "=r,r", [v], dtype=tl.int32,
                                       is_pure=False, pack=1)
    else:
        lo = v << 16
        hi = v & -65536
    return lo.to(tl.float32, bitcast=True), hi.to(tl.float32, bitcast=True)


@triton.jit
def _pack(lo, hi):
    """Two fp32 -> two bf16 (rounded to nearest) in one int32."""
    lo16 = lo.to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi16 = hi.to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32)
    return (hi16 << 16) | lo16


NEG_INF_PAIR: tl.constexpr = tl.constexpr(-8323200)  # 0xFF80FF80: two bf16 -inf


@triton.jit
def packed_split_kernel(x_ptr, y_ptr, stats_ptr, n_pairs, sxm, sym, CHUNK: tl.constexpr,
                        SPLIT: tl.constexpr, INLINE: tl.constexpr):
    # x_ptr and y_ptr are int32 views of bf16 rows; CHUNK and strides count pairs.
    piece = tl.program_id(0)
    row = piece // SPLIT
    offs = (piece % SPLIT) * CHUNK + tl.arange(0, CHUNK)
    mask = offs < n_pairs
    v = tl.load(x_ptr + row * sxm + offs, mask=mask, other=NEG_INF_PAIR)
    lo, hi = _unpack(v, INLINE)
    m = tl.maximum(tl.max(lo, axis=0), tl.max(hi, axis=0))
    lo, hi = _unpack(v, INLINE)
    s = tl.sum(tl.exp(lo - m), axis=0) + tl.sum(tl.exp(hi - m), axis=0)
    if SPLIT > 1:
        m, s = _publish_and_combine(stats_ptr, piece, row, m, s, SPLIT)
    inv = 1.0 / s
    lo, hi = _unpack(v, INLINE)
    tl.store(y_ptr + row * sym + offs, _pack(tl.exp(lo - m) * inv, tl.exp(hi - m) * inv),
             mask=mask)


def run_packed(x, y, split, warps, inline):
    n_rows, n_cols = x.shape
    xi, yi = x.view(torch.int32), y.view(torch.int32)
    work = torch.zeros(n_rows * split, dtype=torch.int64, device=x.device)
    LAST["k"] = packed_split_kernel[(n_rows * split,)](
        xi, yi, work, n_cols // 2, xi.stride(0), yi.stride(0),
        CHUNK=triton.next_power_of_2(n_cols // 2) // split, SPLIT=split, INLINE=inline,
        num_warps=warps)


@triton.jit
def fixup_kernel(x_ptr, y_ptr, stats_ptr, count_ptr, n_cols, sxm, sym, PIECE: tl.constexpr,
                 SPLIT: tl.constexpr, KEEP: tl.constexpr, DROP: tl.constexpr):
    """No program waits: each piece publishes (max, sum) and counts itself in; the row's last
    piece to arrive writes the whole row, reading the other pieces of x again (from L2: they
    were read moments before)."""
    piece = tl.program_id(0)
    row = piece // SPLIT
    cols = (piece % SPLIT) * PIECE + tl.arange(0, PIECE)
    x = tl.load(x_ptr + row * sxm + cols, mask=cols < n_cols, other=-float("inf"),
                eviction_policy=KEEP).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - tl.where(m == -float("inf"), 0.0, m)), axis=0)
    word = (m.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (
        s.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
    tl.atomic_xchg(stats_ptr + piece, word)
    if tl.atomic_add(count_ptr + row, 1) == SPLIT - 1:
        row_max, row_sum = _wait_for_row(stats_ptr, row, SPLIT)
        inv = 1.0 / row_sum
        for j in range(0, SPLIT):
            cj = j * PIECE + tl.arange(0, PIECE)
            xj = tl.load(x_ptr + row * sxm + cj, mask=cj < n_cols, other=-float("inf"),
                         eviction_policy=DROP).to(tl.float32)
            tl.store(y_ptr + row * sym + cj, (tl.exp(xj - row_max) * inv).to(
                y_ptr.dtype.element_ty), mask=cj < n_cols)


def run_cluster(x, y, warps, ctas):
    """tlab's one-program-per-row kernel launched with num_ctas > 1: if Triton spreads the row
    over a thread-block cluster and reduces across it, a 65,536-wide row stops spilling."""
    n_rows, n_cols = x.shape
    LAST["k"] = softmax_mod.softmax_kernel[(n_rows,)](
        x, y, n_rows, n_cols, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
        BLOCK_COLS=triton.next_power_of_2(n_cols), ROWS=1, PER_SM=0, num_warps=warps,
        num_ctas=ctas)


def run_fixup(x, y, split, warps, hints):
    n_rows, n_cols = x.shape
    work = torch.zeros(n_rows * split + n_rows, dtype=torch.int64, device=x.device)
    count = work[n_rows * split:].view(torch.int32)
    keep, drop = ("evict_last", "evict_first") if hints else ("", "")
    LAST["k"] = fixup_kernel[(n_rows * split,)](
        x, y, work, count, n_cols, x.stride(0), y.stride(0),
        PIECE=triton.next_power_of_2(n_cols) // split, SPLIT=split, KEEP=keep, DROP=drop,
        num_warps=warps)


@triton.jit
def _after(v, dep, zero):
    """v, but only once the scalar int `dep` exists: `zero` is a runtime 0 that no compiler
    can fold away, so each phase below unpacks afresh (no common subexpression kept alive)
    and one quarter's temporaries die before the next quarter's are made."""
    return v + dep * zero


@triton.jit
def _lo(v):
    return (v << 16).to(tl.float32, bitcast=True)


@triton.jit
def _hi(v):
    return (v & -65536).to(tl.float32, bitcast=True)


@triton.jit
def _bits(f):
    return f.to(tl.int32, bitcast=True)


@triton.jit
def lowreg_kernel(x_ptr, y_ptr, stats_ptr, n_pairs, sxm, sym, zero, HALF: tl.constexpr,
                  SPLIT: tl.constexpr, SYNC: tl.constexpr):
    """bf16 pieces kept packed (two per int32), processed a quarter at a time, so the peak
    register count is the packed piece plus one quarter's fp32 temporaries."""
    piece = tl.program_id(0)
    row = piece // SPLIT
    o1 = (piece % SPLIT) * (2 * HALF) + tl.arange(0, HALF)
    o2 = o1 + HALF
    v1 = tl.load(x_ptr + row * sxm + o1, mask=o1 < n_pairs, other=NEG_INF_PAIR)
    v2 = tl.load(x_ptr + row * sxm + o2, mask=o2 < n_pairs, other=NEG_INF_PAIR)
    m = tl.max(_lo(v1), axis=0)
    m = tl.maximum(m, tl.max(_hi(_after(v1, _bits(m), zero)), axis=0))
    m = tl.maximum(m, tl.max(_lo(_after(v2, _bits(m), zero)), axis=0))
    m = tl.maximum(m, tl.max(_hi(_after(v2, _bits(m), zero)), axis=0))
    s = tl.sum(tl.exp(_lo(_after(v1, _bits(m), zero)) - m), axis=0)
    s += tl.sum(tl.exp(_hi(_after(v1, _bits(s), zero)) - m), axis=0)
    s += tl.sum(tl.exp(_lo(_after(v2, _bits(s), zero)) - m), axis=0)
    s += tl.sum(tl.exp(_hi(_after(v2, _bits(s), zero)) - m), axis=0)
    if SYNC:
        m, s = _publish_and_combine(stats_ptr, piece, row, m, s, SPLIT)
    inv = 1.0 / s
    a = _after(v1, _bits(inv), zero)
    out = _pack(tl.exp(_lo(a) - m) * inv, tl.exp(_hi(a) - m) * inv)
    tl.store(y_ptr + row * sym + o1, out, mask=o1 < n_pairs)
    b = _after(v2, tl.sum(out, axis=0), zero)
    tl.store(y_ptr + row * sym + o2, _pack(tl.exp(_lo(b) - m) * inv, tl.exp(_hi(b) - m) * inv),
             mask=o2 < n_pairs)


def run_lowreg(x, y, split, warps, sync):
    n_rows, n_cols = x.shape
    xi, yi = x.view(torch.int32), y.view(torch.int32)
    work = torch.zeros(n_rows * split, dtype=torch.int64, device=x.device)
    LAST["k"] = lowreg_kernel[(n_rows * split,)](
        xi, yi, work, n_cols // 2, xi.stride(0), yi.stride(0), 0,
        HALF=triton.next_power_of_2(n_cols // 2) // split // 2, SPLIT=split, SYNC=sync,
        num_warps=warps)


@triton.jit
def _publish_and_combine(stats_ptr, piece, row, m, s, SPLIT: tl.constexpr):
    """Publish this piece's (max, sum), wait for the row's other pieces, return the row's."""
    packed = (m.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (
        s.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
    tl.atomic_xchg(stats_ptr + piece, packed)
    return _wait_for_row(stats_ptr, row, SPLIT)


@triton.jit
def _wait_for_row(stats_ptr, row, SPLIT: tl.constexpr):
    """Spin until every piece of the row has published; the row's (max, sum)."""
    offs = row * SPLIT + tl.arange(0, SPLIT)
    seen = tl.load(stats_ptr + offs, volatile=True)
    while tl.sum((seen == 0).to(tl.int32), axis=0) > 0:
        seen = tl.load(stats_ptr + offs, volatile=True)
    ms = (seen >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    ss = seen.to(tl.int32).to(tl.float32, bitcast=True)
    row_max = tl.max(ms, axis=0)
    return row_max, tl.sum(ss * tl.exp(ms - row_max), axis=0)


@triton.jit
def psplit_kernel(x_ptr, y_ptr, stats_ptr, n_rows, n_cols, sxm, sym, CHUNK: tl.constexpr,
                  SPLIT: tl.constexpr):
    """Persistent split: program i takes pieces i, i + P, ... (P a multiple of SPLIT, so a
    row's pieces are taken in the same round by P's co-resident programs) and loads its next
    piece before it waits on the current row's partners."""
    n_pieces = n_rows * SPLIT
    step = tl.num_programs(0)
    offs = tl.arange(0, CHUNK)
    piece = tl.program_id(0)
    cols = (piece % SPLIT) * CHUNK + offs
    x = tl.load(x_ptr + (piece // SPLIT) * sxm + cols, mask=cols < n_cols, other=-float("inf"))
    for piece in range(tl.program_id(0), n_pieces, step):
        nxt = tl.where(piece + step < n_pieces, piece + step, piece)
        ncols = (nxt % SPLIT) * CHUNK + offs
        x_next = tl.load(x_ptr + (nxt // SPLIT) * sxm + ncols, mask=ncols < n_cols,
                         other=-float("inf"))
        row = piece // SPLIT
        cols = (piece % SPLIT) * CHUNK + offs
        xf = x.to(tl.float32)
        m = tl.max(xf, axis=0)
        row_max, row_sum = _publish_and_combine(stats_ptr, piece, row, m,
                                                tl.sum(tl.exp(xf - m), axis=0), SPLIT)
        tl.store(y_ptr + row * sym + cols,
                 (tl.exp(xf - row_max) * (1.0 / row_sum)).to(y_ptr.dtype.element_ty),
                 mask=cols < n_cols)
        x = x_next


def resident_programs(compiled, warps):
    """How many programs of this compiled kernel one SM holds at once (registers, warps,
    shared memory); a persistent grid wider than that would wait on programs never started."""
    compiled._init_handles()
    regs = -(-compiled.n_regs // 8) * 8
    by_regs = 65536 // (regs * 32 * warps)
    by_smem = 232448 // max(compiled.metadata.shared + 1024, 1)
    return min(by_regs, 64 // warps, 32, by_smem)


def run_psplit(x, y, split, warps, per_sm, sms):
    n_rows, n_cols = x.shape
    work = torch.zeros(n_rows * split, dtype=torch.int64, device=x.device)
    args = (x, y, work, n_rows, n_cols, x.stride(0), y.stride(0))
    meta = dict(CHUNK=triton.next_power_of_2(n_cols) // split, SPLIT=split, num_warps=warps)
    fits = resident_programs(psplit_kernel.warmup(*args, **meta, grid=(1,)), warps)
    if per_sm > fits:
        raise RuntimeError(f"only {fits} programs per SM fit")
    grid = min(n_rows * split, sms * per_sm // split * split)
    psplit_kernel[(grid,)](*args, **meta)


def run_hybrid(x, y, held, chunk, warps, hints, sms):
    n_rows, n_cols = x.shape
    keep, drop = ("evict_last", "evict_first") if hints else ("", "")
    hybrid_kernel[(min(n_rows, sms),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0),
                                       HELD=held, CHUNK=chunk, KEEP=keep, DROP=drop,
                                       num_warps=warps)


LAST = {}


def run_split(x, y, split, warps, ticket, poll, one_exp=0, sync=1):
    n_rows, n_cols = x.shape
    work = torch.zeros(n_rows * split + n_rows + 1, dtype=torch.int64, device=x.device)
    count = work[n_rows * split:].view(torch.int32)
    LAST["k"] = split_kernel[(n_rows * split,)](x, y, work, count, work[-1:], n_cols, x.stride(0),
                                    y.stride(0), CHUNK=triton.next_power_of_2(n_cols) // split,
                                    SPLIT=split, TICKET=ticket, POLL=poll, ONE_EXP=one_exp,
                                    SYNC=sync, num_warps=warps)


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    line("#", torch.cuda.get_device_name(), torch.__version__, triton.__version__, sms, "SMs")
    line("# wide: dtype, shape, variant, config, GB/s zero-flush, max err")
    gen = torch.Generator(device="cuda").manual_seed(0)
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    for dtype in [dtypes[a] for a in sys.argv[1:]] or dtypes.values():
        x = (2 * torch.randn((8192, 65536), generator=gen, device="cuda")).to(dtype)
        x += (100 * (torch.rand((8192, 1), generator=gen, device="cuda") - 0.5)).to(dtype)
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), dim=-1).float()
        nbytes = 2 * x.numel() * x.element_size()
        variants = [("one-pass", f"w={w}", lambda w=w: softmax_mod.softmax(
            x, {"ROWS": 1, "num_warps": w, "PER_SM": 0}, out=y)) for w in (8, 16, 32)]
        for held, chunk, w, hints in ((32768, 8192, 16, 1),):
            variants.append(("hybrid", f"HELD={held} CHUNK={chunk} w={w} hints={hints}",
                             lambda a=(held, chunk, w, hints): run_hybrid(x, y, *a, sms)))
        if dtype == torch.bfloat16:
            for inline, split, w in itertools.product((1, 0), (1, 2, 4, 8, 16), (4, 8, 16, 32)):
                if not 4 <= 32768 // split // (32 * w) <= 32:
                    continue
                variants.append(("packed", f"SPLIT={split} w={w} inline={inline}",
                                 lambda a=(split, w, inline): run_packed(x, y, *a)))
        if dtype == torch.bfloat16:
            for sync, split, w in itertools.product((1, 0), (1, 4, 8, 16), (2, 4, 8, 16)):
                if not 4 <= 32768 // split // (32 * w) <= 64:
                    continue
                variants.append(("lowreg", f"SPLIT={split} w={w} sync={sync}",
                                 lambda a=(split, w, sync): run_lowreg(x, y, *a)))
        for hints, split, w in itertools.product((0, 1), (4, 8, 16), (2, 4, 8, 16)):
            if not 8 <= 65536 // split // (32 * w) <= 64:
                continue
            variants.append(("fixup", f"SPLIT={split} w={w} hints={hints}",
                             lambda a=(split, w, hints): run_fixup(x, y, *a)))
        for ctas, w in itertools.product((2, 4, 8), (4, 8, 16, 32)):
            variants.append(("cluster", f"num_ctas={ctas} w={w}",
                             lambda a=(w, ctas): run_cluster(x, y, *a)))
        # Last: a bug here could hang, and everything before is printed already.
        for poll, split, w in itertools.product((0, 1), (2, 4, 8, 16), (4, 8, 16, 32)):
            if not 8 <= 65536 // split // (32 * w) <= 64:
                continue
            variants.append(("split", f"SPLIT={split} w={w} poll={poll}",
                             lambda a=(split, w, 0, poll): run_split(x, y, *a)))
        for split, w, one_exp, sync in itertools.product((4, 8, 16), (4, 8, 16), (1, 0), (1, 0)):
            if not 8 <= 65536 // split // (32 * w) <= 64 or one_exp == 0 and sync == 0:
                continue
            variants.append(("split", f"SPLIT={split} w={w} one_exp={one_exp} sync={sync}",
                             lambda a=(split, w, 0, 0, one_exp, sync): run_split(x, y, *a)))
        variants.append(("copy", "torch", lambda: y.copy_(x)))
        for split, w, per_sm in itertools.product((4, 8, 16), (4, 8, 16), (1, 2, 3, 4)):
            if not 8 <= 65536 // split // (32 * w) <= 64:
                continue
            variants.append(("psplit", f"SPLIT={split} w={w} PER_SM={per_sm}",
                             lambda a=(split, w, per_sm): run_psplit(x, y, *a, sms)))
        only = os.environ.get("ONLY")
        for variant, config, fn in variants:
            if only and not any(o in f"{variant} {config}" for o in only.split("|")):
                continue
            try:
                y.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                err = (y.float() - ref).abs().max().item()
                ms = bench_zero_flush(fn)
            except Exception as e:  # noqa: BLE001 - an experiment: record and go on
                line("wide", str(dtype)[6:], variant, config, "ERROR", type(e).__name__, str(e)[-400:])
                continue
            k = LAST.pop("k", None)
            regs = f"regs={k.n_regs} spills={k.n_spills}" if k is not None else ""
            line("wide", str(dtype)[6:], "8192x65536", variant, config,
                 round(gbps(nbytes, ms)), f"{err:.2e}", regs)
        del x, y, ref


if __name__ == "__main__":
    main()
