"""What a shape of a sweep came to: each config counted once, by the row that stands for it."""

import dataclasses

from helpers.fixture_results import record

from tritonbench_lab.data.records import CONFIRM, CRASH, OK, SKIPPED, WRONG_RESULT
from tritonbench_lab.data.tally import shortened, tally


def test_each_config_counts_once_by_its_standing_row_and_the_plan_counts_the_pruned():
    first = record("triton", "ROWS=1 num_warps=4", "64x1024", 1.0)
    # ok in the first pass, then a crash when confirmed: the confirmation stands
    confirmed = dataclasses.replace(first, status=CRASH, error="worker killed by SIGSEGV",
                                    p50_ms=None, phase=CONFIRM)
    other = record("triton", "ROWS=2 num_warps=4", "64x1024", 2.0)
    wrong = dataclasses.replace(record("triton", "ROWS=4 num_warps=4", "64x1024", 1.0),
                                status=WRONG_RESULT, error="output 0 has 3 NaN/inf element(s)",
                                p50_ms=None)
    pruned = dataclasses.replace(record("triton", "ROWS=8 num_warps=4", "64x1024", 1.0),
                                 status=SKIPPED, error="pruned", p50_ms=None)
    baseline = record("torch", "", "64x1024", 3.0)
    found = tally("softmax", "fp32", "64x1024", [first, other, wrong, pruned, confirmed, baseline],
                  configs=5, skipped=2)
    assert found.counts == {OK: 1, SKIPPED: 2, WRONG_RESULT: 1, CRASH: 1}
    assert found.first_errors == {WRONG_RESULT: "output 0 has 3 NaN/inf element(s)",
                                  CRASH: "worker killed by SIGSEGV"}
    assert found.correct and found.winner.config == "ROWS=2 num_warps=4"
    assert found.counts_text() == "5 configs: 1 ok, 2 skipped, 1 wrong_result, 1 crash"
    # the winner is a first-pass time: the one confirmation crashed, which the sweep says
    assert found.failed_confirmations == 1
    assert found.winner_note().startswith(" (a first-pass time: 1 confirmation(s) failed")
    ok_now = dataclasses.replace(confirmed, status=OK, p50_ms=0.9, error="")
    assert tally("softmax", "fp32", "64x1024", [first, other, ok_now], configs=2,
                 skipped=0).winner_note() == ""
    none = tally("softmax", "fp32", "64x1024", [wrong, baseline], configs=1, skipped=0)
    assert not none.correct and none.winner is None and none.counts_text() == (
        "1 config: 1 wrong_result")


def test_only_the_plans_configs_are_counted_where_an_earlier_larger_space_left_rows():
    """A sweep of a one-config space at a shape swept whole before: its tally is that
    config's (it counted 180 ok of 72 configs); the winner stays the shape's."""
    earlier = [record("triton", f"ROWS={r} num_warps=4", "64x1024", float(r)) for r in (1, 2, 4)]
    mine = record("triton", "ROWS=8 num_warps=4", "64x1024", 9.0)
    found = tally("softmax", "fp32", "64x1024", [*earlier, mine], configs=1, skipped=0,
                  planned={"ROWS=8 num_warps=4"})
    assert found.counts_text() == "1 config: 1 ok"
    assert found.winner.config == "ROWS=1 num_warps=4"


def test_errors_are_one_line_and_cut():
    assert shortened("a\n  b\tc") == "a b c"
    assert shortened("x" * 200, limit=10) == "xxxxxxx..."
    assert shortened("") == "(no message)"
