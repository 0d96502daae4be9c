"""Test setup: run kernels on the GPU when CUDA is visible, else in Triton's interpreter
(helpers/backend.py decides, and sets TRITON_INTERPRET before triton is first imported).
Tests marked `gpu` are skipped (with a reason) when no GPU is in use.
"""

import pytest
from helpers.backend import DEVICE, INTERPRETING


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
