"""`tlab portability FROM`: another GPU's winners timed on this one, beside this GPU's own.

For each shape that both this GPU and FROM tuned (configs/<gpu>/<kernel>.csv, the kernels and
dtypes asked for), where both winners were tuned on the kernel's current source: FROM's winner
config, this GPU's own winner config (timed once where the two are one config) and the
PyTorch op, in turns, each round in a fresh worker process, with the budget and clocks the
native winner was timed with (as `tlab check` times it). The worker verifies each config
before it times it, so a carried config that computes wrongly here fails its row. The best
of each side's medians over the rounds is kept (the gate's statistic), the side that goes
first alternating by round.

One `Carried` row per shape goes to results/<gpu>/portability/<FROM>.csv (append-only, kernel
by kernel as each one's rounds end), and configs/<gpu>/carried/<FROM>.csv is written again
from the standing rows: whether FROM's configs hold here, per kernel and dtype
(data/portability.py, the trust rule `ops` and `tuned.lookup` read on a GPU without configs of
its own for that kernel and dtype).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field

from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.portability import portability_file, trust_file, trust_rows
from tritonbench_lab.data.records import (
    CUDAGRAPH,
    OK,
    TORCH_OP,
    TRITON,
    Carried,
    Trust,
    Winner,
    parse_config_text,
)
from tritonbench_lab.data.store import append_rows, load_winners, read_table, write_table
from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.measure.source import source_hash
from tritonbench_lab.measure.timing import BOTH_CLOCKS_BELOW_MS, BenchOptions
from tritonbench_lab.measure.worker import Task, Timeouts, Worker
from tritonbench_lab.shapes import shape_sizes

ROUNDS = 3  # fresh workers; each times every pair once


@dataclass(frozen=True)
class Pair:
    """One shape both GPUs tuned: FROM's winner there and this GPU's own."""

    carried: Winner
    native: Winner

    @property
    def same(self) -> bool:
        return self.carried.config == self.native.config


@dataclass
class Samples:
    """The medians each side of a pair got, one per round; a side's failure status."""

    carried: list[float] = field(default_factory=list)
    native: list[float] = field(default_factory=list)
    op: list[float] = field(default_factory=list)
    failed: str = ""  # how the carried config failed here ("" while it runs)
    native_failed: str = ""


def pairs(layout: Layout, from_gpu: str, gpu: str, kernels: list[str] | None,
          dtypes: list[str] | None, note: Callable[[str], None]) -> list[Pair]:
    """The shapes both GPUs tuned of the kernels asked for (default: every kernel with a
    configs file on both), each winner on the kernel's current source; one note per shape
    left out, and per kernel that only one GPU tuned."""
    mine = {p.stem for p in (layout.configs / gpu).glob("*.csv")}
    theirs = {p.stem for p in (layout.configs / from_gpu).glob("*.csv")}
    chosen = kernels or sorted(mine & theirs)
    for kernel in sorted(set(chosen) - (mine & theirs)):
        gone = [g for g, have in ((gpu, mine), (from_gpu, theirs)) if kernel not in have]
        note(f"{kernel}: no configs on {', '.join(gone)}")
    found = []
    for kernel in sorted(set(chosen) & mine & theirs):
        source = source_hash(get_spec(kernel))
        native = {(w.dtype, w.shape): w for w in load_winners(layout.configs_file(gpu, kernel))}
        for w in load_winners(layout.configs_file(from_gpu, kernel)):
            own = native.get((w.dtype, w.shape))
            if own is None or (dtypes and w.dtype not in dtypes):
                continue
            if w.source != source or own.source != source:
                note(f"{kernel} {w.dtype} {w.shape}: a winner of another source of the kernel "
                     "(sweep it again first)")
                continue
            found.append(Pair(w, own))
    return found


def bench_of(winner: Winner) -> BenchOptions:
    """The budget and clocks the native winner was timed with (as retime.py times it)."""
    short = winner.method == CUDAGRAPH or winner.p50_ms < BOTH_CLOCKS_BELOW_MS
    return BenchOptions(warmup_ms=winner.warmup_ms or BenchOptions.warmup_ms,
                        rep_ms=winner.rep_ms or BenchOptions.rep_ms,
                        timing="both" if short else "events")


def measure(found: list[Pair], *, rounds: int = ROUNDS, interpret: bool = False,
            kernel_modules: tuple[str, ...] = (),
            progress: Callable[[int, int], None] | None = None,
            kernel_done: Callable[[list[Pair], list[Samples]], None] | None = None,
            ) -> list[Samples]:
    """Each pair's medians over `rounds` fresh workers (module docstring), one kernel after
    another: `kernel_done` gets a kernel's pairs and samples as soon as its rounds end, so
    that a run stopped part way keeps the kernels it finished. The next round's worker
    starts while this one times."""
    samples = [Samples() for _ in found]
    done, total = 0, rounds * len(found)
    for kernel in dict.fromkeys(p.native.kernel for p in found):
        group = [i for i, p in enumerate(found) if p.native.kernel == kernel]
        workers = [Worker(interpret, kernel_modules) for _ in range(rounds)]
        try:
            for round_, worker in enumerate(workers):
                worker.start_in_background()
                if round_ + 1 < rounds:
                    workers[round_ + 1].start_in_background()
                for i in group:
                    _time_pair(worker, found[i], samples[i], carried_first=round_ % 2 == 0)
                    done += 1
                    if progress:
                        progress(done, total)
                worker.stop()
        finally:
            for worker in workers:
                worker.stop()
        if kernel_done:
            kernel_done([found[i] for i in group], [samples[i] for i in group])
    return samples


def _time_pair(worker: Worker, pair: Pair, got: Samples, carried_first: bool) -> None:
    w = pair.native
    spec = get_spec(w.kernel)
    sizes, bench = shape_sizes(w.shape), bench_of(w)

    def run(provider: str, config: dict) -> tuple[str, float | None]:
        outcome = worker.run(Task(w.kernel, provider, sizes, w.dtype, config, 0, bench),
                             Timeouts())
        return outcome.status, outcome.p50_ms

    sides = [("carried", pair.carried.config), ("native", w.config)]
    for side, text in sides if carried_first else sides[::-1]:
        if side == "native" and pair.same:
            continue
        if (got.failed if side == "carried" else got.native_failed):
            continue
        status, ms = run(TRITON, spec.complete(parse_config_text(text)))
        if status != OK:
            setattr(got, "failed" if side == "carried" else "native_failed", status)
        else:
            getattr(got, side).append(ms)
    if pair.same:
        got.native = list(got.carried)
    status, ms = run(TORCH_OP, {})
    if status == OK:
        got.op.append(ms)


def rows(found: list[Pair], samples: list[Samples], from_gpu: str, fingerprint,
         capability: str, rounds: int, run_id: str) -> list[Carried]:
    """One Carried row per pair: the best of each side's medians."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    out = []
    for pair, got in zip(found, samples, strict=True):
        w = pair.native
        status = got.failed or (got.native_failed and f"native {got.native_failed}") or OK
        out.append(Carried(
            kernel=w.kernel, dtype=w.dtype, shape=w.shape, from_gpu=from_gpu,
            carried_config=pair.carried.config, native_config=w.config, status=status,
            carried_ms=min(got.carried, default=None), native_ms=min(got.native, default=None),
            op_ms=min(got.op, default=None), rounds=rounds, gpu=fingerprint.gpu,
            gpu_slug=fingerprint.gpu_slug, capability=capability, torch=fingerprint.torch,
            triton=fingerprint.triton, tlab=fingerprint.tlab, source=w.source, run_id=run_id,
            timestamp=now))
    return out


def record(layout: Layout, gpu: str, from_gpu: str, new: list[Carried]) -> list[Trust]:
    """Append the rows, then write the trust file again from every standing row."""
    path = portability_file(layout.results, gpu, from_gpu)
    append_rows(path, new)
    trust = trust_rows(read_table(path, Carried))
    if not trust:
        raise TlabError(f"no portability rows in {str(path)!r}")
    write_table(trust_file(layout.configs, gpu, from_gpu), trust, Trust)
    return trust
