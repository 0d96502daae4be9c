"""`tlab new NAME`: the module it writes keeps the contract, lists, sweeps in Triton's
interpreter and passes the test written beside it, as a new kernel author would run them.
Its refusals (a bad name, a file there already) are in test_bad_input.py's table."""

import os
import subprocess
import sys

from helpers.commands import tlab

from tritonbench_lab.cli.new_cmd import written_files
from tritonbench_lab.data.records import OK, SKIPPED
from tritonbench_lab.data.store import load_records


def test_the_new_kernel_keeps_the_contract_lists_sweeps_and_passes_its_test(tmp_path):
    folder = tmp_path / "mine"
    done = tlab("new", "my_op", "--out", str(folder))
    assert done.returncode == 0, done.stderr
    module, test = folder / "my_op.py", folder / "test_my_op.py"
    assert f"tlab sweep my_op -m {module}" in done.stdout

    listed = tlab("list", "--interpret", "-m", str(module))
    assert listed.returncode == 0, listed.stderr
    assert "contract   kept: each piece called once at n=1000 fp32 (launch with BLOCK=512" \
        in listed.stdout

    swept = tlab("sweep", "my_op", "-m", str(module), "--interpret", "--root", str(tmp_path),
                 "--sizes", "1000", "--dtype", "fp32")
    assert swept.returncode == 0, swept.stderr
    rows = load_records(tmp_path / "results" / "interpreter" / "my_op.csv")
    assert {r.status for r in rows} == {OK, SKIPPED}, [(r.config, r.error) for r in rows]
    assert {r.provider for r in rows if r.status == OK} == {"torch", "triton"}  # not compiled
    assert {r.config for r in rows if r.status == SKIPPED} == {"BLOCK=128 num_warps=8"}
    configs = (tmp_path / "configs" / "interpreter" / "my_op.csv").read_text().splitlines()
    assert len(configs) == 2  # a header and the winner

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # it sets its own
    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(test)], cwd=folder, env=env, capture_output=True, text=True,
                            timeout=600)
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert "10 passed" in tested.stdout


def test_the_written_files_name_the_kernel_throughout(tmp_path):
    files = written_files("fast_gelu", tmp_path)
    kernel, test = files.values()
    assert list(files) == [tmp_path / "fast_gelu.py", tmp_path / "test_fast_gelu.py"]
    assert 'name="fast_gelu"' in kernel and "def fast_gelu_kernel(" in kernel
    assert "from fast_gelu import SPEC, fast_gelu" in test
    assert "${" not in kernel + test and "my_op" not in kernel + test
    assert not list(tmp_path.iterdir())  # nothing written until the command writes it
