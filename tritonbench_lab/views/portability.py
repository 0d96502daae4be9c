"""Another GPU's configs on this one, as REPORT.md shows them and `tlab plot` draws them: the
standing rows of results/<gpu>/portability/<FROM>.csv (`tlab portability`), per kernel and
dtype the median and worst regret (the carried config's time over this GPU's own winner's)
and whether the trust rule holds (data/portability.py), the shapes where the carried config
won (data/portability.BEATEN) or was timed against a winner since replaced, and one picture
of every shape's regret. CSV in, Markdown and pictures out; no torch.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display needed, ever
import matplotlib.pyplot as plt  # noqa: E402

from tritonbench_lab.data.layout import Layout  # noqa: E402
from tritonbench_lab.data.portability import (  # noqa: E402
    BEATEN,
    PORTABILITY,
    TOLERANCE,
    beaten,
    standing,
    trust_rows,
)
from tritonbench_lab.data.records import Carried, parse_config_text  # noqa: E402
from tritonbench_lab.data.store import load_winners, read_table  # noqa: E402
from tritonbench_lab.shapes import shape_sizes  # noqa: E402
from tritonbench_lab.views.plots import save  # noqa: E402


def carried_rows(folder: Path) -> dict[str, list[Carried]]:
    """FROM's slug -> the standing rows of results/<gpu>/portability/FROM.csv, in one GPU's
    results folder ({} when nothing was carried here)."""
    found = {}
    for path in sorted((Path(folder) / PORTABILITY).glob("*.csv")):
        rows = standing(read_table(path, Carried))
        if rows:
            found[path.stem] = sorted(rows, key=lambda r: (r.kernel, r.dtype, shape_sizes(r.shape)))
    return found


def picture_stem(out: Path, slug: str, from_gpu: str) -> Path:
    return Path(out) / slug / f"portability-{from_gpu}"


def section(slug: str, from_gpu: str, rows: list[Carried], picture: str,
            not_measured: list[str] = (), replaced: list[Carried] = ()) -> str:
    """REPORT.md's section on FROM's configs here: a line per kernel and dtype; the shapes
    where FROM's config beat this GPU's own winner (worth sweeping again); the rows timed
    against a winner this GPU's configs no longer hold (`replaced`: to time again); and the
    kernels both GPUs have winners of that `tlab portability` has not timed here yet."""
    out = [f"### {from_gpu}'s configs on {slug}", "",
           f"Each of {from_gpu}'s winners timed here beside this GPU's own winner at the same "
           f"shape, in fresh workers (`tlab portability {from_gpu}`); regret: the carried "
           f"config's time over the own winner's. Trusted where no shape failed and the worst "
           f"regret is within {TOLERANCE:.2f}x: `ops` and `tuned.lookup` may then use "
           f"{from_gpu}'s configs on a GPU like this one that has none of its own.", "",
           f"![{from_gpu} on {slug}]({picture})", "",
           "| kernel | dtype | shapes | same config | median regret | worst regret | at | "
           "trusted |", "|---|---|---|---|---|---|---|---|"]
    same = {}
    for r in rows:
        same[r.kernel, r.dtype] = same.get((r.kernel, r.dtype), 0) + (
            r.carried_config == r.native_config)
    for t in trust_rows(rows):
        median = "-" if t.median_regret is None else f"{t.median_regret:.3f}x"
        worst = "-" if t.worst_regret is None else f"{t.worst_regret:.3f}x"
        failed = f" ({t.failed} failed)" if t.failed else ""
        out.append(f"| {t.kernel} | {t.dtype} | {t.shapes}{failed} | {same[t.kernel, t.dtype]} "
                   f"| {median} | {worst} | {t.worst_shape} | {'yes' if t.trusted else 'no'} |")
    beat = [r for r in beaten(rows) if r not in replaced]
    if beat:
        out += ["", f"{from_gpu}'s config beat this GPU's own winner by more than "
                f"{1 - BEATEN:.0%} at " + ", ".join(_at(r) for r in beat) + ": shapes worth "
                "measuring again (`tlab sweep KERNEL --dtype DTYPE --shapes SHAPE --fresh`)."]
    if replaced:
        out += ["", "Timed against a winner this GPU has since replaced (run `tlab portability "
                f"{from_gpu} --kernel KERNEL` again): " + ", ".join(_at(r) for r in replaced)
                + "."]
    if not_measured:
        out += ["", f"Not measured yet (both GPUs have winners): {', '.join(not_measured)}."]
    return "\n".join(out + [""])


def draw(slug: str, from_gpu: str, rows: list[Carried]):
    """Every shape's regret, a column of dots per kernel and dtype, the tolerance drawn."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        groups.setdefault(f"{r.kernel}\n{r.dtype}", []).append(r.regret)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(groups)), 4.0))
    for x, regrets in enumerate(groups.values()):
        ok = [v for v in regrets if v is not None]
        ax.scatter([x] * len(ok), ok, s=18, color="#1f77b4", zorder=3)
        if len(ok) < len(regrets):
            ax.scatter([x], [max(ok, default=1.0) * 1.02], marker="x", color="#d62728", zorder=3)
    ax.axhline(1.0, color="#555555", linewidth=0.8)
    ax.axhline(TOLERANCE, color="#d62728", linewidth=0.8, linestyle="--",
               label=f"trusted up to {TOLERANCE:.2f}x")
    ax.set_xticks(range(len(groups)), list(groups), fontsize=7)
    ax.set_ylabel("carried config's time / own winner's")
    ax.set_title(f"{from_gpu}'s winners on {slug}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    return fig


def draw_all(folder: Path, slug: str, out: Path, formats: tuple[str, ...] = ("svg",)
             ) -> list[Path]:
    """The portability pictures of one GPU's results folder under <out>/<gpu>/."""
    written = []
    for from_gpu, rows in carried_rows(folder).items():
        written += save(draw(slug, from_gpu, rows), picture_stem(out, slug, from_gpu), formats)
    return written


def _at(row: Carried) -> str:
    return f"{row.kernel} {row.dtype} {row.shape} ({row.regret:.3f}x)" if row.regret else (
        f"{row.kernel} {row.dtype} {row.shape} ({row.status})")


def sections(folder: Path, slug: str, picture_format: str = "svg") -> list[str]:
    return [section(slug, from_gpu, rows,
                    f"{picture_stem(Path(), slug, from_gpu).name}.{picture_format}",
                    _not_measured(folder, slug, from_gpu, rows), _replaced(folder, slug, rows))
            for from_gpu, rows in carried_rows(folder).items()]


def _replaced(folder: Path, slug: str, rows: list[Carried]) -> list[Carried]:
    """The rows whose native config is no longer this GPU's committed winner at the shape
    (a later sweep replaced it): their regret measures a config ops no longer runs."""
    configs = Layout(Path(folder).parent.parent).configs / slug
    winners = {}
    for kernel in {r.kernel for r in rows}:
        path = configs / f"{kernel}.csv"
        if path.is_file():
            winners |= {(w.kernel, w.dtype, w.shape): parse_config_text(w.config)
                        for w in load_winners(path)}
    return [r for r in rows if (r.kernel, r.dtype, r.shape) in winners
            and winners[r.kernel, r.dtype, r.shape] != parse_config_text(r.native_config)]


def _not_measured(folder: Path, slug: str, from_gpu: str, rows: list[Carried]) -> list[str]:
    """The kernels with winners files of both GPUs (the configs/ beside results/) of which
    no row was carried here."""
    configs = Layout(Path(folder).parent.parent).configs
    kernels = [{p.stem for p in (configs / gpu).glob("*.csv")} for gpu in (slug, from_gpu)]
    return sorted(kernels[0] & kernels[1] - {r.kernel for r in rows})
