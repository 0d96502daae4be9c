"""Lab script, not part of the product (nothing imports it): on the H200, confirm every
committed winner again so that its row and the PyTorch op's carry their host time
(Record.host_ms), which tritonbench_lab.ops weighs for eager calls.

A sweep resumed over shapes it has measured re-times only their confirmations (the leaders
and every baseline) when those lack host times (contenders.lacks_host_time). Per configs
file and dtype this runs `tlab sweep KERNEL --dtype D --shapes <the committed shapes>
--baselines <the providers timed in the winners' runs>` (dtypes of the same shapes and
baselines in one command) (fewer baselines in the new run would
drop their ratios from the configs: winners.py, rule 5), and prints each command's time.

    PYTHONPATH=. python3 lab/reconfirm_host_times.py [KERNEL...]
"""

import subprocess
import sys
import time
from pathlib import Path

from tritonbench_lab.records import TRITON
from tritonbench_lab.store import load_records, load_winners

GPU = "nvidia-h200"


def plans(kernels: list[str]) -> list[list[str]]:
    commands = []
    for configs in sorted(Path("configs", GPU).glob("*.csv")):
        kernel = configs.stem
        if kernels and kernel not in kernels:
            continue
        winners = load_winners(configs)
        rows = load_records(Path("results", GPU, configs.name))
        groups: dict[tuple, list[str]] = {}  # (shapes, baselines) -> dtypes: one command
        for dtype in sorted({w.dtype for w in winners}):
            mine = [w for w in winners if w.dtype == dtype]
            runs = {w.run_id for w in mine}
            baselines = sorted({r.provider for r in rows if r.run_id in runs
                                and r.dtype == dtype and r.provider != TRITON})
            key = (",".join(w.shape for w in mine), ",".join(baselines))
            groups.setdefault(key, []).append(dtype)
        for (shapes, baselines), dtypes in groups.items():
            commands.append(["python3", "-m", "tritonbench_lab", "sweep", kernel,
                             "--dtype", ",".join(dtypes), "--shapes", shapes,
                             *(["--baselines", baselines] if baselines else [])])
    return commands


def main() -> None:
    for command in plans(sys.argv[1:]):
        print("$", " ".join(command), flush=True)
        start = time.perf_counter()
        done = subprocess.run(command, check=False)
        print(f"rc {done.returncode}, {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
