"""The only place that times anything: `triton.testing.do_bench` on a GPU, wall clock in the
interpreter. Every number says which of the two produced it (the `timing` column).
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

QUANTILES = (0.2, 0.5, 0.8)


@dataclass(frozen=True)
class BenchOptions:
    """do_bench's budget in milliseconds: warm-up runs first, then repeats for about rep_ms.
    do_bench clears the L2 cache before every call, so inputs are never served from cache."""

    warmup_ms: int = 25
    rep_ms: int = 100
    interpreter_reps: int = 3  # the interpreter is slow; a few wall-clock runs suffice

    def method(self, interpreting: bool) -> str:
        if interpreting:
            return f"interpreter wall clock, median of {self.interpreter_reps}"
        return f"do_bench warmup={self.warmup_ms}ms rep={self.rep_ms}ms, L2 flushed, CUDA events"

    @classmethod
    def of_method(cls, text: str) -> BenchOptions | None:
        """The options a row's `timing` (as method() wrote it) was measured with; None for
        the interpreter's wall clock or anything else."""
        match = re.match(r"do_bench warmup=(\d+)ms rep=(\d+)ms,", text)
        return cls(warmup_ms=int(match[1]), rep_ms=int(match[2])) if match else None


def time_call(fn: Callable[[], object], options: BenchOptions,
              interpreting: bool) -> tuple[float, float, float]:
    """(p20, p50, p80) milliseconds of one call of `fn`."""
    if interpreting:
        samples = []
        for _ in range(options.interpreter_reps):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1e3)
        cuts = statistics.quantiles(samples, n=10, method="inclusive")
        return cuts[1], statistics.median(samples), cuts[7]
    import triton.testing

    p20, p50, p80 = triton.testing.do_bench(
        fn, warmup=options.warmup_ms, rep=options.rep_ms, quantiles=list(QUANTILES)
    )
    return float(p20), float(p50), float(p80)
