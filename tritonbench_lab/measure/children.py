"""How tlab starts its child processes: on a GPU, forked from one that imported torch once.

A GPU sweep runs two timing workers and a compile pool of one process per core. Were each
to import torch and triton for itself, every one would pay seconds for it (more where torch
has no bytecode, so that every process compiles torch's modules from source), all of them at
once and after the command's own import of torch: the first row would come long after the
command started.

Here the children come from multiprocessing's fork server instead: one process that imports
torch, triton, tlab's worker and pool modules and the built-in kernels (`PRELOAD`), then forks
each child on request, which then starts in milliseconds with all of that already imported.
The server never starts CUDA (importing these modules does not), so every child starts its
own CUDA context as a spawned one would. `start_early` launches the server as the command
begins, so that its imports run beside the command's own; a command that then finds nothing
to measure stops it (`stop_early`). Beside the command's import it makes that one
noticeably slower, so the sweep starts it early only where it has work for certain;
otherwise the first child starts it.

A child's environment is the command's at the time the child starts (`environment`, applied
by the child before anything reads it), not the server's copy from when the server started.
The server ignores Ctrl-C from its start: the command handles it and stops the children.

The interpreter keeps `spawn`: Triton reads TRITON_INTERPRET when a kernel is defined, and
the server's kernels were defined for the GPU. So does any platform without a fork server.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import signal
from pathlib import Path

# What the server imports before it forks anything. The command line too: a child of the
# `tlab` script imports the script again (multiprocessing's rule for a main module), and
# with its modules already imported that costs nothing.
PRELOAD = [
    "torch",
    "triton",
    "tritonbench_lab.cli",
    "tritonbench_lab.measure.worker",
    "tritonbench_lab.measure.precompile",
    "tritonbench_lab.measure.timing",
    "tritonbench_lab.measure.verify",
    "tritonbench_lab.kernels.add",
    "tritonbench_lab.kernels.layernorm",
    "tritonbench_lab.kernels.matmul",
    "tritonbench_lab.kernels.matmul_fp8",
    "tritonbench_lab.kernels.matmul_gelu",
    "tritonbench_lab.kernels.rmsnorm",
    "tritonbench_lab.kernels.rope",
    "tritonbench_lab.kernels.softmax",
]

# Device files of a GPU driver: a guess, taken before torch is imported, that this command
# will run on a GPU. A wrong guess costs a process that is stopped once torch has said.
_GPU_NODES = ("/dev/nvidiactl", "/dev/kfd")

_started_early = False
_used = False  # a child was asked of the server: from then on it is never killed here


def has_fork_server() -> bool:
    return "forkserver" in multiprocessing.get_all_start_methods()


def interpreting() -> bool:
    """TRITON_INTERPRET as Triton reads it (1, true, yes or on)."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on")


def gpu_likely() -> bool:
    return not interpreting() and any(os.path.exists(node) for node in _GPU_NODES)


def pin_triton_cache_dir() -> None:
    """Set TRITON_CACHE_DIR to Triton's own default when it is unset, before the pool and the
    worker start (children.context does; they copy it). Inductor (the torch.compile
    baselines) otherwise points it at a folder of its own in the worker the first time it
    compiles, and every config compiled ahead is then compiled again."""
    os.environ.setdefault("TRITON_CACHE_DIR", str(Path.home() / ".triton" / "cache"))


def context(interpret: bool):
    """The multiprocessing context for a child: the fork server on a GPU, else spawn. On a
    GPU the Triton cache is pinned first, so that every child (each copies the command's
    environment) shares the one the pool compiles into."""
    global _used
    if not interpret:
        pin_triton_cache_dir()
    if interpret or not has_fork_server():
        return multiprocessing.get_context("spawn")
    _launch()
    _used = True
    return multiprocessing.get_context("forkserver")


def environment() -> dict[str, str]:
    """What a child applies first (`apply`): the command's environment now."""
    return dict(os.environ)


def apply(env: dict[str, str] | None) -> None:
    """In a child: take the command's environment (a forked child has the server's)."""
    if env is not None and env != os.environ:
        os.environ.clear()
        os.environ.update(env)


def _running(server) -> bool:
    return getattr(server, "_forkserver_pid", None) is not None


def _launch() -> None:
    """Start the server unless it runs: what it imports, and Ctrl-C blocked in it from the
    start (a mask, unlike a handler, is kept across the exec and works from any thread)."""
    server = multiprocessing.forkserver._forkserver
    if _running(server):
        return
    multiprocessing.set_forkserver_preload(PRELOAD)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def start_early() -> None:
    """Launch the fork server now, in the background, when this machine likely has a GPU:
    its imports then overlap the command's own."""
    global _started_early
    if _started_early or not has_fork_server() or not gpu_likely():
        return
    _launch()
    _started_early = True
    atexit.register(stop_early)  # an error or Ctrl-C before any child: no lingering imports


def stop_early() -> None:
    """Stop a server that `start_early` launched and no child was asked of (nothing to
    measure, or the interpreter after all): its imports would only compete with the
    command's. A server with children is left alone: killed, it would leave them running
    while multiprocessing took them for dead; it exits by itself with the command."""
    global _started_early
    if not _started_early or _used:
        return
    _started_early = False
    server = multiprocessing.forkserver._forkserver
    stop = getattr(server, "_stop", None)
    if not _running(server) or stop is None:
        return
    with contextlib.suppress(OSError):  # it would finish its imports before it read a request
        os.kill(server._forkserver_pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        stop()  # closes its pipe and reaps it
