"""The kernel contract: dtypes, shapes, throughput and the completeness check (a spec is
checked when it is made, so every spec that exists is complete)."""

import dataclasses

import pytest
import torch

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.matmul import SPEC as MATMUL
from tritonbench_lab.spec import (
    GBPS,
    TFLOPS,
    Cost,
    KernelSpec,
    Shape,
    dtype_name,
    parse_dtype,
    throughput,
)


def test_parse_dtype_accepts_names_and_aliases():
    assert parse_dtype("bf16") is torch.bfloat16
    assert parse_dtype(" FP16 ") is torch.float16
    assert parse_dtype("float32") is torch.float32
    assert dtype_name(torch.bfloat16) == "bf16"


def test_parse_dtype_rejects_unknown_names_listing_the_accepted():
    with pytest.raises(TlabError, match="unknown dtype 'bf17': accepted are fp32, fp16, bf16"):
        parse_dtype("bf17")


def test_shape_prints_and_indexes_by_name():
    shape = Shape.of(M=4096, N=2048, K=512)
    assert str(shape) == "4096x2048x512"
    assert shape["N"] == 2048 and shape.names == ("M", "N", "K")
    assert MATMUL.shape(1, 2, 3) == Shape.of(M=1, N=2, K=3)
    with pytest.raises(TlabError, match="3 sizes"):
        MATMUL.shape(1, 2)


def test_throughput_units():
    cost = Cost(flops=2 * 10**12, bytes=4 * 10**9)
    assert throughput(cost, TFLOPS, ms=1000.0) == pytest.approx(2.0)
    assert throughput(cost, GBPS, ms=2.0) == pytest.approx(2000.0)


def test_an_incomplete_spec_is_refused_naming_every_missing_piece_at_once():
    """All of a spec's problems in one line, not only the first: a user fixing a kernel module
    should not have to load it once per problem."""
    fields = {f.name: getattr(MATMUL, f.name) for f in dataclasses.fields(KernelSpec)}
    fields.update(baselines={}, metric="furlongs", default_shapes=())
    with pytest.raises(TlabError) as err:
        KernelSpec(**fields)
    message = str(err.value)
    assert message.startswith("kernel spec 'matmul' is incomplete: ") and "\n" not in message
    problems = message.split(": ", 1)[1].split("; ")
    assert len(problems) == 3, problems
    # in the contract's groups' order: what it is, how it is judged, which shapes
    for phrase, problem in zip(("metric must be", "baselines is empty", "default_shapes is empty"),
                               problems, strict=True):
        assert problem.startswith(phrase), problems


@pytest.mark.parametrize("change, phrase", [
    ({"name": "Mat Mul"}, "lower-case identifier"),
    ({"baselines": {}}, "baselines is empty"),
    ({"tolerance": {torch.float32: MATMUL.tolerance[torch.float32]}}, "no tolerance for fp16, bf16"),
    ({"default_shapes": ()}, "default_shapes is empty"),
    ({"small_shapes": (Shape.of(rows=1, cols=2),)}, "small_shapes must be Shapes with dims"),
    ({"metric": "furlongs"}, "metric must be"),
    ({"launch": None}, "launch is not callable"),
    ({"dtypes": (torch.float64,)}, "dtypes must be"),
    ({"shape_of": "M, N, K"}, "shape_of is not callable"),
])
def test_incomplete_specs_are_refused_with_the_missing_piece(change, phrase):
    fields = {f.name: getattr(MATMUL, f.name) for f in dataclasses.fields(KernelSpec)}
    fields.update(change)
    with pytest.raises(TlabError, match=phrase):
        KernelSpec(**fields)


def test_a_stored_config_is_completed_by_the_one_rule_or_refused_naming_what_is_wrong():
    from tritonbench_lab.kernels.softmax import SPEC as SOFTMAX

    before_split = {"ROWS": 1, "num_warps": 4}  # written before PER_SM, SPLIT, ... existed
    completed = SOFTMAX.complete(before_split)
    assert list(completed) == list(SOFTMAX.space.params)
    assert {k: completed[k] for k in SOFTMAX.space.added} == dict(SOFTMAX.space.added)
    with pytest.raises(TlabError, match=r"lacks BLOCK_N, BLOCK_K, GROUP_M, num_stages"):
        MATMUL.complete({"BLOCK_M": 64, "num_warps": 4})  # never-added parameters missing
    with pytest.raises(TlabError, match="has unknown SPLIT_K"):
        MATMUL.complete({**MATMUL.space.default, "SPLIT_K": 2})


def test_bind_is_the_specs_own_else_its_modules_else_none():
    """`bound` gives the launcher `ops` calls: the spec's `bind`, else the kernel module's
    `bind` function (the built-in row kernels and matmul), else None (matmul_fp8 has none)."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.kernels import softmax as softmax_module

    softmax = get_spec("softmax")
    seen = []
    own = dataclasses.replace(softmax, name="own_bind", bind=lambda c: seen.append(c) or "mine")
    assert own.bound({"ROWS": 1, "num_warps": 4}) == "mine"
    assert seen == [softmax.complete({"ROWS": 1, "num_warps": 4})]  # completed first
    assert softmax.bind is None and callable(softmax.bound(softmax.space.default))
    assert softmax_module.bind is not None  # what `bound` found
    assert get_spec("matmul_fp8").bound(get_spec("matmul_fp8").space.default) is None
    with pytest.raises(TlabError, match="bind is not callable"):
        dataclasses.replace(softmax, bind="not a function")
