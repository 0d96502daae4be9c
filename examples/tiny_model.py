"""A small transformer-style MLP block written against `tritonbench_lab.ops`, to show the path
from a model to its shapes tuned:

    TLAB_RECORD_SHAPES=shapes.csv python examples/tiny_model.py   # 1. record what it calls
    tlab sweep --shapes-from shapes.csv                           # 2. tune those shapes
    TLAB_CONFIG_DIR=configs python examples/tiny_model.py         # 3. run on the winners

On a GPU it runs in bf16 at a width of 1024; without one, in fp32 through Triton's interpreter
at a width of 64 (so that step 2 takes minutes, not hours); there the CPU's op beats the
interpreter at every shape, so step 3 runs the op as step 1 did (`tlab explain KERNEL --shape
S --gpu-name interpreter` says so): the path is shown, not a speed-up. --tokens sets the token
counts it is called with, e.g. --tokens 1,7,128 (each count is a shape of its own).
"""

from __future__ import annotations

import argparse
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from tritonbench_lab import ops  # noqa: E402  (after TRITON_INTERPRET is set)


class Block(torch.nn.Module):
    """LayerNorm, an up projection with GELU, a down projection and a residual add."""

    def __init__(self, width: int, dtype: torch.dtype, device: str):
        super().__init__()
        generator = torch.Generator().manual_seed(0)

        def weight(*shape):
            return (torch.randn(*shape, generator=generator) / shape[0] ** 0.5).to(device, dtype)

        self.norm_weight, self.norm_bias = weight(width) + 1, weight(width)
        self.up, self.up_bias = weight(width, 4 * width), weight(4 * width)
        self.down = weight(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = ops.layernorm(x, self.norm_weight, self.norm_bias)
        h = ops.matmul_gelu(h, self.up, self.up_bias)
        return ops.add(x, ops.matmul(h, self.down))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", default="16,48", help="token counts, comma-separated")
    args = parser.parse_args()
    on_gpu = torch.cuda.is_available()
    device, dtype, width = ("cuda", torch.bfloat16, 1024) if on_gpu else ("cpu", torch.float32, 64)
    block = Block(width, dtype, device)
    generator = torch.Generator().manual_seed(1)
    with torch.inference_mode():  # ops' kernels are forward-only: autograd gets the op
        for tokens in (int(t) for t in args.tokens.split(",")):
            x = torch.randn(tokens, width, generator=generator).to(device, dtype)
            y = block(x)
            print(f"{tokens} tokens x {width}: output {tuple(y.shape)}, "
                  f"mean |y| {y.float().abs().mean():.4f}")
    if os.environ.get("TLAB_RECORD_SHAPES"):
        print(f"shapes recorded in {os.environ['TLAB_RECORD_SHAPES']}: "
              f"tlab sweep --shapes-from {os.environ['TLAB_RECORD_SHAPES']}")


if __name__ == "__main__":
    main()
