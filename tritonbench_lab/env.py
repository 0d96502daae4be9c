"""Where kernels run: a CUDA GPU, or Triton's interpreter on the CPU; and that device's limits.

Triton reads TRITON_INTERPRET once, when it is first imported, so the choice must be made
before anything imports triton (the kernel modules do). `choose_backend` is called by the
CLI before it loads any kernel.
"""

from __future__ import annotations

import os
import sys

from tritonbench_lab.errors import TlabError
from tritonbench_lab.space import HOPPER, DeviceLimits

INTERPRETER = "interpreter"


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def choose_backend(interpret: bool | None = None) -> str:
    """Pick "cuda" or INTERPRETER and set TRITON_INTERPRET to match.

    interpret=None: the GPU when CUDA is visible, otherwise the interpreter.
    interpret=True: the interpreter even on a GPU machine.
    """
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
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    shared = getattr(props, "shared_memory_per_block_optin", 0) or HOPPER.shared_memory_bytes
    return DeviceLimits(label=props.name, shared_memory_bytes=int(shared))
