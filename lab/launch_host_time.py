"""Lab probe, not part of the product (nothing imports it): where does the host time of one
launch of tlab's layernorm go? (BENCHMARKS.md, "Where tlab falls short": 52-55 µs a launch
on the H200's host against 7.5-21 µs for F.layer_norm, so eager calls of a few µs lose.)

At fp32 1x3072 (a few µs of GPU time), the mean wall time a call of CALLS calls enqueued
back to back (there the host sets the pace wherever a launch costs more host time than the
kernel GPU time), and with torch.cuda.synchronize() after each call, of:
  ops       tritonbench_lab.ops.layernorm (the memoised choice, then the launcher);
  launcher  kernels.layernorm.layernorm with its config (tlab's checks, then Triton);
  triton    layernorm_kernel[grid](...) with every argument precomputed (Triton's dispatch);
  compiled  the CompiledKernel that launch returned, called as compiled[grid](*args)
            (Triton's binding and cache lookup skipped), with every argument, constexprs
            included (how triton 3.9 launches) and, if that fails, without them;
  torch     F.layer_norm;
then ops, launcher and triton again with tritonbench_lab.runtime.launching's fast launch installed
(TLAB_FAST_LAUNCH's: the compiled kernel's launcher called directly after the first call).
Outputs of triton, compiled and the fast launch are checked against the launcher's first.
Then a cProfile of the launcher's calls (top 15 by own time), fast launch off and on.

    PYTHONPATH=. python3 lab/launch_host_time.py
"""

import cProfile
import pstats
import time

import torch
import torch.nn.functional as F
import triton

from tritonbench_lab import ops
from tritonbench_lab.kernels import layernorm as ln
from tritonbench_lab.runtime import launching
from tritonbench_lab.space import split_config
from tritonbench_lab.spec import Shape

CALLS = 2000
ROWS, COLS = 1, 3072
CONFIG = {"ROWS": 1, "num_warps": 16, "TILE_COLS": 0}


def per_call_us(fn, sync_each: bool) -> float:
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
        if sync_each:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    inputs = ln.make_inputs(Shape.of(rows=ROWS, cols=COLS), torch.float32, "cuda", 0)
    x, w, b, eps = inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"]
    out = torch.empty_like(x)
    expected = ln.layernorm(x, w, b, eps, CONFIG).clone()
    meta, options = split_config(ln.SPACE.complete(CONFIG))
    args = (x, w, b, out, ROWS, x.stride(0), out.stride(0), eps)
    consts = dict(N_COLS=COLS, BLOCK_COLS=triton.next_power_of_2(COLS), **meta,
                  EVEN_ROWS=True, EVEN_COLS=False)
    grid = (triton.cdiv(ROWS, meta["ROWS"]),)
    compiled = ln.layernorm_kernel[grid](*args, **consts, **options)
    forms = {
        "ops": lambda: ops.layernorm(x, w, b, eps),
        "launcher": lambda: ln.layernorm(x, w, b, eps, CONFIG, out),
        "triton": lambda: ln.layernorm_kernel[grid](*args, **consts, **options),
        "torch": lambda: F.layer_norm(x, (COLS,), w, b, eps),
    }
    params = [p.name for p in ln.layernorm_kernel.params]
    full = [dict(zip(params[:len(args)], args, strict=True)).get(p, consts.get(p)) for p in params]
    for name, call_args in (("compiled (all args)", full), ("compiled (no constexprs)", list(args))):
        try:
            out.fill_(float("nan"))
            compiled[grid](*call_args)
            torch.cuda.synchronize()
            torch.testing.assert_close(out, expected)
            forms[name] = lambda call_args=call_args: compiled[grid](*call_args)
            print(f"{name}: output matches", flush=True)
            break
        except Exception as error:  # the launcher's arity differs between Triton versions
            print(f"{name}: {type(error).__name__}: {str(error)[:200]}", flush=True)
    out.fill_(float("nan"))
    forms["triton"]()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, expected)
    print(f"triton {triton.__version__}, torch {torch.__version__}, fp32 {ROWS}x{COLS}, {CONFIG}")
    for name, fn in forms.items():
        print(f"{name:>24}: {per_call_us(fn, False):6.1f} us a call back to back, "
              f"{per_call_us(fn, True):6.1f} us with a sync after each", flush=True)
    # The same launches the short way (tritonbench_lab/runtime/launching.py), checked first.
    given = launching.install_for(ln.launch)
    for _ in range(2):  # the first goes through Triton, the second the short way
        out.fill_(float("nan"))
        forms["launcher"]()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, expected)
    assert ln.layernorm_kernel.run.kept, "the short way was not taken"
    print(f"fast launch installed on {[f.__name__ for f in given]}: output matches")
    for name in ("ops", "launcher", "triton"):
        fn = forms[name]
        print(f"{name + ', fast launch':>24}: {per_call_us(fn, False):6.1f} us a call back to "
              f"back, {per_call_us(fn, True):6.1f} us with a sync after each", flush=True)
    for fast in (False, True):
        launching._active[0] = fast
        profile = cProfile.Profile()
        profile.runcall(lambda: [forms["launcher"]() for _ in range(CALLS)])
        print(f"--- the launcher's calls, fast launch {'on' if fast else 'off'}")
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
