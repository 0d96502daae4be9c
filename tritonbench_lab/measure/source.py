"""Which code measured a row: a hash of a kernel's source, stored in every row (`source`),
so that a sweep resumed after an edit of the kernel measures again instead of keeping the
old code's numbers, and winners compare only rows of the newest code (winners.py)."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
from pathlib import Path

from tritonbench_lab.spec import KernelSpec


def source_hash(spec: KernelSpec) -> str:
    """A hash of the code of the file the kernel is defined in, and of the kernel modules of
    this package it imports (matmul's persistent kernel lives beside it): after an edit of
    that code, resume measures again instead of keeping numbers of the old code. Comments,
    docstrings and layout do not count (the hash is of the syntax tree without docstrings),
    so rewording them keeps every measurement."""
    path = Path(inspect.getsourcefile(spec.launch) or "")
    if not path.is_file():
        return "unknown"
    try:
        tree = ast.parse(path.read_text())
    except (SyntaxError, UnicodeDecodeError):
        return hashlib.sha256(path.read_bytes()).hexdigest()[:10]
    dumps = [_code_dump(tree)]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(KERNELS_PACKAGE):
            found = importlib.util.find_spec(node.module)
            if found and found.origin and Path(found.origin).is_file():
                dumps.append(_code_dump(ast.parse(Path(found.origin).read_text())))
    return hashlib.sha256("\n".join(dumps).encode()).hexdigest()[:10]


KERNELS_PACKAGE = "tritonbench_lab.kernels."


def _code_dump(tree: ast.Module) -> str:
    """The module's code as text without its docstrings, the same on every Python."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return _dump(tree)


def _dump(value) -> str:
    """A node as its type and its non-empty fields. Not ast.dump: its text gains fields from
    one Python to the next (3.12's empty type_params on every def; 3.13 leaves empty fields
    out), so one file hashed differently on CI's 3.11 and the GPU machine's 3.12, and a sweep
    resumed on the other measured everything again."""
    if isinstance(value, ast.AST):
        fields = [f"{name}={_dump(v)}" for name, v in ast.iter_fields(value)
                  if v is not None and v != []]
        return f"{type(value).__name__}({', '.join(fields)})"
    if isinstance(value, list):
        return f"[{', '.join(_dump(v) for v in value)}]"
    return repr(value)
