"""Where things are, the same for a test in any folder under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
# A user kernel module with planted faults, handed to `tlab ... --kernel-module`.
PLANTED = TESTS / "planted_kernels.py"
# Run as a script by runtime/test_launching.py: kernels launched through a stand-in driver.
LAUNCH_RECORDER = TESTS / "launch_recorder.py"
