"""ops.prepare_linear: an nn.Linear whose output width no tile divides (an LM head's odd
vocabulary), its weight padded once, computed at the padded width through ops.matmul and
returned as a view; right against nn.Linear whichever of tlab's kernel and the op runs."""

import pytest
import torch
import torch.nn.functional as F
from helpers.backend import INTERPRETING
from helpers.fixture_results import winner, write_winners
from helpers.ops_state import ops_reading

from tritonbench_lab import ops, tuned
from tritonbench_lab.errors import TlabError
from tritonbench_lab.runtime import dispatch

A = "BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3 TMA=0"
SLUG = "interpreter" if INTERPRETING else tuned.current_gpu_slug()
DEVICE = "cpu" if INTERPRETING else "cuda"


def linear(in_features, out_features, bias=True, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(in_features, out_features, bias=bias).to(DEVICE)


def random(*shape, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(DEVICE)


@pytest.fixture
def untuned(tmp_path, monkeypatch):
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        yield


@pytest.fixture
def tuned_at_padded(tmp_path, monkeypatch):
    """TEST DATA: tlab's kernel 2x the op at 24x128x40, the product of 24 rows of 40 with a
    67-wide layer padded to 128 columns."""
    write_winners(tmp_path / SLUG / "matmul.csv", [
        winner("24x128x40", A, dtype="fp32", p50_ms=1.0, op_p50_ms=2.0)])
    with ops_reading(monkeypatch, tmp_path):
        yield


@pytest.mark.parametrize("out_features, bias, lead", [
    (67, True, (24,)),  # odd: padded to 128
    (67, False, (2, 3, 4)),  # leading dims kept
    (1, True, (5,)),  # one column
    (64, False, (7,)),  # a multiple already: nothing added
])
def test_a_prepared_linear_is_the_linear(untuned, out_features, bias, lead):
    layer = linear(40, out_features, bias)
    prepared = ops.prepare_linear(layer)
    x = random(*lead, 40)
    with torch.inference_mode():
        y = prepared(x)
    assert y.shape == (*lead, out_features)
    torch.testing.assert_close(y, layer(x).detach(), rtol=1e-5, atol=1e-5)
    assert prepared.padded.shape == (40, -(-out_features // 64) * 64)


def test_the_output_is_a_view_of_the_padded_product(untuned):
    prepared = ops.prepare_linear(linear(40, 67, bias=False))
    with torch.inference_mode():
        y = prepared(random(24, 40))
    assert y.shape == (24, 67) and y.stride() == (128, 1)


def test_tlab_kernel_runs_at_the_padded_shape_where_it_is_tuned(tuned_at_padded):
    """The decision is made at the padded shape (24x128x40), the one computed."""
    layer = linear(40, 67, bias=False)
    prepared = ops.prepare_linear(layer.weight)
    x = random(24, 40)
    with torch.inference_mode():
        y = prepared(x)
    assert dispatch.bound_launch("matmul", torch.float32, (24, 128, 40),
                                 x.get_device()) is not None
    torch.testing.assert_close(y, F.linear(x, layer.weight).detach(), rtol=1e-4, atol=1e-4)


def test_with_a_bias_the_padded_product_is_torch_addmm_even_where_the_kernel_is_tuned(
        tuned_at_padded, monkeypatch):
    """A bias goes into the GEMM's epilogue (torch.addmm at the padded width, its bias padded
    too), not into a pass after tlab's kernel; the output is still a view."""
    layer = linear(40, 67)
    prepared = ops.prepare_linear(layer)
    assert prepared.bias.shape == (128,) and torch.count_nonzero(prepared.bias[67:]) == 0
    products = []
    real_addmm = torch.addmm
    monkeypatch.setattr(ops, "matmul", lambda *a: products.append("ops.matmul"))
    monkeypatch.setattr(torch, "addmm", lambda *a: products.append("addmm") or real_addmm(*a))
    x = random(24, 40)
    with torch.inference_mode():
        y = prepared(x)
    assert products == ["addmm"] and y.stride() == (128, 1)
    torch.testing.assert_close(y, F.linear(x, layer.weight, layer.bias).detach(),
                               rtol=1e-4, atol=1e-4)


def test_the_padded_weight_is_a_copy_made_once(untuned):
    layer = linear(40, 67)
    prepared = ops.prepare_linear(layer)
    before = prepared.padded.clone()
    with torch.no_grad():
        layer.weight.add_(1.0)
    assert torch.equal(prepared.padded, before) and prepared.padded.is_contiguous()
    assert not prepared.padded.requires_grad
    assert torch.count_nonzero(prepared.padded[:, 67:]) == 0


def test_a_prepared_linear_compiles_without_a_graph_break(untuned):
    prepared = ops.prepare_linear(linear(40, 67))
    x = random(24, 40)
    explained = torch._dynamo.explain(prepared)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    with torch.inference_mode():
        torch.testing.assert_close(torch.compile(prepared, fullgraph=True)(x), prepared(x))


@pytest.mark.parametrize("weight, multiple", [(torch.ones(5), 64), (torch.ones(3, 5), 0)])
def test_a_weight_that_is_not_a_matrix_is_refused_in_one_line(weight, multiple):
    with pytest.raises(TlabError, match="prepare_linear takes a 2-D weight"):
        ops.prepare_linear(weight, multiple=multiple)
