"""How tlab starts its child processes: on a GPU, forked from one that imported torch once.

A GPU sweep runs two timing workers and a compile pool of one process per core, and each
imported torch and triton for itself: 4-6 s a process on the lent H200s (their torch has no
bytecode, so every process compiles torch's modules from source), 17 at once, after the
command itself had spent 6 s importing torch. The first row came 15 s after the command.

Here the children come from multiprocessing's fork server instead: one process that imports
torch, triton, tlab's worker and pool modules and the built-in kernels (`PRELOAD`), then forks
each child on request, which then starts in milliseconds with all of that already imported.
The server never starts CUDA (importing these modules does not), so every child starts its
own CUDA context as a spawned one would. `start_early` launches the server as the command
begins, so that its imports run beside the command's own; a command that then finds nothing
to measure stops it (`stop_early`). Beside the command's import it makes that one ~25%
slower (H200), so the sweep starts it early only where it has work for certain; otherwise
the first child starts it.

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
import threading

# What the server imports before it forks anything. '__main__' first: a child of the `tlab`
# script would otherwise import the script (and the command line behind it) again itself.
PRELOAD = [
    "__main__",
    "torch",
    "triton",
    "tritonbench_lab.worker",
    "tritonbench_lab.precompile",
    "tritonbench_lab.timing",
    "tritonbench_lab.verify",
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


def has_fork_server() -> bool:
    return "forkserver" in multiprocessing.get_all_start_methods()


def gpu_likely() -> bool:
    return (os.environ.get("TRITON_INTERPRET") != "1"
            and any(os.path.exists(node) for node in _GPU_NODES))


def context(interpret: bool):
    """The multiprocessing context for a child: the fork server on a GPU, else spawn."""
    if interpret or not has_fork_server():
        return multiprocessing.get_context("spawn")
    _preload()
    return multiprocessing.get_context("forkserver")


def _preload() -> None:
    """Before the server starts: what it imports, and what its children must inherit from
    the environment (the server's copy of it is theirs)."""
    server = multiprocessing.forkserver._forkserver
    if getattr(server, "_forkserver_pid", None) is None:
        from tritonbench_lab.precompile import pin_triton_cache_dir

        pin_triton_cache_dir()
        multiprocessing.set_forkserver_preload(PRELOAD)


def start_early() -> None:
    """Launch the fork server now, in the background, when this machine likely has a GPU:
    its imports then overlap the command's own."""
    global _started_early
    if _started_early or not has_fork_server() or not gpu_likely():
        return
    _preload()
    # Ctrl-C reaches the whole process group; the server ignores it only once its imports
    # are done (then the command stops it). An ignored signal stays ignored across exec.
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    _started_early = True
    atexit.register(stop_early)  # an error or Ctrl-C before any child: no lingering imports


def stop_early() -> None:
    """Stop a server that `start_early` launched, where the command found no child to start
    (nothing to measure, or the interpreter after all): its imports would only compete with
    the command's. Later children would start a new one."""
    global _started_early
    if not _started_early:
        return
    _started_early = False
    server = multiprocessing.forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    stop = getattr(server, "_stop", None)
    if pid is None or stop is None:
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)  # it would finish its imports before it read a request
    stop()  # closes its pipe and reaps it
