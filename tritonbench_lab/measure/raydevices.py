"""Devices behind Ray actors (`tlab sweep --backend ray`): sweep past one machine.

Each device is a Ray actor that holds one GPU (`num_gpus=1`; an interpreter stand-in holds
one CPU) for the whole sweep and keeps the same isolated workers as a local device
(devices.LocalDevice: a crash or hang costs one task, the actor lives on). An actor rather
than one Ray task per measurement, because a worker that stays up keeps its CUDA context,
its loaded kernels and its shape's inputs and reference, as it does locally. Ray puts
CUDA_VISIBLE_DEVICES on the actor; its workers inherit it.

Only the driver writes: each measurement's Outcome is sent back and the driver appends the
row (no shared file system). The user's kernel modules travel as source text, written to a
temporary folder on the actor's node. Configs compile in the actor's own worker when first
run: the compile pool (precompile.py) works on the driver's machine only.

Locally (`ray.init()`) or on a cluster: `ray start --head` on one node, `ray start
--address HEAD:6379` on the others, then `tlab sweep ... --backend ray --ray-address
HEAD:6379` on the head.
"""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

from tritonbench_lab.data.records import CRASH
from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.devices import LocalDevice, visible_for
from tritonbench_lab.measure.timing import BenchOptions
from tritonbench_lab.measure.worker import Outcome, Task, Timeouts

# How long a `--ray-address` may take to accept a connection before the sweep is refused:
# ray.init() itself keeps retrying an address where nothing answers, for minutes.
RAY_CONNECT_TIMEOUT_S = 5.0
# Addresses ray.init() takes that name no host: a running local cluster, a new local instance.
RAY_WORDS = ("auto", "local")


def check_address(address: str, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Refuse, within `timeout_s`, a `--ray-address` that is not HOST:PORT (or `ray://`
    HOST:PORT, auto, local) or where nothing accepts a connection: before anything runs, in
    one line, rather than a sweep that hangs in ray.init()."""
    if address in RAY_WORDS:
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise TlabError(f"--ray-address {address!r}: expected HOST:PORT as `ray start --head` "
                        f"prints it (or {' or '.join(RAY_WORDS)})")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except OSError as err:
        why = err.strerror or str(err) or type(err).__name__
        raise TlabError(f"--ray-address {address}: no Ray cluster answers there within "
                        f"{timeout_s:g} s ({why}); start one with `ray start --head`, or leave "
                        "--ray-address out for a local Ray instance") from None


class _DeviceHost:
    """The actor's state: a LocalDevice of the node the actor runs on."""

    def __init__(self, interpret: bool, modules: list[tuple[str, str]], bench: BenchOptions):
        # late: an optional dependency (tritonbench-lab[ray] / [optuna])
        import ray

        folder = Path(tempfile.mkdtemp(prefix="tlab-modules-"))
        paths = []
        for i, (name, text) in enumerate(modules):
            path = folder / f"{i}_{name}"  # two modules may share a file name
            path.write_text(text)
            paths.append(str(path))
        gpus = [] if interpret else ray.get_gpu_ids()
        where = f"cuda:{gpus[0]}" if gpus else f"cpu:{ray.get_runtime_context().get_actor_id()[:6]}"
        self.label = f"{socket.gethostname()}/{where}"
        self.device = LocalDevice(self.label, interpret, tuple(paths), bench)

    def where(self) -> str:
        return self.label

    def run(self, task: Task, timeouts: Timeouts, fresh: bool) -> Outcome:
        return self.device.run(task, timeouts, fresh)

    def prepare(self, confirm: bool) -> None:
        self.device.prepare(confirm)

    def stop(self) -> None:
        self.device.stop()


class RayDevice:
    """The driver's handle on one actor, with LocalDevice's methods."""

    def __init__(self, actor_class, options: dict, args: tuple):
        self._make = lambda: actor_class.options(**options).remote(*args)
        self._actor = self._make()
        self._stopping = None  # the actor's stop call, once ask_to_stop made it
        # late: an optional dependency (tritonbench-lab[ray] / [optuna])
        import ray

        self.label = ray.get(self._actor.where.remote())

    def run(self, task: Task, timeouts: Timeouts, fresh: bool = False) -> Outcome:
        # late: an optional dependency (tritonbench-lab[ray] / [optuna])
        import ray

        try:
            return ray.get(self._actor.run.remote(task, timeouts, fresh))
        except ray.exceptions.RayError as err:  # the actor or its node died: one task lost
            self._actor, self._stopping = self._make(), None
            return Outcome(CRASH, f"Ray actor on {self.label} died: {type(err).__name__}")

    def prepare(self, confirm: bool) -> None:
        """Start the actor's workers in the background (LocalDevice.prepare), not waited for."""
        self._actor.prepare.remote(confirm)

    def ask_to_stop(self) -> None:
        """Tell the actor's workers to exit, without waiting (`stop` waits)."""
        self._stopping = self._actor.stop.remote()

    def stop(self) -> None:
        # late: an optional dependency (tritonbench-lab[ray] / [optuna])
        import ray

        try:
            ray.get(self._stopping or self._actor.stop.remote(), timeout=30)
        except ray.exceptions.RayError:
            pass
        ray.kill(self._actor)


def ray_devices(labels: list[str], *, interpret: bool, kernel_modules: tuple[str, ...],
                bench: BenchOptions, address: str | None) -> list[RayDevice]:
    """One actor per requested device. The labels give the count (Ray chooses the GPUs);
    the rows record where each actor ran."""
    try:
        # late: an optional dependency (tritonbench-lab[ray] / [optuna])
        import ray
    except ImportError:
        raise TlabError("--backend ray needs Ray: pip install 'tritonbench-lab[ray]'") from None
    if not ray.is_initialized():
        kwargs = {"address": address} if address else {"num_cpus": max(2, len(labels) + 1)}
        ray.init(include_dashboard=False, log_to_driver=False, **kwargs)
    modules = [(Path(p).name, Path(p).read_text()) for p in kernel_modules]
    options = {"num_cpus": 1, "num_gpus": 0 if interpret else 1}
    actor_class = ray.remote(_DeviceHost)
    if not interpret:
        have = ray.cluster_resources().get("GPU", 0)
        if have < len(labels):
            raise TlabError(f"--backend ray: {len(labels)} GPU(s) wanted, the Ray cluster has "
                            f"{have:g}")
    return [RayDevice(actor_class, options, (interpret, modules, bench)) for _ in labels]


def make_devices(labels: list[str], *, interpret: bool, kernel_modules: tuple[str, ...],
                 bench: BenchOptions, backend: str = "local", address: str | None = None):
    """One device object per label, local or behind Ray actors."""
    if backend == "ray":
        return ray_devices(labels, interpret=interpret, kernel_modules=kernel_modules,
                           bench=bench, address=address)
    single = len(labels) == 1
    return [LocalDevice(label, interpret, kernel_modules, bench, visible_for(label, single))
            for label in labels]
