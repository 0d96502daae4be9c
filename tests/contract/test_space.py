"""Config spaces: size, iteration, membership and pruning with reasons."""

import pytest

from tritonbench_lab.kernels.matmul import SPACE as MATMUL_SPACE
from tritonbench_lab.space import (
    HOPPER,
    DeviceLimits,
    Space,
    config_text,
    next_power_of_2,
    row_tile_fits,
    split_config,
)


def test_size_is_the_product_of_the_lists():
    space = Space(params={"A": (1, 2, 3), "B": (4, 5)})
    assert len(space) == 6
    configs = list(space)
    assert len(configs) == 6 and {"A": 3, "B": 5} in configs
    assert len({tuple(c.items()) for c in configs}) == 6


def test_matmul_space_is_large_enough_and_pruned_with_reasons():
    assert len(MATMUL_SPACE) >= 150
    sizes = {"M": 4096, "N": 4096, "K": 4096}
    kept, pruned = MATMUL_SPACE.prune(sizes, 2, HOPPER)
    assert len(kept) + len(pruned) == len(MATMUL_SPACE)
    assert kept and pruned
    reasons = {reason for _, reason in pruned}
    assert any("shared memory" in r for r in reasons)
    # 256x256 tiles can never fit 8 warps' registers: not configs of the space at all, and
    # outside() says why (so a narrowed JSON space or a `--config` cannot name one).
    assert not any(c["BLOCK_M"] == 256 and c["BLOCK_N"] == 256 for c in MATMUL_SPACE)
    wide = {**MATMUL_SPACE.default, "BLOCK_M": 256, "BLOCK_N": 256, "num_warps": 8}
    assert "registers per thread" in MATMUL_SPACE.outside(wide)
    # Stream-K is read by the persistent kernel only.
    assert all(c["TMA"] for c in MATMUL_SPACE if c["STREAM_K"])
    assert "TMA=1" in MATMUL_SPACE.outside({**MATMUL_SPACE.default, "STREAM_K": 1})


def test_exclusions_leave_combinations_out_of_the_space():
    space = Space(params={"A": (1, 2), "B": (0, 1)}, default={"A": 1, "B": 0},
                  excludes=(lambda c: "B=1 needs A=2" if c["B"] and c["A"] != 2 else None,))
    assert list(space) == [{"A": 1, "B": 0}, {"A": 2, "B": 0}, {"A": 2, "B": 1}]
    assert len(space) == 3
    assert space.outside({"A": 1, "B": 1}) == "B=1 needs A=2"
    assert len(space.narrow({"A": (1,)})) == 1  # the rule holds in a narrowed space too


def test_smaller_shared_memory_prunes_more():
    sizes = {"M": 1024, "N": 1024, "K": 1024}
    small = DeviceLimits(label="small", shared_memory_bytes=48 * 1024)
    kept_hopper, _ = MATMUL_SPACE.prune(sizes, 2, HOPPER)
    kept_small, _ = MATMUL_SPACE.prune(sizes, 2, small)
    assert len(kept_small) < len(kept_hopper)
    for c in kept_small:
        need = c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2
        assert need <= 48 * 1024


def test_wider_dtype_prunes_more_shared_memory_configs():
    sizes = {"M": 1024, "N": 1024, "K": 1024}
    assert len(MATMUL_SPACE.prune(sizes, 4, HOPPER)[0]) < len(MATMUL_SPACE.prune(sizes, 2, HOPPER)[0])


def test_outside_names_the_problem():
    space = Space(params={"BLOCK": (16, 32), "num_warps": (4,)})
    assert space.outside({"BLOCK": 16, "num_warps": 4}) is None
    assert "BLOCK=64" in space.outside({"BLOCK": 64, "num_warps": 4})
    assert "unknown parameter" in space.outside({"BLOCK": 16, "num_warps": 4, "X": 1})
    assert "missing" in space.outside({"BLOCK": 16})


def test_configs_from_before_a_parameter_are_completed_with_its_earlier_behaviour():
    space = Space(params={"BLOCK": (16, 32), "SPLIT": (1, 2), "num_warps": (4,)},
                  added={"SPLIT": 1})
    old = {"BLOCK": 32, "num_warps": 4}  # tuned before SPLIT existed
    assert "missing" in space.outside(old)
    completed = space.complete(old)
    assert completed == {"BLOCK": 32, "SPLIT": 1, "num_warps": 4}
    assert list(completed) == ["BLOCK", "SPLIT", "num_warps"]  # the space's order
    assert space.outside(completed) is None
    assert space.complete({"BLOCK": 16, "SPLIT": 2, "num_warps": 4})["SPLIT"] == 2  # kept
    # Only added parameters are filled in: a config missing another one stays wrong, and
    # unknown names stay for `outside` to report.
    assert "missing parameter(s) BLOCK" in space.outside(space.complete({"num_warps": 4}))
    assert "unknown parameter" in space.outside(space.complete({**old, "X": 1}))


def test_bad_spaces_are_rejected():
    with pytest.raises(ValueError, match="non-empty"):
        Space(params={"A": ()})
    with pytest.raises(ValueError, match="integers"):
        Space(params={"A": (1.5,)})
    with pytest.raises(ValueError, match="default"):
        Space(params={"A": (1, 2)}, default={"A": 3})
    with pytest.raises(ValueError, match="added parameter B=1"):
        Space(params={"A": (1, 2)}, added={"B": 1})
    with pytest.raises(ValueError, match="added parameter A=3"):
        Space(params={"A": (1, 2)}, added={"A": 3})


def test_row_tile_register_budget():
    wide = {"rows": 100, "cols": 65536}
    assert row_tile_fits({"ROWS": 1, "num_warps": 32}, wide, 4, HOPPER) is None
    assert "register" in row_tile_fits({"ROWS": 1, "num_warps": 1}, wide, 4, HOPPER)
    narrow = {"rows": 100, "cols": 16}
    assert "idle" in row_tile_fits({"ROWS": 1, "num_warps": 8}, narrow, 4, HOPPER)
    assert row_tile_fits({"ROWS": 1, "num_warps": 1}, narrow, 4, HOPPER) is None


def test_helpers():
    assert [next_power_of_2(n) for n in (1, 2, 3, 64, 65, 1000)] == [1, 2, 4, 64, 128, 1024]
    meta, options = split_config({"BLOCK_M": 64, "num_warps": 4, "num_stages": 3})
    assert meta == {"BLOCK_M": 64} and options == {"num_warps": 4, "num_stages": 3}
    assert config_text({"BLOCK_M": 64, "num_warps": 4}) == "BLOCK_M=64 num_warps=4"


def test_config_legend_names_only_the_shortened_keys_in_use():
    from tritonbench_lab.space import config_legend

    assert config_legend([{"ROWS": 1, "num_warps": 4, "PER_SM": 1}]) == \
        "config keys: w = num_warps, PSM = PER_SM"
    assert config_legend([{"BLOCK_M": 64, "num_stages": 3}, {"BLOCK_M": 32, "GROUP_M": 8}]) == \
        "config keys: BM = BLOCK_M, s = num_stages, GM = GROUP_M"
    assert config_legend([{"ROWS": 2}]) == "" and config_legend([]) == ""


def test_a_narrowed_space_keeps_the_kernels_constraints_and_added_parameters(tmp_path):
    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.space import load_space

    only_default = load_space(SPEC.space, "default")
    assert list(only_default) == [SPEC.space.default]
    # the kernel's constraints first, then the one that keeps the untuned config per shape
    assert only_default.constraints[:-1] == SPEC.space.constraints
    assert only_default.added == SPEC.space.added  # PER_SM=0 and SPLIT=1 are default values
    path = tmp_path / "space.json"
    path.write_text('{"SPLIT": [4, 8], "num_warps": [4]}')
    splits = load_space(SPEC.space, str(path))
    assert {c["SPLIT"] for c in splits} == {4, 8} and {c["num_warps"] for c in splits} == {4}
    assert splits.constraints == SPEC.space.constraints
    assert splits.added == {"PER_SM": 0, "TILES": 1, "KEEP_LAST": 0}  # SPLIT=1 is not a value
    assert splits.default["SPLIT"] == 4  # the kernel's default (SPLIT=1) is outside it


def test_the_untuned_config_is_the_default_or_the_nearest_config_left_at_the_shape():
    """Where a constraint prunes the default (softmax rows wider than one program holds),
    the untuned config is the config left there that changes fewest parameters, by the
    fewest steps; elsewhere it is the default itself."""
    from tritonbench_lab.space import HOPPER, Space

    def fits(config, sizes, elem_bytes, limits):
        return "too wide" if config["W"] * 4 < sizes["n"] else None

    space = Space(params={"W": (1, 2, 4, 8), "S": (1, 2)}, constraints=(fits,),
                  default={"W": 1, "S": 2})
    assert space.default_at({"n": 4}, 4, HOPPER) == {"W": 1, "S": 2}
    assert space.default_at({"n": 16}, 4, HOPPER) == {"W": 4, "S": 2}  # not W=8: nearer
    assert space.default_at({"n": 64}, 4, HOPPER) is None  # nothing left: no untuned config


def test_space_default_sweeps_the_untuned_config_of_each_shape():
    """`--space default` over shapes whose untuned configs differ: each shape gets its own and
    no other (the others are pruned there, saying which is the one)."""
    from tritonbench_lab.kernels.softmax import SPEC
    from tritonbench_lab.space import HOPPER, load_space

    narrow, wide = {"rows": 64, "cols": 1000}, {"rows": 2, "cols": 131072}
    space = load_space(SPEC.space, "default", [(narrow, 4), (wide, 4)], HOPPER)
    assert len(list(space)) == 2
    for sizes in (narrow, wide):
        kept, pruned = space.prune(sizes, 4, HOPPER)
        assert kept == [SPEC.space.default_at(sizes, 4, HOPPER)]
        assert len(pruned) == 1
    assert space.prune(narrow, 4, HOPPER)[0] == [SPEC.space.default]
    assert SPEC.space.why_pruned(SPEC.space.default, wide, 4, HOPPER)  # hence another there
