"""Lab probe, not part of the product: two rope kernels beside the committed one, to see
which difference closes fp32 prefill's 1-4% gap to torch.compile (BENCHMARKS.md, rope):

- narrow: the committed kernel's tiles (HEADS heads x half of one token a step), with int32
  index math (the committed one is 64-bit from the token on) and no masks where the tile
  divides the shape (EVEN);
- flat: Inductor's form: a flat 1-D block of output elements, every size a constexpr (a
  compile per shape), int32, no masks when BLOCK divides the elements; each element loads
  itself and its rotation partner (the partner evict_last, as Inductor's does).

`python3 lab/rope_variants.py check` verifies both against the float64 reference (in the
interpreter with TRITON_INTERPRET=1 on a CPU); `python3 lab/rope_variants.py time` times
them on a GPU at the 6 prefill shapes in fp32 and bf16, beside the committed kernel's
committed config and torch.compile, with tlab's clocks, in one process.
"""
import sys

import torch
import triton
import triton.language as tl

from tritonbench_lab.kernels import rope as committed
from tritonbench_lab.space import next_power_of_2


@triton.jit
def narrow_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, qo_ptr, ko_ptr, n_batch, n_seq, n_heads,
                  head_dim, stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh,
                  stride_ob, stride_os, stride_oh, stride_cs, BLOCK_HALF: tl.constexpr,
                  HEADS: tl.constexpr, TOKENS: tl.constexpr, EVEN: tl.constexpr):
    half = head_dim >> 1
    n_tokens = n_batch * n_seq
    heads = tl.program_id(1) * HEADS + tl.arange(0, HEADS)
    cols = tl.arange(0, BLOCK_HALF)
    for i in tl.static_range(TOKENS):
        token = tl.program_id(0) * TOKENS + i  # int32: the launcher checked the extent
        b = token // n_seq
        s = token - b * n_seq
        if EVEN:
            c = tl.load(cos_ptr + s * stride_cs + cols)
            sn = tl.load(sin_ptr + s * stride_cs + cols)
        else:
            width = tl.where(token < n_tokens, half, 0)
            c = tl.load(cos_ptr + s * stride_cs + cols, mask=cols < width, other=0.0)
            sn = tl.load(sin_ptr + s * stride_cs + cols, mask=cols < width, other=0.0)
            mask = (heads[:, None] < n_heads) & (cols[None, :] < width)
        c, sn = c.to(tl.float32)[None, :], sn.to(tl.float32)[None, :]
        q_at = q_ptr + b * stride_qb + s * stride_qs + heads[:, None] * stride_qh + cols[None, :]
        k_at = k_ptr + b * stride_kb + s * stride_ks + heads[:, None] * stride_kh + cols[None, :]
        o_off = b * stride_ob + s * stride_os + heads[:, None] * stride_oh + cols[None, :]
        if EVEN:
            q1 = tl.load(q_at).to(tl.float32)
            q2 = tl.load(q_at + half).to(tl.float32)
            k1 = tl.load(k_at).to(tl.float32)
            k2 = tl.load(k_at + half).to(tl.float32)
            ty = qo_ptr.dtype.element_ty
            tl.store(qo_ptr + o_off, (q1 * c - q2 * sn).to(ty))
            tl.store(qo_ptr + o_off + half, (q2 * c + q1 * sn).to(ty))
            tl.store(ko_ptr + o_off, (k1 * c - k2 * sn).to(ty))
            tl.store(ko_ptr + o_off + half, (k2 * c + k1 * sn).to(ty))
        else:
            q1 = tl.load(q_at, mask=mask, other=0.0).to(tl.float32)
            q2 = tl.load(q_at + half, mask=mask, other=0.0).to(tl.float32)
            k1 = tl.load(k_at, mask=mask, other=0.0).to(tl.float32)
            k2 = tl.load(k_at + half, mask=mask, other=0.0).to(tl.float32)
            ty = qo_ptr.dtype.element_ty
            tl.store(qo_ptr + o_off, (q1 * c - q2 * sn).to(ty), mask=mask)
            tl.store(qo_ptr + o_off + half, (q2 * c + q1 * sn).to(ty), mask=mask)
            tl.store(ko_ptr + o_off, (k1 * c - k2 * sn).to(ty), mask=mask)
            tl.store(ko_ptr + o_off + half, (k2 * c + k1 * sn).to(ty), mask=mask)


def narrow(q, k, cos, sin, config, q_out, k_out):
    batch, seq, heads, head_dim = q.shape
    half = head_dim // 2
    def extent(t):  # one past the last element t reaches
        steps = zip(t.shape, t.stride(), strict=True)
        return t.storage_offset() + sum((n - 1) * st for n, st in steps) + 1

    extent = max(map(extent, (q, k, q_out)))
    assert extent < 2**31, "narrow needs int32 offsets"
    H, T, warps = config["HEADS"], config["TOKENS"], config["num_warps"]
    even = (next_power_of_2(half) == half and heads % H == 0 and (batch * seq) % T == 0)
    grid = (triton.cdiv(batch * seq, T), triton.cdiv(heads, H))
    narrow_kernel[grid](q, k, cos, sin, q_out, k_out, batch, seq, heads, head_dim,
                        *q.stride()[:3], *k.stride()[:3], *q_out.stride()[:3], cos.stride(0),
                        BLOCK_HALF=next_power_of_2(half), HEADS=H, TOKENS=T, EVEN=even,
                        num_warps=warps)
    return q_out, k_out


@triton.jit
def flat_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, qo_ptr, ko_ptr,
                SEQ: tl.constexpr, HEADS_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                SQB: tl.constexpr, SQS: tl.constexpr, SQH: tl.constexpr,
                SKB: tl.constexpr, SKS: tl.constexpr, SKH: tl.constexpr,
                N: tl.constexpr, BLOCK: tl.constexpr):
    HALF: tl.constexpr = HEAD_DIM // 2
    n = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = n < N
    d = n % HEAD_DIM
    h = (n // HEAD_DIM) % HEADS_N
    tok = n // (HEAD_DIM * HEADS_N)
    s = tok % SEQ
    b = tok // SEQ
    first = d < HALF
    partner = tl.where(first, d + HALF, d - HALF)
    j = tl.where(first, d, d - HALF)
    c = tl.load(cos_ptr + s * HALF + j, mask=mask, eviction_policy="evict_last")
    sn = tl.load(sin_ptr + s * HALF + j, mask=mask, eviction_policy="evict_last")
    sn = tl.where(first, -sn, sn)
    qa = b * SQB + s * SQS + h * SQH
    ka = b * SKB + s * SKS + h * SKH
    q = tl.load(q_ptr + qa + d, mask=mask).to(tl.float32)
    qp = tl.load(q_ptr + qa + partner, mask=mask, eviction_policy="evict_last").to(tl.float32)
    k = tl.load(k_ptr + ka + d, mask=mask).to(tl.float32)
    kp = tl.load(k_ptr + ka + partner, mask=mask, eviction_policy="evict_last").to(tl.float32)
    ty = qo_ptr.dtype.element_ty
    tl.store(qo_ptr + n, (q * c + qp * sn).to(ty), mask=mask)
    tl.store(ko_ptr + n, (k * c + kp * sn).to(ty), mask=mask)


def flat(q, k, cos, sin, config, q_out, k_out):
    batch, seq, heads, head_dim = q.shape
    n = q.numel()
    assert n < 2**31
    block = config["BLOCK"]
    flat_kernel[(triton.cdiv(n, block),)](
        q, k, cos, sin, q_out, k_out, SEQ=seq, HEADS_N=heads, HEAD_DIM=head_dim,
        SQB=q.stride(0), SQS=q.stride(1), SQH=q.stride(2), SKB=k.stride(0), SKS=k.stride(1),
        SKH=k.stride(2), N=n, BLOCK=block, num_warps=config["num_warps"])
    return q_out, k_out


NARROW_CONFIGS = [{"HEADS": h, "TOKENS": t, "num_warps": w}
                  for h in (4, 8, 16, 32) for t in (1, 2, 4) for w in (2, 4, 8)]
FLAT_CONFIGS = [{"BLOCK": b, "num_warps": w} for b in (512, 1024, 2048, 4096) for w in (4, 8)]


def check():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    spec = committed.SPEC
    shapes = [(2, 37, 3, 64), (1, 64, 4, 32), (1, 5, 8, 128), (3, 7, 2, 16)]
    for sizes in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            inputs = spec.make_inputs(spec.shape(*sizes), dtype, device, 0)
            ref = spec.reference(inputs)
            tol = spec.tolerance[dtype]
            cases = [(narrow, c) for c in ({"HEADS": 2, "TOKENS": 2, "num_warps": 1},
                                           {"HEADS": 4, "TOKENS": 1, "num_warps": 2})]
            cases += [(flat, c) for c in ({"BLOCK": 64, "num_warps": 1},
                                          {"BLOCK": 256, "num_warps": 2})]
            for fn, config in cases:
                outs = spec.allocate_outputs(inputs)
                got = fn(inputs["q"], inputs["k"], inputs["cos"], inputs["sin"], config, *outs)
                for g, r in zip(got, ref, strict=True):
                    err = (g.double() - r).abs()
                    bound = tol.atol + tol.rtol * r.abs()
                    assert bool((err <= bound).all()), (fn.__name__, sizes, dtype, config,
                                                        float(err.max()))
            print("ok", sizes, dtype)


def time_all():
    from pathlib import Path

    from tritonbench_lab.store import load_winners

    wins = {(w.dtype, w.shape): w.config for w in
            load_winners(Path("configs/nvidia-h200/rope.csv"))}
    for shape in committed.SPEC.default_shapes[:-1]:  # the prefill shapes
        for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            time_shape(shape, dtype, name, wins[(name, str(shape))])


def time_shape(shape, dtype, name, committed_config, device="cuda"):
    from tritonbench_lab.records import parse_config_text
    from tritonbench_lab.timing import BenchOptions, time_call

    spec = committed.SPEC
    bench = BenchOptions(warmup_ms=25, rep_ms=100, timing="both")

    def best_of(call, rounds):
        return min(time_call(call, bench, False).p50 for _ in range(rounds))

    inputs = spec.make_inputs(shape, dtype, device, 0)
    outs = spec.allocate_outputs(inputs)
    args = (inputs["q"], inputs["k"], inputs["cos"], inputs["sin"])
    ref = spec.reference(inputs)
    compiled = spec.baselines["compiled"]
    compiled(inputs)  # compile before timing
    config = parse_config_text(committed_config)
    best = {"committed": best_of(lambda: committed.rope(*args, config, *outs), 3),
            "compile": best_of(lambda: compiled(inputs), 3)}
    for label, fn, configs in (("narrow", narrow, NARROW_CONFIGS), ("flat", flat, FLAT_CONFIGS)):
        times = []
        for c in configs:
            if label == "narrow" and c["HEADS"] > shape["heads"]:
                continue
            got = fn(*args, c, *outs)
            if all(torch.allclose(g.double(), r, atol=1e-3, rtol=1e-2)
                   for g, r in zip(got, ref, strict=True)):
                times.append((best_of(lambda c=c, fn=fn: fn(*args, c, *outs), 1), c))
        top = [c for _, c in sorted(times, key=lambda x: x[0])[:3]]
        again = [(best_of(lambda c=c, fn=fn: fn(*args, c, *outs), 2), c) for c in top]
        best[label], best[label + " config"] = min(again, key=lambda x: x[0])
    shown = {k: round(v * 1e3, 2) if isinstance(v, float) else v for k, v in best.items()}
    ratios = {k: round(best["compile"] / best[k], 3) for k in ("committed", "narrow", "flat")}
    print(name, shape, "us", shown, "compile / each:", ratios, flush=True)


if __name__ == "__main__":
    check() if sys.argv[1:] == ["check"] else time_all()
