"""nn.Linear for inference with its weight transposed and padded once, at load time
(`tritonbench_lab.ops.prepare_linear` builds it): an output width no tile divides (an LM
head's vocabulary: 50257) is computed at the next multiple of PAD_TO and returned as a view."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from tritonbench_lab.errors import TlabError

PAD_TO = 64  # N a multiple of this: every tile width and vector load of matmul divides it


class PaddedLinear(torch.nn.Module):
    """y = x @ weight.T + bias (nn.Linear's sum, for inference), with the weight stored once
    as K x N' where N' is N rounded up to a multiple of `multiple` (and the bias as N'
    values): the product is computed at N' (where tlab's kernel and the PyTorch op both load
    whole vectors and tiles) and y is a view of its first N columns, so its rows are N' apart
    in memory. The padding is zeros and is never read back. Without a bias, through `matmul`
    (ops.matmul, as ops.prepare_linear builds it; torch.matmul by default); with one,
    torch.addmm, whose GEMM adds the bias in its epilogue (ops.addmm's reason)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 multiple: int = PAD_TO, matmul: Callable = torch.matmul):
        super().__init__()
        self.matmul = matmul
        if weight.ndim != 2 or multiple < 1:
            raise TlabError(f"prepare_linear takes a 2-D weight (out x in, as nn.Linear keeps "
                            f"it) and a multiple of 1 or more, got {tuple(weight.shape)} and "
                            f"{multiple}")
        self.out_features, self.in_features = weight.shape
        extra = -self.out_features % multiple
        # K x N', contiguous: the layout matmul's right operand is tuned in
        padded = F.pad(weight.detach().t(), (0, extra)).contiguous()
        self.register_buffer("padded", padded)
        self.register_buffer("bias", None if bias is None else
                             F.pad(bias.detach(), (0, extra)).contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead, rows = x.shape[:-1], x.reshape(-1, self.in_features)
        if self.bias is None:
            y = self.matmul(rows, self.padded)[:, :self.out_features]
        else:
            y = torch.addmm(self.bias, rows, self.padded)[:, :self.out_features]
        return y.reshape(*lead, self.out_features) if len(lead) != 1 else y

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features} "
                f"(stored as {self.padded.shape[1]}), bias={self.bias is not None}")
