"""Lab probe, not part of the product (nothing imports it): rope's kernel with every size
and stride a compile-time constant and one flat index over all outputs, as Inductor
specialises its kernel (a compile per shape), against rope.py's kernel and torch.compile's,
timed in turns in one process at the fp32 shapes where torch.compile leads; outputs
checked first.

    PYTHONPATH=. python3 lab/rope_constexpr_probe.py
"""

import importlib.util

import triton
import triton.language as tl

# rope_load_order.py's measure: the same cases, timed in turns the same way
spec = importlib.util.spec_from_file_location("rope_load_order", "lab/rope_load_order.py")
load_order = importlib.util.module_from_spec(spec)
spec.loader.exec_module(load_order)
measure = load_order.measure


@triton.jit
def constant_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, qo_ptr, ko_ptr,
                    N_SEQ: tl.constexpr, SQB: tl.constexpr, SQS: tl.constexpr, SQH: tl.constexpr,
                    SKB: tl.constexpr, SKS: tl.constexpr, SKH: tl.constexpr, SCS: tl.constexpr,
                    HEADS_N: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    HALF: tl.constexpr = HEAD_DIM // 2
    TOKEN: tl.constexpr = HEADS_N * HEAD_DIM
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # int32: the probe's sizes fit
    token, e = i // TOKEN, i % TOKEN
    b, s = token // N_SEQ, token % N_SEQ
    head, col = e // HEAD_DIM, e % HEAD_DIM
    first = col < HALF
    pair = tl.where(first, col, col - HALF)
    partner = tl.where(first, col + HALF, col - HALF)
    c = tl.load(cos_ptr + s * SCS + pair, eviction_policy="evict_last")
    sn = tl.load(sin_ptr + s * SCS + pair, eviction_policy="evict_last")
    sn = tl.where(first, -sn, sn)
    q_at = q_ptr + b * SQB + s * SQS + head * SQH
    k_at = k_ptr + b * SKB + s * SKS + head * SKH
    q = tl.load(q_at + col)
    k = tl.load(k_at + col)
    q_p = tl.load(q_at + partner, eviction_policy="evict_last")
    k_p = tl.load(k_at + partner, eviction_policy="evict_last")
    tl.store(qo_ptr + i, q * c + q_p * sn)
    tl.store(ko_ptr + i, k * c + k_p * sn)


def constant(inputs, outs, block, warps):
    q, k, cos, sin = inputs["q"], inputs["k"], inputs["cos"], inputs["sin"]
    batch, seq, heads, head_dim = q.shape
    constant_kernel[(q.numel() // block,)](
        q, k, cos, sin, *outs, N_SEQ=seq, SQB=q.stride(0), SQS=q.stride(1), SQH=q.stride(2),
        SKB=k.stride(0), SKS=k.stride(1), SKH=k.stride(2), SCS=cos.stride(0),
        HEADS_N=heads, HEAD_DIM=head_dim, BLOCK=block, num_warps=warps)
    return outs


if __name__ == "__main__":
    # a warm-up case first: a process's first reads erratically
    measure((1, 4096, 32, 128), ((256, 1),), {"all constant": constant})
    print("(the case above warms the process up)", flush=True)
    for dims in ((1, 65536, 8, 128), (4, 4096, 32, 128)):
        measure(dims, ((512, 8), (1024, 8), (512, 4), (256, 1)), {"all constant": constant})
