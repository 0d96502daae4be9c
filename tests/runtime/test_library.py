"""The ops in compiled models and under autograd: every op registered as torch.ops.tlab.<name>
with the PyTorch op's shapes as its fake; a block calling ops compiles with fullgraph=True and
no graph break, runs tlab's kernel inside the graph where the configs say so, per shape of a
dynamic dimension, and goes through torch.export; where autograd needs a result, the
PyTorch op, with the PyTorch op's gradient. On CPU tensors in Triton's interpreter."""

import pytest
import torch
import torch.nn.functional as F
from helpers.backend import INTERPRETING
from helpers.compiled import targets as _targets
from helpers.compiled import traced as _traced
from helpers.fixture_results import winner, write_winners
from helpers.ops_state import ops_reading
from torch._subclasses.fake_tensor import FakeTensorMode

from tritonbench_lab import ops
from tritonbench_lab.runtime import library

pytestmark = pytest.mark.skipif(not INTERPRETING, reason="CPU tensors: the interpreter's test")

ROWS, COLS = 24, 64
LAYERNORM = "ROWS=1 num_warps=4 TILE_COLS=0"


@pytest.fixture
def tuned_layernorm(tmp_path, monkeypatch):
    """TEST DATA: layernorm fp32 tuned in the interpreter at 24 and 48 rows of 64, where
    tlab's kernel beat the op 2x."""
    write_winners(tmp_path / "interpreter" / "layernorm.csv", [
        winner(f"{rows}x{COLS}", LAYERNORM, kernel="layernorm", dtype="fp32", p50_ms=1.0,
               op_p50_ms=2.0) for rows in (ROWS, 2 * ROWS)])
    with ops_reading(monkeypatch, tmp_path):
        yield tmp_path


def _inputs(rows=ROWS, requires_grad=False):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(rows, COLS, generator=gen)
    w = 1 + 0.1 * torch.randn(COLS, generator=gen)
    b = 0.1 * torch.randn(COLS, generator=gen)
    return [t.requires_grad_(requires_grad) for t in (x, w, b)]


def _block(x, w, b):
    h = ops.layernorm(x, w, b)
    return ops.add(ops.softmax(h), h)


FAKE_CASES = {
    "matmul": lambda: (torch.randn(5, 3), torch.randn(3, 7)),
    "matmul_gelu": lambda: (torch.randn(5, 3), torch.randn(3, 7), torch.randn(7), "tanh"),
    "softmax": lambda: (torch.randn(5, 9),),
    "rmsnorm": lambda: (torch.randn(5, 9), torch.randn(9), 1e-6),
    "add_rmsnorm": lambda: (torch.randn(5, 9), torch.randn(9), 1e-6, torch.randn(5, 9)),
    "layernorm": lambda: (torch.randn(5, 9), torch.randn(9), torch.randn(9), 1e-5),
    "rope": lambda: (torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8), torch.randn(6, 4),
                     torch.randn(6, 4)),
    "add": lambda: (torch.randn(5, 9), torch.randn(5, 9)),
}


@pytest.mark.parametrize("name", sorted(library.SCHEMAS))
def test_every_op_is_registered_and_its_fake_has_the_ops_shapes(name):
    op = getattr(torch.ops.tlab, name)
    args = FAKE_CASES[name]()
    real = op(*args)
    with FakeTensorMode() as mode:
        fake = op(*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args))
    real, fake = (t if isinstance(t, tuple) else (t,) for t in (real, fake))
    assert [(t.shape, t.dtype) for t in fake] == [(t.shape, t.dtype) for t in real]


OPAQUE = {"tlab.layernorm_eager.default", "tlab.softmax_eager.default", "tlab.add_eager.default"}


def test_a_block_compiles_whole_and_runs_tlabs_kernel_inside_the_graph(tuned_layernorm):
    x, w, b = _inputs()
    explained = torch._dynamo.explain(_block)(x, w, b)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    # a static shape is decided while tracing: the opaque node where tlab's kernel runs
    # (layernorm, tuned here), the PyTorch op itself, for the compiler to fuse, elsewhere
    out, traced = _traced(_block, (x, w, b))
    assert traced & OPAQUE == {"tlab.layernorm_eager.default"}
    assert "aten._softmax.default" in traced
    torch.testing.assert_close(out, _block(x, w, b))
    compiled = torch.compile(_block, fullgraph=True, dynamic=False)
    torch.testing.assert_close(compiled(x, w, b), _block(x, w, b))
    assert ops.bound_launch("layernorm", torch.float32, (ROWS, COLS), -1) is not None


def test_a_dynamic_dimension_is_decided_per_shape_it_takes(tuned_layernorm):
    _, traced = _traced(_block, _inputs(), dynamic=True)
    assert OPAQUE <= traced  # each decided when the graph runs, per shape
    compiled = torch.compile(_block, fullgraph=True, dynamic=True)
    for rows in (ROWS, 2 * ROWS, 3 * ROWS):
        x, w, b = _inputs(rows)
        torch.testing.assert_close(compiled(x, w, b), _block(x, w, b))
    plans = {rows: ops.bound_launch("layernorm", torch.float32, (rows, COLS), -1)
             for rows in (ROWS, 2 * ROWS, 3 * ROWS)}
    assert plans[ROWS] is not None and plans[2 * ROWS] is not None  # tuned there
    assert plans[3 * ROWS] is None  # 72 rows: another alignment class, the op


class _Block(torch.nn.Module):
    def forward(self, x, w, b):
        return _block(x, w, b)


def test_torch_export_keeps_the_ops_and_decomposes_them_where_tlabs_kernel_does_not_run(
        tuned_layernorm):
    exported = torch.export.export(_Block(), tuple(_inputs()))
    assert {"tlab.layernorm.default", "tlab.softmax.default", "tlab.add.default"} <= _targets(
        exported.graph)
    assert _targets(exported.run_decompositions().graph) & OPAQUE == {
        "tlab.layernorm_eager.default"}


def test_torch_export_with_a_dynamic_dimension_keeps_every_registered_op():
    rows = torch.export.Dim("rows", min=2)
    exported = torch.export.export(_Block(), tuple(_inputs()),
                                   dynamic_shapes=({0: rows}, None, None))
    assert OPAQUE <= _targets(exported.run_decompositions().graph)
    torch.testing.assert_close(exported.module()(*_inputs(2 * ROWS)), _block(*_inputs(2 * ROWS)))


@pytest.mark.parametrize("op, torch_op", [
    (lambda x, w, b: ops.layernorm(x, w, b), lambda x, w, b: F.layer_norm(x, (COLS,), w, b)),
    (lambda x, w, b: ops.rmsnorm(x, w), lambda x, w, b: F.rms_norm(x, (COLS,), w, 1e-6)),
    (lambda x, w, b: ops.softmax(x * w), lambda x, w, b: torch.softmax(x * w, -1)),
    (lambda x, w, b: ops.add(x, x * w), lambda x, w, b: x + x * w),
    (lambda x, w, b: ops.matmul(x, x.T * w.sum()), lambda x, w, b: x @ (x.T * w.sum())),
], ids=["layernorm", "rmsnorm", "softmax", "add", "matmul"])
def test_where_autograd_needs_a_result_the_op_gives_it_and_its_gradient(tuned_layernorm, op,
                                                                         torch_op):
    mine, theirs = _inputs(requires_grad=True), _inputs(requires_grad=True)
    out = op(*mine)
    assert out.grad_fn is not None
    out.square().sum().backward()
    torch_op(*theirs).square().sum().backward()
    for a, b in zip(mine, theirs, strict=True):
        torch.testing.assert_close(a.grad, b.grad)


def test_under_inference_mode_tlabs_kernel_runs(tuned_layernorm):
    x, w, b = _inputs(requires_grad=True)  # a model's parameters require grad
    with torch.inference_mode():
        torch.testing.assert_close(ops.layernorm(x, w, b), F.layer_norm(x, (COLS,), w, b))
    assert ops.bound_launch("layernorm", torch.float32, (ROWS, COLS), -1) is not None
    ops.clear()
    ops.layernorm(x, w, b)  # grad enabled: autograd's, the op, decided without a plan
    with pytest.raises(KeyError):
        ops.bound_launch("layernorm", torch.float32, (ROWS, COLS), -1)


MATMUL_TMA = ("BLOCK_M=64 BLOCK_N=64 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3 "
              "TMA=1 STREAM_K=1")


@pytest.mark.parametrize("off_default_stream", [True, False])
def test_the_registered_matmul_keeps_no_scratch_off_the_default_stream(
        tmp_path, monkeypatch, off_default_stream):
    """CUDA graph trees warm up and record on a stream of their own and refuse a tensor made
    there that outlives the call without being an output: the persistent kernel's hand-over
    buffers, kept per stream eagerly, are dropped there (simulated: CPU tensors have no
    streams)."""
    from tritonbench_lab.kernels import matmul_persistent
    from tritonbench_lab.runtime import in_graphs

    write_winners(tmp_path / "interpreter" / "matmul.csv",
                  [winner("96x80x72", MATMUL_TMA, dtype="fp32", p50_ms=1.0, op_p50_ms=2.0)])
    kept = {}
    monkeypatch.setattr(matmul_persistent, "_STREAM_K_BUFFERS", kept)
    monkeypatch.setattr(in_graphs, "off_default_stream", lambda: off_default_stream)
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(96, 72, generator=gen), torch.randn(72, 80, generator=gen)
    with ops_reading(monkeypatch, tmp_path):
        torch.testing.assert_close(torch.ops.tlab.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
        assert ops.bound_launch("matmul", torch.float32, (96, 80, 72), -1).tma
    assert (len(kept) == 0) == off_default_stream


def test_addmm_in_a_graph_is_torch_addmm_even_where_matmuls_kernel_runs(tmp_path, monkeypatch):
    """ops.addmm is torch.addmm (tlab's matmul has no bias epilogue): the traced graph holds
    aten.addmm for Inductor, at a shape where the matmul's kernel is tuned 2x the op too."""
    write_winners(tmp_path / "interpreter" / "matmul.csv",
                  [winner("33x40x24", MATMUL_TMA.replace("TMA=1", "TMA=0"), dtype="fp32",
                          p50_ms=1.0, op_p50_ms=2.0)])
    gen = torch.Generator().manual_seed(0)
    bias = torch.randn(40, generator=gen)
    with ops_reading(monkeypatch, tmp_path):
        a, b = torch.randn(33, 24, generator=gen), torch.randn(24, 40, generator=gen)
        out, traced = _traced(ops.addmm, (bias, a, b))
        torch.testing.assert_close(out, torch.addmm(bias, a, b), rtol=1e-4, atol=1e-4)
        assert "aten.addmm.default" in traced and not any("tlab" in t for t in traced)
        _, traced = _traced(ops.matmul, (a, b))
        assert "tlab.matmul_eager.default" in traced  # the same shape's matmul: tlab's kernel


@pytest.mark.parametrize("cudagraphs", [False, True], ids=["compiled", "reduce-overhead"])
def test_a_graph_runs_tlabs_kernel_only_where_its_own_rule_says(tmp_path, monkeypatch,
                                                                cudagraphs):
    """TEST DATA: layernorm 2x the op on the GPU but host-bound called eagerly (50 us of
    launch against the op's 8): a compiled graph leaves the op to Inductor, one captured in
    CUDA graphs (Inductor's cudagraphs option, on for mode="reduce-overhead") runs tlab's."""
    write_winners(tmp_path / "interpreter" / "layernorm.csv", [
        winner(f"{ROWS}x{COLS}", LAYERNORM, kernel="layernorm", dtype="fp32", p50_ms=0.003,
               op_p50_ms=0.006, host_ms=0.050, op_host_ms=0.008)])
    x, w, b = _inputs()
    with ops_reading(monkeypatch, tmp_path), torch._inductor.config.patch(
            {"triton.cudagraphs": cudagraphs}):
        out, traced = _traced(_block, (x, w, b))
    assert ("tlab.layernorm_eager.default" in traced) == cudagraphs
    assert ("aten.native_layer_norm.default" in traced) != cudagraphs
    torch.testing.assert_close(out, _block(x, w, b))


def test_a_compile_cache_never_hands_back_a_graph_decided_on_other_configs(tmp_path,
                                                                           monkeypatch):
    """torch.compile's caches key a graph by what dynamo traced, and the decisions are made
    after that: the registered ops carry a hash of the configs (dispatch.tuned_state), so the
    same block compiled again once the configs changed is decided again, not loaded.
    TEST DATA: layernorm at ROWS x COLS, first 2x the op (tlab's kernel), then half (the op)."""
    import os

    from tritonbench_lab import tuned

    x, w, b = _inputs()
    ran = []
    path = tmp_path / "interpreter" / "layernorm.csv"
    with ops_reading(monkeypatch, tmp_path):
        for second, op_p50 in enumerate((2.0, 0.5)):
            write_winners(path, [winner(f"{ROWS}x{COLS}", LAYERNORM, kernel="layernorm",
                                        dtype="fp32", p50_ms=1.0, op_p50_ms=op_p50)])
            os.utime(path, ns=(10**18 + second, 10**18 + second))  # apart, however coarse
            tuned.clear_cache()  # the file is read again ...
            ops.plan("layernorm", torch.float32, (ROWS, COLS), -1)  # ... and the choice
            torch._dynamo.reset()  # dynamo's in-memory code goes; the compile caches stay
            library.opaque_calls.clear()
            compiled = torch.compile(_block, fullgraph=True, dynamic=False)
            torch.testing.assert_close(compiled(x, w, b), _block(x, w, b))
            ran.append(library.opaque_calls["layernorm"])
    assert ran == [1, 0]


def test_layernorm_without_a_weight_or_bias_is_the_op_at_a_tuned_shape_too(tuned_layernorm):
    """nn.LayerNorm(bias=False) and elementwise_affine=False pass None: tlab's kernel takes
    both, so the op, eagerly and compiled; and the shape's next call with both still
    decides (no memo of the op for it)."""
    from tritonbench_lab.runtime import dispatch

    x, w, b = _inputs()
    for weight, bias in ((w, None), (None, b), (None, None)):
        want = F.layer_norm(x, (COLS,), weight, bias)
        torch.testing.assert_close(ops.layernorm(x, weight, bias), want)
        compiled = torch.compile(ops.layernorm, fullgraph=True)
        torch.testing.assert_close(compiled(x, weight, bias), want)
    assert not [key for key in dispatch.op_only if key[0] == "layernorm"]
    library.opaque_calls.clear()
    torch.testing.assert_close(torch.compile(_block, fullgraph=True)(x, w, b), _block(x, w, b))
    assert library.opaque_calls["layernorm"] == 1  # tlab's kernel's node, as tuned


def test_recording_around_a_model_compiled_before_records_its_shapes(tmp_path, monkeypatch):
    """A graph traced before the block holds its static shapes' choices (untuned here: the op,
    fused, calling nothing of ops): record_shapes makes compiled models trace anew, so they
    record."""
    from tritonbench_lab.data.records import Called
    from tritonbench_lab.data.store import read_table
    from tritonbench_lab.runtime import recording

    def block(x):
        return ops.add(ops.softmax(x), x)

    x = _inputs()[0]
    path = tmp_path / "calls.csv"
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        compiled = torch.compile(block, fullgraph=True, dynamic=False)
        want = compiled(x)
        try:
            with ops.record_shapes(path):
                torch.testing.assert_close(compiled(x), want)
        finally:
            recording.stop()
    assert [(r.kernel, r.shape) for r in read_table(path, Called)] == [
        ("softmax", f"{ROWS}x{COLS}"), ("add", str(ROWS * COLS))]
