"""Is an output right? Compare with the float64 reference at the dtype's tolerance, and
make sure the kernel wrote nowhere else.

`check` never raises on a wrong answer: it returns a Verdict with the worst error, so a
sweep can record a `wrong_result` row and go on. NaN or inf anywhere fails (outputs are
poisoned with NaN before a launch, so an element the kernel never wrote fails too).

`guard` moves each output the harness hands to a launcher into a larger buffer, between
two margins of GUARD_BYTES filled with a sentinel (NaN for floats, a fixed byte for other
dtypes); `Guarded.overrun` says afterwards whether a margin changed. A store one element
past the end lands in memory the allocator owns but the tensor does not, so without the
margins nothing would see it. The kernel's module is not touched: the outputs it allocates
are copied into place as views of the same shape, strides and dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tritonbench_lab.spec import Outputs, Tolerance

CHUNK_ELEMENTS = 1 << 26  # 64 Mi elements: 512 MB per float64 temporary
# Each margin: wider than a 16-byte vector store (descriptor stores write up to the next
# 16-byte boundary, triton-lang/triton#11583), and a multiple of 128 bytes, so the output
# keeps the 128-byte alignment of the allocation it sits in (TMA needs 16).
GUARD_BYTES = 128
SENTINEL_BYTE = 0xA5  # the margins' bytes for dtypes without NaN


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


@dataclass(frozen=True)
class _Band:
    """One output's buffer: its margins are buffer[:start] and buffer[end:]."""

    buffer: torch.Tensor
    start: int
    end: int
    sentinel: torch.Tensor  # one element's bytes, as the margins hold them


@dataclass(frozen=True)
class Guarded:
    outputs: Outputs  # what the launcher gets: views into the guarded buffers
    bands: tuple[_Band | None, ...]  # None: an output left as it was (it shares storage)

    def overrun(self) -> str:
        """'' when every margin still holds its sentinel; else, in one line, the first
        output written outside itself and how many elements of each margin changed."""
        for index, band in enumerate(self.bands):
            if band is None:
                continue
            before = _changed(band.buffer[:band.start], band.sentinel)
            after = _changed(band.buffer[band.end:], band.sentinel)
            if before or after:
                where = [f"{_elements(before)} before it"] if before else []
                where += [f"{_elements(after)} after it"] if after else []
                side = "past the end" if after else "before the start"
                return f"wrote {side} of output {index} ({', '.join(where)})"
        return ""


def guard(outputs: Outputs, margin_bytes: int = GUARD_BYTES) -> Guarded:
    """Each output as a view into a buffer with a margin of `margin_bytes` (a multiple of
    128) before and after, every element poisoned (NaN for floats) and every margin holding
    its sentinel. An output that shares its storage with another is left in place: the kernel
    may rely on that."""
    storages = [out.untyped_storage().data_ptr() for out in outputs]
    placed, bands = [], []
    for out, storage in zip(outputs, storages, strict=True):
        if storages.count(storage) > 1:
            placed.append(out)
            bands.append(None)
            continue
        view, band = _banded(out, margin_bytes)
        placed.append(view)
        bands.append(band)
    poison(tuple(placed))
    return Guarded(tuple(placed), tuple(bands))


def _banded(out: torch.Tensor, margin_bytes: int) -> tuple[torch.Tensor, _Band]:
    margin = max(1, margin_bytes // out.element_size())
    span = 0 if out.numel() == 0 else 1 + sum(
        (size - 1) * stride for size, stride in zip(out.shape, out.stride(), strict=True))
    buffer = torch.empty(span + 2 * margin, dtype=out.dtype, device=out.device)
    if buffer.is_floating_point() or buffer.is_complex():
        buffer.fill_(float("nan"))
    else:
        buffer.view(torch.uint8).fill_(SENTINEL_BYTE)
    sentinel = buffer[:1].clone().view(torch.uint8)
    view = buffer.as_strided(out.shape, out.stride(), storage_offset=margin)
    return view, _Band(buffer, margin, margin + span, sentinel)


def _elements(count: int) -> str:
    return f"{count} element{'s' if count != 1 else ''}"


def _changed(margin: torch.Tensor, sentinel: torch.Tensor) -> int:
    """How many elements of a margin no longer hold the sentinel's bytes."""
    raw = margin.contiguous().view(torch.uint8).reshape(margin.numel(), -1)
    return int((raw != sentinel).any(dim=1).sum())


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
