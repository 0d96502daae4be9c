"""What the registered ops (library.py) need to know of the compiled graph they run in: whether
the graph being traced will be captured in CUDA graphs, and a matmul op that leaves no
scratch buffer behind where CUDA graph trees record.

May import: kernels/ (the persistent matmul's hand-over buffers); torch.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tritonbench_lab.kernels import matmul_persistent as _persistent


def scratch_not_kept(run: Callable) -> Callable:
    """`run` (a matmul op) such that the persistent kernel's hand-over buffers it first makes
    are dropped after the call when it runs off the device's default stream: CUDA graph trees
    (torch.compile's mode="reduce-overhead") warm up and record on a stream of their own, into
    a pool of their own, and refuse to replay where a tensor made there stays alive but is no
    graph output ("tensor(s) in the cudagraph pool not tracked as outputs"). Dropped, the
    buffers are temporaries of the graph; on the default stream they are kept for the next
    call, as eagerly."""
    def call(*args):
        kept = _persistent._STREAM_K_BUFFERS  # its module is hashed into rows: read, not renamed
        before = len(kept)
        out = run(*args)
        if len(kept) > before and off_default_stream():
            for key in list(kept)[before:]:  # a dict keeps insertion order: the new keys
                del kept[key]
        return out

    return call


def off_default_stream() -> bool:
    return torch.cuda.is_available() and torch.cuda.current_stream() != torch.cuda.default_stream()


def graph_captured() -> bool:
    """Whether the graph being traced will run captured in CUDA graphs: torch.compile turns
    Inductor's cudagraphs option on while it compiles for mode="reduce-overhead" (and
    "max-autotune"); torch.export and other backends leave it off."""
    try:
        from torch._inductor import config  # late: a heavy import; only a traced graph asks
    except ImportError:  # a torch without Inductor: no compiled graph captures
        return False
    return bool(config.triton.cudagraphs)
