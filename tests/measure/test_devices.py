"""Several devices: the scheduler spreads a first pass over all of them and keeps a shape's
baselines, contenders and confirmations on one; `--gpus` picks them; without a GPU,
interpreter workers stand in for them, locally and through Ray."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter

import pytest
from helpers.paths import REPO

from tritonbench_lab.errors import TlabError
from tritonbench_lab.measure.devices import parse_gpus, visible_for
from tritonbench_lab.measure.schedule import Batch, Scheduler
from tritonbench_lab.measure.worker import Task


class FakeDevice:
    def __init__(self, label, delay=0.0):
        self.label, self.delay = label, delay


def task(name):
    return Task("k", "triton", (1,), "fp32", {"X": name})


def pipeline(shape, log):
    """Baselines (pinned), a first pass of 12 (spread), contenders (pinned); records which
    device ran what, and checks each batch gets exactly its own rows back."""
    rows = yield Batch([task(f"{shape}-base")], "sweep")
    assert rows == [(f"{shape}-base", log[f"{shape}-base"])]
    rows = yield Batch([task(f"{shape}-{i}") for i in range(12)], "sweep", pinned=False)
    assert sorted(r[0] for r in rows) == sorted(f"{shape}-{i}" for i in range(12))
    rows = yield Batch([], "contend")  # an empty batch is skipped
    assert rows == []
    yield Batch([task(f"{shape}-c{i}") for i in range(3)], "contend")


def run(devices, shapes=("A", "B", "C")):
    log: dict[str, str] = {}
    lock = threading.Lock()

    def measure(device, t, phase):
        time.sleep(device.delay)
        with lock:
            assert t.config["X"] not in log, "a task ran twice"
            log[t.config["X"]] = device.label
        return (t.config["X"], device.label)

    Scheduler((pipeline(s, log) for s in shapes), devices, measure).run()
    return log


def test_one_device_runs_everything_in_order_in_the_callers_thread():
    log = run([FakeDevice("d0")])
    assert len(log) == 3 * 16 and set(log.values()) == {"d0"}
    assert list(log)[:2] == ["A-base", "A-0"]


def test_first_passes_spread_and_pinned_batches_stay_on_the_home_device():
    log = run([FakeDevice("d0", 0.002), FakeDevice("d1", 0.002)])
    assert len(log) == 3 * 16
    for shape in "ABC":
        home = log[f"{shape}-base"]
        assert {log[f"{shape}-c{i}"] for i in range(3)} == {home}
    spread = Counter(log[f"{s}-{i}"] for s in "ABC" for i in range(12))
    assert set(spread) == {"d0", "d1"} and min(spread.values()) >= 6


def test_one_device_times_what_is_compiled_at_the_next_shapes_instead_of_waiting():
    """With a `ready` test (the compile pool's), a device takes ready tasks first, opening
    up to `lookahead` pipelines; with nothing ready it waits on the first pipeline's next."""
    compiled = {"A-base", "B-base", "C-base", "A-3", "B-3", "B-4", "C-5"}
    order = []

    def measure(device, t, phase):
        order.append(t.config["X"])
        compiled.add(t.config["X"])  # timing a task waits for its compile
        return (t.config["X"], device.label)

    def ready(t):
        return t.config["X"] in compiled

    class Log(dict):  # pipeline() checks each row's device: there is only d0
        def __getitem__(self, key):
            return "d0"

    Scheduler((pipeline(s, Log()) for s in "ABC"), [FakeDevice("d0")], measure,
              ready=ready, lookahead=2).run()
    # A's baseline, A-3 (ready), then B opens: its baseline and B-3, B-4, all ready; C does
    # not open (two at once); nothing else is ready, so A's first pass goes on in order.
    assert order[:6] == ["A-base", "A-3", "B-base", "B-3", "B-4", "A-0"]
    assert sorted(order) == sorted({f"{s}-{x}" for s in "ABC" for x in
                                    ["base", *range(12), "c0", "c1", "c2"]})
    # C opened once A was done (B still open): its baseline and ready C-5, then B goes on.
    after_a = order.index("A-c2") + 1
    assert order[after_a:after_a + 3] == ["C-base", "C-5", "B-0"]
    # Without a ready test: one pipeline after the other, in order (as before).
    plain = []
    Scheduler((pipeline(s, Log()) for s in "AB"), [FakeDevice("d0")],
              lambda d, t, p: plain.append(t.config["X"]) or (t.config["X"], "d0")).run()
    assert plain[:3] == ["A-base", "A-0", "A-1"] and plain.index("B-base") > plain.index("A-c2")


def test_with_a_compile_pool_every_pipeline_up_to_the_lookahead_opens_before_any_task():
    """A search hands its first proposals to the pool when its pipeline opens (sweep.py):
    so all pipelines the lookahead allows open before the device takes its first task."""
    opened, order = [], []

    def opening(shape):
        opened.append(shape)
        yield Batch([task(f"{shape}-0")], "sweep", pinned=False)

    def measure(device, t, phase):
        order.append((t.config["X"], list(opened)))
        return (t.config["X"], device.label)

    Scheduler((opening(s) for s in "ABCD"), [FakeDevice("d0")], measure,
              ready=lambda t: True, lookahead=3).run()
    assert order[0] == ("A-0", ["A", "B", "C"])  # D waits for a free place
    assert [name for name, _ in order] == ["A-0", "B-0", "C-0", "D-0"]


def test_an_error_in_a_device_thread_reaches_the_caller():
    def measure(device, t, phase):
        raise RuntimeError(f"boom on {device.label}")

    scheduler = Scheduler(iter([pipeline("A", {})]), [FakeDevice("d0"), FakeDevice("d1")],
                          measure)
    with pytest.raises(RuntimeError, match="boom"):
        scheduler.run()


def test_gpus_option():
    names = ["NVIDIA H200"] * 4
    assert parse_gpus(None, False, names) == ["cuda:0"]
    assert parse_gpus("all", False, names) == [f"cuda:{i}" for i in range(4)]
    assert parse_gpus("0,2", False, names) == ["cuda:0", "cuda:2"]
    assert parse_gpus("0,1", True) == ["cpu:0", "cpu:1"]  # interpreter stand-ins
    assert parse_gpus(None, True) == ["cpu:0"]
    for text, phrase in (("0,0", "twice"), ("4", "has 4 GPU(s), numbered 0-3"),
                         ("x", "give 'all' or device numbers"), ("-1", "device numbers"),
                         ("", "device numbers")):
        with pytest.raises(TlabError, match=re.escape(phrase)):
            parse_gpus(text, False, names)
    with pytest.raises(TlabError, match="mixes GPU models"):
        parse_gpus("all", False, ["NVIDIA H200", "NVIDIA A100"])


def test_each_gpus_worker_sees_its_gpu_alone(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_for("cuda:0", single=True) is None  # the one device inherits
    assert visible_for("cuda:1", single=True) == "1"  # unless it is not the default one
    assert visible_for("cuda:1", single=False) == "1"
    assert visible_for("cpu:1", single=False) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")  # numbers are relative, as in torch
    assert visible_for("cuda:1", single=False) == "6"


def interpreter_sweep(tmp_path, devices, **options):
    """The example user kernel (axpy: a torch baseline only, nothing slow to compile) at its
    two small shapes, through the workers of `devices`."""
    import dataclasses

    import torch
    from helpers.sweeps import request_for

    from tritonbench_lab.kernels import load_kernel_module
    from tritonbench_lab.measure.sweep import run_sweep

    module = str(REPO / "examples" / "axpy.py")
    (spec,) = load_kernel_module(module)
    space = spec.space.narrow({"BLOCK": (256, 1024), "num_warps": (2, 4)})
    request = dataclasses.replace(
        request_for(spec, [torch.float32], list(spec.small_shapes), tmp_path, space=space),
        devices=tuple(devices), confirm=1, kernel_modules=(module,), **options)
    return run_sweep(request)


def row_keys(result):
    """The first pass's rows; which configs are confirmed depends on measured times."""
    return Counter((r.shape, r.provider, r.config, r.status) for r in result.records
                   if r.phase == "sweep")


@pytest.fixture(scope="module")
def one_device(tmp_path_factory):
    return interpreter_sweep(tmp_path_factory.mktemp("one"), ["cpu:0"])


def test_two_interpreter_devices_write_the_rows_one_writes(one_device, tmp_path):
    two = interpreter_sweep(tmp_path, ["cpu:0", "cpu:1"])
    assert row_keys(two) == row_keys(one_device)  # nothing lost, nothing twice
    assert {r.device for r in two.records if r.status != "skipped"} == {"cpu:0", "cpu:1"}
    assert {r.device for r in one_device.records if r.status != "skipped"} == {"cpu:0"}
    for shape in ("1000", "4097"):  # a shape's baselines and confirmations share a device
        pinned = {r.device for r in two.records if r.shape == shape
                  and (r.provider != "triton" or r.phase == "confirm")}
        assert len(pinned) == 1
        assert {r.provider for r in two.records if r.shape == shape and r.confirmed} == {
            "triton", "torch"}
    assert [w.shape for w in two.winners] == [w.shape for w in one_device.winners]


def test_the_ray_backend_writes_the_same_rows_from_the_driver(one_device, tmp_path):
    ray = pytest.importorskip("ray")  # a dev dependency: installed by `make setup`
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        result = interpreter_sweep(tmp_path, ["cpu:0", "cpu:1"], backend="ray")
        _a_ray_device_starts_its_workers_ahead_and_then_measures()
    finally:
        ray.shutdown()
    assert row_keys(result) == row_keys(one_device)
    actors = {r.device for r in result.records if r.status != "skipped"}
    assert len(actors) == 2 and all("/cpu:" in a for a in actors)


def _a_ray_device_starts_its_workers_ahead_and_then_measures():
    """What a GPU sweep does first (sweep.run_sweep): prepare, through the actor, then run."""
    from tritonbench_lab.kernels import get_spec
    from tritonbench_lab.measure.raydevices import ray_devices
    from tritonbench_lab.measure.timing import BenchOptions
    from tritonbench_lab.measure.worker import Timeouts

    (device,) = ray_devices(["cpu:0"], interpret=True, kernel_modules=(), bench=BenchOptions(),
                            address=None)
    try:
        device.prepare(True)
        spec = get_spec("add")
        task = Task("add", "triton", spec.small_shapes[0].sizes, "fp32", spec.space.default)
        assert device.run(task, Timeouts()).status == "ok"
        assert device.run(task, Timeouts(), fresh=True).status == "ok"
    finally:
        device.stop()


def test_the_command_line_spreads_a_searched_first_pass_over_two_stand_ins(tmp_path):
    import subprocess
    import sys

    from tritonbench_lab.data.store import load_records
    from tritonbench_lab.search.contenders import contenders

    result = subprocess.run(
        [sys.executable, "-m", "tritonbench_lab", "sweep", "axpy", "--kernel-module",
         "examples/axpy.py", "--interpret", "--dtype", "fp32", "--sizes", "1000", "--gpus", "0,1",
         "--search", "local:5", "--first-rep-ms", "1", "--confirm", "1", "--root", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = load_records(tmp_path / "results" / "interpreter" / "axpy.csv")
    first = [r for r in rows if r.provider == "triton" and r.phase == "sweep"]
    assert len(first) == 5 and len({r.config for r in first}) == 5  # the search's budget
    assert {r.rep_ms for r in first} == {None}  # interpreter rows carry no do_bench budget
    # The contenders are timed again unless the one confirmation covers them (just one).
    picks = {r.config for r in contenders(rows, always=1)}
    contended = {r.config for r in rows if r.phase == "contend"}
    assert contended == (picks if len(picks) > 1 else set())
    assert ("contender(s) of the first pass" in " ".join(result.stderr.split())) == bool(contended)
    assert {r.config for r in rows if r.confirmed and r.provider == "triton"} <= picks
    assert any(r.confirmed for r in rows)
    assert {r.device for r in rows} <= {"cpu:0", "cpu:1"}


def test_a_ray_address_where_nothing_answers_is_refused_within_the_timeout(monkeypatch):
    """ray.init() retries such an address for minutes; the sweep is refused first, in one
    line, whether the connection is refused at once or never answered."""
    import socket
    import time

    from tritonbench_lab.measure import raydevices

    with socket.socket() as probe:  # a port nothing listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(TlabError, match=rf"--ray-address 127.0.0.1:{port}: no Ray cluster "
                                        r"answers there within 5 s"):
        raydevices.check_address(f"127.0.0.1:{port}")
    assert time.monotonic() - started < raydevices.RAY_CONNECT_TIMEOUT_S
    asked = []

    def silent(address, timeout):  # a host that never answers: the connect times out
        asked.append((address, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(TlabError, match=r"within 5 s \(timed out\)"):
        raydevices.check_address("ray://head.example:10001")
    assert asked == [(("head.example", 10001), raydevices.RAY_CONNECT_TIMEOUT_S)]
    raydevices.check_address("auto")  # a word ray.init takes: no host to ask
