"""tlab: tune Triton kernels over their config spaces, verify them, measure them honestly.

Importing the package is cheap: it loads neither torch nor triton. Kernels live in
`tritonbench_lab.kernels`; the contract they fill in lives in `tritonbench_lab.spec`.
"""

__version__ = "0.1.0"
