"""`tlab` as users run it, for tests of a command's whole output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO


def tlab(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """`tlab ARGS` in a process of its own, from the repository root (or `cwd`: a user's
    project folder), on a console wide enough (200 columns) that rich does not wrap table
    cells."""
    return subprocess.run([sys.executable, "-m", "tritonbench_lab", *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd, env={**os.environ, "COLUMNS": "200"})
