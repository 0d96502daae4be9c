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
when not). k may have fewer heads than q (grouped-query attention: Llama-3 8B's 8 k heads
beside 32 q heads), rotated in the same launch. cos and sin are fp32 tables of seq x half.
Math in fp32, rounded once to the input dtype; q_out and k_out are new contiguous tensors
of q's and k's shapes and dtype. The sweep's shapes have as many k heads as q heads.

Work: 3 flops per output element (two multiplies and an add), 6 * batch * seq * heads *
head_dim in all. Fewest bytes: read q and k, write q_out and k_out, read the tables once,
4 * batch * seq * heads * head_dim * element size + 2 * seq * half * 4: bound by memory
bandwidth (GB/s).

A program takes BLOCK consecutive elements of one (batch, seq) position's heads x head_dim
outputs, as Inductor's pointwise kernel does over the whole tensor: each element loads
itself and its rotation partner (element i +- half of its head; the partner load mostly
hits L1, since the same program loads it as itself), and the cos and sin entry of its
pair. Within one position the batch and sequence index are scalars (64-bit at no cost) and
only the head and column vary per element; heads and head_dim are compile-time constants,
so the divisions by them are cheap and, where head_dim and the strides allow, every load
and store is a 16-byte vector (one compile per layout of q and k heads, as in Inductor). One
launch replaces the eager formulation's upcast, concatenation, negation, two multiplies and
add per tensor. (The kernel before this one rotated a HEADS x half tile of both halves,
reading each element once; it stayed behind torch.compile in fp32 prefill, where this layout
keeps up with it.)
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
def rope_kernel(
    q_ptr, k_ptr, cos_ptr, sin_ptr, qo_ptr, ko_ptr,  # inputs, tables, outputs
    n_seq,  # positions per sequence (the token's batch and position come from it)
    stride_qb, stride_qs, stride_qh,  # q's strides (the last dim is contiguous)
    stride_kb, stride_ks, stride_kh,  # k's
    stride_cs,  # row stride of cos and sin
    HEADS_N: tl.constexpr,  # q's heads (constant: the divisions by it and head_dim are
    HEAD_DIM: tl.constexpr,  # shifts or multiplies, and the compiler sees 16-byte vectors)
    HEADS_K: tl.constexpr,  # k's heads: HEADS_N, or fewer (grouped-query attention)
    BLOCK: tl.constexpr,  # output elements per program, all of one position
    EVEN: tl.constexpr,  # BLOCK divides HEADS_N * HEAD_DIM: no masks
):
    HALF: tl.constexpr = HEAD_DIM // 2
    TOKEN: tl.constexpr = HEADS_N * HEAD_DIM  # output elements of one position
    PER_TOKEN: tl.constexpr = (TOKEN + BLOCK - 1) // BLOCK  # programs per position
    pid = tl.program_id(0)
    # 64-bit from the token on: batch * seq * a token's stride can pass 2^31. Scalars, so
    # this costs nothing per element.
    token = (pid // PER_TOKEN).to(tl.int64)
    b = token // n_seq
    s = token - b * n_seq
    e = (pid % PER_TOKEN) * BLOCK + tl.arange(0, BLOCK)  # element within the position
    if EVEN:
        live = tl.full((BLOCK,), 1, tl.int1)  # a constant mask folds away
    else:
        live = e < TOKEN
    if HEADS_K == HEADS_N:
        k_live = live
    else:  # k's position holds fewer elements: a program past them rotates only q
        k_live = live & (e < HEADS_K * HEAD_DIM)
    head, col = e // HEAD_DIM, e % HEAD_DIM
    first = col < HALF
    # out[col] = x[col] * cos[pair] + x[partner] * (-sin[pair] in the first half, else +sin)
    pair = tl.where(first, col, col - HALF)
    partner = tl.where(first, col + HALF, col - HALF)
    # Scalar (64-bit) row pointers first, then 32-bit offsets within the row per element.
    c = tl.load(cos_ptr + s * stride_cs + pair, mask=live, other=0.0,
                eviction_policy="evict_last")
    sn = tl.load(sin_ptr + s * stride_cs + pair, mask=live, other=0.0,
                 eviction_policy="evict_last")
    sn = tl.where(first, -sn, sn)
    # Every load before the first store: a store may alias a later load (nothing tells the
    # compiler otherwise), so k's loads placed after q's stores would wait for q's round
    # trip to memory first; at one decode token that was the whole gap to torch.compile.
    q_at = q_ptr + b * stride_qb + s * stride_qs + head * stride_qh
    k_at = k_ptr + b * stride_kb + s * stride_ks + head * stride_kh
    q = tl.load(q_at + col, mask=live, other=0.0).to(tl.float32)
    k = tl.load(k_at + col, mask=k_live, other=0.0).to(tl.float32)
    # The partners were (or are about to be) loaded as themselves by this program: asked to
    # stay in L1/L2 for that, as Inductor's kernel asks.
    q_partner = tl.load(q_at + partner, mask=live, other=0.0, eviction_policy="evict_last")
    k_partner = tl.load(k_at + partner, mask=k_live, other=0.0, eviction_policy="evict_last")
    ty = qo_ptr.dtype.element_ty
    # Both outputs are contiguous (q's and k's shapes): a position's elements lie together.
    tl.store(qo_ptr + token * TOKEN + e, (q * c + q_partner.to(tl.float32) * sn).to(ty),
             mask=live)
    tl.store(ko_ptr + token * (HEADS_K * HEAD_DIM) + e,
             (k * c + k_partner.to(tl.float32) * sn).to(ty), mask=k_live)


# 256 elements a program on two warps (4 a thread): what one writes before tuning, and kept
# at every shape (blocks up to 256 are never pruned, see `block_fits`).
DEFAULT_CONFIG: Config = {"BLOCK": 256, "num_warps": 2}


def _unit_last(t: torch.Tensor) -> torch.Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
         config: Config | None = None, q_out: torch.Tensor | None = None,
         k_out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(q_out, k_out): q and k rotated by the tables under exactly `config` (DEFAULT_CONFIG
    when None); writes into q_out and k_out if given (contiguous, of q's and k's shapes and
    dtype). k may have fewer heads than q (grouped-query attention) or more."""
    if q.ndim != 4 or k.ndim != 4 or k.shape[:2] != q.shape[:2] or k.shape[3] != q.shape[3] \
            or k.dtype != q.dtype:
        raise TlabError(f"rope needs q and k of one dtype, 4-D (batch, seq, heads, head_dim) "
                        f"with only the heads allowed to differ, got {tuple(q.shape)} {q.dtype} "
                        f"and {tuple(k.shape)} {k.dtype}")
    if k.shape[2] > q.shape[2]:  # the launch walks the larger head count's elements
        k_out, q_out = rope(k, q, cos, sin, config, k_out, q_out)
        return q_out, k_out
    batch, seq, heads, head_dim = q.shape
    check_shape(Shape.of(batch=batch, seq=seq, heads=heads, head_dim=head_dim))
    half = head_dim // 2
    for name, t in (("cos", cos), ("sin", sin)):
        if t.shape != (seq, half) or t.dtype != torch.float32:
            raise TlabError(f"rope {name} must be float32 of shape ({seq}, {half}), "
                            f"got {t.dtype} {tuple(t.shape)}")
    q, k = _unit_last(q), _unit_last(k)
    cos, sin = cos.contiguous(), sin.contiguous()
    outs = []
    for x, out in ((q, q_out), (k, k_out)):
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device) if out is None else out
        if out.shape != x.shape or out.dtype != x.dtype or not out.is_contiguous():
            raise TlabError(f"rope outputs must be contiguous {x.dtype} of shape {tuple(x.shape)}")
        outs.append(out)
    meta, options = split_config(DEFAULT_CONFIG if config is None else config)
    token = heads * head_dim
    grid = (batch * seq * triton.cdiv(token, meta["BLOCK"]),)
    rope_kernel[grid](
        q, k, cos, sin, *outs, seq,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        cos.stride(0), HEADS_N=heads, HEAD_DIM=head_dim, HEADS_K=k.shape[2],
        EVEN=token % meta["BLOCK"] == 0, **meta, **options,
    )
    return outs[0], outs[1]


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

# Output elements one thread holds: past this, q, k, their partners and the tables (six
# fp32 values an element) crowd the registers; tuned winners hold well under this.
MAX_PER_THREAD = 16
# Blocks up to this size are never pruned for padding, so that the default runs everywhere.
ALWAYS_BLOCK = 256


def block_fits(config: Config, sizes, elem_bytes: int, limits: DeviceLimits) -> str | None:
    """A program's BLOCK elements lie in one position's heads x head_dim, spread over
    32 * num_warps threads."""
    token = sizes["heads"] * sizes["head_dim"]
    block, warps = config["BLOCK"], config["num_warps"]
    if block > max(ALWAYS_BLOCK, next_power_of_2(token)):
        return (f"BLOCK={block} exceeds a position's {sizes['heads']} x {sizes['head_dim']} "
                f"= {token} elements (padded to {next_power_of_2(token)})")
    if warps > limits.max_warps:
        return f"num_warps={warps} exceeds {limits.max_warps}"
    if block < 32 * warps:
        return f"BLOCK={block} leaves some of the {32 * warps} threads idle"
    if block > MAX_PER_THREAD * 32 * warps:
        return (f"BLOCK={block} over {32 * warps} threads is more than {MAX_PER_THREAD} "
                "elements per thread (register spills)")
    return None


SPACE = Space(
    params={"BLOCK": (64, 128, 256, 512, 1024, 2048, 4096), "num_warps": (1, 2, 4, 8)},
    constraints=(block_fits,),
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
    return tuple(torch.empty(x.shape, dtype=x.dtype, device=x.device)
                 for x in (inputs["q"], inputs["k"]))


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
    """Interpreter time of one launch: a fixed cost per program, and a little per element of
    its block (six loads and two stores of it)."""
    tokens, token = shape["batch"] * shape["seq"], shape["heads"] * shape["head_dim"]
    programs = tokens * math.ceil(token / config["BLOCK"])
    return programs * (INTERPRETER_S_PER_PROGRAM + INTERPRETER_S_PER_ELEMENT * 2 * config["BLOCK"])


def near_sizes(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """What lookup compares: the tokens (batch x seq, the grid's rows, which is all a config
    sees of them), heads and head_dim. 2x8192 tokens is then nearest 1x16384, not 4x4096."""
    batch, seq, heads, head_dim = sizes
    return (batch * seq, heads, head_dim)


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
    # The launch's sizes: the batch only multiplies the grid, so a config is kept per
    # sequence length and head layout.
    autotune_key=("n_seq", "HEADS_N", "HEAD_DIM"),
    near_sizes=near_sizes,
)
