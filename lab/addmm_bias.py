"""Lab probe, not part of the product (nothing imports it): what ops.addmm's bias costs where
tlab's matmul kernel runs (the kernel, then the bias added in a pass over C) against
torch.addmm (cuBLAS, the bias in its epilogue), at the projections of model-bench's block in
prefill. Per shape, do_bench medians in one process: torch.addmm, ops.addmm, tlab's bound
launch without the bias, torch.matmul, and the bias pass alone. Then a biased layer of odd
width (an LM head with a bias) prepared by ops.prepare_linear against F.linear and against
the padded product with the bias added after it.

    PYTHONPATH=. python3 lab/addmm_bias.py        (GPU; reads $TLAB_CONFIG_DIR's configs)
"""

import torch
import triton.testing

from tritonbench_lab import ops

# (M, N, K): qkv, o, down projections of the 1b and 7b blocks at 2048 and 4096 tokens
SHAPES = [(m, n, k) for m in (2048, 4096) for n, k in (
    (6144, 2048), (2048, 2048), (2048, 8192), (12288, 4096), (4096, 4096), (4096, 16384))]


def ms(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100)


def one(m: int, n: int, k: int, gen: torch.Generator) -> str:
    a = torch.randn(m, k, generator=gen, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, generator=gen, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    bias = torch.randn(n, generator=gen, device="cuda", dtype=torch.bfloat16)
    ops.matmul(a, b)  # the plan made; its eager launch, else its captured one
    launch = (ops.bound_launch("matmul", torch.bfloat16, (m, n, k), a.get_device())
              or ops.bound_launch("matmul", torch.bfloat16, (m, n, k), a.get_device(),
                                  captured=True))
    c = torch.matmul(a, b)
    t_addmm, t_ops = ms(lambda: torch.addmm(bias, a, b)), ms(lambda: ops.addmm(bias, a, b))
    t_mm = ms(lambda: torch.matmul(a, b))
    t_kernel = ms(lambda: launch(a, b, None)) if launch is not None else float("nan")
    t_pass = ms(lambda: c.add_(bias))
    return (f"{m}x{n}x{k} | {t_addmm * 1e3:.1f} | {t_ops * 1e3:.1f} | {t_kernel * 1e3:.1f} | "
            f"{t_mm * 1e3:.1f} | {t_pass * 1e3:.1f} | {t_addmm / t_ops:.3f} | "
            f"{t_mm / t_kernel:.3f}")


# (M, N, K): a linear layer with a bias and an odd width (GPT-2's vocabulary), prepared
HEADS = [(1024, 50257, 768), (2048, 50257, 2048), (8, 50257, 2048)]


def head(m: int, n: int, k: int, gen: torch.Generator) -> str:
    """A biased layer of odd width three ways: F.linear unpadded, prepare_linear (torch.addmm
    at the padded width) and ops.matmul at the padded width with the bias added after (what
    prepare_linear did before)."""
    layer = torch.nn.Linear(k, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(m, k, generator=gen, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        prepared, plain = ops.prepare_linear(layer), ops.prepare_linear(layer.weight)
        bias = layer.bias.detach()
        t_linear = ms(lambda: torch.nn.functional.linear(x, layer.weight, layer.bias))
        t_addmm = ms(lambda: prepared(x))
        t_pass = ms(lambda: plain(x) + bias)
    return (f"{m}x{n}x{k} | {t_linear * 1e3:.1f} | {t_addmm * 1e3:.1f} | {t_pass * 1e3:.1f} | "
            f"{t_linear / t_addmm:.3f} | {t_pass / t_addmm:.3f}")


def main() -> None:
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("M x N x K | torch.addmm us | ops.addmm us | tlab kernel us | torch.matmul us | "
          "bias pass us | addmm ratio | matmul ratio")
    for m, n, k in SHAPES:
        print(one(m, n, k, gen), flush=True)
    print("\nM x N x K (biased, odd width) | F.linear us | prepared (addmm, padded) us | "
          "padded matmul + bias us | linear / prepared | matmul+bias / prepared")
    for m, n, k in HEADS:
        print(head(m, n, k, gen), flush=True)


if __name__ == "__main__":
    main()
