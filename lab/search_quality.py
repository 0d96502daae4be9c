"""Lab instrument for issue 14's search target (winner within 2% of exhaustive's at <= 35% of
its time, on held-out matmul shapes), in one device call:

    PYTHONPATH=. python3 lab/search_quality.py run [SHAPE ...]

1. exhaustive, from an empty root with its own Triton cache;
2. `--search prior:12` from a root holding a copy of configs/ (its prior: the winners of the
   nearest tuned shapes), its own cache;
3. the same, its prior richer: after those winners, the RUNNERS_UP fastest configs of each of
   the NEAREST tuned shapes in the committed results/ (a variant of sweep.prior_winners
   patched in; replayed on 2026-12-04, it came within 2% at 5 of 6 shapes against 4; on an
   H200 that evening both came within 2% at 5 of 6, the richer at 43% of the time: BENCHMARKS);
4. quality: each shape's three winners timed in one process, in turns (ROUNDS rounds, the
   sweep's confirmation budget), each ratio against exhaustive's winner.

Wall time of each sweep and the ratios go to stdout and to $OUT/search_quality.json when OUT
is set. `... prior SHAPE` prints the richer prior of one shape (no GPU needed).
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
NEAREST, RUNNERS_UP = 4, 3
ROUNDS = 4


def richer_prior(request, dtype: str, shape: str) -> tuple[dict, ...]:
    """The NEAREST tuned shapes' best configs in the committed results, rank by rank (their
    winners, then each one's runner-up, ...: RUNNERS_UP + 1 ranks), then sweep.prior_winners
    (the other shapes' winners). PriorSearch starts from the first PRIOR_STARTS of these."""
    from tritonbench_lab import sweep
    from tritonbench_lab.records import OK, TRITON, parse_config_text
    from tritonbench_lab.store import load_records
    from tritonbench_lab.tuned import nearest_first
    from tritonbench_lab.winners import shape_results

    rows = load_records(REPO / "results" / SLUG / f"{request.spec.name}.csv")
    results = [r for r in shape_results(rows) if r.dtype == dtype and r.shape != shape]
    ranked = []
    for result in nearest_first(results, shape, lambda r: r.shape)[:NEAREST]:
        ranked.append(sorted((r for r in result.configs.values()
                              if r.provider == TRITON and r.status == OK and r.p50_ms is not None),
                             key=lambda r: r.p50_ms))
    by_rank = [request.space.complete(parse_config_text(rows[rank].config))
               for rank in range(RUNNERS_UP + 1) for rows in ranked if rank < len(rows)]
    out = []
    for config in by_rank + list(sweep.ORIGINAL_PRIOR(request, dtype, shape)):
        if config not in out:
            out.append(config)
    return tuple(out)


def sweep_rich(argv: list[str]) -> None:
    """`tlab sweep ...` with the richer prior patched in (run in a process of its own)."""
    from tritonbench_lab import cli, sweep

    sweep.ORIGINAL_PRIOR = sweep.prior_winners
    sweep.prior_winners = richer_prior
    cli.main(argv)


def timed_sweep(root: Path, args: list[str], rich: bool = False) -> float:
    env = {**os.environ, "TRITON_CACHE_DIR": str(root / "triton-cache"),
           "PYTHONPATH": str(REPO)}
    command = ([sys.executable, __file__, "sweep-rich"] if rich
               else [sys.executable, "-m", "tritonbench_lab"]) + ["sweep", *args,
                                                                  "--root", str(root)]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], flush=True)
    return wall


def winners_of(root: Path) -> dict[str, str]:
    from tritonbench_lab.store import load_winners

    return {w.shape: w.config for w in load_winners(root / "configs" / SLUG / f"{KERNEL}.csv")
            if w.dtype == DTYPE}


def quality(shapes: list[str], picks: dict[str, dict[str, str]], device: str = "cuda",
            dtype_name: str = "bfloat16") -> dict:
    """Each shape's picks timed in turns in this process; p50 and ratio to exhaustive's."""
    import torch

    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.records import parse_config_text
    from tritonbench_lab.shapes import shape_sizes
    from tritonbench_lab.spec import triton_interpreting
    from tritonbench_lab.timing import BenchOptions, time_call

    spec = get_spec(KERNEL)
    bench = BenchOptions(warmup_ms=250, rep_ms=100, timing="both")
    out = {}
    for shape in shapes:
        inputs = spec.make_inputs(spec.shape(*shape_sizes(shape)), getattr(torch, dtype_name),
                                  device, 0)
        outputs = spec.allocate_outputs(inputs)
        configs = {name: parse_config_text(p[shape]) for name, p in picks.items() if shape in p}
        times = {name: [] for name in configs}
        for _ in range(ROUNDS):
            for name, config in configs.items():
                call = (lambda c=config, i=inputs, o=outputs: spec.launch(i, c, o))
                times[name].append(time_call(call, bench, triton_interpreting()).p50)
        best = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
        base = best.get("exhaustive")
        out[shape] = {name: {"config": picks[name][shape], "p50_ms": t,
                             "vs_exhaustive": round(t / base, 4) if base else None}
                      for name, t in best.items()}
        print(shape, {n: v["vs_exhaustive"] for n, v in out[shape].items()}, flush=True)
    return out


def run(shapes: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="search-quality-"))
    args = [KERNEL, "--dtype", DTYPE, "--shapes", ",".join(shapes)]
    roots = {name: work / name for name in ("exhaustive", "prior", "rich")}
    for name in ("prior", "rich"):
        shutil.copytree(REPO / "configs", roots[name] / "configs")
    walls = {"exhaustive": timed_sweep(roots["exhaustive"], args),
             "prior": timed_sweep(roots["prior"], [*args, "--search", "prior:12"]),
             "rich": timed_sweep(roots["rich"], [*args, "--search", "prior:12"], rich=True)}
    print("wall s:", {k: round(v, 1) for k, v in walls.items()},
          "of exhaustive:", {k: round(v / walls["exhaustive"], 3) for k, v in walls.items()},
          flush=True)
    picks = {name: winners_of(root) for name, root in roots.items()}
    summary = {"walls_s": walls, "quality": quality(shapes, picks)}
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "search_quality.json").write_text(json.dumps(summary, indent=1))


def show_prior(shape: str) -> None:
    from types import SimpleNamespace

    from tritonbench_lab import sweep
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.records import parse_config_text
    from tritonbench_lab.space import config_text
    from tritonbench_lab.store import load_winners
    from tritonbench_lab.tuned import nearest_first

    spec = get_spec(KERNEL)

    def winners_only(request, dtype, shape):
        found = [w for w in load_winners(REPO / "configs" / SLUG / f"{KERNEL}.csv")
                 if w.dtype == dtype and w.shape != shape]
        return tuple(spec.space.complete(parse_config_text(w.config))
                     for w in nearest_first(found, shape, lambda w: w.shape))

    sweep.ORIGINAL_PRIOR = winners_only
    for config in richer_prior(SimpleNamespace(spec=spec, space=spec.space), DTYPE, shape):
        print(config_text(config))


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "sweep-rich":
        sweep_rich(rest)
    elif command == "prior":
        show_prior(rest[0])
    else:
        run(rest or HELD_OUT)
