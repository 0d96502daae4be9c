"""Lab instrument, not part of the product (nothing imports it): run a tlab command with
every sweep event (rows started and written, batches queued, each compile the pool finishes
or is given) logged with its time since start, in ms, to $TIMELINE (json lines). How the
search and main-job timelines in BENCHMARKS.md ("Sweep speed") were taken:

    TIMELINE=t.jsonl PYTHONPATH=. python3 lab/timeline.py sweep matmul --dtype bf16 ...
    python3 lab/summarize.py t.jsonl

LOOKAHEAD=N overrides sweep.LOOKAHEAD for the run."""
import json
import os
import sys
import time

T0 = time.monotonic()


def main():
    from tritonbench_lab.measure import sweep

    if os.environ.get("LOOKAHEAD"):
        sweep.LOOKAHEAD = int(os.environ["LOOKAHEAD"])
    out = open(os.environ.get("TIMELINE", "timeline.jsonl"), "a")

    def log(**kw):
        kw["t"] = round(time.monotonic() - T0, 3)
        out.write(json.dumps(kw) + "\n")
        out.flush()

    from tritonbench_lab.measure import precompile

    rec = precompile.CompilePool._record
    sub = precompile.CompilePool.submit

    def _record(self, future):
        try:
            key, seconds, error = future.result()
            log(ev="cjob", sizes=list(key[1]), cfg=key[4], s=round(seconds, 3), err=bool(error))
        except BaseException:
            pass
        return rec(self, future)

    def submit(self, jobs, *, background=False):
        jobs = list(jobs)
        log(ev="csubmit", n=len(jobs), bg=background)
        return sub(self, jobs, background=background)

    precompile.CompilePool._record = _record
    precompile.CompilePool.submit = submit
    original = sweep.run_sweep

    def traced(request, events=None):
        inner = events or sweep.SweepEvents()

        class Tee(sweep.SweepEvents):
            def planned(self, *a):
                log(ev="planned", a=list(a))
                inner.planned(*a)

            def queued(self, count, phase):
                log(ev="queued", n=count, phase=phase)
                inner.queued(count, phase)

            def started(self, task, phase, device):
                log(ev="start", phase=phase, prov=task.provider, sizes=list(task.sizes),
                    cfg=task.config)
                inner.started(task, phase, device)

            def finished(self, r):
                log(ev="done", phase=r.phase, prov=r.provider, shape=r.shape, st=r.status,
                    p50=r.p50_ms, cfg=r.config, cs=r.compile_s)
                inner.finished(r)

            def compiling(self, done, total):
                log(ev="compiled", done=done, total=total)
                inner.compiling(done, total)

            def compiled(self, summary):
                log(ev="pool", summary=summary)
                inner.compiled(summary)

            def note(self, sentence):
                inner.note(sentence)

            def shape_finished(self, tally):
                log(ev="shape", dtype=tally.dtype, shape=tally.shape, counts=tally.counts)
                inner.shape_finished(tally)

        log(ev="run_sweep")
        try:
            return original(request, Tee())
        finally:
            log(ev="run_sweep_end")

    sweep.run_sweep = traced
    from tritonbench_lab.cli import main as cli_main

    try:
        cli_main(sys.argv[1:])
    finally:
        log(ev="exit")


if __name__ == "__main__":
    main()
