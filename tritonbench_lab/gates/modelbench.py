"""`tlab model-bench`: what tlab's kernels give a model, not one op: a GPT-NeoX-style decoder
block and an LM head with an odd vocabulary, timed whole in every way a model runs.

The block (NeoX's parallel residual): y = x + attention(layernorm1(x)) + mlp(layernorm2(x)),
attention = fused QKV projection with bias, RoPE on q and k, PyTorch's scaled-dot-product
attention (causal over the prompt in prefill; over a KV cache of CACHE tokens in decode), the
output projection with bias; mlp = the up projection with bias and GELU, the down projection
with bias. The LM head: logits = y @ W with a vocabulary of VOCAB (GPT-2's, odd).

Two op sets run the same block: `torch` (F.layer_norm, torch.addmm, the rotate-half RoPE,
F.gelu(torch.addmm(...)), torch.add, torch.matmul) and `tlab` (tritonbench_lab.ops:
layernorm, addmm, rope, matmul_gelu, add; the LM head through prepare_linear). Each runs
eagerly and compiled (torch.compile), and compiled with CUDA graphs
(mode="reduce-overhead"), the weights, tables and KV cache kept in place (keep_in_place).
Every variant's output is checked against the same block run in float64 with the torch op set,
then timed as a model's loop of steps runs it (loop_time: calls back to back, finished, no
cache flush between them) in turns with its PyTorch counterpart (ROUNDS times: the ratio is the
median of the rounds' ratios), and its host time per call taken (host_time: at the GPU
time or above, the variant waits on its host). Speed targets are judged here and printed, never
in tests.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tritonbench_lab import ops
from tritonbench_lab.kernels.rope import rotate_half_rope
from tritonbench_lab.measure.timing import bound_verdict, host_times, paired_interval, paired_ratio
from tritonbench_lab.runtime import library

VOCAB = 50257  # GPT-2's vocabulary: odd, so no tile or vector load divides it
CACHE = 2048  # decode: tokens already in the KV cache
SEED = 0


@dataclass(frozen=True)
class Width:
    """The block's sizes (GPT-NeoX's ~1B and ~7B: Pythia-1.4B and 6.9B)."""

    name: str
    hidden: int
    heads: int
    mlp: int
    vocab: int = VOCAB

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


@dataclass(frozen=True)
class Workload:
    """Prefill: `batch` prompts of `tokens` tokens. Decode: `batch` sequences, one new token
    each, against a KV cache of `cache` tokens."""

    name: str
    batch: int
    tokens: int
    cache: int = 0

    @property
    def decode(self) -> bool:
        return self.cache > 0


WIDTHS = {"1b": Width("1b", 2048, 16, 8192), "7b": Width("7b", 4096, 32, 16384)}
WORKLOADS = (Workload("prefill 1x2048", 1, 2048), Workload("prefill 8x512", 8, 512),
             Workload("decode b1", 1, 1, CACHE), Workload("decode b8", 8, 1, CACHE),
             Workload("decode b64", 64, 1, CACHE))


class TorchOps:
    """The block's ops as a PyTorch model calls them."""

    name = "torch"

    @staticmethod
    def layernorm(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b)

    @staticmethod
    def linear(x, w, b):
        return torch.addmm(b, x, w)

    @staticmethod
    def linear_gelu(x, w, b):
        return F.gelu(torch.addmm(b, x, w))

    @staticmethod
    def rope(q, k, cos, sin):
        return rotate_half_rope(q, k, cos, sin)

    @staticmethod
    def add(x, y):
        return torch.add(x, y)

    @staticmethod
    def head(y, w):
        return torch.matmul(y, w["w_head"])


class TlabOps(TorchOps):
    """The same through tritonbench_lab.ops (each the PyTorch op where tlab's kernel is not
    measured faster at that shape)."""

    name = "tlab"

    @staticmethod
    def layernorm(x, w, b):
        return ops.layernorm(x, w, b)

    @staticmethod
    def linear(x, w, b):
        return ops.addmm(b, x, w)

    @staticmethod
    def linear_gelu(x, w, b):
        return ops.matmul_gelu(x, w, b)

    @staticmethod
    def rope(q, k, cos, sin):
        return ops.rope(q, k, cos, sin)

    @staticmethod
    def add(x, y):
        return ops.add(x, y)

    @staticmethod
    def head(y, w):
        """The LM head through ops.prepare_linear: its weight padded once (prepared), so the
        odd vocabulary is computed at the next multiple of 64 and returned as a view."""
        return w["head"](y) if "head" in w else ops.matmul(y, w["w_head"])


def prepared(w: dict) -> dict:
    """The weights with the LM head prepared as a model loading them would (once, untimed)."""
    return {**w, "head": ops.prepare_linear(w["w_head"].t())}


OP_SETS = (TorchOps, TlabOps)


def weights(width: Width, dtype: torch.dtype, device: str) -> dict[str, torch.Tensor]:
    """Seeded random weights (never zeros), scaled so activations stay near unit size."""
    gen = torch.Generator(device=device).manual_seed(SEED)
    h, m = width.hidden, width.mlp

    def draw(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen, device=device) * scale).to(dtype)

    return {"ln1_w": 1 + draw(h, scale=0.1), "ln1_b": draw(h, scale=0.1),
            "ln2_w": 1 + draw(h, scale=0.1), "ln2_b": draw(h, scale=0.1),
            "w_qkv": draw(h, 3 * h, scale=h ** -0.5), "b_qkv": draw(3 * h, scale=0.1),
            "w_o": draw(h, h, scale=h ** -0.5), "b_o": draw(h, scale=0.1),
            "w_up": draw(h, m, scale=h ** -0.5), "b_up": draw(m, scale=0.1),
            "w_down": draw(m, h, scale=m ** -0.5), "b_down": draw(h, scale=0.1),
            "w_head": draw(h, width.vocab, scale=h ** -0.5)}


def rope_tables(width: Width, positions: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 cos and sin of (positions x head_dim / 2), as the rope kernel takes them."""
    half = width.head_dim // 2
    inv = 10000.0 ** (-torch.arange(half, device=device, dtype=torch.float64) / half)
    angles = torch.arange(positions, device=device, dtype=torch.float64)[:, None] * inv
    return angles.cos().float(), angles.sin().float()


@dataclass
class Inputs:
    """One workload's activations: x (batch x tokens x hidden) and, in decode, the KV cache."""

    x: torch.Tensor
    cos: torch.Tensor  # at the positions of x's tokens
    sin: torch.Tensor
    k_cache: torch.Tensor | None = None  # batch x heads x cache x head_dim
    v_cache: torch.Tensor | None = None


def make_inputs(width: Width, load: Workload, dtype: torch.dtype, device: str) -> Inputs:
    gen = torch.Generator(device=device).manual_seed(SEED + 1)
    x = torch.randn(load.batch, load.tokens, width.hidden, generator=gen, device=device)
    cos, sin = rope_tables(width, load.cache + load.tokens, device)
    inputs = Inputs(x.to(dtype), cos[load.cache:], sin[load.cache:])
    if load.decode:
        shape = (load.batch, width.heads, load.cache, width.head_dim)
        inputs.k_cache = torch.randn(*shape, generator=gen, device=device).to(dtype)
        inputs.v_cache = torch.randn(*shape, generator=gen, device=device).to(dtype)
    return inputs


def block(op, w: dict, width: Width, inputs: Inputs, head: bool = True) -> torch.Tensor:
    """The decoder block and the LM head: logits (batch x tokens x vocab); without the head,
    the block's output (batch x tokens x hidden)."""
    batch, tokens, hidden = inputs.x.shape
    x = inputs.x.reshape(batch * tokens, hidden)
    qkv = op.linear(op.layernorm(x, w["ln1_w"], w["ln1_b"]), w["w_qkv"], w["b_qkv"])
    qkv = qkv.view(batch, tokens, 3, width.heads, width.head_dim)
    q, k = op.rope(qkv[:, :, 0], qkv[:, :, 1], inputs.cos, inputs.sin)
    v = qkv[:, :, 2]
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # batch x heads x tokens x head_dim
    if inputs.k_cache is not None:
        k, v = torch.cat([inputs.k_cache, k], 2), torch.cat([inputs.v_cache, v], 2)
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=inputs.k_cache is None)
    attn = attn.transpose(1, 2).reshape(batch * tokens, hidden)
    attn = op.linear(attn, w["w_o"], w["b_o"])
    up = op.linear_gelu(op.layernorm(x, w["ln2_w"], w["ln2_b"]), w["w_up"], w["b_up"])
    mlp = op.linear(up, w["w_down"], w["b_down"])
    y = op.add(op.add(x, attn.contiguous()), mlp.contiguous())
    if not head:
        return y.reshape(batch, tokens, hidden)
    return op.head(y, w).reshape(batch, tokens, width.vocab)


@dataclass(frozen=True)
class Variant:
    """One way of running the block: an op set, eagerly or compiled, with CUDA graphs or not;
    with the LM head (the model's logits) or without (the block alone: where the head's
    share of a gain is taken out)."""

    ops: type
    compiled: bool = False
    graphs: bool = False
    head: bool = True

    @property
    def name(self) -> str:
        how = "eager" if not self.compiled else "compiled + graphs" if self.graphs else "compiled"
        return f"{self.ops.name} {how}{'' if self.head else ', no head'}"

    @property
    def counterpart(self) -> Variant:
        """The same way of running with the PyTorch op set."""
        return Variant(TorchOps, self.compiled, self.graphs, self.head)

    def build(self, w: dict, width: Width) -> Callable[[Inputs], torch.Tensor]:
        def run(inputs: Inputs) -> torch.Tensor:
            return block(self.ops, w, width, inputs, self.head)

        if not self.compiled:
            return run
        mode = "reduce-overhead" if self.graphs else None
        return torch.compile(run, mode=mode, dynamic=False)


def keep_in_place(w: dict, inputs: Inputs) -> None:
    """Mark the weights, the RoPE tables and the KV cache as tensors whose memory stays put
    between calls (torch._dynamo.mark_static_address), as a model's parameters and a decode
    loop's static cache are: CUDA graph trees then read them where they are, and copy into
    their pool only the activations x, not every weight at every replay."""
    kept = [inputs.cos, inputs.sin, inputs.k_cache, inputs.v_cache]
    for value in w.values():  # tensors, and the prepared head's buffers
        kept += list(value.buffers()) if isinstance(value, torch.nn.Module) else [value]
    for t in kept:
        if t is not None:
            torch._dynamo.mark_static_address(t)


def pairs(graphs: bool) -> list[tuple[Variant, Variant]]:
    """Each way of running the block with the PyTorch ops, then with tlab's: timed in turns."""
    ways = [(False, False), (True, False)] + ([(True, True)] if graphs else [])
    return [tuple(Variant(op, compiled, with_graphs, head) for op in OP_SETS)
            for head in (True, False) for compiled, with_graphs in ways]


def error_of(out: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest difference from the float64 run, relative to its largest magnitude."""
    return float((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


@dataclass(frozen=True)
class Timed:
    width: str
    workload: str
    variant: str
    ms: float | None  # loop_time's median over ROUNDS; None where the variant failed
    error: float | None  # error_of against the float64 run
    note: str = ""  # why it failed, or graph breaks
    host_ms: float | None = None  # the host's time to issue one call (host_time); not taken
    spread: float | None = None  # (slowest - fastest) / median of its ROUNDS times
    rounds: tuple[float, ...] = ()  # those times, in the order taken (in turns: ratios)


NO_TLAB_NODE = "tlab nodes: none"  # a compiled tlab variant's note where its graph ran none
ROUNDS = 9  # each pair timed in turns this many times; a variant's time is its median
HOST_CALLS, HOST_ROUNDS = 5, 5
LOOP_MS = 30.0  # loop_time's calls take about this long a round


def loop_time(fn: Callable[[], object], sync: Callable[[], None] | None = None,
              loop_ms: float = LOOP_MS) -> float:
    """A call's time in ms in a loop of calls back to back, finished: what a model's loop of
    steps sees, the longer of its host and GPU time per call (timing.host_times, until
    done). Unlike do_bench, nothing runs between the calls (do_bench flushes the L2 first,
    and a host-bound call then issues its launches while the flush runs, which hides part of
    its host time); the weights of a block do not fit in the L2 either way. As many calls as
    take about `loop_ms`, from one warm call timed after a first."""
    if sync is None:
        sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    calls = max(3, min(1000, int(loop_ms / 1e3 / max(time.perf_counter() - start, 1e-9))))
    return host_times((fn,), sync, calls, rounds=1, until_done=True)[0]


def host_time(fn: Callable[[], object], calls: int = HOST_CALLS,
              rounds: int = HOST_ROUNDS) -> float:
    """The host's time in ms to issue one call of `fn` (GPU work queued, not waited for): the
    least over `rounds` of `calls` calls, each round from an idle GPU. Where it reaches the
    call's GPU time, the variant is host-bound and its time is the host's. Few calls a
    round: a block queues tens of launches a call, and once the GPU's queue of launches is
    full the host waits for the GPU, which would count GPU time as host time."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    fn()
    best = math.inf
    for _ in range(rounds):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - start)
    sync()
    return best / calls * 1e3


def measure(width: Width, load: Workload, dtype: torch.dtype, device: str, graphs: bool,
            bench: Callable[[Callable[[], object]], float],
            progress: Callable[[str], None] = lambda _: None,
            host: Callable[[Callable[[], object]], float] | None = None) -> list[Timed]:
    """Every variant of one width and workload: checked against float64, then timed (and
    its host time taken by `host`, where given). A variant and its PyTorch counterpart are
    built together and timed in turns, ROUNDS times, so that a drift of the GPU's clock or
    of the host between rounds counts for neither: their ratio is the median of the rounds'
    ratios (ratios). Each pair of compiled variants starts from a reset compiler
    (torch._dynamo.reset, which also drops the CUDA graph trees), so that one that fails
    leaves nothing behind for the next."""
    w64, inputs64 = weights(width, torch.float64, device), make_inputs(width, load, torch.float64,
                                                                       device)
    refs = {head: block(TorchOps, w64, width, inputs64, head) for head in (True, False)}
    w, inputs = prepared(weights(width, dtype, device)), make_inputs(width, load, dtype, device)
    keep_in_place(w, inputs)
    found = []
    for pair in pairs(graphs):
        if pair[0].compiled:
            torch._dynamo.reset()
        built, failed = {}, {}
        for variant in pair:
            progress(f"{width.name} {load.name}: {variant.name}")
            try:
                run = variant.build(w, width)
                library.opaque_calls.clear()
                error = error_of(run(inputs), refs[variant.head])
                built[variant] = (lambda run=run: run(inputs), error, _tlab_nodes(variant))
            except Exception as err:  # noqa: BLE001 - a variant that fails is a row, not a stop
                failed[variant] = _failure(err)
        times = _in_turns({v: call for v, (call, _, _) in built.items()}, bench, failed)
        for variant in pair:
            if variant in failed:
                found.append(Timed(width.name, load.name, variant.name, None, None,
                                   failed[variant]))
                continue
            call, error, nodes = built[variant]
            median, spread, rounds = times[variant]
            found.append(Timed(width.name, load.name, variant.name, median, error, nodes,
                               None if host is None else host(call), spread, rounds))
    return found + measure_head(width, load, w, inputs, bench)


def _in_turns(calls: dict, bench: Callable[[Callable[[], object]], float],
              failed: dict) -> dict:
    """Each call's median time over ROUNDS rounds of the calls in turns, the rounds' spread
    ((slowest - fastest) / median) and the rounds' times; one whose timing fails goes to
    `failed` with the reason."""
    times: dict = {v: [] for v in calls}
    for _ in range(ROUNDS):
        for variant, call in calls.items():
            if variant not in failed:
                try:
                    times[variant].append(bench(call))
                except Exception as err:  # noqa: BLE001 - a variant that fails is a row
                    failed[variant] = _failure(err)
    medians = {v: statistics.median(t) for v, t in times.items() if v not in failed}
    return {v: (m, (max(times[v]) - min(times[v])) / m if m > 0 else math.nan, tuple(times[v]))
            for v, m in medians.items()}


def _failure(err: Exception) -> str:
    return f"{type(err).__name__}: {err}".splitlines()[0][:200]


def _tlab_nodes(variant: Variant) -> str:
    """For a compiled variant with tlab's ops, the note saying which of them its graph ran as
    opaque nodes (tlab's kernel, or a per-call decision), from the call just made: the rest
    of the graph is Inductor's."""
    if not variant.compiled or variant.ops is not TlabOps:
        return ""
    ran = library.opaque_calls
    if not ran:
        return NO_TLAB_NODE
    return "tlab nodes: " + ", ".join(f"{n} x{ran[n]}" for n in sorted(ran))


def measure_head(width: Width, load: Workload, w: dict, inputs: Inputs,
                 bench: Callable[[Callable[[], object]], float]) -> list[Timed]:
    """The LM head alone, eagerly, on the block's input activations: torch.matmul against
    the prepared head, each checked against the same product in float64."""
    y = inputs.x.reshape(-1, width.hidden)
    check = torch.matmul(y.double(), w["w_head"].double())
    return [Timed(width.name, load.name, f"{op.name} head",
                  bench(lambda op=op: op.head(y, w)), error_of(op.head(y, w), check))
            for op in OP_SETS]


def graph_breaks(width: Width, load: Workload, dtype: torch.dtype, device: str) -> int:
    """Graph breaks torch.compile meets in the block with tlab's op set."""
    w, inputs = weights(width, dtype, device), make_inputs(width, load, dtype, device)
    w = prepared(w)
    explained = torch._dynamo.explain(lambda i: block(TlabOps, w, width, i))(inputs)
    return explained.graph_break_count


def ratios(rows: list[Timed]) -> list[tuple[str, str, str, float]]:
    """(width, workload, variant, its PyTorch counterpart's time over its own) for every tlab
    variant timed beside its counterpart: above 1, tlab's is faster. Timed in turns, the
    median of the rounds' ratios (timing.paired_ratio); else the ratio of the times."""
    by = {(r.width, r.workload, r.variant): r for r in rows if r.ms}
    out = []
    for (width, load, name), mine in by.items():
        if name.startswith(TlabOps.name):
            theirs = by.get((width, load, name.replace(TlabOps.name, TorchOps.name, 1)))
            if theirs is None:
                continue
            paired = len(mine.rounds) == len(theirs.rounds) > 0
            out.append((width, load, name, paired_ratio(theirs.rounds, mine.rounds)
                        if paired else theirs.ms / mine.ms))
    return out


TARGETS = (  # (what, variant, workloads' prefix, least geomean ratio)
    ("compiled with ops >= 1.03x torch.compile, prefill", "tlab compiled", "prefill", 1.03),
    ("ops eager >= 1.10x PyTorch eager, prefill", "tlab eager", "prefill", 1.10),
    ("LM head, odd vocabulary, prepared >= 2x torch.matmul, prefill", "tlab head", "prefill",
     2.0),
)
# Printed beside the targets, no target of their own: the block's gain without the head's.
ALONE = (("the block alone, compiled with ops over torch.compile, prefill",
          "tlab compiled, no head", "prefill"),
         ("the block alone, ops eager over PyTorch eager, prefill", "tlab eager, no head",
          "prefill"))
SLOWEST = 0.98  # no tlab variant slower than its PyTorch counterpart by more than 2%


def report(rows: list[Timed], breaks: dict[str, int]) -> list[str]:
    """The Markdown the command prints: every variant's time and error, then the targets."""
    lines = ["| width | workload | variant | ms (rounds' spread) | vs PyTorch | error vs float64 | "
             "host ms | note |",
             "|---|---|---|---|---|---|---|---|"]
    vs = {(w, load, name): r for w, load, name, r in ratios(rows)}
    for r in rows:
        ratio = vs.get((r.width, r.workload, r.variant))
        lines.append(f"| {r.width} | {r.workload} | {r.variant} | "
                     f"{'-' if r.ms is None else f'{r.ms:.4g}'}{_spread(r.spread, ' ')} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}x'} | "
                     f"{'-' if r.error is None else f'{r.error:.2e}'} | "
                     f"{'-' if r.host_ms is None else f'{r.host_ms:.3g}'} | {r.note} |")
    lines += ["", "Targets:"]
    for what, variant, prefix, least in TARGETS:
        got = [r for (_, load, name), r in vs.items() if name == variant and load.startswith(prefix)]
        mean = geomean(got)
        lines.append(f"- {what}: not measured" if not got else
                     f"- {what}: {mean:.3f}x ({'met' if mean >= least else 'missed'})")
    for what, variant, prefix in ALONE:
        got = [r for (_, load, name), r in vs.items() if name == variant and load.startswith(prefix)]
        if got:
            lines.append(f"- {what}: {geomean(got):.3f}x (no target)")
    rows_by = {(r.width, r.workload, r.variant): r for r in rows}
    same = {key for key in vs if _same_code(rows_by[key])}
    worst = min(((k, v) for k, v in vs.items() if k not in same), key=lambda item: item[1],
                default=None)
    if worst:
        (width, load, name), ratio = worst
        mine, theirs = (rows_by[(width, load, n)] for n in
                        (name, name.replace(TlabOps.name, TorchOps.name, 1)))
        spreads = (f"; rounds' spread {_spread(mine.spread)} and {_spread(theirs.spread)}"
                   if theirs.spread is not None else "")
        interval = (paired_interval(theirs.rounds, mine.rounds)
                    if len(mine.rounds) == len(theirs.rounds) > 1 else None)
        if interval:
            spreads += f", {interval[2]:.0%} interval {interval[0]:.3f}-{interval[1]:.3f}x"
        verdict = bound_verdict(ratio, SLOWEST, interval)
        left = (f"; {len(same)} pairs running the same code both sides left out (block alone, "
                f"compiled, no tlab node), their worst {min(vs[k] for k in same):.3f}x"
                if same else "")
        lines.append(f"- no variant slower than PyTorch's by more than 2%: worst {ratio:.3f}x "
                     f"({width} {load}, {name}{spreads}; {verdict}){left}")
    for width, count in breaks.items():
        lines.append(f"- graph breaks in the {width} block with tlab's ops: {count} "
                     f"({'met' if count == 0 else 'missed'}; target 0)")
    return lines


def _same_code(row: Timed) -> bool:
    """A tlab variant that runs the very code its PyTorch counterpart runs: the block without
    the head, compiled, its graph holding no tlab node (every op traced to the PyTorch op;
    ops.addmm is torch.addmm), so that a ratio away from 1 is the noise of the timing."""
    return row.note == NO_TLAB_NODE and row.variant.endswith("no head")


def _spread(spread: float | None, before: str = "") -> str:
    return "" if spread is None else f"{before}({spread:.0%})"
