"""A kernel of your own wherever a built-in one goes: `-m` on every command that names kernels
(export, explain, targets, plot, report beside list, sweep, check, ...), and a project's
kernel modules listed once in its pyproject.toml ([tool.tlab]), which every such command
loads without -m."""

import json
import shutil

import pytest
from helpers.commands import tlab
from helpers.fixture_results import record, winner, write_winners
from helpers.paths import REPO

from tritonbench_lab.cli.options import kernel_modules_of
from tritonbench_lab.data.store import append_rows

AXPY = str(REPO / "examples" / "axpy.py")
GPU = "fixture-gpu"
TUNED = "BLOCK=4096 num_warps=8"


@pytest.fixture
def root(tmp_path):
    """TEST DATA: a folder of axpy winners on a fixture GPU, at 2^20 (tlab's kernel 2x the
    PyTorch op) and 2^24 (the op faster), and their results rows."""
    write_winners(tmp_path / "configs" / GPU / "axpy.csv", [
        winner("1048576", TUNED, dtype="fp32", kernel="axpy", p50_ms=1.0, op_p50_ms=2.0),
        winner("16777216", TUNED, dtype="fp32", kernel="axpy", p50_ms=1.0, op_p50_ms=0.8)])
    rows = [record(provider, config, shape, p50, kernel="axpy")
            for shape in ("1048576", "16777216")
            for provider, config, p50 in (("triton", TUNED, 1.0), ("torch", "", 2.0),
                                          ("triton", "BLOCK=1024 num_warps=4", 1.5))]
    append_rows(tmp_path / "results" / GPU / "axpy.csv", rows)
    return tmp_path


def _one_line_error(done) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_export_takes_your_kernel_module(root):
    done = tlab("export", "axpy", "-m", AXPY, "--format", "json", "--root", str(root),
                "--out", str(root / "exported"))
    assert done.returncode == 0, done.stderr
    table = json.loads((root / "exported" / f"axpy-{GPU}.json").read_text())
    assert table == {"fp32": {"1048576": {"BLOCK": 4096, "num_warps": 8},
                              "16777216": {"BLOCK": 4096, "num_warps": 8}}}


def test_an_autotune_key_your_kernel_does_not_take_is_refused_before_anything_is_written(root):
    """The autotune export's KEY is the spec's autotune_key, else its dims: a kernel whose
    size argument is named otherwise (n_elements for the dim n) would have @triton.autotune
    refuse KEY at its first launch, so the export names both and writes nothing."""
    assert tlab("export", "axpy", "-m", AXPY, "--root", str(root), "--out",
                str(root / "exported")).returncode == 0
    assert "KEY = ['n']" in (root / "exported" / "axpy_configs.py").read_text()
    source = (REPO / "examples" / "axpy.py").read_text()
    renamed = source.replace("    n, alpha,  # length", "    n_elements, alpha,  # length")
    renamed = renamed.replace("mask = offsets < n\n", "mask = offsets < n_elements\n")
    assert renamed.count("n_elements") == 2
    module = root / "axpy_renamed.py"
    module.write_text(renamed)
    # from the folder of the module (the repository's pyproject.toml lists examples/axpy.py:
    # another file defining axpy would be refused as a clash there)
    stderr = _one_line_error(tlab("export", "axpy", "-m", str(module), "--root", str(root),
                                  "--out", str(root / "refused"), cwd=root))
    assert ("KEY would be n, which no Triton kernel of axpy's module takes (axpy_kernel takes "
            "x_ptr, y_ptr, z_ptr, n_elements, alpha, BLOCK); set autotune_key=") in stderr
    assert not (root / "refused").exists()
    keyed = renamed.replace('    name="axpy",', '    name="axpy", autotune_key=("n_elements",),')
    assert keyed != renamed
    module.write_text(keyed)
    assert tlab("export", "axpy", "-m", str(module), "--root", str(root), "--out",
                str(root / "keyed"), cwd=root).returncode == 0
    assert "KEY = ['n_elements']" in (root / "keyed" / "axpy_configs.py").read_text()


def test_explain_takes_your_kernel_module(root):
    done = tlab("explain", "axpy", "-m", AXPY, "--shape", "1048576", "--dtype", "fp32",
                "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert (f"{GPU} fp32: tlab's kernel, {TUNED}; inside torch.compile tlab's kernel (tuned "
            "here: 2.00x the PyTorch op") in done.stdout


def test_targets_hold_your_kernel_to_the_rule_ops_runs_it_by(root):
    """Your kernel's target is the rule the runtime uses it by: faster than the PyTorch op at
    each tuned shape. The shape where the op was faster is a miss (exit 1)."""
    done = tlab("targets", "-m", AXPY, "--root", str(root))
    assert done.returncode == 1, done.stderr
    assert f"### axpy: winner / the PyTorch op > 1, the rule ops runs it by ({GPU})" \
        in done.stdout
    assert "| fp32 | 1048576 | `BLOCK=4096 num_warps=8` | 1.0000 | 2.0000 | 2.00x | yes |" \
        in done.stdout
    assert "| fp32 | 16777216 | `BLOCK=4096 num_warps=8` | 1.0000 | 0.8000 | 0.80x | **no** |" \
        in done.stdout
    # not loaded (from a folder whose pyproject.toml lists none): not judged, as before
    without = tlab("targets", "--root", str(root), cwd=root)
    assert "axpy" not in without.stdout


def test_plot_and_report_take_your_kernel_module_for_its_untuned_config(root):
    out = root / "pictures"
    for command in ("plot", "report"):
        done = tlab(command, "-m", AXPY, "--root", str(root), "--gpu-name", GPU, "--out", str(out))
        assert done.returncode == 0, done.stderr
    assert "the config one writes without tuning: `BLOCK=1024 num_warps=4`" in \
        (out / GPU / "REPORT.md").read_text()
    assert list((out / GPU).glob("axpy-fp32*.svg"))


def _project(folder, listed=("kernels/axpy.py",)):
    """A user's project: examples/axpy.py copied in, listed in its pyproject.toml."""
    (folder / "kernels").mkdir(exist_ok=True)
    (folder / "kernels" / "axpy.py").write_text((REPO / "examples" / "axpy.py").read_text())
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "mine"\n\n[tool.tlab]\n'
        f"kernel-modules = [{', '.join(json.dumps(p) for p in listed)}]\n")
    return folder


def test_commands_load_the_kernel_modules_a_project_lists(root, monkeypatch):
    """From the project's folder (the current folder, or ROOT), without -m."""
    project = _project(root)
    monkeypatch.chdir(project)
    assert kernel_modules_of(None, project) == (str(project.resolve() / "kernels" / "axpy.py"),)
    listed = tlab("list", cwd=project)
    assert listed.returncode == 0 and "axpy" in listed.stdout, listed.stderr
    done = tlab("export", "axpy", "--format", "json", "--out", "exported", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / "exported" / f"axpy-{GPU}.json").is_file()
    # explain reads the configs of the project that lists the kernel: ./configs
    done = tlab("explain", "axpy", "--shape", "1048576", "--dtype", "fp32", cwd=project)
    assert done.returncode == 0, done.stderr
    assert f"{GPU} fp32: tlab's kernel, {TUNED}" in done.stdout
    # --root names the project folder
    done = tlab("export", "axpy", "--root", str(project), "--out", str(project / "again"))
    assert done.returncode == 0, done.stderr
    # -m adds to the table; the same file given twice is loaded once
    done = tlab("list", "-m", "kernels/axpy.py", cwd=project)
    assert done.returncode == 0, done.stderr
    # another file defining the listed kernel's name would replace it: refused
    said = _one_line_error(tlab("list", "-m", AXPY, cwd=project))
    assert "kernel 'axpy' is defined in both" in said and AXPY in said, said


def test_a_scratch_root_keeps_the_kernels_the_current_folder_lists(root, tmp_path_factory,
                                                                   monkeypatch):
    """--root elsewhere (results and configs in a scratch folder whose pyproject.toml lists
    none) loads the modules the current folder's lists, as the runtime does; a ROOT that
    lists its own is the project, and its list is the one read."""
    project = _project(root)
    scratch = tmp_path_factory.mktemp("scratch")
    monkeypatch.chdir(project)
    assert kernel_modules_of(None, scratch) == (str(project.resolve() / "kernels" / "axpy.py"),)
    shutil.copytree(project / "configs", scratch / "configs")
    done = tlab("explain", "axpy", "--shape", "1048576", "--dtype", "fp32",
                "--root", str(scratch), cwd=project)
    assert done.returncode == 0, done.stderr
    assert f"{GPU} fp32: tlab's kernel, {TUNED}" in done.stdout
    (scratch / "mine.py").write_text((REPO / "examples" / "axpy.py").read_text())
    (scratch / "pyproject.toml").write_text('[tool.tlab]\nkernel-modules = ["mine.py"]\n')
    assert kernel_modules_of(None, scratch) == (str(scratch.resolve() / "mine.py"),)
    assert kernel_modules_of(None, None) == (str(project.resolve() / "kernels" / "axpy.py"),)


def test_two_files_defining_one_kernel_name_are_refused_naming_both(tmp_path):
    """The later file would replace the earlier one's kernel silently: rows and configs from
    whichever loaded last."""
    other = tmp_path / "other_axpy.py"
    other.write_text((REPO / "examples" / "axpy.py").read_text())
    for order in ((AXPY, str(other)), (str(other), AXPY)):
        said = _one_line_error(tlab("list", "-m", order[0], "-m", order[1], cwd=tmp_path))
        assert f"kernel 'axpy' is defined in both {order[0]} and {order[1]}" in said, said
    # the same file twice is one file
    assert tlab("list", "-m", AXPY, "-m", AXPY, cwd=tmp_path).returncode == 0


def test_a_listed_module_that_does_not_exist_is_one_line_and_nothing_is_written(tmp_path):
    project = _project(tmp_path, listed=("kernels/axpy.py", "kernels/gone.py"))
    for args in (("list",), ("sweep", "axpy", "--sizes", "1000", "--dtype", "fp32"),
                 ("check",), ("export", "axpy")):
        said = _one_line_error(tlab(*args, cwd=project))
        assert ("pyproject.toml: [tool.tlab] kernel-modules lists 'kernels/gone.py', which "
                "does not exist") in said, args
    assert sorted(p.name for p in project.iterdir()) == ["kernels", "pyproject.toml"]


# A kernel no other test uses, written as a new author would from docs/writing-a-kernel.md.
SCALED_RELU = '''
"""y = scale * max(x, 0) over a matrix. Work: 2 flops an element; bytes: read x, write y."""

import torch
import triton
import triton.language as tl

from tritonbench_lab.space import Space, split_config
from tritonbench_lab.spec import GBPS, Cost, KernelSpec, Shape, Tolerance

SCALE = 1.5


@triton.jit
def scaled_relu_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0) * scale, mask=mask)


def launch(inputs, config, outputs):
    x, (y,) = inputs["x"], outputs
    meta, options = split_config(config)
    grid = (triton.cdiv(x.numel(), meta["BLOCK"]),)
    scaled_relu_kernel[grid](x, y, x.numel(), SCALE, **meta, **options)
    return outputs


def make_inputs(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["rows"], shape["cols"], generator=gen, device=device)
    return {"x": x.to(dtype)}


def cost(shape, dtype):
    n = shape["rows"] * shape["cols"]
    return Cost(flops=2 * n, bytes=2 * n * dtype.itemsize)


SPEC = KernelSpec(
    name="scaled_relu",
    summary="y = 1.5 * relu(x)",
    dims=("rows", "cols"),
    dtypes=(torch.float32,),
    launch=launch,
    allocate_outputs=lambda inputs: (torch.empty_like(inputs["x"]),),
    reference=lambda inputs: (SCALE * torch.relu(inputs["x"].double()),),
    baselines={"torch": lambda inputs: SCALE * torch.relu(inputs["x"])},
    space=Space(params={"BLOCK": (64, 256), "num_warps": (1,)},
                default={"BLOCK": 256, "num_warps": 1}),
    default_shapes=(Shape.of(rows=4096, cols=4096),),
    small_shapes=(Shape.of(rows=3, cols=100),),
    make_inputs=make_inputs,
    tolerance={torch.float32: Tolerance(1e-6, 1e-6)},
    cost=cost,
    metric=GBPS,
    shape_of=lambda inputs: Shape.of(rows=inputs["x"].shape[0], cols=inputs["x"].shape[1]),
)
'''

MODEL_CODE = '''
import torch

from tritonbench_lab.ops import explain, kernel

relu = kernel("scaled_relu")
x = torch.randn(5, 77, generator=torch.Generator().manual_seed(1))
torch.testing.assert_close(relu(x=x), 1.5 * torch.relu(x))
print(explain("scaled_relu", "fp32", "5x77").reason)
'''


def test_a_new_kernel_swept_checked_exported_and_called_from_model_code(tmp_path):
    """The issue's acceptance, in the interpreter: a new module in a new project listed in its
    pyproject.toml; swept, checked (`make check` is `tlab check`), exported, and called
    through the runtime entry point, all from the project's folder without -m."""
    import os
    import subprocess
    import sys

    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scaled_relu.py").write_text(SCALED_RELU)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "model"\n\n[tool.tlab]\nkernel-modules = ["kernels/scaled_relu.py"]\n')
    sweep = tlab("sweep", "scaled_relu", "--interpret", "--sizes", "5x77,3x100", "--confirm", "1",
                 cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    check = tlab("check", "--interpret", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "2 valid row(s)" in check.stdout and "0 error(s)" in check.stdout
    export = tlab("export", "scaled_relu", "--format", "json", cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    exported = json.loads((tmp_path / "build" / "exported" / "scaled_relu-interpreter.json")
                          .read_text())
    assert set(exported["fp32"]) == {"5x77", "3x100"}
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", MODEL_CODE], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tuned here"), done.stdout  # it read the project's configs
