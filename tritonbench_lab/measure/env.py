"""Where kernels run: a CUDA GPU, or Triton's interpreter on the CPU; and that device's limits.

Triton reads TRITON_INTERPRET once, when it is first imported, so the choice must be made
before anything imports triton (the kernel modules do). `choose_backend` is called by the
CLI before it loads any kernel.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tritonbench_lab import __version__
from tritonbench_lab.data.layout import INTERPRETER_SLUG, slugify
from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import HOPPER, DeviceLimits

INTERPRETER = "interpreter"
TMA_CAPABILITY = (9, 0)  # the tensor memory accelerator arrived with Hopper


def cuda_available() -> bool:
    # late: `tlab --help` imports no torch
    import torch

    return torch.cuda.is_available()


def choose_backend(interpret: bool | None = None) -> str:
    """Pick "cuda" or INTERPRETER and set TRITON_INTERPRET to match.

    interpret=None: the GPU when CUDA is visible, otherwise the interpreter.
    interpret=True: the interpreter even on a GPU machine.
    """
    if interpret is False and not cuda_available():
        raise TlabError("--gpu asks for a GPU, but CUDA sees none; use --interpret to run "
                        "the kernels in Triton's interpreter on the CPU")
    use_interpreter = (not cuda_available()) if interpret is None else interpret
    wanted = "1" if use_interpreter else "0"
    current = os.environ.get("TRITON_INTERPRET", "0")
    if "triton" in sys.modules and current != wanted:
        raise TlabError(
            "triton was imported before tlab chose its backend; set TRITON_INTERPRET="
            f"{wanted} in the environment instead"
        )
    os.environ["TRITON_INTERPRET"] = wanted
    return INTERPRETER if use_interpreter else "cuda"


def device_limits(backend: str) -> DeviceLimits:
    """Limits of the current GPU; on the interpreter, Hopper's (the GPU these spaces target)."""
    if backend == INTERPRETER:
        return HOPPER
    # late: `tlab --help` imports no torch
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    shared = getattr(props, "shared_memory_per_block_optin", 0) or HOPPER.shared_memory_bytes
    return DeviceLimits(label=props.name, shared_memory_bytes=int(shared),
                        tma=(props.major, props.minor) >= TMA_CAPABILITY,
                        sms=props.multi_processor_count)


@dataclass(frozen=True)
class Fingerprint:
    """The machine and toolchain a measurement was taken on; part of every row."""

    gpu: str
    gpu_slug: str
    driver: str
    cuda: str
    torch: str
    triton: str
    tlab: str


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else "unknown"
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


def fingerprint(backend: str) -> Fingerprint:
    # late: `tlab --help` imports no torch
    import torch
    import triton

    if backend == INTERPRETER:
        return Fingerprint(INTERPRETER, INTERPRETER_SLUG, "", "", torch.__version__,
                           triton.__version__, __version__)
    name = torch.cuda.get_device_name(torch.cuda.current_device())
    return Fingerprint(name, slugify(name), _driver_version(), torch.version.cuda or "",
                       torch.__version__, triton.__version__, __version__)


def free_device_bytes(backend: str) -> int:
    """Memory a new allocation can get: free GPU memory, or available host RAM."""
    if backend == INTERPRETER:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    # late: `tlab --help` imports no torch
    import torch

    free, _total = torch.cuda.mem_get_info()
    return free


def bytecode_note(module_file: str | None = None) -> str | None:
    """A note for the user when the command, and the server its child processes are forked
    from (children.py), will each compile torch's modules from source before they do
    anything: Python told not to write bytecode (PYTHONDONTWRITEBYTECODE) and torch installed
    without it: seconds a process before it starts its work. None otherwise."""

    if not sys.dont_write_bytecode:
        return None
    if module_file is None:
        # late: `tlab --help` imports no torch
        import torch

        module_file = torch.__file__
    if not module_file or Path(importlib.util.cache_from_source(module_file)).exists():
        return None
    return ("PYTHONDONTWRITEBYTECODE is set and torch has no bytecode: this command and "
            "the process its workers start from each compile torch's modules from source "
            "first (seconds each); unset it to start faster.")
