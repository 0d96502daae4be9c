"""Your own kernel from model code: `ops.kernel(name)` returns it as a function of its inputs
that runs tlab's kernel under the committed config where the measurements say it beats the
PyTorch op, and the op (the spec's `torch` baseline) elsewhere; `tuned.lookup` serves it too.
Both find a kernel loaded, named with its module, or listed in the current folder's
pyproject.toml, and read the configs/ folder of its project."""

import pytest
import torch
from helpers.backend import INTERPRETING
from helpers.compiled import targets as _targets
from helpers.compiled import traced as _traced
from helpers.fixture_results import winner, write_winners
from helpers.ops_state import ops_reading
from helpers.paths import REPO

from tritonbench_lab import ops, tuned
from tritonbench_lab.errors import TlabError
from tritonbench_lab.runtime import library, own_kernels

SLUG = "interpreter" if INTERPRETING else tuned.current_gpu_slug()
TUNED = "BLOCK=256 num_warps=2"
EXAMPLE = (REPO / "examples" / "axpy.py").read_text()
ALPHA = 0.75  # examples/axpy.py's
DEVICE = "cpu" if INTERPRETING else "cuda"


def _kernel_module(folder, name: str, shape_of: bool = True):
    """examples/axpy.py under another name (each test registers a kernel of its own: the
    registry lives as long as the process), with or without its shape_of."""
    source = EXAMPLE.replace('name="axpy"', f'name="{name}"')
    if not shape_of:
        source = source.replace("    shape_of=", "    # shape_of=")
    assert source != EXAMPLE and "shape_of=" in EXAMPLE
    path = folder / "kernels" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    """TEST DATA: a user's project folder, the current folder, whose configs/ hold winners of
    its kernels (written by each test) at n=1000: tlab's kernel 2x the PyTorch op."""
    monkeypatch.chdir(tmp_path)
    with ops_reading(monkeypatch, None):
        yield tmp_path


def _tuned_at_1000(project, name):
    write_winners(project / "configs" / SLUG / f"{name}.csv", [
        winner("1000", TUNED, dtype="fp32", kernel=name, p50_ms=1.0, op_p50_ms=2.0)])


def _inputs(n):
    gen = torch.Generator().manual_seed(n)
    x, y = (torch.randn(n, generator=gen).to(DEVICE) for _ in range(2))
    return x, y


def test_your_kernel_runs_tuned_where_it_beats_the_op_and_the_op_elsewhere(project):
    _kernel_module(project, "axpy_runs")
    _tuned_at_1000(project, "axpy_runs")
    axpy = ops.kernel("axpy_runs", module="kernels/axpy_runs.py")
    x, y = _inputs(1000)
    z = axpy(x=x, y=y)  # the shape from the spec's shape_of
    assert isinstance(z, torch.Tensor)
    torch.testing.assert_close(z, ALPHA * x + y)
    launch = ops.bound_launch("axpy_runs", torch.float32, (1000,), x.get_device())
    assert launch is not None  # tlab's kernel ran, under the tuned config
    torch.testing.assert_close(axpy({"x": x, "y": y}), z)  # a dict works the same, memoised
    assert ops.bound_launch("axpy_runs", torch.float32, (1000,), x.get_device()) is launch
    far_x, far_y = _inputs(5000)  # more than 2x from any tuned shape: the PyTorch op
    torch.testing.assert_close(axpy(x=far_x, y=far_y), ALPHA * far_x + far_y)
    assert ops.bound_launch("axpy_runs", torch.float32, (5000,), far_x.get_device()) is None
    assert "tuned here: 2.00x" in ops.explain("axpy_runs", "fp32", "1000", gpu=SLUG).reason


def test_the_op_answers_where_your_kernel_cannot_stand_in(project):
    """At a tuned shape: a strided view (axpy indexes its memory as one run of n elements, as
    make_inputs' tensors are laid out) and a call autograd needs both get the PyTorch op,
    right and with a gradient; a tensor by position is one line naming how inputs are given."""
    _kernel_module(project, "axpy_aside")
    _tuned_at_1000(project, "axpy_aside")
    axpy = ops.kernel("axpy_aside", module="kernels/axpy_aside.py")
    calls = []
    real_launch = axpy._bind

    def counted(config):
        launch = real_launch(config)
        return lambda inputs: calls.append(1) or launch(inputs)

    axpy._bind = counted
    wide, y = _inputs(2000)
    x = wide[::2]  # 1000 elements, every other one
    torch.testing.assert_close(axpy(x=x, y=y[:1000]), ALPHA * x + y[:1000])
    assert calls == []
    w = x.clone().requires_grad_()
    z = axpy(x=w, y=y[:1000])
    z.sum().backward()
    torch.testing.assert_close(w.grad, torch.full_like(w, ALPHA))
    assert calls == []
    torch.testing.assert_close(axpy(x=x.contiguous(), y=y[:1000]), ALPHA * x + y[:1000])
    assert calls == [1]  # as given, contiguous and without autograd: tlab's kernel
    with pytest.raises(TlabError, match="axpy_aside takes its inputs by name .* got a Tensor"):
        axpy(x)


def test_under_autocast_your_kernel_gives_way_to_its_op(project):
    """torch.autocast sets the dtypes of the op's matmuls and reductions, which a kernel run at
    its inputs' dtype would not follow: at a tuned shape the op answers, eagerly and in a
    compiled function; outside autocast, tlab's kernel again."""
    _kernel_module(project, "axpy_autocast")
    _tuned_at_1000(project, "axpy_autocast")
    axpy = ops.kernel("axpy_autocast", module="kernels/axpy_autocast.py")
    calls = []
    real_launch = axpy._bind
    axpy._bind = lambda config: (lambda inputs: calls.append(1) or real_launch(config)(inputs))
    x, y = _inputs(1000)
    compiled = torch.compile(lambda x, y: axpy(x=x, y=y) + 1)
    with torch.no_grad():
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            torch.testing.assert_close(axpy(x=x, y=y), ALPHA * x + y)
            torch.testing.assert_close(compiled(x, y), ALPHA * x + y + 1)
        assert calls == []
        torch.testing.assert_close(axpy(x=x, y=y), ALPHA * x + y)
    assert calls == [1]


def test_without_shape_of_the_sizes_come_as_keywords_named_by_the_dims(project):
    _kernel_module(project, "axpy_sized", shape_of=False)
    _tuned_at_1000(project, "axpy_sized")
    axpy = ops.kernel("axpy_sized", module=str(project / "kernels" / "axpy_sized.py"))
    x, y = _inputs(1000)
    torch.testing.assert_close(axpy(x=x, y=y, n=1000), ALPHA * x + y)
    assert ops.bound_launch("axpy_sized", torch.float32, (1000,), x.get_device()) is not None
    with pytest.raises(TlabError, match=r"axpy_sized needs its sizes as keywords \(n=\.\.\.\)"):
        axpy(x=x, y=y)


def test_nothing_tuned_calls_the_op(project):
    _kernel_module(project, "axpy_untuned")
    axpy = ops.kernel("axpy_untuned", module="kernels/axpy_untuned.py")
    x, y = _inputs(1000)
    torch.testing.assert_close(axpy(x=x, y=y), ALPHA * x + y)
    assert ops.bound_launch("axpy_untuned", torch.float32, (1000,), x.get_device()) is None


def test_a_configs_folder_of_your_choice(project, tmp_path_factory):
    _kernel_module(project, "axpy_elsewhere")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    _tuned_at_1000(elsewhere, "axpy_elsewhere")
    axpy = ops.kernel("axpy_elsewhere", module="kernels/axpy_elsewhere.py",
                      configs=elsewhere / "configs")
    x, y = _inputs(1000)
    torch.testing.assert_close(axpy(x=x, y=y), ALPHA * x + y)
    assert ops.bound_launch("axpy_elsewhere", torch.float32, (1000,), x.get_device(),
                            directory=(elsewhere / "configs").resolve()) is not None


def test_lookup_reads_the_configs_of_a_loaded_kernels_project(project):
    """Before: a user kernel's lookup read tlab's own configs/ (or $TLAB_CONFIG_DIR), so its
    winners came back only with the internals (`TLAB_CONFIG_DIR`, `gpu=`)."""
    from tritonbench_lab.kernels import load_kernel_module

    load_kernel_module(_kernel_module(project, "axpy_loaded"))
    _tuned_at_1000(project, "axpy_loaded")
    assert tuned.lookup("axpy_loaded", torch.float32, n=1000) == {"BLOCK": 256, "num_warps": 2}


def test_a_kernel_the_current_folders_pyproject_lists_needs_no_loading(project):
    _kernel_module(project, "axpy_listed")
    (project / "pyproject.toml").write_text(
        '[tool.tlab]\nkernel-modules = ["kernels/axpy_listed.py"]\n')
    _tuned_at_1000(project, "axpy_listed")
    assert tuned.lookup("axpy_listed", "fp32", n=1000) == {"BLOCK": 256, "num_warps": 2}
    x, y = _inputs(1000)
    torch.testing.assert_close(ops.kernel("axpy_listed")(x=x, y=y), ALPHA * x + y)
    assert ops.bound_launch("axpy_listed", torch.float32, (1000,), x.get_device()) is not None


def test_what_cannot_be_served_is_one_line(project):
    with pytest.raises(TlabError, match="unknown kernel 'nobody'.*once its module is loaded "
                       r".*\[tool.tlab\] kernel-modules in the current folder's "
                       "pyproject.toml") as caught:
        ops.kernel("nobody")
    assert "\n" not in str(caught.value)
    path = _kernel_module(project, "axpy_named")
    with pytest.raises(TlabError, match="defines no kernel 'other' .it defines axpy_named."):
        ops.kernel("other", module=path)
    source = EXAMPLE.replace('name="axpy"', 'name="axpy_no_op"').replace(
        'baselines={"torch": torch_axpy}', 'baselines={"mine": torch_axpy}')
    (project / "no_op.py").write_text(source)
    with pytest.raises(TlabError, match="axpy_no_op has no 'torch' baseline"):
        ops.kernel("axpy_no_op", module="no_op.py")


def test_a_call_missing_an_input_names_the_inputs_the_kernel_takes(project):
    """Not a bare KeyError from the baseline: the names make_inputs gives, and the missing."""
    path = _kernel_module(project, "axpy_missing")
    axpy = ops.kernel("axpy_missing", module=path)
    x, _ = _inputs(1000)
    with pytest.raises(TlabError, match="axpy_missing takes x, y .as make_inputs names them.; "
                                        "missing: y"):
        axpy(x=x)


def test_a_misspelt_input_is_refused_naming_what_the_kernel_takes(project):
    """An input of a name the kernel never reads was ignored: a misspelling went unnoticed."""
    path = _kernel_module(project, "axpy_extra")
    axpy = ops.kernel("axpy_extra", module=path)
    x, y = _inputs(1000)
    for call in (lambda: axpy(x=x, y=y, z=x),
                 lambda: torch.compile(lambda x, y: axpy(x=x, y=y, z=x), fullgraph=True,
                                       backend="eager")(x, y)):
        with pytest.raises(Exception, match=r"axpy_extra takes x, y .* as keywords; "
                                            r"unknown: z"):
            call()
    torch.testing.assert_close(axpy(x=x, y=y, n=1000), axpy(x=x, y=y))  # a dim by name


# --- under torch.compile --------------------------------------------------------------------

def _opaque(calls: set[str], name: str) -> set[str]:
    """The opaque nodes of `name`'s registered op among a traced graph's calls."""
    return {c for c in calls if c.startswith(f"tlab.kernel_{name}_") and c.endswith("_eager.default")}


def test_your_kernel_compiles_whole_and_runs_inside_the_graph_where_it_beats_the_op(project):
    """Before: dynamo broke the graph at every call (the decision reads a clock and files)."""
    _kernel_module(project, "axpy_compiled")
    _tuned_at_1000(project, "axpy_compiled")
    axpy = ops.kernel("axpy_compiled", module="kernels/axpy_compiled.py")

    def block(x, y):
        return axpy(x=x, y=y).relu()

    x, y = _inputs(1000)
    assert torch._dynamo.explain(block)(x, y).graph_break_count == 0
    library.opaque_calls.clear()
    out, calls = _traced(block, (x, y))
    torch.testing.assert_close(out, (ALPHA * x + y).relu())
    assert len(_opaque(calls, "axpy_compiled")) == 1  # tuned here: decided when the graph runs
    assert sum(library.opaque_calls.values()) == 1
    assert ops.bound_launch("axpy_compiled", torch.float32, (1000,), x.get_device()) is not None
    far_x, far_y = _inputs(5000)  # untuned: the PyTorch op itself, for the compiler to fuse
    out, calls = _traced(block, (far_x, far_y))
    torch.testing.assert_close(out, (ALPHA * far_x + far_y).relu())
    assert not _opaque(calls, "axpy_compiled") and "aten.add.Tensor" in calls


def test_a_dynamic_size_given_as_a_keyword_is_decided_per_size_it_takes(project):
    _kernel_module(project, "axpy_dynamic", shape_of=False)
    _tuned_at_1000(project, "axpy_dynamic")
    axpy = ops.kernel("axpy_dynamic", module="kernels/axpy_dynamic.py")

    def block(x, y):
        return axpy(x=x, y=y, n=x.numel()) * 2

    _, calls = _traced(block, _inputs(1000), dynamic=True)
    assert len(_opaque(calls, "axpy_dynamic")) == 1
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True, dynamic=True)
    for n in (1000, 5000, 1000):
        x, y = _inputs(n)
        torch.testing.assert_close(compiled(x, y), 2 * (ALPHA * x + y))
    device = _inputs(1)[0].get_device()
    assert ops.bound_launch("axpy_dynamic", torch.float32, (1000,), device) is not None
    assert ops.bound_launch("axpy_dynamic", torch.float32, (5000,), device) is None


def test_under_torch_compile_autograd_gets_the_op_and_its_gradient(project):
    _kernel_module(project, "axpy_grad")
    _tuned_at_1000(project, "axpy_grad")
    axpy = ops.kernel("axpy_grad", module="kernels/axpy_grad.py")
    x, y = _inputs(1000)
    w = x.clone().requires_grad_()
    out, calls = _traced(lambda w, y: axpy(x=w, y=y), (w, y))
    assert not _opaque(calls, "axpy_grad")
    out.sum().backward()
    torch.testing.assert_close(w.grad, torch.full_like(w, ALPHA))


def test_a_call_packs_into_the_registered_op_and_back_unchanged():
    x, y = torch.randn(3), torch.randn(4)
    inputs = {"x": x, "n": 7, "mode": "a;b=c:t\x1fd", "flag": True, "none": None,
              "alpha": 0.5, "y": y, "off": False}
    tensors, ints, floats, layout = own_kernels.pack(inputs)
    assert tensors == [x, y] and ints == [7] and floats == [0.5]
    back = own_kernels.unpack(tensors, ints, floats, layout)
    assert list(back) == list(inputs)  # the order of the call
    assert all(back[k] is v or back[k] == v for k, v in inputs.items())
    assert own_kernels.pack({"x": x, "sizes": [1, 2]}) is None  # a list: the op, traced


def test_each_configs_folder_has_a_registered_op_of_its_own(project, tmp_path_factory):
    path = _kernel_module(project, "axpy_folders")
    mine = ops.kernel("axpy_folders", module=path)
    other = ops.kernel("axpy_folders", module=path, configs=tmp_path_factory.mktemp("other"))
    assert mine._registered is not other._registered
    assert ops.kernel("axpy_folders", module=path)._registered is mine._registered


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_inductor_compiles_a_block_with_your_kernel_and_runs_it_in_the_graph(project, mode):
    """Inductor itself (AOTAutograd's test above keeps the graph eager), plainly and captured
    in CUDA graphs (where the captured launch runs)."""
    name = f"axpy_inductor_{mode.replace('-', '_')}"
    _kernel_module(project, name)
    _tuned_at_1000(project, name)
    axpy = ops.kernel(name, module=f"kernels/{name}.py")

    def block(x, y):
        return axpy(x=x.relu(), y=y) * 2

    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True, mode=mode)
    library.opaque_calls.clear()
    for _ in range(3):  # reduce-overhead: warm-up, record, replay
        x, y = _inputs(1000)
        torch.testing.assert_close(compiled(x, y), 2 * (ALPHA * x.relu() + y))
    assert library.opaque_calls  # tlab's kernel, decided inside the graph


def test_torch_export_keeps_your_kernel_with_a_symbolic_size_keyword(project):
    """Non-strict export (the default) hands a size in as a torch.SymInt, not an int: it was
    taken for an input the op cannot carry, and the kernel silently left the graph."""
    _kernel_module(project, "axpy_export", shape_of=False)
    _tuned_at_1000(project, "axpy_export")
    axpy = ops.kernel("axpy_export", module="kernels/axpy_export.py")

    class Block(torch.nn.Module):
        def forward(self, x, y):
            return axpy(x=x, y=y, n=x.numel()) + 1

    n = torch.export.Dim("n", min=2)
    exported = torch.export.export(Block(), _inputs(1000), dynamic_shapes=({0: n}, {0: n}))
    assert any(t.startswith("tlab.kernel_axpy_export_") for t in _targets(exported.graph))
    x, y = _inputs(3000)
    torch.testing.assert_close(exported.module()(x, y), ALPHA * x + y + 1)


def test_an_input_that_would_not_come_back_as_given_gets_the_op_in_a_graph():
    """An enum (a subclass of str or int) would come back a plain value, or not parse."""
    import enum

    class Mode(str, enum.Enum):
        FAST = "fast"

    class Level(enum.IntEnum):
        ONE = 1

    x = torch.randn(3)
    assert own_kernels.pack({"x": x, "mode": Mode.FAST}) is None
    assert own_kernels.pack({"x": x, "level": Level.ONE}) is None


def test_a_kernel_loaded_again_runs_its_new_code_eagerly_and_compiled(project):
    """Before: the memo kept the first module's launch at a tuned shape, and a compiled
    graph's registered op ran the first TunedKernel made."""
    path = _kernel_module(project, "axpy_edited")
    _tuned_at_1000(project, "axpy_edited")
    x, y = _inputs(1000)
    torch.testing.assert_close(ops.kernel("axpy_edited", module=path)(x=x, y=y), ALPHA * x + y)
    edited = project / "kernels" / "v2" / "axpy_edited.py"
    edited.parent.mkdir()
    edited.write_text(path.read_text().replace("ALPHA = 0.75", "ALPHA = 0.5"))
    axpy = ops.kernel("axpy_edited", module=edited)
    torch.testing.assert_close(axpy(x=x, y=y), 0.5 * x + y)
    out, _ = _traced(lambda x, y: axpy(x=x, y=y), (x, y))
    torch.testing.assert_close(out, 0.5 * x + y)
    assert ops.bound_launch("axpy_edited", torch.float32, (1000,), x.get_device()) is not None


def test_a_graph_node_never_hands_back_memory_of_its_inputs_or_twice_the_same(project,
                                                                              monkeypatch):
    """The registered op promises new tensors and the compiler plans on it: an output of the
    PyTorch op that is an input, a view of one, or another output is copied."""
    path = _kernel_module(project, "axpy_aliased")
    axpy = ops.kernel("axpy_aliased", module=path)
    x, y = _inputs(1000)
    view = x.view(-1)
    monkeypatch.setattr(axpy, "_op", lambda inputs: (view, inputs["y"], view))
    tensors, ints, floats, layout = own_kernels.pack({"x": x, "y": y})
    out = axpy._run_packed(tensors, ints, floats, layout)
    memory = [t.untyped_storage().data_ptr() for t in (x, y, *out)]
    assert len(set(memory)) == 5
    for got, want in zip(out, (x, y, x), strict=True):
        torch.testing.assert_close(got, want)


def test_a_call_missing_an_input_under_compile_names_the_inputs_the_kernel_takes(project):
    _kernel_module(project, "axpy_missing_traced")
    axpy = ops.kernel("axpy_missing_traced", module="kernels/axpy_missing_traced.py")
    x, _ = _inputs(1000)
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"axpy_missing_traced takes x, y \(as make_inputs names "
                                        r"them\); missing: y"):
        torch.compile(lambda x: axpy(x=x), fullgraph=True, backend="eager")(x)


def test_under_vmap_the_op_runs(project):
    """A launch cannot read vmap's batched tensors (it failed on their storage)."""
    _kernel_module(project, "axpy_vmap")
    _tuned_at_1000(project, "axpy_vmap")
    axpy = ops.kernel("axpy_vmap", module="kernels/axpy_vmap.py")
    x, y = (torch.randn(4, 1000, generator=torch.Generator().manual_seed(s)).to(DEVICE)
            for s in (1, 2))
    torch.testing.assert_close(torch.func.vmap(lambda a, b: axpy(x=a, y=b))(x, y),
                               ALPHA * x + y)


def test_fake_tensors_and_make_fx_see_the_registered_op(project):
    """Under a TorchDispatchMode the call is the registered op: a fake result of the op's
    shape; make_fx's graph holds the op's node, and runs tlab's kernel when replayed."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    _kernel_module(project, "axpy_traced")
    _tuned_at_1000(project, "axpy_traced")
    axpy = ops.kernel("axpy_traced", module="kernels/axpy_traced.py")
    x, y = _inputs(1000)
    with torch.no_grad(), FakeTensorMode() as mode:
        out = axpy(x=mode.from_tensor(x), y=mode.from_tensor(y))
    assert isinstance(out, FakeTensor) and out.shape == x.shape
    with torch.no_grad():
        graph = make_fx(lambda a, b: axpy(x=a, y=b), tracing_mode="symbolic")(x, y)
        assert any(t.startswith("tlab.kernel_axpy_traced_") for t in _targets(graph.graph))
        library.opaque_calls.clear()
        torch.testing.assert_close(graph(x, y), ALPHA * x + y)
    assert sum(library.opaque_calls.values()) == 1


def test_meta_tensors_get_the_ops_meta_result(project):
    _kernel_module(project, "axpy_meta")
    _tuned_at_1000(project, "axpy_meta")
    axpy = ops.kernel("axpy_meta", module="kernels/axpy_meta.py")
    x, y = (t.to("meta") for t in _inputs(1000))
    with torch.no_grad():
        out = axpy(x=x, y=y)
    assert out.is_meta and out.shape == x.shape


def test_a_subclass_that_dispatches_itself_gets_the_op(project):
    from helpers.wrapper_tensor import Wrapped

    _kernel_module(project, "axpy_wrapped")
    _tuned_at_1000(project, "axpy_wrapped")
    axpy = ops.kernel("axpy_wrapped", module="kernels/axpy_wrapped.py")
    x, y = _inputs(1000)
    with torch.no_grad():
        out = axpy(x=Wrapped(x), y=Wrapped(y))
    assert isinstance(out, Wrapped)
    torch.testing.assert_close(out.inner, ALPHA * x + y)


def test_flop_counter_counts_your_kernel_by_its_cost_model(project):
    """Where your kernel runs, FlopCounterMode sees its opaque node and counts the flops of
    its spec's cost (axpy: 2n), as it counts the PyTorch op's where the op runs (aten.mul and
    aten.add have no formula: nothing)."""
    from torch.utils.flop_counter import FlopCounterMode

    _kernel_module(project, "axpy_flops")
    _tuned_at_1000(project, "axpy_flops")
    axpy = ops.kernel("axpy_flops", module="kernels/axpy_flops.py")
    library.opaque_calls.clear()
    with torch.no_grad():
        for n in (1000, 5000):  # tuned; more than 2x from any tuned shape: the op
            x, y = _inputs(n)
            with FlopCounterMode(display=False) as counted:
                torch.testing.assert_close(axpy(x=x, y=y), ALPHA * x + y)
            assert counted.get_total_flops() == (2 * n if n == 1000 else 0)
    assert sum(library.opaque_calls.values()) == 1
