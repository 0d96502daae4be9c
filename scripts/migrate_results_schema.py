"""One-off: move committed results and ceilings to the typed schema (records.py), then
rewrite configs/ from them with the one winner rule. Run once from the repository root;
removed after it ran (git keeps it).

Old `timing` text becomes `phase` (confirm when it ended with '; confirmation'), `method`,
`warmup_ms` and `rep_ms`; old `tlab` ('0.1.0+src.<hash>') becomes `tlab` and `source`.
Every other cell is kept as it was. Aborts, touching nothing, on any text it does not know.
"""

import csv
import io
import re
import sys
from pathlib import Path

from tritonbench_lab.layout import Layout, kernels_in
from tritonbench_lab.records import CONFIRM, SWEEP, Ceiling, Record, Winner, from_cells, to_cells
from tritonbench_lab.store import columns_of, load_records, write_table
from tritonbench_lab.winners import pick_winners

CONFIRMATION = "; confirmation"
DO_BENCH = re.compile(r"do_bench warmup=(\d+)ms rep=(\d+)ms, L2 flushed, CUDA events")


def timing_columns(text: str) -> dict[str, str]:
    phase = CONFIRM if text.endswith(CONFIRMATION) else SWEEP
    text = text.removesuffix(CONFIRMATION)
    if text == "":
        return {"phase": phase, "method": "", "warmup_ms": "", "rep_ms": ""}
    if text.startswith("interpreter wall clock"):
        return {"phase": phase, "method": "interpreter", "warmup_ms": "", "rep_ms": ""}
    match = DO_BENCH.fullmatch(text)
    if not match:
        sys.exit(f"unknown timing text {text!r}")
    return {"phase": phase, "method": "do_bench", "warmup_ms": match[1], "rep_ms": match[2]}


def migrate(path: Path, cls) -> int:
    with open(path, newline="") as handle:
        old = list(csv.DictReader(handle))
    rows = []
    for values in old:
        new = dict(values)
        new.update(timing_columns(new.pop("timing")))
        if cls is Record:
            version, _, source = new["tlab"].partition("+src.")
            new["tlab"], new["source"] = version, source
        else:
            new.pop("phase")
        rows.append(from_cells(cls, new))
        # Every kept column reads back as it was written.
        cells = dict(zip(columns_of(cls), to_cells(rows[-1]), strict=True))
        for name in set(values) & set(cells) - {"tlab"}:
            if cells[name] != values[name]:
                sys.exit(f"{path}: {name} {values[name]!r} would become {cells[name]!r}")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns_of(cls))
    writer.writerows(to_cells(r) for r in rows)
    path.write_text(buffer.getvalue())
    print(f"{path}: {len(old)} rows before, {len(rows)} after")
    return len(rows)


def main() -> None:
    layout = Layout(Path("."))
    for slug in layout.gpu_slugs():
        folder = layout.gpu_results(slug)
        migrate(layout.ceilings_file(slug), Ceiling)
        for kernel in kernels_in(folder):
            migrate(layout.results_file(slug, kernel), Record)
            winners = pick_winners(load_records(layout.results_file(slug, kernel)))
            write_table(layout.configs_file(slug, kernel), winners, Winner)
            print(f"{layout.configs_file(slug, kernel)}: {len(winners)} winners")


if __name__ == "__main__":
    main()
