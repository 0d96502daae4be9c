"""A project's own kernel modules, listed once in its pyproject.toml:

    [tool.tlab]
    kernel-modules = ["kernels/scaled_relu.py"]

Paths are relative to the folder of the pyproject.toml. Every command that takes
`-m/--kernel-module` loads these first (from ROOT, by default the current folder; the
current folder's where ROOT's lists none), and the
runtime (`tritonbench_lab.ops.kernel`, `tuned.lookup`) finds a kernel listed in the current
folder's without being told its module. A folder without the file, or a file without the
table, lists none. Every mistake in the table is one TlabError line naming the file.

Python 3.11 reads TOML with tomllib; 3.10 has none and tlab depends on no TOML reader, so
there the [tool.tlab] table alone is read by hand, as the simple TOML these docs show
(`key = [...]` lists of quoted strings, over one line or several, comments after `#`).
No torch.
"""

from __future__ import annotations

import re
from pathlib import Path

from tritonbench_lab.errors import TlabError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

PYPROJECT = "pyproject.toml"
KERNEL_MODULES = "kernel-modules"


def kernel_modules(folder: str | Path) -> list[Path]:
    """The kernel modules folder/pyproject.toml lists in [tool.tlab] (absolute paths, in
    its order); [] without the file or the table."""
    path = Path(folder) / PYPROJECT
    if not path.is_file():
        return []
    table = _tlab_table(path)
    if table is None:
        return []
    unknown = [key for key in table if key != KERNEL_MODULES]
    if unknown:
        raise TlabError(f"{path}: [tool.tlab] has unknown key(s) {', '.join(unknown)}: "
                        f"accepted is {KERNEL_MODULES}")
    listed = table.get(KERNEL_MODULES, [])
    if not isinstance(listed, list) or not all(isinstance(entry, str) for entry in listed):
        raise TlabError(f"{path}: [tool.tlab] {KERNEL_MODULES} must be a list of paths "
                        f"(quoted, relative to {Path(folder).resolve()}), got {listed!r}")
    modules = []
    for entry in listed:
        module = Path(folder).resolve() / entry
        if not module.is_file():
            raise TlabError(f"{path}: [tool.tlab] {KERNEL_MODULES} lists {entry!r}, which does "
                            f"not exist (paths are relative to {Path(folder).resolve()})")
        modules.append(module)
    return modules


def _tlab_table(path: Path) -> dict | None:
    text = path.read_text()
    if tomllib is None:
        return read_by_hand(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TlabError(f"{path} is not valid TOML: {err}") from None
    table = data.get("tool", {}).get("tlab")
    if table is not None and not isinstance(table, dict):
        raise TlabError(f"{path}: tool.tlab must be a table ([tool.tlab])")
    return table


_HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*(?:#.*)?$")
_ENTRY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=\s*(.*)$", re.S)
_STRING = re.compile(r"\"([^\"]*)\"|'([^']*)'")


def read_by_hand(text: str) -> dict | None:
    """The [tool.tlab] table of a pyproject.toml's text, read without a TOML library (module
    docstring): {key: a list of strings, or the value's text when it is not a list}."""
    table, entry, inside = None, "", False
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header and not entry:
            inside = header.group(1).strip() == "tool.tlab"
            if inside and table is None:
                table = {}
            continue
        if inside:
            entry = f"{entry} {_without_comment(line)}".strip()
            if entry and _complete(entry):
                _add_entry(table, entry)
                entry = ""
    return table


def _complete(entry: str) -> bool:
    """Whether `key = value` is whole: a list must be closed (it may span lines)."""
    value = _without_strings(entry.partition("=")[2]).strip()
    return not value.startswith("[") or value.count("]") >= value.count("[")


def _add_entry(table: dict, entry: str) -> None:
    match = _ENTRY.match(entry)
    if match is None:
        return
    key, value = match.group(1), match.group(2).strip()
    if value.startswith("["):
        table[key] = [a or b for a, b in _STRING.findall(value)]
    else:
        found = _STRING.fullmatch(value)
        table[key] = (found.group(1) or found.group(2)) if found else value


def _without_strings(text: str) -> str:
    return _STRING.sub("", text)


def _without_comment(line: str) -> str:
    """The line up to a `#` outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#":
            return line[:index]
    return line
