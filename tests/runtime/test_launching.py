"""launching.py: a kernel's calls after the first of a signature skip Triton's dispatch and
hand the compiled kernel's launcher exactly what Triton would; anything else goes through
Triton. The GPU itself is not needed: a stand-in driver records what reaches the launcher."""

import json
import os
import subprocess
import sys

import pytest
import torch
from helpers.paths import LAUNCH_RECORDER, REPO

from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import builtin_names
from tritonbench_lab.runtime import launching

HOOK_SLOTS = slice(6, 9)  # launch metadata and the two hooks: (None, None, None) the short way


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, str(LAUNCH_RECORDER), *builtin_names()], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return {r["kernel"]: r for r in map(json.loads, done.stdout.splitlines())}


def _without_hooks(launch: list) -> list:
    return launch[:HOOK_SLOTS.start] + launch[HOOK_SLOTS.stop:]


@pytest.mark.parametrize("kernel", builtin_names())
def test_the_second_launch_skips_triton_and_passes_what_triton_passed(recorded, kernel):
    first, second = recorded[kernel]["rounds"]
    assert first["through_triton"] and len(first["launches"]) == len(first["through_triton"])
    assert second["through_triton"] == []
    assert [_without_hooks(c) for c in second["launches"]] == [
        _without_hooks(c) for c in first["launches"]]
    assert all(c[HOOK_SLOTS] == [None, None, None] for c in second["launches"])


def test_a_new_signature_goes_through_triton_once(recorded):
    misaligned = recorded["add"]["misaligned"]  # x one element off 16-byte alignment
    assert [r["through_triton"] for r in misaligned] == [["add_kernel"], []]
    assert misaligned[1]["launches"][0][9][-1] is False  # the launch got the misaligned x
    alternating = recorded["layernorm"]["alternating"]  # two configs in turn
    assert [r["through_triton"] for r in alternating] == [["layernorm_kernel"], [], [], []]
    metadata = [r["launches"][0][5] for r in alternating]  # num_warps first: each its own
    assert metadata[0] == metadata[2] != metadata[1] == metadata[3]


def test_tensor_descriptors_take_the_short_way_from_the_second_call(recorded):
    first, second = recorded["matmul"]["tma"]
    assert [first["through_triton"], second["through_triton"]] == [["matmul_tma_kernel"], []]
    assert [_without_hooks(c) for c in second["launches"]] == [
        _without_hooks(c) for c in first["launches"]]
    descriptors = [a for a in second["launches"][0] if isinstance(a, list) and a
                   and a[0] == "descriptor"]
    assert len(descriptors) == 3  # a, b and out, handed over as Triton hands them


def test_a_signature_is_at_least_as_fine_as_tritons_specialization():
    """Two arguments of one kind are specialized alike by Triton (its native rule), so a kept
    kernel is the one Triton would pick."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.nvidia.compiler import CUDABackend

    t = torch.randn(64)
    values = [0, 1, 2, 15, 16, 17, 32, -1, -16, 2**31 - 1, 2**31, 2**40, 2**63, -2**31 - 1,
              True, False, 0.5, 2.0, None, t, t[1:], t[4:], t.to(torch.bfloat16),
              t.to(torch.bfloat16)[1:], t.view(8, 8), t.view(8, 8).T]
    from triton.tools.tensor_descriptor import TensorDescriptor

    m = torch.randn(64, 64)
    values += [TensorDescriptor.from_tensor(x, block) for x in (m, m[:32], m[:, :32],
               m.to(torch.bfloat16)) for block in ([16, 16], [32, 16])]
    for a in values:
        for b in values:
            if launching._kind(a) == launching._kind(b):
                spec_a = native_specialize_impl(CUDABackend, a, False, True, True)
                spec_b = native_specialize_impl(CUDABackend, b, False, True, True)
                assert spec_a == spec_b, (a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", builtin_names())
def test_gpu_the_short_way_computes_what_the_reference_does(kernel):
    """On the GPU: Triton's way, then the short way (poisoned outputs each time), both right."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.verify import as_outputs, check, poison

    spec = get_spec(kernel)
    given = launching.install_for(spec.launch)  # none when TLAB_FAST_LAUNCH=1 did it already
    try:
        dtype = spec.dtypes[0]
        inputs = spec.make_inputs(spec.small_shapes[-1], dtype, "cuda", 0)
        config = spec.space.complete(spec.space.default)
        config = {**config, "TMA": 0} if "TMA" in config else config
        reference = spec.reference(inputs)
        for _ in range(2):
            result = as_outputs(spec.launch(inputs, config, poison(spec.allocate_outputs(inputs))))
            torch.cuda.synchronize()
            verdict = check(result, reference, spec.tolerance[dtype])
            assert verdict.ok, verdict.detail
        runs = [vars(fn)["run"] for fn in launching.kernels_of(spec.launch)]
        assert any(run.kept for run in runs)  # the second went the short way
    finally:  # the other tests launch as configured
        for fn in given:
            del fn.run


@pytest.mark.gpu
def test_gpu_tensor_descriptors_the_short_way_compute_what_the_reference_does():
    """matmul's persistent kernel (host-side tensor descriptors): new descriptors each call,
    the second launched the short way, both right."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.verify import as_outputs, check, poison

    spec = get_spec("matmul")
    given = launching.install_for(spec.launch)
    try:
        inputs = spec.make_inputs(spec.shape(200, 136, 72), torch.float16, "cuda", 0)  # ragged
        config = {**spec.space.complete(spec.space.default), "TMA": 1}
        reference = spec.reference(inputs)
        for _ in range(2):
            result = as_outputs(spec.launch(inputs, config, poison(spec.allocate_outputs(inputs))))
            torch.cuda.synchronize()
            verdict = check(result, reference, spec.tolerance[torch.float16])
            assert verdict.ok, verdict.detail
        runs = [vars(fn)["run"] for fn in launching.kernels_of(spec.launch)]
        assert any(run.kept for run in runs)
    finally:
        for fn in given:
            del fn.run


# --- the rules, on a stand-in kernel -------------------------------------------------------

class FakeKernel:
    """What Triton's run returns: a launcher and the handles it is called with."""

    def __init__(self, log):
        self.function, self.packed_metadata = "function", ("metadata",)
        self.run = lambda *args: log.append(("launcher", args))


class FakeParam:
    def __init__(self, name, default=launching.inspect.Parameter.empty, constexpr=False):
        self.name, self.default, self.is_constexpr = name, default, constexpr


class FakeJit:
    """A @triton.jit function's surface as FastRun sees it; `run` is Triton's path."""

    params = [FakeParam("x"), FakeParam("n"), FakeParam("BLOCK", constexpr=True),
              FakeParam("EVEN", default=False, constexpr=True)]

    def __init__(self):
        self.log: list = []
        self.pre_run_hooks: list = []

    def run(self, *args, grid, warmup, **kwargs):
        self.log.append(("triton", args, kwargs))
        return FakeKernel(self.log)


@pytest.fixture
def fake():
    fn = FakeJit()
    fast = launching.FastRun(fn)
    fast.device, fast.stream = (lambda: 0), (lambda device: 7)
    return fn, fast


def _paths(log):
    return [entry[0] for entry in log]


def test_the_short_way_appends_the_keyword_constexprs_and_defaults(fake):
    fn, fast = fake
    x = torch.randn(32)
    fast(x, 100, grid=(4,), warmup=False, BLOCK=64, num_warps=4)
    fast(x, 200, grid=(4, 2), warmup=False, BLOCK=64, num_warps=4)  # n: another i32
    assert _paths(fn.log) == ["triton", "launcher"]
    assert fn.log[1][1] == (4, 2, 1, 7, "function", ("metadata",), None, None, None,
                            x, 200, 64, False)


@pytest.mark.parametrize("second", [
    dict(args=(None, 100), kwargs=dict(BLOCK=128)),  # another constexpr value
    dict(args=(None, 100), kwargs=dict(BLOCK=64, num_warps=8)),  # another option
    dict(args=(None, 1), kwargs=dict(BLOCK=64)),  # 1: Triton compiles it in
    dict(args=(None, 96), kwargs=dict(BLOCK=64)),  # divisible by 16
    dict(args=(None, 2**31), kwargs=dict(BLOCK=64)),  # an i64
    dict(args=("bf16", 100), kwargs=dict(BLOCK=64)),  # another dtype
    dict(args=("shifted", 100), kwargs=dict(BLOCK=64)),  # off 16-byte alignment
])
def test_a_call_of_another_signature_goes_through_triton(fake, second):
    fn, fast = fake
    x = torch.randn(64)
    tensor = {None: x, "bf16": x.to(torch.bfloat16), "shifted": x[1:]}[second["args"][0]]
    fast(x, 100, grid=(4,), warmup=False, BLOCK=64)
    fast(tensor, *second["args"][1:], grid=(4,), warmup=False, **second["kwargs"])
    fast(tensor, *second["args"][1:], grid=(4,), warmup=False, **second["kwargs"])
    assert _paths(fn.log) == ["triton", "triton", "launcher"]


def test_constexprs_count_by_value_and_type(fake):
    """True == 1, yet Triton compiles them apart; a constexpr passed positionally counts too."""
    fn, fast = fake
    x = torch.randn(32)
    for even in (True, 1, 1):
        fast(x, 100, grid=(4,), warmup=False, BLOCK=64, EVEN=even)
    for block in (64, 128, 128):
        fast(x, 100, block, grid=(4,), warmup=False)
    assert _paths(fn.log) == ["triton", "triton", "launcher", "triton", "triton", "launcher"]
    assert fn.log[-1][1][9:] == (x, 100, 128, False)


@pytest.mark.parametrize("case", ["warmup", "callable grid", "tensor keyword", "pre-run hook",
                                  "suspended", "unknown argument"])
def test_calls_fast_launch_cannot_vouch_for_go_through_triton(fake, monkeypatch, case):
    fn, fast = fake
    x = torch.randn(32)
    call = dict(args=(x, 100), grid=(4,), warmup=False, kwargs=dict(BLOCK=64))
    if case == "warmup":
        call["warmup"] = True
    elif case == "callable grid":
        call["grid"] = lambda meta: (4,)
    elif case == "tensor keyword":
        call["args"], call["kwargs"] = (x,), dict(n=x, BLOCK=64)
    elif case == "pre-run hook":
        fn.pre_run_hooks.append(lambda *a, **k: None)
    elif case == "suspended":
        monkeypatch.setattr(launching, "_active", [False])
    else:
        call["args"] = (x, object())
    for _ in range(3):
        fast(*call["args"], grid=call["grid"], warmup=call["warmup"], **call["kwargs"])
    assert _paths(fn.log) == ["triton"] * 3


def test_launch_hooks_send_every_call_through_triton(fake, monkeypatch):
    from triton import knobs

    fn, fast = fake
    x = torch.randn(32)
    fast(x, 100, grid=(4,), warmup=False, BLOCK=64)
    hook = knobs.runtime.launch_enter_hook
    if hasattr(hook, "calls"):  # a chain of hooks (triton 3.5+)
        monkeypatch.setattr(hook, "calls", [print])
    else:
        monkeypatch.setattr(knobs.runtime, "launch_enter_hook", print)
    fast(x, 100, grid=(4,), warmup=False, BLOCK=64)
    assert _paths(fn.log) == ["triton", "triton"]


def test_fast_launch_is_asked_for_by_the_environment(monkeypatch):
    monkeypatch.delenv(launching.ENV, raising=False)
    assert not launching.enabled()
    for value, on in (("1", True), ("0", False), ("", False), (" 1 ", True)):
        monkeypatch.setenv(launching.ENV, value)
        assert launching.enabled() is on
    monkeypatch.setenv(launching.ENV, "yes")  # not read as off: refused
    with pytest.raises(TlabError, match="TLAB_FAST_LAUNCH='yes': accepted are 1"):
        launching.enabled()
