"""The one rule for which rows stand and which config wins. configs/, plots, the report,
compare and check all take their winners from here, so they cannot disagree.

Per (kernel, dtype, shape):
1. only rows of the newest toolchain (torch, triton, tlab, kernel source) are compared: a
   re-run with new code replaces the old numbers instead of mixing with them;
2. of those, the rows that stand (records.standing: a config's newest confirmation replaces
   its other rows);
3. each config or baseline is represented by one row: its confirmation when it has one,
   else its fastest timed row, else its newest row (so a failure still shows);
4. the winner is the fastest representative `ok` Triton row, among the confirmed ones when
   any is confirmed (records.fastest); a Triton row that was wrong never wins;
5. the baselines that stand beside the winner are those timed in the winner's own run when
   that run timed any (their newest rows in it), so that every ratio compares numbers from
   one run, on one GPU (the device is lent: two runs may be on two GPUs of one model that
   run at different speeds); a baseline that run did not time is left out rather than
   compared across runs;
6. a baseline is drawn and compared even when outside the tolerance (it is timed, and the
   row says `wrong_result`); the best baseline for the speed-up is the fastest `ok` one, and
   the PyTorch op's own time (the `torch` baseline, records.TORCH_OP) is kept beside it:
   `ops` calls tlab's kernel only where it beats that op;
7. the host times of a call of the winner and of the PyTorch op (what `ops` weighs for eager
   calls) are the newest pair of either their confirmations in the winner's run (Record.
   host_ms) or a `tlab host-times` run that timed the winner's config, on its toolchain and
   kernel source, beside the op (HostTime rows): host times belong to the launch path and
   the host, which a host-times run measures again without timing the GPU again.
No torch, no triton.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from tritonbench_lab.data.layout import host_times_beside
from tritonbench_lab.data.records import (
    OK,
    TORCH_OP,
    TRITON,
    HostTime,
    Record,
    Winner,
    fastest,
    newest_toolchain,
    standing,
)
from tritonbench_lab.data.store import load_host_times, load_records
from tritonbench_lab.shapes import shape_sizes


@dataclass
class ShapeResult:
    """Everything that stands for one kernel, dtype and shape."""

    kernel: str
    dtype: str
    shape: str
    configs: dict[str, Record] = field(default_factory=dict)  # config text -> its row
    baselines: dict[str, Record] = field(default_factory=dict)  # provider -> its row
    winner: Record | None = None

    @property
    def best_baseline(self) -> Record | None:
        return fastest([r for r in self.baselines.values() if r.status == OK])


def _representative(rows: list[Record]) -> Record:
    timed = [r for r in rows if r.p50_ms is not None and (r.status == OK or
                                                          r.provider != TRITON)]
    return fastest(timed) or max(rows, key=lambda r: r.timestamp)


def shape_results(records: list[Record]) -> list[ShapeResult]:
    """One ShapeResult per (kernel, dtype, shape), ordered by kernel, dtype and size."""
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.kernel, r.dtype, r.shape)].append(r)
    out = []
    for (kernel, dtype, shape), rows in groups.items():
        result = ShapeResult(kernel, dtype, shape)
        current = newest_toolchain(rows)
        result.configs = _representatives(standing(current), TRITON)
        result.baselines = _representatives(standing(current))
        result.winner = fastest([r for r in result.configs.values() if r.status == OK])
        if result.winner is not None:  # rule 5
            mine = standing([r for r in current if r.run_id == result.winner.run_id])
            result.baselines = _representatives(mine) or result.baselines
        out.append(result)
    out.sort(key=lambda s: (s.kernel, s.dtype, _size_order(s.shape)))
    return out


def _representatives(rows: list[Record], provider: str | None = None) -> dict[str, Record]:
    """Rule 3 over standing rows: Triton configs by config text (`provider` TRITON), or the
    baselines by provider (None)."""
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in rows:
        if provider == TRITON and r.provider == TRITON:
            groups[r.config].append(r)
        elif provider is None and r.provider != TRITON:
            groups[r.provider].append(r)
    return {key: _representative(mine) for key, mine in groups.items()}


def _size_order(shape: str) -> tuple[int, ...]:
    try:
        return shape_sizes(shape)
    except ValueError:
        return ()


def host_pair(best: Record, op: Record | None, host: list[HostTime]) -> tuple:
    """Rule 7: (host_ms, op_host_ms) of the winner `best` and the PyTorch op's row `op`."""
    pair = (best.host_ms, op.host_ms if op is not None else None)
    when = best.timestamp if best.host_ms is not None else ""
    runs: dict[str, dict[str, HostTime]] = defaultdict(dict)
    for h in host:
        if (h.kernel, h.dtype, h.shape) == (best.kernel, best.dtype, best.shape) and \
                (h.provider == TORCH_OP or h.config == best.config) and \
                (h.torch, h.triton, h.tlab, h.source) == (best.torch, best.triton, best.tlab,
                                                           best.source):
            runs[h.run_id][h.provider] = h
    for timed in runs.values():
        mine, theirs = timed.get(TRITON), timed.get(TORCH_OP)
        if mine is not None and theirs is not None and mine.timestamp >= when:
            pair, when = (mine.host_ms, theirs.host_ms), mine.timestamp
    return pair


def winner_of(result: ShapeResult, host: list[HostTime] = ()) -> Winner | None:
    best = result.winner
    if best is None:
        return None
    base = result.best_baseline
    op = result.baselines.get(TORCH_OP)
    op_ok = op is not None and op.status == OK
    host_ms, op_host_ms = host_pair(best, op if op_ok else None, list(host))
    return Winner(
        kernel=best.kernel, dtype=best.dtype, shape=best.shape, config=best.config,
        p50_ms=best.p50_ms, throughput=best.throughput, metric=best.metric,
        method=best.method, warmup_ms=best.warmup_ms, rep_ms=best.rep_ms,
        best_baseline=base.provider if base else "",
        baseline_p50_ms=base.p50_ms if base else None,
        baseline_throughput=base.throughput if base else None,
        speedup=base.p50_ms / best.p50_ms if base else None,
        op_p50_ms=op.p50_ms if op_ok else None,
        gpu=best.gpu, torch=best.torch, triton=best.triton, tlab=best.tlab,
        source=best.source, date=best.timestamp[:10], run_id=best.run_id,
        host_ms=host_ms, op_host_ms=op_host_ms,
    )


def winners_from_files(results_file) -> tuple[list[Record], list[Winner]]:
    """A kernel's rows and the winners they pick, its host-times file's rows taken in
    (layout.host_times_beside): what a configs file must hold."""

    rows = load_records(results_file)
    return rows, pick_winners(rows, load_host_times(host_times_beside(results_file)))


def pick_winners(records: list[Record], host: list[HostTime] = ()) -> list[Winner]:
    """One Winner per (kernel, dtype, shape) that has an ok Triton row, in size order;
    `host`: the kernel's host-times rows (rule 7)."""
    host = list(host)
    return [w for w in (winner_of(r, host) for r in shape_results(records)) if w is not None]
