"""Lab probe, not part of the product (nothing imports it): where torch.compile's kernel
leads a committed winner by under 1% at a memory-bound shape (fp32 rope 1x65536x8x128,
layernorm 16384x4096), is it the kernel or where the outputs lie? The sweep times a winner
writing into outputs allocated once, before timing; torch.compile's graph allocates its own
at every call (the caching allocator hands back the same block each time). Here the winner
also writes into outputs allocated at every call, and into views of one larger buffer at
offsets of 0 B to 1 MiB + 4 KiB; all timed in turns with torch.compile's kernel, in one
process.

    PYTHONPATH=. python3 lab/placement_probe.py
"""

import importlib.util

import torch

from tritonbench_lab.kernels import get_spec
from tritonbench_lab.spec import parse_dtype

spec = importlib.util.spec_from_file_location("compiled_in_turns", "lab/compiled_in_turns.py")
turns = importlib.util.module_from_spec(spec)
spec.loader.exec_module(turns)
CASES = (("rope", "fp32", "1x4096x32x128"),  # a warm-up case: a process's first is erratic
         ("rope", "fp32", "1x65536x8x128"), ("rope", "fp32", "4x4096x32x128"),
         ("layernorm", "fp32", "16384x4096"), ("layernorm", "fp32", "16384x2048"))
OFFSETS = (0, 4096, 65536, 1 << 20, (1 << 20) + 4096)


def at_offset(like: tuple, offset: int) -> tuple:
    """Contiguous outputs shaped as `like`, each `offset` bytes into a buffer of its own."""
    outs = []
    for t in like:
        buf = torch.empty(t.numel() * t.element_size() + offset, dtype=torch.uint8,
                          device=t.device)
        outs.append(buf[offset:].view(t.dtype).view(t.shape))
    return tuple(outs)


def measure(kernel: str, dtype_text: str, shape_text: str) -> None:
    spec = get_spec(kernel)
    torch._dynamo.reset()
    shape = spec.shape(*map(int, shape_text.split("x")))
    dtype = parse_dtype(dtype_text)
    inputs = spec.make_inputs(shape, dtype, "cuda", 0)
    config = turns.committed_config(kernel, dtype_text, shape_text)
    compiled = spec.baselines["compiled"]
    once = spec.allocate_outputs(inputs)
    fns = {"compiled": lambda: compiled(inputs),
           "outputs allocated once": lambda: spec.launch(inputs, config, once),
           "outputs allocated per call": lambda: spec.launch(inputs, config,
                                                             spec.allocate_outputs(inputs))}
    for offset in OFFSETS:
        outs = at_offset(once, offset)
        fns[f"outputs at offset {offset}"] = lambda outs=outs: spec.launch(inputs, config, outs)
    turns.time_in_turns(f"{kernel} {dtype_text} {shape_text} {config}", fns,
                        spec.reference(inputs), spec.tolerance[dtype])


if __name__ == "__main__":
    for case in CASES:
        measure(*case)
