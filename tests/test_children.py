"""Child processes on a GPU come from a fork server that imported torch once (children.py)."""

import os
import subprocess
import sys
import time

import pytest

from tritonbench_lab import children, worker


def _what_the_child_has(parent_pid: int):
    return ("torch" in sys.modules, "tritonbench_lab.worker" in sys.modules, os.getppid(),
            worker._parent_gone(parent_pid))


def test_a_gpu_child_starts_with_torch_imported_and_knows_its_parent_lives():
    context = children.context(interpret=False)
    assert context.get_start_method() == "forkserver"
    with context.Pool(1) as pool:
        has_torch, has_worker, os_parent, gone = pool.apply(_what_the_child_has, (os.getpid(),))
    assert has_torch and has_worker  # preloaded by the server, not imported by the task
    assert os_parent != os.getpid()  # its OS parent is the server ...
    assert not gone  # ... yet it does not take this process for dead (the old getppid check did)


def test_interpreter_children_are_spawned():
    # The server's kernels were defined for the GPU; the interpreter needs its own import.
    assert children.context(interpret=True).get_start_method() == "spawn"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_early_server_is_stopped_when_no_child_is_needed(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(children, "_GPU_NODES", (os.getcwd(),))  # "a GPU is likely here"
    children.stop_early()
    server = children.multiprocessing.forkserver._forkserver
    if server._forkserver_pid is not None:  # another test's server: stop it the same way
        monkeypatch.setattr(children, "_started_early", True)
        children.stop_early()
    children.start_early()
    pid = server._forkserver_pid
    assert pid is not None and _alive(pid)
    children.stop_early()  # returns at once: the server is killed, not waited for
    assert server._forkserver_pid is None and not _alive(pid)


def test_no_early_server_where_no_gpu_is_likely(monkeypatch):
    monkeypatch.setattr(children, "_GPU_NODES", ("/nonexistent/nvidiactl",))
    monkeypatch.setattr(children, "_started_early", False)
    started = []
    monkeypatch.setattr(children.multiprocessing.forkserver, "ensure_running",
                        lambda: started.append(True))
    children.start_early()
    assert not started and not children._started_early
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(children, "_GPU_NODES", (os.getcwd(),))
    children.start_early()
    assert not started


@pytest.mark.skipif(not children.has_fork_server(), reason="no fork server on this platform")
def test_pool_processes_come_from_the_server():
    from tritonbench_lab.precompile import CompilePool

    pool = CompilePool(2)
    try:
        context = pool._pool._mp_context
        assert context.get_start_method() == "forkserver"
    finally:
        pool.close()


def _early_start_seen(argv: list[str]) -> list[str]:
    """What the command said when it would start the server early, or [] if it did not."""
    script = (
        "import sys\n"
        "from tritonbench_lab import children\n"
        "children.start_early = lambda: print('torch imported:', 'torch' in sys.modules)\n"
        "from tritonbench_lab.cli import main\n"
        f"main({argv!r})\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2, done.stderr  # refused after the start, as bad input is
    return done.stdout.splitlines()


@pytest.mark.parametrize("argv", [["sweep", "matmul", "--dtype", "nonsense"],
                                  ["check", "--kernel", "nonsense"]])
def test_the_server_is_started_before_the_command_imports_torch(argv, tmp_path):
    """Its imports overlap the command's own only if it starts first (a sweep that imported
    its modules first started the server 9 s late on an H200)."""
    assert _early_start_seen(argv + ["--root", str(tmp_path)]) == ["torch imported: False"]


def test_a_sweep_where_rows_exist_starts_the_server_only_for_work(tmp_path):
    """A re-run may find nothing to measure: the server's imports beside the command's cost
    it 1-2.5 s on an H200, so it starts early only where there are no rows yet, or --fresh."""
    (tmp_path / "results" / "some-gpu").mkdir(parents=True)
    (tmp_path / "results" / "some-gpu" / "matmul.csv").write_text("kernel\n")
    argv = ["sweep", "matmul", "--dtype", "nonsense", "--root", str(tmp_path)]
    assert _early_start_seen(argv) == []
    assert _early_start_seen(argv + ["--fresh"]) == ["torch imported: False"]
    assert _early_start_seen(["sweep", "softmax", "--dtype", "nonsense", "--root",
                              str(tmp_path)]) == ["torch imported: False"]


def _gone(pid: int) -> bool:
    """Exited (a zombie counts: in a container nobody may reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("interpret", [True, False], ids=["spawned", "forked-by-the-server"])
def test_a_worker_whose_sweep_is_killed_does_not_linger(interpret, tmp_path):
    """kill -9 of the sweep: its worker notices within seconds and exits, whether spawned or
    forked by the server (whose OS child it is)."""
    script = (
        "import time\n"
        "from tritonbench_lab.worker import Worker\n"
        "if __name__ == '__main__':\n"
        f"    worker = Worker(interpret={interpret})\n"
        "    worker._start()\n"
        "    print(worker._process.pid, flush=True)\n"
        "    time.sleep(120)\n")
    sweep = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             cwd=tmp_path)
    try:
        child = int(sweep.stdout.readline())
        assert not _gone(child)
    finally:
        sweep.kill()
        sweep.wait()
    deadline = time.monotonic() + 30
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(child)
