"""`tlab new NAME`: write a small, complete, correct kernel module NAME.py and its test
test_NAME.py to start from (cli/kernel_template.py). Never overwrites a file."""

from __future__ import annotations

import importlib.util
import keyword
from pathlib import Path
from string import Template
from typing import Annotated

import typer

from tritonbench_lab.cli.kernel_template import KERNEL, TEST
from tritonbench_lab.errors import TlabError


def check_name(name: str) -> None:
    """NAME must be a lower-case identifier that is neither a Python keyword nor a built-in
    kernel, nor begin with `test` (pytest would collect the kernel module as tests)."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import builtin_names

    if not (name.isidentifier() and name.islower()) or keyword.iskeyword(name):
        raise TlabError(f"tlab new {name!r}: the name must be a lower-case Python identifier "
                        "(letters, digits and _) and not a keyword, such as my_op")
    if name in builtin_names():
        raise TlabError(f"tlab new {name}: {name!r} is a built-in kernel; built-in names are "
                        f"{', '.join(builtin_names())}")
    if name.startswith("test"):
        raise TlabError(f"tlab new {name}: a name that begins with 'test' makes pytest collect "
                        "the kernel module as tests; pick another")


def check_unshadowed(name: str) -> None:
    """NAME must not be a module Python finds already (torch, json, one of the user's): the
    kernel module would shadow it, or be shadowed, where both can be imported."""
    if importlib.util.find_spec(name) is not None:
        raise TlabError(f"tlab new {name}: {name!r} is the name of a Python module already "
                        "(the kernel module would shadow it); pick another")


def written_files(name: str, out: Path) -> dict[Path, str]:
    """The files `tlab new` writes, with their text; a TlabError when one exists already."""
    if out.exists() and not out.is_dir():
        raise TlabError(f"--out {str(out)!r} is not a folder")
    files = {out / f"{name}.py": Template(KERNEL).substitute(name=name),
             out / f"test_{name}.py": Template(TEST).substitute(name=name)}
    for path in files:
        if path.exists():
            raise TlabError(f"{str(path)!r} exists already: tlab new never overwrites a file "
                            "(pick another name, or another folder with --out)")
    return files


def new_kernel(
    name: Annotated[str, typer.Argument(
        metavar="NAME", help="The kernel's name: a lower-case identifier, such as my_op.",
        show_default=False)],
    out: Annotated[Path, typer.Option(
        "--out", metavar="DIR", help="Folder to write NAME.py and test_NAME.py into.",
        show_default="the current folder")] = Path("."),
) -> None:
    """Write a kernel module NAME.py (y = x * sigmoid(x), complete and correct: the kernel,
    reference, baselines, space, inputs, tolerances, cost and SPEC) and its test
    test_NAME.py, to make your own from. Never overwrites a file."""
    check_name(name)
    files = written_files(name, out)
    check_unshadowed(name)
    out.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        with path.open("x") as handle:
            handle.write(text)
    module, test = (str(path) for path in files)
    steps = [(f"tlab list -m {module}", "calls each part of SPEC once"),
             (f"python -m pytest {test}", "every config against the reference"),
             (f"tlab sweep {name} -m {module}", "tunes it")]
    width = max(len(command) for command, _ in steps)
    typer.echo(f"wrote {module} (a kernel to make yours) and {test} (its test). Next:")
    for command, why in steps:
        typer.echo(f"  {command:<{width}}  # {why}")
    typer.echo(f"Then list it in your pyproject.toml (`[tool.tlab]` kernel-modules = "
               f"[\"{module}\"]): every command and ops.kernel find it without -m.")


def register(app: typer.Typer) -> None:
    app.command("new")(new_kernel)
