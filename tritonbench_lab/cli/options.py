"""Options shared by the commands, declared once, so a word means one thing everywhere:

    --root        folder holding results/ and configs/ (read or written)
    --out         folder for generated files only (pictures, REPORT.md, exports); pictures,
                  reports and comparisons default to GENERATED, which git ignores (the
                  committed plots/ is written by `make plots` alone)
    --gpu-name    a GPU by name (its slug, e.g. nvidia-h200), or its results folder
    --interpret/--gpu   where kernels run: Triton's CPU interpreter or the GPU
    --dtype       fp32, fp16, bf16, fp8e4m3, fp8e5m2 (each kernel takes some): comma-separated
                  or repeated
    --kernel      a kernel name: comma-separated or repeated
    -m, --kernel-module   a user's kernel module, added to those the project lists in the
                  [tool.tlab] table of ROOT's pyproject.toml (where it lists none, the
                  current folder's), which every command that takes -m loads first
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from tritonbench_lab.data.project import kernel_modules as kernel_modules_in
from tritonbench_lab.data.records import DTYPE_NAMES, dtype_name_of
from tritonbench_lab.data.store import load_winners
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.env import choose_backend

# Where `tlab plot`, `report` and `compare` write by default: a folder git ignores, so that
# looking at results never leaves the committed plots/ stale (`make plots` writes those).
GENERATED = Path("build/plots")


def complete_kernels(incomplete: str) -> list[str]:
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import names

    return [n for n in names() if n.startswith(incomplete)]


def complete_dtypes(incomplete: str) -> list[str]:
    head, _, tail = incomplete.rpartition(",")
    return [f"{head},{d}" if head else d for d in DTYPE_NAMES if d.startswith(tail)]


def split_list(values: list[str] | None) -> list[str] | None:
    """Repeated options whose values may also be comma lists -> one flat list (None: not
    given). An option given only empty values is an empty list, which callers refuse."""
    if values is None:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


Root = Annotated[Path, typer.Option(
    "--root", metavar="DIR", help="Folder holding results/ and configs/.",
    show_default="the current folder")]

GpuName = Annotated[str | None, typer.Option(
    "--gpu-name", metavar="GPU",
    help="A GPU by its slug (e.g. nvidia-h200, as under ROOT/results) or its results folder. "
    "Default: every GPU with results under ROOT (not the interpreter).",
    show_default=False)]

Dtypes = Annotated[list[str] | None, typer.Option(
    "--dtype", metavar="DTYPES",
    help="Dtypes among fp32, fp16, bf16, fp8e4m3, fp8e5m2 (each kernel takes some: `tlab "
    "list`): comma-separated or repeated. Default: all the kernel takes.",
    autocompletion=complete_dtypes, show_default=False)]

Kernels = Annotated[list[str] | None, typer.Option(
    "--kernel", metavar="KERNELS",
    help="Kernels (see `tlab list`): comma-separated or repeated. Default: all.",
    autocompletion=complete_kernels, show_default=False)]

KernelName = Annotated[str, typer.Argument(
    metavar="KERNEL", help="Kernel (see `tlab list`).", autocompletion=complete_kernels,
    show_default=False)]

KernelModules = Annotated[list[Path] | None, typer.Option(
    "--kernel-module", "-m", metavar="FILE",
    help="A Python file defining SPEC = KernelSpec(...) (or SPECS = [...]) for your own "
    "kernels; repeat the option for several files. Added to those the project lists in "
    "[tool.tlab] kernel-modules of the pyproject.toml in --root (where it lists none, the "
    "current folder's), which are always loaded.", show_default=False)]

Interpret = Annotated[bool | None, typer.Option(
    "--interpret/--gpu",
    help="Run kernels in Triton's CPU interpreter (--interpret) or on the GPU (--gpu). "
    "Default: the GPU when CUDA is visible, otherwise the interpreter.", show_default=False)]

def kernel_modules_of(kernel_modules: list[Path] | None, root: Path | None = None
                      ) -> tuple[str, ...]:
    """The user's kernel modules of a command: those ROOT's pyproject.toml lists ([tool.tlab]
    kernel-modules), else (ROOT lists none: a scratch --root) the current folder's, where
    the runtime reads them; then those given with -m; each file once. A listed file that
    does not exist is a TlabError."""
    listed = [str(p) for p in kernel_modules_in(root)] if root is not None else []
    listed = listed or [str(p) for p in kernel_modules_in(Path("."))]
    given = [str(p) for p in kernel_modules or ()]
    unique: dict[Path, str] = {}
    for path in [*listed, *given]:
        unique.setdefault(Path(path).resolve(), path)
    return tuple(unique.values())


def prepare(interpret: bool | None, kernel_modules: list[Path] | None,
            root: Path | None = None) -> str:
    """Choose the backend, then load the user's kernel modules (kernel_modules_of: they
    import triton, and triton reads the backend once, when first imported), their winners
    under ROOT/configs. Returns the backend."""
    modules = kernel_modules_of(kernel_modules, root)  # the table's mistakes before anything
    backend = choose_backend(interpret)
    _load(modules, root)
    return backend


def own_kernels(kernel_modules: list[Path] | None, root: Path | None = None) -> list[str]:
    """For a command that reads stored rows only: load the user's kernel modules, if any
    (nothing is imported without them); the names of the kernels they define."""
    modules = kernel_modules_of(kernel_modules, root)
    if not modules:
        return []
    choose_backend(None)
    return _load(modules, root)


def _load(modules: tuple[str, ...], root: Path | None) -> list[str]:
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import load_kernel_module

    project = root if root is not None else Path(".")
    defined: dict[str, str] = {}
    for path in modules:
        for spec in load_kernel_module(path, project=project):
            # the later file would replace the earlier one's kernel, and rows and configs
            # would come from whichever loaded last
            first = defined.setdefault(spec.name, path)
            if first != path:
                raise TlabError(f"kernel {spec.name!r} is defined in both {first} and {path}: "
                                f"a name is one kernel; rename one of them")
    return list(defined)


def known_dtypes(values: list[str] | None) -> list[str] | None:
    """--dtype for commands that filter stored rows: names checked, aliases resolved."""
    names = split_list(values)
    if names is None:
        return None

    if not names:
        raise TlabError(f"no dtypes in --dtype {','.join(values)!r}: accepted are "
                        f"{', '.join(DTYPE_NAMES)}")
    for name in names:
        if dtype_name_of(name) is None:
            raise TlabError(f"unknown dtype {name!r}: accepted are {', '.join(DTYPE_NAMES)}")
    return list(dict.fromkeys(dtype_name_of(n) for n in names))


def configs_in_space(spec, paths: Iterable[Path]) -> None:
    """Refuse, in one line naming the file and line, a configs row whose config is not a
    point of the kernel's space (a hand edit, a file of another tlab): explain and export
    would pass it on as tuned. `tlab check` lists every such row."""
    for path in paths:
        for line, winner in enumerate(load_winners(path), start=2):  # line 1: the header
            why = spec.config_outside(winner.config)
            if why:
                raise TlabError(f"{str(path)!r} line {line}: config {winner.config!r} is "
                                f"outside the {spec.name} space: {why} (`tlab check` lists "
                                "every such row)")


def kernel_dtypes(spec, values: list[str] | None) -> list[str]:
    """--dtype for a command about one kernel: names checked, each one the kernel takes;
    none given: all it takes."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.spec import dtype_name

    takes = [dtype_name(d) for d in spec.dtypes]
    for name in known_dtypes(values) or takes:
        if name not in takes:
            raise TlabError(f"{spec.name} does not support {name}: it takes {', '.join(takes)}")
    return known_dtypes(values) or takes
