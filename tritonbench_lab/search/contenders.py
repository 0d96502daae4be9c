"""Which configs of a short first pass are timed again with the full budget.

Timing every config of a space for do_bench's full 100 ms is most of a sweep's time, and
most configs are far from the best: a first pass of a few milliseconds each ranks them well
enough to tell those that cannot win from those that might. The ones that might are the
contenders; only they get the full budget (phase `contend`), and the fastest of those are
confirmed in a fresh process as before (sweep.py).

A config is a contender when its first-pass time could plausibly beat the leader's (the
fastest first-pass time at the shape), given the noise both rows show:

    config.p20 <= leader.p80 * (1 + MARGIN)

The p20..p80 band of a row is what its own samples say about where its time lies; the bands
of a contender and of the leader overlap, once widened by MARGIN. MARGIN covers what one row
cannot show: time moves between rows (clocks, what ran before, the position in the run),
and a short budget has few samples (one, for a kernel longer than the budget, whose band is
then a point). The `confirm` fastest are always contenders, so that confirmation has its
leaders even when one config is far ahead.

At most MAX_CONTENDERS are kept (the fastest by first-pass median). The cap only bites when
more than that many configs are within noise of the leader: tied by this pass's own measure,
of which the slowest are dropped. It is set above the first-pass rank that confirmed winners
hold in practice, and keeps the full-budget pass short at shapes where many configs tie.
No torch, no triton.
"""

from __future__ import annotations

from tritonbench_lab.data.records import (
    CONTEND,
    CRASH,
    OK,
    SWEEP,
    TIMEOUT,
    TRITON,
    Record,
    standing,
)

MARGIN = 0.05
MAX_CONTENDERS = 8


def contenders(rows: list[Record], always: int = 3, margin: float = MARGIN,
               cap: int = MAX_CONTENDERS) -> list[Record]:
    """Of one dtype and shape's first-pass rows (phase `sweep`), the ok Triton ones worth
    the full budget, fastest first, one per config."""
    best: dict[str, Record] = {}
    for r in rows:
        if (r.phase == SWEEP and r.provider == TRITON and r.status == OK and r.p50_ms
                and (r.config not in best or r.p50_ms < best[r.config].p50_ms)):
            best[r.config] = r
    ranked = sorted(best.values(), key=lambda r: r.p50_ms)
    if not ranked:
        return []
    leader = ranked[0]
    reach = _high(leader) * (1 + margin)
    chosen = [r for i, r in enumerate(ranked) if i < always or _low(r) <= reach]
    return chosen[:max(cap, always)]


def _low(row: Record) -> float:
    return row.p20_ms if row.p20_ms is not None else row.p50_ms


def _high(row: Record) -> float:
    return row.p80_ms if row.p80_ms is not None else row.p50_ms


def contended(rows: list[Record]) -> set[str]:
    """Configs that already have a full-budget time (a `contend` row)."""
    return {r.config for r in rows if r.phase == CONTEND and r.provider == TRITON}


def leaders_to_confirm(rows: list[Record], count: int,
                       only: set[str] | None = None) -> list[Record]:
    """Of one toolchain's rows for one dtype and shape, those whose config or baseline to
    re-time: the `count` fastest Triton configs and every baseline, unless confirmed already
    (a confirmation from before tlab timed the host's part of a call counts: `tlab
    host-times` adds those without timing the GPU again). Triton configs come first: a
    round cut short leaves its baselines unconfirmed, which is how a later run knows to
    confirm the shape. Confirmed leaders that came out slower let others into the top
    `count`: the next round. Where a short first pass had contenders, the leaders are among
    them (`only`: the contenders, when none was timed again)."""
    if count <= 0:
        return []
    quickest: dict[tuple[str, ...], Record] = {}  # per key; --fresh can leave several rows
    rows = standing(rows)
    if only is not None:
        rows = [r for r in rows if r.provider != TRITON or r.config in only]
    if any(r.phase == CONTEND and r.provider == TRITON for r in rows):
        # Once the contenders have full-budget times, only they can lead: a first-pass time
        # is not comparable with theirs (a short budget, often at the boost clock of a GPU
        # that had idled: 8192^3 first passes ran ~5% faster), and contenders.py judged the
        # others unable to win.
        rows = [r for r in rows if r.provider != TRITON or r.phase != SWEEP]
    for r in rows:
        if r.status == OK and r.p50_ms and (
                r.key() not in quickest or r.p50_ms < quickest[r.key()].p50_ms):
            quickest[r.key()] = r
    ranked = sorted((r for r in quickest.values() if r.provider == TRITON), key=lambda r: r.p50_ms)
    wanted = ranked[:count] + [r for r in quickest.values() if r.provider != TRITON]
    return [r for r in wanted if not r.confirmed]


def confirmation_unfinished(rows: list[Record], count: int = 1,
                            baselines: set[str] | None = None) -> bool:
    """Whether a shape's confirmation is missing or was cut short: true unless the newest
    run that confirmed anything at it confirmed every baseline timed ok there (of
    `baselines`, when given) and `count` Triton configs (as many as are ok, when fewer),
    one of them ok. A sweep confirms a shape whole in one run (sweep.py), so the winner's
    run holds every baseline it is compared with; a run killed half-way leaves fewer rows
    than that. A confirmation whose every config crashed or timed out (for example out of
    memory on a GPU another process filled) chose nothing: the winner would be a first-pass
    time, so the next run confirms the shape again."""
    confirmed = [r for r in rows if r.confirmed]
    if not confirmed:
        return True
    newest = [r for r in confirmed if r.run_id == confirmed[-1].run_id]  # in file order
    timed = {r.provider for r in rows if r.provider != TRITON and r.status == OK and r.p50_ms
             and (baselines is None or r.provider in baselines)}
    ok_configs = {r.config for r in rows if r.provider == TRITON and r.status == OK and r.p50_ms}
    mine = [r for r in newest if r.provider == TRITON]
    lost = bool(mine) and all(r.status in (CRASH, TIMEOUT) for r in mine) and bool(ok_configs)
    configs = {r.config for r in mine}
    return (bool(timed - {r.provider for r in newest}) or lost
            or len(configs) < min(count, len(ok_configs)))
