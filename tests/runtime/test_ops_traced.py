"""tritonbench_lab.ops where its inputs are not plain tensors of a device, or autocast sets
their dtypes: under a TorchDispatchMode (fake tensors, make_fx's tracing) a call is the
registered op, which the mode sees; under torch.func's transforms (vmap, functionalize), for
meta tensors, for an input of a subclass that dispatches itself (DTensor) and under
torch.autocast, the PyTorch op. Each at a shape where tlab's kernel runs eagerly, so that a
launch on tensors without data (what each raised before), or at the inputs' own dtype,
would be tried."""

import pytest
import torch
import torch.nn.functional as F
from helpers.backend import INTERPRETING
from helpers.fixture_results import winner, write_winners
from helpers.ops_state import ops_reading
from helpers.wrapper_tensor import Wrapped
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils.flop_counter import FlopCounterMode

from tritonbench_lab import ops, tuned
from tritonbench_lab.runtime import dispatch, library

SLUG = "interpreter" if INTERPRETING else tuned.current_gpu_slug()
ROWS, WIDTH = 33, 1000  # softmax's and rmsnorm's tuned shape
MATMUL = "BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3 TMA=0 STREAM_K=0"


@pytest.fixture
def configs(tmp_path, monkeypatch):
    """TEST DATA: softmax and rmsnorm fp32 winners at 33x1000, matmul and matmul_gelu at 64^3,
    tlab's kernel 2x the op."""
    write_winners(tmp_path / SLUG / "softmax.csv", [winner(
        f"{ROWS}x{WIDTH}", "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1", dtype="fp32",
        kernel="softmax", p50_ms=1.0, op_p50_ms=2.0)])
    write_winners(tmp_path / SLUG / "rmsnorm.csv", [winner(
        f"{ROWS}x{WIDTH}", "ROWS=1 num_warps=4", dtype="fp32", kernel="rmsnorm",
        p50_ms=1.0, op_p50_ms=2.0)])
    for kernel in ("matmul", "matmul_gelu"):
        write_winners(tmp_path / SLUG / f"{kernel}.csv", [winner(
            "64x64x64", MATMUL, dtype="fp32", kernel=kernel, p50_ms=1.0, op_p50_ms=2.0)])
    with ops_reading(monkeypatch, tmp_path):
        yield tmp_path


def _x(device, rows=ROWS, *lead):
    return torch.randn(*lead, rows, WIDTH, device=device,
                       generator=torch.Generator(device=device).manual_seed(rows))


def _weight(device):
    return torch.rand(WIDTH, device=device, generator=torch.Generator(device=device).manual_seed(7))


def test_the_shape_runs_tlabs_kernel_eagerly(configs, device):
    """The premise of every test here: at this shape a plain call launches tlab's kernel."""
    x = _x(device)
    with torch.no_grad():
        torch.testing.assert_close(ops.softmax(x), torch.softmax(x.double(), -1).float())
    assert dispatch.bound_launch("softmax", x.dtype, (ROWS, WIDTH), x.get_device()) is not None


@pytest.mark.parametrize("op", ["softmax", "rmsnorm"])
def test_fake_tensors_get_fake_results_of_the_ops_shape(configs, device, op):
    x, weight = _x(device), _weight(device)
    call = (lambda t, w: ops.softmax(t)) if op == "softmax" else ops.rmsnorm
    with torch.no_grad(), FakeTensorMode() as mode:
        out = call(mode.from_tensor(x), mode.from_tensor(weight))
    assert isinstance(out, FakeTensor)
    assert (out.shape, out.dtype, out.device) == (x.shape, x.dtype, x.device)


@pytest.mark.parametrize("tracing_mode", ["real", "fake", "symbolic"])
def test_make_fx_records_the_registered_op_and_its_graph_runs_tlabs_kernel(
        configs, device, tracing_mode):
    x = _x(device)
    with torch.no_grad():
        graph = make_fx(lambda t: ops.softmax(t), tracing_mode=tracing_mode)(x)
        called = {str(n.target) for n in graph.graph.nodes if n.op == "call_function"}
        assert called == {"tlab.softmax_eager.default"}
        library.opaque_calls.clear()
        out = graph(x)
    assert library.opaque_calls["softmax"] == 1
    torch.testing.assert_close(out, torch.softmax(x.double(), -1).float())


def test_vmap_and_functionalize_get_the_op(configs, device):
    """vmap's batched tensors and functionalize's wrappers: a launch cannot read them."""
    batch, weight = _x(device, ROWS, 3), _weight(device)
    with torch.no_grad():
        torch.testing.assert_close(torch.vmap(ops.softmax)(batch), torch.softmax(batch, -1))
        torch.testing.assert_close(
            torch.vmap(lambda t: ops.rmsnorm(t, weight))(batch),
            F.rms_norm(batch, (WIDTH,), weight, 1e-6), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(torch.func.functionalize(ops.softmax)(batch[0]),
                                   torch.softmax(batch[0], -1))


def test_meta_tensors_get_the_ops_meta_result(configs, device):
    x = _x(device).to("meta")
    with torch.no_grad():
        out = ops.softmax(x)
        y, h = ops.rmsnorm(x, torch.ones(WIDTH, device="meta"), 1e-6, x)
    assert out.is_meta and out.shape == x.shape
    assert y.is_meta and h.is_meta and y.shape == h.shape == x.shape
    # and a plain call after them still runs tlab's kernel, correctly
    real = _x(device)
    with torch.no_grad():
        torch.testing.assert_close(ops.softmax(real), torch.softmax(real.double(), -1).float())


def test_a_subclass_that_dispatches_itself_gets_the_op(configs, device):
    """A wrapper such as DTensor: a launch cannot read its storage; the op runs through its
    __torch_dispatch__. nn.Parameter, a subclass without one, still runs tlab's kernel."""
    x, weight = _x(device), _weight(device)
    with torch.no_grad():
        out = ops.softmax(Wrapped(x))
        assert isinstance(out, Wrapped)
        torch.testing.assert_close(out.inner, torch.softmax(x, -1))
        y = ops.rmsnorm(torch.nn.Parameter(x), weight, 1e-6)
    torch.testing.assert_close(y, F.rms_norm(x, (WIDTH,), weight, 1e-6), atol=1e-5, rtol=1e-5)
    assert dispatch.bound_launch("rmsnorm", x.dtype, (ROWS, WIDTH), x.get_device()) is not None


def test_flop_counter_counts_tlabs_matmuls_as_it_counts_torchs(configs, device):
    """Under FlopCounterMode a call is the registered op; where tlab's kernel runs, the mode
    sees its opaque node, whose formula counts what aten.mm's does."""
    gen = torch.Generator(device=device).manual_seed(64)
    a, b, bias = (torch.randn(*s, device=device, generator=gen) for s in ((64, 64), (64, 64), (64,)))
    library.opaque_calls.clear()
    with torch.no_grad():
        for call in (lambda: ops.matmul(a, b), lambda: ops.matmul_gelu(a, b, bias)):
            with FlopCounterMode(display=False) as counted:
                call()
            assert counted.get_total_flops() == 2 * 64 ** 3
    assert library.opaque_calls == {"matmul": 1, "matmul_gelu": 1}  # tlab's kernel ran


def test_a_subclass_in_any_position_gets_the_op(configs, device):
    """A plain first input beside a wrapped weight or operand (a quantized weight's subclass,
    say): a launch cannot read the wrapper's storage either; the op runs through it."""
    x, weight = _x(device), _weight(device)
    gen = torch.Generator(device=device).manual_seed(64)
    a, b = (torch.randn(64, 64, device=device, generator=gen) for _ in range(2))
    with torch.no_grad():
        y = ops.rmsnorm(x, Wrapped(weight), 1e-6)
        c = ops.matmul(a, Wrapped(b))
    assert isinstance(y, Wrapped) and isinstance(c, Wrapped)
    torch.testing.assert_close(y.inner, F.rms_norm(x, (WIDTH,), weight, 1e-6))
    torch.testing.assert_close(c.inner, a @ b)


def test_under_autocast_each_op_is_the_pytorch_op_with_its_dtypes(configs, device):
    """torch.autocast runs a matmul of fp32 inputs in bf16 (and on CUDA a softmax of bf16
    inputs in fp32); tlab's kernel at the inputs' dtype would return fp32. At a shape where
    it runs, ops gives what the PyTorch op gives under autocast, eagerly and compiled, and
    tlab's kernel again once autocast ends."""
    gen = torch.Generator(device=device).manual_seed(64)
    a, b = (torch.randn(64, 64, device=device, generator=gen) for _ in range(2))
    x = _x(device)
    compiled = torch.compile(lambda a, b: ops.matmul(a, b) + 1)
    with torch.no_grad():
        with torch.autocast(device, dtype=torch.bfloat16):
            want, want_softmax = torch.matmul(a, b), torch.softmax(x.bfloat16(), -1)
            got, got_softmax = ops.matmul(a, b), ops.softmax(x.bfloat16())
            got_compiled = compiled(a, b)
        assert want.dtype == got.dtype == got_compiled.dtype == torch.bfloat16
        assert got_softmax.dtype == want_softmax.dtype
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got_compiled, want + 1)
        assert ops.matmul(a, b).dtype == torch.float32  # tlab's kernel, at the inputs' dtype
    assert dispatch.bound_launch("matmul", a.dtype, (64, 64, 64), a.get_device()) is not None
