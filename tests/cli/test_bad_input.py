"""Bad input to every `tlab` command: one line on stderr starting `tlab: error: `, exit code
2, no traceback, and nothing created or changed on disk.

The table runs each case as `python -m tritonbench_lab` in a process of its own, in a fresh
working folder (forked from a server that imported torch once: helpers/cli_server.py); the
TLAB_FAST_LAUNCH cases run it as a plain subprocess, the way users run tlab; the property test
feeds arbitrary text to `tlab sweep --sizes/--dtype` in-process, with the sweep itself replaced
so that no kernel ever runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import stat
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch
from helpers.cli_server import run_tlab
from helpers.faulty_kernels import FAULTS, ISSUE_FAULTS, module_text
from helpers.paths import PLANTED, REPO
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

HAS_CUDA = torch.cuda.is_available()
NO_GPU_ONLY = pytest.mark.skipif(HAS_CUDA, reason="the case is about a machine without CUDA")
SIZES_FORMS = "expected N, A-B (powers of two), A-B:STEP or AxBxC with positive integers"


# --- fixture files some cases need, written before the snapshot --------------------------

def _space(text: str):
    def setup(tmp: Path) -> None:
        (tmp / "space.json").write_text(text)
    return setup


def _foreign_results(tmp: Path) -> None:
    path = tmp / "results" / "interpreter" / "softmax.csv"
    path.parent.mkdir(parents=True)
    path.write_text("name,value\nfoo,1\nbar,2\n")  # another tool's CSV


def _results_cut_in_the_middle(tmp: Path) -> None:
    """A real results file whose second row (line 3) lost its second half, rows after it kept."""
    from helpers.fixture_results import record

    from tritonbench_lab.data.store import append_rows

    path = tmp / "results" / "interpreter" / "softmax.csv"
    rows = [dataclasses.replace(record("torch", "", shape, 1.0), gpu="interpreter",
                                gpu_slug="interpreter") for shape in ("64x128", "64x256", "64x512")]
    append_rows(path, rows)
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 4
    lines[2] = ",".join(lines[2].split(",")[:10]) + "\n"
    path.write_text("".join(lines))


def _byte_ff(tmp: Path) -> None:
    """Committed-looking results, ceilings and configs with one byte 0xff inside a row."""
    from helpers.fixture_results import SLUG, write_softmax_fixture

    from tritonbench_lab.data.layout import Layout
    from tritonbench_lab.data.records import Winner
    from tritonbench_lab.data.store import load_records, write_table
    from tritonbench_lab.data.winners import pick_winners

    layout = Layout(tmp)
    write_softmax_fixture(tmp)
    write_table(layout.configs_file(SLUG, "softmax"),
                pick_winners(load_records(layout.results_file(SLUG, "softmax"))), Winner)
    for path in (layout.results_file(SLUG, "softmax"), layout.configs_file(SLUG, "softmax")):
        path.write_bytes(path.read_bytes().replace(b"ROWS=2", b"ROWS=\xff", 1))
    interpreter = layout.results_file("interpreter", "softmax")
    interpreter.parent.mkdir(parents=True)
    interpreter.write_bytes(layout.results_file(SLUG, "softmax").read_bytes())


def _nan_time(tmp: Path) -> None:
    """Committed-looking results and configs, then a NaN median in line 3 of the results (a
    bug's or a damaged copy's): it must never reach a configs file, a report or the gate."""
    import csv
    import io

    from helpers.fixture_results import SLUG, write_softmax_fixture

    from tritonbench_lab.data.layout import Layout
    from tritonbench_lab.data.records import Winner
    from tritonbench_lab.data.store import load_records, write_table
    from tritonbench_lab.data.winners import pick_winners

    layout = Layout(tmp)
    write_softmax_fixture(tmp)
    results = layout.results_file(SLUG, "softmax")
    write_table(layout.configs_file(SLUG, "softmax"), pick_winners(load_records(results)), Winner)
    rows = list(csv.reader(io.StringIO(results.read_text())))
    rows[2][rows[0].index("p50_ms")] = "nan"
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    results.write_text(text.getvalue())
    interpreter = layout.results_file("interpreter", "softmax")
    interpreter.parent.mkdir(parents=True)
    interpreter.write_text(text.getvalue())


def _afile(tmp: Path) -> None:
    (tmp / "afile").write_text("a regular file, not a folder\n")


def _h200_configs(tmp: Path) -> None:
    """The committed H200 configs alone: the repository's own configs/ also holds an
    interpreter folder once `make sweep` ran there without a GPU."""
    import shutil

    shutil.copytree(REPO / "configs" / "nvidia-h200", tmp / "configs" / "nvidia-h200")


def _softmax_results(tmp: Path) -> None:
    from helpers.fixture_results import write_softmax_fixture

    write_softmax_fixture(tmp)


def _h200_matmul_config_outside_the_space(tmp: Path) -> None:
    """The committed H200 configs, one matmul row's BLOCK_M set to a value the space lacks
    (a hand edit, or a file of another tlab)."""
    _h200_configs(tmp)
    path = tmp / "configs" / "nvidia-h200" / "matmul.csv"
    lines = path.read_text().splitlines(keepends=True)
    assert "BLOCK_M=64 " in lines[1]
    lines[1] = lines[1].replace("BLOCK_M=64 ", "BLOCK_M=96 ", 1)
    path.write_text("".join(lines))


def _module(text: str):
    def setup(tmp: Path) -> None:
        (tmp / "kernels.py").write_text(text)
    return setup


def _module_named(name: str):
    def setup(tmp: Path) -> None:
        (tmp / name).write_text("# the user's own work\n")
    return setup


# --- the table -----------------------------------------------------------------------------
# Each case: argv (with {tmp} for the working folder), the phrases its one error line must
# hold (what is wrong and, where tlab says it, what is accepted), and an optional setup.

SWEEP = ("sweep", "softmax", "--interpret", "--root", "{tmp}")


def _recorded(rows: str):
    def setup(tmp: Path) -> None:
        name = "calls.csv" if rows else "empty.csv"
        (tmp / name).write_text("kernel,dtype,shape,gpu_slug,tuned,provider,timestamp\n" + rows)
    return setup


def _foreign_results_file(tmp: Path) -> None:
    folder = tmp / "results" / "nvidia-h200"
    folder.mkdir(parents=True)
    (folder / "softmax.csv").write_text((REPO / "results" / "nvidia-h200" / "softmax.csv")
                                        .read_text().split("\n", 2)[0] + "\n")


def case(id, args, phrases, setup=None, marks=()):
    return pytest.param(list(args), phrases, setup, id=id, marks=marks)


CASES = [
    # --baselines grammar
    case("baselines-unknown", [*SWEEP, "--baselines", "torch,cublas"],
         ["--baselines cublas: softmax's baselines are", "(or all, none)"]),
    case("baselines-empty", [*SWEEP, "--baselines", ","],
         ["--baselines ',' names nothing", "baseline names, or all, or none"]),
    case("baselines-all-in-a-list", [*SWEEP, "--baselines", "all,torch"],
         ["--baselines all,torch: all and none stand alone"]),
    case("baselines-none-in-a-list", [*SWEEP, "--baselines", "torch,none"],
         ["--baselines torch,none: all and none stand alone"]),
    # --sizes grammar
    case("sizes-abc", [*SWEEP, "--sizes", "abc"], ["bad size term 'abc'", SIZES_FORMS]),
    case("sizes-reversed-range", [*SWEEP, "--sizes", "8192-512"],
         ["the range is reversed (8192 > 512)", "write 512-8192"]),
    case("sizes-zero", [*SWEEP, "--sizes", "0"],
         ["bad size term '0'", "sizes must be positive integers"]),
    case("sizes-negative", [*SWEEP, "--sizes=-4"],
         ["bad size term '-4'", "sizes must be positive integers"]),
    case("sizes-open-range", [*SWEEP, "--sizes", "512-"], ["bad size term '512-'", SIZES_FORMS]),
    case("sizes-too-large-for-memory", [*SWEEP, "--dtype", "fp32", "--sizes", "1000000000x65536"],
         ["softmax fp32 1000000000x65536 needs about", "GB", "of host memory"]),
    case("softmax-wider-than-supported", [*SWEEP, "--dtype", "fp32", "--sizes", "16777217"],
         ["softmax rows are at most 16777216 columns, got 16777217"]),
    case("matmul-shape-with-two-dims",
         ["sweep", "matmul", "--interpret", "--root", "{tmp}", "--shapes", "4096x4096"],
         ["shape '4096x4096' has 2 sizes", "MxNxK (3 sizes) or a single size"]),
    # dtypes and kernels
    case("dtype-bf17", [*SWEEP, "--dtype", "bf17"],
         ["unknown dtype 'bf17'", "accepted are fp32, fp16, bf16"]),
    case("kernel-matmull", ["sweep", "matmull", "--interpret", "--root", "{tmp}"],
         ["unknown kernel 'matmull'", "did you mean 'matmul'", "known kernels are matmul",
          "a kernel of your own once its module is loaded (-m FILE.py"]),
    case("kernel-of-ones-own-without-its-module", ["sweep", "l2norm", "--interpret", "--root",
                                                   "{tmp}"],
         ["unknown kernel 'l2norm' (l2norm.py in this folder is not loaded: -m l2norm.py loads "
          "it)"], _module_named("l2norm.py")),
    case("matmul-bf16-in-interpreter",
         ["sweep", "matmul", "--interpret", "--root", "{tmp}", "--dtype", "bf16"],
         ["cannot run in Triton's interpreter", "11584", "run it on a GPU"]),
    case("planted-fp16", ["sweep", "planted", "--kernel-module", str(PLANTED), "--interpret",
                          "--root", "{tmp}", "--dtype", "fp16"],
         ["planted does not support fp16", "it takes fp32"]),
    # --space
    case("space-unknown-preset", [*SWEEP, "--space", "nosuchpreset"],
         ["--space 'nosuchpreset'", "not a preset (full, default) nor a file"]),
    case("space-unknown-parameter", [*SWEEP, "--space", "{tmp}/space.json"],
         ["unknown parameter 'BLOCK'", "known: ROWS, num_warps"], _space('{"BLOCK": [1]}')),
    case("space-not-json", [*SWEEP, "--space", "{tmp}/space.json"],
         ["space.json' is not valid JSON"], _space("ROWS: [1, 2]\n")),
    case("space-empty-list", [*SWEEP, "--space", "{tmp}/space.json"],
         ["ROWS must be a non-empty list of positive integers"], _space('{"ROWS": []}')),
    case("space-zero-where-the-kernel-has-none", [*SWEEP, "--space", "{tmp}/space.json"],
         ["ROWS must be a non-empty list of positive integers"], _space('{"ROWS": [0, 1]}')),
    case("space-negative-per-sm", ["sweep", "softmax", "--interpret", "--root", "{tmp}",
                                   "--space", "{tmp}/space.json"],
         ["PER_SM must be a non-empty list of integers >= 0"], _space('{"PER_SM": [-1]}')),
    # results files and --out
    case("results-csv-of-another-tool", [*SWEEP, "--dtype", "fp32", "--sizes", "37x129"],
         ["softmax.csv' is not a tlab results file", "results/SCHEMA.md"], _foreign_results),
    case("results-csv-cut-mid-file", [*SWEEP, "--dtype", "fp32", "--sizes", "37x129"],
         ["softmax.csv' line 3: 10 fields, expected"], _results_cut_in_the_middle),
    case("out-below-a-regular-file",
         ["sweep", "softmax", "--interpret", "--root", "{tmp}/afile/sub", "--dtype", "fp32",
          "--sizes", "37x129", "--space", "default"],
         ["afile", "is not a folder"], _afile),
    # --gpu / calibrate without CUDA
    case("sweep-gpu-without-cuda", ["sweep", "softmax", "--gpu", "--root", "{tmp}"],
         ["--gpu asks for a GPU", "CUDA sees none", "use --interpret"], marks=NO_GPU_ONLY),
    case("calibrate-without-gpu", ["calibrate", "--root", "{tmp}"],
         ["tlab calibrate measures a GPU and needs CUDA", "none is visible"], marks=NO_GPU_ONLY),
    case("host-times-without-gpu", ["host-times", "--root", "{tmp}"],
         ["tlab host-times times a GPU's host and needs CUDA", "none is visible"], _h200_configs,
         marks=NO_GPU_ONLY),
    case("host-times-bad-dtype", ["host-times", "--root", "{tmp}", "--dtype", "fp64"],
         ["unknown dtype 'fp64'", "accepted are fp32"], _h200_configs),
    case("host-times-no-kernels", ["host-times", "--root", "{tmp}", "--kernel", ","],
         ["no kernels in --kernel"], _h200_configs),
    # numeric options (click's own checks)
    case("timeout-zero", [*SWEEP, "--timeout", "0"],
         ["Invalid value for '--timeout'", "greater than or equal to 1",
          "Try 'tlab sweep --help' for help."]),
    case("timeout-inf", [*SWEEP, "--timeout", "inf"],
         ["Invalid value for '--timeout'", "less than or equal to 3600"]),
    case("compile-timeout-nan", [*SWEEP, "--compile-timeout", "nan"],
         ["Invalid value for '--compile-timeout'"]),
    case("rep-ms-zero", [*SWEEP, "--rep-ms", "0"],
         ["Invalid value for '--rep-ms'", "greater than or equal to 1"]),
    case("seed-abc", [*SWEEP, "--seed", "abc"], ["Invalid value for '--seed'", "valid integer"]),
    # --kernel-module
    case("kernel-module-missing", [*SWEEP, "--kernel-module", "{tmp}/missing.py"],
         ["missing.py' does not exist"]),
    case("kernel-module-not-python", [*SWEEP, "--kernel-module", "{tmp}/afile"],
         ["afile' is not a .py file"], _afile),
    case("kernel-module-syntax-error", [*SWEEP, "--kernel-module", "{tmp}/kernels.py"],
         ["kernels.py' failed to import (line 2)", "SyntaxError"],
         _module("import torch\ndef broken(:\n")),
    case("kernel-module-without-spec", [*SWEEP, "--kernel-module", "{tmp}/kernels.py"],
         ["kernels.py' defines neither SPEC nor SPECS"], _module("X = 1\n")),
    case("list-kernel-module-missing", ["list", "--kernel-module", "{tmp}/missing.py"],
         ["missing.py' does not exist"]),
    case("list-kernel-unknown", ["list", "--kernel", "nope"],
         ["unknown kernel 'nope'", "known kernels are matmul"]),
    case("list-kernel-empty", ["list", "--kernel", ","],
         ["no kernels in --kernel: known kernels are matmul"]),
    # empty values and sizes the interpreter cannot run in time
    case("sizes-empty", [*SWEEP, "--sizes", ""], ["--sizes is empty", "leave the option out"]),
    case("shapes-blank", [*SWEEP, "--shapes", " "], ["--shapes is empty"]),
    case("dtype-empty", [*SWEEP, "--dtype", ","], ["no dtypes in --dtype", "accepted are"]),
    case("search-unknown", [*SWEEP, "--search", "annealing"],
         ["--search 'annealing'", "exhaustive, random, local, optuna"]),
    case("search-budget-zero", [*SWEEP, "--search", "local:0"], ["--search 'local:0'"]),
    case("gpus-not-numbers", [*SWEEP, "--gpus", "first"], ["--gpus 'first'", "'all' or device"]),
    case("gpus-twice", [*SWEEP, "--gpus", "0,0"], ["--gpus '0,0' names a device twice"]),
    case("backend-unknown", [*SWEEP, "--backend", "slurm"],
         ["--backend 'slurm'", "local and ray"]),
    case("first-rep-ms-negative", [*SWEEP, "--first-rep-ms", "-1"],
         ["Invalid value for '--first-rep-ms'"]),
    case("every-config-pruned", [*SWEEP, "--dtype", "fp32", "--sizes", "8x65536",
                                 "--space", "{tmp}/space.json"],
         ["no config of the space can run softmax fp32 8x65536", "register spills"],
         _space('{"num_warps": [1, 4], "SPLIT": [1], "TILES": [1]}')),
    case("interpreter-shape-too-big", [*SWEEP, "--dtype", "fp32", "--shapes", "8192x256"],
         ["softmax fp32 8192x256 is too big for Triton's interpreter", "about",
          "; try ", "x256, or run it on a GPU"]),
    # a damaged CSV (a byte that is not UTF-8) in every command that reads one
    *[case(f"byte-0xff-{name}", args, ["not UTF-8 text (byte 0xff)", "line "], _byte_ff)
      for name, args in [
          ("sweep", [*SWEEP, "--dtype", "fp32", "--sizes", "64x129"]),
          ("plot", ["plot", "--root", "{tmp}", "--out", "{tmp}/plots"]),
          ("report", ["report", "--root", "{tmp}", "--out", "{tmp}/plots"]),
          ("compare", ["compare", "fixture-gpu", "interpreter", "--root", "{tmp}", "--out",
                       "{tmp}/plots"]),
          ("check", ["check", "--root", "{tmp}", "--interpret"]),
          ("export", ["export", "softmax", "--root", "{tmp}", "--out", "{tmp}/exported"]),
          ("targets", ["targets", "--root", "{tmp}"]),
      ]],
    # options that contradict each other, or budgets no one means
    case("ray-address-with-local-backend", [*SWEEP, "--ray-address", "127.0.0.1:6379"],
         ["--ray-address 127.0.0.1:6379 is for --backend ray", "nothing would use it"]),
    case("confirm-rep-ms-without-confirmations",
         [*SWEEP, "--confirm", "0", "--confirm-rep-ms", "50"],
         ["--confirm-rep-ms 50 times the confirmations", "--confirm 0 turns them off"]),
    case("first-rep-ms-above-rep-ms", [*SWEEP, "--first-rep-ms", "200", "--rep-ms", "100"],
         ["--first-rep-ms 200 is above --rep-ms 100", "ranks the configs"]),
    case("rep-ms-absurd", [*SWEEP, "--rep-ms", "1000000000000"],
         ["Invalid value for '--rep-ms'", "less than or equal to 10000"]),
    case("first-rep-ms-absurd", [*SWEEP, "--first-rep-ms", "20000"],
         ["Invalid value for '--first-rep-ms'", "less than or equal to 10000"]),
    case("confirm-rep-ms-absurd", [*SWEEP, "--confirm-rep-ms", "20000"],
         ["Invalid value for '--confirm-rep-ms'", "less than or equal to 10000"]),
    case("timeout-absurd", [*SWEEP, "--timeout", "1e9"],
         ["Invalid value for '--timeout'", "less than or equal to 3600"]),
    case("compile-timeout-absurd", [*SWEEP, "--compile-timeout", "1e9"],
         ["Invalid value for '--compile-timeout'", "less than or equal to 3600"]),
    case("calibrate-rep-ms-absurd", ["calibrate", "--root", "{tmp}", "--rep-ms", "99999999"],
         ["Invalid value for '--rep-ms'", "less than or equal to 10000"]),
    case("ray-address-unreachable",
         [*SWEEP, "--dtype", "fp32", "--sizes", "37x129", "--backend", "ray", "--ray-address",
          "127.0.0.1:1"],
         ["--ray-address 127.0.0.1:1: no Ray cluster answers there within", "ray start --head"]),
    case("ray-address-not-host-port", [*SWEEP, "--backend", "ray", "--ray-address", "headnode"],
         ["--ray-address 'headnode'", "HOST:PORT"]),
    case("compare-one-gpu-twice",
         ["compare", "fixture-gpu", "{tmp}/results/fixture-gpu", "--root", "{tmp}", "--out",
          "{tmp}/plots"],
         ["compare got the results folder", "twice", "fixture-gpu"], _softmax_results),
    case("explain-dtype-the-kernel-refuses",
         ["explain", "matmul", "--shape", "64x64x64", "--dtype", "fp8e4m3"],
         ["matmul does not support fp8e4m3: it takes fp32, fp16, bf16"]),
    case("explain-shape-of-zeros", ["explain", "matmul", "--shape", "0x0x0"],
         ["--shape '0x0x0'", "sizes must be positive integers"]),
    case("explain-config-outside-the-space",
         ["explain", "matmul", "--shape", "4096x4096x4096", "--root", "{tmp}"],
         ["matmul.csv' line 2: config", "BLOCK_M=96", "outside the matmul space",
          "BLOCK_M=96 is not one of"], _h200_matmul_config_outside_the_space),
    case("export-config-outside-the-space",
         ["export", "matmul", "--root", "{tmp}", "--out", "{tmp}/exported"],
         ["matmul.csv' line 2: config", "BLOCK_M=96", "outside the matmul space"],
         _h200_matmul_config_outside_the_space),
    # a NaN time in a results file: refused as damage wherever it is read, naming the line
    *[case(f"nan-time-{name}", args, ["softmax.csv' line 3: p50_ms is nan: not a measurement"],
           _nan_time)
      for name, args in [
          ("sweep", [*SWEEP, "--dtype", "fp32", "--sizes", "64x129"]),
          ("plot", ["plot", "--root", "{tmp}", "--out", "{tmp}/plots"]),
          ("report", ["report", "--root", "{tmp}", "--out", "{tmp}/plots"]),
          ("check", ["check", "--root", "{tmp}", "--interpret"]),
          ("targets", ["targets", "--root", "{tmp}"]),
      ]],
    # commands and arguments
    case("unknown-command", ["frobnicate"], ["No such command 'frobnicate'",
                                             "Try 'tlab --help' for help."]),
    case("sweep-without-kernel", ["sweep", "--interpret", "--root", "{tmp}"],
         ["which kernel? name one (`tlab list`), or give --shapes-from FILE"]),
    case("compare-one-folder", ["compare", "{tmp}", "--root", "{tmp}", "--out", "{tmp}/plots"],
         ["compare needs at least two results folders or GPU slugs"]),
    case("compare-missing-folders",
         ["compare", "{tmp}/nope", "{tmp}/nope2", "--root", "{tmp}", "--out", "{tmp}/plots"],
         ["no results for '{tmp}/nope'", "neither a folder nor a GPU under '{tmp}/results'"]),
    case("plot-unknown-gpu",
         ["plot", "--gpu-name", "no-such-gpu", "--root", "{tmp}", "--out", "{tmp}/plots"],
         ["no results for 'no-such-gpu'", "neither a folder nor a GPU under '{tmp}/results'"]),
    case("report-empty-root", ["report", "--root", "{tmp}", "--out", "{tmp}/plots"],
         ["no GPU results under '{tmp}/results'", "run `tlab sweep` first"]),
    case("export-unknown-kernel", ["export", "nope", "--root", "{tmp}", "--out", "{tmp}/exported"],
         ["unknown kernel 'nope'", "known kernels are matmul"]),
    case("export-format-yaml", ["export", "matmul", "--format", "yaml", "--root", "{tmp}",
                                "--out", "{tmp}/exported"],
         ["--format yaml: accepted are autotune, json, vllm"]),
    case("export-untuned-kernel",
         ["export", "matmul_gelu_tanh", "--root", "{tmp}", "--out", "{tmp}/exported"],
         ["no winners for 'matmul_gelu_tanh' under '{tmp}/configs'", "run `tlab sweep` first"]),
    case("check-without-configs", ["check", "--root", "{tmp}"],
         ["no config files under '{tmp}/configs'"]),
    case("check-unknown-dtype", ["check", "--root", str(REPO), "--dtype", "bf17"],
         ["unknown dtype 'bf17'", "accepted are fp32, fp16, bf16"]),
    # tlab explain, tlab ops-bench, the new sweep options
    case("explain-shape-abc", ["explain", "matmul", "--shape", "abc"],
         ["--shape 'abc' is not sizes joined by 'x'", "give MxNxK"]),
    case("explain-shape-wrong-count", ["explain", "matmul", "--shape", "64x64"],
         ["matmul shapes have 3 sizes (MxNxK)"]),
    case("explain-unknown-gpu", ["explain", "matmul", "--shape", "64x64x64", "--root",
                                 "{tmp}", "--gpu-name", "nope"],
         ["no configs for matmul of GPU 'nope'", "GPUs with some are nvidia-h200"],
         setup=_h200_configs),
    case("explain-no-configs", ["explain", "matmul", "--shape", "64x64x64", "--root", "{tmp}"],
         ["no configs for matmul under"]),
    case("ops-bench-unknown-kernel", ["ops-bench", "--kernel", "nope"],
         ["no ops-bench shapes for kernel(s) nope", "it covers matmul"]),
    case("model-bench-unknown-workload", ["model-bench", "--workload", "prefil"],
         ["unknown workload 'prefil'", "accepted are prefill 1x2048", "or a kind: decode, prefill"]),
    case("ops-bench-out-folder-missing", ["ops-bench", "--out", "{tmp}/no/such/x.md"],
         ["--out", "does not exist"]),
    case("sweep-jobs-zero", [*SWEEP, "--jobs", "0"], ["'--jobs'", "greater than or equal to 1"]),
    case("sweep-confirm-rep-ms-text", [*SWEEP, "--confirm-rep-ms", "soon"],
         ["'--confirm-rep-ms'", "valid integer"]),
    case("check-kernel-without-configs", ["check", "--root", "{tmp}", "--kernel", "layernorm"],
         ["no config files under", "for kernel(s) layernorm"]),
    case("archive-without-results", ["archive", "--root", "{tmp}"],
         ["no results files under '{tmp}/results'"]),
    case("archive-unknown-kernel", ["archive", "--root", "{tmp}", "--kernel", "nope"],
         ["unknown kernel(s) nope in --kernel", "accepted are", "softmax"]),
    case("archive-foreign-results", ["archive", "--root", "{tmp}"],
         ["is not a results file of this tlab's layout", "nothing archived"],
         setup=_foreign_results),
    # tlab new: names it cannot take, files it will not overwrite
    case("new-name-upper-case", ["new", "MyOp"],
         ["tlab new 'MyOp': the name must be a lower-case Python identifier", "such as my_op"]),
    case("new-name-a-keyword", ["new", "lambda"], ["tlab new 'lambda'", "not a keyword"]),
    case("new-name-of-a-built-in", ["new", "softmax"],
         ["'softmax' is a built-in kernel", "built-in names are matmul"]),
    case("new-name-of-a-module", ["new", "json"], ["'json' is the name of a Python module"]),
    case("new-name-begins-with-test", ["new", "test_op"], ["begins with 'test'"]),
    case("new-module-there-already", ["new", "my_op"],
         ["my_op.py' exists already: tlab new never overwrites a file"],
         _module_named("my_op.py")),
    case("new-test-there-already", ["new", "my_op", "--out", "{tmp}"],
         ["test_my_op.py' exists already"], _module_named("test_my_op.py")),
    case("new-out-a-file", ["new", "my_op", "--out", "{tmp}/afile"],
         ["--out '{tmp}/afile' is not a folder"], _afile),
    case("check-dtype-the-kernel-does-not-take", ["check", "--root", str(REPO), "--kernel",
                                                  "matmul", "--dtype", "fp8e4m3"],
         ["--dtype fp8e4m3: matmul take(s)", "no row of fp8e4m3 would be checked"]),
    case("timing-in-the-interpreter", [*SWEEP, "--timing", "cudagraph"],
         ["--timing cudagraph chooses a GPU's clock", "leave --timing out there"]),
    # --shapes-from: a file of recorded calls (ops.record_shapes)
    case("shapes-from-missing", ["sweep", "--interpret", "--shapes-from", "{tmp}/none.csv"],
         ["--shapes-from '{tmp}/none.csv': no such file", "ops.record_shapes"]),
    case("shapes-from-a-results-file", ["sweep", "--interpret", "--shapes-from",
                                        "{tmp}/results/nvidia-h200/softmax.csv"],
         ["is not a tlab recorded calls file"], _foreign_results_file),
    case("shapes-from-empty", ["sweep", "--interpret", "--shapes-from", "{tmp}/empty.csv"],
         ["no calls recorded in it"], _recorded("")),
    case("shapes-from-kernel-not-there", ["sweep", "matmul", "--interpret", "--shapes-from",
                                          "{tmp}/calls.csv"],
         ["no calls of matmul that the kernel takes", "it holds calls of add"],
         _recorded("add,fp32,1000,interpreter,none,torch,2026-12-06T00:00:00+00:00\n")),
    case("shapes-from-dtype-not-there", ["sweep", "add", "--dtype", "fp16", "--interpret",
                                         "--shapes-from", "{tmp}/calls.csv"],
         ["no calls of add fp16"],
         _recorded("add,fp32,1000,interpreter,none,torch,2026-12-06T00:00:00+00:00\n")),
    case("shapes-from-with-shapes", ["sweep", "add", "--interpret", "--shapes", "100",
                                     "--shapes-from", "{tmp}/calls.csv"],
         ["--shapes-from gives the shapes: leave out --sizes and --shapes"],
         _recorded("add,fp32,1000,interpreter,none,torch,2026-12-06T00:00:00+00:00\n")),
    case("shapes-from-bad-nearness", ["sweep", "add", "--interpret", "--shapes-from",
                                      "{tmp}/calls.csv"],
         ["calls.csv' line 2", "tuned"],
         _recorded("add,fp32,1000,interpreter,close,torch,2026-12-06T00:00:00+00:00\n")),
    # the kernel contract, checked before a user's kernel is listed or swept: a piece that
    # returns the wrong thing is named in one line (helpers/faulty_kernels.py)
    *[case(f"{command}-{fault}", [*args, "{tmp}/kernels.py"], FAULTS[fault][1],
           _module(module_text(FAULTS[fault][0])))
      for fault in (*ISSUE_FAULTS, "make-inputs-draws-zeros")
      for command, args in [("list", ["list", "--interpret", "-m"]),
                            ("sweep", ["sweep", "doubled", "--interpret", "--root", "{tmp}",
                                       "-m"])]],
]


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under root (root included): type, size, mtime and, for files, the bytes."""
    state = {}
    for path in [root, *sorted(root.rglob("*"))]:
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        state[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), info.st_size,
                                              info.st_mtime_ns, content)
    return state


def assert_one_error_line(stderr: str, phrases: list[str]) -> None:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("tlab: error: "), stderr
    for phrase in phrases:
        assert phrase in lines[0], f"{phrase!r} not in {lines[0]!r}"


@pytest.mark.parametrize("args, phrases, setup", CASES)
def test_bad_input_is_one_line_exit_2_and_touches_nothing(args, phrases, setup, tmp_path):
    if setup:
        setup(tmp_path)
    args = [a.format(tmp=tmp_path) for a in args]
    phrases = [p.format(tmp=tmp_path) for p in phrases]
    before = snapshot(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "TLAB_DEBUG"}
    # Python's own bytecode cache would otherwise land next to a kernel module in tmp_path.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    result = run_tlab(args, cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 2, result.stderr[-3000:]
    assert_one_error_line(result.stderr, phrases)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("value", ["yes", "on", "2", "true"])
@pytest.mark.parametrize("args", [["sweep", "add", "--shapes", "1000"],
                                  ["explain", "layernorm", "--shape", "1x3072"]])
def test_a_nonsense_fast_launch_setting_is_one_line_exit_2_and_touches_nothing(args, value,
                                                                                tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TLAB_DEBUG"}
    env.update(PYTHONDONTWRITEBYTECODE="1", TLAB_FAST_LAUNCH=value)
    before = snapshot(tmp_path)
    result = subprocess.run([sys.executable, "-m", "tritonbench_lab", *args], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr[-3000:]
    assert_one_error_line(result.stderr, [f"TLAB_FAST_LAUNCH={value!r}", "accepted are 1"])
    assert snapshot(tmp_path) == before


# --- property: any --sizes / --dtype text is refused in one line or reaches the sweep ------

class Reached(Exception):
    """Raised in place of the sweep: the options got through every check."""


SIZES_ALPHABET = "0123456789x-:, "
DTYPE_WORDS = ["fp32", "fp16", "bf16", "float32", "half", "FP16", "bf17", "", ",", " "]


@st.composite
def dtype_texts(draw):
    if draw(st.booleans()):
        return draw(st.text())
    return ",".join(draw(st.lists(st.sampled_from(DTYPE_WORDS), min_size=1, max_size=3)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.none() | st.text() | st.text(alphabet=SIZES_ALPHABET, max_size=24),
       dtype=st.none() | dtype_texts())
def test_any_sizes_and_dtype_text_is_one_line_error_or_reaches_the_sweep(sizes, dtype, tmp_path):
    from tritonbench_lab.cli import main

    out = tmp_path / "out"
    argv = ["sweep", "softmax", "--interpret", "--root", str(out)]
    if sizes is not None:
        argv += ["--sizes", sizes]
    if dtype is not None:
        argv += ["--dtype", dtype]
    stderr = io.StringIO()
    with mock.patch("tritonbench_lab.cli.sweep_cmd._run_with_progress", side_effect=Reached), \
            contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except Reached:
            event("reached the sweep")
        except SystemExit as stop:
            event("refused")
            assert stop.code == 2, (argv, stop.code, stderr.getvalue())
            assert_one_error_line(stderr.getvalue(), [])
        else:
            pytest.fail(f"main({argv!r}) returned without sweeping nor refusing")
    assert not out.exists()  # refused or stopped before the sweep: nothing written
