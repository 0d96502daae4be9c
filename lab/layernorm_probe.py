"""Lab probe, not part of the product (nothing imports it): where does torch.compile's
layernorm beat tlab's at fp32 by 0.5-0.8%? (BENCHMARKS.md, "Where tlab falls short".)

At each fp32 shape: the committed winner (tritonbench_lab.kernels.layernorm), the same three
walks with no masks at all (the width a multiple of the tile, the rows of ROWS: what
Inductor emits when its block divides the size) at a few tiles and warps, and
torch.compile's kernel, timed in turns in one process, ROUNDS rounds of do_bench; prints
each median time and its ratio to torch.compile's. Also writes Inductor's generated code
and the config its autotuner picked to $OUT (or .) as inductor_<shape>.py.

    PYTHONPATH=. python3 lab/layernorm_probe.py
    SMOKE=1 TRITON_INTERPRET=1 PYTHONPATH=. python3 lab/layernorm_probe.py  # CPU: checks only
"""

import csv
import os
import pathlib
import statistics

import torch
import triton
import triton.language as tl

from tritonbench_lab.kernels import layernorm as ln
from tritonbench_lab.records import parse_config_text
from tritonbench_lab.spec import Shape

ROUNDS = 9
SHAPES = ((16384, 2048), (16384, 4096), (16384, 5120), (65536, 4096), (16384, 8192))
SMOKE = bool(os.environ.get("SMOKE"))  # on a CPU: small shapes, results checked, nothing timed
DEVICE = "cpu" if SMOKE else "cuda"
if SMOKE:
    SHAPES = ((8, 2048), (4, 4096))
UNMASKED = ((1, 1024, 8), (1, 2048, 8), (1, 2048, 16), (1, 1024, 16), (2, 2048, 16))


@triton.jit
def unmasked_walks(x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, eps,
                   N: tl.constexpr, TILE: tl.constexpr, R: tl.constexpr):
    """Three walks over R rows, TILE columns a step, every access unmasked."""
    row = tl.program_id(0) * R + tl.arange(0, R)[:, None]
    offs = tl.arange(0, TILE)[None, :]
    acc = tl.zeros((R, TILE), dtype=tl.float32)
    for k in range(0, N, TILE):
        acc += tl.load(x_ptr + row * stride_x + k + offs, eviction_policy="evict_last")
    mu = tl.sum(acc, axis=1)[:, None] / N
    acc = tl.zeros((R, TILE), dtype=tl.float32)
    for k in range(0, N, TILE):
        d = tl.load(x_ptr + row * stride_x + k + offs, eviction_policy="evict_last") - mu
        acc += d * d
    inv = tl.math.rsqrt(tl.sum(acc, axis=1)[:, None] / N + eps)
    for k in range(0, N, TILE):
        v = tl.load(x_ptr + row * stride_x + k + offs, eviction_policy="evict_first")
        g = tl.load(w_ptr + k + offs, eviction_policy="evict_last")
        h = tl.load(b_ptr + k + offs, eviction_policy="evict_last")
        tl.store(y_ptr + row * stride_y + k + offs, (v - mu) * inv * g + h)


def run_unmasked(x, w, b, eps, out, rows_per, tile, warps):
    n_rows, n_cols = x.shape
    assert n_cols % tile == 0 and n_rows % rows_per == 0
    unmasked_walks[(n_rows // rows_per,)](x, w, b, out, x.stride(0), out.stride(0), eps,
                                          N=n_cols, TILE=tile, R=rows_per, num_warps=warps)
    return out


def committed(shape):
    with open("configs/nvidia-h200/layernorm.csv") as f:
        for row in csv.DictReader(f):
            if row["dtype"] == "fp32" and row["shape"] == shape:
                return parse_config_text(row["config"])
    raise KeyError(shape)


def inductor_config(out_dir, name, seen):
    """Inductor's generated code since `seen` modules, and each autotuner's picked config,
    written to a file."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    lines = []
    for module in list(PyCodeCache.modules)[seen:]:
        for attr in dir(module):
            obj = getattr(module, attr)
            if isinstance(obj, CachingAutotuner):
                picked = [str(launcher.config) for launcher in obj.launchers]
                lines.append(f"# {attr}: picked {picked}")
        lines.append(pathlib.Path(module.__file__).read_text())
    (out_dir / f"inductor_{name}.py").write_text("\n".join(lines))
    return [line for line in lines if line.startswith("# ")]


def main():
    out_dir = pathlib.Path(os.environ.get("OUT", "."))
    for n_rows, n_cols in SHAPES:
        name = f"{n_rows}x{n_cols}"
        torch._dynamo.reset()
        from torch._inductor.codecache import PyCodeCache

        seen = len(PyCodeCache.modules)
        inputs = ln.make_inputs(Shape.of(rows=n_rows, cols=n_cols), torch.float32, DEVICE, 0)
        x, w, b, eps = inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"]
        ref = ln.torch_layernorm(inputs)
        out = torch.empty_like(x)
        compiled = torch.compile(ln.unfused_layernorm, dynamic=False)
        fns = {"compiled": lambda: compiled(inputs)}  # noqa: B023 (used in this iteration)
        config = committed("16384x2048" if SMOKE else name)
        fns[f"tlab {config}"] = lambda: ln.layernorm(x, w, b, eps, config, out)  # noqa: B023
        for r, t, nw in UNMASKED:
            if n_cols % t == 0:
                fns[f"unmasked R{r} T{t} w{nw}"] = (
                    lambda r=r, t=t, nw=nw: run_unmasked(x, w, b, eps, out, r, t, nw))  # noqa: B023
        for key, fn in fns.items():
            got = fn()
            torch.testing.assert_close(got, ref, atol=5e-5, rtol=5e-5, msg=key)
        if SMOKE:
            print(name, "correct:", ", ".join(fns), flush=True)
            continue
        for line in inductor_config(out_dir, name, seen):
            print(name, line, flush=True)
        times = {key: [] for key in fns}
        for _ in range(ROUNDS):
            for key, fn in fns.items():
                times[key].append(triton.testing.do_bench(fn, warmup=50, rep=150))
        base = statistics.median(times["compiled"])
        for key, t in times.items():
            med = statistics.median(t)
            print(f"{name} {key}: {med * 1e3:.2f} us, {base / med:.4f}x torch.compile", flush=True)


if __name__ == "__main__":
    main()
