"""`tlab` as users run it, for tests of a command's whole output."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.cli_server import run_tlab
from helpers.paths import REPO


def tlab(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
    """`tlab ARGS` in a process of its own (helpers/cli_server.py), from the repository root
    (or `cwd`: a user's project folder), on a console wide enough (200 columns) that rich
    does not wrap table cells; `env` adds to (or overrides) this process's environment."""
    return run_tlab(list(args), cwd=cwd, env={**os.environ, "COLUMNS": "200", **(env or {})},
                    timeout=600)
