"""Lab instrument for issue 14's search target (winner within 2% of exhaustive's at <= 35% of
its time, on held-out matmul shapes), in one device call:

    PYTHONPATH=. python3 lab/search_quality.py run [SHAPE ...]

1. exhaustive, from an empty root with its own Triton cache;
2. `--search prior:12` from a root holding a copy of configs/ and results/ (its prior: the
   nearest tuned shapes' winners and a portfolio drawn from the results, prior.py), its own
   cache;
3. the same with winners alone (prior.PORTFOLIO = 0 patched in: the prior before the
   portfolio, which came within 2% at 5 of 6 shapes on an H200 on 2026-12-04, BENCHMARKS);
4. quality: each shape's three winners timed in one process, in turns (ROUNDS rounds, the
   sweep's confirmation budget, the order reversed every other round), each ratio against
   exhaustive's winner, with the lowest and highest of the rounds' ratios.

Wall time of each sweep and the ratios go to stdout and to $OUT/search_quality.json when OUT
is set. `... prior SHAPE` prints the prior of one shape (no GPU needed).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HELD_OUT = ["768x768x768", "1536x1536x1536", "3072x3072x3072", "6144x6144x6144",
            "4096x4096x1024", "2048x8192x4096"]
SLUG, KERNEL, DTYPE = "nvidia-h200", "matmul", "bf16"
ROUNDS = 8  # rounds of the picks timed in turns (4 left the 2% test on ~1.4% of noise)


def sweep_winners_only(argv: list[str]) -> None:
    """`tlab sweep ...` with the portfolio switched off (run in a process of its own)."""
    from tritonbench_lab import cli
    from tritonbench_lab.search import prior

    prior.PORTFOLIO = 0
    cli.main(argv)


def timed_sweep(root: Path, args: list[str], winners_only: bool = False) -> float:
    env = {**os.environ, "TRITON_CACHE_DIR": str(root / "triton-cache"),
           "PYTHONPATH": str(REPO)}
    command = ([sys.executable, __file__, "sweep-winners-only"] if winners_only
               else [sys.executable, "-m", "tritonbench_lab"]) + ["sweep", *args,
                                                                  "--root", str(root)]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], flush=True)
    return wall


def winners_of(root: Path) -> dict[str, str]:
    from tritonbench_lab.data.store import load_winners

    return {w.shape: w.config for w in load_winners(root / "configs" / SLUG / f"{KERNEL}.csv")
            if w.dtype == DTYPE}


def quality(shapes: list[str], picks: dict[str, dict[str, str]], device: str = "cuda",
            dtype_name: str = "bfloat16") -> dict:
    """Each shape's picks timed in turns in this process; p50 and ratio to exhaustive's."""
    import torch

    from tritonbench_lab.data.records import parse_config_text
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.timing import BenchOptions, time_call
    from tritonbench_lab.shapes import shape_sizes
    from tritonbench_lab.spec import triton_interpreting

    spec = get_spec(KERNEL)
    bench = BenchOptions(warmup_ms=250, rep_ms=100, timing="both")
    out = {}
    for shape in shapes:
        inputs = spec.make_inputs(spec.shape(*shape_sizes(shape)), getattr(torch, dtype_name),
                                  device, 0)
        outputs = spec.allocate_outputs(inputs)
        configs = {name: parse_config_text(p[shape]) for name, p in picks.items() if shape in p}
        times = {name: [] for name in configs}
        for round_ in range(ROUNDS):  # in turns, the order reversed every other round
            order = list(configs.items())
            if round_ % 2:
                order.reverse()
            for name, config in order:
                call = (lambda c=config, i=inputs, o=outputs: spec.launch(i, c, o))
                times[name].append(time_call(call, bench, triton_interpreting()).p50)
        best = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
        base = best.get("exhaustive")
        # Each round's ratio to exhaustive's time in that round: their spread is the noise
        # the 2% test sits on.
        spread = {name: sorted(a / b for a, b in zip(t, times["exhaustive"], strict=True))
                  for name, t in times.items()} if base else {}
        out[shape] = {name: {"config": picks[name][shape], "p50_ms": t,
                             "vs_exhaustive": round(t / base, 4) if base else None,
                             "rounds_vs_exhaustive": [round(r, 4) for r in spread.get(name, [])]}
                      for name, t in best.items()}
        print(shape, {n: (v["vs_exhaustive"], min(v["rounds_vs_exhaustive"], default=None),
                          max(v["rounds_vs_exhaustive"], default=None))
                      for n, v in out[shape].items()}, flush=True)
    return out


def run(shapes: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="search-quality-"))
    args = [KERNEL, "--dtype", DTYPE, "--shapes", ",".join(shapes)]
    roots = {name: work / name for name in ("exhaustive", "prior", "winners")}
    for name in ("prior", "winners"):
        for folder in ("configs", "results"):
            shutil.copytree(REPO / folder, roots[name] / folder)
    walls = {"exhaustive": timed_sweep(roots["exhaustive"], args),
             "prior": timed_sweep(roots["prior"], [*args, "--search", "prior:12"]),
             "winners": timed_sweep(roots["winners"], [*args, "--search", "prior:12"],
                                    winners_only=True)}
    print("wall s:", {k: round(v, 1) for k, v in walls.items()},
          "of exhaustive:", {k: round(v / walls["exhaustive"], 3) for k, v in walls.items()},
          flush=True)
    picks = {name: winners_of(root) for name, root in roots.items()}
    summary = {"walls_s": walls, "quality": quality(shapes, picks)}
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "search_quality.json").write_text(json.dumps(summary, indent=1))


def show_prior(shape: str) -> None:
    from types import SimpleNamespace

    from tritonbench_lab.data.layout import Layout
    from tritonbench_lab.data.store import load_records
    from tritonbench_lab.data.winners import shape_results
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.search.prior import prior_configs
    from tritonbench_lab.space import config_text

    spec = get_spec(KERNEL)
    layout = Layout(REPO)
    request = SimpleNamespace(configs_file=layout.configs_file(SLUG, KERNEL), spec=spec,
                              space=spec.space, layout=layout,
                              fingerprint=SimpleNamespace(gpu_slug=SLUG))
    results = shape_results(load_records(REPO / "results" / SLUG / f"{KERNEL}.csv"))
    found = prior_configs(request, results, DTYPE, shape, list(spec.space))
    print(found.sentence(KERNEL, DTYPE, shape))
    for config in found.configs:
        print(config_text(config))


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "sweep-winners-only":
        sweep_winners_only(rest)
    elif command == "prior":
        show_prior(rest[0])
    else:
        run(rest or HELD_OUT)
