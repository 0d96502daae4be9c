"""The compile pool: every config compiled once, failures left to the worker, a hang or a
dead pool costing only the head start. On a CPU the pool runs stand-in compile functions
(Triton's interpreter compiles nothing); the GPU test compiles real matmul configs."""

import os
import time

import pytest

from tritonbench_lab.measure.precompile import Job, precompile


def fake_start(kernel_modules):
    os.environ["TLAB_FAKE_POOL"] = "1"


def fake_compile(job):
    """Seconds = BLOCK / 1000; BLOCK=13 fails, BLOCK=99 hangs, BLOCK=66 kills its process,
    BLOCK=50 takes half a second (what is queued behind it stays queued meanwhile)."""
    assert os.environ["TLAB_FAKE_POOL"] == "1"  # the initialiser ran in this process
    block = job.config["BLOCK"]
    if block == 50:
        time.sleep(0.5)
    if block == 99:
        time.sleep(60)
    if block == 66:
        os._exit(3)
    return job.key, block / 1000, "CompilationError: no" if block == 13 else ""


def jobs(*blocks):
    return [Job("k", (64,), "fp32", 0, {"BLOCK": b}) for b in blocks]


def run(blocks, **kwargs):
    return precompile(jobs(*blocks), processes=2, compile_fn=fake_compile,
                      start_fn=fake_start, **kwargs)


def test_each_config_compiles_once_and_failures_are_left_to_the_worker():
    seen = []
    result = run([16, 32, 32, 13, 64], progress=lambda d, t: seen.append((d, t)))
    assert result.seconds == {j.key: j.config["BLOCK"] / 1000 for j in jobs(16, 32, 64)}
    assert seen[-1] == (4, 4)  # four distinct jobs, the repeat dropped
    assert (result.jobs, result.failed, result.stopped) == (4, 1, "")
    assert "CompilationError: no" in result.summary(2)
    assert result.summary(2).startswith("compiled 3 of 4 configs ahead in")


def test_a_hanging_compile_stops_the_pool_and_keeps_what_it_has():
    start = time.monotonic()
    result = run([16, 99, 32], stall_s=3.0)
    assert time.monotonic() - start < 30  # not the 60 s of the hang
    assert set(result.seconds) <= {j.key for j in jobs(16, 32)}
    assert jobs(16)[0].key in result.seconds and "no config finished" in result.stopped


def test_a_dead_pool_process_costs_only_the_head_start():
    result = run([66, 16, 32], stall_s=10.0)
    assert set(result.seconds) <= {j.key for j in jobs(16, 32)}
    assert "died" in result.stopped


def test_no_jobs_or_no_processes_start_no_pool():
    assert precompile([], processes=4).seconds == {}
    assert run([16]).seconds and precompile(jobs(16), processes=0).seconds == {}


def test_the_sweep_compiles_ahead_only_triton_configs_on_a_gpu(monkeypatch):
    from types import SimpleNamespace

    from tritonbench_lab.measure import sweep
    from tritonbench_lab.measure.worker import Task

    made = []

    class FakePool:
        def __init__(self, processes, **options):
            self.submitted = []
            made.append((self, processes, options))

        def submit(self, jobs):
            self.submitted += list(jobs)

    monkeypatch.setattr(sweep, "CompilePool", FakePool)
    tasks = [Task("k", "triton", (64,), "fp32", {"BLOCK": 16}, 0),
             Task("k", "triton", (64,), "fp32", {"BLOCK": 32}, 0)]
    import torch

    from tritonbench_lab.measure.cases import CASES_MEMORY_SHARE
    from tritonbench_lab.measure.plan import job_footprint
    from tritonbench_lab.spec import Cost

    # Inputs and outputs of 1000 bytes: a timing worker holds them twice and a float64
    # reference of 250 fp32 values (4000 bytes), or its kept cases' share of the device,
    # which is more here; two workers may at once.
    spec = SimpleNamespace(cost=lambda shape, dtype: Cost(flops=0, bytes=1000))
    request = SimpleNamespace(interpret=False, jobs=8, kernel_modules=("m.py",),
                              timeouts=SimpleNamespace(first_call_s=50.0), spec=spec,
                              shapes=["one shape"], dtypes=[torch.float32], free_bytes=10**9)
    pool = sweep.start_pool(request, tasks, sweep.SweepEvents())
    ((made_pool, processes, options),) = made
    assert pool is made_pool and processes == 8
    assert [j.config for j in pool.submitted] == [{"BLOCK": 16}, {"BLOCK": 32}]  # timing order
    assert options["stall_s"] == 50.0 and options["kernel_modules"] == ("m.py",)
    assert options["memory_budget"] == (10**9 - 2 * int(10**9 * CASES_MEMORY_SHARE)) // 2
    request.free_bytes = 10_000  # the share is less than one case: two cases are held
    assert made.clear() or sweep.start_pool(request, tasks, sweep.SweepEvents())
    assert made[0][2]["memory_budget"] == (10_000 - 2 * 4000) // 2
    request.free_bytes = 10**9
    assert options["footprint_of"] is job_footprint
    for interpret, count in ((True, 8), (False, 1)):
        request.interpret, request.jobs = interpret, count
        assert sweep.start_pool(request, tasks, sweep.SweepEvents()) is None


def test_a_pool_that_lives_for_the_sweep_compiles_batches_as_they_come():
    from tritonbench_lab.measure.precompile import CompilePool

    seen = []
    pool = CompilePool(2, compile_fn=fake_compile, start_fn=fake_start,
                       progress=lambda d, t: seen.append((d, t)))
    try:
        pool.submit(jobs(16, 13))
        assert pool.wait(jobs(16)[0].key) == 0.016
        assert pool.wait(jobs(13)[0].key) is None  # failed: the worker meets the error
        pool.submit(jobs(32, 16))  # a later batch; 16 is not compiled twice
        assert pool.wait(jobs(32)[0].key) == 0.032
        assert pool.wait(jobs(64)[0].key) is None  # never submitted
    finally:
        pool.close()
    assert pool.result.jobs == 3 and pool.result.failed == 1
    assert max(seen) == (3, 3)


def _compiled_in_order(submit_and_wait):
    """The blocks in the order one process compiled them, after `submit_and_wait(pool)`."""
    from tritonbench_lab.measure.precompile import CompilePool

    pool = CompilePool(1, compile_fn=fake_compile, start_fn=fake_start)
    try:
        submit_and_wait(pool)
        pool.drain()
    finally:
        pool.close()
    blocks = {j.key: j.config["BLOCK"] for j in jobs(*range(1, 60))}
    return [blocks[key] for key in pool.result.seconds], pool.result.jobs


def test_background_jobs_yield_to_jobs_submitted_later():
    def use(pool):
        pool.submit(jobs(50, 2, 3, 4), background=True)  # 50 starts; 2-4 wait
        pool.submit(jobs(7))
        assert pool.wait(jobs(7)[0].key) == 0.007

    assert _compiled_in_order(use) == ([50, 7, 2, 3, 4], 5)


def test_a_background_job_asked_for_moves_ahead():
    def waited(pool):
        pool.submit(jobs(50, 2, 3, 4, 5), background=True)
        assert pool.wait(jobs(5)[0].key) == 0.005

    def proposed(pool):
        pool.submit(jobs(50, 2, 3), background=True)
        pool.submit(jobs(3))  # a search proposes it: no second job, but now

    assert _compiled_in_order(waited) == ([50, 5, 2, 3, 4], 5)
    assert _compiled_in_order(proposed) == ([50, 3, 2], 3)


def test_a_config_compiles_at_one_shape_at_a_time_and_its_other_shapes_follow_it():
    from tritonbench_lab.measure.precompile import CompilePool, config_major, family

    def at(size, *blocks):
        return [Job("k", (size,), "fp32", 0, {"BLOCK": b}) for b in blocks]

    # Timing order is shape by shape; the pool gets each config's shapes after its first.
    queued = config_major(at(64, 50, 2) + at(32, 50, 2) + at(16, 2, 3))
    assert [(j.sizes[0], j.config["BLOCK"]) for j in queued] == [
        (64, 50), (32, 50), (64, 2), (32, 2), (16, 2), (16, 3)]
    assert family(at(64, 2)[0].key) == family(at(16, 2)[0].key) != family(at(64, 3)[0].key)
    order = []
    pool = CompilePool(2, compile_fn=fake_compile, start_fn=fake_start)
    try:
        pool.submit(queued)
        slow_here, slow_there = at(64, 50)[0].key, at(32, 50)[0].key
        # While 50 compiles (half a second) at 64, its job at 32 waits: the other process
        # takes 2 and 3 at every shape meanwhile, and one of them is ready.
        assert pool.wait(at(16, 3)[0].key) == 0.003
        assert not pool.ready(slow_there) and pool.ready(at(64, 2)[0].key)
        assert pool.wait(slow_here) == 0.05
        assert pool.wait(slow_there) == 0.05 and pool.ready(slow_there)
        assert pool.ready(at(8, 7)[0].key)  # never the pool's: nothing to wait for
        order = list(pool.result.seconds)
    finally:
        pool.close()
    assert order.index(slow_there) > order.index(slow_here)
    assert order.index(slow_there) == len(order) - 1


def test_closing_drops_the_queued_background_at_once():
    from tritonbench_lab.measure.precompile import CompilePool

    pool = CompilePool(1, compile_fn=fake_compile, start_fn=fake_start, stall_s=30.0)
    pool.submit(jobs(99, 2, 3), background=True)  # 99 hangs in the only process
    start = time.monotonic()
    pool.close()
    assert pool.wait(jobs(2)[0].key) is None and time.monotonic() - start < 10


@pytest.mark.gpu
def test_precompiled_matmul_configs_load_in_the_worker_instead_of_compiling(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    from tritonbench_lab.kernels.matmul import SPEC
    from tritonbench_lab.measure.worker import Task, Timeouts, Worker

    shape = (1528, 1528, 1528)
    configs = [c for c in SPEC.space.prune(dict(SPEC.shape(*shape).dims), 2,
                                           _gpu_limits())[0]][:6]
    result = precompile([Job("matmul", shape, "bf16", 0, c) for c in configs], processes=6)
    assert len(result.seconds) == len(configs), result.summary(6)
    worker = Worker(interpret=False)
    try:
        first_calls = []
        for config in configs:
            outcome = worker.run(Task("matmul", "triton", shape, "bf16", config, 0), Timeouts())
            assert outcome.status == "ok", outcome
            first_calls.append(outcome.compile_s)
    finally:
        worker.stop()
    # A fresh cache folder: the first launch of each kernel signature (plain, TMA) also
    # builds Triton's small C launcher; every other first call only loads the kernel.
    assert sorted(first_calls)[:-2] and max(sorted(first_calls)[:-2]) < 0.2, first_calls


def test_the_cache_folder_is_pinned_before_inductor_can_move_it(monkeypatch):
    from tritonbench_lab.measure.children import pin_triton_cache_dir

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    pin_triton_cache_dir()
    assert os.environ["TRITON_CACHE_DIR"].endswith(os.path.join(".triton", "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", "/elsewhere")
    pin_triton_cache_dir()
    assert os.environ["TRITON_CACHE_DIR"] == "/elsewhere"  # a user's choice stays


def _gpu_limits():
    from tritonbench_lab.measure.env import device_limits

    return device_limits("cuda")


@pytest.mark.parametrize("budget", [None, 2])
def test_a_search_gives_the_pool_its_shape_space_behind_its_batches(monkeypatch, budget):
    """A search's batch goes to the pool as wanted now, after the rest of the shape's
    space (not measured yet) went in the background; a capped search (`random:2`) times
    two configs at most, and gives the pool nothing it will not time."""
    from types import SimpleNamespace

    from tritonbench_lab.measure import sweep
    from tritonbench_lab.measure.worker import Task
    from tritonbench_lab.space import Space

    calls = []

    class Pool:
        def submit(self, jobs, background=False):
            calls.append(([j.config["BLOCK"] for j in jobs], background))

    blocks = (16, 32, 64, 128)
    request = SimpleNamespace(search="random", space=Space(params={"BLOCK": blocks}),
                              search_budget=budget, seed=0)
    run = SimpleNamespace(request=request, pool=Pool(), rows={},
                          is_done=lambda task: task.config["BLOCK"] == 128,  # measured before
                          queued=lambda count, phase: None)
    baselines = sweep.Batch([], "sweep")
    pipeline = sweep.first_pass(run, ("fp32", "64"), [{"BLOCK": b} for b in blocks],
                                lambda config: Task("k", "triton", (64,), "fp32", config, 0),
                                baselines)
    # The baselines are timed while the pool compiles the first proposals, given it already.
    assert next(pipeline) is baselines
    if budget is None:
        assert calls.pop(0) == ([16, 32, 64], True)
    batch = pipeline.send([])
    proposed = [t.config["BLOCK"] for t in batch.tasks]
    assert calls == [(proposed, False)] and proposed and 128 not in proposed


def timed_compile(job):
    """Records when it ran (in TLAB_POOL_LOG's folder) and takes a fifth of a second."""
    start = time.monotonic()
    time.sleep(0.2)
    log = os.path.join(os.environ["TLAB_POOL_LOG"], f"{job.config['BLOCK']}")
    with open(log, "w") as out:
        out.write(f"{start} {time.monotonic()}")
    return job.key, 0.2, ""


def most_at_once(folder) -> int:
    spans = [tuple(map(float, p.read_text().split())) for p in folder.iterdir()]
    return max(sum(1 for s, e in spans if s < mid < e) for mid in
               (start + 0.1 for start, _ in spans))


def test_jobs_run_together_only_while_their_device_bytes_fit_the_budget(tmp_path, monkeypatch):
    """On an 80 GB GPU sixteen pool processes each holding a large shape's inputs left the
    timing worker out of memory: the pool admits jobs by their footprint."""
    monkeypatch.setenv("TLAB_POOL_LOG", str(tmp_path))
    many = [Job("k", (64,), "fp32", 0, {"BLOCK": b}, footprint=40) for b in range(1, 9)]
    result = precompile(many, processes=4, compile_fn=timed_compile, start_fn=fake_start,
                        memory_budget=100)
    assert len(result.seconds) == 8
    assert most_at_once(tmp_path) == 2  # 2 x 40 fits 100, 3 x 40 does not


def test_a_job_larger_than_the_budget_still_runs_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("TLAB_POOL_LOG", str(tmp_path))
    big = [Job("k", (64,), "fp32", 0, {"BLOCK": b}, footprint=500) for b in (1, 2, 3)]
    result = precompile(big, processes=3, compile_fn=timed_compile, start_fn=fake_start,
                        memory_budget=100)
    assert len(result.seconds) == 3 and most_at_once(tmp_path) == 1


def test_footprints_come_from_the_cost_model_when_jobs_carry_none(tmp_path, monkeypatch):
    monkeypatch.setenv("TLAB_POOL_LOG", str(tmp_path))
    asked = []

    def footprint_of(job):
        asked.append(job.config["BLOCK"])
        return 60

    result = precompile(jobs(1, 2, 3, 4), processes=4, compile_fn=timed_compile,
                        start_fn=fake_start, memory_budget=100, footprint_of=footprint_of)
    assert sorted(asked) == [1, 2, 3, 4] and len(result.seconds) == 4
    assert most_at_once(tmp_path) == 1  # 60 + 60 > 100


def meeting_compile(job):
    """Marks itself started, then waits (up to 20 s) until four jobs have started, and
    records how many it saw: a rendezvous, so a loaded machine's slow process starts
    cannot make the count flaky the way overlapping time spans could."""
    folder = os.environ["TLAB_POOL_LOG"]
    open(os.path.join(folder, f"started-{job.config['BLOCK']}"), "w").close()
    deadline = time.monotonic() + 20
    seen = 0
    while time.monotonic() < deadline:
        seen = sum(1 for name in os.listdir(folder) if name.startswith("started-"))
        if seen >= 4:
            break
        time.sleep(0.02)
    with open(os.path.join(folder, f"seen-{job.config['BLOCK']}"), "w") as out:
        out.write(str(seen))
    return job.key, 0.0, ""


def test_without_a_budget_every_process_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TLAB_POOL_LOG", str(tmp_path))
    many = [Job("k", (64,), "fp32", 0, {"BLOCK": b}, footprint=40) for b in range(1, 5)]
    precompile(many, processes=4, compile_fn=meeting_compile, start_fn=fake_start)
    seen = [int((tmp_path / f"seen-{b}").read_text()) for b in range(1, 5)]
    assert seen == [4, 4, 4, 4]  # all four ran at once: nothing held any of them back


def test_a_pool_process_keeps_small_inputs_and_gives_large_ones_back(monkeypatch):
    import torch

    from tritonbench_lab.measure import precompile as pool

    monkeypatch.setattr(pool, "_inputs", {})
    made = []

    def make(n):
        def inputs():
            made.append(n)
            return {"x": torch.ones(n, dtype=torch.uint8), "eps": 1e-6}
        return inputs

    small = Job("k", (1,), "fp32", 0, {})
    pool.shape_inputs(small, make(1024))
    pool.give_back_large_inputs()
    pool.shape_inputs(small, make(1024))  # the same case: kept, not made again
    assert made == [1024] and pool._inputs
    monkeypatch.setattr(pool, "KEEP_INPUTS_BYTES", 512)
    pool.give_back_large_inputs()
    assert not pool._inputs  # 1024 bytes > 512: given back
    pool.shape_inputs(small, make(1024))
    assert made == [1024, 1024]
