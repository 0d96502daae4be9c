"""The tlab command as users run it: help, list, and one-line errors with exit code 2."""

import os
import subprocess
import sys

import pytest
from helpers.cli_server import run_tlab
from helpers.commands import tlab
from helpers.paths import REPO


def test_help_lists_the_commands_and_offers_completion():
    result = tlab("--help")
    assert result.returncode == 0
    assert "list" in result.stdout and "Tune Triton kernels" in result.stdout
    assert "--install-completion" in result.stdout


def test_completion_offers_kernels_and_dtypes():
    from tritonbench_lab.cli.options import complete_dtypes, complete_kernels

    assert complete_kernels("so") == ["softmax"]
    assert set(complete_kernels("")) >= {"matmul", "softmax", "rmsnorm", "add_rmsnorm"}
    assert complete_dtypes("b") == ["bf16"]
    assert complete_dtypes("fp32,f") == ["fp32,fp32", "fp32,fp16", "fp32,fp8e4m3", "fp32,fp8e5m2"]
    assert complete_dtypes("fp8") == ["fp8e4m3", "fp8e5m2"]


def test_list_with_a_kernel_module_chooses_the_backend_before_loading_it():
    # As a user runs it: no TRITON_INTERPRET in the environment (the test session sets it).
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-m", "tritonbench_lab", "list",
                             "--kernel-module", "examples/axpy.py"], capture_output=True,
                            text=True, env=env, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "axpy" in result.stdout


def from_main(stderr: str) -> str:
    """A traceback from tlab's __main__ on (the fork server's frames above it dropped)."""
    if "Traceback" not in stderr:
        return stderr
    first_frame = stderr.find('File "', stderr.find("Traceback"))
    main_frame = stderr.rfind('File "', 0, stderr.find(f"tritonbench_lab{os.sep}__main__.py"))
    return stderr[:first_frame] + stderr[main_frame:]


@pytest.mark.parametrize("debug", ["0", "1"])
def test_the_tests_forked_command_line_gives_what_a_fresh_python_gives(debug, tmp_path):
    # helpers/cli_server.py stands in for `python -m tritonbench_lab` in most tests: the same
    # exit code, stdout and stderr (a one-line error, or with TLAB_DEBUG=1 its traceback).
    (tmp_path / "kernels.py").write_text("raise ValueError('planted at import')\n")
    env = {**os.environ, "TLAB_DEBUG": debug, "PYTHONDONTWRITEBYTECODE": "1"}
    for args in (["sweep", "matmul", "--dtype", "bf17"], ["list", "-m", "kernels.py"],
                 ["--version"]):
        fresh = subprocess.run([sys.executable, "-m", "tritonbench_lab", *args],
                               capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        forked = run_tlab(args, cwd=tmp_path, env=env, timeout=300)
        assert (forked.returncode, forked.stdout, from_main(forked.stderr)) == (
            fresh.returncode, fresh.stdout, from_main(fresh.stderr)), args
        assert fresh.returncode == (0 if args == ["--version"] else 1 if debug == "1" else 2)


def test_the_tests_command_line_server_that_dies_says_so(tmp_path):
    # A command that kills the server it was forked from (a kernel module doing so at import)
    # gets a plain error naming the command, not a JSON decoding error; the next runs start a
    # new server.
    (tmp_path / "killer.py").write_text("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    with pytest.raises(RuntimeError, match="server died .* running tlab list -m killer.py"):
        run_tlab(["list", "-m", "killer.py"], cwd=tmp_path)
    assert run_tlab(["--version"], cwd=tmp_path).returncode == 0


def test_version():
    from tritonbench_lab import __version__

    result = tlab("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"tlab {__version__}"


def test_list_shows_every_kernel_with_space_dtypes_baselines_and_shapes():
    result = tlab("list", "--kernel-module", "examples/axpy.py", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name in ("matmul", "softmax", "rmsnorm", "add_rmsnorm", "axpy"):
        assert f"\n{name}  " in "\n" + out
    from tritonbench_lab.kernels.matmul import SPACE

    assert f"{len(SPACE)} configs over BLOCK_M" in out
    assert "bf16 (GPU only)" in out
    assert "torch, unfused, compiled" in out
    assert "torch, inductor (opt-in)" in out  # matmul's max-autotune baseline: when asked
    assert "8192x8192x8192" in out and "8192x65536" in out
    import torch

    if not torch.cuda.is_available():  # the shapes a sweep here runs, too
        assert "in the interpreter (here): 96x80x72" in out
    assert out.startswith("axpy  ")  # the user's own kernel first, not under the built-ins


def test_list_shows_the_kernels_asked_for():
    result = tlab("list", "-m", "examples/axpy.py", "--kernel", "axpy,add", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    headers = [line.split()[0] for line in result.stdout.splitlines()
               if line and not line.startswith(" ") and "  " in line
               and line.split()[0] not in ("metric", "dtypes", "baselines", "space", "shapes",
                                           "contract")]
    assert headers == ["axpy", "add"]


ONE_LINE_ERRORS = [
    (["list", "--kernel-module", "does/not/exist.py"], "does not exist"),
    (["list", "--no-such-option"], "No such option: --no-such-option. Try 'tlab list --help'"),
    (["frobnicate"], "No such command 'frobnicate'"),
    (["sweep", "matmul", "--rep-ms", "0"], "Invalid value for '--rep-ms': "),
    (["sweep", "matmul", "--nosuchopt"], "No such option: --nosuchopt. Try"),  # no hidden one
    (["plot", "--format", "gif"], "unknown picture format 'gif': accepted are svg, png"),
]


@pytest.mark.parametrize("args, phrase", ONE_LINE_ERRORS, ids=lambda v: str(v)[:30])
def test_bad_input_is_one_line_exit_2_no_traceback(args, phrase, tmp_path):
    result = tlab(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tlab: error: ") and phrase in lines[0]
    assert "Traceback" not in result.stderr


def test_malformed_kernel_module_is_one_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import no_such_package_anywhere\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = tlab("list", "--kernel-module", str(bad))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "ModuleNotFoundError" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_debug_shows_the_traceback():
    result = tlab("list", "--kernel-module", "nope.py", env={"TLAB_DEBUG": "1"})
    assert result.returncode != 0 and "Traceback" in result.stderr
