"""Where tlab keeps things, in one place. Under a root folder (`--root`, default the current
folder):

    results/<gpu-slug>/<kernel>.csv      every measurement (append-only)
    results/<gpu-slug>/ceilings.csv      the GPU's measured ceilings (append-only)
    results/<gpu-slug>/host/<kernel>.csv host times of the winners and the PyTorch op
                                         (tlab host-times; append-only)
    results/<gpu-slug>/regret/           a root of its own for `tlab check --regret`
    configs/<gpu-slug>/<kernel>.csv      the winners, rewritten from results/ by each sweep

and under an output folder (`--out`), files made from those:

    <out>/<gpu-slug>/<kernel>-<dtype>.svg, ...-landscape.svg, REPORT.md   (tlab plot, report)
    <out>/compare/<kernel>-<dtype>-<gpu>-vs-<gpu>.svg                      (tlab compare)

A GPU slug is the device name in lower case with other characters turned into '-'
(`NVIDIA H200` -> `nvidia-h200`); interpreter rows live under `interpreter`. No torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab.errors import TlabError

INTERPRETER_SLUG = "interpreter"
CEILINGS = "ceilings"  # results/<gpu>/ceilings.csv is not a kernel's file
HOST = "host"  # results/<gpu>/host/: the winners' host times, per kernel
REPORT = "REPORT.md"


def slugify(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown-gpu"


@dataclass(frozen=True)
class Layout:
    """The paths under one root folder."""

    root: Path

    @property
    def results(self) -> Path:
        return Path(self.root) / "results"

    @property
    def configs(self) -> Path:
        return Path(self.root) / "configs"

    def gpu_results(self, slug: str) -> Path:
        return self.results / slug

    def results_file(self, slug: str, kernel: str) -> Path:
        return kernel_file(self.gpu_results(slug), kernel)

    def ceilings_file(self, slug: str) -> Path:
        return ceilings_in(self.gpu_results(slug))

    def host_times_file(self, slug: str, kernel: str) -> Path:
        return host_times_beside(self.results_file(slug, kernel))

    def configs_file(self, slug: str, kernel: str) -> Path:
        return config_file_in(self.configs, slug, kernel)

    def regret(self, slug: str) -> Layout:
        return Layout(self.results / slug / "regret")

    def gpu_slugs(self) -> list[str]:
        """GPUs with results under this root (the interpreter left out: not GPU numbers)."""
        if not self.results.is_dir():
            return []
        return sorted(p.name for p in self.results.iterdir()
                      if p.is_dir() and p.name != INTERPRETER_SLUG and kernels_in(p))

    def config_files(self, kernels: list[str] | None = None) -> list[Path]:
        """configs/<gpu>/<kernel>.csv, every kernel's or only those of `kernels`."""
        files = sorted(self.configs.glob("*/*.csv"))
        return [f for f in files if not kernels or f.stem in kernels]


def config_file_in(configs: Path, slug: str, kernel: str) -> Path:
    """A kernel's winners file in a configs folder (configs/, or $TLAB_CONFIG_DIR)."""
    return Path(configs) / slug / f"{kernel}.csv"


def kernel_file(folder: Path, kernel: str) -> Path:
    """A kernel's results file in one GPU's results folder."""
    return Path(folder) / f"{kernel}.csv"


def host_times_beside(results_file: Path) -> Path:
    """The host times of a kernel's winners, in a folder beside its results file (a
    subfolder, so that nothing that lists a GPU's kernel files takes it for one)."""
    return Path(results_file).parent / HOST / Path(results_file).name


def ceilings_in(folder: Path) -> Path:
    """The ceilings file in one GPU's results folder."""
    return Path(folder) / f"{CEILINGS}.csv"


def kernels_in(folder: Path) -> list[str]:
    """The kernels with a results file in one GPU's results folder."""
    return sorted(p.stem for p in Path(folder).glob("*.csv") if p.stem != CEILINGS)


def locate(target: str, root: Path) -> Path:
    """One GPU's results folder, given as a path (results/nvidia-h200, or a copy kept
    elsewhere) or as a GPU slug looked up under root/results."""
    path = Path(target)
    if path.is_dir():
        return path
    layout = Layout(root)
    if "/" not in target and layout.gpu_results(target).is_dir():
        return layout.gpu_results(target)
    there = [p.name for p in sorted(layout.results.glob("*")) if p.is_dir() and kernels_in(p)] \
        if layout.results.is_dir() else []
    raise TlabError(f"no results for {target!r}: neither a folder nor a GPU under "
                    f"{str(layout.results)!r} (there: {', '.join(there) or 'none'})")


def plot_stem(out: Path, slug: str, kernel: str, dtype: str, kind: str = "") -> Path:
    """<out>/<slug>/<kernel>-<dtype>[-kind], without a suffix."""
    return Path(out) / slug / f"{kernel}-{dtype}{'-' + kind if kind else ''}"


def report_file(out: Path, slug: str) -> Path:
    return Path(out) / slug / REPORT
