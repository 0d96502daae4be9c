"""The registry: every spec complete and usable; unknown names; users' kernel modules."""

import textwrap

import pytest
import torch
from helpers.kernel_cases import run_and_check

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import all_specs, builtin_names, get_spec, load_kernel_module, names
from tritonbench_lab.space import HOPPER

EXAMPLE = "examples/axpy.py"
SPECS = all_specs()


def test_builtin_kernels_are_registered():
    assert {"matmul", "softmax", "rmsnorm", "add_rmsnorm"} <= set(names())


def test_every_registry_name_loads_the_spec_of_that_name():
    """The registry maps names to "module:attribute" strings: a wrong attribute (the erf spec
    under matmul_gelu_tanh) would answer for another kernel under this name."""
    loaded = {name: get_spec(name).name for name in builtin_names()}
    assert {name: got for name, got in loaded.items() if got != name} == {}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_registered_spec_is_complete_and_consistent(spec):
    # Complete: KernelSpec refuses an incomplete spec when it is made (contract/test_spec.py).
    assert spec.space.outside(spec.space.default) is None
    assert set(spec.baselines) >= {"torch"}
    for other in spec.prior_from:  # the same space, so their winners are its configs
        assert get_spec(other).space.params == spec.space.params
    for shape in spec.default_shapes + spec.small_shapes:
        spec.check_shape(shape)  # raises if the spec's own shapes are unsupported
        for dtype in spec.dtypes:
            cost = spec.cost(shape, dtype)
            assert cost.flops > 0 and cost.bytes > 0
            kept, _ = spec.space.prune(dict(shape.dims), dtype.itemsize, HOPPER)
            assert kept, f"{spec.name}: nothing left of the space at {shape}"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_inputs_are_seeded_random_never_zeros(spec, device):
    shape = spec.small_shapes[0]
    dtype = spec.dtypes[0]
    first = spec.make_inputs(shape, dtype, device, seed=11)
    again = spec.make_inputs(shape, dtype, device, seed=11)
    other = spec.make_inputs(shape, dtype, device, seed=12)
    tensors = [k for k, v in first.items() if isinstance(v, torch.Tensor)]
    # the operands are in the dtype asked for; side tensors (fp8 scales) may be float32
    assert any(first[key].dtype == dtype for key in tensors)
    for key in tensors:
        assert first[key].dtype in (dtype, torch.float32) and first[key].device.type == device
        assert torch.equal(first[key], again[key]), f"{key} is not reproducible from its seed"
        assert not torch.equal(first[key], other[key]), f"{key} ignores the seed"
        zeros = (first[key] == 0).float().mean().item()
        assert zeros < 0.01, f"{key} is {zeros:.0%} zeros"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_baselines_match_the_reference(spec, device):
    shape = spec.small_shapes[-1]
    dtype = torch.float32 if torch.float32 in spec.dtypes else spec.dtypes[0]
    inputs = spec.make_inputs(shape, dtype, device, seed=3)
    reference = spec.reference(inputs)
    from tritonbench_lab.measure.verify import as_outputs, check

    on_gpu = device == "cuda"
    names = spec.baselines_for(interpreting=not on_gpu)
    assert set(spec.baselines) - set(names) == (set() if on_gpu else set(spec.gpu_only_baselines))
    for name in names:
        baseline = spec.baselines[name]
        verdict = check(as_outputs(baseline(inputs)), reference, spec.tolerance[dtype])
        assert verdict.ok, f"{spec.name}/{name}: {verdict.detail}"


def test_unknown_kernel_lists_the_known_ones_and_suggests():
    with pytest.raises(TlabError) as err:
        get_spec("matmull")
    message = str(err.value)
    assert "unknown kernel 'matmull'" in message and "did you mean 'matmul'" in message
    assert "softmax" in message and "\n" not in message
    with pytest.raises(TlabError) as err:  # nothing near: no suggestion, still the list
        get_spec("zzzz")
    assert "did you mean" not in str(err.value) and "softmax" in str(err.value)


def test_user_kernel_module_loads_and_runs(device):
    (spec,) = load_kernel_module(EXAMPLE)
    assert spec.name == "axpy" and get_spec("axpy") is spec and "axpy" in names()
    for shape in spec.small_shapes:
        inputs = spec.make_inputs(shape, torch.float32, device, seed=0)
        for config in list(spec.space)[:3]:
            verdict = run_and_check(spec, inputs, config, torch.float32)
            assert verdict.ok, verdict.detail


BAD_MODULES = {
    "syntax": ("def broken(:\n", "failed to import (line 1): SyntaxError"),
    "raises": ("raise RuntimeError('no GPU here')\n", "RuntimeError: no GPU here"),
    "empty": ("X = 1\n", "defines neither SPEC nor SPECS"),
    "wrong_type": ("SPEC = 42\n", "must hold KernelSpec objects, got int"),
    "clash": ("from tritonbench_lab.kernels.softmax import SPEC\n", "taken by a built-in"),
    "twice": (
        "import dataclasses\n"
        "from tritonbench_lab.kernels.softmax import SPEC as S\n"
        "MINE = dataclasses.replace(S, name='mine')\n"
        "SPECS = [MINE, MINE]\n",
        "SPECS names mine more than once",
    ),
    "incomplete": (
        "import dataclasses\n"
        "from tritonbench_lab.kernels.softmax import SPEC as S\n"
        "SPEC = dataclasses.replace(S, name='mine', baselines={})\n",
        "kernel spec 'mine' is incomplete: baselines is empty",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_MODULES))
def test_malformed_kernel_modules_fail_in_one_line(case, tmp_path):
    source, phrase = BAD_MODULES[case]
    path = tmp_path / f"bad_{case}.py"
    path.write_text(textwrap.dedent(source))
    with pytest.raises(TlabError) as err:
        load_kernel_module(path)
    assert phrase in str(err.value)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_kernel_module(tmp_path):
    with pytest.raises(TlabError, match="nope.py' does not exist"):
        load_kernel_module(tmp_path / "nope.py")
    (tmp_path / "notes.txt").write_text("x = 1\n")
    with pytest.raises(TlabError, match="notes.txt' is not a .py file"):
        load_kernel_module(tmp_path / "notes.txt")


# Shapes each kernel takes beyond its default and small ones, at the edges of what it takes.
EDGE_SHAPES = {"softmax": ((2, 131072), (1, 1 << 24), (8, 65536))}


@pytest.mark.parametrize("name", builtin_names())
def test_each_kernels_untuned_config_runs_at_every_shape_it_takes(name, tmp_path):
    """What tlab runs untuned (`--space default`, `tuned.lookup` with nothing tuned) is never
    a config the space prunes, at any default, small or edge shape and dtype, in Triton's
    interpreter and on Hopper."""
    import warnings

    from tritonbench_lab.measure.env import INTERPRETER, device_limits
    from tritonbench_lab.spec import dtype_name
    from tritonbench_lab.tuned import lookup

    spec = get_spec(name)
    shapes = [*spec.default_shapes, *spec.small_shapes,
              *(spec.shape(*sizes) for sizes in EDGE_SHAPES.get(name, ()))]
    for limits in (device_limits(INTERPRETER), HOPPER):
        for shape in shapes:
            spec.check_shape(shape)
            for dtype in spec.dtypes:
                config = spec.untuned_config(shape, dtype, limits)
                assert spec.space.outside(config) is None
                why = spec.space.why_pruned(config, dict(shape.dims), dtype.itemsize, limits)
                assert why is None, f"{name} {dtype_name(dtype)} {shape}: {why}"
    shape, dtype = shapes[-1], spec.dtypes[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no configs file": the point here
        untuned = lookup(name, dtype, gpu="no-such-gpu", directory=tmp_path, **dict(shape.dims))
    assert untuned == spec.untuned_config(shape, dtype)
