"""A project's kernel modules, listed once in its pyproject.toml ([tool.tlab] kernel-modules):
read with tomllib, or by hand on Python 3.10; a folder without the table lists none; every
mistake in the table is one line naming the file."""

import sys

import pytest
from helpers.paths import REPO

from tritonbench_lab.data.project import PYPROJECT, kernel_modules, read_by_hand
from tritonbench_lab.errors import TlabError


def _project(folder, table: str, files=("kernels/relu.py",)):
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("SPEC = None\n")
    (folder / PYPROJECT).write_text('[project]\nname = "mine"\n\n' + table)
    return folder


def test_the_listed_modules_are_paths_relative_to_the_pyproject(tmp_path):
    _project(tmp_path, '[tool.tlab]\nkernel-modules = ["kernels/relu.py", "b.py"]\n',
             files=("kernels/relu.py", "b.py"))
    assert kernel_modules(tmp_path) == [tmp_path.resolve() / "kernels" / "relu.py",
                                        tmp_path.resolve() / "b.py"]


def test_a_folder_without_a_pyproject_or_without_the_table_lists_none(tmp_path):
    assert kernel_modules(tmp_path) == []
    _project(tmp_path, '[tool.ruff]\nline-length = 100\n')
    assert kernel_modules(tmp_path) == []


def test_this_repository_lists_the_example_kernel():
    """So that after the README's `tlab sweep axpy -m examples/axpy.py` (configs/interpreter/
    axpy.csv), `make check` knows axpy without -m."""
    assert kernel_modules(REPO) == [REPO / "examples" / "axpy.py"]


@pytest.mark.parametrize("table, says", [
    ('[tool.tlab]\nkernel-modules = ["kernels/gone.py"]\n',
     "kernel-modules lists 'kernels/gone.py', which does not exist"),
    ('[tool.tlab]\nkernel-modules = "kernels/relu.py"\n',
     "kernel-modules must be a list of paths"),
    ('[tool.tlab]\nkernel_modules = ["kernels/relu.py"]\n',
     "unknown key(s) kernel_modules: accepted is kernel-modules"),
    ('[tool.tlab\nkernel-modules = ["kernels/relu.py"]\n', "is not valid TOML"),
])
def test_a_mistake_in_the_table_is_one_line_naming_the_file(tmp_path, table, says):
    _project(tmp_path, table)
    with pytest.raises(TlabError) as caught:
        kernel_modules(tmp_path)
    message = str(caught.value)
    assert says in message and str(tmp_path / PYPROJECT) in message and "\n" not in message


@pytest.mark.parametrize("text, table", [
    ('[tool.tlab]\nkernel-modules = ["a.py", \'b c.py\']  # two\n',
     {"kernel-modules": ["a.py", "b c.py"]}),
    ('[tool.other]\nx = 1\n[tool.tlab]  # mine\nkernel-modules = [\n  "a.py",  # first\n'
     '  "b#c.py",\n]\n\n[tool.ruff]\nline-length = 100\n',
     {"kernel-modules": ["a.py", "b#c.py"]}),
    ('[tool.tlab]\n# kernel-modules = ["old.py"]\nkernel-modules = []\n', {"kernel-modules": []}),
    ('[tool.ruff]\nline-length = 100\n', None),
    ('[tool.tlab]\nkernel-modules = "a.py"\n', {"kernel-modules": "a.py"}),
])
def test_python_3_10_reads_the_simple_table_as_tomllib_does(text, table):
    """Python 3.10 has no tomllib and tlab depends on no TOML reader there: the [tool.tlab]
    table is read by hand, and must agree with tomllib (3.11 on) on the tables tlab's docs
    show."""
    assert read_by_hand(text) == table
    if sys.version_info >= (3, 11):  # where tomllib is, the expected tables are its own
        import tomllib

        assert tomllib.loads(text).get("tool", {}).get("tlab") == table
