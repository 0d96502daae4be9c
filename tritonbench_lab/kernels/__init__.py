"""The kernel registry: name -> KernelSpec, plus kernels loaded from a user's own module.

Adding a built-in kernel is one module in this folder plus one line in `_BUILTIN` below.
A user's module (`tlab ... --kernel-module my_kernels.py`, or listed in the project's
pyproject.toml: data/project.py) defines `SPEC = KernelSpec(...)` or `SPECS = [...]` the same
way and is loaded with `load_kernel_module`, which remembers the file and the project folder
whose configs/ hold the kernel's winners (`origin`).

Kernel modules import only the contract at the package root (spec, space, errors), torch,
triton and each other. Their source hash (measure/source.py) covers their code and the
kernel modules they import, so an edit to one makes its stored rows stale.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from pathlib import Path

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import config_text
from tritonbench_lab.spec import KernelSpec

# name -> "module:attribute"; modules are imported on first use, so listing names is cheap.
_BUILTIN: dict[str, str] = {
    "matmul": "tritonbench_lab.kernels.matmul:SPEC",
    "matmul_gelu": "tritonbench_lab.kernels.matmul_gelu:SPEC",
    "matmul_gelu_tanh": "tritonbench_lab.kernels.matmul_gelu:TANH_SPEC",
    "matmul_fp8": "tritonbench_lab.kernels.matmul_fp8:SPEC",
    "matmul_fp8_rowwise": "tritonbench_lab.kernels.matmul_fp8:ROWWISE_SPEC",
    "softmax": "tritonbench_lab.kernels.softmax:SPEC",
    "rmsnorm": "tritonbench_lab.kernels.rmsnorm:SPEC",
    "add_rmsnorm": "tritonbench_lab.kernels.rmsnorm:ADD_SPEC",
    "layernorm": "tritonbench_lab.kernels.layernorm:SPEC",
    "add": "tritonbench_lab.kernels.add:SPEC",
    "rope": "tritonbench_lab.kernels.rope:SPEC",
}

# Kernels from user modules, by name; they may not shadow built-in names.
_USER: dict[str, KernelSpec] = {}
# User kernel name -> (its module's file, its project's folder), both absolute.
_ORIGIN: dict[str, tuple[Path, Path]] = {}


def names() -> list[str]:
    """Every known kernel name: built-ins first, then user kernels, in registration order."""
    return list(_BUILTIN) + [n for n in _USER if n not in _BUILTIN]


def builtin_names() -> list[str]:
    """The kernels that ship with tlab, in registration order."""
    return list(_BUILTIN)


def get_spec(name: str) -> KernelSpec:
    """The spec registered under `name`; an unknown name lists the known ones."""
    if name in _USER:
        return _USER[name]
    if name not in _BUILTIN:
        known = names()
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if Path(f"{name}.py").is_file():  # the user's own module, not loaded
            hint = f" ({name}.py in this folder is not loaded: -m {name}.py loads it)"
        raise TlabError(f"unknown kernel {name!r}{hint}: known kernels are {', '.join(known)}; "
                        f"a kernel of your own once its module is loaded (-m FILE.py, module=, "
                        f"or [tool.tlab] kernel-modules in the current folder's pyproject.toml)")
    module_name, attr = _BUILTIN[name].split(":")
    return getattr(importlib.import_module(module_name), attr)


def all_specs() -> list[KernelSpec]:
    return [get_spec(n) for n in names()]


def load_kernel_module(path: str | Path, project: str | Path | None = None) -> list[KernelSpec]:
    """Import a user's kernel module and register the specs it defines; `project` is the
    folder whose configs/ hold their winners (default: the current folder).

    The module must define `SPEC` (one KernelSpec) or `SPECS` (a list of them). Any problem
    (missing file, an exception while importing, no specs, a name clash) is a TlabError with
    one line that names the file.
    """
    path = Path(path)
    specs = _specs_of(_import_user_module(path), path)
    home = Path(project if project is not None else ".").resolve()
    for spec in specs:
        _USER[spec.name] = spec
        _ORIGIN[spec.name] = (path.resolve(), home)
    return specs


def origin(name: str) -> tuple[Path, Path] | None:
    """(module file, project folder) of a user kernel; None for a built-in or unknown one."""
    return _ORIGIN.get(name) if name in _USER else None


def _import_user_module(path: Path):
    """The module at `path`, imported under a name of its own; whatever its code raises
    becomes a TlabError that names the file (and the line of a syntax error)."""
    if not path.exists():
        raise TlabError(f"kernel module {str(path)!r} does not exist")
    if not path.is_file() or path.suffix != ".py":
        raise TlabError(f"kernel module {str(path)!r} is not a .py file")
    module_name = f"tlab_user_kernels_{path.stem}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise TlabError(f"kernel module {str(path)!r} cannot be imported")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module  # dataclasses and triton.jit look modules up by name
    try:
        loader_spec.loader.exec_module(module)
    except TlabError as err:
        raise TlabError(f"kernel module {str(path)!r}: {err}") from err
    except Exception as err:  # the user's code: report it in one line, whatever it raised
        sys.modules.pop(module_name, None)
        where = ""
        if isinstance(err, SyntaxError) and err.lineno:
            where = f" (line {err.lineno})"
        raise TlabError(
            f"kernel module {str(path)!r} failed to import{where}: {type(err).__name__}: {err}"
        ) from err
    return module


def _specs_of(module, path: Path) -> list[KernelSpec]:
    """The KernelSpecs an imported user module defines (SPECS, else SPEC), none of them
    named like a built-in kernel."""
    if hasattr(module, "SPECS"):
        specs = list(module.SPECS)
    elif hasattr(module, "SPEC"):
        specs = [module.SPEC]
    else:
        raise TlabError(f"kernel module {str(path)!r} defines neither SPEC nor SPECS")
    for spec in specs:
        if not isinstance(spec, KernelSpec):
            raise TlabError(
                f"kernel module {str(path)!r}: SPEC/SPECS must hold KernelSpec objects, "
                f"got {type(spec).__name__}"
            )
        if spec.name in _BUILTIN:
            raise TlabError(
                f"kernel module {str(path)!r}: name {spec.name!r} is taken by a built-in kernel"
            )
    names = [spec.name for spec in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TlabError(f"kernel module {str(path)!r}: SPECS names {', '.join(twice)} more than "
                        f"once: each kernel needs a name of its own")
    return specs


def default_config_text(name: str) -> tuple[str, ...] | None:
    """The untuned default config of a kernel tlab knows, as rows write configs: its text,
    then (when the space grew parameters since) the texts rows measured before each of them
    carry (`added` lists parameters in the order they were added). None for a kernel tlab
    does not know (pictures then draw no default line)."""

    if name not in names():
        return None
    space = get_spec(name).space
    default = dict(space.default)
    texts = [config_text(default)]
    for param in reversed([k for k, v in space.added.items() if default.get(k) == v]):
        default.pop(param)
        texts.append(config_text(default))
    return tuple(dict.fromkeys(texts))
