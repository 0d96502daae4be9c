"""Lab probe, not part of the product (nothing imports it): on this machine's CPU, no GPU
needed, how long the first PRIOR_STARTS configs of `--search prior` at each held-out matmul
shape take to compile for sm_90 (tritonbench_lab.measure.crosscompile), with the portfolio and from
winners alone. A sweep compiles a search's first batch in parallel, so its slowest compile
is what the timing worker waits for.

    env -u TRITON_INTERPRET PYTHONPATH=. python3 lab/prior_compile_time.py
"""

import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="prior-compile-")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "lab"))

import torch  # noqa: E402
from search_quality import HELD_OUT, KERNEL, SLUG  # noqa: E402

from tritonbench_lab.data.layout import Layout  # noqa: E402
from tritonbench_lab.data.records import parse_config_text  # noqa: E402
from tritonbench_lab.data.store import load_records  # noqa: E402
from tritonbench_lab.data.winners import shape_results  # noqa: E402
from tritonbench_lab.kernels import get_spec  # noqa: E402
from tritonbench_lab.measure import crosscompile  # noqa: E402
from tritonbench_lab.search import prior  # noqa: E402
from tritonbench_lab.search.strategies import PRIOR_STARTS  # noqa: E402
from tritonbench_lab.space import config_text  # noqa: E402


def contenders_replayed(results, rows, confirm: int = 3) -> list[int]:
    """Per shape of `results`, the contenders among the configs prior:12 times there."""
    from tritonbench_lab.data.records import SWEEP, TRITON
    from tritonbench_lab.search.contenders import contenders
    from tritonbench_lab.search.prior import left_out_prior, standing_times
    from tritonbench_lab.search.strategies import SearchRequest, make_search

    spec = get_spec(KERNEL)
    first = {(r.dtype, r.shape, r.config): r for r in rows
             if r.phase == SWEEP and r.provider == TRITON}  # the newest first-pass row
    counts = []
    for result in results:
        table = standing_times(result)
        configs = [parse_config_text(t) for t in table]
        default = {n: v for n, v in spec.space.default.items() if n in configs[0]}
        search = make_search("prior", SearchRequest(tuple(configs), default, 12, 0,
                                                    tuple(left_out_prior(results, result))))
        measured: dict = {}
        while batch := search.propose(measured):
            measured.update({config_text(c): table[config_text(c)] for c in batch})
        timed = [first[key] for t in measured if (key := (result.dtype, result.shape, t)) in first]
        counts.append(len(contenders(timed, always=confirm)))
    return counts


def main() -> None:
    rows = load_records(REPO / "results" / SLUG / f"{KERNEL}.csv")
    results = shape_results(rows)
    for name, size in (("winners alone", 0), ("with the portfolio", prior.PORTFOLIO)):
        saved, prior.PORTFOLIO = prior.PORTFOLIO, size
        counts = contenders_replayed(results, rows)
        prior.PORTFOLIO = saved
        print(f"contenders of prior:12 a shape, {name}: mean {sum(counts) / len(counts):.2f}, "
              f"{counts}", flush=True)
    crosscompile.compile_only_for()
    spec, layout = get_spec(KERNEL), Layout(REPO)
    request = SimpleNamespace(configs_file=layout.configs_file(SLUG, KERNEL), spec=spec,
                              space=spec.space, layout=layout,
                              fingerprint=SimpleNamespace(gpu_slug=SLUG))
    # One small input: what is compiled depends on the config and the operands' alignment
    # (all held-out sizes are multiples of 16), not on the sizes.
    inputs = spec.make_inputs(spec.shape(768, 768, 768), torch.bfloat16, "cpu", 0)
    seconds: dict[str, float] = {}
    for shape in HELD_OUT:
        line = []
        for name, size in (("winners alone", 0), ("with the portfolio", prior.PORTFOLIO)):
            saved, prior.PORTFOLIO = prior.PORTFOLIO, size
            found = prior.prior_configs(request, results, "bf16", shape, list(spec.space))
            prior.PORTFOLIO = saved
            batch = [config_text(c) for c in found.configs[:PRIOR_STARTS]]
            for text in batch:
                if text not in seconds:
                    start = time.perf_counter()
                    spec.launch(inputs, parse_config_text(text), spec.allocate_outputs(inputs))
                    seconds[text] = time.perf_counter() - start
            line.append(f"{name}: slowest {max(seconds[t] for t in batch):.1f} s, "
                        f"all {sum(seconds[t] for t in batch):.1f} s")
        print(shape, "|", " | ".join(line), flush=True)


if __name__ == "__main__":
    main()
