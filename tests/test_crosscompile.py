"""Every built-in kernel compiles for Hopper (sm_90) on this machine, GPU or not: the
interpreter the other CPU tests use runs kernels as Python and lets through code that
Triton's compiler refuses (crosscompile.py)."""

import os
import subprocess
import sys
import textwrap

import pytest

from tritonbench_lab.crosscompile import covering_configs
from tritonbench_lab.kernels import names


def _compile_in_a_process(code: str, folder) -> subprocess.CompletedProcess:
    script = folder / "compile_check.py"  # @triton.jit needs its source in a file
    script.write_text(textwrap.dedent(code))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("kernel", names())
def test_every_kernel_compiles_for_hopper(kernel, tmp_path):
    done = _compile_in_a_process(f"""
        from tritonbench_lab.crosscompile import compile_errors, compile_only_for
        from tritonbench_lab.kernels import get_spec
        compile_only_for()
        errors = compile_errors(get_spec({kernel!r}))
        print("\\n".join(errors))
        raise SystemExit(1 if errors else 0)
    """, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_a_kernel_the_interpreter_runs_but_the_compiler_refuses_fails_here(tmp_path):
    """A @triton.jit function reading a plain Python global: fine in the interpreter, a
    CompilationError for any GPU (the bug matmul's epilogue had on its first GPU run)."""
    done = _compile_in_a_process("""
        import torch, triton, triton.language as tl
        from tritonbench_lab.crosscompile import compile_only_for
        SCALE = 2

        @triton.jit
        def scale(x_ptr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) * SCALE)

        compile_only_for()
        try:
            scale[(1,)](torch.ones(16), BLOCK=16)
        except Exception as err:
            print(type(err).__name__, "SCALE" in str(err))
    """, tmp_path)
    assert done.stdout.split() == ["CompilationError", "True"], done.stdout + done.stderr[-2000:]


def test_covering_configs_hold_every_value_of_every_parameter():
    configs = [{"A": a, "B": b, "C": c} for a in (1, 2, 3) for b in (0, 1) for c in (4, 8)]
    chosen = covering_configs(configs)
    assert len(chosen) == 3  # three values of A need three configs, and three suffice
    for key in ("A", "B", "C"):
        assert {c[key] for c in chosen} == {c[key] for c in configs}
