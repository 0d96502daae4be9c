"""The sizes grammar users type for `--sizes`, and turning its sizes into a kernel's shapes.

A sizes text is a comma-separated list of terms:

    1024            one size
    512-8192        powers of two from 512 to 8192: 512, 1024, 2048, 4096, 8192
    512-2048:512    an arithmetic range: 512, 1024, 1536, 2048
    4096x4096x1024  an explicit shape, one size per dimension (any number of them)

Parsing is pure (it yields tuples of ints), so this module imports neither torch nor triton;
`Shape` names a tuple's sizes after a kernel's dimensions, and `to_shapes` maps parsed
tuples onto one kernel's named dimensions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tritonbench_lab.errors import TlabError

# A range may expand to at most this many sizes, and so may the whole text: a typo such as
# 1-1000000:1 should fail at once rather than queue a million benchmarks.
MAX_TERMS = 10_000

# No GPU tensor dimension comes near 2**40; anything bigger is a typo (and a bound keeps
# int() away from huge digit strings).
MAX_SIZE = 2**40

EXPECTED = "expected N, A-B (powers of two), A-B:STEP or AxBxC with positive integers"

# [0-9] rather than \d: \d also matches digits of other scripts, which int() would accept.
_INT = r"-?[0-9]+"  # signed, so that '-4' gets "must be positive" rather than "malformed"
_SINGLE = re.compile(_INT)
_RANGE = re.compile(rf"([0-9]+)-([0-9]+)(?::({_INT}))?")
_SHAPE = re.compile(rf"{_INT}(?:x{_INT})+")


_SHAPE_TEXT = re.compile(r"[0-9]+(?:x[0-9]+)*")


def shape_sizes(text: str) -> tuple[int, ...]:
    """'4096x4096x1024' (a stored shape) -> (4096, 4096, 1024); ValueError otherwise."""
    if not _SHAPE_TEXT.fullmatch(text):
        raise ValueError(f"shape {text!r} is not sizes joined by 'x'")
    return tuple(int(part) for part in text.split("x"))


def shape_text(sizes: Sequence[int]) -> str:
    """(4096, 4096, 1024) -> '4096x4096x1024': how shapes are stored and printed."""
    return "x".join(str(size) for size in sizes)


@dataclass(frozen=True)
class Shape:
    """Named problem sizes, e.g. Shape.of(M=4096, N=4096, K=1024); prints as 4096x4096x1024."""

    dims: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, **sizes: int) -> Shape:
        return cls(tuple(sizes.items()))

    def __getitem__(self, name: str) -> int:
        for key, value in self.dims:
            if key == name:
                return value
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.dims)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple([v for _, v in self.dims])  # a list first: faster than a generator

    def __str__(self) -> str:
        return shape_text(self.sizes)


def parse_sizes(text: str) -> list[tuple[int, ...]]:
    """Parse a sizes text into size tuples, in the order given, without exact duplicates.

    Terms (whitespace around each is ignored):
        N          a positive integer -> (N,)
        A-B        powers of two from A to B inclusive -> (A,), (2A,), (4A,), ... while <= B.
                   When A is a power of two these are exactly the powers of two in [A, B];
                   when it is not, the range starts at A and doubles (3-20 -> 3, 6, 12).
        A-B:S      A, A+S, A+2S, ... while <= B (B is included when reached); S > 0.
        AxBxC      an explicit shape -> (A, B, C); any number of x-separated integers.

    Every size must be in 1..2**40, and no range (nor the whole text) may expand to more
    than MAX_TERMS sizes. Anything else raises TlabError with a one-line message that
    quotes the bad term.
    """
    if not text.replace(",", "").strip():
        raise TlabError(f"no sizes in {text!r}: {EXPECTED}")
    sizes: dict[tuple[int, ...], None] = {}  # a dict keeps first-seen order and drops repeats
    for raw in text.split(","):
        term = raw.strip()
        if not term:
            raise TlabError(f"empty size term '' in {text!r} (a stray comma?): {EXPECTED}")
        for size in _expand(term, text):
            sizes[size] = None
        if len(sizes) > MAX_TERMS:
            raise TlabError(f"sizes in {text!r} expand to more than {MAX_TERMS:,} values")
    return list(sizes)


def _expand(term: str, text: str) -> list[tuple[int, ...]]:
    """The size tuples of one stripped, non-empty term."""
    if _SINGLE.fullmatch(term):
        return [(_number(term, term, text),)]
    if _SHAPE.fullmatch(term):
        return [tuple(_number(part, term, text) for part in term.split("x"))]
    match = _RANGE.fullmatch(term)
    if not match:
        raise _bad(term, text, EXPECTED)
    return _range(match, term, text)


def _bad(term: str, text: str, reason: str) -> TlabError:
    return TlabError(f"bad size term {term!r} in {text!r}: {reason}")


def _number(digits: str, term: str, text: str, what: str = "sizes") -> int:
    """One size (or step) of a term as a positive int no bigger than MAX_SIZE."""
    if digits.startswith("-"):
        raise _bad(term, text, f"{what} must be positive integers")
    # Compare digit counts before calling int(): a 5000-digit term must not reach int().
    too_large = _bad(term, text, f"too large: {what} must be at most 2**40 ({MAX_SIZE})")
    if len(digits.lstrip("0")) > len(str(MAX_SIZE)):
        raise too_large
    value = int(digits)
    if value == 0:
        raise _bad(term, text, f"{what} must be positive integers")
    if value > MAX_SIZE:
        raise too_large
    return value


def _range(match: re.Match, term: str, text: str) -> list[tuple[int, ...]]:
    """A-B (powers of two: doubling from A) or A-B:STEP (arithmetic)."""
    start, end = _number(match[1], term, text), _number(match[2], term, text)
    if start > end:
        raise _bad(term, text, f"the range is reversed ({start} > {end}); write {end}-{start}")
    if match[3] is None:
        # Doubling from start; at most 41 values since every size is <= 2**40.
        values = []
        while start <= end:
            values.append(start)
            start *= 2
        return [(v,) for v in values]
    step = _number(match[3], term, text, what="steps")
    count = (end - start) // step + 1
    if count > MAX_TERMS:
        raise _bad(term, text, f"the range expands to {count:,} values, more than {MAX_TERMS:,}")
    return [(v,) for v in range(start, end + 1, step)]


def to_shapes(
    sizes: Sequence[tuple[int, ...]],
    dims: tuple[str, ...],
    from_size: Callable[[int], Shape],
    kernel: str,
) -> list[Shape]:
    """Map parsed sizes onto `kernel`'s dimensions `dims`, keeping order, dropping repeats.

    A single size goes through `from_size` (matmul: n -> M=N=K=n; a row kernel: n -> 8192
    rows of n columns); a tuple with one size per dimension names them in order; any other
    length is a TlabError that says which forms the kernel takes.
    """
    shapes: dict[Shape, None] = {}  # '4096' and '4096x4096x4096' may name the same shape
    for size in sizes:
        if len(size) == 1:
            shape = from_size(size[0])
        elif len(size) == len(dims):
            shape = Shape(tuple(zip(dims, size, strict=True)))
        else:
            text = "x".join(str(v) for v in size)
            accepted = (f"a single size ({dims[0]})" if len(dims) == 1 else
                        f"{'x'.join(dims)} ({len(dims)} sizes) or a single size")
            raise TlabError(
                f"shape {text!r} has {len(size)} sizes but {kernel} shapes are {accepted}")
        shapes[shape] = None
    return list(shapes)
