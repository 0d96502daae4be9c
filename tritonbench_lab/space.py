"""Config spaces: the product of parameter lists, cut down by constraints.

A config is a plain dict of integers, e.g.
    {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
Upper-case keys are the kernel's `tl.constexpr` meta-parameters; `num_warps` and
`num_stages` are Triton launch options. A constraint looks at one config for one shape,
dtype and device and returns why the config is pointless or cannot run there (or None), so
that pruning happens before anything is compiled and every pruned config has a reason.

This module imports neither torch nor triton; dtypes reach it as element sizes in bytes.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbench_lab.errors import TlabError

Config = dict[str, int]

# Launch options Triton takes beside the meta-parameters.
LAUNCH_OPTIONS = ("num_warps", "num_stages")


@dataclass(frozen=True)
class DeviceLimits:
    """What a config must fit into on one GPU."""

    label: str
    shared_memory_bytes: int  # per block, opt-in maximum (what Triton's OutOfResources checks)
    max_warps: int = 32  # 1024 threads per block on every NVIDIA GPU since Kepler
    tma: bool = False  # has the tensor memory accelerator (tensor descriptors): sm_90 and newer
    sms: int = 132  # streaming multiprocessors (H100 SXM and H200: 132)


# Hopper (sm_90: H100, H200): Triton reports 232,448 bytes (227 KiB) of shared memory per
# block. Used when no GPU is visible so that `tlab list` shows the space a Hopper sweep runs.
# Triton's interpreter computes tensor descriptors too, so it gets Hopper's limits as well.
HOPPER = DeviceLimits(label="sm_90 (H100/H200)", shared_memory_bytes=232_448, tma=True)

# A constraint gets (config, shape sizes by name, element size in bytes, device limits) and
# returns a reason the config is pruned, or None to keep it.
Constraint = Callable[[Config, Mapping[str, int], int, DeviceLimits], "str | None"]
# An exclusion gets a config alone and returns why no shape or device could make it a config
# of the kernel (a parameter that only one of two kernels reads, set on the other), or None.
Exclusion = Callable[[Config], "str | None"]


@dataclass(frozen=True)
class Space:
    """Parameter lists (their product is the space) plus constraints that prune it."""

    params: Mapping[str, tuple[int, ...]]
    constraints: tuple[Constraint, ...] = ()
    # The config someone would write without tuning; it must lie inside the space.
    default: Config = field(default_factory=dict)
    # Parameters added to the kernel after configs had been tuned, each with the value that
    # does what the kernel did before it existed (softmax: PER_SM=0, SPLIT=1). A config
    # written without one is completed with it, so committed configs survive a grown space.
    added: Mapping[str, int] = field(default_factory=dict)
    # Combinations of the product that are not configs at all: left out of the space rather
    # than pruned at every shape (a pruned config is a `skipped` row in every sweep).
    excludes: tuple[Exclusion, ...] = ()

    def __post_init__(self) -> None:
        for name, values in self.params.items():
            if not values or any(not isinstance(v, int) or isinstance(v, bool) for v in values):
                raise ValueError(f"space parameter {name!r} needs a non-empty list of integers")
        for name, value in self.added.items():
            if value not in self.params.get(name, ()):
                raise ValueError(f"added parameter {name}={value} is not a value of the space")
        if self.default and self.outside(self.default):
            raise ValueError(f"default config is outside the space: {self.outside(self.default)}")

    def __len__(self) -> int:
        if not self.excludes:
            return math.prod(len(v) for v in self.params.values())
        return sum(1 for _ in self)

    def __iter__(self) -> Iterator[Config]:
        names = list(self.params)
        for values in itertools.product(*self.params.values()):
            config = dict(zip(names, values, strict=True))
            if not self.excluded(config):
                yield config

    def excluded(self, config: Mapping[str, Any]) -> str | None:
        """Why `config` (a complete point of the product) is left out of the space, or None."""
        return next((why for rule in self.excludes if (why := rule(dict(config)))), None)

    def complete(self, config: Mapping[str, Any]) -> Config:
        """`config` with every added parameter it lacks set to its earlier behaviour, in the
        space's parameter order (a config from before a parameter existed means that)."""
        if list(config) == list(self.params):  # complete already (every launch of ops')
            return dict(config)
        known = {**self.added, **config}
        return {name: known[name] for name in self.params if name in known} | {
            name: value for name, value in config.items() if name not in self.params}

    def outside(self, config: Mapping[str, Any]) -> str | None:
        """Why `config` is not a point of this space, or None when it is."""
        unknown = sorted(set(config) - set(self.params))
        if unknown:
            return f"unknown parameter(s) {', '.join(unknown)} (known: {', '.join(self.params)})"
        missing = [name for name in self.params if name not in config]
        if missing:
            return f"missing parameter(s) {', '.join(missing)}"
        for name, values in self.params.items():
            if config[name] not in values:
                return f"{name}={config[name]} is not one of {list(values)}"
        return self.excluded(config)

    def narrow(self, params: Mapping[str, tuple[int, ...]]) -> Space:
        """This space with some parameter lists replaced; constraints and other settings
        kept. Its default config stays when still inside (else the first value of each list),
        and so do the values completing configs from before an added parameter."""
        params = {**self.params, **params}
        default = dict(self.default)
        if any(default.get(k) not in params[k] for k in params):
            default = {k: params[k][0] for k in params}
        added = {k: v for k, v in self.added.items() if v in params[k]}
        return dataclasses.replace(self, params=params, default=default, added=added)

    def why_pruned(
        self, config: Config, sizes: Mapping[str, int], elem_bytes: int, limits: DeviceLimits
    ) -> str | None:
        for constraint in self.constraints:
            reason = constraint(config, sizes, elem_bytes, limits)
            if reason:
                return reason
        return None

    def default_at(self, sizes: Mapping[str, int], elem_bytes: int, limits: DeviceLimits
                   ) -> Config | None:
        """The untuned config at one shape, dtype and device: the space's default where no
        constraint prunes it there, otherwise the config left there nearest to it
        (`nearest_default`), so that the kernel runs untuned at every shape it takes. None
        where every config is pruned."""
        default = dict(self.default)
        if default and not self.why_pruned(default, sizes, elem_bytes, limits):
            return default
        return self.nearest_default(self.prune(sizes, elem_bytes, limits)[0])

    def nearest_default(self, configs: Iterable[Config]) -> Config | None:
        """Of `configs`, the space's default, else the one nearest to it: fewest parameters
        changed, then fewest steps along their value lists, then the first in their order.
        None when there are none."""
        default = dict(self.default)

        def distance(config: Config) -> tuple[int, int]:
            changed = [name for name in default if config[name] != default[name]]
            steps = sum(abs(self.params[n].index(config[n]) - self.params[n].index(default[n]))
                        for n in changed)
            return len(changed), steps

        return min(configs, key=distance, default=None)

    def prune(
        self, sizes: Mapping[str, int], elem_bytes: int, limits: DeviceLimits
    ) -> tuple[list[Config], list[tuple[Config, str]]]:
        """(kept configs, [(pruned config, reason)]) for one shape, dtype and device."""
        kept, pruned = [], []
        for config in self:
            reason = self.why_pruned(config, sizes, elem_bytes, limits)
            if reason:
                pruned.append((config, reason))
            else:
                kept.append(config)
        return kept, pruned


SPACE_PRESETS = {
    "full": "every config of the kernel's space (pruned for the device)",
    "default": "only the kernel's untuned config at each shape (Space.default_at)",
}

# Where a sweep's shapes and dtypes are: (shape sizes by name, element size in bytes) each.
Where = Iterable[tuple[Mapping[str, int], int]]


def load_space(space: Space, text: str, where: Where = (), limits: DeviceLimits = HOPPER
               ) -> Space:
    """`--space`: a preset name, or a JSON file {"PARAM": [values], ...} replacing those
    lists of `space`; `default` is the untuned config at each of `where` on a device of
    `limits` (untuned_space). Anything else is a one-line TlabError."""
    if text == "full":
        return space
    if text == "default":
        return untuned_space(space, where, limits)
    path = Path(text)
    if not path.is_file():
        raise TlabError(f"--space {text!r}: not a preset ({', '.join(SPACE_PRESETS)}) nor a file "
                        f"(none there): give a preset or a JSON file")
    try:
        overrides = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise TlabError(f"--space file {text!r} is not valid JSON: {err}") from err
    if not isinstance(overrides, dict) or not overrides:
        raise TlabError(f"--space file {text!r} must be a JSON object of parameter -> [integers]")
    params = {}
    for name, values in overrides.items():
        if name not in space.params:
            raise TlabError(f"--space file {text!r}: unknown parameter {name!r} "
                            f"(known: {', '.join(space.params)})")
        # 0 is a value only where the kernel's own space has it (PER_SM=0: not persistent).
        lowest = 0 if 0 in space.params[name] else 1
        ok = isinstance(values, list) and values and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= lowest for v in values)
        if not ok:
            kind = "integers >= 0" if lowest == 0 else "positive integers"
            raise TlabError(f"--space file {text!r}: {name} must be a non-empty list of {kind}")
        params[name] = tuple(values)
    return space.narrow(params)


def untuned_space(space: Space, where: Where, limits: DeviceLimits) -> Space:
    """`--space default`: at each shape and dtype of `where`, only the untuned config there
    (Space.default_at; the space's default where nothing is given). Its lists hold the values
    of those configs; any other combination of them is left out of the space, and one that is
    the untuned config elsewhere only is pruned where it is not."""
    found: dict[tuple, Config | None] = {}

    def untuned(sizes: Mapping[str, int], elem_bytes: int, device: DeviceLimits):
        key = (tuple(sorted(sizes.items())), elem_bytes, device)
        if key not in found:
            found[key] = space.default_at(sizes, elem_bytes, device)
        return found[key]

    chosen = [c for sizes, elem_bytes in where if (c := untuned(sizes, elem_bytes, limits))]
    chosen = chosen or [dict(space.default) or next(iter(space))]
    texts = {config_text(c) for c in chosen}

    def one_of_them(config: Config) -> str | None:
        return None if config_text(config) in texts else "not the untuned config of a shape swept"

    def the_one_here(config: Config, sizes, elem_bytes: int, device: DeviceLimits) -> str | None:
        here = untuned(sizes, elem_bytes, device)
        if here is None or config == here:
            return None
        return f"the untuned config at this shape is {config_text(here)}"

    narrowed = space.narrow({name: tuple(v for v in values if any(c[name] == v for c in chosen))
                             for name, values in space.params.items()})
    default = dict(space.default) if dict(space.default) in chosen else chosen[0]
    return dataclasses.replace(narrowed, default=default, excludes=(*space.excludes, one_of_them),
                               constraints=(*space.constraints, the_one_here))


def split_config(config: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(meta-parameters for the kernel, launch options for Triton)."""
    meta, options = {}, {}
    for name, value in config.items():  # one pass: this runs on every launch
        (options if name in LAUNCH_OPTIONS else meta)[name] = value
    return meta, options


def config_text(config: Mapping[str, int]) -> str:
    """Readable, stable form: 'BLOCK_M=128 BLOCK_N=256 num_warps=8'."""
    return " ".join(f"{k}={v}" for k, v in config.items())


_SHORT_NAMES = {"num_warps": "w", "num_stages": "s"}


def _short(name: str) -> str:
    if name in _SHORT_NAMES:
        return _SHORT_NAMES[name]
    head, _, tail = name.partition("_")
    return head[0] + tail if tail else name  # BLOCK_M -> BM, GROUP_M -> GM, ROWS -> ROWS


def config_short(config: Mapping[str, int]) -> str:
    """Compact form for tables: 'BM=128 BN=256 BK=64 GM=8 w=8 s=3'."""
    return " ".join(f"{_short(k)}={v}" for k, v in config.items())


def config_legend(configs: Iterable[Mapping[str, int]]) -> str:
    """'config keys: w = num_warps, PSM = PER_SM' for the names config_short shortened in
    these configs ('' when none was)."""
    names = dict.fromkeys(name for config in configs for name in config)
    pairs = [f"{_short(n)} = {n}" for n in names if _short(n) != n]
    return "config keys: " + ", ".join(pairs) if pairs else ""


def next_power_of_2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


# Beyond this many tile elements per thread a program keeps more live values than the 255
# registers a thread can hold and spills to local memory; such configs are never winners.
MAX_ELEMENTS_PER_THREAD = 256


def row_tile_fits(config: Config, sizes: Mapping[str, int], elem_bytes: int,
                  limits: DeviceLimits) -> str | None:
    """Row kernels hold ROWS whole rows (padded to a power of two) in registers at once, or
    1/SPLIT of one row where SPLIT programs share it (1/TILES of that where a program walks
    its piece in TILES tiles)."""
    threads = 32 * config["num_warps"]
    elements = (config.get("ROWS", 1) * next_power_of_2(sizes["cols"])
                // config.get("SPLIT", 1) // config.get("TILES", 1))
    if config["num_warps"] > limits.max_warps:
        return f"num_warps={config['num_warps']} exceeds {limits.max_warps}"
    if elements > MAX_ELEMENTS_PER_THREAD * threads:
        return (f"{elements} tile elements over {threads} threads is more than "
                f"{MAX_ELEMENTS_PER_THREAD} per thread (register spills)")
    if elements < threads and config["num_warps"] > 1:  # one warp is always kept as the floor
        return f"{elements} tile elements leave some of the {threads} threads idle"
    return None


def rows_not_exceeding(config: Config, sizes: Mapping[str, int], elem_bytes: int,
                       limits: DeviceLimits) -> str | None:
    """More rows per program than the tensor has only repeats a smaller config's work."""
    rows = config.get("ROWS", 1)
    if rows > 1 and rows > sizes["rows"]:
        return f"ROWS={rows} exceeds the {sizes['rows']} rows of the tensor"
    return None


# Rough costs of Triton's interpreter on one core of the machines tlab is tested on: each
# program pays a fixed cost, then a little per tile element (measured with triton 3.9 on
# row kernels from 64x256 to 8192x256 and 64x65536; within a factor of two).
INTERPRETER_S_PER_PROGRAM = 6e-3
INTERPRETER_ROWS = 64  # what a single size means for a row kernel in the interpreter: 64 x n
INTERPRETER_S_PER_ELEMENT = 1.1e-7


def row_interpreter_seconds(sizes: Mapping[str, int], config: Config) -> float:
    """Interpreter time of one launch of a row kernel: one program per tile of ROWS rows, or
    SPLIT programs per row (launched twice there: a first launch publishes every piece)."""
    rows_per_tile, split = config.get("ROWS", 1), config.get("SPLIT", 1)
    programs = math.ceil(sizes["rows"] / rows_per_tile) * split
    elements = rows_per_tile * next_power_of_2(sizes["cols"]) // split
    per_program = INTERPRETER_S_PER_PROGRAM + INTERPRETER_S_PER_ELEMENT * elements
    return (2 if split > 1 else 1) * programs * per_program
