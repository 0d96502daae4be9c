"""The cases a measurement worker keeps: a shape's inputs, float64 reference and early-cut
leader, so that going back to a shape costs nothing.

A sweep times several shapes in turn while its configs compile (sweep.LOOKAHEAD): the
worker keeps the last CASES_KEPT cases while their tensors, with the next case's
(`memory_estimate`), fit CASES_MEMORY_SHARE of the GPU's memory; it lets go of the least
recently used ones first, and of all of them when a new one does not fit beside them anyway.
So a worker holds at most that share or one case, whichever is more (`worker_bytes`), and
the compile pool's budget (plan.sweep_pool_budget) counts on that bound for the two timing
workers of a sweep (its own and the fresh one confirming).
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from collections.abc import Callable

# Cases kept, the current one included, while they and the next one fit this share of the
# GPU's memory.
CASES_KEPT = 8
CASES_MEMORY_SHARE = 0.25


def memory_estimate(spec, shape, dtype) -> int:
    """Device bytes one shape needs: inputs and outputs (the cost model's bytes), a second
    set of outputs (a baseline's), and the float64 reference of the outputs."""
    cost = spec.cost(shape, dtype)
    return 2 * cost.bytes + cost.bytes // dtype.itemsize * 8


def worker_bytes(largest_case: int, device_bytes: int) -> int:
    """The most a timing worker holds: its kept cases' share of the device, or the largest
    case alone when that is more."""
    return max(largest_case, int(device_bytes * CASES_MEMORY_SHARE))


class KeptCases:
    """Cases other than the current one, least recently used first: each a tuple of
    (inputs, reference, leader_ms) under its (kernel, sizes, dtype, seed). `budget_bytes`:
    what the kept cases and the next one may hold together; on a GPU, by default, its share
    of the device (read at the first case: a worker starts before it touches the GPU).
    Without a GPU no limit: the interpreter's cases are small and in host memory."""

    def __init__(self, on_gpu: bool = False, budget_bytes: int | None = None):
        self.on_gpu = on_gpu
        self.budget_bytes = budget_bytes
        self.kept: OrderedDict = OrderedDict()

    def put(self, key, case: tuple) -> None:
        self.kept[key] = case

    def take(self, key, make: Callable[[], tuple], need: int = 0) -> tuple:
        """The case kept under `key`, or `make()`'s (about `need` bytes), after letting go
        of the least recently used ones beyond CASES_KEPT or beyond the budget with it (all
        of them when the new case does not fit beside them after all)."""
        if key in self.kept:
            return self.kept.pop(key)
        let_go = False
        while self.kept and (len(self.kept) >= CASES_KEPT or self._over_budget(need)):
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

    def held_bytes(self) -> int:
        """Bytes of the storages the kept cases' tensors hold."""
        return storage_bytes(list(self.kept.values()))

    def _over_budget(self, need: int) -> bool:
        if self.budget_bytes is None and self.on_gpu:
            # late: `tlab --help` imports no torch
            import torch

            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            self.budget_bytes = int(props.total_memory * CASES_MEMORY_SHARE)
        return self.budget_bytes is not None and self.held_bytes() + need > self.budget_bytes

    def _release(self) -> None:
        gc.collect()
        if self.on_gpu:
            # late: `tlab --help` imports no torch
            import torch

            torch.cuda.empty_cache()


def storage_bytes(value) -> int:
    """Bytes of the storages the tensors under `value` (tuples, dicts, lists) hold."""
    return sum(_storages(value, {}).values())


def _storages(value, found: dict) -> dict:
    """The storages under a case's tuples, dicts and lists, by address: a strided input is a
    view of a larger one, and views of one storage count it once."""
    if isinstance(value, dict):
        for v in value.values():
            _storages(v, found)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _storages(v, found)
    elif hasattr(value, "untyped_storage"):
        storage = value.untyped_storage()
        found[storage.data_ptr()] = storage.nbytes()
    return found


def _out_of_memory(err: BaseException) -> bool:
    # late: `tlab --help` imports no torch
    import torch

    return isinstance(err, (torch.cuda.OutOfMemoryError, MemoryError))
