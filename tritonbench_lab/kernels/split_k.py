"""Split-K's reduction: adding up the partial tiles of the programs that share one tile's K.

A kernel that splits K among SPLIT_K programs per tile stores each program's fp32 partial
with `store_part`, into a buffer from `part_buffer`, and `reduce_parts` rounds the total
into C. Two ways, both correct (a template that let each share store over the others is
the bug this replaces):
- ATOMIC: atomic adds into one zeroed M x N buffer (any order: C's last bits may differ
  between calls);
- TWO_PASS: one M x N buffer per share, summed in order by the second kernel (the same bits
  every call; SPLIT_K times the buffer).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

NONE, ATOMIC, TWO_PASS = 0, 1, 2
_ATOMIC = tl.constexpr(ATOMIC)  # globals a @triton.jit function reads must be constexprs
SUM_BLOCK = 1024  # elements of C per program of the second pass


@triton.jit
def share_of_k(part, K, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    """The steps of BLOCK_K this share sums: [first, last), consecutive, as even as can be.
    A share past the end (K of few steps) sums nothing and adds zeros."""
    steps = tl.cdiv(K, BLOCK_K)
    per_part = tl.cdiv(steps, SPLIT_K)
    first = part * per_part
    return first, tl.minimum(first + per_part, steps)


@triton.jit
def store_part(acc, part, partials_ptr, out_rows, out_cols, mask, M, N, REDUCE: tl.constexpr):
    """Add this program's share of K (an fp32 tile) to the buffer, the REDUCE way."""
    at = out_rows[:, None] * N + out_cols[None, :]
    if REDUCE == _ATOMIC:
        tl.atomic_add(partials_ptr + at, acc, mask=mask, sem="relaxed")
    else:
        tl.store(partials_ptr + part.to(tl.int64) * M * N + at, acc, mask=mask)


@triton.jit
def sum_parts_kernel(partials_ptr, c_ptr, M, N, stride_cm, stride_cn,
                     PARTS: tl.constexpr, BLOCK: tl.constexpr):
    """C = the sum of PARTS fp32 M x N buffers, in order, rounded once to C's dtype."""
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = at < M * N
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for part in tl.static_range(PARTS):
        total += tl.load(partials_ptr + part * M * N + at, mask=inside, other=0.0)
    row, col = at // N, at % N
    tl.store(c_ptr + row * stride_cm + col * stride_cn, total.to(c_ptr.dtype.element_ty),
             mask=inside)


def reduce_matches_split(config) -> str | None:
    """A space's exclusion: REDUCE=NONE goes with SPLIT_K=1 and only with it."""
    if (config["SPLIT_K"] == 1) != (config["REDUCE"] == NONE):
        return "REDUCE=0 goes with SPLIT_K=1 and only with it"
    return None


def part_buffer(split: int, reduce: int, M: int, N: int, device) -> torch.Tensor | None:
    """The fp32 buffer the shares go to; None where K is not split."""
    if split == 1:
        return None
    if reduce == ATOMIC:
        return torch.zeros((M, N), dtype=torch.float32, device=device)
    return torch.empty((split, M, N), dtype=torch.float32, device=device)


def reduce_parts(partials: torch.Tensor, out: torch.Tensor, split: int, reduce: int) -> None:
    """Round the shares' total into `out` (M x N, any strides)."""
    M, N = out.shape
    parts = 1 if reduce == ATOMIC else split
    sum_parts_kernel[(triton.cdiv(M * N, SUM_BLOCK),)](
        partials, out, M, N, out.stride(0), out.stride(1), PARTS=parts, BLOCK=SUM_BLOCK)
