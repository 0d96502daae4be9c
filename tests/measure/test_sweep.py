"""`tlab sweep` end to end, as users run it: small sweeps in Triton's interpreter, resume,
--fresh, planted wrong results, and bad input refused in one line before anything is written.
Also the planning arithmetic of tritonbench_lab.measure.sweep, directly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.commands import tlab
from helpers.paths import PLANTED as PLANTED_MODULE
from helpers.sweeps import request_for

from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import (
    OK,
    SKIPPED,
    TRITON,
    WRONG_RESULT,
    parse_config_text,
)
from tritonbench_lab.data.store import load_records, load_winners
from tritonbench_lab.errors import TlabError

# softmax's row kernel in a config's text: no persistent programs, no split, no walk
ROW_KERNEL = "PER_SM=0 SPLIT=1 TILES=1 KEEP_LAST=0"
ONE_ROW_W4 = f"ROWS=1 num_warps=4 {ROW_KERNEL}"


def results_path(root, slug, kernel):
    return Layout(root).results_file(slug, kernel)


def configs_path(root, slug, kernel):
    return Layout(root).configs_file(slug, kernel)

PLANTED = ("planted", "--kernel-module", "tests/planted_kernels.py")  # run from REPO
SOFTMAX = ("softmax", "--dtype", "fp32", "--sizes", "37x129")
# At 37x129 (rows padded to 256 columns): ROWS=1 num_warps=4 runs; num_warps=32 leaves threads
# idle and ROWS=64 exceeds the 37 rows, so the other three configs are pruned.
TORCH_ONLY = ("--baselines", "torch")  # not these tests' point; a compiled baseline costs seconds
SOFTMAX_SPACE = {"ROWS": [1, 64], "num_warps": [4, 32], "PER_SM": [0], "SPLIT": [1], "TILES": [1]}


def sweep(*args, out: Path) -> subprocess.CompletedProcess:
    """`tlab sweep ARGS --root OUT` in Triton's interpreter, from the repository root."""
    return tlab("sweep", *args, "--interpret", "--root", str(out))


def said(result: subprocess.CompletedProcess) -> str:
    """Everything the command printed, with rich's line wrapping undone."""
    return " ".join((result.stdout + result.stderr).split())


@pytest.fixture(scope="module")
def softmax_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("softmax")
    space = base / "space.json"
    space.write_text(json.dumps(SOFTMAX_SPACE))
    out = base / "out"
    result = sweep(*SOFTMAX, "--space", str(space), out=out)
    assert result.returncode == 0, result.stderr
    return out, result


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted") / "out"
    result = sweep(*PLANTED, out=out)
    assert result.returncode == 0, result.stderr
    return out, result


def test_sweep_writes_rows_and_winners(softmax_run):
    from tritonbench_lab.kernels.softmax import SPEC

    out, _ = softmax_run
    rows = load_records(results_path(out, "interpreter", "softmax"))
    confirmations = [r for r in rows if r.confirmed]
    rows = [r for r in rows if not r.confirmed]
    assert len(rows) == len(SPEC.baselines) + 4  # every baseline, every config of the space
    # Then the one config that ran and every baseline, timed again in a fresh worker.
    assert sorted((r.provider, r.config) for r in confirmations) == sorted(
        [(b, "") for b in SPEC.baselines] + [(TRITON, ONE_ROW_W4)])
    assert all(r.status == OK and r.p50_ms for r in confirmations)
    assert {(r.gpu, r.gpu_slug) for r in rows} == {("interpreter", "interpreter")}
    assert {(r.kernel, r.dtype, r.shape) for r in rows} == {("softmax", "fp32", "37x129")}
    timed = [r for r in rows if r.p50_ms is not None]
    assert len(timed) == len(SPEC.baselines) + 1
    assert all(r.method == "interpreter" and r.phase == "sweep" for r in timed)
    baselines = [r.provider for r in rows if r.provider != TRITON]
    assert sorted(baselines) == sorted(SPEC.baselines)  # each exactly once
    assert all(r.config == "" and r.status == OK for r in rows if r.provider != TRITON)
    winners = load_winners(configs_path(out, "interpreter", "softmax"))
    assert [(w.dtype, w.shape, w.config) for w in winners] == [
        ("fp32", "37x129", ONE_ROW_W4)]


def test_pruned_configs_are_skipped_rows_with_their_reason(softmax_run):
    out, _ = softmax_run
    triton_rows = [r for r in load_records(results_path(out, "interpreter", "softmax"))
                   if r.provider == TRITON]
    by_config = {r.config: r for r in triton_rows}
    assert sorted(by_config) == sorted(f"ROWS={rows} num_warps={warps} {ROW_KERNEL}"
                                       for rows in (1, 64) for warps in (4, 32))
    assert by_config[ONE_ROW_W4].status == OK
    skipped = [r for r in triton_rows if r.config != ONE_ROW_W4]
    assert all(r.status == SKIPPED for r in skipped)
    assert all(r.error and r.p50_ms is None and r.compile_s is None for r in skipped)
    assert "idle" in by_config[f"ROWS=1 num_warps=32 {ROW_KERNEL}"].error
    assert "exceeds the 37 rows" in by_config[f"ROWS=64 num_warps=4 {ROW_KERNEL}"].error


def test_second_identical_run_measures_nothing_new(softmax_run, tmp_path):
    first_out, _ = softmax_run
    out = tmp_path / "out"
    shutil.copytree(first_out, out)
    path = results_path(out, "interpreter", "softmax")
    before = path.read_bytes()
    space = tmp_path / "space.json"
    space.write_text(json.dumps(SOFTMAX_SPACE))
    result = sweep(*SOFTMAX, "--space", str(space), out=out)
    assert result.returncode == 0, result.stderr
    assert path.read_bytes() == before
    assert "4 task(s) already measured" in said(result)  # the config and 3 baselines
    assert "3 config(s) pruned by an earlier run" in said(result)
    assert "Nothing new to measure" in said(result)
    # --fresh measures again, yet a pruning rule is not a measurement: not recorded again,
    # and not reported as measured
    fresh = sweep(*SOFTMAX, "--space", str(space), "--fresh", *TORCH_ONLY, out=out)
    assert fresh.returncode == 0, fresh.stderr
    assert "already measured" not in said(fresh)
    assert "3 config(s) pruned by an earlier run" in said(fresh)
    assert sum(r.status == SKIPPED for r in load_records(path)) == 3


def test_a_sweep_killed_while_confirming_confirms_the_shape_whole_when_resumed(
        softmax_run, tmp_path):
    """Killed after the confirmations of the config and of torch: the resumed run confirms
    the config and every baseline again, so the table compares the winner with every
    baseline of its own run (before, it confirmed the two missing baselines alone, and the
    table showed '-' for them)."""
    from tritonbench_lab.data.records import Record
    from tritonbench_lab.data.store import write_table
    from tritonbench_lab.kernels.softmax import SPEC

    out = tmp_path / "out"
    shutil.copytree(softmax_run[0], out)
    path = results_path(out, "interpreter", "softmax")
    kept = [r for r in load_records(path) if not r.confirmed or r.provider in (TRITON, "torch")]
    write_table(path, kept, Record)
    space = tmp_path / "space.json"
    space.write_text(json.dumps(SOFTMAX_SPACE))
    result = sweep(*SOFTMAX, "--space", str(space), out=out)
    assert result.returncode == 0, result.stderr
    again = load_records(path)[len(kept):]
    assert sorted((r.provider, r.phase) for r in again) == sorted(
        (p, "confirm") for p in (TRITON, *SPEC.baselines))
    table = next(line for line in result.stdout.splitlines() if "37x129" in line and "│" in line)
    cells = [cell.strip() for cell in table.strip("│ ").split("│")]
    assert len(cells) > 4 + len(SPEC.baselines)
    assert "-" not in cells[4:4 + len(SPEC.baselines)], table  # torch, unfused, compiled


def test_fresh_appends_and_never_rewrites(planted_run, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(planted_run[0], out)
    path = results_path(out, "interpreter", "planted")
    before_bytes, before = path.read_bytes(), load_records(path)
    result = sweep(*PLANTED, "--fresh", out=out)
    assert result.returncode == 0, result.stderr
    after = load_records(path)
    assert len(after) == 2 * len(before)
    assert path.read_bytes().startswith(before_bytes)  # the first rows, byte for byte
    assert after[:len(before)] == before
    assert {r.run_id for r in after[len(before):]}.isdisjoint({r.run_id for r in before})
    assert "already measured" not in said(result)


def test_planted_wrong_results_are_recorded_and_never_win(planted_run):
    out, _ = planted_run
    rows = [r for r in load_records(results_path(out, "interpreter", "planted"))
            if r.provider == TRITON]
    modes = {r.config: parse_config_text(r.config)["MODE"] for r in rows}
    # BLOCK in (128, 1024) x MODE in (0 correct, 1 wrong result, 4 compile error)
    assert sorted(modes.values()) == [0, 0, 1, 1, 4, 4]
    for r in rows:
        if modes[r.config] == 1:
            assert r.status == WRONG_RESULT and r.error and r.max_abs_error >= 0.99
            assert r.p50_ms is None and r.throughput is None  # wrong configs are not timed
        elif modes[r.config] == 4:
            assert r.status == "compile_error" and "planted compile error" in r.error
            assert r.p50_ms is None
        else:
            assert r.status == OK and r.p50_ms is not None
    (winner,) = load_winners(configs_path(out, "interpreter", "planted"))
    assert parse_config_text(winner.config)["MODE"] == 0
    assert winner.best_baseline == "torch"


# --- bad input: one line, exit 2, nothing written ----------------------------------------

BAD_INPUT = [
    (("softmax", "--sizes", "abc"), ["bad size term 'abc'"]),
    (("softmax", "--sizes", "8192-512"), ["the range is reversed"]),
    (("softmax", "--dtype", "bf17"), ["unknown dtype 'bf17'"]),
    (("matmull",), ["unknown kernel 'matmull'", "did you mean 'matmul'"]),
    (("matmul", "--dtype", "bf16"), ["interpreter", "11584"]),
    (("softmax", "--sizes", "16777217"), ["at most 16777216 columns"]),
    (("softmax", "--dtype", "fp32", "--sizes", "1000000000x65536"), ["needs about", "GB"]),
    # Refused by matmul's 32-bit offsets before its memory is estimated.
    (("matmul", "--dtype", "fp32", "--sizes", "2000000x2000000x8"), ["fewer than 2^31"]),
    (("softmax", "--baselines", "torch,cudnn"), ["--baselines cudnn", "torch, unfused"]),
    (("softmax", "--timing", "graph"), ["--timing 'graph'", "auto, events, cudagraph, both"]),
]


def assert_one_line_error(result: subprocess.CompletedProcess, phrases: list[str]) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tlab: error: ")
    for phrase in phrases:
        assert phrase in lines[0]


@pytest.mark.parametrize("args, phrases", BAD_INPUT, ids=lambda v: " ".join(v)[:40])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(args, phrases, tmp_path):
    out = tmp_path / "out"
    result = sweep(*args, out=out)
    assert_one_line_error(result, phrases)
    assert not out.exists()


@pytest.mark.parametrize("text, phrases", [
    ('{"BLOCK": [1]}', ["unknown parameter 'BLOCK'", "ROWS"]),
    ("ROWS: [1, 2]", ["is not valid JSON"]),
], ids=["unknown-parameter", "not-json"])
def test_bad_space_file_is_one_line_exit_2_and_writes_nothing(text, phrases, tmp_path):
    space = tmp_path / "space.json"
    space.write_text(text)
    out = tmp_path / "out"
    result = sweep(*SOFTMAX, "--space", str(space), out=out)
    assert_one_line_error(result, [f"--space file {str(space)!r}", *phrases])
    assert not out.exists()


def test_foreign_results_file_is_refused_and_left_alone(tmp_path):
    out = tmp_path / "out"
    path = results_path(out, "interpreter", "softmax")
    path.parent.mkdir(parents=True)
    path.write_text("a,b\n1,2\n")
    result = sweep(*SOFTMAX, "--space", "default", out=out)
    assert_one_line_error(result, ["not a tlab results file"])
    assert path.read_text() == "a,b\n1,2\n"
    assert [p for p in out.rglob("*") if p.is_file()] == [path]


# --- planning, directly --------------------------------------------------------------------

def test_shapes_are_timed_largest_first_only_where_a_compile_pool_runs(tmp_path):
    import dataclasses

    import torch

    from tritonbench_lab.kernels.matmul import SPEC as MATMUL
    from tritonbench_lab.measure.plan import plan

    shapes = [MATMUL.shape(512, 512, 512), MATMUL.shape(2048, 64, 2048),
              MATMUL.shape(1024, 1024, 1024), MATMUL.shape(64, 64, 64)]
    request = request_for(MATMUL, [torch.float16, torch.float32], shapes, tmp_path)

    def order(req):
        seen = []
        for p in plan(req):
            key = (p.task.dtype, p.task.sizes)
            if key not in seen:
                seen.append(key)
        return seen

    given = [s.sizes for s in shapes]
    assert order(request) == [(d, s) for d in ("fp16", "fp32") for s in given]
    gpu = dataclasses.replace(request, interpret=False, jobs=8)  # plan compiles nothing
    by_work = [(1024, 1024, 1024), (2048, 64, 2048), (512, 512, 512), (64, 64, 64)]
    assert order(gpu) == [(d, s) for d in ("fp16", "fp32") for s in by_work]
    assert order(dataclasses.replace(gpu, jobs=1)) == order(request)


def test_memory_estimate():
    import torch

    from tritonbench_lab.kernels.matmul import SPEC as MATMUL
    from tritonbench_lab.kernels.softmax import SPEC as SOFTMAX_SPEC
    from tritonbench_lab.measure.cases import memory_estimate

    # softmax fp32 37x129: 38,184 bytes in and out, twice, plus 9,546 elements in float64.
    assert memory_estimate(SOFTMAX_SPEC, SOFTMAX_SPEC.shape(37, 129), torch.float32) == (
        2 * 38_184 + 9_546 * 8)
    # matmul fp16 64x64x64: 3 * 4096 elements of 2 bytes, twice, plus 3 * 4096 in float64.
    assert memory_estimate(MATMUL, MATMUL.shape(64, 64, 64), torch.float16) == (
        2 * 24_576 + 12_288 * 8)
    big = memory_estimate(MATMUL, MATMUL.shape(4096, 4096, 4096), torch.bfloat16)
    assert big == 2 * (3 * 4096**2 * 2) + 3 * 4096**2 * 8


def test_check_request_refuses_what_does_not_fit(tmp_path):
    import torch

    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure.cases import memory_estimate
    from tritonbench_lab.measure.plan import check_request

    shape = SPEC.shape(64, 1000)
    need = memory_estimate(SPEC, shape, torch.float32)
    check_request(request_for(SPEC, [torch.float32], [shape], tmp_path, free_bytes=need))
    with pytest.raises(TlabError, match=r"needs about .* GB .* host memory"):
        check_request(request_for(SPEC, [torch.float32], [shape], tmp_path, free_bytes=need - 1))
    assert list(tmp_path.iterdir()) == []


def test_plan_counts_dtypes_times_shapes_times_providers_and_configs(tmp_path):
    import torch

    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure.plan import plan

    dtypes, shapes = [torch.float32, torch.float16], list(SPEC.small_shapes)
    planned = plan(request_for(SPEC, dtypes, shapes, tmp_path))
    assert len(planned) == len(dtypes) * len(shapes) * (len(SPEC.baselines) + len(SPEC.space))
    # Order: dtype, shape, then the baselines, then every config (pruned ones included).
    first = planned[:len(SPEC.baselines) + len(SPEC.space)]
    assert [p.task.provider for p in first[:len(SPEC.baselines)]] == list(SPEC.baselines)
    assert all(p.task.provider == TRITON for p in first[len(SPEC.baselines):])
    assert [p.task.config for p in first[len(SPEC.baselines):]] == list(SPEC.space)
    assert {(p.task.dtype, p.task.sizes) for p in first} == {("fp32", shapes[0].sizes)}
    assert all(p.skip_reason == "" for p in planned if p.task.provider != TRITON)
    kept, pruned = SPEC.space.prune(dict(shapes[0].dims), 4, request_for(
        SPEC, dtypes, shapes, tmp_path).limits)
    assert sum(1 for p in first if p.skip_reason) == len(pruned) > 0
    assert sum(1 for p in first if p.task.provider == TRITON and not p.skip_reason) == len(kept)


def test_plan_of_the_planted_kernel(tmp_path):
    import torch

    from tritonbench_lab.kernels import get_spec, load_kernel_module
    from tritonbench_lab.measure.plan import plan

    load_kernel_module(PLANTED_MODULE)
    spec = get_spec("planted")
    planned = plan(request_for(spec, [torch.float32], spec.small_shapes, tmp_path))
    assert len(planned) == 1 * 1 * (1 + 6)  # 1 baseline + BLOCK (2) x MODE (3)
    assert [p.task.provider for p in planned] == ["torch"] + [TRITON] * 6


def test_editing_the_kernel_module_measures_again(tmp_path):
    # The resume key holds a hash of the kernel's source file: numbers of old code are
    # never kept as if they were current.
    module = tmp_path / "my_planted.py"
    module.write_text(PLANTED_MODULE.read_text())
    args = ("planted", "--kernel-module", str(module), "--sizes", "1000", "--space", "default")
    out = tmp_path / "out"
    assert sweep(*args, out=out).returncode == 0
    assert "2 task(s) already measured" in said(sweep(*args, out=out))
    # A comment or a docstring is not code: nothing to measure again.
    module.write_text(module.read_text().replace('"""Test kernels', '"""Kernels for tests')
                      + "\n# a comment\n")
    assert "2 task(s) already measured" in said(sweep(*args, out=out))
    module.write_text(module.read_text() + "\nEDITED = True\n")
    edited = sweep(*args, out=out)
    assert edited.returncode == 0 and "already measured" not in said(edited)
    rows = [r for r in load_records(results_path(out, "interpreter", "planted"))
            if not r.confirmed]
    sources = [r.source for r in rows]
    assert len(rows) == 4 and len(set(sources)) == 2 and len({r.tlab for r in rows}) == 1
    assert all(len(source) == 10 for source in sources)


def test_a_pruned_config_is_one_row_per_reason_whatever_the_source(tmp_path):
    """Rows of another source are measured again, but a config pruned for the same reason is
    not written again (it holds no measurement); a new reason is."""
    import csv

    space = tmp_path / "space.json"
    space.write_text(json.dumps(SOFTMAX_SPACE))
    out = tmp_path / "out"
    assert sweep(*SOFTMAX, "--space", str(space), *TORCH_ONLY, out=out).returncode == 0
    path = results_path(out, "interpreter", "softmax")

    def rewrite(change):  # every row through `change`, as if written by another source
        with path.open() as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            change(row)
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

    rewrite(lambda row: row.update(source="0123456789"))
    before = load_records(path)
    assert sweep(*SOFTMAX, "--space", str(space), *TORCH_ONLY, out=out).returncode == 0
    new = load_records(path)[len(before):]
    assert [r for r in new if r.status == SKIPPED] == []
    assert {r.config for r in new if r.provider == TRITON} == {ONE_ROW_W4}  # measured again
    # The constraint now gives another reason for one pruned config: recorded again.
    wide = f"ROWS=1 num_warps=32 {ROW_KERNEL}"
    rewrite(lambda row: row.update(error="an older reason") if row["config"] == wide else None)
    before = load_records(path)
    assert sweep(*SOFTMAX, "--space", str(space), *TORCH_ONLY, out=out).returncode == 0
    new = load_records(path)[len(before):]
    assert [(r.config, r.status) for r in new] == [(wide, SKIPPED)] and "idle" in new[0].error


def test_a_shape_too_big_for_the_interpreter_is_refused_with_one_it_accepts(tmp_path):
    import re

    import torch

    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure.plan import check_request

    big = SPEC.shape(8192, 256)
    with pytest.raises(TlabError, match="too big for Triton's interpreter") as refused:
        check_request(request_for(SPEC, [torch.float32], [big], tmp_path))
    suggested = re.search(r"try (\d+)x(\d+)", str(refused.value))
    assert suggested, refused.value
    smaller = SPEC.shape(int(suggested[1]), int(suggested[2]))
    assert smaller["cols"] == 256 and smaller["rows"] < 8192
    check_request(request_for(SPEC, [torch.float32], [smaller], tmp_path))  # accepted


def test_gpu_only_baselines_are_planned_only_on_a_gpu_and_self_tuning_ones_when_asked(tmp_path):
    import dataclasses

    import torch

    from tritonbench_lab.kernels.matmul import SPEC
    from tritonbench_lab.measure.plan import check_request, parse_baselines, plan

    request = request_for(SPEC, [torch.float16], SPEC.small_shapes, tmp_path)
    baselines = {p.task.provider for p in plan(request) if p.task.provider != TRITON}
    assert baselines == {"torch"}  # Inductor has no Triton templates on a CPU
    on_gpu = dataclasses.replace(request, interpret=False)
    timed = lambda r: {p.task.provider for p in plan(r) if p.task.provider != TRITON}  # noqa: E731
    # Inductor's max-autotune tunes itself for seconds a shape: only when asked for.
    assert timed(on_gpu) == {"torch"}
    assert timed(dataclasses.replace(on_gpu, baselines=parse_baselines("all"))) == {
        "torch", "inductor"}
    assert timed(dataclasses.replace(on_gpu, baselines=parse_baselines("inductor"))) == {
        "inductor"}
    check_request(dataclasses.replace(on_gpu, baselines=parse_baselines("all")))  # accepted


def test_baselines_option_times_only_the_chosen(tmp_path):
    import dataclasses

    import torch

    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.plan import parse_baselines, plan

    spec = get_spec("add_rmsnorm")
    request = request_for(spec, [torch.float32], spec.small_shapes[:1], tmp_path)
    assert parse_baselines(None) is None and parse_baselines("none") == ()
    providers = lambda r: {p.task.provider for p in plan(r)}  # noqa: E731
    assert providers(request) == {TRITON, *spec.baselines}  # none of them tunes itself
    assert providers(dataclasses.replace(request, baselines=parse_baselines("all"))) == {
        TRITON, *spec.baselines}
    chosen = dataclasses.replace(request, baselines=parse_baselines("torch, compiled"))
    assert providers(chosen) == {TRITON, "torch", "compiled"}
    assert providers(dataclasses.replace(request, baselines=())) == {TRITON}


def test_the_source_hash_covers_the_kernel_modules_a_kernel_imports(monkeypatch):
    """matmul's persistent kernel lives in its own module: an edit there must measure again
    too; a kernel that imports no other kernel module keeps its one-file hash (so committed
    rows of softmax and the rest stay current)."""
    import ast
    import hashlib

    from tritonbench_lab.kernels import get_spec, matmul_persistent
    from tritonbench_lab.measure.source import _code_dump, source_hash

    softmax = get_spec("softmax")
    one_file = _code_dump(ast.parse(Path(softmax.launch.__code__.co_filename).read_text()))
    assert source_hash(softmax) == hashlib.sha256(one_file.encode()).hexdigest()[:10]
    matmul = get_spec("matmul")
    before = source_hash(matmul)
    persistent = Path(matmul_persistent.__file__)
    text = persistent.read_text()
    real_read = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: (
        text + "\nEDITED = True\n" if self == persistent else real_read(self, *a, **k)))
    assert source_hash(matmul) != before


_SNIPPET = '''
"""A module docstring: not code."""
import triton

@triton.jit
def kernel(x_ptr, n: int, BLOCK: "tl.constexpr" = 128):  # a comment: not code
    """Neither is this."""
    return f"{n!r:>4}" if n else x_ptr[0:BLOCK]


class Spec:
    rows: list[int] = []
'''


def test_the_source_hash_is_the_same_on_every_python():
    """The same code must hash the same on CI's Python (3.11) and the GPU machine's (3.12):
    ast.dump's text differs between them (3.12 adds type_params), and a sweep resumed on
    the other Python measured everything again. This value was computed on 3.11.7 and
    matches 3.12.1 and 3.13.0; another Python that writes the snippet's tree differently
    fails here, not by silently measuring again."""
    import ast
    import hashlib

    from tritonbench_lab.measure.source import _code_dump

    dump = _code_dump(ast.parse(_SNIPPET))
    assert "docstring" not in dump and "comment" not in dump and "type_params" not in dump
    assert _code_dump(ast.parse(_SNIPPET.replace("# a comment: not code", ""))) == dump
    assert hashlib.sha256(dump.encode()).hexdigest()[:16] == "917a31f843717cb6"


@pytest.mark.parametrize("times", [(float("nan"),) * 3, (0.1, -0.2, 0.3)])
def test_a_time_that_is_not_a_time_becomes_a_crash_row_never_a_number(times, tmp_path):
    """A timer bug (NaN, a negative median) is not a measurement: the attempt is kept as a
    crash row saying so, with no times, and the row reads back."""
    import torch

    from tritonbench_lab.data.records import CRASH
    from tritonbench_lab.data.store import append_rows
    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.measure.rows import make_record
    from tritonbench_lab.measure.worker import Outcome, Task

    request = request_for(SPEC, [torch.float32], [SPEC.shape(37, 129)], tmp_path)
    task = Task("softmax", TRITON, (37, 129), "fp32", dict(SPEC.space.default))
    made = make_record(request, "run", task, Outcome(OK, "", 0.0, *times, compile_s=0.1))
    assert made.status == CRASH and "not a time" in made.error
    assert (made.p20_ms, made.p50_ms, made.p80_ms, made.throughput) == (None,) * 4
    append_rows(tmp_path / "rows.csv", [made])
    assert load_records(tmp_path / "rows.csv") == [made]
