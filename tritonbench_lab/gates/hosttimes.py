"""`tlab host-times`: how long one call of each committed winner, and of the PyTorch op at
its shape, holds the calling thread, timed again without timing the GPU again.

An eager program waits on the host wherever a call's host time exceeds its GPU time, and
`ops` decides eager calls on the longer of the two (ops.eager_time). A sweep's confirmation
times both (Record.host_ms), but host times belong to the launch path (tlab's launcher,
Triton's binding, TLAB_FAST_LAUNCH) and to the host's CPU, and the launch path is not part
of a kernel's source hash. So they are timed apart as well: for winners confirmed before
tlab timed them, or after the launch path changed, this takes about a second a shape where
confirming a shape again re-times the GPU for every baseline (torch.compile's included: a
winner's ratios come from one run, winners.py rule 5).

Per winner of the configs file (this GPU, the kernels and dtypes asked for) tuned on the
current toolchain and kernel source: the inputs as a sweep draws them (seed 0), one call of
each side (compiles and loads tlab's kernel), then timing.host_times of the two in turns,
as many calls a round as the longer GPU time allows (timing.host_ms's rule). Two HostTime
rows of one run go to results/<gpu>/host/<kernel>.csv, flushed per winner; then the configs
file is written again from the results and host-times files (winners.py, rule 7), which
changes its host-time columns and nothing else (anything else is refused, nothing written).
Winners of another toolchain or source are skipped and named: sweep them again first.

Host times differ between hosts of one GPU model, and the newest run's stand: host_shift
says how far a run moved them from the configs' earlier ones and which of ops' eager choices
at the tuned shapes changed sides with them.
"""

from __future__ import annotations

import dataclasses
import datetime
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from tritonbench_lab.data.records import TORCH_OP, TRITON, HostTime, Winner, parse_config_text
from tritonbench_lab.data.store import append_rows, check_appendable, load_winners, write_table
from tritonbench_lab.data.winners import winners_from_files
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.precompile import Job
from tritonbench_lab.measure.source import source_hash
from tritonbench_lab.measure.timing import HOST_CALLS, HOST_ROUND_MS, host_times
from tritonbench_lab.runtime import launching
from tritonbench_lab.runtime.dispatch import HOST_SLACK, eager_speedup
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.spec import parse_dtype
from tritonbench_lab.tuned import check_round_trip


@dataclass(frozen=True)
class Timed:
    """One winner's pair, as timed: tlab's call and the op's, in ms, and calls a round."""

    mine_ms: float
    op_ms: float
    calls: int


def to_time(winners: Iterable[Winner], toolchain: tuple[str, str, str], source: str,
            dtypes: Iterable[str] | None = None) -> tuple[list[Winner], list[str]]:
    """The winners whose host times can be timed here, and one line per one that cannot."""
    wanted = set(dtypes) if dtypes else None
    todo, skipped = [], []
    for w in winners:
        if wanted is not None and w.dtype not in wanted:
            continue
        if (w.torch, w.triton, w.tlab) != toolchain:
            skipped.append(f"{w.kernel} {w.dtype} {w.shape}: tuned under torch {w.torch}, "
                           f"triton {w.triton}, tlab {w.tlab}; this is torch {toolchain[0]}, "
                           f"triton {toolchain[1]}, tlab {toolchain[2]}: sweep it again first")
        elif w.source != source:
            skipped.append(f"{w.kernel} {w.dtype} {w.shape}: tuned on another source of the "
                           "kernel (its rows are stale): sweep it again first")
        elif w.op_p50_ms is None:
            skipped.append(f"{w.kernel} {w.dtype} {w.shape}: no PyTorch op was timed beside "
                           "the winner, so ops has nothing to weigh its host time against")
        else:
            todo.append(w)
    return todo, skipped


def time_winner(spec, winner: Winner, device: str, seed: int = 0) -> Timed:
    """The host's part of one call of the winner and of the PyTorch op, in turns."""
    shape = spec.shape(*shape_sizes(winner.shape))
    inputs = spec.make_inputs(shape, parse_dtype(winner.dtype), device, seed)
    outputs = spec.allocate_outputs(inputs)
    config = spec.space.complete(parse_config_text(winner.config))
    op = spec.baselines[TORCH_OP]

    def mine():
        return spec.launch(inputs, config, outputs)

    def theirs():
        return op(inputs)

    def sync():
        if device != "cpu":
            torch.cuda.synchronize()

    gpu_ms = max(winner.p50_ms, winner.op_p50_ms or 0.0, 1e-6)
    calls = max(2, min(HOST_CALLS, int(HOST_ROUND_MS / gpu_ms)))
    mine_ms, op_ms = host_times((mine, theirs), sync, calls)
    return Timed(mine_ms, op_ms, calls)


def rows_of(winner: Winner, timed: Timed, fingerprint, launch: str, run_id: str) -> list[HostTime]:
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    common = dict(kernel=winner.kernel, dtype=winner.dtype, shape=winner.shape,
                  calls=timed.calls, launch=launch, gpu=fingerprint.gpu,
                  gpu_slug=fingerprint.gpu_slug, torch=fingerprint.torch,
                  triton=fingerprint.triton, tlab=fingerprint.tlab, source=winner.source,
                  run_id=run_id, timestamp=when)
    return [HostTime(provider=TRITON, config=winner.config, host_ms=timed.mine_ms, **common),
            HostTime(provider=TORCH_OP, config="", host_ms=timed.op_ms, **common)]


def rewritten(held: list[Winner], picked: list[Winner], path) -> list[Winner]:
    """The configs file's winners again, as the results and host times now pick them; a
    TlabError when more than their host times would change (the file is not what the
    results pick: `tlab check` says why). Asked before any timing too, so that a refusal
    leaves every file as it was."""
    def core(w: Winner) -> Winner:
        return dataclasses.replace(w, host_ms=None, op_host_ms=None)

    if list(map(core, held)) != list(map(core, picked)):
        raise TlabError(f"{path} does not hold what its results pick (`tlab check` says "
                        "where): sweep again or restore it, then time host times")
    return picked


@dataclass(frozen=True)
class KernelPlan:
    """One kernel's winners to time, checked before anything is timed or written."""

    spec: object
    held: list[Winner]  # the configs file as it is
    todo: list[Winner]

    def jobs(self) -> list:
        """The winners' configs at their shapes, for the compile pool (precompile.py)."""
        return [Job(w.kernel, shape_sizes(w.shape), w.dtype, 0,
                    self.spec.space.complete(parse_config_text(w.config))) for w in self.todo]


def plan_kernel(spec, layout, fingerprint, dtypes: Iterable[str] | None,
                note: Callable[[str], None]) -> KernelPlan:
    """Which winners of one kernel can be timed here (to_time; the others named through
    `note`). A TlabError, before anything is timed, when the configs file is not what its
    results pick."""

    slug = fingerprint.gpu_slug
    configs_file = layout.configs_file(slug, spec.name)
    results_file = layout.results_file(slug, spec.name)
    held = load_winners(configs_file)
    if not results_file.is_file():
        note(f"{spec.name}: no results file {results_file} beside {configs_file}: skipped")
        return KernelPlan(spec, held, [])
    todo, skipped = to_time(held, (fingerprint.torch, fingerprint.triton, fingerprint.tlab),
                            source_hash(spec), dtypes)
    for line in skipped:
        note(f"skipped {line}")
    if todo:
        rewritten(held, winners_from_files(results_file)[1], configs_file)
        check_appendable(layout.host_times_file(slug, spec.name), HostTime)
    return KernelPlan(spec, held, todo)


def time_kernel(plan: KernelPlan, layout, fingerprint, device: str,
                note: Callable[[str], None], run_id: str) -> int:
    """Time the plan's winners, record each pair as it is timed, then write the kernel's
    configs file again. Returns how many were timed."""

    if not plan.todo:
        return 0
    spec, slug = plan.spec, fingerprint.gpu_slug
    launch = "fast" if launching.enabled() else "triton"
    for w in plan.todo:
        timed = time_winner(spec, w, device)
        append_rows(layout.host_times_file(slug, spec.name),
                    rows_of(w, timed, fingerprint, launch, run_id))
        note(f"{spec.name} {w.dtype} {w.shape}: tlab {timed.mine_ms * 1e3:.1f} us, "
             f"the PyTorch op {timed.op_ms * 1e3:.1f} us a call on the host")
    configs_file = layout.configs_file(slug, spec.name)
    _, picked = winners_from_files(layout.results_file(slug, spec.name))
    write_table(configs_file, rewritten(plan.held, picked, configs_file), Winner)
    check_round_trip(spec, slug, layout.configs, picked)
    return len(plan.todo)


@dataclass(frozen=True)
class HostShift:
    """How a host-times run moved the configs' host times: the medians of the new over the
    old (tlab's and the op's, where both were recorded), and the winners where the eager
    choice at the tuned shape (dispatch.eager_speedup, HOST_SLACK) changed sides."""

    mine: float | None
    op: float | None
    moved: list[str]  # 'kernel dtype shape (the op -> tlab)'
    winners: int  # with host times before and after

    def sentence(self, shown: int = 6) -> str:
        if not self.winners:
            return "no host times were recorded in the configs before: nothing to compare"
        side = (f"tlab's {self.mine:.2f}x, the op's {self.op:.2f}x"
                if self.mine is not None and self.op is not None else "not comparable")
        text = (f"this host's times over the configs' earlier ones (medians): {side}; the "
                f"eager choice at the tuned shape moved at {len(self.moved)} of "
                f"{self.winners} winner(s)")
        if self.moved:
            more = len(self.moved) - shown
            text += ": " + ", ".join(self.moved[:shown]) + (f" and {more} more" if more > 0
                                                            else "")
        return text


def host_shift(before: Iterable[Winner], after: Iterable[Winner]) -> HostShift:
    """Compare configs rows before and after a host-times run (same kernel, dtype, shape
    and config; rows without host times on either side are left out)."""
    old = {(w.kernel, w.dtype, w.shape, w.config): w for w in before
           if w.host_ms and w.op_host_ms}
    mine, theirs, moved, winners = [], [], [], 0
    for w in after:
        was = old.get((w.kernel, w.dtype, w.shape, w.config))
        if was is None or not (w.host_ms and w.op_host_ms):
            continue
        winners += 1
        mine.append(w.host_ms / was.host_ms)
        theirs.append(w.op_host_ms / was.op_host_ms)
        sides = [_eager_side(x) for x in (was, w)]
        if None not in sides and sides[0] != sides[1]:
            moved.append(f"{w.kernel} {w.dtype} {w.shape} ({sides[0]} -> {sides[1]})")
    middle = statistics.median
    return HostShift(middle(mine) if mine else None, middle(theirs) if theirs else None,
                     moved, winners)


def shift_since(plans: Iterable[KernelPlan], layout, slug: str) -> HostShift:
    """host_shift of the plans' configs files as they were planned and as they are now
    (after time_kernel wrote them again)."""
    plans = list(plans)
    after = [w for plan in plans for w in load_winners(layout.configs_file(slug, plan.spec.name))]
    return host_shift([w for plan in plans for w in plan.held], after)


def _eager_side(w: Winner) -> str | None:
    """Which runs a call at the winner's own shape eagerly, as ops decides it."""
    ratio = eager_speedup(w, 1.0, HOST_SLACK)
    return None if ratio is None else ("tlab" if ratio > 1.0 else "the op")


def run_kernel(spec, layout, fingerprint, device: str, dtypes: Iterable[str] | None,
               note: Callable[[str], None], run_id: str) -> int:
    """plan_kernel, then time_kernel (no compile pool: each winner compiles when first
    called)."""
    plan = plan_kernel(spec, layout, fingerprint, dtypes, note)
    return time_kernel(plan, layout, fingerprint, device, note, run_id)
