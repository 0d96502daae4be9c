"""The cases a timing worker keeps: bounded by count and by bytes (with the next case's),
least recently used let go first, and all of them let go when a new case runs out of memory
beside them; and the compile pool's budget leaves each of a sweep's two timing workers that
bound."""

import pytest
import torch

from tritonbench_lab.measure.cases import (
    CASES_KEPT,
    CASES_MEMORY_SHARE,
    KeptCases,
    memory_estimate,
    worker_bytes,
)


def case(n_floats: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_floats, generator=g)
    return {"x": x}, (x * 2.0).double(), None


def test_a_kept_case_comes_back_without_being_made_again():
    cases = KeptCases()
    first = case(16, 1)
    cases.put("a", first)
    taken = cases.take("a", lambda: pytest.fail("made again"))
    assert taken is first
    assert "a" not in cases.kept  # it is the current case now, not a kept one


def test_count_limit_lets_go_of_the_least_recently_used():
    cases = KeptCases()
    for i in range(CASES_KEPT + 2):
        cases.put(i, case(8, i))
        cases.take(f"new{i}", lambda i=i: case(8, 100 + i))
    assert len(cases.kept) == CASES_KEPT - 1  # with the current one: CASES_KEPT
    assert list(cases.kept) == list(range(3, CASES_KEPT + 2))


def test_bytes_limit_counts_the_next_case():
    # each case: 100 float32 in, 100 float64 out = 1200 bytes
    one = 100 * 4 + 100 * 8
    cases = KeptCases(budget_bytes=3 * one)
    for key in "abc":
        cases.put(key, case(100, ord(key)))
    assert cases.held_bytes() == 3 * one
    cases.take("d", lambda: case(100, 4), need=one)  # a and nothing else: 2 kept + d fit
    assert list(cases.kept) == ["b", "c"]
    cases.put("d", case(100, 4))
    cases.take("e", lambda: case(100, 5), need=2 * one)  # b and c go: d + e fill it
    assert list(cases.kept) == ["d"]
    cases.take("big", lambda: case(100, 6), need=10 * one)  # alone, over the budget: all go
    assert cases.kept == {}


def test_bytes_are_the_storages_views_hold_counted_once():
    g = torch.Generator().manual_seed(7)
    base = torch.randn(64, 128, generator=g)
    strided = base[:, ::2]  # half the elements, all of the storage
    cases = KeptCases(budget_bytes=1 << 30)
    cases.put("a", ({"x": strided, "y": base.T}, strided.double(), 0.5))
    assert cases.held_bytes() == 64 * 128 * 4 + 64 * 64 * 8


def test_out_of_memory_beside_kept_cases_lets_go_of_them_and_tries_again():
    cases = KeptCases()
    cases.put("a", case(8, 1))
    calls = []

    def make():
        calls.append(len(cases.kept))
        if cases.kept:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return case(8, 2)

    assert cases.take("b", make)[0]["x"].numel() == 8
    assert calls == [1, 0]
    with pytest.raises(torch.cuda.OutOfMemoryError):  # nothing left to let go: it stands
        cases.take("c", lambda: (_ for _ in ()).throw(torch.cuda.OutOfMemoryError("again")))


def test_the_pool_budget_leaves_two_workers_their_bound(tmp_path):
    from tests.helpers.sweeps import request_for
    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure.plan import sweep_pool_budget

    gb = 1 << 30
    big = SPEC.shape(1024, 524288)  # fp32: 2 GiB in, 2 GiB out
    need = memory_estimate(SPEC, big, torch.float32)
    assert need == 16 * gb
    # an 80 GB card: each worker may hold a quarter of it, more than the largest case
    free = 78 * gb
    assert worker_bytes(need, free) == int(free * CASES_MEMORY_SHARE) > need
    budget = sweep_pool_budget(request_for(SPEC, [torch.float32], [big], tmp_path,
                                           free_bytes=free))
    assert budget == (free - 2 * int(free * CASES_MEMORY_SHARE)) // 2
    # a smaller card: the largest case alone is each worker's bound
    free = 40 * gb
    budget = sweep_pool_budget(request_for(SPEC, [torch.float32], [big], tmp_path,
                                           free_bytes=free))
    assert budget == (free - 2 * need) // 2
