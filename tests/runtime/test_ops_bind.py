"""ops.bind: an op decided once for calls like an example, returning the PyTorch op itself
where ops runs that op eagerly, and the op where it runs tlab's kernel (or autograd needs it)."""

import pytest
import torch
import torch.nn.functional as F
from helpers.backend import INTERPRETING
from helpers.fixture_results import winner, write_winners
from helpers.ops_state import ops_reading

from tritonbench_lab import ops, tuned
from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.rope import rotate_half_rope
from tritonbench_lab.runtime import dispatch

SLUG = "interpreter" if INTERPRETING else tuned.current_gpu_slug()
SOFTMAX = "ROWS=1 num_warps=4 PER_SM=0 SPLIT=1"


def _cases(gen, device):
    """(op, its arguments, what it computes) at odd shapes nobody tuned."""
    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device)

    a, b, bias, x, r = randn(9, 24), randn(24, 40), randn(40), randn(7, 33), randn(7, 33)
    w, wb = randn(33), randn(33)
    q, k, angles = randn(2, 5, 4, 16), randn(2, 5, 2, 16), randn(5, 8)
    cos, sin = angles.cos(), angles.sin()
    return [
        (ops.matmul, (a, b), {}, lambda: a @ b),
        (ops.matmul_gelu, (a, b, bias), {"approximate": "tanh"},
         lambda: F.gelu(a @ b + bias, approximate="tanh")),
        (ops.softmax, (x,), {}, lambda: torch.softmax(x, -1)),
        (ops.rmsnorm, (x, w), {}, lambda: F.rms_norm(x, (33,), w, 1e-6)),
        (ops.rmsnorm, (x, w, 1e-5), {"residual": r},
         lambda: (F.rms_norm(x + r, (33,), w, 1e-5), x + r)),
        (ops.layernorm, (x, w, wb), {}, lambda: F.layer_norm(x, (33,), w, wb, 1e-5)),
        (ops.rope, (q, k, cos, sin), {}, lambda: rotate_half_rope(q, k, cos, sin)),
        (ops.add, (x, r), {}, lambda: x + r),
    ]


CASES = ["matmul", "matmul_gelu", "softmax", "rmsnorm", "add_rmsnorm", "layernorm", "rope", "add"]


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASES)
@pytest.mark.parametrize("known", [False, True], ids=["first call", "key known"])
def test_where_ops_calls_the_pytorch_op_bind_returns_that_op(tmp_path, monkeypatch, device,
                                                              index, known):
    """No configs: every op calls the PyTorch op, so bind hands back a function that is not
    the op and never decides again, with the op's result; whether or not the call's key was
    already on ops' fast path (`known`: bind must still see the decision).
    TEST DATA: fp32 shapes nobody tuned."""
    op, args, kwargs, expected = _cases(torch.Generator(device=device).manual_seed(11),
                                        device)[index]
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        if known:
            op(*args, **kwargs)
        bound = ops.bind(op, *args, **kwargs)
        assert bound is not op
        planned = []
        monkeypatch.setattr(ops, "plan", lambda *a: planned.append(a))
        torch.testing.assert_close(bound(*args, **kwargs), expected())
        assert planned == []


def test_bind_returns_the_pytorch_functions_themselves_where_their_arguments_are_ops(
        tmp_path, monkeypatch, device):
    """Where op and PyTorch op take the same arguments, bind returns the PyTorch function
    itself: a call through it costs exactly what the op's call costs.
    TEST DATA: fp32 shapes nobody tuned."""
    cases = _cases(torch.Generator(device=device).manual_seed(12), device)
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        assert ops.bind(ops.matmul, *cases[0][1]) is torch.matmul
        assert ops.bind(ops.add, *cases[-1][1]) is torch.add
        assert ops.bind(ops.rope, *cases[-2][1]) is rotate_half_rope
        a, b = cases[0][1]
        assert ops.bind(ops.addmm, torch.ones(b.shape[1], device=device), a, b) is torch.addmm


@pytest.mark.parametrize("host_ms, expected", [(None, "op"), (0.050, "pytorch")],
                         ids=["kernel eagerly", "kernel only captured"])
def test_where_ops_runs_tlabs_kernel_eagerly_bind_returns_the_op(tmp_path, monkeypatch,
                                                                 device, host_ms, expected):
    """A tuned softmax shape whose kernel beats the op: bind returns ops.softmax, which runs
    it. With host times that make the kernel lose eagerly (it wins only captured), the
    PyTorch op: bind is for eager calls.
    TEST DATA: softmax fp32 33x1000, tlab's kernel 2x the op's GPU time; host times none
    (GPU time decides) or tlab's 50 us against the op's 8 us."""
    write_winners(tmp_path / SLUG / "softmax.csv", [winner(
        "33x1000", SOFTMAX, dtype="fp32", kernel="softmax", p50_ms=0.003, op_p50_ms=0.006,
        host_ms=host_ms, op_host_ms=None if host_ms is None else 0.008)])
    x = torch.randn(33, 1000, generator=torch.Generator(device=device).manual_seed(2),
                    device=device)
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        bound = ops.bind(ops.softmax, x)
        assert (bound is ops.softmax) == (expected == "op")
        torch.testing.assert_close(bound(x), torch.softmax(x.double(), -1).float())


def test_bind_leaves_ops_fast_path_as_it_found_it(tmp_path, monkeypatch, device):
    """bind turns the fast path off for its one call only: the op's next calls at a known
    shape still skip the decision.
    TEST DATA: layernorm fp32 at 7x33, no configs."""
    _, args, _, expected = _cases(torch.Generator(device=device).manual_seed(13), device)[5]
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        ops.layernorm(*args)
        valid_until = dispatch._file_state[2]
        ops.bind(ops.layernorm, *args)
        assert dispatch._file_state[2] >= valid_until > 0
        planned = []
        monkeypatch.setattr(ops, "plan", lambda *a: planned.append(a))
        torch.testing.assert_close(ops.layernorm(*args), expected())
        assert planned == []


def test_bind_where_autograd_needs_the_result_returns_the_op(tmp_path, monkeypatch, device):
    """Inputs that require grad: ops decides nothing (autograd takes the op), so bind
    returns ops.rmsnorm itself, and gradients flow.
    TEST DATA: rmsnorm fp32 at 7x33, no configs."""
    _, (x, w), _, _ = _cases(torch.Generator(device=device).manual_seed(14), device)[3]
    xg = x.clone().requires_grad_()
    with ops_reading(monkeypatch, tmp_path, recheck=False):
        bound = ops.bind(ops.rmsnorm, xg, w)
        assert bound is ops.rmsnorm
        bound(xg, w).square().sum().backward()
    xr = x.clone().requires_grad_()
    F.rms_norm(xr, (33,), w, 1e-6).square().sum().backward()
    torch.testing.assert_close(xg.grad, xr.grad)


def test_bind_refuses_what_is_not_one_of_ops_functions(tmp_path, monkeypatch):
    with ops_reading(monkeypatch, tmp_path), pytest.raises(TlabError) as raised:
        ops.bind(torch.softmax, torch.randn(2, 3))
    assert "ops.softmax" in str(raised.value) and "ops.matmul" in str(raised.value)
