"""Lab probe, not part of the product (issue 14): replay `--search prior:12` on the tables of
shapes tuned nowhere in results/ (the exhaustive rows lab/held_out_tables.sh brings back),
its prior drawn from the committed H200 rows as a sweep would draw it. Per shape: the loss of
the capped search's best against the table's best, and where the table's best ranks in the
prior. No GPU needed.

    PYTHONPATH=. python3 lab/replay_held_out.py HELD/set0/results/nvidia-h200/matmul.csv ...
"""
import sys
from pathlib import Path

from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.data.store import load_records
from tritonbench_lab.data.winners import shape_results
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.search.prior import left_out_prior, standing_times
from tritonbench_lab.search.replay import replay
from tritonbench_lab.space import config_text

SLUG, KERNEL, CAP = "nvidia-h200", "matmul", 12


def main(paths: list[str]) -> None:
    tuned = shape_results(load_records(Path("results") / SLUG / f"{KERNEL}.csv"))
    default = get_spec(KERNEL).space.default
    for path in paths:
        for result in shape_results(load_records(Path(path))):
            table = standing_times(result)
            ok = sorted((ms, t) for t, ms in table.items() if ms is not None)
            if not ok:
                continue
            configs = [parse_config_text(t) for t in table]
            prior = left_out_prior([*tuned, result], result)  # the tuned shapes' prior
            texts = [config_text(c) for c in prior]
            found = replay("prior", table, configs, budget=CAP, default={
                n: default[n] for n in configs[0] if n in default}, prior=prior)
            best = ok[0][1]
            rank = texts.index(best) + 1 if best in texts else None
            print(f"{result.dtype} {result.shape}: loss {found.loss:.3f} in {found.batches} "
                  f"batch(es); best {best} ({ok[0][0]:.4f} ms), in the prior at "
                  f"{rank or '-'} of {len(texts)}")


if __name__ == "__main__":
    main(sys.argv[1:])
