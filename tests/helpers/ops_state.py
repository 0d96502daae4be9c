"""ops and tuned.lookup pointed at a configs folder of a test's own, with every memo of both
forgotten before and after (the decisions, the parsed files), so that no test sees another's."""

import contextlib
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def ops_reading(monkeypatch, folder: Path | None, recheck: bool = True) -> Iterator[None]:
    """`folder` as $TLAB_CONFIG_DIR (None: unset, so a project's own configs/ is read);
    `recheck`: configs files looked at again on every call, so a test's new file is seen."""
    # late: helpers/backend.py sets TRITON_INTERPRET before triton is first imported
    from tritonbench_lab import ops, tuned
    from tritonbench_lab.runtime import dispatch

    if folder is None:
        monkeypatch.delenv(tuned.CONFIG_DIR_ENV, raising=False)
    else:
        monkeypatch.setenv(tuned.CONFIG_DIR_ENV, str(folder))
    if recheck:
        monkeypatch.setattr(dispatch, "RECHECK_S", 0.0)
    tuned.clear_cache()
    ops.clear()
    try:
        yield
    finally:
        tuned.clear_cache()
        ops.clear()
