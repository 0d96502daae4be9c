"""Matrix multiplication with a fused bias + GELU epilogue: C = gelu(A @ B + bias).

Shapes as matmul's (A is M x K, B is K x N, C is M x N, any strides); bias is a vector of N
values, added to every row. GELU in its exact form, x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
(`matmul_gelu`, torch's default), or the tanh approximation, 0.5 x (1 + tanh(sqrt(2 / pi)
(x + 0.044715 x^3))) (`matmul_gelu_tanh`, F.gelu(approximate="tanh")). The epilogue works on
the fp32 accumulator and rounds once, to C's dtype.

The kernels are matmul's own (both of them: the plain one and the persistent TMA one, with
stream-K): an EPILOGUE constexpr makes them load the bias of a tile's columns and apply GELU
before the store, so the space, pruning and the divisibility facts are matmul's, and a config
tuned here is a config of matmul. What fusing saves is the unfused form's passes over C: A @ B
writes C, `+ bias` reads and writes it, GELU reads and writes it again.

Work: 2*M*N*K flops for the product and EPILOGUE_FLOPS per element of C. Fewest bytes: read
A, B and the bias once, write C once: (M*K + K*N + M*N + N) * element size. Judged in
TFLOP/s, like matmul.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from tritonbench_lab.kernels import matmul as _matmul
from tritonbench_lab.kernels.matmul_persistent import GELU_ERF, GELU_TANH
from tritonbench_lab.space import Config
from tritonbench_lab.spec import (
    Cost,
    Inputs,
    KernelSpec,
    Outputs,
    Shape,
    compile_baseline,
    triton_max_autotune,
)

# The bias add and GELU, counted per element of C as a multiply-add count would: one add for
# the bias, about seven for GELU (its erf or its exp counted as one).
EPILOGUE_FLOPS = 8

# torch's name of each form -> the kernels' EPILOGUE constexpr
FORMS = {"none": GELU_ERF, "tanh": GELU_TANH}


def matmul_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor,
                config: Config | None = None, approximate: str = "none",
                out: torch.Tensor | None = None) -> torch.Tensor:
    """gelu(a @ b + bias) under exactly `config` (matmul's default when None); `approximate`
    as F.gelu's ("none" or "tanh"); writes into `out` if given."""
    return _matmul.bind(config, FORMS[approximate])(a, b, out, bias)


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int) -> Inputs:
    """matmul's A and B (C of order one), and a bias ~ N(0, 1): GELU's input then spans
    its curved middle and both tails."""
    inputs = _matmul.make_inputs(shape, dtype, device, seed)
    gen = torch.Generator(device=device).manual_seed(seed + 1)
    bias = torch.randn(shape["N"], generator=gen, device=device)
    return {**inputs, "bias": bias.to(dtype)}


def _form_spec(name: str, approximate: str) -> KernelSpec:
    form = FORMS[approximate]

    def launch(inputs: Inputs, config: Config, outputs: Outputs) -> Outputs:
        return (_matmul.bind(config, form)(inputs["a"], inputs["b"], outputs[0], inputs["bias"]),)

    def reference(inputs: Inputs) -> Outputs:
        c = inputs["a"].double() @ inputs["b"].double() + inputs["bias"].double()
        return (F.gelu(c, approximate=approximate),)

    def torch_linear(inputs: Inputs) -> torch.Tensor:
        """What nn.Linear then nn.GELU run: cuBLAS adds the bias in its epilogue (addmm),
        then GELU is a second pass over C."""
        return F.gelu(torch.addmm(inputs["bias"], inputs["a"], inputs["b"]),
                      approximate=approximate)

    def unfused(inputs: Inputs) -> torch.Tensor:
        """The formula as written: the product, then the bias, then GELU, each a pass."""
        return F.gelu(inputs["a"] @ inputs["b"] + inputs["bias"], approximate=approximate)

    torch_linear.__name__ = f"torch_{name}"
    unfused.__name__ = f"unfused_{name}"

    def cost(shape: Shape, dtype: torch.dtype) -> Cost:
        M, N, K = shape["M"], shape["N"], shape["K"]
        size = torch.empty((), dtype=dtype).element_size()
        return Cost(flops=2 * M * N * K + EPILOGUE_FLOPS * M * N,
                    bytes=(M * K + K * N + M * N + N) * size)

    form_text = "erf" if approximate == "none" else "tanh approximation"
    return dataclasses.replace(
        _matmul.SPEC,
        name=name,
        summary=f"C = gelu(A @ B + bias), GELU ({form_text}) fused into matmul's store",
        launch=launch,
        reference=reference,
        # torch: addmm + GELU, two kernels; unfused: three; compiled: torch.compile of the
        # formula (cuBLAS, then one fused bias + GELU kernel); inductor: max-autotune with
        # Triton templates only, which can fuse the epilogue into its own matmul.
        baselines={"torch": torch_linear, "unfused": unfused, "compiled": compile_baseline(unfused),
                   "inductor": compile_baseline(unfused, options=triton_max_autotune)},
        gpu_only_baselines=("inductor",),
        opt_in_baselines=("inductor",),  # its own tuning: seconds a shape
        make_inputs=make_inputs,
        cost=cost,
        default_shapes=DEFAULT_SHAPES,
        prior_from=("matmul",),  # the same main loop and space: its winners are good starts
    )


# Squares, and MLP up-projections that GELU follows: BERT-base's 768 -> 3072 and GPT-style
# 4x widths of 4096 at 2048-8192 tokens, Llama-2-7B's 11008 and a size of the 8-not-16 class.
DEFAULT_SHAPES = (
    *(Shape.of(M=n, N=n, K=n) for n in (1024, 2048, 4096, 8192)),
    *(Shape.of(M=m, N=n, K=k) for m, n, k in (
        (2048, 3072, 768), (2048, 11008, 4096), (4096, 16384, 4096), (8192, 16384, 4096),
        (3000, 3000, 3000))),
)

SPEC = _form_spec("matmul_gelu", "none")
TANH_SPEC = _form_spec("matmul_gelu_tanh", "tanh")
