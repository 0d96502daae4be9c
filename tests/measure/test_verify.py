"""Verification: tolerance bound, NaN poisoning, shape and count mismatches, and the guard
band that catches a write outside an output."""

import pytest
import torch
from helpers.paths import PLANTED

from tritonbench_lab.data.records import OK, TRITON, WRONG_RESULT
from tritonbench_lab.measure.verify import GUARD_BYTES, as_outputs, check, guard, poison
from tritonbench_lab.spec import Tolerance

TOL = Tolerance(atol=1e-3, rtol=1e-2)


def test_within_tolerance_passes_and_reports_the_error():
    ref = torch.linspace(-2, 2, 101, dtype=torch.float64)
    out = (ref * (1 + 5e-3)).float()
    verdict = check((out,), (ref,), TOL)
    assert verdict.ok and verdict.detail == ""
    assert 0 < verdict.max_abs_error <= 2 * 5e-3 + 1e-6
    assert 0 < verdict.worst_ratio <= 1


def test_one_wrong_element_fails():
    ref = torch.rand(50, 50, dtype=torch.float64) + 0.5
    out = ref.clone()
    out[17, 3] += 0.1
    verdict = check((out,), (ref,), TOL)
    assert not verdict.ok
    assert abs(verdict.max_abs_error - 0.1) < 1e-9
    assert "tolerance" in verdict.detail


def test_unwritten_poisoned_elements_fail():
    ref = torch.rand(8, 8, dtype=torch.float64) + 0.5
    (out,) = poison((torch.empty(8, 8),))
    assert torch.isnan(out).all()
    out[:, :7] = ref[:, :7].float()  # the kernel "forgot" the last column
    verdict = check((out,), (ref,), TOL)
    assert not verdict.ok and "8 NaN" in verdict.detail


def test_every_output_is_checked():
    ref = (torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    good = torch.ones(3)
    assert check((good, good), ref, TOL).ok
    assert not check((good, good * 2), ref, TOL).ok
    assert not check((good,), ref, TOL).ok
    assert not check((good, torch.ones(4)), ref, TOL).ok


def test_as_outputs_wraps_a_bare_tensor():
    t = torch.ones(2)
    assert as_outputs(t) == (t,)
    assert as_outputs([t, t]) == (t, t)


# --- the guard band ---------------------------------------------------------------------

def _underneath(view: torch.Tensor) -> torch.Tensor:
    """The whole buffer a guarded output sits in, as a flat tensor of its dtype."""
    storage = view.untyped_storage()
    return torch.empty(0, dtype=view.dtype).set_(storage, 0,
                                                 (storage.nbytes() // view.element_size(),))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.int8])
def test_a_write_one_element_past_an_output_is_caught(dtype):
    guarded = guard((torch.empty(4, 6, dtype=dtype),))
    (out,) = guarded.outputs
    assert (out.shape, out.stride(), out.dtype) == ((4, 6), (6, 1), dtype)
    flat = _underneath(out)
    # 128 bytes into its buffer: the allocation's alignment is kept (TMA needs 16 bytes)
    assert out.data_ptr() - flat.data_ptr() == GUARD_BYTES and out.data_ptr() % 16 == 0
    out.copy_(torch.arange(24).reshape(4, 6).to(dtype))  # every element, nothing else
    assert guarded.overrun() == ""
    margin = GUARD_BYTES // out.element_size()
    flat[margin + 24] = 7  # one element past the end
    assert guarded.overrun() == "wrote past the end of output 0 (1 element after it)"
    flat[margin - 2:margin] = 7
    assert guarded.overrun() == ("wrote past the end of output 0 "
                                 "(2 elements before it, 1 element after it)")


def test_a_write_before_the_start_and_a_second_output_are_named():
    guarded = guard((torch.empty(8), torch.empty(3, 5)))
    first, second = guarded.outputs
    assert torch.isnan(first).all() and torch.isnan(second).all()  # poisoned as before
    flat = _underneath(second)
    flat[GUARD_BYTES // 4 - 1] = 0.0
    assert guarded.overrun() == "wrote before the start of output 1 (1 element before it)"


def test_an_output_keeps_its_strides_and_its_margin_sits_past_its_last_element():
    transposed = torch.empty(6, 4).t()  # 4x6 with strides (1, 4): not contiguous
    guarded = guard((transposed,))
    (out,) = guarded.outputs
    assert (out.shape, out.stride()) == (transposed.shape, transposed.stride())
    out.fill_(1.0)
    assert guarded.overrun() == ""
    _underneath(out)[GUARD_BYTES // 4 + 24] = 1.0
    assert "past the end of output 0" in guarded.overrun()


def test_outputs_sharing_storage_are_left_as_they_are():
    both = torch.empty(2, 8)
    guarded = guard((both[0], both[1]))
    assert [o.data_ptr() for o in guarded.outputs] == [both[0].data_ptr(), both[1].data_ptr()]
    assert guarded.overrun() == "" and torch.isnan(both).all()


def test_the_planted_kernel_writing_past_its_output_is_a_wrong_result():
    """Every element it writes into its output is right; one more lands past the end. It
    passed as ok before the guard band; a user kernel module, guarded like a built-in one."""
    from tritonbench_lab.measure.worker import Task, Timeouts, Worker

    worker = Worker(interpret=True, kernel_modules=(str(PLANTED),))
    try:
        outcomes = {mode: worker.run(Task("planted_overrun", TRITON, (1000,), "fp32",
                                          {"BLOCK": 128, "MODE": mode, "num_warps": 4}),
                                     Timeouts()) for mode in (0, 6)}
    finally:
        worker.stop()
    assert outcomes[0].status == OK, outcomes[0]
    assert outcomes[6].status == WRONG_RESULT
    assert outcomes[6].error == "wrote past the end of output 0 (1 element after it)"
    assert outcomes[6].p50_ms is None  # not timed
