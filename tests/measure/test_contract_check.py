"""The kernel contract checked up front (measure/contract_check.py): each mistake a kernel
author makes is named in one line, before anything runs; every built-in kernel, the example
and a clean module pass."""

import dataclasses

import pytest
import torch
from helpers.backend import INTERPRETING
from helpers.faulty_kernels import FAULTS, NAME, module_text

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import all_specs, builtin_names, get_spec, load_kernel_module
from tritonbench_lab.measure.contract_check import check_contract, check_user_kernels
from tritonbench_lab.measure.env import INTERPRETER
from tritonbench_lab.space import HOPPER, Space
from tritonbench_lab.spec import compile_baseline

BACKEND = INTERPRETER if INTERPRETING else "cuda"


def _load(tmp_path, fault: str = ""):
    path = tmp_path / "kernels.py"
    path.write_text(module_text(fault))
    (spec,) = load_kernel_module(path)
    return spec


def test_a_module_without_a_fault_passes_and_says_what_was_called(tmp_path):
    said = check_contract(_load(tmp_path), INTERPRETING, HOPPER)
    assert said == "kept: each piece called once at n=1000 fp32 (launch with BLOCK=256 num_warps=4)"


@pytest.mark.parametrize("fault", FAULTS)
def test_each_mistake_is_named_in_one_line(fault, tmp_path):
    code, phrases = FAULTS[fault]
    spec = _load(tmp_path, code)
    with pytest.raises(TlabError) as caught:
        check_contract(spec, INTERPRETING, HOPPER)
    message = str(caught.value)
    assert "\n" not in message
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} not in {message!r}"


@pytest.mark.parametrize("spec", all_specs(), ids=lambda s: s.name)
def test_every_built_in_kernel_keeps_the_contract(spec):
    said = check_contract(spec, INTERPRETING, HOPPER)
    sizes = " ".join(f"{name}={size}" for name, size in spec.small_shapes[0].dims)
    assert said.startswith(f"kept: each piece called once at {sizes} ")


def test_the_launch_runs_the_default_config_unless_the_shape_prunes_it(tmp_path):
    spec = _load(tmp_path)
    # At n=1000 nothing prunes the default; a space whose default idles threads runs the
    # first config kept instead.
    space = Space(params={"BLOCK": (64, 256), "num_warps": (4, 1)},
                  constraints=spec.space.constraints, default={"BLOCK": 64, "num_warps": 4})
    said = check_contract(dataclasses.replace(spec, space=space), INTERPRETING, HOPPER)
    assert said.endswith("(launch with BLOCK=64 num_warps=1)")


def test_a_kernel_the_interpreter_cannot_run_is_checked_without_its_launch(tmp_path):
    """bf16 matmul's tl.dot is wrong in the interpreter: a kernel with no dtype it runs there
    has every other piece checked, and its launch left to a GPU."""
    spec = _load(tmp_path)
    only_gpu = dataclasses.replace(spec, interpreter_dtypes=())
    said = check_contract(only_gpu, True, HOPPER)
    assert said.endswith("but launch (no dtype of the kernel runs in Triton's interpreter)")
    broken = dataclasses.replace(only_gpu, reference=lambda inputs: 2 * inputs["x"].double())
    with pytest.raises(TlabError, match="reference must return a tuple of tensors"):
        check_contract(broken, True, HOPPER)


def test_a_compiled_baseline_is_called_through_its_eager_function(tmp_path):
    """compile_baseline marks its function (__wrapped__), so the check calls the formula
    rather than compiling it; a wrong formula is named all the same."""
    spec = _load(tmp_path)
    calls = []

    def formula(inputs):
        calls.append(1)
        return 2 * inputs["x"]

    compiled = compile_baseline(formula)
    check_contract(dataclasses.replace(spec, baselines={"torch": formula, "compiled": compiled}),
                   INTERPRETING, HOPPER)
    assert len(calls) == 2  # once as "torch", once through "compiled"

    wrong = compile_baseline(lambda inputs: (inputs["x"], inputs["x"]))
    with pytest.raises(TlabError, match=r"baselines\['compiled'\] must return what the reference"):
        check_contract(dataclasses.replace(spec, baselines={"torch": formula, "compiled": wrong}),
                       INTERPRETING, HOPPER)


def test_only_user_kernels_are_checked_and_named(tmp_path):
    _load(tmp_path)
    checked = check_user_kernels(BACKEND)
    assert NAME in checked and not set(checked) & set(builtin_names())
    assert check_user_kernels(BACKEND, only=["softmax"]) == {}
    path = tmp_path / "kernels.py"
    path.write_text(module_text(FAULTS["cost-returns-a-tuple"][0]))
    load_kernel_module(path)
    with pytest.raises(TlabError, match="doubled: cost must return a Cost"):
        check_user_kernels(BACKEND, only=[NAME])
    assert get_spec(NAME).name == NAME


def test_inputs_on_another_device_are_named(tmp_path):
    spec = _load(tmp_path)
    elsewhere = "meta" if INTERPRETING else "cpu"

    def make_inputs(shape, dtype, device, seed):
        return {"x": torch.ones(shape["n"], dtype=dtype, device=elsewhere)}

    with pytest.raises(TlabError, match=f"on the device it is given .*: x is on {elsewhere}"):
        check_contract(dataclasses.replace(spec, make_inputs=make_inputs), INTERPRETING, HOPPER)
