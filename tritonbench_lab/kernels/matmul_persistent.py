"""The persistent matmul kernel: tiles copied by the tensor memory accelerator (TMA), and
stream-K for the tiles of a partial last wave. `tritonbench_lab.kernels.matmul` holds the
spec, its space and its other kernel; this file holds what runs when a config says TMA=1.

At most one program per SM walks the tiles id, id + programs, ... (one software pipeline over
every tile and K-step); tensor descriptors zero-fill ragged edges in hardware, so M, N and K
need no masks, but operands must be row-major with rows of a multiple of 16 bytes.

Stream-K (STREAM_K > 0): when the tiles do not fill whole waves of programs, the last tiles
are not given whole to some programs while the others idle. Their K-steps, laid end to end,
are dealt out evenly, `share` to a program; a program's range then begins inside one tile
and ends inside another. It pays where the last wave is a small part of the work of many
(3000^3 in 128 x 256 tiles), not where every tile is shared; the sweep times both ways.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tritonbench_lab.errors import TlabError
from tritonbench_lab.spec import triton_interpreting


@triton.jit
def grouped_tile(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """Grouped order: tile ids run down GROUP_M row tiles before moving one column right."""
    tiles_per_group = GROUP_M * tiles_n
    first_tile_m = (tile // tiles_per_group) * GROUP_M
    group_rows = min(tiles_m - first_tile_m, GROUP_M)  # the last group may be short
    tile_m = first_tile_m + (tile % tiles_per_group) % group_rows
    tile_n = (tile % tiles_per_group) // group_rows
    return tile_m, tile_n


# What the kernels do to a tile of A @ B before it is stored (matmul_gelu.py's kernels).
NO_EPILOGUE, GELU_ERF, GELU_TANH = 0, 1, 2
# Globals a @triton.jit function reads must be constexprs (the interpreter does not check).
_NO_EPILOGUE, _GELU_ERF = tl.constexpr(NO_EPILOGUE), tl.constexpr(GELU_ERF)
SQRT_HALF = tl.constexpr(0.7071067811865476)  # 1 / sqrt(2)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
GELU_CUBIC = tl.constexpr(0.044715)
# erfc(z) ~ t * P(t) * exp(-z^2), t = 1 / (1 + AS_P z), z >= 0, |error| <= 1.5e-7
# (Abramowitz and Stegun, Handbook of Mathematical Functions, 7.1.26).
AS_P = tl.constexpr(0.3275911)
AS_1, AS_2, AS_3 = tl.constexpr(0.254829592), tl.constexpr(-0.284496736), tl.constexpr(1.421413741)
AS_4, AS_5 = tl.constexpr(-1.453152027), tl.constexpr(1.061405429)


@triton.jit
def gelu_erf(x):
    """x * Phi(x), Phi the normal distribution: Phi(-|x|) = erfc(|x| / sqrt 2) / 2 by 7.1.26,
    one exp and one reciprocal. Not tl.erf: libdevice's erf made the epilogue of a 128 x 256
    tile spill registers and run slower, for accuracy that C's rounding does not keep."""
    z = tl.abs(x) * SQRT_HALF
    t = 1.0 / (1.0 + AS_P * z)
    erfc = t * (AS_1 + t * (AS_2 + t * (AS_3 + t * (AS_4 + t * AS_5)))) * tl.exp(-z * z)
    return x * tl.where(x >= 0, 1.0 - 0.5 * erfc, 0.5 * erfc)


@triton.jit
def epilogue(acc, bias_ptr, cols, N, EPILOGUE: tl.constexpr):
    """The fp32 tile as stored: as it is, or gelu(acc + bias) with the bias of its columns
    (erf form, or the tanh approximation), before the one rounding to C's dtype."""
    if EPILOGUE == _NO_EPILOGUE:
        out = acc
    else:
        x = acc + tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
        if EPILOGUE == _GELU_ERF:
            out = gelu_erf(x)
        else:
            # tanh(u) = 1 - 2 / (exp(2u) + 1): Triton has exp but no tanh of its own
            u = SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x)
            out = x * (1.0 - 1.0 / (tl.exp(2.0 * u) + 1.0))
    return out


@triton.jit
def _tile_steps(a_desc, b_desc, tile_m, tile_n, first, last, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, IEEE_FP32: tl.constexpr):
    """The fp32 sum over K-steps first .. last - 1 of one tile of C."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(first, last):
        a = a_desc.load([tile_m * BLOCK_M, step * BLOCK_K])
        b = b_desc.load([step * BLOCK_K, tile_n * BLOCK_N])
        if IEEE_FP32:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def matmul_tma_kernel(
    a_desc, b_desc, c_desc,  # tensor descriptors of A (M x K), B (K x N), C (M x N)
    partials_ptr, flags_ptr,  # stream-K: a BLOCK_M x BLOCK_N fp32 tile and a flag per program
    bias_ptr,  # N values added before GELU (EPILOGUE > 0); unused otherwise
    M, N, K,  # problem sizes
    whole_tiles,  # tiles computed whole, one program each; the rest are shared (stream-K)
    share,  # stream-K: K-steps of the shared tiles per program
    BLOCK_M: tl.constexpr,  # rows of C per tile (the descriptors' block shapes agree)
    BLOCK_N: tl.constexpr,  # columns of C per tile
    BLOCK_K: tl.constexpr,  # depth of one step along K
    GROUP_M: tl.constexpr,  # row tiles that share a column of B tiles, for L2 reuse
    IEEE_FP32: tl.constexpr,  # multiply fp32 inputs in full precision instead of tf32
    EPILOGUE: tl.constexpr,  # NO_EPILOGUE, GELU_ERF or GELU_TANH (of acc + bias)
    PASS: tl.constexpr,  # 0: all; the interpreter runs 1 (hand-overs only), then 2 (the rest)
):
    """Persistent: at most one program per SM, each walking the tiles id, id + programs, ...
    The tensor memory accelerator copies tiles into shared memory and fills what lies past
    an edge with zeros, so ragged M, N and K need no masks; stores past an edge are dropped.

    Stream-K: the tiles past `whole_tiles` (a last, partial wave, or all tiles when they are
    fewer than the programs) are not given whole to some programs while the others idle;
    their K-steps, laid end to end, are dealt out evenly, `share` to a program. A program's
    range then begins inside a tile (a later part of its K, which it hands over: partial sum
    to `partials`, then its flag) and ends inside another (whose first steps it computes: it
    waits for the hand-overs of the programs after it, adds them and stores the tile). A
    hand-over is the first thing a program does after its whole tiles, and waits on nothing,
    so every wait ends while all programs are resident (grid <= SMs). Flags are reset by the
    reader: the buffer stays zero between calls."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    steps = tl.cdiv(K, BLOCK_K)
    pid = tl.program_id(0)
    if PASS != 1:
        # flatten: one software pipeline over every (tile, step), so the loads of the next
        # tile start while the last steps of this one are still in the tensor cores.
        for tile in tl.range(pid, whole_tiles, tl.num_programs(0), flatten=True):
            tile_m, tile_n = grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
            acc = _tile_steps(a_desc, b_desc, tile_m, tile_n, 0, steps,
                              BLOCK_M, BLOCK_N, BLOCK_K, IEEE_FP32)
            cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
            acc = epilogue(acc, bias_ptr, cols, N, EPILOGUE)
            c_desc.store([tile_m * BLOCK_M, tile_n * BLOCK_N], acc.to(c_desc.dtype))
    shared_steps = (tiles_m * tiles_n - whole_tiles) * steps
    at = pid * share
    end = tl.minimum(at + share, shared_steps)
    tile_elems = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    while at < end:
        tile = whole_tiles + at // steps
        first = at % steps
        last = tl.minimum(steps, first + end - at)
        hand_over = first > 0
        todo = (PASS == 0) | ((PASS == 1) & hand_over) | ((PASS == 2) & (first == 0))
        if todo:
            tile_m, tile_n = grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
            acc = _tile_steps(a_desc, b_desc, tile_m, tile_n, first, last,
                              BLOCK_M, BLOCK_N, BLOCK_K, IEEE_FP32)
            if hand_over:
                tl.store(partials_ptr + pid * BLOCK_M * BLOCK_N + tile_elems, acc)
                tl.atomic_xchg(flags_ptr + pid, 1, sem="release")  # after the store
            else:
                tile_end = (tile - whole_tiles + 1) * steps
                other = pid + 1
                while other * share < tile_end:  # programs whose range begins in this tile
                    ready = tl.atomic_cas(flags_ptr + other, 1, 0, sem="acquire")
                    while ready != 1:
                        ready = tl.atomic_cas(flags_ptr + other, 1, 0, sem="acquire")
                    acc += tl.load(partials_ptr + other * BLOCK_M * BLOCK_N + tile_elems,
                                   cache_modifier=".cg")
                    other += 1
                cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
                acc = epilogue(acc, bias_ptr, cols, N, EPILOGUE)
                c_desc.store([tile_m * BLOCK_M, tile_n * BLOCK_N], acc.to(c_desc.dtype))
        at += last - first


# Tensor descriptors need 16-byte aligned bases and row strides (and unit inner strides).
TMA_ALIGN_BYTES = 16
# Programs of the persistent kernel in Triton's interpreter (no SMs to count there): a few,
# so that each walks several tiles.
INTERPRETER_PROGRAMS = 3


def tma_ready(*tensors: torch.Tensor) -> str | None:
    """Why tensor descriptors cannot describe these 2-D tensors, or None when they can."""
    for t in tensors:
        size = t.element_size()
        if t.stride(1) != 1:
            return "TMA=1 needs every matrix with unit column stride (row-major)"
        if (t.stride(0) * size) % TMA_ALIGN_BYTES or t.data_ptr() % TMA_ALIGN_BYTES:
            return (f"TMA=1 needs {TMA_ALIGN_BYTES}-byte aligned rows; a row stride of "
                    f"{t.stride(0)} x {size} B is not")
    return None


@functools.cache
def _programs(device: torch.device) -> int:
    if device.type != "cuda":
        return INTERPRETER_PROGRAMS
    return torch.cuda.get_device_properties(device).multi_processor_count


def whole_tiles(tiles: int, programs: int, stream_k: int) -> int:
    """How many tiles the persistent kernel gives whole to a program; it shares the K-steps
    of the rest evenly. STREAM_K=0: none shared; 1: the last, partial wave (all tiles when
    they are fewer than the programs); 2: that and one whole wave before it."""
    if stream_k == 0 or (tiles >= programs and tiles % programs == 0):
        return tiles
    return max(tiles - (tiles % programs + (stream_k - 1) * programs), 0)


_STREAM_K_BUFFERS: dict = {}


def _stream_k_buffers(device: torch.device, programs: int, tile: int):
    """The fp32 partial tiles and flags of the stream-K hand-overs, kept per device, stream
    and size (flags are zeroed once: the kernel resets each one it reads)."""
    if programs == 0:  # nothing shared: the kernel never touches them
        programs, tile = 1, 1
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (str(device), stream, programs, tile)
    if key not in _STREAM_K_BUFFERS:
        _STREAM_K_BUFFERS[key] = (torch.empty(programs * tile, dtype=torch.float32, device=device),
                                  torch.zeros(programs, dtype=torch.int32, device=device))
    return _STREAM_K_BUFFERS[key]


def launch_persistent(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, meta: dict,
                      options: dict, stream_k: int, bias: torch.Tensor | None = None,
                      epilogue: int = NO_EPILOGUE) -> None:
    """out = a @ b (or its epilogue, with `bias`) by the persistent kernel under one config
    (meta: its constexprs)."""
    why = tma_ready(a, b, out)
    if why:
        raise TlabError(why)
    (M, K), N = a.shape, b.shape[1]
    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    descriptors = (TensorDescriptor.from_tensor(a, [bm, bk]),
                   TensorDescriptor.from_tensor(b, [bk, bn]),
                   TensorDescriptor.from_tensor(out, [bm, bn]))
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    programs = _programs(a.device)
    whole = whole_tiles(tiles, programs, stream_k)
    share = triton.cdiv((tiles - whole) * triton.cdiv(K, bk), programs)
    if whole == tiles:
        programs = min(tiles, programs)
    partials, flags = _stream_k_buffers(a.device, programs if share else 0, bm * bn)
    args = (*descriptors, partials, flags, bias, M, N, K, whole, share)
    ieee = a.dtype == torch.float32
    # The interpreter runs programs one by one: every hand-over first, then the rest.
    for pass_ in (1, 2) if share and triton_interpreting() else (0,):
        matmul_tma_kernel[(programs,)](*args, IEEE_FP32=ieee, EPILOGUE=epilogue, PASS=pass_,
                                       **meta, **options)
