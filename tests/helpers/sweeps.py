"""Sweeps without a GPU: a sweep request for the interpreter (request_for), and a scripted
worker that answers each task with canned times (ScriptedWorker), with the rows such a sweep
writes (row). Shared by the sweep, confirmation, first-pass, prior, device and timing tests.
"""

from __future__ import annotations

from tritonbench_lab.data.records import CRASH, OK, TRITON, Record
from tritonbench_lab.measure.env import Fingerprint
from tritonbench_lab.measure.plan import SweepRequest
from tritonbench_lab.measure.worker import Outcome
from tritonbench_lab.space import HOPPER


def request_for(spec, dtypes, shapes, tmp_path, free_bytes=1 << 60, space=None):
    fp = Fingerprint("interpreter", "interpreter", "", "", "2.5.1", "3.1.0", "0.1.0")
    return SweepRequest(spec=spec, dtypes=list(dtypes), shapes=list(shapes),
                        space=space or spec.space, root=tmp_path, interpret=True,
                        fingerprint=fp, limits=HOPPER, free_bytes=free_bytes)


# --- a scripted worker and the rows of its sweeps -------------------------------------------

WIDTHS = (1, 2, 4, 8)  # num_warps of the configs swept below; 64x4096 prunes none of them
BASELINES = ("torch", "unfused", "compiled")  # softmax's baselines, in the order timed


def row(provider="triton", config="w=1", p50=1.0, status=OK, confirmed=False, **kw) -> Record:
    base = dict(run_id="r", timestamp="2026-11-30T10:00:00+00:00", kernel="k",
                provider=provider, dtype="fp32", shape="64x4096", config=config,
                status=status, error="", max_abs_error=0.0, p20_ms=p50, p50_ms=p50, p80_ms=p50,
                throughput=1 / p50 if p50 else None, metric="GB/s", compile_s=0.1,
                phase="confirm" if confirmed else "sweep", method="do_bench", warmup_ms=25,
                rep_ms=100, seed=0, gpu="G", gpu_slug="g", driver="", cuda="", torch="t",
                triton="tr", tlab="tl", source="s",
                host_ms=p50 / 10 if confirmed and p50 else None)  # as a GPU confirmation has
    return Record(**{**base, **kw})


HOST_MS: dict[str, float] = {}  # a scripted confirmation's host time by name; else p50 / 10


class ScriptedWorker:
    """Answers each task with the next of its scripted p50 times (None: a crash); logs
    tasks and stops."""

    def __init__(self, times: dict[str, list[float]], log: list[str]):
        self.times = {k: list(v) for k, v in times.items()}
        self.log = log
        self.budgets: list = []  # each task's do_bench budget

    def run(self, task, timeouts) -> Outcome:
        name = task.provider if task.provider != TRITON else f"w={task.config['num_warps']}"
        self.log.append(name)
        self.budgets.append(task.bench)
        p50 = self.times[name].pop(0)  # a GPU worker times a confirmation's host too
        if p50 is None:  # scripted as a crash (the worker out of memory)
            return Outcome(CRASH, "OutOfMemoryError: scripted", compile_s=0.1)
        host = HOST_MS.get(name, p50 / 10) if task.host_time else None
        return Outcome(OK, "", 0.0, p50, p50, p50, 0.1, host_ms=host)

    def start_in_background(self) -> None:
        self.log.append("start")

    def ask_to_stop(self) -> None:  # stop() follows; the log keeps that one
        pass

    def stop(self) -> None:
        self.log.append("stop")
