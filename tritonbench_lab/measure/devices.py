"""The devices a sweep measures on (`--gpus`), each behind one isolated worker.

A device is a GPU of this machine with its own worker processes (worker.py: a crash or a
hang costs one task), pinned to it with CUDA_VISIBLE_DEVICES so that nothing else of the
sweep touches it. Without a GPU, interpreter workers stand in for devices (`cpu:0`,
`cpu:1`, ...: each a process on one CPU core), so that everything a multi-GPU sweep does is
exercised on any machine. `--backend ray` puts each device behind a Ray actor instead
(raydevices.py); the sweep sees the same methods either way: `prepare`, `run` and `stop`.

Each device keeps two workers: one for the sweep's passes, and one started fresh for the
confirmations (their times must not come from the process that ranked the configs).
"""

from __future__ import annotations

import os

from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.precompile import default_jobs
from tritonbench_lab.measure.timing import BenchOptions
from tritonbench_lab.measure.worker import Outcome, Task, Timeouts, Worker

ALL = "all"


def gpu_names() -> list[str]:
    """The names of the GPUs this process sees, in CUDA's order ([] without one)."""
    # late: `tlab --help` imports no torch
    import torch

    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def parse_gpus(text: str | None, interpreting: bool, names: list[str] | None = None
               ) -> list[str]:
    """`--gpus` as device labels. None: the one device a sweep always used (`cuda:0`, the
    current GPU; `cpu:0` in the interpreter). `all`: every GPU (in the interpreter: one
    stand-in per CPU core). `0,2`: those. GPUs of different models are refused: their rows
    would share one results file and one winner per shape."""
    prefix = "cpu" if interpreting else "cuda"
    if text is None:
        return [f"{prefix}:0"]
    if not interpreting:
        names = gpu_names() if names is None else names
        count = len(names)
    else:
        count = default_jobs()  # the cores this process may use
    word = text.strip().lower()
    if word == ALL:
        picked = list(range(count))
    else:
        try:
            picked = [int(part) for part in word.split(",") if part.strip()]
        except ValueError:
            picked = []
        if not picked or any(i < 0 for i in picked):
            raise TlabError(f"--gpus {text!r}: give 'all' or device numbers such as 0 or 0,1")
        if len(set(picked)) != len(picked):
            raise TlabError(f"--gpus {text!r} names a device twice")
        if not interpreting and max(picked) >= count:
            raise TlabError(f"--gpus {text!r}: this machine has {count} GPU(s), numbered "
                            f"0-{count - 1}" if count else "--gpus: no GPU is visible")
    if not interpreting:
        models = {names[i] for i in picked}
        if len(models) > 1:
            raise TlabError(f"--gpus {text!r} mixes GPU models ({', '.join(sorted(models))}): "
                            "sweep each model on its own")
    return [f"{prefix}:{i}" for i in picked]


def visible_for(label: str, single: bool) -> str | None:
    """CUDA_VISIBLE_DEVICES of a device's workers: None (inherit) for an interpreter
    stand-in, or for device 0 alone (the parent's own default); else its entry in the
    parent's own CUDA_VISIBLE_DEVICES (device numbers are relative to it, as in torch), or
    the number itself. (`--gpus 1` alone once inherited, and ran on device 0.)"""
    kind, _, index = label.partition(":")
    if kind != "cuda" or (single and int(index) == 0):
        return None
    inherited = os.environ.get("CUDA_VISIBLE_DEVICES")
    if inherited:
        entries = [e.strip() for e in inherited.split(",") if e.strip()]
        return entries[int(index)]
    return index


class LocalDevice:
    """One device of this machine: a sweep worker and a confirmation worker, both pinned."""

    def __init__(self, label: str, interpret: bool, kernel_modules: tuple[str, ...],
                 bench: BenchOptions, visible: str | None = None):
        self.label = label
        self._make = lambda: Worker(interpret, kernel_modules, bench, visible=visible)
        self._workers: dict[bool, Worker] = {}

    def run(self, task: Task, timeouts: Timeouts, fresh: bool = False) -> Outcome:
        """Measure one task; `fresh`: in the confirmation worker, not the sweep's."""
        worker = self._workers.get(fresh) or self._workers.setdefault(fresh, self._make())
        return worker.run(task, timeouts)

    def prepare(self, confirm: bool) -> None:
        """Start the workers the sweep will use in the background (the confirmation one
        only if there will be confirmations), so that neither start is waited for later."""
        for fresh in (False, True) if confirm else (False,):
            self._workers.setdefault(fresh, self._make()).start_in_background()

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self._workers.values())

    def ask_to_stop(self) -> None:
        """Tell the workers to exit, without waiting (each takes about a second to give its
        CUDA context back; `stop` waits)."""
        for worker in self._workers.values():
            worker.ask_to_stop()

    def stop(self) -> None:
        self.ask_to_stop()  # both exit at once
        for worker in self._workers.values():
            worker.stop()
        self._workers.clear()
