"""Lab probe, not part of the product (nothing imports it): rope's kernel in variants that
step toward Inductor's generated kernel for the rotate-half formula, which leads it by
0.4-1.6% at fp32 1x65536x8x128 and 4x4096x32x128 whatever the outputs' placement
(2026-12-05). Inductor's kernel loads q first and k after the tables, and a partner as two
loads, one per half of the head, each predicated on its half; rope's loads the tables
first and a partner in one load at a computed offset. Timed in turns with torch.compile's
kernel in one process, outputs checked first.

    PYTHONPATH=. python3 lab/rope_load_order.py
"""

import importlib.util

import torch
import triton
import triton.language as tl

from tritonbench_lab.kernels import rope as R
from tritonbench_lab.spec import Shape

spec = importlib.util.spec_from_file_location("compiled_in_turns", "lab/compiled_in_turns.py")
turns = importlib.util.module_from_spec(spec)
spec.loader.exec_module(turns)



@triton.jit
def variant_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, qo_ptr, ko_ptr, n_seq,
                   stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh, stride_cs,
                   HEADS_N: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr,
                   X_FIRST: tl.constexpr, TWO_PARTNERS: tl.constexpr, NO_HINTS: tl.constexpr):
    HALF: tl.constexpr = HEAD_DIM // 2
    TOKEN: tl.constexpr = HEADS_N * HEAD_DIM
    PER_TOKEN: tl.constexpr = TOKEN // BLOCK
    pid = tl.program_id(0)
    token = (pid // PER_TOKEN).to(tl.int64)
    b = token // n_seq
    s = token - b * n_seq
    e = (pid % PER_TOKEN) * BLOCK + tl.arange(0, BLOCK)
    head, col = e // HEAD_DIM, e % HEAD_DIM
    first = col < HALF
    pair = tl.where(first, col, col - HALF)
    q_at = q_ptr + b * stride_qb + s * stride_qs + head * stride_qh
    k_at = k_ptr + b * stride_kb + s * stride_ks + head * stride_kh
    if X_FIRST:
        q = tl.load(q_at + col).to(tl.float32)
    if NO_HINTS:
        c = tl.load(cos_ptr + s * stride_cs + pair)
        sn = tl.load(sin_ptr + s * stride_cs + pair)
    else:
        c = tl.load(cos_ptr + s * stride_cs + pair, eviction_policy="evict_last")
        sn = tl.load(sin_ptr + s * stride_cs + pair, eviction_policy="evict_last")
    if not X_FIRST:
        q = tl.load(q_at + col).to(tl.float32)
    k = tl.load(k_at + col).to(tl.float32)
    if TWO_PARTNERS:
        # the second half's partner at col - HALF, the first's at col + HALF, each predicated
        q_p = tl.where(first, -tl.load(q_at + col + HALF, mask=first, other=0.0,
                                       eviction_policy="evict_last"),
                       tl.load(q_at + col - HALF, mask=~first, other=0.0,
                               eviction_policy="evict_last")).to(tl.float32)
        k_p = tl.where(first, -tl.load(k_at + col + HALF, mask=first, other=0.0,
                                       eviction_policy="evict_last"),
                       tl.load(k_at + col - HALF, mask=~first, other=0.0,
                               eviction_policy="evict_last")).to(tl.float32)
    else:
        partner = tl.where(first, col + HALF, col - HALF)
        sign = tl.where(first, -1.0, 1.0)
        q_p = sign * tl.load(q_at + partner, eviction_policy="evict_last").to(tl.float32)
        k_p = sign * tl.load(k_at + partner, eviction_policy="evict_last").to(tl.float32)
    ty = qo_ptr.dtype.element_ty
    tl.store(qo_ptr + token * TOKEN + e, (q * c + q_p * sn).to(ty))
    tl.store(ko_ptr + token * TOKEN + e, (k * c + k_p * sn).to(ty))


def variant(inputs, outs, block, warps, **flags):
    q, k, cos, sin = inputs["q"], inputs["k"], inputs["cos"], inputs["sin"]
    batch, seq, heads, head_dim = q.shape
    grid = (batch * seq * heads * head_dim // block,)
    variant_kernel[grid](q, k, cos, sin, *outs, seq, q.stride(0), q.stride(1), q.stride(2),
                         k.stride(0), k.stride(1), k.stride(2), cos.stride(0),
                         HEADS_N=heads, HEAD_DIM=head_dim, BLOCK=block, num_warps=warps,
                         **flags)
    return outs


FLAGS = {"as rope": dict(X_FIRST=0, TWO_PARTNERS=0, NO_HINTS=0),
         "q first": dict(X_FIRST=1, TWO_PARTNERS=0, NO_HINTS=0),
         "two partners": dict(X_FIRST=0, TWO_PARTNERS=1, NO_HINTS=0),
         "q first, two partners": dict(X_FIRST=1, TWO_PARTNERS=1, NO_HINTS=0),
         "tables unhinted": dict(X_FIRST=0, TWO_PARTNERS=0, NO_HINTS=1)}


def flagged(flags: dict):
    """A launch of variant_kernel with these switches: (inputs, outs, block, warps) -> outs."""
    return lambda inputs, outs, block, warps: variant(inputs, outs, block, warps, **flags)


VARIANTS = {label: flagged(flags) for label, flags in FLAGS.items()}


def measure(dims, configs, variants=VARIANTS) -> None:
    """rope.py's kernel and each of `variants` at each (BLOCK, warps) of `configs`, beside
    torch.compile's kernel (lab/rope_constexpr_probe.py passes its own)."""
    name = "fp32 " + "x".join(map(str, dims))
    inputs = R.make_inputs(Shape.of(batch=dims[0], seq=dims[1], heads=dims[2], head_dim=dims[3]),
                           torch.float32, "cuda", 0)
    outs = R.allocate_outputs(inputs)
    torch._dynamo.reset()
    compiled = R.SPEC.baselines["compiled"]
    fns = {"compiled": lambda: compiled(inputs)}
    for block, warps in configs:
        fns[f"rope.py BLOCK={block} w{warps}"] = \
            lambda b=block, w=warps: R.launch(inputs, {"BLOCK": b, "num_warps": w}, outs)
        for label, launch in variants.items():
            fns[f"{label} BLOCK={block} w{warps}"] = \
                lambda b=block, w=warps, f=launch: f(inputs, outs, b, w)
    turns.time_in_turns(name, fns, R.SPEC.reference(inputs), R.SPEC.tolerance[torch.float32])


if __name__ == "__main__":
    measure((1, 4096, 32, 128), ((256, 1),))  # a warm-up case: a process's first is erratic
    print("(the case above warms the process up)", flush=True)
    measure((1, 65536, 8, 128), ((1024, 8), (512, 8), (512, 4)))
    measure((4, 4096, 32, 128), ((1024, 8), (512, 4)))
