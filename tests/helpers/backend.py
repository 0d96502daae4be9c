"""Where kernels run in this test session: on the GPU when CUDA is visible, else in Triton's
interpreter.

TRITON_INTERPRET must be set before triton is first imported: tests/conftest.py imports this
module first thing, at collection, so tests may read INTERPRETING and DEVICE from here.
"""

import os

import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ["TRITON_INTERPRET"] = "1"
INTERPRETING = os.environ.get("TRITON_INTERPRET", "0") == "1"
DEVICE = "cpu" if INTERPRETING else "cuda"
