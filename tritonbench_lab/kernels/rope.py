"""Rotary position embedding (RoPE) of q and k, rotate-half convention (GPT-NeoX, Llama, HF).

With half = head_dim / 2, x1 = x[..., :half], x2 = x[..., half:], c = cos[s] and sn = sin[s]
for the token at position s of its sequence:

    out[..., :half] = x1 * c - x2 * sn
    out[..., half:] = x2 * c + x1 * sn

that is, pair i (elements i and i + half) of every head is turned by the angle
p * 10000^(-2i / head_dim) of the token's position p. The same rotation applies to q and k.

Shapes: q and k are batch x seq x heads x head_dim (head_dim even), with any strides for
batch, seq and heads (a model's fused qkv projection gives views of one
batch x seq x 3 x heads x head_dim tensor); the last dim must be contiguous (it is copied
when not). cos and sin are fp32 tables of seq x half. Math in fp32, rounded once to the
input dtype; q_out and k_out are new contiguous tensors of q's shape and dtype.

Work: 3 flops per output element (two multiplies and an add), 6 * batch * seq * heads *
head_dim in all. Fewest bytes: read q and k, write q_out and k_out, read the tables once,
4 * batch * seq * heads * head_dim * element size + 2 * seq * half * 4: bound by memory
bandwidth (GB/s).

A program takes TOKENS consecutive (batch, seq) positions, one after another, and a block of
HEADS heads: it loads the position's cos and sin rows once (half padded to a power of two,
masked) and rotates the HEADS x half halves of q and of k with them. One launch replaces the
eager formulation's upcast, concatenation, negation, two multiplies and add per tensor.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import (
    INTERPRETER_S_PER_ELEMENT,
    INTERPRETER_S_PER_PROGRAM,
    Config,
    DeviceLimits,
    Space,
    next_power_of_2,
    split_config,
)
from tritonbench_lab.spec import (
    GBPS,
    Cost,
    Inputs,
    KernelSpec,
    Outputs,
    Shape,
    Tolerance,
    compile_baseline,
)

BASE = 10_000.0  # the angle base of the original RoPE paper and of Llama 2
MAX_OFFSET = 4096  # tables start at a random position below this (see make_inputs)
INTERPRETER_HEADS, INTERPRETER_HEAD_DIM = 2, 64  # a single size in the interpreter: 1 x n x 2 x 64


@triton.jit
def _load_halves(x_ptr, x_token, heads, stride_xh, cols, half, mask):
    """The two halves of one token's HEADS heads of x, in fp32."""
    x_at = x_ptr + x_token + heads[:, None] * stride_xh + cols[None, :]
    x1 = tl.load(x_at, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_at + half, mask=mask, other=0.0).to(tl.float32)
    return x1, x2


@triton.jit
def _store_rotated(o_ptr, o_token, heads, stride_oh, cols, half, mask, x1, x2, c, sn):
    """Both halves of the rotated pairs into o."""
    o_at = o_ptr + o_token + heads[:, None] * stride_oh + cols[None, :]
    tl.store(o_at, (x1 * c - x2 * sn).to(o_ptr.dtype.element_ty), mask=mask)
    tl.store(o_at + half, (x2 * c + x1 * sn).to(o_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rope_kernel(
    q_ptr, k_ptr, cos_ptr, sin_ptr, qo_ptr, ko_ptr,  # inputs, tables, outputs
    n_batch, n_seq, n_heads, head_dim,  # sizes
    stride_qb, stride_qs, stride_qh,  # q's strides (the last dim is contiguous)
    stride_kb, stride_ks, stride_kh,  # k's
    stride_ob, stride_os, stride_oh,  # both outputs' (they share one layout)
    stride_cs,  # row stride of cos and sin
    BLOCK_HALF: tl.constexpr,  # half of head_dim rounded up to a power of two
    HEADS: tl.constexpr,  # heads per program
    TOKENS: tl.constexpr,  # (batch, seq) positions per program
):
    # A shift, not //, so that Triton's alignment analysis carries head_dim's divisibility by
    # 16 over to half (the second half's loads and stores stay 16-byte vectors).
    half = head_dim >> 1
    n_tokens = n_batch * n_seq
    heads = tl.program_id(1) * HEADS + tl.arange(0, HEADS)
    cols = tl.arange(0, BLOCK_HALF)
    for i in tl.static_range(TOKENS):
        # 64-bit from here on: batch * seq * a token's stride can pass 2^31.
        token = tl.program_id(0).to(tl.int64) * TOKENS + i
        # The last program's block of tokens may run past the end: those have no pairs. (A
        # mask of scalar & tensor comes out int32 in Triton 3.9's interpreter, so the
        # token's liveness goes into the width rather than into the mask.)
        width = tl.where(token < n_tokens, half, 0)
        b = token // n_seq
        s = token - b * n_seq
        c = tl.load(cos_ptr + s * stride_cs + cols, mask=cols < width, other=0.0)
        sn = tl.load(sin_ptr + s * stride_cs + cols, mask=cols < width, other=0.0)
        c, sn = c.to(tl.float32)[None, :], sn.to(tl.float32)[None, :]
        mask = (heads[:, None] < n_heads) & (cols[None, :] < width)
        # Every load of the token before its first store: a store may alias a later load
        # (nothing tells the compiler otherwise), so k's loads placed after q's stores wait
        # for q's round trip to memory first. At one decode token that second round trip was
        # the whole gap to torch.compile (BENCHMARKS.md, rope).
        q1, q2 = _load_halves(q_ptr, b * stride_qb + s * stride_qs, heads, stride_qh, cols,
                              half, mask)
        k1, k2 = _load_halves(k_ptr, b * stride_kb + s * stride_ks, heads, stride_kh, cols,
                              half, mask)
        o_token = b * stride_ob + s * stride_os
        _store_rotated(qo_ptr, o_token, heads, stride_oh, cols, half, mask, q1, q2, c, sn)
        _store_rotated(ko_ptr, o_token, heads, stride_oh, cols, half, mask, k1, k2, c, sn)


# One program per (token, head) on one warp: what one writes before tuning, and kept at
# every head_dim up to 4096 (more warps would idle on the 32 pairs of a 64-wide head).
DEFAULT_CONFIG: Config = {"HEADS": 1, "TOKENS": 1, "num_warps": 1}


def _unit_last(t: torch.Tensor) -> torch.Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
         config: Config | None = None, q_out: torch.Tensor | None = None,
         k_out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(q_out, k_out): q and k rotated by the tables under exactly `config` (DEFAULT_CONFIG
    when None); writes into q_out and k_out if given (contiguous, q's shape and dtype)."""
    if q.ndim != 4 or k.shape != q.shape or k.dtype != q.dtype:
        raise TlabError(f"rope needs q and k of one 4-D shape (batch, seq, heads, head_dim) "
                        f"and dtype, got {tuple(q.shape)} {q.dtype} and {tuple(k.shape)} {k.dtype}")
    batch, seq, heads, head_dim = q.shape
    check_shape(Shape.of(batch=batch, seq=seq, heads=heads, head_dim=head_dim))
    half = head_dim // 2
    for name, t in (("cos", cos), ("sin", sin)):
        if t.shape != (seq, half) or t.dtype != torch.float32:
            raise TlabError(f"rope {name} must be float32 of shape ({seq}, {half}), "
                            f"got {t.dtype} {tuple(t.shape)}")
    q, k = _unit_last(q), _unit_last(k)
    cos, sin = cos.contiguous(), sin.contiguous()
    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device) if q_out is None else q_out
    k_out = torch.empty(q.shape, dtype=q.dtype, device=q.device) if k_out is None else k_out
    for t in (q_out, k_out):
        if t.shape != q.shape or t.dtype != q.dtype or not t.is_contiguous():
            raise TlabError(f"rope outputs must be contiguous {q.dtype} of shape {tuple(q.shape)}")
    meta, options = split_config(DEFAULT_CONFIG if config is None else config)
    grid = (triton.cdiv(batch * seq, meta["TOKENS"]), triton.cdiv(heads, meta["HEADS"]))
    rope_kernel[grid](
        q, k, cos, sin, q_out, k_out, batch, seq, heads, head_dim,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        q_out.stride(0), q_out.stride(1), q_out.stride(2), cos.stride(0),
        BLOCK_HALF=next_power_of_2(half), **meta, **options,
    )
    return q_out, k_out


def bind(config: Config):
    """`run(q, k, cos, sin)` under one config (the form tritonbench_lab.ops keeps per shape)."""
    return lambda q, k, cos, sin: rope(q, k, cos, sin, config)


# --- reference and baselines -------------------------------------------------------------

def _rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, sn = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat((x1 * c - x2 * sn, x2 * c + x1 * sn), dim=-1)


def rope_reference(inputs: Inputs) -> Outputs:
    cos, sin = inputs["cos"].double(), inputs["sin"].double()
    return (_rotate_pairs(inputs["q"].double(), cos, sin),
            _rotate_pairs(inputs["k"].double(), cos, sin))


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_half_rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                     sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE as a model's attention module writes it (HF's apply_rotary_pos_emb): the tables
    repeated to the full head width, then x * cos + rotate_half(x) * sin in fp32."""
    cos = torch.cat((cos, cos), dim=-1)[None, :, None, :]
    sin = torch.cat((sin, sin), dim=-1)[None, :, None, :]
    return ((q.float() * cos + _rotate_half(q.float()) * sin).to(q.dtype),
            (k.float() * cos + _rotate_half(k.float()) * sin).to(k.dtype))


def torch_rope(inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    return rotate_half_rope(inputs["q"], inputs["k"], inputs["cos"], inputs["sin"])


# --- space, inputs, cost -------------------------------------------------------------------

# Pairs one thread holds per half-tile: past this, q's and k's halves, the tables and the
# results no longer fit in registers.
MAX_PER_THREAD = 64


def heads_not_exceeding(config: Config, sizes, elem_bytes: int,
                        limits: DeviceLimits) -> str | None:
    """A block of heads wider than the heads rounded up to a power of two is all padding."""
    padded = next_power_of_2(sizes["heads"])
    if config["HEADS"] > padded:
        return f"HEADS={config['HEADS']} exceeds the {sizes['heads']} heads (padded to {padded})"
    return None


def tokens_not_exceeding(config: Config, sizes, elem_bytes: int,
                         limits: DeviceLimits) -> str | None:
    """More positions per program than the tensor has only repeats a smaller config's work."""
    tokens = sizes["batch"] * sizes["seq"]
    if config["TOKENS"] > 1 and config["TOKENS"] > tokens:
        return f"TOKENS={config['TOKENS']} exceeds the {tokens} (batch, seq) positions"
    return None


def head_tile_fits(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """A program's tile is HEADS x BLOCK_HALF pairs, spread over 32 * num_warps threads."""
    threads = 32 * config["num_warps"]
    elements = config["HEADS"] * next_power_of_2(sizes["head_dim"] // 2)
    if config["num_warps"] > limits.max_warps:
        return f"num_warps={config['num_warps']} exceeds {limits.max_warps}"
    if elements > MAX_PER_THREAD * threads:
        return (f"{elements} pairs over {threads} threads is more than {MAX_PER_THREAD} "
                "per thread (register spills)")
    if elements < threads and config["num_warps"] > 1:  # one warp is always kept as the floor
        return f"{elements} pairs leave some of the {threads} threads idle"
    return None


SPACE = Space(
    params={"HEADS": (1, 2, 4, 8, 16, 32, 64), "TOKENS": (1, 2, 4), "num_warps": (1, 2, 4, 8)},
    constraints=(heads_not_exceeding, tokens_not_exceeding, head_tile_fits),
    default=DEFAULT_CONFIG,
)


def rope_tables(seq: int, head_dim: int, start: int, device: str
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (fp32, seq x head_dim / 2) of positions start .. start + seq - 1: angles
    p * BASE^(-2i / head_dim), computed in float64 and rounded once."""
    pairs = torch.arange(head_dim // 2, dtype=torch.float64, device=device)
    positions = start + torch.arange(seq, dtype=torch.float64, device=device)
    angles = positions[:, None] * BASE ** (-2.0 * pairs / head_dim)[None, :]
    return angles.cos().float(), angles.sin().float()


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    """q and k are the first two slices of one fused qkv ~ N(0, 1) of batch x seq x 3 x
    heads x head_dim, as a model's fused projection lays them out (strided views, not
    contiguous tensors). The tables start at a seeded position in [1, MAX_OFFSET), so that
    no row is position 0 (cos 1, sin 0: a rotation that hides a wrong table)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    batch, seq, heads, head_dim = (shape[d] for d in ("batch", "seq", "heads", "head_dim"))
    qkv = torch.randn((batch, seq, 3, heads, head_dim), generator=gen, device=device).to(dtype)
    start = int(torch.randint(1, MAX_OFFSET, (1,), generator=gen, device=device))
    cos, sin = rope_tables(seq, head_dim, start, device)
    return {"q": qkv[:, :, 0], "k": qkv[:, :, 1], "cos": cos, "sin": sin}


def allocate_outputs(inputs: Inputs) -> Outputs:
    q = inputs["q"]
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty(q.shape, dtype=q.dtype, device=q.device))


def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
    return rope(inputs["q"], inputs["k"], inputs["cos"], inputs["sin"], config,
                q_out=outputs[0], k_out=outputs[1])


def cost(shape: Shape, dtype: torch.dtype) -> Cost:
    elements = math.prod(shape.sizes)  # of q (and of k)
    size = torch.empty((), dtype=dtype).element_size()
    tables = 2 * shape["seq"] * (shape["head_dim"] // 2) * 4
    return Cost(flops=6 * elements, bytes=4 * elements * size + tables)


def check_shape(shape: Shape) -> None:
    if min(shape.sizes) < 1 or shape["head_dim"] % 2:
        raise TlabError(f"rope needs positive sizes and an even head_dim (batch x seq x heads "
                        f"x head_dim), got {shape}")


def interpreter_seconds(shape: Shape, config: Config) -> float:
    """Interpreter time of one launch: a fixed cost per program and per token it walks (each
    token is a dozen loads and stores), and a little per pair of q and k."""
    tokens, heads = shape["batch"] * shape["seq"], shape["heads"]
    programs = math.ceil(tokens / config["TOKENS"]) * math.ceil(heads / config["HEADS"])
    pairs = config["HEADS"] * next_power_of_2(shape["head_dim"] // 2)
    per_token = INTERPRETER_S_PER_PROGRAM + INTERPRETER_S_PER_ELEMENT * 2 * pairs
    return programs * config["TOKENS"] * per_token


# Prefill shapes of common models, every one moving at least 128 MB in bf16 (far past the
# H200's 60 MB L2): Llama-2/3 7-8B heads (32 x 128) at 4k tokens, four sequences of 4k, and
# 16k; 16 heads of 64 at 8 x 2k; 8 heads of 128 (Llama-3 8B's k) at 64k; 64 heads of 64 at 4k.
# Then one decode step of 32 x 128 heads.
_DEFAULT_SHAPES = (
    Shape.of(batch=1, seq=4096, heads=32, head_dim=128),
    Shape.of(batch=4, seq=4096, heads=32, head_dim=128),
    Shape.of(batch=1, seq=16384, heads=32, head_dim=128),
    Shape.of(batch=8, seq=2048, heads=16, head_dim=64),
    Shape.of(batch=1, seq=65536, heads=8, head_dim=128),
    Shape.of(batch=1, seq=4096, heads=64, head_dim=64),
    Shape.of(batch=1, seq=1, heads=32, head_dim=128),
)

SPEC = KernelSpec(
    name="rope",
    summary="rotary position embedding of q and k (rotate-half), fp32 math, strided inputs",
    dims=("batch", "seq", "heads", "head_dim"),
    dtypes=(torch.float32, torch.float16, torch.bfloat16),
    launch=launch,
    allocate_outputs=allocate_outputs,
    reference=rope_reference,
    baselines={"torch": torch_rope, "compiled": compile_baseline(torch_rope)},
    space=SPACE,
    default_shapes=_DEFAULT_SHAPES,
    small_shapes=(Shape.of(batch=2, seq=37, heads=3, head_dim=64),
                  Shape.of(batch=1, seq=64, heads=4, head_dim=32)),
    make_inputs=make_inputs,
    tolerance={
        # Outputs are of order 1-4; the bound covers fp32 math and one rounding to the dtype:
        # half an ulp in fp16 (2^-11 of the value at most), and in bf16 a whole ulp (2^-7),
        # since Triton's interpreter truncates float32 to bfloat16 (the GPU rounds to nearest).
        torch.float32: Tolerance(atol=1e-5, rtol=1e-5),
        torch.float16: Tolerance(atol=1e-5, rtol=1e-3),
        torch.bfloat16: Tolerance(atol=1e-5, rtol=8e-3),
    },
    cost=cost,
    metric=GBPS,
    check_shape=check_shape,
    from_size=lambda n: Shape.of(batch=1, seq=n, heads=32, head_dim=128),
    small_from_size=lambda n: Shape.of(batch=1, seq=n, heads=INTERPRETER_HEADS,
                                       head_dim=INTERPRETER_HEAD_DIM),
    interpreter_seconds=interpreter_seconds,
    autotune_key=("n_batch", "n_seq", "n_heads", "head_dim"),
)
