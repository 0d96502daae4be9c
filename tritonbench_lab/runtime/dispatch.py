"""How `tritonbench_lab.ops` decides, per call, between tlab's kernel and the PyTorch op, and
the memo of those decisions.

Each call is resolved once per (kernel, dtype, shape, device) to a Choice, then memoised:

- tlab's kernel, under the config tuned for that shape on that GPU, where the committed
  measurements say it beats the PyTorch op: at the exact shape, when its time there is below
  the op's; at the nearest tuned shape of the same alignment class (tuned.lookup's rule), when
  that shape is within NEAR of this one and the kernel beat the op there by at least
  NEAR_MARGIN (a config carried to another shape keeps most, not all, of its lead);
- otherwise the PyTorch op itself: untuned shapes far from any tuned one, inputs the kernel
  cannot take (its spec's check_shape), CPU tensors without Triton's interpreter, no configs.

"Time" means two things, and the rule is applied to each. Called eagerly, one op after
another from Python, a call takes the longer of its GPU time and its host time (eager_time,
which reckons with a host slower than the one that timed it, HOST_SLACK): a kernel of a few
microseconds waits for its launch, and tlab's launch through Triton holds the host longer
than most PyTorch ops. Captured in a CUDA graph, launches replay without host time, and GPU
time alone decides. Where the two choices differ, each call asks whether its stream is
capturing. From a nearby tuned shape, GPU times carry over scaled by the work
(work_ratio), host times as they are. Configs written before the sweeps timed host times
have none; there eager calls follow the GPU times.

A third rule holds inside a torch.compile graph, where the op stands for Inductor's code: the
kernel must also beat the faster of the op and its compiled form (the `compiled` baseline of
the same sweep) by FUSED_MARGIN, since Inductor fuses the op with its neighbours; and in a
graph run without CUDA graphs its launch must hide under its own GPU time on a host
HOST_SLACK slower, since Inductor's launches are short and the graph's GPU time hides them
(in_compiled_graph; runtime/library.py asks it while a graph is traced).

`explain(kernel, dtype, shape)` and `tlab explain` show the choice and why; each choice is also
logged once at debug level (logger "tritonbench_lab.ops"). The configs are looked at again at
most once every RECHECK_S seconds, and choices are made afresh when a file changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import triton

from tritonbench_lab.data.portability import describe
from tritonbench_lab.data.records import (
    COMPILED,
    HERE,
    NEARBY,
    ON_CPU,
    REFUSED,
    TFLOPS,
    TORCH_OP,
    TRITON,
    UNTUNED,
    parse_config_text,
    triton_minor,
)
from tritonbench_lab.errors import TlabError
from tritonbench_lab.kernels import get_spec
from tritonbench_lab.runtime import recording
from tritonbench_lab.shapes import Shape, shape_sizes, shape_text
from tritonbench_lab.spec import parse_dtype, triton_interpreting
from tritonbench_lab.tuned import (
    alignment_class,
    check_dtype,
    config_dir,
    current_gpu_slug,
    dtype_key,
    find,
    ordered_sizes,
)

log = logging.getLogger("tritonbench_lab.ops")

# A tuned shape counts as near when its sizes are within a factor of NEAR in all (the sum of
# |log2| ratios over dims is at most log2(NEAR)), and tlab's kernel is then used only where it
# beat the op there by NEAR_MARGIN or more.
NEAR = 2.0
NEAR_MARGIN = 1.10
# Inside a torch.compile graph the PyTorch op stands for Inductor's code, which fuses an op
# with its neighbours (two norms of one tensor in one read, a residual add in its producer's
# kernel, a matmul's bias in the pointwise kernel after it) and so beats the op timed alone:
# there tlab's kernel runs only where it beat the faster of the op and its compiled form by
# FUSED_MARGIN. Matmuls too: a small lead timed alone can turn into a loss inside a compiled
# block (lab/compiled_block_ablation.py keeps each kernel out of one in turn).
FUSED_MARGIN = 1.10
RECHECK_S = 1.0
_monotonic = time.monotonic  # bound once: plan reads it on every call


@dataclass(frozen=True)
class Choice:
    """What ops runs for one kernel, dtype, shape and device, and why: `provider` for a call
    from Python (eager), `captured` for a call while a CUDA graph is being captured."""

    kernel: str
    dtype: str
    shape: str
    provider: str  # TRITON (tlab's kernel) or TORCH_OP (the PyTorch op), as rows name them
    config: dict | None  # the tuned config when either provider is triton
    tuned_shape: str | None  # the row the decision rests on
    speedup: float | None  # the op's GPU time / the kernel's, measured at tuned_shape
    reason: str
    captured: str = TORCH_OP  # under capture the launches replay without host time
    eager_speedup: float | None = None  # the same with each call's host time (eager_time)
    tuned: str = UNTUNED  # HERE, NEARBY (within NEAR) or UNTUNED: what the rows are to this shape
    # the faster baseline's GPU time (the op or torch.compile of it) / the kernel's there
    baseline_speedup: float | None = None
    compiled: str = TORCH_OP  # inside a torch.compile graph (Inductor's code beside it)
    compiled_captured: str = TORCH_OP  # the same, the graph captured in CUDA graphs

    @property
    def uses_triton(self) -> bool:
        return self.provider == TRITON

    @property
    def captured_uses_triton(self) -> bool:
        return self.captured == TRITON

    def compiled_uses_triton(self, captured: bool) -> bool:
        """Whether a torch.compile graph runs tlab's kernel here (`captured`: in CUDA graphs,
        mode="reduce-overhead")."""
        return (self.compiled_captured if captured else self.compiled) == TRITON


# Host times as a host this much slower than the one that took them would have them: the
# configs carry one machine's host times, and a user's host (or the same cloud GPU's next
# lease) may be slower, so an eager choice of tlab's kernel must hold there too.
HOST_SLACK = 2.0


def eager_time(gpu_ms: float, host_ms: float | None, slack: float = 1.0) -> float | None:
    """The time of a call in a program that calls one op after another from Python: the
    longer of its GPU time and its host time (the launch's own; a short kernel's GPU waits
    for it), on a host `slack` times slower than the one that took it. None when the host
    time was not recorded (configs from before it was)."""
    return None if host_ms is None else max(gpu_ms, host_ms * slack)


def eager_speedup(row, scale: float = 1.0, slack: float = 1.0) -> float | None:
    """The PyTorch op's eager time over tlab's kernel's at a configs row (Winner), its GPU
    times scaled by `scale` (work_ratio, for a nearby shape), its host times by `slack`
    (HOST_SLACK: the decision's); None without host times."""
    if row.op_p50_ms is None:
        return None
    mine = eager_time(row.p50_ms * scale, row.host_ms, slack)
    theirs = eager_time(row.op_p50_ms * scale, row.op_host_ms, slack)
    return theirs / mine if mine and theirs else None


def work_ratio(kernel: str, dtype, sizes: tuple[int, ...], tuned: tuple[int, ...]) -> float:
    """The work of a call at `sizes` over that at the tuned shape, by the kernel's cost model
    (FLOPs for a TFLOP/s kernel, bytes moved for a GB/s one): how GPU times carry to a nearby
    shape, where host times stay as they are."""
    spec = get_spec(kernel)
    dims, dtype = len(spec.dims), parse_dtype(dtype_key(dtype))
    here, there = (spec.cost(spec.shape(*s[:dims]), dtype) for s in (sizes, tuned))
    if spec.metric == TFLOPS:
        return here.flops / there.flops
    return here.bytes / there.bytes


def decide(kernel: str, dtype, sizes: tuple[int, ...], *, gpu: str | None = None,
           directory: Path | None = None) -> Choice:
    """The choice for these sizes (in the kernel's dims order), from the configs only. The
    same rule twice: on GPU times (what a CUDA graph replays), and on eager times, where the
    configs record both sides' host time (else eager calls follow the GPU times). Where the
    configs are another GPU's (trusted here by the portability measurement), the reason says
    whose and what the trust rests on; where the row was tuned under another Triton minor
    version, that its times are another compiler's (the choice stands: the config runs)."""
    found = find(kernel, dtype, sizes, gpu=gpu, directory=directory)
    choice, row, notes = _decide(kernel, dtype, sizes, found), found.row, []
    if row is not None and found.passed_over is not None:
        notes.append(f"passed over a nearer shape: {found.passed_over}")
    if found.borrowed is not None:
        notes.append(f"from {describe(found.borrowed)}")
    if row is not None and triton_minor(row.triton) != triton_minor(triton.__version__):
        # the choice stands (a config valid then runs now), but its times are another
        # compiler's: say so where a user looks
        notes.append(f"tuned under Triton {row.triton}, this is {triton.__version__}: its "
                     "times may not hold here (`tlab check` calls the row stale: re-tune)")
    return dataclasses.replace(choice, reason="; ".join((choice.reason, *notes))) if notes else choice


def _decide(kernel: str, dtype, sizes: tuple[int, ...], found) -> Choice:
    shape = shape_text(sizes)
    name = dtype_key(dtype)
    row = found.row
    if row is None and found.passed_over is not None:
        return Choice(kernel, name, shape, TORCH_OP, None, None, None,
                      f"no tuned {name} config in {found.path.parent.name} runs at this shape "
                      f"(nearest: {found.passed_over})")
    if row is None:
        klass = "/".join(map(str, alignment_class(sizes)))
        # a project's root given for its configs folder (TLAB_CONFIG_DIR=root, not root/configs)
        inner = found.path.parent.parent / "configs"
        hint = f"; {inner} holds configs: name that folder" if inner.is_dir() else ""
        return Choice(kernel, name, shape, TORCH_OP, None, None, None,
                      f"no {name} shape of alignment class {klass} (each size divisible by "
                      f"16 / 8 / neither) tuned in {found.path.parent.name}{hint}")
    if row.op_p50_ms is None:
        return Choice(kernel, name, shape, TORCH_OP, None, row.shape, None,
                      f"the PyTorch op was not timed at {row.shape}",
                      tuned=HERE if found.exact else UNTUNED)
    speedup = row.op_p50_ms / row.p50_ms
    scale = 1.0 if found.exact else work_ratio(kernel, dtype, sizes, shape_sizes(row.shape))
    eager = eager_speedup(row, scale, HOST_SLACK)
    if not found.exact and found.distance > math.log2(NEAR) + 1e-9:
        return Choice(kernel, name, shape, TORCH_OP, None, row.shape, speedup,
                      f"the nearest tuned shape {row.shape} is more than {NEAR:g}x away",
                      eager_speedup=eager)
    if found.exact:
        wins = speedup > 1.0
        reason = (f"tuned here: {ratio_text(speedup)} the PyTorch op" if wins else
                  f"tuned here, and the PyTorch op was faster ({ratio_text(speedup)})")
    else:
        wins = speedup >= NEAR_MARGIN
        ran = ratio_text(speedup)
        reason = (f"nearest tuned shape {row.shape}: {ran} the PyTorch op there" if wins
                  else f"at the nearest tuned shape {row.shape} tlab's kernel ran {ran} "
                  f"the PyTorch op, less than the {NEAR_MARGIN:.2f}x a nearby shape needs")
    eager_wins = wins if eager is None else (eager > 1.0 if found.exact else eager >= NEAR_MARGIN)
    if eager is None:
        if found.path.parent.name != "interpreter":  # host times are a GPU's
            reason += ("; no host times recorded there, so eager calls go by GPU time too "
                       "(`tlab host-times` on that GPU records them)")
    else:
        scaled = "" if found.exact else f"; GPU times x{scale:.2f}, this shape's work"
        reason += (f"; called eagerly {ratio_text(eager)} (a call's host time "
                   f"{row.host_ms * 1e3:.0f} us, the op's {row.op_host_ms * 1e3:.0f} us, each "
                   f"x{HOST_SLACK:g} for a slower host{scaled})")
        if eager_wins != wins:
            reason += (f": eager calls run {'tlab' if eager_wins else 'the op'}, calls captured "
                       f"in a CUDA graph {'tlab' if wins else 'the op'}")
    config = parse_config_text(row.config) if wins or eager_wins else None
    baseline = row.baseline_p50_ms / row.p50_ms if row.baseline_p50_ms else None
    fused, fused_reason = _compiled_rule(speedup, baseline, found.exact, row.best_baseline)
    reason += fused_reason
    # A compiled graph run without CUDA graphs launches Inductor's kernels in a few us each,
    # so its GPU time hides its host time; a tlab node whose launch (on a host HOST_SLACK
    # slower) outlasts its own GPU time would leave the GPU waiting on it there.
    hidden = row.host_ms is None or row.host_ms * HOST_SLACK <= row.p50_ms * scale
    if eager_wins and fused and not hidden:
        reason += (f"; not in a graph run without CUDA graphs: its launch ({row.host_ms * 1e3:.0f}"
                   f" us, x{HOST_SLACK:g}) outlasts its GPU time ({row.p50_ms * scale * 1e3:.0f}"
                   " us)")
    return Choice(kernel, name, shape, TRITON if eager_wins else TORCH_OP, config, row.shape,
                  speedup, reason, TRITON if wins else TORCH_OP, eager,
                  HERE if found.exact else NEARBY, baseline,
                  TRITON if eager_wins and fused and hidden else TORCH_OP,
                  TRITON if wins and fused else TORCH_OP)


def ratio_text(ratio: float) -> str:
    """A speed ratio as the reasons say it: two decimals, or two significant digits for a
    ratio under a hundredth (an interpreted kernel against a PyTorch op on the CPU)."""
    return f"{ratio:.2f}x" if ratio >= 0.01 else f"{ratio:.2g}x"


def _compiled_rule(speedup: float, baseline: float | None, exact: bool, best: str = ""
                   ) -> tuple[bool, str]:
    """Whether the kernel's GPU time earns it a place inside a compiled graph (FUSED_MARGIN),
    and the reason's words for it; the eager or captured rule must hold as well. `baseline`
    is the speedup over the fastest baseline the sweep timed, `best` its name."""
    against = speedup if baseline is None else min(speedup, baseline)
    margin = FUSED_MARGIN if exact else max(FUSED_MARGIN, NEAR_MARGIN)
    fused, need = against >= margin, f"{margin:.2f}x"
    named = {"": "", TORCH_OP: " (the PyTorch op)", COMPILED: " (torch.compile's)"}
    what = ("the PyTorch op" if baseline is None else
            f"the fastest baseline timed{named.get(best, f' ({best})')}")
    verdict = "" if fused else ": the op there, for Inductor to compile"
    shown = ratio_text(against)
    if shown == need:  # 1.0978x read as "1.10x (needs 1.10x): the op": three decimals say why
        shown = f"{against:.3f}x"
    return fused, f"; inside torch.compile {shown} {what} (needs {need}){verdict}"


def explain(kernel: str, dtype, shape: str | int | tuple[int, ...] | dict | Shape, *,
            gpu: str | None = None, directory: Path | None = None) -> Choice:
    """Why ops would call tlab's kernel or the PyTorch op for this shape: '4096x4096x512', its
    sizes in the kernel's dims order (a tuple, or an int for a kernel of one dim), a Shape, or
    sizes by name ({'M': 4096, 'N': 4096, 'K': 512}). An unknown kernel, a shape of the wrong
    number of sizes or a dtype the kernel does not take is a TlabError, as `tlab explain`
    says it."""
    spec = get_spec(kernel)
    sizes = _sizes_of(kernel, shape)
    spec.shape(*sizes)  # the right number of sizes
    check_dtype(kernel, dtype)
    if gpu is None and not triton_interpreting() and not torch.cuda.is_available():
        return Choice(kernel, dtype_key(dtype), shape_text(sizes), TORCH_OP, None, None, None,
                      "no GPU, and Triton's interpreter is off (TRITON_INTERPRET=1 turns it "
                      "on): ops calls the PyTorch op for CPU tensors", tuned=ON_CPU)
    return decide(kernel, dtype, sizes, gpu=gpu, directory=directory)


def _sizes_of(kernel: str, shape) -> tuple[int, ...]:
    if isinstance(shape, str):
        return shape_sizes(shape)
    if isinstance(shape, Shape):
        shape = dict(shape.dims)
    if isinstance(shape, dict):
        return ordered_sizes(kernel, shape)
    if isinstance(shape, int):
        return (shape,)
    if isinstance(shape, (tuple, list)) and all(isinstance(n, int) for n in shape):
        return tuple(shape)
    raise TlabError(f"explain({kernel!r}, ..., shape={shape!r}): a shape is '4096x4096x512', "
                    "a tuple or int of sizes in the kernel's dims order, a Shape, or a dict of "
                    "sizes by dim name")


# --- the memo -----------------------------------------------------------------------------

_plans: dict[tuple, tuple] = {}  # key -> (eager, captured): a bound launch, or None for the op
_compiled: dict[tuple, tuple] = {}  # key -> (in a compiled graph, and captured): tlab's kernel?
# ops.py's keys of calls known to run the PyTorch op eagerly -> what such a call asks before
# it skips the decision (op_eagerly). Forgotten with the plans.
op_only: dict = {}
remembered: list = [None]  # what remember's last call found (op_eagerly's; ops.bind reads it)
_slugs: dict[int, str] = {}  # CUDA device index (-1: the CPU) -> GPU slug
# [when last looked at, the default configs folder then, until when ops' fast path holds]
_file_state: list = [0.0, None, 0.0]
_folders: dict[Path, tuple] = {}  # each folder choices were made from -> its files' mtimes


def clear() -> None:
    """Forget every choice (they are made again on the next calls)."""
    _plans.clear()
    _compiled.clear()
    op_only.clear()
    _slugs.clear()
    _folders.clear()
    _file_state[:] = [0.0, None, 0.0]


def _files(folder: Path) -> tuple:
    files = sorted(folder.glob("*/*.csv")) if folder.is_dir() else []
    return tuple((str(f), f.stat().st_mtime_ns) for f in files)


def _configs_changed(now: float) -> None:
    """Forget every choice when a configs file changed, or $TLAB_CONFIG_DIR did."""
    _file_state[0], _file_state[2] = now, now + RECHECK_S
    default = config_dir()
    changed = _file_state[1] not in (None, default)
    _file_state[1] = default
    for folder, seen in list(_folders.items()):
        _folders[folder] = _files(folder)
        changed = changed or _folders[folder] != seen
    if changed:
        _plans.clear()
        _compiled.clear()
        op_only.clear()


def _key(kernel: str, dtype, sizes: tuple[int, ...], device: int,
         directory: Path | None = None) -> tuple:
    return (kernel, dtype, sizes, device) if directory is None else (
        kernel, dtype, sizes, device, directory)


def op_eagerly(kernel: str, dtype, sizes: tuple[int, ...], device: int
               ) -> Callable[[], bool] | None:
    """For ops' fast path: None unless ops' plan for this call (made: plan) is the PyTorch op
    eagerly; else whether a call must still take the decision: never where the op runs in a
    CUDA graph too, else while the current stream captures one (tlab's kernel runs there)."""
    pair = _plans.get((kernel, dtype, sizes, device))
    if pair is None or pair[0] is not None:
        return None
    return never if pair[1] is None or device < 0 else stream_capturing


# What torch.cuda.is_current_stream_capturing calls, bound without its Python frame: ops' fast
# path asks it on every call where tlab's kernel runs captured (CUDA builds only: device >= 0).
stream_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing",
                           torch.cuda.is_current_stream_capturing)


def never() -> bool:
    return False


def remember(fast: tuple | None, kernel: str | None = None, dtype=None, sizes=None,
             device=None) -> None:
    """ops' fast path, after a call that ran the PyTorch op: let the next calls of `fast`
    skip the decision where the plan says the op eagerly (kernel None: no kernel applies),
    with what they ask first (op_eagerly)."""
    asks = never if kernel is None else op_eagerly(kernel, dtype, sizes, device)
    remembered[0] = asks
    if asks is None and kernel is not None and recording.recording() is not None:
        # planned tlab's kernel, yet this call's operands (a layout the bound config cannot
        # take: a TMA descriptor and a transposed weight) sent it to the op: record what ran
        recording.ran_op(kernel, dtype_key(dtype), shape_text(sizes), _slugs.get(device, ""))
    if fast is not None and asks is not None:
        op_only[fast] = asks


def in_compiled_graph(kernel: str, dtype, sizes: tuple[int, ...], device: int,
                      captured: bool, directory: Path | None = None) -> bool:
    """Whether a torch.compile graph runs tlab's kernel for a call ops has planned (plan):
    by the eager rule (captured: the GPU-time rule) and FUSED_MARGIN's; False where ops
    calls the PyTorch op for any reason (the CPU, a shape the kernel refuses)."""
    return _compiled.get(_key(kernel, dtype, sizes, device, directory), (False, False))[
        1 if captured else 0]


def tuned_state(folder: str | None = None) -> str:
    """A short hash of what a compiled graph's decisions rest on: the configs folder (default:
    config_dir()), its files' names and modification times, this GPU, and the source of the
    rules (this module, ops.py, library.py, own_kernels.py). Every registered op of a traced
    graph takes it as an argument (ops.py, own_kernels.py), so that torch.compile's caches,
    keyed by the graph dynamo traced, never hand back a graph decided on other configs.
    Dynamo calls it while tracing, without tracing it (assume_constant_result's mark), and
    keeps the value in the graph."""
    folder = Path(folder) if folder is not None else config_dir()
    digest = hashlib.sha1(f"{folder.resolve()}|{current_gpu_slug()}".encode())
    for name, mtime in _files(folder):
        digest.update(f"|{name}:{mtime}".encode())
    if not _rules:
        here = Path(__file__).parent
        for source in (here / "dispatch.py", here / "library.py", here / "own_kernels.py",
                       here.parent / "ops.py"):
            _rules.append(hashlib.sha1(source.read_bytes()).hexdigest())
    digest.update("|".join(_rules).encode())
    return digest.hexdigest()[:16]


# torch.compiler.assume_constant_result's whole effect, set without importing dynamo (1 s):
# dynamo runs tuned_state while tracing and bakes its result into the graph.
tuned_state._dynamo_marked_constant = True  # type: ignore[attr-defined]
_rules: list[str] = []  # the rules' source hashes, read once


def bound_launch(kernel: str, dtype, sizes: tuple[int, ...], device: int,
                 captured: bool = False, directory: Path | None = None) -> Callable | None:
    """The launcher ops bound for a call it has made, eager or under CUDA-graph capture
    (None: it calls the PyTorch op there); `directory`: the configs folder a TunedKernel
    was given."""
    return _plans[_key(kernel, dtype, sizes, device, directory)][1 if captured else 0]


def plan(kernel: str, dtype, sizes: tuple[int, ...], device: int,
          bind: Callable[[dict], Callable] | None = None,
          directory: Path | None = None) -> Callable | None:
    """The memoised choice for a call: a bound launch of tlab's kernel, or None for the
    PyTorch op. `device` is tensor.get_device() (-1 on the CPU): cheaper than .device. Where
    eager calls and captured ones are decided apart, each call asks which it is; where the
    device is not the current one, the launch runs with it current (_OnDevice).
    `directory`: the configs folder (default: config_dir(kernel))."""
    now = _monotonic()
    if now - _file_state[0] >= RECHECK_S:
        _configs_changed(now)
    key = (kernel, dtype, sizes, device) if directory is None else (
        kernel, dtype, sizes, device, directory)  # _key's, inline: every call builds it
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _choose(kernel, dtype, sizes, device, bind, directory)
        if plan[0] is None and plan[1] is not None:
            plan = _plans[key] = (_FirstCall(key, plan[1]), plan[1])
    eager, captured = plan
    launch = eager if eager is captured else captured if _capturing(device) else eager
    if launch is None or device < 0 or device == current_cuda_device():
        return launch
    return _OnDevice(device, launch)


class _FirstCall:
    """The first eager call of a shape where only calls captured in a CUDA graph run tlab's
    kernel: it runs tlab's kernel (correct, if slower eagerly, once), so that the kernel is
    compiled and loaded before a capture (which warm-up calls precede; loading a module
    during a capture is not safe); from then on eager calls run the op. Reads through to the
    launch's attributes (matmul's `tma`)."""

    def __init__(self, key: tuple, launch: Callable):
        self.key, self.launch = key, launch

    def __getattr__(self, name: str):
        return getattr(self.launch, name)

    def __call__(self, *args, **kwargs):
        _plans[self.key] = (None, self.launch)
        return self.launch(*args, **kwargs)


class _OnDevice:
    """A launch for tensors on a GPU other than the current one, run with that GPU current:
    Triton launches on the current device and its stream, where those tensors' memory cannot
    be read (as the PyTorch op, which follows its tensors, would run). Reads through to the
    launch's attributes."""

    def __init__(self, device: int, launch: Callable):
        self.device, self.launch = device, launch

    def __getattr__(self, name: str):
        return getattr(self.launch, name)

    def __call__(self, *args, **kwargs):
        with device_guard(self.device):
            return self.launch(*args, **kwargs)


# The current CUDA device and a guard that makes one current, bound once: plan asks for each
# GPU tensor's call (CPU builds have no _cuda_getDevice, and no GPU tensors ask).
current_cuda_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
device_guard = torch.cuda.device


def dispatches_itself(t: torch.Tensor) -> bool:
    """Whether a tensor is of a subclass with a __torch_dispatch__ of its own (DTensor, a
    wrapper whose storage holds no data), which a launch cannot read; nn.Parameter and plain
    subclasses hold their data."""
    return type(t).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__


def _capturing(device: int) -> bool:
    """Whether the current CUDA stream is capturing a graph (CPU tensors never are)."""
    return device >= 0 and stream_capturing()


def _choose(kernel: str, dtype, sizes: tuple[int, ...], device: int,
            bind: Callable[[dict], Callable] | None, directory: Path | None = None
            ) -> tuple[Callable | None, Callable | None]:
    """(eager launch, captured launch), each None where ops calls the PyTorch op: where the
    kernel's spec refuses the shape (check_shape), and where the configs say so (decide).
    `bind` binds a config (default: the spec's, KernelSpec.bound)."""
    if device < 0 and not triton_interpreting():  # CPU tensors only in the interpreter
        recording.note(kernel, dtype_key(dtype), shape_text(sizes), "cpu", ON_CPU, "")
        return None, None
    if device not in _slugs:
        _slugs[device] = current_gpu_slug(device) if device >= 0 else "interpreter"
    spec = get_spec(kernel)
    try:
        if device < 0 and spec.interpreter_refusal(dtype) is not None:
            raise TlabError("a dtype Triton's interpreter computes wrong")  # bf16 tl.dot
        spec.check_shape(spec.shape(*sizes))
    except TlabError:
        recording.note(kernel, dtype_key(dtype), shape_text(sizes), _slugs[device], REFUSED,
                       TORCH_OP)
        return None, None
    folder = Path(directory or config_dir(kernel))
    _folders.setdefault(folder, _files(folder))  # watched from now on (_configs_changed)
    choice = decide(kernel, dtype, sizes, gpu=_slugs[device], directory=folder)
    log.debug("tlab ops: %s %s %s on %s: %s, captured %s (%s)", kernel, choice.dtype,
              choice.shape, _slugs[device], choice.provider, choice.captured, choice.reason)
    recording.note(kernel, choice.dtype, choice.shape, _slugs[device], choice.tuned,
                   choice.provider)
    config = spec.complete(choice.config) if choice.config is not None else None
    launch = None if config is None else bind(config) if bind else spec.bound(config)
    _compiled[_key(kernel, dtype, sizes, device, directory)] = (
        choice.compiled_uses_triton(False), choice.compiled_uses_triton(True))
    return (launch if choice.uses_triton else None,
            launch if choice.captured_uses_triton else None)
