"""Verification: tolerance bound, NaN poisoning, shape and count mismatches."""

import torch

from tritonbench_lab.measure.verify import as_outputs, check, poison
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
