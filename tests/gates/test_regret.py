"""Regret of the nearest-shape rule: held-out shapes and the measured loss (interpreter)."""

import os
import subprocess
import sys

import pytest
from helpers.paths import PLANTED, REPO

from tritonbench_lab.data.records import Winner
from tritonbench_lab.data.store import load_records, write_table
from tritonbench_lab.data.winners import shape_results
from tritonbench_lab.gates.regret import held_out_shapes


def test_held_out_shapes_lie_between_the_tuned_ones():
    assert held_out_shapes([(512,) * 3, (1024,) * 3, (2048,) * 3]) == [(724,) * 3, (1448,) * 3]
    assert held_out_shapes([(8192, 4096), (8192, 1024)]) == [(8192, 2048)]
    assert held_out_shapes([(1000,)]) == []
    assert held_out_shapes([(1000,), (1001,)]) == []  # the middle rounds onto a tuned shape


@pytest.mark.parametrize("written", ["BLOCK=128 MODE=0 num_warps=4",
                                     "BLOCK=128 num_warps=4"],  # from before MODE existed
                         ids=["complete", "without-added-MODE"])
def test_check_regret_compares_the_looked_up_config_with_a_fresh_winner(tmp_path, written):
    # TEST DATA: winners that say BLOCK=128 at n=1000 and n=4000; the held-out n=2000 is
    # tuned afresh and BLOCK=128 (what lookup picks there) is compared with its winner.
    import dataclasses

    from helpers.fixture_results import kernel_winner

    row = dataclasses.replace(kernel_winner("planted", "fp32", "1000", 1.0, 1.0, "GB/s"), config=written)
    write_table(tmp_path / "configs" / "interpreter" / "planted.csv",
                [row, dataclasses.replace(row, shape="4000")], Winner)
    result = subprocess.run(
        [sys.executable, "-m", "tritonbench_lab", "check", "--root", str(tmp_path), "--regret",
         "--interpret", "--kernel-module", str(PLANTED)],
        capture_output=True, text=True, timeout=300, cwd=REPO, env={**os.environ, "COLUMNS": "250"})
    assert result.returncode == 0, result.stdout + result.stderr
    rows = load_records(tmp_path / "results" / "interpreter" / "regret" / "results" / "interpreter"
                        / "planted.csv")
    # As the winner is chosen: the confirmed time of each config that has one.
    (held,) = shape_results([r for r in rows if r.shape == "2000"])
    correct = {c for c, r in held.configs.items() if r.status == "ok"}
    assert correct == {"BLOCK=128 MODE=0 num_warps=4", "BLOCK=1024 MODE=0 num_warps=4"}
    picked = held.configs["BLOCK=128 MODE=0 num_warps=4"]
    expected = 100 * (picked.p50_ms / held.winner.p50_ms - 1)
    line = next(line for line in result.stdout.splitlines() if "│ " in line and " 2000 " in line)
    assert f"{expected:.1f}%" in line
    assert "BLOCK=128 MODE=0 num_warps=4" in line
