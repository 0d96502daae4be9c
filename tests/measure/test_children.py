"""Child processes on a GPU come from a fork server that imported torch once (children.py)."""

import os
import subprocess
import sys
import time

import pytest

from tritonbench_lab.measure import children, worker


def _what_the_child_has(parent_pid: int):
    return ("torch" in sys.modules, "tritonbench_lab.measure.worker" in sys.modules, os.getppid(),
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


def _in_a_fresh_process(body: str) -> str:
    """Run `body` where no server has run yet and "a GPU is likely"; its stdout. (Here, a
    server killed under other tests' finished children makes multiprocessing warn.)"""
    script = ("import os, sys, time\n"
              "from tritonbench_lab.measure import children\n"
              "children._GPU_NODES = ('/',)\n"
              "server = children.multiprocessing.forkserver._forkserver\n"
              "def alive(pid):\n"
              "    try:\n"
              "        os.kill(pid, 0)\n"
              "    except ProcessLookupError:\n"
              "        return False\n"
              "    return True\n" + body)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_early_server_is_stopped_when_no_child_is_needed():
    said = _in_a_fresh_process(
        "children.start_early()\n"
        "pid = server._forkserver_pid\n"
        "print(pid is not None and alive(pid))\n"
        "began = time.monotonic()\n"
        "children.stop_early()\n"  # returns at once: killed, not waited for
        "print(time.monotonic() - began < 2, server._forkserver_pid is None, alive(pid))\n")
    assert said.split() == ["True", "True", "True", "False"]


def test_a_server_asked_for_a_child_is_not_killed():
    """Killed, it would leave its children running while multiprocessing took them for dead
    (exit code 255, kill() a no-op)."""
    said = _in_a_fresh_process(
        "children.start_early()\n"
        "pid = server._forkserver_pid\n"
        "children.context(interpret=False)\n"  # a child is on its way
        "children.stop_early()\n"
        "print(alive(pid), server._forkserver_pid == pid)\n")
    assert said.split() == ["True", "True"]


def _mark(job):
    return job.key, 0.0, "TLAB_MARK=" + os.environ.get("TLAB_MARK", "unset")


def _no_start(kernel_modules):
    pass


def test_a_forked_child_has_the_commands_environment_now_not_the_servers(monkeypatch):
    from tritonbench_lab.measure.precompile import Job, precompile

    children.context(interpret=False)  # the server runs from here on, with this environment
    monkeypatch.setenv("TLAB_MARK", "set after the server started")
    result = precompile([Job("add", (64,), "fp32", 0, {"BLOCK": 64})], processes=1,
                        compile_fn=_mark, start_fn=_no_start)
    assert result.first_error == "TLAB_MARK=set after the server started"


@pytest.mark.parametrize("value", ["1", "true", "On"])
def test_no_early_server_when_triton_would_interpret(value, monkeypatch):
    monkeypatch.setattr(children, "_GPU_NODES", (os.getcwd(),))
    monkeypatch.setenv("TRITON_INTERPRET", value)
    assert not children.gpu_likely()


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
    from tritonbench_lab.measure.precompile import CompilePool

    pool = CompilePool(2)
    try:
        context = pool._pool._mp_context
        assert context.get_start_method() == "forkserver"
    finally:
        pool.close()


def _early_start_seen(argv: list[str]) -> list[str]:
    """What the command said when it launched the server early (the launch itself stubbed
    out), or [] if it did not; "a GPU is likely here"."""
    script = (
        "import sys, multiprocessing.forkserver as server\n"
        "from tritonbench_lab.measure import children\n"
        "children._GPU_NODES = ('/',)\n"
        "server.ensure_running = lambda: print('torch imported:', 'torch' in sys.modules)\n"
        "from tritonbench_lab.cli import main\n"
        f"main({argv!r})\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env)
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
        "from tritonbench_lab.measure.worker import Worker\n"
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


def test_gpu_children_share_one_triton_cache(monkeypatch):
    """Pinned before any child copies the environment: the pool compiles into the cache the
    workers load from (Inductor would otherwise move a worker's)."""
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    children.context(interpret=True)
    assert "TRITON_CACHE_DIR" not in os.environ  # the interpreter compiles nothing
    children.context(interpret=False)
    assert os.environ["TRITON_CACHE_DIR"] and children.environment()["TRITON_CACHE_DIR"]
