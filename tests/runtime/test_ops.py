"""tritonbench_lab.ops: which of tlab's kernel and the PyTorch op each call runs, and why;
memoised choices that follow the configs file; correct results either way."""

import dataclasses
import os

import pytest
import torch
import torch.nn.functional as F
from helpers.backend import INTERPRETING
from helpers.fixture_results import winner, write_winners
from helpers.ops_state import ops_reading

from tritonbench_lab import ops, tuned
from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.rope import rotate_half_rope
from tritonbench_lab.ops import NEAR_MARGIN, decide
from tritonbench_lab.runtime import dispatch
from tritonbench_lab.shapes import shape_sizes

A = "BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3 TMA=0"
SLUG = "interpreter" if INTERPRETING else tuned.current_gpu_slug()


@pytest.fixture
def configs(tmp_path, monkeypatch):
    """TEST DATA: matmul fp32 winners: 1024^3 where tlab's kernel beat the op 2x, 4096^3
    where the op won, and 2048x2048x1024 where tlab ran just under NEAR_MARGIN times the op."""
    write_winners(tmp_path / SLUG / "matmul.csv", [
        winner("1024x1024x1024", A, dtype="fp32", p50_ms=1.0, op_p50_ms=2.0),
        winner("2048x2048x1024", A, dtype="fp32", p50_ms=1.0, op_p50_ms=NEAR_MARGIN - 0.01),
        winner("4096x4096x4096", A, dtype="fp32", p50_ms=1.0, op_p50_ms=0.9),
    ])
    with ops_reading(monkeypatch, tmp_path):
        yield tmp_path


@pytest.mark.parametrize("sizes, provider, phrase", [
    ((1024, 1024, 1024), "triton", "tuned here: 2.00x"),
    ((4096, 4096, 4096), "torch", "tuned here, and the PyTorch op was faster (0.90x)"),
    ((1024, 1024, 1040), "triton", "nearest tuned shape 1024x1024x1024: 2.00x"),
    ((1536, 1024, 1024), "triton", "nearest tuned shape 1024x1024x1024"),  # 1.5x away
    ((2048, 2048, 1040), "torch", "ran 1.09x the PyTorch op, less than the 1.10x"),
    ((512, 256, 512), "torch", "more than 2x away"),  # 1 + 2 + 1 octaves
    ((1000, 1000, 1000), "torch", "no fp32 shape of alignment class 8/8/8"),
])
def test_decide(configs, sizes, provider, phrase):
    choice = decide("matmul", torch.float32, sizes, gpu=SLUG)
    assert choice.provider == provider and phrase in choice.reason, choice
    assert (choice.config is not None) == (provider == "triton")


def test_decide_without_a_timed_op_or_a_file_calls_the_op(configs):
    write_winners(configs / SLUG / "matmul.csv", [winner("64x64x64", A, dtype="fp32")])
    tuned.clear_cache()
    choice = decide("matmul", torch.float32, (64, 64, 64), gpu=SLUG)
    assert choice.provider == "torch" and "not timed" in choice.reason
    assert decide("matmul", torch.float32, (64, 64, 64), gpu="no-such-gpu").provider == "torch"


# TEST DATA (ms): GPU times and host times of a call, kernel and op, at one tuned shape.
@pytest.mark.parametrize("times, eager, captured, phrase", [
    # a 3 us kernel launched in 50 us against a 6 us op launched in 8 us: the op, eagerly
    ((0.003, 0.006, 0.050, 0.008), "torch", "triton",
     "called eagerly 0.16x (a call's host time 50 us, the op's 8 us, each x2 for a slower host): "
     "eager calls run the op, calls captured in a CUDA graph tlab"),
    # an op of ten launches (the eager RoPE formula): tlab's kernel eagerly, not in a graph
    ((0.010, 0.009, 0.030, 0.300), "triton", "torch", "called eagerly 10.00x"),
    # long kernels: host times hide under GPU time, both choices alike
    ((1.000, 2.000, 0.050, 0.008), "triton", "triton", "called eagerly 2.00x"),
    # a tie called eagerly (both wait on their host) is not a win
    ((0.003, 0.006, 0.008, 0.008), "torch", "triton", "called eagerly 1.00x"),
    # a launch just longer than its kernel, against a GPU-bound op: ahead on this host
    # (26 us against 27), behind on one HOST_SLACK slower (52 us against 27): the op eagerly
    ((0.020, 0.027, 0.026, 0.010), "torch", "triton", "called eagerly 0.52x"),
])
def test_decide_weighs_host_time_for_eager_calls(configs, times, eager, captured, phrase):
    p50, op_p50, host, op_host = times
    write_winners(configs / SLUG / "matmul.csv", [winner(
        "1024x1024x1024", A, dtype="fp32", p50_ms=p50, op_p50_ms=op_p50, host_ms=host,
        op_host_ms=op_host)])
    tuned.clear_cache()
    choice = decide("matmul", torch.float32, (1024, 1024, 1024), gpu=SLUG)
    assert (choice.provider, choice.captured) == (eager, captured), choice
    assert phrase in choice.reason and choice.config == parse_config_text(A)
    assert choice.speedup == pytest.approx(op_p50 / p50)


def test_decide_needs_the_near_margin_on_eager_times_too(configs):
    """Near a tuned shape the eager lead must reach NEAR_MARGIN, as the GPU lead must."""
    write_winners(configs / SLUG / "matmul.csv", [winner(
        "1024x1024x1024", A, dtype="fp32", p50_ms=0.005, op_p50_ms=0.010, host_ms=0.020,
        op_host_ms=0.020 * (NEAR_MARGIN - 0.01))])  # eagerly 1.09x, on the GPU 2x
    tuned.clear_cache()
    near = decide("matmul", torch.float32, (1024, 1024, 1040), gpu=SLUG)
    here = decide("matmul", torch.float32, (1024, 1024, 1024), gpu=SLUG)
    assert (near.provider, near.captured) == ("torch", "triton")
    assert (here.provider, here.captured) == ("triton", "triton")


# TEST DATA (ms): a kernel's GPU time, the op's, the compiled op's (None: not timed), and
# the host times of a call of each (None: not recorded); what runs eagerly, captured, and in
# a compiled graph without and with CUDA graphs.
@pytest.mark.parametrize("kernel, times, expected, phrase", [
    # a matmul 2x the op but slower than the compiled op: the op in compiled graphs
    ("matmul", (1.0, 2.0, 0.9, None, None), ("triton", "triton", "torch", "torch"),
     "inside torch.compile 0.90x the fastest baseline timed (torch.compile's) (needs 1.10x): the "
     "op there"),
    # a matmul 1.05x both: eagerly tlab's, not in a compiled graph (Inductor fuses the op's
    # neighbours into it)
    ("matmul", (1.0, 1.05, 1.06, None, None), ("triton", "triton", "torch", "torch"),
     "inside torch.compile 1.05x the fastest baseline timed (the PyTorch op) (needs 1.10x)"),
    # a matmul ahead of both: tlab's kernel everywhere
    ("matmul", (1.0, 2.0, 1.5, None, None), ("triton",) * 4, "inside torch.compile 1.50x"),
    # a softmax 1.05x the op (and no compiled time): eagerly tlab's, not in a compiled graph
    ("softmax", (1.0, 1.05, None, None, None), ("triton", "triton", "torch", "torch"),
     "inside torch.compile 1.05x the PyTorch op (needs 1.10x)"),
    ("softmax", (1.0, 1.3, 1.2, None, None), ("triton",) * 4, "inside torch.compile 1.20x"),
    # host-bound eagerly, ahead on the GPU: tlab's kernel only where the graph is captured
    ("softmax", (0.003, 0.006, 0.005, 0.050, 0.008), ("torch", "triton", "torch", "triton"),
     "inside torch.compile 1.67x"),
    # ahead eagerly on a host twice slower (its launch 2 x 110 us against the op's 260 us of
    # GPU time), but its launch outlasts its own 200 us of GPU time there: not in a graph run
    # without CUDA graphs, whose other kernels' GPU time it would leave waiting
    ("matmul", (0.200, 0.260, 0.250, 0.110, 0.020), ("triton", "triton", "torch", "triton"),
     "not in a graph run without CUDA graphs: its launch (110 us, x2) outlasts its GPU time "
     "(200 us)"),
    # the same kernel launched in 100 us: hidden under its GPU time, in every graph
    ("matmul", (0.200, 0.260, 0.250, 0.100, 0.020), ("triton",) * 4, "inside torch.compile 1.25x"),
    # just under FUSED_MARGIN (1.0978x): rounded to two decimals it read "1.10x (needs 1.10x)"
    ("matmul", (0.200, 0.260, 0.21956, 0.100, 0.020), ("triton", "triton", "torch", "torch"),
     "inside torch.compile 1.098x the fastest baseline timed (torch.compile's) (needs 1.10x)"),
])
def test_decide_inside_a_compiled_graph(configs, kernel, times, expected, phrase):
    """Inside torch.compile the kernel stands against the faster of the op and its compiled
    form and must lead by FUSED_MARGIN (Inductor fuses the op with its neighbours); the eager
    or the captured rule must hold too."""
    p50, op_p50, compiled_p50, host, op_host = times
    config = A if kernel == "matmul" else "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1"
    shape = "1024x1024x1024" if kernel == "matmul" else "64x1000"
    row = winner(shape, config, dtype="fp32", kernel=kernel, p50_ms=p50, op_p50_ms=op_p50,
                 host_ms=host, op_host_ms=op_host)
    if compiled_p50 is not None:
        best = min(compiled_p50, op_p50)
        row = dataclasses.replace(row, best_baseline="compiled" if best < op_p50 else "torch",
                                  baseline_p50_ms=best, speedup=best / p50)
    write_winners(configs / SLUG / f"{kernel}.csv", [row])
    tuned.clear_cache()
    choice = decide(kernel, torch.float32, shape_sizes(shape), gpu=SLUG)
    assert (choice.provider, choice.captured, choice.compiled,
            choice.compiled_captured) == expected, choice
    assert phrase in choice.reason, choice.reason
    sizes, device = shape_sizes(shape), -1
    if INTERPRETING:  # the memo ops' registered ops read while a graph is traced
        dispatch.plan(kernel, torch.float32, sizes, device)
        assert [dispatch.in_compiled_graph(kernel, torch.float32, sizes, device, captured)
                for captured in (False, True)] == [e == "triton" for e in expected[2:]]


def test_near_a_tuned_shape_gpu_times_scale_with_the_work_and_host_times_do_not(configs):
    """At the tuned 1024^3 the kernel's launch (30 us; 60 on a host HOST_SLACK slower)
    hides its GPU lead (40 against 50 us): behind, eagerly. Twice the work makes both GPU
    times twice as long, past the host's: the 1.25x lead shows; half the work leaves the
    launch to set the pace."""
    write_winners(configs / SLUG / "matmul.csv", [winner(
        "1024x1024x1024", A, dtype="fp32", p50_ms=0.040, op_p50_ms=0.050, host_ms=0.030,
        op_host_ms=0.010)])
    tuned.clear_cache()
    here = decide("matmul", torch.float32, (1024, 1024, 1024), gpu=SLUG)
    larger = decide("matmul", torch.float32, (2048, 1024, 1024), gpu=SLUG)
    smaller = decide("matmul", torch.float32, (512, 1024, 1024), gpu=SLUG)
    assert (here.provider, here.eager_speedup) == ("torch", pytest.approx(50 / 60))
    assert (larger.provider, larger.eager_speedup) == ("triton", pytest.approx(1.25))
    assert "GPU times x2.00, this shape's work" in larger.reason
    assert (smaller.provider, smaller.eager_speedup) == ("torch", pytest.approx(25 / 60))
    assert here.captured == larger.captured == smaller.captured == "triton"


def test_configs_without_host_times_decide_eager_calls_by_gpu_time(configs):
    write_winners(configs / "some-gpu" / "matmul.csv",
                  [winner("1024x1024x1024", A, dtype="fp32", p50_ms=1.0, op_p50_ms=2.0)])
    choice = decide("matmul", torch.float32, (1024, 1024, 1024), gpu="some-gpu")
    assert choice.provider == choice.captured == "triton" and choice.eager_speedup is None
    assert "no host times recorded there, so eager calls go by GPU time too" in choice.reason
    assert "tlab host-times" in choice.reason


def test_the_interpreters_choice_does_not_ask_for_host_times(configs):
    """Host times are a GPU's: `tlab host-times` cannot run in the interpreter."""
    choice = decide("matmul", torch.float32, (1024, 1024, 1024), gpu="interpreter")
    assert choice.eager_speedup is None and "host-times" not in choice.reason


def test_ops_switch_per_call_between_eager_and_captured_choices(configs, device, monkeypatch):
    """One shape, two choices: each call runs the one of its mode, and each is correct."""
    write_winners(configs / SLUG / "softmax.csv", [winner(
        "33x1000", "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1", dtype="fp32", kernel="softmax",
        p50_ms=0.003, op_p50_ms=0.006, host_ms=0.050, op_host_ms=0.008)])
    tuned.clear_cache()
    x = torch.randn(33, 1000, generator=torch.Generator(device=device).manual_seed(1),
                    device=device)
    calls = []
    real_softmax = torch.softmax
    monkeypatch.setattr(torch, "softmax", lambda *a, **k: calls.append("op") or real_softmax(*a, **k))
    for capturing in (False, False, True, False):
        monkeypatch.setattr(dispatch, "_capturing", lambda device, capturing=capturing: capturing)
        torch.testing.assert_close(ops.softmax(x), real_softmax(x.double(), -1).float())
    # The first eager call runs tlab's kernel (compiled and loaded before any capture), the
    # next eager ones the op; the "captured" one tlab's kernel.
    assert calls == ["op", "op"]
    assert ops.bound_launch("softmax", x.dtype, (33, 1000), x.get_device()) is None
    assert ops.bound_launch("softmax", x.dtype, (33, 1000), x.get_device(), captured=True)


def _count_binds(monkeypatch, module):
    calls = []
    real = module.bind

    def bind(config):
        calls.append(config)
        return real(config)

    monkeypatch.setattr(module, "bind", bind)
    return calls


def test_ops_matmul_chooses_once_per_shape_and_follows_the_file(configs, device, monkeypatch):
    from tritonbench_lab.kernels import matmul as kernel

    binds = _count_binds(monkeypatch, kernel)
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(256, 64, generator=gen, device=device)  # 256x256x64: 8 octaves away
    b = torch.randn(64, 256, generator=gen, device=device)
    for _ in range(3):
        torch.testing.assert_close(ops.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert binds == []  # far from every tuned shape: the PyTorch op, decided once
    write_winners(configs / SLUG / "matmul.csv", [
        winner("256x256x64", A, dtype="fp32", p50_ms=1.0, op_p50_ms=3.0)])
    os.utime(configs / SLUG / "matmul.csv", (1, 1))  # a new mtime, whatever the clock
    tuned.clear_cache()
    for _ in range(3):
        c = ops.matmul(a, b)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-4, atol=1e-4)
    # the new file: tlab's kernel, bound once, under A completed by the one rule (A is from
    # before STREAM_K existed: completed with what the kernel did then)
    assert binds == [{**parse_config_text(A), "STREAM_K": 0}]


def test_ops_give_the_op_result_for_what_the_kernels_cannot_take(configs, device):
    x = torch.randn(5, 7, dtype=torch.float64, device=device)
    torch.testing.assert_close(ops.softmax(x), torch.softmax(x, -1))
    torch.testing.assert_close(ops.matmul(x, x.T), x @ x.T)
    w = torch.randn(7, dtype=torch.float64, device=device)
    torch.testing.assert_close(ops.rmsnorm(x, w), torch.nn.functional.rms_norm(x, (7,), w, 1e-6))
    batched = torch.randn(2, 3, 4, device=device)
    torch.testing.assert_close(ops.matmul(batched, batched.transpose(1, 2)),
                               batched @ batched.transpose(1, 2))


@pytest.mark.parametrize("rows, cols", [(1, 7), (7, 4097), (33, 1000)])
@pytest.mark.parametrize("tuned_rows", [False, True], ids=["untuned", "tuned"])
def test_ops_row_kernels_are_correct_either_way(configs, device, rows, cols, tuned_rows):
    if tuned_rows:  # tlab's kernel wins at exactly this shape in every row kernel's file
        for kernel, config in (("softmax", "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1"),
                               ("rmsnorm", "ROWS=1 num_warps=4"),
                               ("add_rmsnorm", "ROWS=1 num_warps=4")):
            write_winners(configs / SLUG / f"{kernel}.csv", [
                winner(f"{rows}x{cols}", config, dtype="fp32", kernel=kernel, op_p50_ms=2.0)])
        tuned.clear_cache()
    gen = torch.Generator(device=device).manual_seed(rows + cols)
    x = torch.randn(rows, cols, generator=gen, device=device)
    r = torch.randn(rows, cols, generator=gen, device=device)
    w = torch.randn(cols, generator=gen, device=device)
    torch.testing.assert_close(ops.softmax(x), torch.softmax(x.double(), -1).float())
    y = ops.rmsnorm(x, w)
    ref = torch.nn.functional.rms_norm(x.double(), (cols,), w.double(), 1e-6).float()
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    y, h = ops.rmsnorm(x, w, residual=r)
    torch.testing.assert_close(h, x + r)
    ref = torch.nn.functional.rms_norm((x + r).double(), (cols,), w.double(), 1e-6).float()
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    plans = [ops.bound_launch(k, x.dtype, (rows, cols), x.get_device())
             for k in ("softmax", "rmsnorm", "add_rmsnorm")]
    assert all((p is not None) == tuned_rows for p in plans)


def test_a_call_the_kernel_cannot_take_as_given_behaves_as_the_op_at_a_tuned_shape(configs, device):
    """At a shape where tlab's kernel wins, calls it cannot take as given go to the op and so
    behave as the op does: an fp32 residual beside fp16 rows (x + r promotes to fp32), a
    residual broadcast over the rows, and operands whose K differs (the op's own error)."""
    rows, cols = 7, 200
    for kernel in ("rmsnorm", "add_rmsnorm"):
        write_winners(configs / SLUG / f"{kernel}.csv", [
            winner(f"{rows}x{cols}", "ROWS=1 num_warps=4", dtype=dt, kernel=kernel,
                   op_p50_ms=2.0) for dt in ("fp16", "fp32")])
    write_winners(configs / SLUG / "matmul.csv", [
        winner("7x9x200", A, dtype="fp32", op_p50_ms=2.0)])
    tuned.clear_cache()
    gen = torch.Generator(device=device).manual_seed(5)
    x = torch.randn(rows, cols, generator=gen, device=device)
    w = torch.randn(cols, generator=gen, device=device)
    r32 = torch.randn(rows, cols, generator=gen, device=device)
    y, h = ops.rmsnorm(x.half(), w.half(), residual=r32)
    assert h.dtype == torch.float32 and y.dtype == torch.float32
    torch.testing.assert_close(h, x.half() + r32)
    row = torch.randn(cols, generator=gen, device=device)
    y, h = ops.rmsnorm(x, w, residual=row)
    torch.testing.assert_close(h, x + row)
    y, h = ops.rmsnorm(x, w, residual=r32)  # as given: tlab's fused kernel
    assert ops.bound_launch("add_rmsnorm", x.dtype, (rows, cols), x.get_device()) is not None
    torch.testing.assert_close(h, x + r32)
    b = torch.randn(201, 9, generator=gen, device=device)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ops.matmul(x, b)
    torch.testing.assert_close(ops.rmsnorm(x, None), torch.nn.functional.rms_norm(
        x, (cols,), None, 1e-6))  # no weight, as F.rms_norm takes


def test_activations_of_more_dims_run_as_their_rows(configs, device):
    """A model's (batch, seq, hidden) activations: contiguous, they are taken as their
    batch*seq rows, so a sweep of the recorded 2-D shape tunes them; the results are the
    op's, and the tuned kernel runs. A non-contiguous one goes to the op, right all the same."""
    rows, cols = 21, 200
    for kernel, config in (("softmax", "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1"),
                           ("rmsnorm", "ROWS=1 num_warps=4"),
                           ("add_rmsnorm", "ROWS=1 num_warps=4"),
                           ("layernorm", "ROWS=1 num_warps=4 TILE_COLS=0")):
        write_winners(configs / SLUG / f"{kernel}.csv", [
            winner(f"{rows}x{cols}", config, dtype="fp32", kernel=kernel, op_p50_ms=2.0)])
    write_winners(configs / SLUG / "matmul.csv", [
        winner(f"{rows}x64x{cols}", A, dtype="fp32", op_p50_ms=2.0)])
    tuned.clear_cache()
    gen = torch.Generator(device=device).manual_seed(3)
    x, r = (torch.randn(3, 7, cols, generator=gen, device=device) for _ in range(2))
    w, b = (torch.randn(cols, generator=gen, device=device) for _ in range(2))
    m = torch.randn(cols, 64, generator=gen, device=device)
    F = torch.nn.functional
    with torch.inference_mode():
        torch.testing.assert_close(ops.softmax(x), torch.softmax(x, -1))
        torch.testing.assert_close(ops.rmsnorm(x, w), F.rms_norm(x, (cols,), w, 1e-6),
                                   rtol=1e-4, atol=1e-4)
        y, h = ops.rmsnorm(x, w, residual=r)
        torch.testing.assert_close(h, x + r)
        torch.testing.assert_close(y, F.rms_norm(x + r, (cols,), w, 1e-6), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(ops.layernorm(x, w, b), F.layer_norm(x, (cols,), w, b),
                                   rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(ops.matmul(x, m), x @ m, rtol=1e-3, atol=1e-3)
        for kernel, sizes in (("softmax", (rows, cols)), ("rmsnorm", (rows, cols)),
                              ("add_rmsnorm", (rows, cols)), ("layernorm", (rows, cols)),
                              ("matmul", (rows, 64, cols))):
            assert ops.bound_launch(kernel, x.dtype, sizes, x.get_device()) is not None, kernel
        strided = x.transpose(0, 1)
        torch.testing.assert_close(ops.softmax(strided), torch.softmax(strided, -1))
        # matmul_gelu's op is torch.addmm, 2-D only: a strided or empty `a` of more dims was
        # a RuntimeError ("mat1 must be a matrix"), eagerly and (again) on the fast path
        bias = torch.randn(64, generator=gen, device=device)
        for a in (strided, x[:, :0]):
            for _ in range(2):
                torch.testing.assert_close(ops.matmul_gelu(a, m, bias), F.gelu(a @ m + bias),
                                           rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("call, phrase", [
    (("matmull", "fp32", "21x257x200"), "unknown kernel 'matmull'"),
    (("matmul", "fp32", "21x257"), "matmul shapes have 3 sizes"),
    (("matmul", torch.float64, "21x257x200"), "matmul does not take float64: it takes fp32"),
])
def test_explain_refuses_what_it_cannot_answer(call, phrase):
    with pytest.raises(TlabError, match=phrase):
        ops.explain(*call)


def test_without_a_gpu_or_the_interpreter_explain_says_the_op_as_ops_runs_it(configs,
                                                                              monkeypatch):
    """CPU tensors without TRITON_INTERPRET run the op (dispatch._choose); explain answered
    from the interpreter's configs that tlab's kernel would run."""
    if not INTERPRETING:
        pytest.skip("a machine without a GPU")
    write_winners(configs / SLUG / "softmax.csv", [
        winner("32x96", "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1", kernel="softmax", dtype="fp32",
               op_p50_ms=2.0)])
    tuned.clear_cache()
    assert ops.explain("softmax", "fp32", "32x96").provider == "triton"
    monkeypatch.setattr(dispatch, "triton_interpreting", lambda: False)
    choice = ops.explain("softmax", "fp32", "32x96")
    assert choice.provider == "torch" and "Triton's interpreter is off" in choice.reason
    ops.clear()
    x = torch.randn(32, 96)
    torch.testing.assert_close(ops.softmax(x), torch.softmax(x, -1))
    assert ops.bound_launch("softmax", torch.float32, (32, 96), -1) is None  # as it says


def test_in_the_interpreter_a_dtype_it_computes_wrong_takes_the_op(configs):
    """bf16 matmul rows (from a GPU's file copied here, say) never run in the interpreter,
    whose tl.dot returns garbage for bf16 (triton-lang/triton#11584): the op answers there."""
    if not INTERPRETING:
        pytest.skip("the interpreter's own rule")
    write_winners(configs / SLUG / "matmul.csv", [
        winner("21x64x200", A, dtype="bf16", op_p50_ms=2.0)])
    tuned.clear_cache()
    a = torch.randn(21, 200).bfloat16()
    b = torch.randn(200, 64).bfloat16()
    torch.testing.assert_close(ops.matmul(a, b), a @ b)
    assert ops.bound_launch("matmul", torch.bfloat16, (21, 64, 200), -1) is None


def test_explain_command_says_what_ops_would_call(configs):
    from typer.testing import CliRunner

    from tritonbench_lab.cli import app

    result = CliRunner().invoke(app, ["explain", "matmul", "--shape", "1024x1024x1024",
                                      "--dtype", "fp32", "--gpu-name", SLUG])
    assert result.exit_code == 0, result.output
    assert "tlab's kernel, BLOCK_M=32" in result.output and "tuned here: 2.00x" in result.output
    assert "; inside torch.compile tlab's kernel (" in result.output
    write_winners(configs / SLUG / "matmul.csv", [winner(
        "1024x1024x1024", A, dtype="fp32", p50_ms=0.003, op_p50_ms=0.006, host_ms=0.05,
        op_host_ms=0.008)])
    tuned.clear_cache()
    result = CliRunner().invoke(app, ["explain", "matmul", "--shape", "1024x1024x1024",
                                      "--dtype", "fp32", "--gpu-name", SLUG])
    assert result.exit_code == 0, result.output
    assert ("called eagerly the PyTorch op; in a CUDA graph tlab's kernel, BLOCK_M=32"
            in result.output), result.output
    assert ("inside torch.compile the PyTorch op, with CUDA graphs tlab's kernel"
            in result.output), result.output
    result = CliRunner().invoke(app, ["explain", "matmul", "--shape", "64x64", "--gpu-name", SLUG])
    assert result.exit_code != 0


def test_explain_at_a_shape_the_kernel_refuses_says_the_op_and_why(configs):
    """ops calls the PyTorch op where the kernel's check_shape refuses a shape, whatever is
    tuned near it: explain says so (a size of 0 is refused as bad input: test_bad_input)."""
    from typer.testing import CliRunner

    from tritonbench_lab.cli import app

    write_winners(configs / SLUG / "matmul.csv", [winner("32768x65536x32768", A, dtype="fp32",
                                                         p50_ms=1.0, op_p50_ms=2.0)])
    tuned.clear_cache()
    result = CliRunner().invoke(app, ["explain", "matmul", "--shape", "32768x65536x65536",
                                      "--dtype", "fp32", "--gpu-name", SLUG])
    assert result.exit_code == 0, result.output
    assert ("the PyTorch op (tlab's kernel does not take the shape: matmul operands must each "
            "have fewer than 2^31 elements") in " ".join(result.output.split())


@pytest.mark.gpu
def test_ops_are_capturable_in_a_cuda_graph(configs, device):
    write_winners(configs / SLUG / "softmax.csv", [winner(
        "8192x4096", "ROWS=1 num_warps=16 PER_SM=0 SPLIT=1", dtype="fp32", kernel="softmax",
        op_p50_ms=2.0)])
    tuned.clear_cache()
    x = torch.randn(8192, 4096, device=device)
    ops.softmax(x)  # decided and compiled outside the capture
    assert ops.bound_launch("softmax", x.dtype, (8192, 4096), x.get_device()) is not None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.softmax(x)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.testing.assert_close(y, torch.softmax(x, -1))


@pytest.mark.gpu
def test_a_graph_captures_tlabs_kernel_where_eager_calls_take_the_op(configs, device,
                                                                      monkeypatch):
    """Host-bound eagerly, faster on the GPU: warm-up calls run the op (after the first, which
    loads tlab's kernel), the captured graph runs tlab's kernel, and its replay is right."""
    write_winners(configs / SLUG / "softmax.csv", [winner(
        "64x1000", "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1", dtype="fp32", kernel="softmax",
        p50_ms=0.003, op_p50_ms=0.006, host_ms=0.050, op_host_ms=0.008)])
    tuned.clear_cache()
    x = torch.randn(64, 1000, device=device)
    ops.softmax(x)  # the first call: tlab's kernel, compiled and loaded here
    calls = []
    real_softmax = torch.softmax
    monkeypatch.setattr(torch, "softmax", lambda *a, **k: calls.append("op") or real_softmax(*a, **k))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph advises
        for _ in range(3):
            ops.softmax(x)
    torch.cuda.current_stream().wait_stream(side)
    assert calls == ["op"] * 3
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.softmax(x)
    assert calls == ["op"] * 3  # captured: tlab's kernel
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.testing.assert_close(y, real_softmax(x, -1))


@pytest.mark.parametrize("tuned_here", [False, True], ids=["untuned", "tuned"])
def test_ops_layernorm_rope_add_are_correct_either_way(configs, device, tuned_here):
    """The same calls through tlab's kernels (a winner at exactly these shapes, 2x the op)
    and through the PyTorch ops (no winner): the float64 answer either way."""
    rows, cols = 7, 1000
    q_shape = (2, 5, 3, 64)  # batch, seq, heads, head_dim
    n = 4097
    if tuned_here:
        for kernel, shape, config in (
                ("layernorm", f"{rows}x{cols}", "ROWS=1 num_warps=4 TILE_COLS=0"),
                ("rope", "x".join(map(str, q_shape)), "BLOCK=128 num_warps=1"),
                ("add", str(n), "BLOCK=1024 num_warps=4")):
            write_winners(configs / SLUG / f"{kernel}.csv", [
                winner(shape, config, dtype="fp32", kernel=kernel, op_p50_ms=2.0)])
        tuned.clear_cache()
    gen = torch.Generator(device=device).manual_seed(5)
    x = torch.randn(rows, cols, generator=gen, device=device)
    w = torch.randn(cols, generator=gen, device=device)
    b = torch.randn(cols, generator=gen, device=device)
    ref = torch.nn.functional.layer_norm(x.double(), (cols,), w.double(), b.double(), 1e-5)
    torch.testing.assert_close(ops.layernorm(x, w, b), ref.float(), rtol=1e-4, atol=1e-4)

    # q and k as views of one fused qkv tensor: strided heads and tokens
    qkv = torch.randn(q_shape[0], q_shape[1], 3, q_shape[2], q_shape[3], generator=gen,
                      device=device)
    q, k = qkv[:, :, 0], qkv[:, :, 1]
    angles = torch.rand(q_shape[1], q_shape[3] // 2, generator=gen, device=device) * 6.0
    cos, sin = angles.cos(), angles.sin()
    from tritonbench_lab.kernels.rope import rope_reference

    q_ref, k_ref = rope_reference({"q": q, "k": k, "cos": cos, "sin": sin})
    q_out, k_out = ops.rope(q, k, cos, sin)
    torch.testing.assert_close(q_out, q_ref.float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k_out, k_ref.float(), rtol=1e-5, atol=1e-5)
    k_one = qkv[:, :, 1, :1]  # one k head beside q's three (multi-query attention)
    _, k_one_ref = rope_reference({"q": q, "k": k_one, "cos": cos, "sin": sin})
    q_out, k_out = ops.rope(q, k_one, cos, sin)
    torch.testing.assert_close(q_out, q_ref.float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k_out, k_one_ref.float(), rtol=1e-5, atol=1e-5)
    for _ in range(2):  # the second call takes the fast path: the same refusal
        with pytest.raises(ValueError, match="batch x seq x heads x head_dim"):
            ops.rope(q[0], k[0], cos, sin)  # no batch: it broadcast to 4-D before

    u, v = torch.randn(n, generator=gen, device=device), torch.randn(n, generator=gen, device=device)
    torch.testing.assert_close(ops.add(u, v), (u.double() + v.double()).float())
    torch.testing.assert_close(ops.add(u, 2.5), u + 2.5)  # a number: the op, never a key
    w = u.clone().requires_grad_()
    ops.add(w, 2.5).sum().backward()
    torch.testing.assert_close(w.grad, torch.ones_like(u))

    plans = [ops.bound_launch("layernorm", x.dtype, (rows, cols), x.get_device()),
             ops.bound_launch("rope", q.dtype, q_shape, q.get_device()),
             ops.bound_launch("add", u.dtype, (n,), u.get_device())]
    assert all((p is not None) == tuned_here for p in plans)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("tuned_here", [False, True], ids=["untuned", "tuned"])
def test_ops_matmul_gelu_is_correct_either_way(configs, device, approximate, tuned_here):
    """nn.Linear + GELU through tlab's fused kernel (a winner at exactly this ragged shape,
    2x the op, of the form's own kernel) and through F.gelu(torch.addmm(...)): the float64
    answer either way; a bias the kernel cannot take goes to the op, not to an error."""
    M, N, K = 33, 40, 24
    kernel = "matmul_gelu" if approximate == "none" else "matmul_gelu_tanh"
    if tuned_here:
        for config in (A + " STREAM_K=0", A.replace("TMA=0", "TMA=1") + " STREAM_K=0"):
            write_winners(configs / SLUG / f"{kernel}.csv", [
                winner(f"{M}x{N}x{K}", config, dtype="fp32", kernel=kernel, op_p50_ms=2.0)])
            tuned.clear_cache()
            ops.clear()
            _check_matmul_gelu(device, M, N, K, approximate, tuned_here)
    else:
        _check_matmul_gelu(device, M, N, K, approximate, tuned_here)


def _check_matmul_gelu(device, M, N, K, approximate, tuned_here):
    gen = torch.Generator(device=device).manual_seed(M + N + K)
    a = torch.randn(M, K, generator=gen, device=device)
    b = torch.randn(K, N, generator=gen, device=device)
    bias = torch.randn(N, generator=gen, device=device)
    ref = torch.nn.functional.gelu(a.double() @ b.double() + bias.double(),
                                   approximate=approximate).float()
    torch.testing.assert_close(ops.matmul_gelu(a, b, bias, approximate), ref,
                               rtol=1e-4, atol=1e-4)
    out = torch.full((M, N), float("nan"), device=device)
    assert ops.matmul_gelu(a, b, bias, approximate, out=out) is out
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    kernel = "matmul_gelu" if approximate == "none" else "matmul_gelu_tanh"
    assert (ops.bound_launch(kernel, a.dtype, (M, N, K), a.get_device()) is not None) == tuned_here
    strided_bias = torch.randn(2 * N, generator=gen, device=device)[::2]  # not contiguous
    ref = torch.nn.functional.gelu(a.double() @ b.double() + strided_bias.double(),
                                   approximate=approximate).float()
    torch.testing.assert_close(ops.matmul_gelu(a, b, strided_bias, approximate), ref,
                               rtol=1e-4, atol=1e-4)


def test_ops_matmul_gelu_refuses_an_unknown_form(configs, device):
    a = torch.randn(4, 4, device=device)
    with pytest.raises(ValueError, match="accepted are 'none' and 'tanh'"):
        ops.matmul_gelu(a, a, torch.randn(4, device=device), approximate="sigmoid")


def test_a_shape_the_kernels_spec_refuses_goes_to_the_op_without_a_decision(monkeypatch):
    """Which shapes a kernel can take is its spec's check_shape (softmax: at most 2^24
    columns), read once per shape; the configs are not even consulted there."""
    from tritonbench_lab.kernels import get_spec

    def decide(*args, **kwargs):
        raise AssertionError("decided a shape the spec refuses")

    monkeypatch.setattr(dispatch, "decide", decide)
    too_wide = (1, 2**24 + 1)
    with pytest.raises(TlabError, match="at most"):
        get_spec("softmax").check_shape(get_spec("softmax").shape(*too_wide))
    assert dispatch._choose("softmax", torch.float32, too_wide, -1, None) == (None, None)
    assert dispatch._choose("add", torch.float32, (0,), -1, None) == (None, None)


@pytest.mark.parametrize("shape", ["1024x1024x1024", (1024, 1024, 1024), [1024, 1024, 1024],
                                   {"K": 1024, "M": 1024, "N": 1024}])
def test_explain_takes_a_shape_in_any_of_its_spellings(configs, shape):
    choice = ops.explain("matmul", torch.float32, shape, gpu=SLUG)
    assert choice.shape == "1024x1024x1024" and choice.uses_triton


def test_explain_takes_a_shape_object_and_an_int_and_refuses_the_rest(configs):
    from tritonbench_lab.shapes import Shape

    assert ops.explain("matmul", torch.float32, Shape.of(M=1024, N=1024, K=1024),
                       gpu=SLUG).uses_triton
    assert ops.explain("add", torch.float32, 4097, gpu=SLUG).shape == "4097"
    with pytest.raises(TlabError, match="a shape is '4096x4096x512'"):
        ops.explain("add", torch.float32, 4097.0, gpu=SLUG)


def test_where_the_shape_is_tuned_but_another_operand_is_not_the_kernels_the_op_runs(configs,
                                                                                     device):
    """The decision is keyed on the first operand (so the op's path checks little); the
    other operands are checked before tlab's kernel runs: a broadcast, a weight of another
    dtype, a k of more heads than q all get the op, and its answer."""
    for kernel, shape, config in (
            ("layernorm", "7x64", "ROWS=1 num_warps=4 TILE_COLS=0"),
            ("rope", "2x5x3x64", "BLOCK=128 num_warps=1"),
            ("add", "4097", "BLOCK=1024 num_warps=4"),
            ("rmsnorm", "7x64", "ROWS=1 num_warps=4")):
        write_winners(configs / SLUG / f"{kernel}.csv", [
            winner(shape, config, dtype="fp32", kernel=kernel, op_p50_ms=2.0)])
    tuned.clear_cache()
    gen = torch.Generator(device=device).manual_seed(9)
    u = torch.randn(4097, generator=gen, device=device)
    one = torch.randn(1, generator=gen, device=device)
    torch.testing.assert_close(ops.add(u, one), u + one)  # broadcast
    assert ops.bound_launch("add", u.dtype, (4097,), u.get_device()) is not None  # tuned
    x = torch.randn(7, 64, generator=gen, device=device)
    w64 = torch.randn(64, generator=gen, device=device).double()  # a weight of another dtype
    torch.testing.assert_close(ops.rmsnorm(x, w64),
                               torch.nn.functional.rms_norm(x, (64,), w64, 1e-6))
    assert ops.bound_launch("rmsnorm", x.dtype, (7, 64), x.get_device()) is not None
    q = torch.randn(2, 5, 3, 64, generator=gen, device=device)
    k_other = torch.randn(2, 5, 4, 64, generator=gen, device=device)  # more heads than q
    angles = torch.rand(5, 32, generator=gen, device=device)
    for got, want in zip(ops.rope(q, k_other, angles.cos(), angles.sin()),
                         rotate_half_rope(q, k_other, angles.cos(), angles.sin()), strict=True):
        torch.testing.assert_close(got, want)


def test_ops_addmm_is_torch_addmm_even_where_matmuls_kernel_is_tuned(configs, device,
                                                                     monkeypatch):
    """nn.Linear's product and bias: torch.addmm itself (cuBLAS adds the bias in its
    epilogue; tlab's matmul would need a pass over C for it), at a shape where matmul's
    kernel is tuned 2x the op; the float64 answer for a bias of N values and one of M x N.
    TEST DATA: matmul fp32 at 33x40x24, tlab's kernel 2x the op."""
    M, N, K = 33, 40, 24
    write_winners(configs / SLUG / "matmul.csv",
                  [winner(f"{M}x{N}x{K}", A, dtype="fp32", op_p50_ms=2.0)])
    tuned.clear_cache()
    ops.clear()
    called = []
    real_addmm = torch.addmm
    monkeypatch.setattr(torch, "addmm", lambda *args: called.append(1) or real_addmm(*args))
    gen = torch.Generator(device=device).manual_seed(7)
    a = torch.randn(M, K, generator=gen, device=device)
    b = torch.randn(K, N, generator=gen, device=device)
    for bias in (torch.randn(N, generator=gen, device=device),
                 torch.randn(M, N, generator=gen, device=device)):
        ref = (bias.double() + a.double() @ b.double()).float()
        torch.testing.assert_close(ops.addmm(bias, a, b), ref, rtol=1e-4, atol=1e-4)
    assert len(called) == 2
    ops.matmul(a, b)
    assert ops.bound_launch("matmul", a.dtype, (M, N, K), a.get_device()) is not None


def test_the_fast_path_asks_about_a_capture_only_where_the_kernel_runs_captured():
    """op_eagerly: nothing to ask where the op runs captured too (or on the CPU, never
    captured); where tlab's kernel runs captured, whether the stream is capturing; no fast
    path while the eager plan is tlab's kernel or not made yet."""
    launch = object()
    key = ("layernorm", torch.float32, (1, 3072))
    try:
        for device, pair, asks in [
                (0, (None, None), dispatch.never),
                (0, (None, launch), dispatch.stream_capturing),
                (-1, (None, launch), dispatch.never),
                (0, (launch, launch), None), (0, (launch, None), None)]:
            dispatch._plans[(*key, device)] = pair
            assert dispatch.op_eagerly(*key, device) is asks, (device, pair)
        assert dispatch.op_eagerly(*key, 5) is None  # no plan made for device 5
    finally:
        dispatch.clear()


def test_a_fast_call_that_must_ask_takes_the_decision_while_a_graph_is_captured(
        tmp_path, monkeypatch, device):
    """A key whose check says a graph is being captured goes through the decision (plan),
    which picks the captured launch; otherwise straight to the op."""
    gen = torch.Generator(device=device).manual_seed(3)
    x = torch.randn(3, 40, generator=gen, device=device)
    w, b = torch.randn(40, generator=gen, device=device), torch.randn(40, generator=gen,
                                                                      device=device)
    fast = ("layernorm", x.shape, x.dtype, x.get_device())
    expected = F.layer_norm(x, (40,), w, b)
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        torch.testing.assert_close(ops.layernorm(x, w, b), expected)
        assert dispatch.op_only[fast] is dispatch.never  # no configs: the op everywhere
        planned = []
        real_plan = ops.plan
        monkeypatch.setattr(ops, "plan", lambda *args: planned.append(args) or real_plan(*args))
        capturing = []
        dispatch.op_only[fast] = lambda: capturing.append(1) or True  # as if capturing
        torch.testing.assert_close(ops.layernorm(x, w, b), expected)
        assert capturing == [1] and len(planned) == 1
        dispatch.op_only[fast] = lambda: capturing.append(2) or False
        torch.testing.assert_close(ops.layernorm(x, w, b), expected)
        assert capturing == [1, 2] and len(planned) == 1  # straight to the op


def test_a_call_known_to_run_the_op_skips_the_decision_until_the_configs_change(
        tmp_path, monkeypatch, device):
    """The fast path: once a shape's plan is the PyTorch op (here eagerly and captured), its
    next calls go straight to the op (no plan); the configs are still looked at once every
    RECHECK_S, and a winner written for the shape is then taken up.
    TEST DATA: matmul fp32 at 40x32x24, tlab's kernel 2x the op, written after the first calls."""
    gen = torch.Generator(device=device).manual_seed(3)
    a = torch.randn(40, 24, generator=gen, device=device)
    b = torch.randn(24, 32, generator=gen, device=device)
    fast = ("matmul", a.shape, b.shape, a.dtype, b.dtype, a.get_device())
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        torch.testing.assert_close(ops.matmul(a, b), a @ b)  # no configs: decided, the op
        assert fast in dispatch.op_only
        planned = []
        real_plan = ops.plan
        monkeypatch.setattr(ops, "plan", lambda *args: planned.append(args) or real_plan(*args))
        torch.testing.assert_close(ops.matmul(a, b), a @ b)
        assert planned == []  # straight to the op
        write_winners(tmp_path / SLUG / "matmul.csv",
                      [winner("40x32x24", A, dtype="fp32", p50_ms=1.0, op_p50_ms=2.0)])
        dispatch._file_state[0] -= 2 * dispatch.RECHECK_S  # as if RECHECK_S had passed
        dispatch._file_state[2] -= 2 * dispatch.RECHECK_S
        torch.testing.assert_close(ops.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
        assert len(planned) == 1 and fast not in dispatch.op_only
        assert ops.bound_launch("matmul", torch.float32, (40, 32, 24), a.get_device())


def test_a_known_key_serves_inputs_that_require_grad_with_the_op_and_its_backward(
        tmp_path, monkeypatch, device):
    """The fast path asks nothing of autograd: a key known to run the op (found without
    grad) serves a call whose inputs require grad with that same op, so gradients flow as
    the op's own; no decision is taken for it.
    TEST DATA: rmsnorm fp32 at 5x48, no configs (the op everywhere)."""
    gen = torch.Generator(device=device).manual_seed(5)
    x = torch.randn(5, 48, generator=gen, device=device)
    w = torch.randn(48, generator=gen, device=device)
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        with torch.no_grad():
            ops.rmsnorm(x, w)  # decided: the op, remembered
        assert ("rmsnorm", x.shape, x.dtype, w.dtype, x.get_device()) in dispatch.op_only
        planned = []
        monkeypatch.setattr(ops, "plan", lambda *args: planned.append(args))
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        ops.rmsnorm(xg, wg).square().sum().backward()
        xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
        F.rms_norm(xr, (48,), wr, 1e-6).square().sum().backward()
        assert planned == []
        torch.testing.assert_close(xg.grad, xr.grad)
        torch.testing.assert_close(wg.grad, wr.grad)


def _gelu_case(gen, device, approximate):
    a = torch.randn(9, 24, generator=gen, device=device)
    b = torch.randn(24, 40, generator=gen, device=device)
    bias = torch.randn(40, generator=gen, device=device)
    key = ("matmul_gelu", approximate, a.shape, b.shape, a.dtype, b.dtype, a.get_device())
    return (lambda: ops.matmul_gelu(a, b, bias, approximate),
            lambda: F.gelu(a @ b + bias, approximate=approximate), key)


def _rope_case(gen, device, _):
    q = torch.randn(2, 5, 4, 16, generator=gen, device=device)
    k = torch.randn(2, 5, 2, 16, generator=gen, device=device)  # grouped-query: fewer heads
    angles = torch.randn(5, 8, generator=gen, device=device)
    cos, sin = angles.cos(), angles.sin()
    key = ("rope", q.shape, q.dtype, q.get_device())
    return (lambda: ops.rope(q, k, cos, sin),
            lambda: rotate_half_rope(q, k, cos, sin), key)


@pytest.mark.parametrize("case, form", [(_gelu_case, "none"), (_gelu_case, "tanh"),
                                        (_rope_case, None)])
def test_matmul_gelu_and_rope_take_the_fast_path_once_the_op_is_known(
        tmp_path, monkeypatch, device, case, form):
    """matmul_gelu (each GELU form its own key) and rope: the first call decides (no
    configs: the op) and remembers; the next go straight to the op, with its result.
    TEST DATA: fp32 shapes nobody tuned (9x40x24; rope 2x5x4x16, k with 2 heads)."""
    call, expected, key = case(torch.Generator(device=device).manual_seed(7), device, form)
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        torch.testing.assert_close(call(), expected())
        assert dispatch.op_only[key] is dispatch.never
        planned = []
        monkeypatch.setattr(ops, "plan", lambda *args: planned.append(args))
        torch.testing.assert_close(call(), expected())
        assert planned == []


def test_a_project_root_given_for_its_configs_folder_is_named(configs, monkeypatch):
    """TLAB_CONFIG_DIR=root (not root/configs): nothing tuned there, and the reason says
    where the configs are."""
    import shutil

    root = configs / "project"
    shutil.copytree(configs / SLUG, root / "configs" / SLUG)
    monkeypatch.setenv(tuned.CONFIG_DIR_ENV, str(root))
    tuned.clear_cache()
    choice = ops.explain("matmul", "fp32", "1024x1024x1024")
    assert choice.provider == "torch"
    assert f"{root / 'configs'} holds configs: name that folder" in choice.reason
    monkeypatch.setenv(tuned.CONFIG_DIR_ENV, str(root / "configs"))
    tuned.clear_cache()
    assert ops.explain("matmul", "fp32", "1024x1024x1024").provider == "triton"


def test_a_launch_for_another_gpus_tensors_runs_with_that_gpu_current(configs, monkeypatch):
    """Triton launches on the current device: a call whose tensors sit on another GPU (a model
    spread over GPUs, the current one left at 0) gets its launch run with their GPU made
    current, attributes read through; a call on the current GPU gets the launch itself.
    Simulated: GPU 1's name is the fixture's, the current device is 0, the guard records."""
    current, made_current = [0], []

    class Guard:
        def __init__(self, device):
            self.device = device

        def __enter__(self):
            made_current.append(self.device)
            current.insert(0, self.device)

        def __exit__(self, *exc):
            current.pop(0)

    monkeypatch.setattr(dispatch, "current_cuda_device", lambda: current[0])
    monkeypatch.setattr(dispatch, "device_guard", Guard)
    monkeypatch.setattr(dispatch, "_capturing", lambda device: False)
    ran_on = []

    def bind(config):
        def launch(*args):
            ran_on.append(current[0])
            return args
        launch.tma = False
        return launch

    sizes = (1024, 1024, 1024)
    for device in (0, 1):
        dispatch._slugs[device] = SLUG  # what current_gpu_slug(device) names on a GPU host
    on_current = dispatch.plan("matmul", torch.float32, sizes, 0, bind)
    on_other = dispatch.plan("matmul", torch.float32, sizes, 1, bind)
    assert on_current.__name__ == "launch" and on_other.tma is False
    assert on_current("a") == ("a",) and on_other("b") == ("b",)
    assert ran_on == [0, 1] and made_current == [1] and current == [0]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="needs two CUDA GPUs")
def test_ops_on_a_second_gpu_run_there_with_the_first_current(configs):
    write_winners(configs / SLUG / "softmax.csv", [winner(
        "8192x4096", "ROWS=1 num_warps=16 PER_SM=0 SPLIT=1", dtype="fp32", kernel="softmax",
        op_p50_ms=2.0)])
    tuned.clear_cache()
    torch.cuda.set_device(0)
    x = torch.randn(8192, 4096, device="cuda:1",
                    generator=torch.Generator(device="cuda:1").manual_seed(1))
    y = ops.softmax(x)
    assert ops.bound_launch("softmax", x.dtype, (8192, 4096), 1) is not None
    assert y.device == x.device and torch.cuda.current_device() == 0
    torch.testing.assert_close(y, torch.softmax(x, -1))
