"""The cases a measurement worker keeps: a shape's inputs, float64 reference and early-cut
leader, so that going back to a shape costs nothing.

A sweep times several shapes in turn while its configs compile (sweep.LOOKAHEAD): the
worker keeps the last CASES_KEPT cases, fewer while they hold CASES_MEMORY_SHARE of the
GPU's memory, and all of them are let go when a new one does not fit beside them (the sweep
checked that one case fits the GPU, not several).
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from collections.abc import Callable

# Cases kept, the current one included, while this process holds less than this share of
# the GPU's memory.
CASES_KEPT = 8
CASES_MEMORY_SHARE = 0.25


class KeptCases:
    """Cases other than the current one, least recently used first: each a tuple of
    (inputs, reference, leader_ms) under its (kernel, sizes, dtype, seed)."""

    def __init__(self, on_gpu: bool):
        self.on_gpu = on_gpu
        self.kept: OrderedDict = OrderedDict()

    def put(self, key, case: tuple) -> None:
        self.kept[key] = case

    def take(self, key, make: Callable[[], tuple]) -> tuple:
        """The case kept under `key`, or `make()`'s, after letting go of the least recently
        used ones beyond CASES_KEPT (all of them when they fill their share of memory, or
        when the new case does not fit beside them)."""
        if key in self.kept:
            return self.kept.pop(key)
        let_go = False
        while len(self.kept) >= CASES_KEPT or (self.kept and self._memory_full()):
            self.kept.popitem(last=False)
            let_go = True
        if let_go:  # back to the driver: the confirmation worker shares the GPU
            self._release()
        try:
            return make()
        except Exception as err:
            if not self.kept or not _out_of_memory(err):
                raise
        self.kept.clear()
        self._release()
        return make()

    def _release(self) -> None:
        gc.collect()
        if self.on_gpu:
            # late: `tlab --help` imports no torch
            import torch

            torch.cuda.empty_cache()

    def _memory_full(self) -> bool:
        if not self.on_gpu:
            return False
        # late: `tlab --help` imports no torch
        import torch

        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        return torch.cuda.memory_allocated() > total * CASES_MEMORY_SHARE


def _out_of_memory(err: BaseException) -> bool:
    # late: `tlab --help` imports no torch
    import torch

    return isinstance(err, (torch.cuda.OutOfMemoryError, MemoryError))
