"""Test setup: run kernels on the GPU when CUDA is visible, else in Triton's interpreter.

TRITON_INTERPRET must be set before triton is first imported, hence here, at collection.
Tests marked `gpu` are skipped (with a reason) when no GPU is in use.
"""

import os

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ["TRITON_INTERPRET"] = "1"
INTERPRETING = os.environ.get("TRITON_INTERPRET", "0") == "1"
DEVICE = "cpu" if INTERPRETING else "cuda"


def pytest_collection_modifyitems(config, items):
    if not INTERPRETING:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (kernels run in Triton's interpreter here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device() -> str:
    return DEVICE
