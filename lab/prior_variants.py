"""Lab probe, not part of the product (nothing imports it): the variants of the prior that
BENCHMARKS.md ("Search strategies, replayed") lists as replayed and not kept, each swapped
into tritonbench_lab.search.prior and replayed leave-one-out on the committed H200 rows with the
8 starts of before (search.PRIOR_STARTS = 8), `prior:12` (and `:16`), 5 seeds. No GPU.

    PYTHONPATH=. python3 lab/prior_variants.py [--starts N] [KERNEL ...]
    (default: 8 starts, matmul matmul_gelu)
"""
import math
import sys

import tritonbench_lab.search.prior as P
import tritonbench_lab.search.strategies as S
import tritonbench_lab.tuned as T
from tritonbench_lab.data.records import parse_config_text
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.search.replay import replay_results, summarize
from tritonbench_lab.shapes import shape_sizes

SMS = 132  # the H200's
KEEP = {name: getattr(P, name) for name in ("portfolio", "nearness", "take_turns")}
KEEP_NEAREST = T.nearest_first


def waves_factor(shape: str, config: dict) -> float:
    """How much of its last wave a tile config leaves idle: ceil(tiles/SMs) / (tiles/SMs);
    1.05 for stream-K (its last wave shared), 1 where the space has no tiles."""
    sizes = shape_sizes(shape)
    if "BLOCK_M" not in config or len(sizes) != 3:
        return 1.0
    tiles = math.ceil(sizes[0] / config["BLOCK_M"]) * math.ceil(sizes[1] / config["BLOCK_N"])
    return 1.05 if config.get("STREAM_K") else math.ceil(tiles / SMS) / (tiles / SMS)


def wave_ranked(tables, shape, allowed=None, size=None):
    """Configs by their nearness-weighted mean log ratio to the best, each ratio moved by the
    change of wave factor from the tuned shape to this one."""
    score = {}
    for other, times in tables:
        ok = [ms for ms in times.values() if ms]
        weight = KEEP["nearness"](shape, other)
        if not ok or not weight:
            continue
        for text, ms in times.items():
            if allowed is not None and text not in allowed:
                continue
            config = parse_config_text(text)
            ratio = (min(ms / min(ok), 3.0) if ms else 3.0) * waves_factor(
                shape, config) / waves_factor(other, config)
            total = score.setdefault(text, [0.0, 0.0])
            total[0] += weight * math.log(ratio)
            total[1] += weight
    ranked = sorted(score, key=lambda t: score[t][0] / score[t][1])
    return ranked[:P.PORTFOLIO if size is None else size]


def one_per_tile(tables, shape, allowed=None, size=None):
    out, seen = [], set()
    for text in wave_ranked(tables, shape, allowed, 10**6):
        config = parse_config_text(text)
        if (config.get("BLOCK_M"), config.get("BLOCK_N")) not in seen:
            seen.add((config.get("BLOCK_M"), config.get("BLOCK_N")))
            out.append(text)
    return out[:P.PORTFOLIO if size is None else size]


def aligned(penalty: float):
    """Tuned shapes of another alignment class (tuned.alignment_class) weighed by `penalty`."""
    def nearness(shape, other):
        weight = KEEP["nearness"](shape, other)
        differs = T.alignment_class(shape_sizes(shape)) != T.alignment_class(shape_sizes(other))
        return weight * penalty if differs else weight

    def nearest_first(items, shape, shape_of):
        here = shape_sizes(shape)
        return sorted(KEEP_NEAREST(items, shape, shape_of), key=lambda item: T.alignment_class(
            shape_sizes(shape_of(item))) != T.alignment_class(here))
    return {"nearness": nearness, "nearest_first": nearest_first}


def fewer_winners_first(count: int):
    def take_turns(*lists):
        winners, chosen = lists
        return KEEP["take_turns"](list(winners)[:count], chosen, list(winners)[count:])
    return take_turns


def beside(first, second):
    return lambda *a, **k: [*dict.fromkeys([*first(*a, **k), *second(*a, **k)])]


VARIANTS = {
    "as it stood": {},
    "wave model as the portfolio": {"portfolio": wave_ranked},
    "wave model beside the portfolio": {"portfolio": beside(KEEP["portfolio"], wave_ranked)},
    "wave model alone": {"portfolio": wave_ranked, "take_turns": lambda w, c: list(c)},
    "one start per tile shape": {"portfolio": one_per_tile},
    "other alignment class x1/4": aligned(1 / 4),
    "other alignment class x1/16": aligned(1 / 16),
    "other alignment class left out": aligned(0.0),
    "portfolio of 12, 3 winners first": {"PORTFOLIO": 12,
                                         "take_turns": fewer_winners_first(3)},
    "portfolio of 16, 4 winners first": {"PORTFOLIO": 16,
                                         "take_turns": fewer_winners_first(4)},
}


def main(kernels: list[str], starts: int = 8) -> None:
    S.PRIOR_STARTS = P.PRIOR_STARTS = starts
    for kernel in kernels:
        for name, patch in VARIANTS.items():
            P.PORTFOLIO = 8
            T.nearest_first = KEEP_NEAREST
            for attr, value in {**KEEP, **patch}.items():
                setattr(T if attr == "nearest_first" else P, attr, value)
            rows = replay_results([f"results/nvidia-h200/{kernel}.csv"],
                                  [("prior", 12), ("prior", 16)], seeds=range(5),
                                  defaults={kernel: get_spec(kernel).space.default})
            table = summarize(rows)
            print(f"{kernel} {name} ({starts} starts): within 2% at prior:12 "
                  f"{table['prior:12']['within_2pct']:.0%}, at prior:16 "
                  f"{table['prior:16']['within_2pct']:.0%} (worst loss at prior:12 "
                  f"{table['prior:12']['worst_loss']:.1%})", flush=True)


if __name__ == "__main__":
    args, starts = sys.argv[1:], 8
    if args[:1] == ["--starts"]:
        starts, args = int(args[1]), args[2:]
    main(args or ["matmul", "matmul_gelu"], starts)
