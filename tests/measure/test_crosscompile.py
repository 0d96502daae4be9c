"""Every built-in kernel compiles for Hopper (sm_90) on this machine, GPU or not: the
interpreter the other CPU tests use runs kernels as Python and lets through code that
Triton's compiler refuses (crosscompile.py)."""

import os
import subprocess
import sys

from helpers.paths import REPO

from tritonbench_lab.kernels import builtin_names, get_spec
from tritonbench_lab.measure.crosscompile import compile_shapes, covering_configs
from tritonbench_lab.space import HOPPER


def _tlab_compile(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-m", "tritonbench_lab", "compile", *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_every_kernel_compiles_for_hopper():
    """One process for every built-in kernel (a process per kernel spent as long importing
    torch as compiling): a line each, and exit 0 only where every config compiled."""
    done = _tlab_compile()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    compiled = {line.split(": ")[0] for line in done.stdout.splitlines()
                if "configs compiled for sm_90" in line}
    assert set(builtin_names()) <= compiled, done.stdout[-3000:]  # and the project's own (axpy)


def test_tlab_compile_names_what_fails_in_a_users_module(tmp_path):
    """The example kernel with its scale read from a plain Python global, which the
    interpreter runs and the compiler refuses (the bug matmul's GELU epilogue had on its first
    GPU run): exit 1, and a line naming the kernel, the config and the error."""
    source = (REPO / "examples" / "axpy.py").read_text()
    broken = source.replace("tl.store(z_ptr + offsets, alpha * x + y, mask=mask)",
                            "tl.store(z_ptr + offsets, SCALE * x + y, mask=mask)")
    assert broken != source
    module = tmp_path / "axpy_broken.py"
    module.write_text(broken + "\nSCALE = 2.0\n")
    done = _tlab_compile("-m", str(module), "--kernel", "axpy")
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    assert "axpy: 0 of" in done.stdout and "CompilationError" in done.stdout


def test_covering_configs_hold_every_value_of_every_parameter():
    configs = [{"A": a, "B": b, "C": c} for a in (1, 2, 3) for b in (0, 1) for c in (4, 8)]
    chosen = covering_configs(configs)
    assert len(chosen) == 3  # three values of A need three configs, and three suffice
    for key in ("A", "B", "C"):
        assert {c[key] for c in chosen} == {c[key] for c in configs}


def test_covering_configs_skip_values_compiled_at_an_earlier_shape():
    """compile_errors walks the small shapes in turn: at a later shape only the values no
    earlier shape compiled need a config (layernorm's walked tiles, kept only where rows are
    wider than a tile)."""
    configs = [{"A": a, "B": b} for a in (1, 2, 3) for b in (0, 1)]
    assert covering_configs(configs, covered={("A", 1), ("A", 2), ("B", 0), ("B", 1)}) == [
        {"A": 3, "B": 0}]
    assert covering_configs(configs, covered={(k, v) for c in configs for k, v in c.items()}) == []


def test_compile_shapes_reach_what_only_wide_rows_keep():
    """Small layernorm shapes walk their rows at most in one step of 1,024 columns (a tile no
    wider than the padded row); the compile shapes end with one whose walks take every tile,
    so each walked branch compiles on a CPU."""
    spec = get_spec("layernorm")

    def walked(shape) -> set[int]:
        kept, _ = spec.space.prune(dict(shape.dims), 2, HOPPER)
        return {c["TILE_COLS"] for c in kept} - {0}

    assert set().union(*(walked(s) for s in spec.small_shapes)) == {1024}
    shapes = compile_shapes(spec)
    assert shapes[:len(spec.small_shapes)] == list(spec.small_shapes)
    assert walked(shapes[-1]) == {1024, 2048, 4096}
