"""TEST DATA: small, hand-checkable rows, winners and results folders written through the
real schema.

Numbers are invented for the tests (not measurements): throughput is 1000 / p50 so that
every ratio can be checked by hand.
"""

from __future__ import annotations

from pathlib import Path

from tritonbench_lab.data.records import OK, WRONG_RESULT, Ceiling, Record, Winner
from tritonbench_lab.data.store import append_rows, write_table

SLUG = "fixture-gpu"
SHAPES = ["64x1024", "64x4096", "64x16384"]
DEFAULT = "ROWS=1 num_warps=4"
# provider -> config -> p50 ms at every shape (times the shape's index + 1)
TIMES = {
    ("triton", "ROWS=1 num_warps=4"): 2.0,  # the default config
    ("triton", "ROWS=2 num_warps=8"): 1.0,  # the winner
    ("triton", "ROWS=4 num_warps=8"): 0.5,  # faster, but wrong: must never win
    ("torch", ""): 4.0,
    ("unfused", ""): 8.0,
    ("compiled", ""): 1.6,
}
COPY_GBPS = 1000.0


def record(provider: str, config: str, shape: str, p50: float, status: str = OK,
           kernel: str = "softmax", metric: str = "GB/s") -> Record:
    return Record(
        run_id="fixture", timestamp="2026-01-01T00:00:00+00:00", kernel=kernel,
        provider=provider, dtype="fp32", shape=shape, config=config, status=status, error="",
        max_abs_error=0.0, p20_ms=p50 * 0.9, p50_ms=p50, p80_ms=p50 * 1.25,
        throughput=1000.0 / p50, metric=metric, compile_s=0.1, phase="sweep",
        method="do_bench", warmup_ms=25, rep_ms=100, seed=0, gpu="Fixture GPU", gpu_slug=SLUG,
        driver="", cuda="", torch="9.9", triton="9.9", tlab="0", source="fixture",
    )


def ceiling(name: str, value: float, metric: str = "GB/s") -> Ceiling:
    return Ceiling(name=name, metric=metric, value=value, p20_ms=1.0, p50_ms=1.0, p80_ms=1.0,
                   size="fixture", method="do_bench", warmup_ms=25, rep_ms=200,
                   gpu="Fixture GPU", gpu_slug=SLUG, torch="9.9", triton="9.9",
                   timestamp="2026-01-01T00:00:00+00:00")


def winner(shape, config, dtype="bf16", kernel="matmul", p50_ms=1.0, op_p50_ms=None,
           host_ms=None, op_host_ms=None) -> Winner:
    """A winner as lookup and ops read it: its shape, config and times (100 TFLOP/s)."""
    return Winner(kernel=kernel, dtype=dtype, shape=shape, config=config, p50_ms=p50_ms,
                  throughput=100.0, metric="TFLOP/s", method="do_bench", warmup_ms=25,
                  rep_ms=100, best_baseline="", baseline_p50_ms=None, baseline_throughput=None,
                  speedup=None, op_p50_ms=op_p50_ms, gpu="Fixture GPU", torch="9", triton="9",
                  tlab="0.1.0", source="s", date="2026-01-01", run_id="r", host_ms=host_ms,
                  op_host_ms=op_host_ms)


def kernel_winner(kernel, dtype, shape, p50_ms, throughput, metric, speedup=None) -> Winner:
    """A winner as targets and check judge it: its throughput and its speedup over torch."""
    return Winner(kernel=kernel, dtype=dtype, shape=shape, config="ROWS=1 num_warps=4",
                  p50_ms=p50_ms, throughput=throughput, metric=metric, method="do_bench",
                  warmup_ms=25, rep_ms=100, best_baseline="torch", baseline_p50_ms=1.0,
                  baseline_throughput=1.0, speedup=speedup, op_p50_ms=None, gpu="Fixture",
                  torch="9", triton="9", tlab="0", source="s", date="2026-01-01", run_id="r")


def write_winners(path, winners) -> None:
    write_table(path, winners, Winner)


def write_softmax_fixture(root: Path) -> Path:
    folder = Path(root) / "results" / SLUG
    rows = []
    for index, shape in enumerate(SHAPES):
        for (provider, config), p50 in TIMES.items():
            wrong = config == "ROWS=4 num_warps=8"
            rows.append(record(provider, config, shape, p50 * (index + 1),
                               WRONG_RESULT if wrong else OK))
    append_rows(folder / "softmax.csv", rows)
    append_rows(folder / "ceilings.csv", [ceiling("copy", COPY_GBPS)])
    return folder


def write_matmul_fixture(root: Path) -> Path:
    folder = Path(root) / "results" / SLUG
    rows = []
    for shape in ("256x256x256", "512x512x512"):
        for bm in (32, 64):
            for bn in (32, 64):
                config = f"BLOCK_M={bm} BLOCK_N={bn} BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3"
                rows.append(record("triton", config, shape, 4096 / (bm * bn), kernel="matmul",
                                   metric="TFLOP/s"))
        rows.append(record("torch", "", shape, 1.0, kernel="matmul", metric="TFLOP/s"))
    append_rows(folder / "matmul.csv", rows)
    return folder
