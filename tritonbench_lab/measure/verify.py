"""Is an output right? Compare with the float64 reference at the dtype's tolerance.

`check` never raises on a wrong answer: it returns a Verdict with the worst error, so a
sweep can record a `wrong_result` row and go on. NaN or inf anywhere fails (outputs are
poisoned with NaN before a launch, so an element the kernel never wrote fails too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tritonbench_lab.spec import Outputs, Tolerance

CHUNK_ELEMENTS = 1 << 26  # 64 Mi elements: 512 MB per float64 temporary


@dataclass(frozen=True)
class Verdict:
    ok: bool
    max_abs_error: float  # largest |out - ref| over all outputs (inf when non-finite)
    worst_ratio: float  # largest |out - ref| / (atol + rtol * |ref|); <= 1 passes
    detail: str  # empty when ok; otherwise what failed, in one line


def poison(outputs: Outputs) -> Outputs:
    """Fill floating outputs with NaN so that unwritten elements cannot pass verification."""
    for out in outputs:
        if out.is_floating_point():
            out.fill_(float("nan"))
    return outputs


def as_outputs(result: torch.Tensor | Sequence[torch.Tensor]) -> Outputs:
    """A callable's result as a tuple of tensors (baselines may return a bare tensor)."""
    return (result,) if isinstance(result, torch.Tensor) else tuple(result)


def check(outputs: Outputs, reference: Outputs, tolerance: Tolerance) -> Verdict:
    if len(outputs) != len(reference):
        return Verdict(False, float("inf"), float("inf"),
                       f"{len(outputs)} outputs, reference has {len(reference)}")
    max_abs = 0.0
    worst = 0.0
    for index, (out, ref) in enumerate(zip(outputs, reference, strict=True)):
        if out.shape != ref.shape:
            return Verdict(False, float("inf"), float("inf"),
                           f"output {index} has shape {tuple(out.shape)}, "
                           f"expected {tuple(ref.shape)}")
        flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
        # In chunks, so that checking a multi-GB output needs little memory beyond it.
        for start in range(0, flat_out.numel(), CHUNK_ELEMENTS):
            o = flat_out[start:start + CHUNK_ELEMENTS].double()
            r = flat_ref[start:start + CHUNK_ELEMENTS].double()
            error = (o - r).abs()
            finite = torch.isfinite(error)
            if not bool(finite.all()):
                bad = int((~torch.isfinite(flat_out.double() - flat_ref.double())).sum())
                return Verdict(False, float("inf"), float("inf"),
                               f"output {index} has {bad} NaN/inf element(s) (unwritten or overflow)")
            max_abs = max(max_abs, float(error.max()))
            worst = max(worst, float((error / (tolerance.atol + tolerance.rtol * r.abs())).max()))
    if worst > 1.0:
        return Verdict(False, max_abs, worst,
                       f"max |error| {max_abs:.3g} is {worst:.3g}x the tolerance "
                       f"(atol {tolerance.atol:g}, rtol {tolerance.rtol:g})")
    return Verdict(True, max_abs, worst, "")
