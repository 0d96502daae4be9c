"""tlab: tune Triton kernels over their config spaces, verify them, measure them honestly.

The package root holds the public surface, the modules other code imports:

- the kernel contract, which every kernel module (built-in or a user's) fills in:
  `spec` (KernelSpec, Shape, Tolerance, Cost, dtypes), `space` (Config, Space,
  constraints), `shapes` (the sizes grammar) and `errors` (TlabError);
- the runtime API for model code: `ops` (tuned kernels, never slower than the PyTorch op
  by the committed measurements) and `tuned` (the tuned config for a shape).

Everything else lives in wings, one sub-package per concern, each saying in its docstring
what it owns and what it may import: `kernels` (the built-in kernels and the registry),
`data` (rows and files), `measure` (the sweep engine), `search` (which configs to time),
`runtime` (fast launches), `views` (plots, reports, comparisons, exports), `gates` (the
checks on a GPU) and `cli` (the `tlab` command). No import cycles (tests/test_house.py).

Importing the package is cheap: it loads neither torch nor triton. Code written before the
wings may keep importing a moved module by its old path (`tritonbench_lab.store`): `_moved`
serves it from its new home, with a warning naming that home.
"""

from tritonbench_lab import _moved

__version__ = "0.1.0"

_moved.install()
