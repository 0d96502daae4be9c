"""The timing half of `tlab check`: each committed winner timed again on this GPU, the way
the sweep timed it, in fresh worker processes, and held to the time its row recorded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.data.records import CUDAGRAPH, OK, TORCH_OP, TRITON, Winner, parse_config_text
from tritonbench_lab.measure.timing import BOTH_CLOCKS_BELOW_MS, BenchOptions
from tritonbench_lab.measure.worker import Task, Timeouts, Worker
from tritonbench_lab.shapes import shape_sizes

# What the gate forgives at any length: a call of a few microseconds is mostly its launch
# and one round trip to memory, and unchanged code moves by that much between two GPUs of
# one model (rope's one-token winners of a few us read about half a microsecond slower on
# one GPU than on the one that recorded them, while the PyTorch op beside them read the
# same). So a winner fails only when it is slower than its row by more than the
# tolerance and by more than this; from 10 us up the tolerance is the larger.
NOISE_FLOOR_MS = 0.001


@dataclass(frozen=True)
class Retimed:
    path: Path
    line: int
    winner: Winner
    samples: tuple[float, ...]  # the judged p50 of each fresh worker that timed it
    status: str  # OK, or how the config failed to run
    # The PyTorch op at the same shape, timed beside the winner in the passes after the
    # first two, only for a winner slower than allowed whose row recorded the op's time.
    op_samples: tuple[float, ...] = ()

    @property
    def measured_ms(self) -> float | None:
        """The gate's statistic: the best of the fresh workers' medians."""
        return min(self.samples) if self.samples and self.status == OK else None

    @property
    def ratio(self) -> float | None:
        return None if self.measured_ms is None else self.measured_ms / self.winner.p50_ms

    @property
    def op_ratio(self) -> float | None:
        """How much slower this GPU runs the PyTorch op than the GPU that recorded the row
        (best of its medians / the row's op_p50_ms); None when it was not timed."""
        if not self.op_samples or not self.winner.op_p50_ms:
            return None
        return min(self.op_samples) / self.winner.op_p50_ms

    @property
    def relative(self) -> float | None:
        """now / recorded, measured against the op: the ratio with this GPU's own speed
        divided out (two GPUs of one model can time the same long kernels several per cent
        apart, and the op with them), so that a winner is slower only when it is slower than
        the op too."""
        if self.ratio is None or self.op_ratio is None:
            return None
        return self.ratio / self.op_ratio

    @property
    def verdict(self) -> float | None:
        """The ratio held to the tolerance: `relative` where the op was timed, else `ratio`."""
        return self.relative if self.relative is not None else self.ratio

    @property
    def spread(self) -> float | None:
        """(slowest - fastest) / fastest of the medians: the noise the tolerance must cover."""
        if self.measured_ms is None or len(self.samples) < 2:
            return None
        return (max(self.samples) - self.measured_ms) / self.measured_ms

    def failure(self, tolerance: float) -> str | None:
        """Why this winner fails the gate, or None: slower than recorded by more than the
        tolerance (relative to the op where it was timed) and by more than NOISE_FLOOR_MS."""
        if self.status != OK:
            return f"winner now fails: {self.status}"
        if self.verdict <= 1 + tolerance or self.measured_ms - self.winner.p50_ms <= NOISE_FLOOR_MS:
            return None
        against = "" if self.relative is None else (
            f"; {self.relative:.2f}x relative to the PyTorch op, which runs "
            f"{self.op_ratio:.2f}x its recorded time here")
        return (f"{self.verdict:.2f}x slower than recorded ({self.measured_ms:.4g} ms vs "
                f"{self.winner.p50_ms:.4g} ms: the best of {len(self.samples)} fresh workers, "
                f"spread {100 * (self.spread or 0):.1f}%{against}; tolerance {tolerance:.0%}, "
                f"and {1000 * NOISE_FLOOR_MS:g} us at least)")


def retime(items: list[tuple[Path, int, Winner]], tolerance: float,
           kernel_modules: tuple[str, ...] = (), repeats: int = 4, interpret: bool = False
           ) -> list[Retimed]:
    """Time each winner (file, line, row) again the way the sweep timed it (its row's
    budget, the sweep's worker with the user's kernel modules, the same seeded inputs), with
    both clocks where the kernel may be short (timing.BOTH_CLOCKS_BELOW_MS, as a sweep's
    `auto` timing does), so that launch overhead
    cannot pass for a regression (timing.judge). Each pass over all the files runs in one
    fresh worker process: two time every winner; up to `repeats` in all re-time those still
    slower than allowed, each beside the PyTorch op at its shape where the row recorded the
    op's time. A winner fails (Retimed.failure) when the best of its medians is slower than
    recorded by more than `tolerance` and, where the op was timed, also relative to the op
    (another GPU of the same model may simply be slower). (`interpret`: in Triton's
    interpreter, for tests: its wall-clock times say nothing about a GPU.)"""

    samples: list[list[float]] = [[] for _ in items]
    op_samples: list[list[float]] = [[] for _ in items]
    failed: dict[int, str] = {}

    def so_far(i: int) -> Retimed:
        path, line, w = items[i]
        return Retimed(path, line, w, tuple(samples[i]), failed.get(i, OK), tuple(op_samples[i]))

    for attempt in range(max(1, repeats)):
        # Two passes give every winner a spread; later ones only re-time the slow.
        todo = [i for i in range(len(items)) if i not in failed and (
            attempt < 2 or so_far(i).failure(tolerance))]
        if not todo:
            break
        worker = Worker(interpret, kernel_modules)
        try:
            for i in todo:
                w = items[i][2]
                # The graph clock only where it can judge (a short kernel): it doubles the time.
                short = w.method == CUDAGRAPH or w.p50_ms < BOTH_CLOCKS_BELOW_MS
                bench = BenchOptions(warmup_ms=w.warmup_ms or BenchOptions.warmup_ms,
                                     rep_ms=w.rep_ms or BenchOptions.rep_ms,
                                     timing="both" if short else "events")
                sizes = shape_sizes(w.shape)
                outcome = worker.run(Task(w.kernel, TRITON, sizes, w.dtype,
                                          parse_config_text(w.config), 0, bench), Timeouts())
                if outcome.status != OK:
                    failed[i] = outcome.status
                    continue
                samples[i].append(outcome.p50_ms)
                if attempt >= 2 and w.op_p50_ms:
                    op = worker.run(Task(w.kernel, TORCH_OP, sizes, w.dtype, {}, 0, bench),
                                    Timeouts())
                    if op.status == OK:
                        op_samples[i].append(op.p50_ms)
        finally:
            worker.stop()
    return [so_far(i) for i in range(len(items))]
