"""`tlab targets`: the speed targets judged from committed winners and ceilings."""

import subprocess
import sys

from helpers.fixture_results import ceiling, kernel_winner

from tritonbench_lab.data.records import Winner
from tritonbench_lab.data.store import append_rows, write_table


def test_targets_judge_rows_against_the_copy_of_their_bytes_and_matmul_against_torch(tmp_path):
    gpu = "fixture-gpu"
    write_table(tmp_path / "configs" / gpu / "matmul.csv", [
        kernel_winner("matmul", "bf16", "2048x2048x2048", 1.0, 100.0, "TFLOP/s", 0.95),
        kernel_winner("matmul", "bf16", "4096x4096x4096", 1.0, 100.0, "TFLOP/s", 0.80),  # missed
        kernel_winner("matmul", "bf16", "512x512x512", 1.0, 100.0, "TFLOP/s", 0.10),  # not judged
    ], Winner)
    # 100 MB moved at 2000 GB/s (0.05 ms): the same-size copy is 2000 -> 1.00, met although
    # it is half the peak; 1 GB at 3000 GB/s against a 4000 GB/s copy -> 0.75, missed;
    # 10 MB is below 64 MB and not judged.
    write_table(tmp_path / "configs" / gpu / "softmax.csv", [
        kernel_winner("softmax", "fp32", "8192x1024", 0.05, 2000.0, "GB/s"),
        kernel_winner("softmax", "fp32", "8192x65536", 1e9 / 3000e9 * 1e3, 3000.0, "GB/s"),
        kernel_winner("softmax", "fp32", "64x1024", 0.01, 1000.0, "GB/s"),
    ], Winner)
    append_rows(tmp_path / "results" / gpu / "ceilings.csv", [
        ceiling("copy", 4000.0), ceiling("copy_16MiB", 2000.0),
        ceiling("copy_128MiB", 2000.0), ceiling("copy_512MiB", 4000.0)])
    result = subprocess.run([sys.executable, "-m", "tritonbench_lab", "targets", "--root",
                             str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    out = result.stdout
    assert "| bf16 | 4096x4096x4096 | 100 | 1 | 0.80x | **no** |" in out
    assert "| bf16 | 2048x2048x2048 | 100 | 1 | 0.95x | yes |" in out
    assert "512x512x512" not in out
    assert "| 2000 | 2000 | 1.00 | 0.50 | yes |" in out
    assert "| 3000 | 4000 | 0.75 | 0.75 | **no** |" in out
    assert "n/a (< 64 MB)" in out
    assert out.strip().endswith("2 target(s) missed (row kernels judged against the same-size copy).")



def test_targets_judge_gpus_only_and_refuse_a_gpu_without_configs(tmp_path):
    """The interpreter's configs are no GPU numbers: left out by default and refused by name,
    as is a GPU with no configs; a GPU's results folder names it."""
    for gpu in ("fixture-gpu", "interpreter"):
        write_table(tmp_path / "configs" / gpu / "matmul.csv", [
            kernel_winner("matmul", "bf16", "2048x2048x2048", 1.0, 100.0, "TFLOP/s", 0.95)], Winner)
    (tmp_path / "results" / "fixture-gpu").mkdir(parents=True)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "tritonbench_lab", "targets", "--root",
                               str(tmp_path), *args], capture_output=True, text=True, timeout=60)

    everything = run()
    assert everything.returncode == 0, everything.stderr
    assert "(fixture-gpu)" in everything.stdout and "interpreter" not in everything.stdout
    by_folder = run("--gpu-name", str(tmp_path / "results" / "fixture-gpu"))
    assert by_folder.returncode == 0 and by_folder.stdout == everything.stdout
    for name in ("no-such-gpu", "interpreter"):
        refused = run("--gpu-name", name)
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert f"no GPU config files for {name!r}" in refused.stderr
        assert "GPUs with configs there: fixture-gpu" in refused.stderr


def test_targets_judge_winners_against_baselines_of_their_own_run(tmp_path):
    from helpers.fixture_results import SLUG, record

    from tritonbench_lab.data.layout import Layout
    from tritonbench_lab.views.targets import targets_report

    # Every fixture row moves 1 GB (throughput 1000 / p50 GB/s over p50 ms).
    rows = [
        # layernorm 16384x4096: 1.2x torch (< 1.3) and 0.9x compiled (< 1.0): two misses
        record("triton", "ROWS=1 num_warps=4", "16384x4096", 1.0, kernel="layernorm"),
        record("torch", "", "16384x4096", 1.2, kernel="layernorm"),
        record("compiled", "", "16384x4096", 0.9, kernel="layernorm"),
        # layernorm 16384x8192: 1.5x and 1.1x: both met
        record("triton", "ROWS=1 num_warps=4", "16384x8192", 1.0, kernel="layernorm"),
        record("torch", "", "16384x8192", 1.5, kernel="layernorm"),
        record("compiled", "", "16384x8192", 1.1, kernel="layernorm"),
        # softmax: only rows of >= 131,072 columns are held to 1.5x torch.softmax
        record("triton", "ROWS=1 num_warps=4", "512x1048576", 1.0),
        record("torch", "", "512x1048576", 2.0),
        record("triton", "ROWS=1 num_warps=4", "8192x4096", 1.0),
        record("torch", "", "8192x4096", 1.1),
        # rope 1x4096x32x128: no compiled row in the winner's run: a miss, said so
        record("triton", "HEADS=1 TOKENS=1 num_warps=4", "1x4096x32x128", 1.0, kernel="rope"),
    ]
    for kernel in ("layernorm", "softmax", "rope"):
        append_rows(tmp_path / "results" / SLUG / f"{kernel}.csv",
                    [r for r in rows if r.kernel == kernel])
    append_rows(tmp_path / "results" / SLUG / "ceilings.csv", [ceiling("copy", 4000.0)])
    lines, missed = targets_report(Layout(tmp_path), SLUG)
    out = "\n".join(lines)
    assert "| fp32 | 16384x4096 | 1.0000 | torch | 1.2000 | 1.20x | **no** |" in out
    assert "| fp32 | 16384x4096 | 1.0000 | compiled | 0.9000 | 0.90x | **no** |" in out
    assert "| fp32 | 16384x8192 | 1.0000 | torch | 1.5000 | 1.50x | yes |" in out
    assert "| fp32 | 16384x8192 | 1.0000 | compiled | 1.1000 | 1.10x | yes |" in out
    assert "| fp32 | 512x1048576 | 1.0000 | torch | 2.0000 | 2.00x | yes |" in out
    assert "8192x4096 | 1.0000 | torch" not in out
    assert "| fp32 | 1x4096x32x128 | 1.0000 | compiled | nan | nanx | **no** (not timed) |" in out
    assert missed == 3
