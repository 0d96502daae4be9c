"""Nothing measured is lost: planted faults, kill -9, Ctrl-C and concurrent writers.

All in Triton's interpreter, through the real CLI in subprocesses. The GPU-only faults
(illegal address, shared memory) are in tests/planted_kernels.py's `planted_fault` and
`planted_all`, run on the GPU by test_gpu_faults_are_contained.
"""

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.paths import PLANTED, REPO

from tritonbench_lab.data.records import COLUMNS, OK, TRITON, Record
from tritonbench_lab.data.store import append_rows, load_records, load_winners
from tritonbench_lab.measure.worker import Worker


def sweep_command(kernel, out, *args):
    return [sys.executable, "-m", "tritonbench_lab", "sweep", kernel, "--kernel-module",
            str(PLANTED), "--interpret", "--root", str(out), *args]


def run(kernel, out, *args, timeout=300):
    return subprocess.run(sweep_command(kernel, out, *args), capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def rows(out, kernel):
    """The sweep's rows, without the leaders' confirmations (which repeat their keys)."""
    return [r for r in load_records(Path(out) / "results" / "interpreter" / f"{kernel}.csv")
            if not r.confirmed]


def test_every_planted_fault_gets_its_status_and_never_wins(tmp_path):
    result = run("planted", tmp_path)
    assert result.returncode == 0, result.stderr
    hang = run("planted_hang", tmp_path, "--compile-timeout", "5")
    assert hang.returncode == 0, hang.stderr
    status = {(r.config, r.kernel): r.status for r in rows(tmp_path, "planted")}
    status.update({(r.config, r.kernel): r.status for r in rows(tmp_path, "planted_hang")})
    for block in (128, 1024):
        assert status[(f"BLOCK={block} MODE=0 num_warps=4", "planted")] == OK
        assert status[(f"BLOCK={block} MODE=1 num_warps=4", "planted")] == "wrong_result"
        assert status[(f"BLOCK={block} MODE=4 num_warps=4", "planted")] == "compile_error"
        assert status[(f"BLOCK={block} MODE=0 num_warps=4", "planted_hang")] == OK
        assert status[(f"BLOCK={block} MODE=3 num_warps=4", "planted_hang")] == "timeout"
    # The good configs after a fault are measured as usual: correct, timed.
    good = [r for r in rows(tmp_path, "planted_hang") if "MODE=0" in r.config]
    assert all(r.max_abs_error == 0.0 and r.p50_ms > 0 for r in good)
    for kernel in ("planted", "planted_hang"):
        (winner,) = load_winners(tmp_path / "configs" / "interpreter" / f"{kernel}.csv")
        assert "MODE=0" in winner.config


def test_a_hang_costs_no_more_than_its_timeout(tmp_path):
    start = time.monotonic()
    result = run("planted_hang", tmp_path, "--compile-timeout", "3", "--sizes", "1000")
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    timeouts = [r for r in rows(tmp_path, "planted_hang") if r.status == "timeout"]
    assert len(timeouts) == 2 and "3 s" in timeouts[0].error
    # Two hangs of 3 s each, two worker restarts (a few seconds each on a loaded CI box).
    assert elapsed < 90


KILL_SIZES = "100-2400:100"  # 24 shapes x (1 baseline + 6 configs) = 168 attempts


def test_kill_9_at_random_points_loses_at_most_the_row_in_flight(tmp_path):
    rng = random.Random(2026)
    counts = []
    for _ in range(4):
        process = subprocess.Popen(sweep_command("planted", tmp_path, "--sizes", KILL_SIZES),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
        time.sleep(rng.uniform(2.0, 6.0))
        process.send_signal(signal.SIGKILL)
        process.wait()
        found = rows(tmp_path, "planted")  # always parses: a torn last line is ignored
        keys = [r.key() for r in found]
        assert len(keys) == len(set(keys)), "a key was measured twice"
        counts.append(len(found))
    assert counts == sorted(counts), f"rows were lost between runs: {counts}"
    final = run("planted", tmp_path, "--sizes", KILL_SIZES)
    assert final.returncode == 0, final.stderr
    found = rows(tmp_path, "planted")
    keys = {r.key() for r in found}
    assert len(found) == len(keys) == 24 * 7, "the last run must measure exactly what is missing"
    text = (tmp_path / "results" / "interpreter" / "planted.csv").read_text()
    assert text.endswith("\n") and all(line.count(",") >= len(COLUMNS) - 1
                                       for line in text.splitlines())


def _ctrl_c_as_in_a_terminal():
    # A command started in the background by a shell inherits SIGINT ignored, and Python
    # then leaves it ignored: the sweep must see Ctrl-C as it would from a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    process = subprocess.Popen(sweep_command("planted", tmp_path, "--sizes", KILL_SIZES),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO, preexec_fn=_ctrl_c_as_in_a_terminal)
    began = time.monotonic()
    csv = tmp_path / "results" / "interpreter" / "planted.csv"
    # Interrupt as soon as two rows are in (not after a fixed delay: on a fast machine the
    # whole sweep can finish within a second of its first row; on a loaded one, with the
    # other test worker busy, its start alone can take long).
    lines = 0
    while time.monotonic() < began + 180 and process.poll() is None and lines < 3:
        time.sleep(0.05)
        lines = csv.read_text().count("\n") if csv.exists() else 0
    sent = time.monotonic() - began
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, (
        f"Ctrl-C sent {sent:.1f} s after the start, with {lines} line(s) in the file\n{stderr}")
    assert "Interrupted" in stderr and "resume" in stderr and "Traceback" not in stderr
    kept = len(rows(tmp_path, "planted"))
    assert 0 < kept < 24 * 7
    again = run("planted", tmp_path, "--sizes", KILL_SIZES)
    assert again.returncode == 0
    assert f"{kept} task(s) already measured" in again.stderr
    assert len(rows(tmp_path, "planted")) == 24 * 7


def _append_rows(path: str, writer_id: int, count: int) -> None:
    for index in range(count):
        append_rows(Path(path), [Record(
            run_id=f"writer{writer_id}", timestamp="2026-01-01T00:00:00+00:00", kernel="k",
            provider=TRITON, dtype="fp32", shape=str(index + 1), config=f"W={writer_id}",
            status=OK, error="a, \"quoted\" error\nthat spans lines" * (index % 2),
            max_abs_error=0.0, p20_ms=1.0, p50_ms=1.0, p80_ms=1.0, throughput=1.0,
            metric="GB/s", compile_s=0.1, phase="sweep", method="do_bench", warmup_ms=25,
            rep_ms=100, seed=0, gpu="g", gpu_slug="g", driver="", cuda="", torch="t",
            triton="t", tlab="0", source="s")])


def test_a_worker_interrupted_while_spawning_stops_without_error(monkeypatch):
    """Ctrl-C can land inside Process.start(); the sweep's cleanup must still stop cleanly."""
    worker = Worker(interpret=True)
    real = worker._context.Process

    def interrupted_process(*args, **kwargs):
        process = real(*args, **kwargs)

        def start():
            raise KeyboardInterrupt

        process.start = start
        return process

    monkeypatch.setattr(worker._context, "Process", interrupted_process)
    with pytest.raises(KeyboardInterrupt):
        worker._start()
    worker.stop()  # was: AssertionError 'can only join a started process'
    assert worker._process is None


def test_four_processes_appending_to_one_file_lose_and_tear_nothing(tmp_path):
    # Writers hold fcntl.flock on the file while they append a whole row in one write.
    path = tmp_path / "results.csv"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_rows, args=(str(path), w, 150)) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
        assert w.exitcode == 0
    found = load_records(path)
    assert len(found) == 600
    for writer_id in range(4):
        mine = [r for r in found if r.run_id == f"writer{writer_id}"]
        assert [int(r.shape) for r in mine] == list(range(1, 151))  # in order, none missing
    assert path.read_text().count("run_id,") == 1  # one header


def test_four_sweeps_into_one_results_file(tmp_path):
    sizes = ["100,500", "200,600", "300,700", "400,800"]
    processes = [subprocess.Popen(sweep_command("planted", tmp_path, "--sizes", s),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  cwd=REPO) for s in sizes]
    for p in processes:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    found = rows(tmp_path, "planted")
    assert len(found) == len({r.key() for r in found}) == 8 * 7
    winners = load_winners(tmp_path / "configs" / "interpreter" / "planted.csv")
    assert {w.shape for w in winners} <= {s for group in sizes for s in group.split(",")}


@pytest.mark.gpu
def test_gpu_faults_are_contained(tmp_path):
    """On a GPU: the illegal address is a crash, the shared-memory hog out_of_resources,
    the hang a timeout, and the correct configs around them still measure."""
    result = run("planted_all", tmp_path, "--gpu", "--compile-timeout", "20")
    assert result.returncode == 0, result.stderr
    (folder,) = list((Path(tmp_path) / "results").iterdir())  # results/<this gpu's slug>
    status = {r.config: r.status for r in load_records(folder / "planted_all.csv")}
    expected = {0: OK, 1: "wrong_result", 2: "crash", 3: "timeout", 4: "compile_error",
                5: "out_of_resources"}
    for mode, wanted in expected.items():
        assert status[f"BLOCK=128 MODE={mode} num_warps=4"] == wanted, (mode, status)
    assert status["BLOCK=1024 MODE=0 num_warps=4"] == OK


def test_a_ctrl_c_during_a_spawn_is_raised_once_the_spawn_is_done():
    from tritonbench_lab.measure.worker import _sigint_held

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        reached = []
        with pytest.raises(KeyboardInterrupt):
            with _sigint_held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # the handler runs in here: it must not raise
                reached.append(True)
        assert reached == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_worker_started_in_the_background_runs_its_first_task_and_stops(tmp_path):
    """The sweep starts its workers while the compile pool starts (devices.prepare): the
    first task waits for that start instead of beginning another, and a stop during it
    leaves no process behind."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.worker import Task, Timeouts

    spec = get_spec("add")
    worker = Worker(interpret=True)
    worker.start_in_background()
    worker.start_in_background()  # a second call starts nothing more
    task = Task("add", TRITON, spec.small_shapes[0].sizes, "fp32", spec.space.default)
    outcome = worker.run(task, Timeouts())
    assert outcome.status == OK and outcome.p50_ms > 0, outcome
    first_process = worker._process
    assert worker.run(task, Timeouts()).status == OK and worker._process is first_process
    assert worker.restarts == 0
    worker.stop()
    assert not first_process.is_alive()

    stopped_early = Worker(interpret=True)
    stopped_early.start_in_background()
    stopped_early.stop()  # waits for the start it interrupts, then stops that child
    assert stopped_early._process is None and stopped_early._starter is None


def test_a_worker_killed_by_a_signal_is_a_crash_row_naming_the_signal():
    """A child that dies of a signal (a segfault in a driver or a compiler) exits with a
    negative code: its row names the signal, and the next task runs in a fresh child."""
    from tritonbench_lab.measure.worker import Task, Timeouts

    worker = Worker(interpret=True, kernel_modules=(str(PLANTED),))
    try:
        crash = worker.run(Task("planted_signal", TRITON, (1000,), "fp32",
                                {"BLOCK": 128, "MODE": 7, "num_warps": 4}), Timeouts())
        assert crash.status == "crash"
        assert crash.error == ("worker killed by SIGSEGV (signal 11) (an access out of "
                               "bounds? most often a tl.load or tl.store without a mask)")
        after = worker.run(Task("planted_signal", TRITON, (1000,), "fp32",
                                {"BLOCK": 128, "MODE": 0, "num_warps": 4}), Timeouts())
        assert after.status == OK, after
    finally:
        worker.stop()


def test_exit_codes_are_kept_and_signals_named():
    from tritonbench_lab.measure.worker import exit_text

    assert exit_text(3) == "worker exited with code 3"
    assert exit_text(-9) == "worker killed by SIGKILL (signal 9)"  # no hint: killed from outside
    assert exit_text(-6).startswith("worker killed by SIGABRT (signal 6) (an access out of")
    assert exit_text(-200) == "worker killed by signal 200"
