"""rope against float64 torch on awkward shapes, three layouts of q and k, and configs of its
space; a wrong rotation fails the same check."""

import pytest
import torch
from helpers.kernel_cases import check_default_shapes, configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.rope import SPEC, rope, rope_tables, torch_rope
from tritonbench_lab.measure.verify import check, poison
from tritonbench_lab.space import HOPPER
from tritonbench_lab.spec import Shape

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]
LAYOUTS = ("fused", "contiguous", "seq_major")
AWKWARD = [
    ((1, 1, 5, 80), "fused"),  # one token; 5 heads; half 40: no vector of 4 is aligned
    ((1, 37, 3, 64), "fused"),  # odd seq, 3 heads: 192 elements a position (128 ragged)
    ((2, 5, 3, 96), "seq_major"),  # half 48: partners 48 apart; seq stride > batch stride
    ((1, 9, 4, 2), "contiguous"),  # head_dim 2: one pair a head, 8 elements a position
    ((2, 7, 5, 128), "fused"),  # a real head width, 5 heads
    ((3, 3, 2, 80), "seq_major"),
    ((1, 11, 6, 48), "contiguous"),  # 6 heads, half 24
]


def _shape(dims) -> Shape:
    return Shape.of(batch=dims[0], seq=dims[1], heads=dims[2], head_dim=dims[3])


def _inputs(dims, layout: str, dtype, device: str, seed: int) -> dict:
    """SPEC.make_inputs for views of a fused qkv; otherwise separate q and k, contiguous or
    stored seq-major ([seq, batch, heads, head_dim], seen batch-first)."""
    shape = _shape(dims)
    inputs = SPEC.make_inputs(shape, dtype, device, seed)
    if layout == "fused":
        return inputs
    gen = torch.Generator(device=device).manual_seed(seed)
    batch, seq, heads, head_dim = dims
    if layout == "contiguous":
        q, k = (torch.randn(dims, generator=gen, device=device).to(dtype) for _ in range(2))
    else:
        q, k = (torch.randn((seq, batch, heads, head_dim), generator=gen, device=device)
                .to(dtype).transpose(0, 1) for _ in range(2))
    return {**inputs, "q": q, "k": k}


def _ragged(shape: Shape) -> dict:
    """A block that does not divide a position's heads x head_dim elements: the last program
    of each position is partly past it (masked, not spilling into the next position)."""
    token = shape["heads"] * shape["head_dim"]
    block = next(b for b in SPEC.space.params["BLOCK"] if token % b)
    return {"BLOCK": block, "num_warps": 1}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dims, layout", AWKWARD,
                         ids=lambda c: "x".join(map(str, c)) if isinstance(c, tuple) else c)
def test_rope_awkward_shapes_and_layouts(dims, layout, dtype, device):
    shape = _shape(dims)
    inputs = _inputs(dims, layout, dtype, device, seed=sum(dims))
    q = inputs["q"]
    assert q.is_contiguous() == (layout == "contiguous" or dims[:2] == (1, 1))
    assert (q.stride(1) > q.stride(0)) == (layout == "seq_major" and dims[0] > 1)
    ragged = _ragged(shape)
    assert (shape["heads"] * shape["head_dim"]) % ragged["BLOCK"]
    kept, _ = SPEC.space.prune(dict(shape.dims), dtype.itemsize, HOPPER)
    widest = max(kept, key=lambda c: (c["BLOCK"], c["num_warps"]))
    configs = configs_for(SPEC, shape, dtype)
    configs += [c for c in (widest, ragged) if c not in configs]
    assert len(configs) >= 3
    for config in configs:
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("q_heads, k_heads", [(6, 2), (5, 1), (2, 3)],
                         ids=["gqa", "mqa", "k_wider"])
def test_rope_k_with_another_head_count(q_heads, k_heads, dtype, device):
    """Grouped-query attention: k (and v) have fewer heads than q, as views of one fused
    projection of batch x seq x (q_heads + 2 k_heads) x head_dim. One launch walks q's
    elements and rotates k's where a position has them; k with more heads is walked as q."""
    batch, seq, head_dim = 2, 7, 64
    gen = torch.Generator(device=device).manual_seed(q_heads)
    fused = torch.randn((batch, seq, q_heads + 2 * k_heads, head_dim), generator=gen,
                        device=device).to(dtype)
    q, k = fused[:, :, :q_heads], fused[:, :, q_heads:q_heads + k_heads]
    cos, sin = rope_tables(seq, head_dim, 77, device)
    inputs = {"q": q, "k": k, "cos": cos, "sin": sin}
    reference = SPEC.reference(inputs)
    # Blocks of 128 and 64 divide k's position, 256 straddles its end (q_heads 6: 384
    # elements, k's 128), 512 holds the whole of either.
    for block, warps in ((128, 1), (256, 2), (64, 2), (512, 4)):
        got = rope(q, k, cos, sin, {"BLOCK": block, "num_warps": warps})
        assert got[0].shape == q.shape and got[1].shape == k.shape
        assert got[0].is_contiguous() and got[1].is_contiguous()
        verdict = check(got, reference, SPEC.tolerance[dtype])
        assert verdict.ok, f"BLOCK={block}: {verdict.detail}"


def test_rope_copies_a_strided_last_dim_rather_than_misreading_it(device):
    inputs = _inputs((2, 3, 2, 64), "contiguous", torch.float32, device, seed=4)
    wide = torch.randn((2, 3, 2, 128), device=device)
    inputs["q"] = wide[..., ::2]  # head_dim 64 with stride 2
    q_out, k_out = rope(inputs["q"], inputs["k"], inputs["cos"], inputs["sin"])
    assert q_out.is_contiguous() and q_out.shape == inputs["q"].shape
    assert check((q_out, k_out), SPEC.reference(inputs), SPEC.tolerance[torch.float32]).ok


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rope_torch_baseline_agrees_with_the_reference(dtype, device):
    """The eager formulation, which is also the function the compiled baseline compiles
    (torch.compile itself is left to the GPU test)."""
    assert SPEC.baselines["torch"] is torch_rope
    assert SPEC.baselines["compiled"].__doc__ == "torch.compile(torch_rope)"
    for layout in LAYOUTS:
        inputs = _inputs((2, 9, 3, 96), layout, dtype, device, seed=2)
        got = torch_rope(inputs)
        assert all(t.dtype == dtype for t in got)
        verdict = check(got, SPEC.reference(inputs), SPEC.tolerance[dtype])
        assert verdict.ok, f"{layout}: {verdict.detail}"


def test_a_wrong_rotation_fails_the_check(device):
    """The check can fail: turning the other way (the sign of sin flipped, as a mixed-up
    convention does) or by the angle of the next position is far outside the tolerance."""
    dims = (1, 5, 2, 64)
    inputs = _inputs(dims, "fused", torch.float32, device, seed=9)
    tolerance = SPEC.tolerance[torch.float32]
    reference = SPEC.reference(inputs)
    assert run_and_check(SPEC, inputs, SPEC.space.default, torch.float32).ok
    flipped = rope(inputs["q"], inputs["k"], inputs["cos"], -inputs["sin"])
    assert check(flipped, reference, tolerance).worst_ratio > 100
    cos, sin = rope_tables(dims[1] + 1, dims[3], 100, device)  # positions 100 .. 105
    at_100 = SPEC.reference({**inputs, "cos": cos[:-1], "sin": sin[:-1]})
    shifted = rope(inputs["q"], inputs["k"], cos[1:], sin[1:])
    assert check(shifted, at_100, tolerance).worst_ratio > 100
    # Poisoned outputs that a launch leaves unwritten (one head of k) fail as NaN.
    outputs = poison(SPEC.allocate_outputs(inputs))
    SPEC.launch(inputs, SPEC.space.default, outputs)
    outputs[1][:, :, -1] = float("nan")
    assert "NaN" in check(outputs, reference, tolerance).detail


def test_inputs_are_views_of_one_fused_qkv_and_tables_skip_position_zero(device):
    inputs = SPEC.make_inputs(_shape((2, 6, 3, 32)), torch.float16, device, seed=1)
    q, k = inputs["q"], inputs["k"]
    assert q.shape == (2, 6, 3, 32) and not q.is_contiguous()
    assert q.untyped_storage().data_ptr() == k.untyped_storage().data_ptr()
    assert k.data_ptr() - q.data_ptr() == 3 * 32 * q.element_size()  # the next slice of qkv
    assert inputs["cos"].dtype == torch.float32 and inputs["cos"].shape == (6, 16)
    assert inputs["sin"][0, 0].abs() > 0 and inputs["cos"][0, 0] < 1  # not position 0


def test_rope_cost_counts_q_k_both_outputs_and_the_tables():
    cost = SPEC.cost(_shape((2, 3, 4, 8)), torch.bfloat16)
    elements = 2 * 3 * 4 * 8
    assert cost.flops == 6 * elements
    assert cost.bytes == 4 * elements * 2 + 2 * 3 * 4 * 4


def test_a_single_size_is_the_sequence_length():
    assert SPEC.size_to_shape(2048) == _shape((1, 2048, 32, 128))
    assert SPEC.size_to_shape(100, interpreting=True) == _shape((1, 100, 2, 64))


def test_rope_rejects_bad_input(device):
    with pytest.raises(TlabError, match="even head_dim"):
        SPEC.check_shape(_shape((1, 4, 2, 63)))
    for dims in ((0, 4, 2, 64), (1, 0, 2, 64), (1, 4, 0, 64), (1, 4, 2, 0)):
        with pytest.raises(TlabError, match="positive sizes"):
            SPEC.check_shape(_shape(dims))
    inputs = _inputs((1, 4, 2, 64), "fused", torch.float32, device, seed=0)
    q, k, cos, sin = inputs["q"], inputs["k"], inputs["cos"], inputs["sin"]
    with pytest.raises(TlabError, match="even head_dim"):
        rope(q[..., :63], k[..., :63], cos, sin)
    with pytest.raises(TlabError, match="only the heads allowed to differ"):
        rope(q, k[:, :3], cos, sin)
    with pytest.raises(TlabError, match="only the heads allowed to differ"):
        rope(q[0], k[0], cos, sin)
    with pytest.raises(TlabError, match="only the heads allowed to differ"):
        rope(q, k.to(torch.float16), cos, sin)
    with pytest.raises(TlabError, match=r"sin must be float32 of shape \(4, 32\)"):
        rope(q, k, cos, sin[:3])
    with pytest.raises(TlabError, match="cos must be float32"):
        rope(q, k, cos.double(), sin)
    with pytest.raises(TlabError, match="outputs must be contiguous"):
        rope(q, k, cos, sin, q_out=torch.empty_like(q).transpose(1, 2))


def test_the_space_prunes_with_reasons_and_keeps_the_default():
    sizes = dict(_shape((1, 4096, 32, 128)).dims)
    kept, pruned = SPEC.space.prune(sizes, 2, HOPPER)
    why = [reason for _, reason in pruned]
    assert SPEC.space.default in kept and {"BLOCK": 4096, "num_warps": 8} in kept
    assert any("leaves some of the 256 threads idle" in w for w in why)
    assert any("more than 16 elements per thread" in w for w in why)
    assert all(32 * c["num_warps"] <= c["BLOCK"] <= 16 * 32 * c["num_warps"] for c in kept)
    # 3 heads of 64 (192 elements, padded to 256): blocks past 256 are all padding.
    kept, pruned = SPEC.space.prune(dict(_shape((2, 37, 3, 64)).dims), 2, HOPPER)
    assert max(c["BLOCK"] for c in kept) == 256
    assert any("BLOCK=512 exceeds a position's 3 x 64 = 192 elements (padded to 256)" in w
               for _, w in pruned)
    for shape in SPEC.default_shapes + SPEC.small_shapes + tuple(_shape(d) for d, _ in AWKWARD):
        assert SPEC.space.why_pruned(SPEC.space.default, dict(shape.dims), 2, HOPPER) is None


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rope_default_shapes_on_gpu(dtype, device):
    check_default_shapes(SPEC, dtype, device, seed=6)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rope_baselines_on_gpu(dtype, device):
    inputs = SPEC.make_inputs(SPEC.default_shapes[0], dtype, device, seed=7)
    reference = SPEC.reference(inputs)
    for name, baseline in SPEC.baselines.items():
        verdict = check(baseline(inputs), reference, SPEC.tolerance[dtype])
        assert verdict.ok, f"{name}: {verdict.detail}"


@pytest.mark.gpu
def test_rope_offsets_past_two_to_the_31(device):
    """q and k of a fused qkv of 3 x 65536 tokens of 32 x 128 heads: the last tokens sit
    past element 2^31, which 32-bit offsets would wrap."""
    inputs = SPEC.make_inputs(_shape((3, 65536, 32, 128)), torch.bfloat16, device, seed=8)
    q = inputs["q"]
    assert (q.shape[0] - 1) * q.stride(0) + (q.shape[1] - 1) * q.stride(1) > 2**31
    q_out, k_out = rope(q, inputs["k"], inputs["cos"], inputs["sin"])
    tail = {"q": q[-1:, -3:], "k": inputs["k"][-1:, -3:],
            "cos": inputs["cos"][-3:], "sin": inputs["sin"][-3:]}
    verdict = check((q_out[-1:, -3:], k_out[-1:, -3:]), SPEC.reference(tail),
                    SPEC.tolerance[torch.bfloat16])
    assert verdict.ok, verdict.detail
