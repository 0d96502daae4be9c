"""The sizes grammar: what it accepts, what it rejects (and how it says so), and shapes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tritonbench_lab.errors import TlabError
from tritonbench_lab.shapes import MAX_TERMS, parse_sizes, to_shapes
from tritonbench_lab.spec import Shape


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1024", [(1024,)]),
        ("512-8192", [(512,), (1024,), (2048,), (4096,), (8192,)]),
        ("512-2048:512", [(512,), (1024,), (1536,), (2048,)]),
        ("4096x4096x1024", [(4096, 4096, 1024)]),
        ("8192x1024", [(8192, 1024)]),
        # Not a power of two: start there and double.
        ("3-20", [(3,), (6,), (12,)]),
        # The end is included only when a step lands on it.
        ("512-2000:512", [(512,), (1024,), (1536,)]),
        ("7-7", [(7,)]),
        (" 1024 ,  2048x64 ", [(1024,), (2048, 64)]),
        (str(2**40), [(2**40,)]),  # the largest size allowed
    ],
)
def test_accepted_terms(text, expected):
    assert parse_sizes(text) == expected


def test_order_is_kept_and_repeats_dropped():
    # 1024 comes from both the single term and the range; its first place wins.
    assert parse_sizes("4096, 1024, 512-2048, 4096") == [(4096,), (1024,), (512,), (2048,)]
    # A 1-tuple and a 3-tuple are different sizes even when they name the same number.
    assert parse_sizes("64,64x64x64,64") == [(64,), (64, 64, 64)]


@pytest.mark.parametrize(
    ("text", "bad", "says"),
    [
        ("", "''", "no sizes"),
        ("   ", "'   '", "no sizes"),
        (", ,", "', ,'", "no sizes"),
        ("512,,1024", "''", "stray comma"),
        ("abc", "'abc'", "expected N, A-B"),
        ("8192-512", "'8192-512'", "reversed"),
        ("0", "'0'", "positive"),
        ("-4", "'-4'", "positive"),
        ("-512", "'-512'", "positive"),
        ("0-8", "'0-8'", "positive"),
        ("512-", "'512-'", "expected N, A-B"),
        ("1.5", "'1.5'", "expected N, A-B"),
        ("512-8192:0", "'512-8192:0'", "positive"),
        ("512-8192:-2", "'512-8192:-2'", "positive"),
        ("4096x", "'4096x'", "expected N, A-B"),
        ("x4096", "'x4096'", "expected N, A-B"),
        ("4096x0x3", "'4096x0x3'", "positive"),
        ("1e3", "'1e3'", "expected N, A-B"),
        ("1-100000:1", "'1-100000:1'", "more than 10,000"),
        (str(2**40 + 1), repr(str(2**40 + 1)), "too large"),
        ("9" * 5000, "'99999", "too large"),  # int() itself refuses strings this long
        ("1024, 2048 x 64", "'2048 x 64'", "expected N, A-B"),
        ("١٢٣", "'١٢٣'", "expected N, A-B"),  # Arabic-Indic digits: int() would take them
        ("64\n128", "'64\\n128'", "expected N, A-B"),  # the message stays on one line
    ],
)
def test_bad_input_is_a_one_line_error_quoting_the_term(text, bad, says):
    with pytest.raises(TlabError) as info:
        parse_sizes(text)
    message = str(info.value)
    assert "\n" not in message
    assert bad in message
    assert says in message


def test_the_whole_text_is_capped_too():
    # Each range is under the cap; together they are not.
    text = f"1-{MAX_TERMS}:1,{MAX_TERMS + 1}-{2 * MAX_TERMS}:1"
    with pytest.raises(TlabError, match="more than 10,000"):
        parse_sizes(text)


@given(st.text())
def test_any_text_parses_or_is_a_tlab_error(text):
    try:
        sizes = parse_sizes(text)
    except TlabError as error:
        assert "\n" not in str(error)
        return
    assert sizes
    assert all(isinstance(s, tuple) and s and all(type(v) is int and v > 0 for v in s) for s in sizes)


def _matmul(n: int) -> Shape:
    return Shape.of(M=n, N=n, K=n)


def test_to_shapes_uses_from_size_for_single_sizes_and_names_full_tuples():
    shapes = to_shapes(parse_sizes("1024,4096x4096x512"), ("M", "N", "K"), _matmul, "matmul")
    assert shapes == [Shape.of(M=1024, N=1024, K=1024), Shape.of(M=4096, N=4096, K=512)]
    assert [str(s) for s in shapes] == ["1024x1024x1024", "4096x4096x512"]

    def row_shape(n: int) -> Shape:
        return Shape.of(rows=8192, cols=n)

    rows = to_shapes([(2048,), (64, 512)], ("rows", "cols"), row_shape, "rmsnorm")
    assert rows == [Shape(dims=(("rows", 8192), ("cols", 2048))), Shape.of(rows=64, cols=512)]


def test_to_shapes_drops_shapes_named_twice():
    # '4096' and '4096x4096x4096' are different sizes but the same matmul shape.
    assert to_shapes([(4096,), (4096, 4096, 4096)], ("M", "N", "K"), _matmul, "matmul") == [
        Shape.of(M=4096, N=4096, K=4096)
    ]


def test_to_shapes_rejects_the_wrong_number_of_sizes():
    with pytest.raises(TlabError) as info:
        to_shapes([(4096, 1024)], ("M", "N", "K"), _matmul, "matmul")
    assert str(info.value) == (
        "shape '4096x1024' has 2 sizes but matmul shapes are MxNxK (3 sizes) or a single size"
    )
    # A one-dimensional kernel (add) takes single sizes only, and says so.
    with pytest.raises(TlabError) as info:
        to_shapes([(3, 4)], ("n",), lambda n: Shape.of(n=n), "add")
    assert str(info.value) == "shape '3x4' has 2 sizes but add shapes are a single size (n)"
