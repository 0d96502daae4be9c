"""The first hour without a GPU, as a newcomer meets it: after an interpreter sweep, the views
find its rows (and never mix them with a GPU's), the sweep suggests only what runs there, and
generated pictures land in a folder git ignores, never in the committed plots/."""

import shutil
import subprocess

from helpers import commands
from helpers.fixture_results import SLUG, write_softmax_fixture
from helpers.paths import REPO

from tritonbench_lab.cli.options import GENERATED

DEFAULT_OUT = str(GENERATED)


def tlab(*args, cwd):
    return commands.tlab(*args, cwd=cwd, env={"PYTHONDONTWRITEBYTECODE": "1"})


def test_pictures_reports_and_comparisons_go_to_an_ignored_folder_by_default(tmp_path):
    write_softmax_fixture(tmp_path)
    shutil.copytree(tmp_path / "results" / SLUG, tmp_path / "results" / "other-gpu")
    for args in (["plot"], ["report"], ["compare", SLUG, "other-gpu"]):
        done = tlab(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    out = tmp_path / DEFAULT_OUT
    assert (out / SLUG / "softmax-fp32.svg").is_file()
    assert (out / SLUG / "REPORT.md").is_file()
    assert (out / "compare" / f"{SLUG}-vs-other-gpu.md").is_file()
    assert not (tmp_path / "plots").exists()  # the committed folder: `make plots` alone
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{DEFAULT_OUT}/{SLUG}/REPORT.md"],
                             cwd=REPO)
    assert ignored.returncode == 0, f"git does not ignore {DEFAULT_OUT}/"


def _interpreter_results(root):
    """Rows as an interpreter sweep files them: under results/interpreter/ (fixture rows)."""
    write_softmax_fixture(root)
    (root / "results" / SLUG).rename(root / "results" / "interpreter")


def test_with_no_gpu_results_plot_and_report_draw_the_interpreters_and_say_so(tmp_path):
    _interpreter_results(tmp_path)
    for command in ("plot", "report"):
        done = tlab(command, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        notes = [line for line in done.stdout.splitlines() if "interpreter" in line
                 and "wrote" not in line]
        assert len(notes) == 1 and "no gpu results" in notes[0].lower(), done.stdout
        assert "not GPU numbers" in notes[0]
    out = tmp_path / DEFAULT_OUT / "interpreter"
    assert (out / "softmax-fp32.svg").is_file() and (out / "REPORT.md").is_file()


def test_interpreter_rows_are_never_drawn_beside_a_gpus_unless_named(tmp_path):
    _interpreter_results(tmp_path)
    shutil.copytree(tmp_path / "results" / "interpreter", tmp_path / "results" / SLUG)
    done = tlab("plot", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "interpreter" not in done.stdout
    assert sorted(p.name for p in (tmp_path / DEFAULT_OUT).iterdir()) == [SLUG]
    named = tlab("report", "--gpu-name", "interpreter", cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    assert (tmp_path / DEFAULT_OUT / "interpreter" / "REPORT.md").is_file()


def test_an_interpreter_sweep_suggests_what_runs_there_and_not_calibrate(tmp_path):
    done = tlab("sweep", "add", "--interpret", "--shapes", "1000", "--space", "default",
                "--baselines", "torch", "--confirm", "0", "--root", str(tmp_path / "lab"),
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "calibrate" not in said
    assert f"tlab plot --gpu-name interpreter --root {tmp_path / 'lab'}" in said
    assert f"tlab report --gpu-name interpreter --root {tmp_path / 'lab'}" in said
    # and what it suggests runs here
    for command in ("plot", "report"):
        shown = tlab(command, "--gpu-name", "interpreter", "--root", str(tmp_path / "lab"),
                     cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr


def test_a_gpu_not_found_names_the_ones_there_the_interpreter_included(tmp_path):
    _interpreter_results(tmp_path)
    done = tlab("compare", "nvidia-h200", "nvidia-h100", cwd=tmp_path)
    assert done.returncode == 2
    assert "no results for 'nvidia-h200'" in done.stderr
    assert "(there: interpreter)" in done.stderr
    assert not (tmp_path / "build").exists()


def test_space_default_runs_where_the_kernels_default_config_is_pruned(tmp_path):
    """softmax's default config holds a row in one program, which 131,072 columns overflow:
    `--space default` sweeps the untuned config there instead (KernelSpec.untuned_config),
    and the winner is that config."""
    from tritonbench_lab.data.store import load_winners
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.space import config_text

    spec = get_spec("softmax")
    shape = spec.shape(2, 131072)
    done = tlab("sweep", "softmax", "--interpret", "--space", "default", "--shapes", str(shape),
                "--dtype", "fp32", "--baselines", "torch", "--confirm", "0", "--root",
                str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (won,) = load_winners(tmp_path / "configs" / "interpreter" / "softmax.csv")
    assert won.config == config_text(spec.untuned_config(shape, "fp32"))
    assert won.config != config_text(spec.space.default)
