"""add against float64 torch at awkward lengths and configs of its space."""

import pytest
import torch
from helpers.kernel_cases import configs_for, run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels.add import SPEC, add
from tritonbench_lab.space import HOPPER
from tritonbench_lab.spec import Shape

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]
# One element, a prime, just past powers of two (a one-element last block), many blocks.
LENGTHS = [1, 3, 1021, 4097, 65537, 70_001]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", LENGTHS)
def test_add_awkward_lengths(n, dtype, device):
    shape = Shape.of(n=n)
    inputs = SPEC.make_inputs(shape, dtype, device, seed=n)
    configs = configs_for(SPEC, shape, dtype)
    assert len(configs) >= 3
    for config in configs:
        verdict = run_and_check(SPEC, inputs, config, dtype)
        assert verdict.ok, f"{config}: {verdict.detail}"


@pytest.mark.parametrize("dtype", DTYPES[:2], ids=DTYPE_IDS[:2])
def test_add_rounds_once_as_torch_does(dtype, device):
    """x + y rounded once to the dtype is what torch.add gives, bit for bit (bf16 only to
    within its tolerance: the interpreter's float32 -> bfloat16 rounding is not the GPU's)."""
    inputs = SPEC.make_inputs(Shape.of(n=5000), dtype, device, seed=1)
    z = add(inputs["x"], inputs["y"], {"BLOCK": 512, "num_warps": 2})
    assert torch.equal(z, inputs["x"] + inputs["y"])


def test_add_of_any_shape_keeps_it(device):
    x, y = torch.randn(3, 5, 7, device=device), torch.randn(3, 5, 7, device=device)
    assert torch.equal(add(x, y), x + y)


def test_the_space_keeps_every_thread_busy_and_blocks_near_the_length():
    kept, pruned = SPEC.space.prune({"n": 1000}, 4, HOPPER)
    assert all(c["BLOCK"] // (32 * c["num_warps"]) >= 1 for c in kept)
    assert all(c["BLOCK"] <= 2048 for c in kept)
    assert any("more than twice the 1000 elements" in why for _, why in pruned)
    assert SPEC.space.default in kept


def test_add_rejects_bad_input(device):
    x = torch.randn(8, device=device)
    with pytest.raises(TlabError, match="one shape and dtype"):
        add(x, torch.randn(9, device=device))
    with pytest.raises(TlabError, match="contiguous x and y"):
        add(torch.randn(4, 4, device=device).t(), torch.randn(4, 4, device=device))
    with pytest.raises(TlabError, match="at least one element"):
        SPEC.check_shape(Shape.of(n=0))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_add_default_shapes_on_gpu(dtype, device):
    for shape in SPEC.default_shapes:
        inputs = SPEC.make_inputs(shape, dtype, device, seed=6)
        for config in configs_for(SPEC, shape, dtype):
            verdict = run_and_check(SPEC, inputs, config, dtype)
            assert verdict.ok, f"{shape} {config}: {verdict.detail}"
        assert torch.equal(SPEC.launch(inputs, SPEC.space.default, SPEC.allocate_outputs(inputs))[0],
                           inputs["x"] + inputs["y"])  # rounded once, as torch.add on the GPU
