"""What one dtype and shape of a sweep came to: how many configs ended in each status, the
first error of each kind of failure, and the winner. The sweep's progress prints one line of
it per finished shape, and its summary one per shape asked for, so that a shape where every
config failed says why on the screen, not only in the CSV. No torch, no triton.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tritonbench_lab.data.records import OK, SKIPPED, STATUSES, Record
from tritonbench_lab.data.winners import shape_results

ERROR_CHARS = 160  # an error longer than this is cut, so that each stays one short line


@dataclass(frozen=True)
class ShapeTally:
    kernel: str
    dtype: str
    shape: str
    configs: int  # the configs of the space at this shape, pruned ones included
    counts: dict[str, int] = field(default_factory=dict)  # status -> configs, STATUSES order
    first_errors: dict[str, str] = field(default_factory=dict)  # failing status -> its error
    winner: Record | None = None  # the fastest correct config's row (winners.py's rule)
    failed_confirmations: int = 0  # configs whose standing row is a failed confirmation

    def winner_note(self) -> str:
        """Where the winner is a first-pass time because the confirmations failed: so."""
        if self.winner is None or self.winner.confirmed or not self.failed_confirmations:
            return ""
        return (f" (a first-pass time: {self.failed_confirmations} confirmation(s) failed; "
                "the next sweep confirms the shape again)")

    @property
    def correct(self) -> bool:
        """Whether any config of the shape computed the right result."""
        return self.counts.get(OK, 0) > 0

    def counts_text(self) -> str:
        """'180 configs: 160 ok, 20 skipped'; configs a search left untried are counted."""
        parts = [f"{count} {status}" for status, count in self.counts.items()]
        untried = self.configs - sum(self.counts.values())
        if untried > 0:
            parts.append(f"{untried} not tried")
        return f"{self.configs} config{'s' if self.configs != 1 else ''}: {', '.join(parts)}"


def tally(kernel: str, dtype: str, shape: str, rows: list[Record], configs: int,
          skipped: int, planned: set[str] | None = None) -> ShapeTally:
    """The tally of one dtype and shape from its rows of one toolchain (each config counted
    once, by the row that stands for it: winners.py's rules 2 and 3), given how many configs
    the plan holds there and how many of them it pruned (their `skipped` rows may carry an
    older toolchain: a pruned config is written once). `planned`: the plan's config texts,
    where rows of other configs stand at the shape (an earlier sweep of a larger space):
    only the plan's are counted. The winner is the shape's, whichever run measured it."""
    found = [r for r in shape_results([r for r in rows if r.status != SKIPPED])
             if (r.kernel, r.dtype, r.shape) == (kernel, dtype, shape)]
    standing = list(found[0].configs.values()) if found else []
    if planned is not None:
        standing = [row for row in standing if row.config in planned]
    by_status = {SKIPPED: skipped} if skipped else {}
    first_errors: dict[str, str] = {}
    for row in standing:
        by_status[row.status] = by_status.get(row.status, 0) + 1
        if row.status != OK and row.status not in first_errors:
            first_errors[row.status] = shortened(row.error)
    counts = {s: by_status[s] for s in STATUSES if by_status.get(s)}
    errors = {s: first_errors[s] for s in STATUSES if s in first_errors}
    failed = sum(row.confirmed and row.status != OK for row in standing)
    return ShapeTally(kernel, dtype, shape, configs, counts, errors,
                      found[0].winner if found else None, failed)


def shortened(error: str, limit: int = ERROR_CHARS) -> str:
    """An error on one line, cut to `limit` characters."""
    text = " ".join(error.split()) or "(no message)"
    return text if len(text) <= limit else text[:limit - 3] + "..."
