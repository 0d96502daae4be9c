"""Old import paths of modules that moved into the package's wings, kept working.

`import tritonbench_lab.store` (or `from tritonbench_lab.calibrate import ceiling_for`) still
works in code written before the wings: it gets a stand-in module that fetches each name from
the module's new home when first asked for, and warns once with a `MovedWarning` naming it.
Nothing in tlab itself uses these paths (the tests turn the warning into an error).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

# old module (under tritonbench_lab) -> its new home(s), searched in order for each name
MOVED: dict[str, tuple[str, ...]] = {
    **{old: (f"data.{old}",) for old in ("records", "store", "layout", "winners", "archive")},
    **{old: (f"measure.{old}",) for old in (
        "plan", "sweep", "schedule", "raydevices", "worker", "children", "crosscompile",
        "timing", "verify", "cases", "env", "source")},
    "devices": ("measure.devices", "measure.raydevices"),  # make_devices moved beside Ray's
    "precompile": ("measure.precompile", "measure.children"),  # pin_triton_cache_dir
    "calibrate": ("data.ceilings", "measure.calibrate"),  # reading ceilings; measuring them
    "search": ("search.strategies",),
    **{old: (f"search.{old}",) for old in ("prior", "replay", "contenders")},
    "launching": ("runtime.launching",),
    **{old: (f"views.{old}",) for old in ("series", "plots", "report", "compare", "export",
                                          "targets")},
    **{old: (f"gates.{old}",) for old in ("check", "retime", "regret", "hosttimes", "opsbench")},
}
PACKAGE = "tritonbench_lab"


class MovedWarning(DeprecationWarning):
    """An import through a path of a module that has moved."""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        prefix, _, old = fullname.partition(".")
        if prefix != PACKAGE or old not in MOVED or old == "search":
            return None  # search/ is a package now: `tritonbench_lab.search` is that package
        homes = [f"{PACKAGE}.{home}" for home in MOVED[old]]
        warnings.warn(f"{fullname} has moved: import from {homes[0]}", MovedWarning,
                      stacklevel=3)
        return importlib.machinery.ModuleSpec(fullname, _Loader(homes))


class _Loader(importlib.abc.Loader):
    def __init__(self, homes: list[str]):
        self.homes = homes

    def create_module(self, spec):
        return None  # a plain module; exec_module makes it a stand-in

    def exec_module(self, module: types.ModuleType) -> None:
        homes = self.homes

        def fetch(name: str):
            for home in homes:
                found = getattr(importlib.import_module(home), name, _MISSING)
                if found is not _MISSING:
                    return found
            raise AttributeError(f"module {module.__name__!r} (now {homes[0]}) has no {name!r}")

        module.__getattr__ = fetch


_MISSING = object()


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
