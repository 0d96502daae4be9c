"""The only place that times anything: `triton.testing.do_bench` on a GPU, wall clock in the
interpreter. Every row says which of the two produced its numbers, and with what budget
(the `method`, `warmup_ms` and `rep_ms` columns).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from tritonbench_lab.records import DO_BENCH, INTERPRETER

QUANTILES = (0.2, 0.5, 0.8)


@dataclass(frozen=True)
class BenchOptions:
    """do_bench's budget in milliseconds: warm-up runs first, then repeats for about rep_ms.
    do_bench clears the L2 cache before every call, so inputs are never served from cache."""

    warmup_ms: int = 25
    rep_ms: int = 100
    # Interpreter times say nothing about a GPU (rows are labelled so); one wall-clock call
    # keeps the pipeline honest without doubling an interpreter sweep's time.
    interpreter_reps: int = 1

    def columns(self, interpreting: bool) -> dict[str, str | int | None]:
        """The method, warmup_ms and rep_ms of a row timed with these options."""
        if interpreting:
            return {"method": INTERPRETER, "warmup_ms": None, "rep_ms": None}
        return {"method": DO_BENCH, "warmup_ms": self.warmup_ms, "rep_ms": self.rep_ms}


def time_call(fn: Callable[[], object], options: BenchOptions,
              interpreting: bool) -> tuple[float, float, float]:
    """(p20, p50, p80) milliseconds of one call of `fn`."""
    if interpreting:
        samples = []
        for _ in range(options.interpreter_reps):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1e3)
        if len(samples) == 1:
            return samples[0], samples[0], samples[0]
        cuts = statistics.quantiles(samples, n=10, method="inclusive")
        return cuts[1], statistics.median(samples), cuts[7]
    import triton.testing

    p20, p50, p80 = triton.testing.do_bench(
        fn, warmup=options.warmup_ms, rep=options.rep_ms, quantiles=list(QUANTILES)
    )
    return float(p20), float(p50), float(p80)
