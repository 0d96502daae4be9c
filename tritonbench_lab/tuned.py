"""The runtime side of the winners: the config tuned for a shape on the current GPU.

    config = lookup("matmul", dtype=torch.bfloat16, M=4096, N=4096, K=1024)

Where: $TLAB_CONFIG_DIR when set; else, for a kernel of your own, the configs/ folder of its
project (where `tlab sweep` wrote them: the folder whose pyproject.toml lists its module, or
the current folder when it was loaded); else the configs/ folder of this source tree, else
the copy installed with the package (a wheel carries configs/ as package data). The file is
<dir>/<gpu-slug>/<kernel>.csv (layout.py), written by `tlab sweep` from the winner rule
(winners.py).

Which kernel: a registered one (built-in, or loaded with its module); else one listed in the
current folder's pyproject.toml ([tool.tlab] kernel-modules, data/project.py), loaded then.

Which row:
- sizes are matched by dim name, in any keyword order; a missing or unknown name is a
  TlabError that names the kernel's dims;
- the same dtype and the exact shape, when it was tuned;
- otherwise the nearest tuned shape *of the same alignment class*, both taken from the
  kernel's `near_sizes` of the sizes when it has them (rope sees batch and sequence only as
  their product, so it compares tokens, heads and head_dim): each size divisible by
  16, by 8 only, or by neither. The class decides what a config can do (16-byte loads, tensor
  descriptors), so a config never crosses it. Nearest means the smallest sum over dims of
  |log2(size / tuned size)| (3000 is nearer 4096 than 2048), ties to the larger shape (a
  config tuned for more work under-fills a smaller problem less than the reverse over-fills);
  a row whose config the kernel's constraints prune at this shape is passed over (pruned_here);
- no rows of this kernel and dtype for this GPU at all: another GPU's file, where the committed
  portability measurement trusts that GPU's configs here (data/portability.py);
- nothing in the class (or no file): the kernel's untuned config at that shape (its default
  config, or where that is pruned the nearest one that is not: Space.default_at), with one
  warning per file, dtype and class that names them.
Files are parsed once and re-read when they change. No torch, no triton at import.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.data import store
from tritonbench_lab.data.layout import INTERPRETER_SLUG, Layout, config_file_in, slugify
from tritonbench_lab.data.portability import trusted_sources
from tritonbench_lab.data.project import kernel_modules
from tritonbench_lab.data.records import Trust, Winner, dtype_name_of, parse_config_text
from tritonbench_lab.errors import TlabError
from tritonbench_lab.shapes import shape_sizes

CONFIG_DIR_ENV = "TLAB_CONFIG_DIR"
SOURCE_CONFIG_DIR = Layout(Path(__file__).resolve().parent.parent).configs
# Where a non-editable install keeps the committed configs (pyproject.toml maps configs/ there).
PACKAGED_CONFIG_DIR = Path(__file__).resolve().parent / "configs"

_warned: set[tuple] = set()
_projects: set[Path] = set()  # folders whose listed kernel modules were loaded here


def config_dir(kernel: str | None = None) -> Path:
    """The configs folder code reads (module docstring): for `kernel`, where its own are."""
    override = os.environ.get(CONFIG_DIR_ENV)
    if override:
        return Path(override)
    if kernel is not None:
        # late: `tlab --help` imports no torch
        from tritonbench_lab.kernels import origin

        found = origin(kernel)
        if found is not None:
            return Layout(found[1]).configs
    return SOURCE_CONFIG_DIR if SOURCE_CONFIG_DIR.is_dir() else PACKAGED_CONFIG_DIR


def spec_of(kernel: str, module: str | Path | None = None):
    """The KernelSpec of `kernel` for code that runs it: loaded from `module` first when
    given (unless loaded from that file already); a kernel not registered is looked for in
    the modules the current folder's pyproject.toml lists. TlabError in one line otherwise."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec, load_kernel_module, names, origin

    if module is not None:
        found = origin(kernel)
        if found is None or found[0] != Path(module).resolve():
            defined = [spec.name for spec in load_kernel_module(module)]
            if kernel not in defined:
                raise TlabError(f"kernel module {str(module)!r} defines no kernel {kernel!r} "
                                f"(it defines {', '.join(defined)})")
    elif kernel not in names():
        load_project(Path.cwd())
    return get_spec(kernel)  # an unknown name: its error says how a user's kernel is loaded


def load_project(folder: Path) -> None:
    """Load the kernel modules `folder`'s pyproject.toml lists, once per folder."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import load_kernel_module

    folder = folder.resolve()
    if folder not in _projects:
        for module in kernel_modules(folder):
            load_kernel_module(module, project=folder)
        _projects.add(folder)


def dtype_key(dtype) -> str:
    """'bf16' for torch.bfloat16, 'bfloat16' or 'bf16' (no torch import needed here)."""
    text = str(dtype).removeprefix("torch.")
    return dtype_name_of(text) or text


def clear_cache() -> None:
    """Forget parsed files and warnings (after rewriting configs, and in tests)."""
    store._cache.clear()
    _warned.clear()


def alignment_class(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Per size: 16 when divisible by 16, 8 when by 8 only, else 1."""
    return tuple(16 if s % 16 == 0 else 8 if s % 8 == 0 else 1 for s in sizes)


def shape_distance(wanted: tuple[int, ...], tuned: tuple[int, ...]) -> float:
    return sum(abs(math.log2(w / t)) for w, t in zip(wanted, tuned, strict=True))


def nearest_first(items: list, shape: str, shape_of) -> list:
    """Items ordered by how far their shape is from `shape`: the sum over dims of |log2|
    of the size ratios (4096^3 is as near to 2048^3 as to 8192^3)."""
    here = shape_sizes(shape)

    def distance(item) -> float:
        there = shape_sizes(shape_of(item))
        return shape_distance(here, there) if len(there) == len(here) else math.inf

    return sorted(items, key=distance)



def nearest_row(rows: list[Winner], sizes: tuple[int, ...],
                near: Callable | None = None,
                why_not: Callable[[Winner], str | None] | None = None
                ) -> tuple[Winner | None, str | None]:
    """The exact or nearest tuned row of the same alignment class (module docstring), sizes
    compared as `near` maps them (a kernel's near_sizes; None: as they are), and what was
    passed over: of the rows of other shapes, those whose config `why_not` (pruned_here)
    gives a reason against are skipped, and the nearest of them is named in the second item
    ("4096x1024's config BLOCK=1024 is pruned here: <reason>"), else None."""
    exact = [r for r in rows if shape_sizes(r.shape) == sizes]
    if exact:
        return exact[0], None
    near = near or tuple
    wanted = near(sizes)
    candidates = [(near(s), r) for s, r in ((shape_sizes(r.shape), r) for r in rows)
                  if len(s) == len(sizes)]
    candidates = [(s, r) for s, r in candidates
                  if len(s) == len(wanted) and alignment_class(s) == alignment_class(wanted)]
    candidates.sort(key=lambda c: (shape_distance(wanted, c[0]), -math.prod(c[0])))
    passed = None
    for _, row in candidates:
        reason = why_not(row) if why_not is not None else None
        if reason is None:
            return row, passed
        passed = passed or f"{row.shape}'s config {row.config} is pruned here: {reason}"
    return None, passed


def pruned_here(kernel: str, dtype: str, sizes: tuple[int, ...]
                ) -> Callable[[Winner], str | None] | None:
    """Why a row's config may not run at these sizes: the reason of the kernel's constraint
    that prunes it there (KernelSpec.pruned_at), or None. A constraint is the kernel's word
    that a config cannot run, or runs to waste, at a shape (a block narrower than the row,
    say), so a config tuned elsewhere never crosses one. None instead of a function for a
    kernel that is not registered."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec

    try:
        spec = get_spec(kernel)
    except TlabError:
        return None

    def why_not(row: Winner) -> str | None:
        try:
            return spec.pruned_at(parse_config_text(row.config), sizes, dtype)
        except (TlabError, ValueError):  # a stale row, an unnamed dtype: lookup names them
            return None

    return why_not


def near_sizes_of(kernel: str):
    """The registered kernel's near_sizes (None for a kernel that is not registered)."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec

    try:
        return get_spec(kernel).near_sizes
    except TlabError:
        return None


def check_dtype(kernel: str, dtype) -> None:
    """A TlabError naming the dtypes a registered kernel takes, where it does not take `dtype`
    (nothing for a kernel that is not registered: its module knows)."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec

    try:
        takes = [dtype_key(d) for d in get_spec(kernel).dtypes]
    except TlabError:
        return
    if dtype_key(dtype) not in takes:
        raise TlabError(f"{kernel} does not take {dtype_key(dtype)}: it takes {', '.join(takes)}")


def current_gpu_slug(device=None) -> str:
    """The slug of `device` (a CUDA device or index; the current one when None), or
    'interpreter' without CUDA."""
    # late: `tlab --help` imports no torch
    import torch

    if not torch.cuda.is_available():
        return INTERPRETER_SLUG
    if device is None:
        index = torch.cuda.current_device()
    else:
        index = device.index if isinstance(device, torch.device) else int(device)
        index = torch.cuda.current_device() if index is None else index
    return slugify(torch.cuda.get_device_name(index))


def kernel_dims(kernel: str) -> tuple[str, ...]:
    return tuple(spec_of(kernel).dims)


def ordered_sizes(kernel: str, sizes: dict[str, int], dims: tuple[str, ...] | None = None
                  ) -> tuple[int, ...]:
    """Keyword sizes in the kernel's dims order; TlabError naming the dims when a name is
    missing or unknown."""
    dims = tuple(dims) if dims is not None else kernel_dims(kernel)
    unknown = [n for n in sizes if n not in dims]
    missing = [d for d in dims if d not in sizes]
    if unknown or missing:
        parts = [f"{what} {', '.join(names)}" for what, names in
                 (("unknown", unknown), ("missing", missing)) if names]
        raise TlabError(f"{kernel} sizes are {', '.join(dims)} (by name, any order): "
                        f"{'; '.join(parts)}")
    return tuple(int(sizes[d]) for d in dims)


@dataclass(frozen=True)
class Found:
    """What the configs say about one kernel, dtype and shape on one GPU."""

    path: Path  # the winners file consulted
    sizes: tuple[int, ...]
    row: Winner | None  # the exact or nearest tuned row of the same class; None: nothing
    near: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None  # kernel's near_sizes
    # Where the file is another GPU's: the trust it rests on (data/portability.py).
    borrowed: Trust | None = None
    # The nearest tuned row passed over, its config being pruned at these sizes (nearest_row).
    passed_over: str | None = None

    @property
    def exact(self) -> bool:
        return self.row is not None and shape_sizes(self.row.shape) == self.sizes

    @property
    def distance(self) -> float | None:
        if self.row is None:
            return None
        near = self.near or tuple
        return shape_distance(near(self.sizes), near(shape_sizes(self.row.shape)))


def find(kernel: str, dtype, sizes: tuple[int, ...], *, gpu: str | None = None,
         directory: Path | None = None) -> Found:
    """The tuned row `lookup` would use for these sizes (in dims order), if any: from this
    GPU's file; where it has no rows of this kernel and dtype, from another GPU's whose
    configs the committed portability measurement trusts here (data/portability.py)."""
    slug = gpu or current_gpu_slug()
    configs = Path(directory or config_dir(kernel))
    path = config_file_in(configs, slug, kernel)
    key = dtype_key(dtype)
    near = near_sizes_of(kernel)
    why_not = pruned_here(kernel, key, sizes)
    rows = _rows(path, kernel, key)
    if not rows:
        for trust in trusted_sources(configs, slug, kernel, key):
            other = config_file_in(configs, trust.from_gpu, kernel)
            borrowed = _rows(other, kernel, key)
            if borrowed:
                row, passed = nearest_row(borrowed, sizes, near, why_not)
                return Found(other, sizes, row, near, trust, passed)
    row, passed = nearest_row(rows, sizes, near, why_not)
    return Found(path, sizes, row, near, passed_over=passed)


def _rows(path: Path, kernel: str, dtype: str) -> list[Winner]:
    return [r for r in store.load_winners(path) if r.kernel == kernel and r.dtype == dtype]


def lookup(kernel: str, dtype, *, gpu: str | None = None, default: dict[str, int] | None = None,
           directory: Path | None = None, dims: tuple[str, ...] | None = None,
           **sizes: int) -> dict[str, int]:
    """The config to launch `kernel` with at this shape on this GPU (see the rules above).

    sizes are the kernel's dims by name (M=, N=, K= for matmul; rows=, cols= for row
    kernels), in any order. `default` is returned (with one warning) when nothing was tuned;
    without it the kernel's untuned config at this shape (KernelSpec.untuned_config: its
    default config, unless a constraint prunes that there). `gpu` and `directory` override the
    current GPU's slug and the configs folder; `dims` names the dims of a kernel that is not
    registered and not listed in the current folder's pyproject.toml.
    """
    ordered = ordered_sizes(kernel, sizes, dims)
    check_dtype(kernel, dtype)
    found = find(kernel, dtype, ordered, gpu=gpu, directory=directory)
    if found.row is not None:
        return completed(kernel, parse_config_text(found.row.config))
    key = dtype_key(dtype)
    warn_key = (str(found.path), key, alignment_class(ordered))
    if warn_key not in _warned:
        _warned.add(warn_key)
        why = "does not exist" if not found.path.exists() else (
            f"has no {key} rows for {kernel} of the alignment class of "
            f"{'x'.join(map(str, ordered))} (each size divisible by 16 / 8 / neither: "
            f"{'/'.join(map(str, alignment_class(ordered)))})") if found.passed_over is None else (
            f"has no {key} row for {kernel} whose config runs at {'x'.join(map(str, ordered))} "
            f"(nearest: {found.passed_over})")
        warnings.warn(f"tlab: {found.path} {why}; using {kernel}'s default config", stacklevel=2)
    if default is not None:
        return dict(default)
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec

    spec = get_spec(kernel)
    try:  # the untuned config at this shape: valid wherever the kernel runs (KernelSpec)
        return spec.untuned_config(spec.shape(*ordered), key)
    except TlabError:  # a dtype tlab does not name: the space's default, as it stands
        return dict(spec.space.default)


def completed(kernel: str, config: dict[str, int]) -> dict[str, int]:
    """A stored config as the kernel runs it: completed by the one rule (KernelSpec.complete)
    when the kernel is registered; as stored for a kernel whose module was not loaded."""
    # late: `tlab --help` imports no torch
    from tritonbench_lab.kernels import get_spec, names

    return get_spec(kernel).complete(config) if kernel in names() else dict(config)


def check_round_trip(spec, slug: str, directory: Path, winners: list[Winner]) -> None:
    """After a sweep wrote its winners: looking up each tuned shape must return exactly the
    winner just written; anything else is a bug in tlab, not in the user's input."""
    clear_cache()
    for w in winners:
        shape = spec.shape(*shape_sizes(w.shape))
        got = lookup(spec.name, w.dtype, gpu=slug, directory=directory, dims=spec.dims,
                     **dict(shape.dims))
        if got != spec.complete(parse_config_text(w.config)):
            raise RuntimeError(f"lookup({spec.name}, {w.dtype}, {w.shape}) returned "
                               f"{got}, not the winner {w.config}")
