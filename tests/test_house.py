"""House rules that keep the product tree readable: wings that import only what their
docstrings allow, no import cycles, `tlab --help` free of torch, every function-level import
saying why it is late, modules of a readable size, the lab kept apart (and indexed), and
tests that mirror the wings, sharing helpers only through tests/helpers/."""

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tritonbench_lab"
TESTS = REPO / "tests"
ROOT_MODULES = ("spec", "space", "shapes", "errors", "ops", "tuned")
WINGS = ("cli", "data", "gates", "kernels", "measure", "runtime", "search", "views")
# What each part of the package may import from the rest of it (its own part always). The
# wings' docstrings say the same in words.
CONTRACT = {"errors", "shapes", "space", "spec"}
ALLOWED = {
    "errors": set(),
    "shapes": {"errors"},
    "space": {"errors"},
    "spec": {"errors", "shapes", "space", "data", "runtime"},
    "tuned": {"errors", "shapes", "data", "kernels"},
    "ops": CONTRACT | {"tuned", "data", "kernels", "runtime"},
    "data": {"errors", "shapes"},
    "views": {"errors", "shapes", "space", "data"},
    "search": {"errors", "shapes", "space", "data", "tuned"},
    "runtime": CONTRACT | {"tuned", "data", "kernels"},
    "kernels": {"errors", "space", "spec"},
    "measure": CONTRACT | {"tuned", "data", "search", "runtime", "kernels"},
    "gates": CONTRACT | {"tuned", "ops", "data", "measure", "runtime", "views", "kernels"},
    "cli": CONTRACT | {"tuned", "ops", "_moved", *WINGS},
}
# tests/ holds a folder per wing, contract/ for the contract's modules at the package root,
# helpers/ for what tests share, and at its top only the tests that look at the whole tree,
# conftest.py and the two files used by path (a kernel module, a script).
TEST_FOLDERS = {*WINGS, "contract", "helpers"}
TOP_LEVEL_TESTS = {"test_house.py", "test_docs.py", "test_docstrings.py"}
TOP_LEVEL_FILES = {"conftest.py", "planted_kernels.py", "launch_recorder.py"}
# The parts of the package a test folder's modules test (one of them at least).
TESTED_IN = {"contract": CONTRACT, "runtime": {"runtime", "ops", "tuned"},
             **{wing: {wing} for wing in WINGS if wing != "runtime"}}
# A soft size: code lines (no docstrings, comments or blank lines) per module. Functions are
# held to ruff's size and complexity rules (pyproject.toml, `make lint`).
MAX_CODE_LINES = 350


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _part(module: str) -> str:
    """'tritonbench_lab.data.store' -> 'data'; 'tritonbench_lab.spec' -> 'spec'."""
    return module.split(".")[1] if module.count(".") else ""


def _imports(path: Path) -> list[tuple[ast.stmt, list[str], bool]]:
    """(node, the package's modules it imports, inside a function?) per import statement."""
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom) and child.module:
                names = [f"{child.module}.{a.name}" for a in child.names]
                found.append((child, [n if n in MODULES else child.module for n in names],
                              in_function))
            elif isinstance(child, ast.Import):
                found.append((child, [a.name for a in child.names], in_function))
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


def _graph() -> dict[str, set[str]]:
    return {name: {target for _, targets, _ in _imports(path) for target in targets
                   if target in MODULES and target not in (name, "tritonbench_lab")}
            for name, path in MODULES.items()}


def test_the_package_root_is_the_public_surface_and_wings():
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__", "_moved"}
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert top == set(ROOT_MODULES)
    assert folders == set(WINGS)
    for wing in WINGS:
        doc = ast.get_docstring(ast.parse((PACKAGE / wing / "__init__.py").read_text())) or ""
        assert "import" in doc, f"{wing}/__init__.py must say what it may import"


class _Components:
    """The strongly connected components of a graph (Tarjan's algorithm)."""

    def __init__(self, graph: dict[str, set[str]]):
        self.graph, self.found = graph, []
        self.index, self.low, self.stack, self.on_stack = {}, {}, [], set()
        for node in graph:
            if node not in self.index:
                self._visit(node)

    def _visit(self, node: str) -> None:
        self.index[node] = self.low[node] = len(self.index)
        self.stack.append(node)
        self.on_stack.add(node)
        for target in self.graph[node]:
            if target not in self.index:
                self._visit(target)
                self.low[node] = min(self.low[node], self.low[target])
            elif target in self.on_stack:
                self.low[node] = min(self.low[node], self.index[target])
        if self.low[node] == self.index[node]:
            component, member = set(), None
            while member != node:
                member = self.stack.pop()
                self.on_stack.discard(member)
                component.add(member)
            self.found.append(component)


def test_import_cycles_are_found():
    """The helper finds what it must (an always-empty answer would pass the test below)."""
    found = [sorted(c) for c in _Components({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}).found
             if len(c) > 1]
    assert found == [["a", "b", "c"]]
    assert [c for c in _Components({"a": {"b"}, "b": set()}).found if len(c) > 1] == []


def test_no_import_cycles():
    cycles = [sorted(c) for c in _Components(_graph()).found if len(c) > 1]
    assert cycles == []


def test_each_part_imports_only_what_it_may():
    wrong = []
    for name, targets in _graph().items():
        part = _part(name)
        if part in ("", "__main__", "_moved"):
            continue
        for target in targets:
            other = _part(target)
            if other != part and other not in ALLOWED[part]:
                wrong.append(f"{name} imports {target}")
    assert wrong == []


def test_every_late_import_says_why():
    """A function-level import is allowed only with a reason (`# late: ...` on its line, or
    on the line above its group of imports): keeping `tlab --help` free of torch, importing
    triton after TRITON_INTERPRET is set, an optional dependency."""
    silent = []
    for path in MODULES.values():
        lines = path.read_text().splitlines()
        for node, _, in_function in _imports(path):
            if not in_function:
                continue
            above = node.lineno - 2
            while above >= 0 and (not lines[above].strip()
                                  or lines[above].lstrip().startswith(("import ", "from "))):
                above -= 1  # the group's comment sits above its first import
            if "# late:" not in lines[node.lineno - 1] and not (
                    above >= 0 and lines[above].strip().startswith("# late:")):
                silent.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert silent == []


def test_tlab_help_imports_no_torch_triton_pandas_or_matplotlib():
    script = ("import sys\nfrom tritonbench_lab.cli import app\n"
              "try:\n    app(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
              "print(sorted(m for m in ('torch', 'triton', 'pandas', 'matplotlib') "
              "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _code_lines(path: Path) -> int:
    text = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def test_code_lines_are_counted_without_docstrings_comments_or_blanks(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Doc.\n\nMore doc."""\n\n# a comment\nx = 1  # why\n\n\ndef f():\n'
                    '    """Doc."""\n    return (x +\n            1)\n')
    assert _code_lines(path) == 4


@pytest.mark.parametrize("path", sorted(MODULES.values()), ids=lambda p: p.stem)
def test_modules_stay_readable_in_size(path):
    assert _code_lines(path) <= MAX_CODE_LINES, (
        f"{path.relative_to(REPO)} has {_code_lines(path)} code lines: split it where it has "
        "two reasons to change")


def test_no_probe_or_session_log_in_the_product_tree():
    assert not [p for p in PACKAGE.rglob("*.py") if "probe" in p.name]
    assert not (REPO / "scripts").exists(), "one-off scripts belong in lab/"
    assert not list((REPO / "results").rglob("logs")) and not list((REPO / "results").rglob("*.log"))


def test_the_package_and_tests_import_nothing_from_the_lab():
    for path in [*PACKAGE.rglob("*.py"), *TESTS.rglob("*.py")]:
        imported = {t for _, targets, _ in _imports(path) for t in targets}
        assert not {t for t in imported if t == "lab" or t.startswith("lab.")}, path


def test_the_lab_index_names_every_instrument_in_it():
    index = (REPO / "lab" / "README.md").read_text()
    files = sorted(p.name for p in (REPO / "lab").iterdir()
                   if p.is_file() and p.name != "README.md" and p.suffix != ".pyc")
    assert [f for f in files if f"`{f}`" not in index and f"lab/{f}" not in index] == []


# --- the tests ------------------------------------------------------------------------------

def _test_folders() -> set[str]:
    return {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}


def test_test_folders_mirror_the_wings():
    assert _test_folders() == TEST_FOLDERS, (
        "tests/<name>/ for each wing tritonbench_lab/<name>/, contract/ and helpers/ only")
    top = {p.name for p in TESTS.glob("*.py")}
    assert top == TOP_LEVEL_TESTS | TOP_LEVEL_FILES, "a test belongs in its wing's folder"
    assert not list((TESTS / "helpers").glob("test_*.py")), "helpers/ holds no tests"
    strays = [p.relative_to(TESTS) for folder in TEST_FOLDERS - {"helpers"}
              for p in (TESTS / folder).glob("*.py") if not p.name.startswith("test_")]
    assert strays == [], "shared code goes to tests/helpers/"
    # Test folders are not packages: pytest imports each module by its file name alone.
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


@pytest.mark.parametrize("folder", sorted(TEST_FOLDERS - {"helpers"}))
def test_every_test_module_lives_in_the_folder_of_what_it_tests(folder):
    """Each module of tests/<folder>/ imports (at the top or in a test) what that folder
    tests: a module of the wing, of the contract for contract/, or ops and tuned for runtime/."""
    elsewhere = []
    for path in sorted((TESTS / folder).glob("test_*.py")):
        parts = {_part(t) for _, targets, _ in _imports(path) for t in targets if t in MODULES}
        if not parts & TESTED_IN[folder]:
            elsewhere.append(f"{path.relative_to(REPO)} imports only from {sorted(parts)}")
    assert elsewhere == []


def _imported_names(path: Path) -> set[str]:
    """The top-level name of every module `path` imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return names


def test_tests_import_helpers_only_from_tests_helpers():
    wrong = [f"{path.relative_to(REPO)} imports {name}" for path in sorted(TESTS.rglob("*.py"))
             for name in sorted(_imported_names(path))
             if name.startswith("test_") or name == "conftest"]
    assert wrong == [], "move what tests share to tests/helpers/"


def test_every_committed_winner_was_measured_on_todays_kernel_source():
    """Each kernel module's code (docstrings and comments aside) is hashed into every row it
    measures; an edit of it, even of its PyTorch baseline, makes every committed winner of
    that kernel stale on every GPU (`tlab check` warns, a sweep measures it all again). Code
    that changes no kernel belongs outside the kernel's module."""
    from tritonbench_lab.data.store import load_winners
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.source import source_hash

    files = sorted(p for p in (REPO / "configs").glob("*/*.csv"))
    assert files
    for path in files:
        today = source_hash(get_spec(path.stem))
        old = sorted({w.source for w in load_winners(path)} - {today})
        assert not old, (f"{path.relative_to(REPO)}: rows of source {', '.join(old)}, the "
                         f"module's code today hashes to {today}: revert the edit or sweep again")
