"""The speed targets of the sweep issue, judged from the committed winners of one GPU.

    python3 scripts/targets.py [GPU_SLUG]        (default nvidia-h200; prints Markdown)

- matmul: tuned Triton >= 0.90x torch.matmul (same run) at 2048, 4096 and 8192 cubed.
- softmax, rmsnorm, add_rmsnorm: the winner >= 0.85 of the copy bandwidth at every shape
  that moves >= 64 MB; shown against the calibrated peak copy and against the calibrated
  copy of the same number of bytes (calibrate.py says why both).
Reads configs/<gpu>/*.csv and results/<gpu>/ceilings.csv only: no GPU needed.
"""

from __future__ import annotations

import sys

from tritonbench_lab.calibrate import ceilings_path, copy_at, copy_curve, load_ceilings, traffic_of
from tritonbench_lab.tuned import configs_path, load_winners

MATMUL_TARGET, COPY_TARGET, MIN_TRAFFIC = 0.90, 0.85, 64e6


def winners(gpu: str, kernel: str) -> list[dict[str, str]]:
    return load_winners(configs_path(".", gpu, kernel))


def main(gpu: str) -> int:
    missed = 0
    rows = [w for w in winners(gpu, "matmul") if w["shape"].split("x")[0] in ("2048", "4096", "8192")]
    print(f"### matmul: tuned / torch.matmul >= {MATMUL_TARGET} ({gpu})\n")
    print("| dtype | shape | tuned TFLOP/s | torch TFLOP/s | ratio | met |\n"
          "|---|---|---:|---:|---:|---|")
    for w in rows:
        ratio = float(w["speedup"])
        missed += ratio < MATMUL_TARGET
        print(f"| {w['dtype']} | {w['shape']} | {float(w['throughput']):.0f} | "
              f"{float(w['baseline_throughput']):.0f} | {ratio:.2f}x | "
              f"{'yes' if ratio >= MATMUL_TARGET else '**no**'} |")
    ceilings = load_ceilings(ceilings_path(".", gpu))
    curve, peak = copy_curve(ceilings), ceilings.get("copy")
    for kernel in ("softmax", "rmsnorm", "add_rmsnorm"):
        print(f"\n### {kernel}: winner / copy >= {COPY_TARGET} where >= 64 MB move ({gpu}, "
              f"peak copy {peak:.0f} GB/s)\n")
        print("| dtype | shape | MB moved | config | GB/s | same-size copy | of it | of peak | met |\n"
              "|---|---|---:|---|---:|---:|---:|---:|---|")
        for w in winners(gpu, kernel):
            value = float(w["throughput"])
            moved = traffic_of(value, float(w["p50_ms"]), "GB/s")
            same = copy_at(moved, curve) if curve else float("nan")
            judged = moved >= MIN_TRAFFIC
            met = value / same >= COPY_TARGET if curve else value / peak >= COPY_TARGET
            missed += judged and not met
            verdict = ("yes" if met else "**no**") if judged else "n/a (< 64 MB)"
            print(f"| {w['dtype']} | {w['shape']} | {moved / 1e6:.0f} | `{w['config']}` | "
                  f"{value:.0f} | {same:.0f} | {value / same:.2f} | {value / peak:.2f} | {verdict} |")
    print(f"\n{missed} target(s) missed (rows kernels judged against the same-size copy).")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "nvidia-h200"))
