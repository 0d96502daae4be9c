"""`python -m tritonbench_lab ARGS` in a process of its own, forked from one that has imported
torch and pandas already.

A test that runs the command line in a process of its own pays for importing torch and pandas
before the command starts, and the bad-input tests alone run it once a case. Here one server
process per test process imports those once, then forks a child per command: the child takes
the command's working directory, environment and argv, runs the package's `__main__` as
`python -m` would (the working directory first on sys.path), and exits with the command's exit
code, its stdout and stderr in files the caller reads.

What the server imports never reads tlab's environment variables, and it imports no triton:
tlab chooses the backend (TRITON_INTERPRET) before it first imports triton, so every child
imports triton, tlab and the kernels for itself, as a fresh `python -m` does. Tests of the
process itself (signals, Ctrl-C, the interpreter's startup) keep a real subprocess.

Run as a script, this module is the server: it reads one JSON request per line on stdin and
answers one JSON line on stdout.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# Imported once by the server: the bulk of a fresh process's start, and none of it triton.
PRELOAD = ("torch", "pandas", "typer", "rich.console")


def _exit_code(code) -> int:
    """SystemExit's code as the interpreter turns it into a process's exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _child(request: dict, out_path: str, err_path: str) -> None:
    """In the forked child: become `python -m tritonbench_lab ARGS` in the request's folder."""
    import runpy
    import signal
    import traceback

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.alarm(int(request["timeout"]))  # past it the child dies, as a timed-out run would
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
    os.dup2(os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    sys.argv = ["tritonbench_lab", *request["args"]]
    try:
        runpy.run_module("tritonbench_lab", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    # What the interpreter does as it exits, in its order: wait for the command's threads,
    # then run its atexit functions (multiprocessing's among them: a child that skipped them
    # leaves its resource tracker warning of leaked semaphores), then flush.
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


def serve() -> None:
    for name in PRELOAD:
        __import__(name)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        out_path, err_path = request["stdout"], request["stderr"]
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                _child(request, out_path, err_path)  # ends in os._exit
            finally:
                os._exit(70)  # _child failed before the command ran: never serve on in a child
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


class _Client:
    """The test process's side: a server per command running at once (threads may run
    several), started on first use and stopped at exit."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[subprocess.Popen] = []

    def _start(self) -> subprocess.Popen:
        server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        if json.loads(server.stdout.readline() or "{}").get("ready") is not True:
            raise RuntimeError("the test's command-line server did not start")
        atexit.register(server.kill)
        return server

    def _take(self) -> subprocess.Popen:
        with self.lock:
            while self.idle:
                server = self.idle.pop()
                if server.poll() is None:
                    return server
        return self._start()

    def run(self, args: list[str], cwd: Path, env: dict[str, str],
            timeout: float) -> subprocess.CompletedProcess:
        server = self._take()
        with tempfile.TemporaryDirectory() as scratch:
            out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
            request = {"args": list(args), "cwd": str(cwd), "env": dict(env),
                       "timeout": max(1, round(timeout)), "stdout": str(out), "stderr": str(err)}
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
            line = server.stdout.readline()
            if not line:  # the server itself died: say so, not a JSON decoding error
                raise RuntimeError(f"the test's command-line server died (exit code "
                                   f"{server.wait()}) running tlab {' '.join(args)}")
            answer = json.loads(line)
            with self.lock:
                self.idle.append(server)
            return subprocess.CompletedProcess(
                ["tlab", *args], answer["returncode"],
                out.read_text(errors="replace"), err.read_text(errors="replace"))


_client = _Client()


def run_tlab(args: list[str], cwd: Path, env: dict[str, str] | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m tritonbench_lab ARGS` from `cwd` with `env` (default: this process's), its
    stdout and stderr as text; the exit code as subprocess.run gives it (negative: a signal)."""
    return _client.run(args, cwd, dict(os.environ) if env is None else env, timeout)


if __name__ == "__main__":
    serve()
