"""Shared by the kernel tests: pick configs from a spec's pruned space and check a launch,
into outputs inside the guard band a sweep puts around them (verify.guard)."""

from __future__ import annotations

import random

import torch

from tritonbench_lab.measure.verify import Verdict, check, guard
from tritonbench_lab.space import HOPPER, Config
from tritonbench_lab.spec import KernelSpec, Shape


def configs_for(spec: KernelSpec, shape: Shape, dtype: torch.dtype, count: int = 1,
                seed: int = 0) -> list[Config]:
    """The default config, the configs with the smallest and the largest tile, and `count`
    random others from the space as pruned for Hopper, without repeats."""
    kept, pruned = spec.space.prune(dict(shape.dims), dtype.itemsize, HOPPER)
    assert kept, f"every config of {spec.name} pruned at {shape}"
    if len(kept) < count + 2:
        # Tiny shapes leave few useful configs; pruned ones still must compute the right
        # thing (they only waste threads), so test them too, except TMA configs pruned
        # because descriptors cannot describe the tensors (their launcher refuses those).
        kept += [config for config, why in pruned if not why.startswith("TMA=1 needs")]

    def tile(config: Config) -> int:
        size = 1
        for key, value in config.items():
            if key.startswith("BLOCK") or key == "ROWS":
                size *= value
        return size * config.get("num_warps", 1)

    # The default config where it runs at this shape (softmax's does not on rows wider than
    # one program holds).
    default = [spec.space.default] if spec.space.complete(spec.space.default) in kept else []
    unique: list[Config] = []
    for config in default + [min(kept, key=tile), max(kept, key=tile)]:
        if config not in unique:
            unique.append(config)
    others = [config for config in kept if config not in unique]
    missing = max(0, count + 2 - len(unique))  # distinct random others up to count + 2
    unique += random.Random(seed).sample(others, min(len(others), missing))
    return unique


def run_and_check(spec: KernelSpec, inputs: dict, config: Config,
                  dtype: torch.dtype) -> Verdict:
    guarded = guard(spec.allocate_outputs(inputs))
    spec.launch(inputs, config, guarded.outputs)
    overrun = guarded.overrun()
    if overrun:
        return Verdict(False, float("inf"), float("inf"), overrun)
    return check(guarded.outputs, spec.reference(inputs), spec.tolerance[dtype])


def check_configs_at(spec: KernelSpec, shape: Shape, dtype: torch.dtype, device: str,
                     seed: int, count: int = 1) -> int:
    """configs_for's configs at one shape, each against the reference; how many ran."""
    inputs = spec.make_inputs(shape, dtype, device, seed=seed)
    configs = configs_for(spec, shape, dtype, count=count)
    for config in configs:
        verdict = run_and_check(spec, inputs, config, dtype)
        assert verdict.ok, f"{shape} {config}: {verdict.detail}"
    return len(configs)


def check_default_shapes(spec: KernelSpec, dtype: torch.dtype, device: str, seed: int) -> None:
    """Every default shape under configs_for's configs (the GPU tests of each kernel)."""
    for shape in spec.default_shapes:
        check_configs_at(spec, shape, dtype, device, seed)
