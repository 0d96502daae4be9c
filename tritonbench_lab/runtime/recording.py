"""Recording the shapes a program calls `tritonbench_lab.ops` with, so that they can be tuned:
the path from "my model" to "my model's shapes tuned".

    with ops.record_shapes("shapes.csv"):     # or TLAB_RECORD_SHAPES=shapes.csv python ...
        model(inputs)
    # then: tlab sweep --shapes-from shapes.csv

(ops.record_shapes is this module's start and stop around a block, with the decision memo
cleared at its start.)

While recording is on, the first call of each kernel, dtype, shape and device appends one
`Called` row (data/records.py) to the file: what ops decided there and how near the GPU's
tuned shapes it is (`tuned`: here, near, none, refused, cpu). Rows go through the same
locked appends as results, so several processes may record into one file; a file recorded
into again keeps its rows and gains a row for each call it does not hold yet, and for each
whose decision changed since (tuned since, say): the newest row of a call stands.

Only first calls record: dispatch.py notes a decision when it makes one, so a call whose
decision is memoised costs nothing more than before (which is why ops.record_shapes clears
the memo as it starts: every shape is then a first call again). One exception: a call
planned for tlab's kernel whose operands' layout sends it to the op is noted as the op
(ran_op). Calls inside a compiled graph record too (the registered op runs the eager op).
No triton.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from tritonbench_lab.data.records import REFUSED, TORCH_OP, Called
from tritonbench_lab.data.store import append_rows, read_table
from tritonbench_lab.errors import TlabError

ENV = "TLAB_RECORD_SHAPES"

_file: list[Path | None] = [None]  # where calls are recorded now; None: not recording
# (kernel, dtype, shape, gpu) -> (tuned, provider) of its newest row in that file
_seen: dict[tuple[str, str, str, str], tuple[str, str]] = {}


def start(path: str | os.PathLike) -> None:
    """Record first calls into `path` from now on (the rows it holds already are kept, and
    a call is recorded again only where its decision changed)."""
    path = Path(path)
    _seen.clear()
    _seen.update(((r.kernel, r.dtype, r.shape, r.gpu_slug), (r.tuned, r.provider))
                 for r in read_table(path, Called))
    _file[0] = path


def stop() -> None:
    """Record nothing more."""
    _file[0] = None
    _seen.clear()


def recording() -> Path | None:
    """The file calls are recorded into, or None."""
    return _file[0]


def note(kernel: str, dtype: str, shape: str, gpu: str, tuned: str, provider: str) -> None:
    """A decision was made for a first call: append it where recording is on."""
    path = _file[0]
    # an empty call (a batch of no rows): nothing to tune, and a size 0 is no stored shape
    if path is None or "0" in shape.split("x"):
        return
    key = (kernel, dtype, shape, gpu)
    if _seen.get(key) == (tuned, provider):
        return
    _seen[key] = (tuned, provider)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    append_rows(path, [Called(kernel, dtype, shape, gpu, tuned, provider, now)])


def ran_op(kernel: str, dtype: str, shape: str, gpu: str) -> None:
    """A call of a shape decided for tlab's kernel ran the PyTorch op (its operands were of a
    layout the bound config cannot take): recorded as the op, with the decision's `tuned`,
    where recording is on (the newest row of a call stands)."""
    tuned = _seen.get((kernel, dtype, shape, gpu), ("", ""))[0]
    note(kernel, dtype, shape, gpu, tuned, TORCH_OP)


def start_from_environment() -> None:
    """$TLAB_RECORD_SHAPES=FILE, read when ops is first imported: record from the start."""
    path = os.environ.get(ENV)
    if path:
        start(path)


def recorded_shapes(path: str | os.PathLike, kernel: str,
                    dtypes: list[str] | None = None) -> tuple[list[str], list[str], int]:
    """What `tlab sweep --shapes-from PATH KERNEL` tunes: the dtypes and shapes (texts, in
    the order first called) recorded for `kernel` (only `dtypes`, where given), and how many
    recorded shapes the kernel refuses (ops calls the PyTorch op there; no sweep helps)."""
    rows = [r for r in load_calls(path) if r.kernel == kernel
            and (dtypes is None or r.dtype in dtypes)]
    refused = {r.shape for r in rows if r.tuned == REFUSED}
    kept = [r for r in rows if r.tuned != REFUSED]
    return (list(dict.fromkeys(r.dtype for r in kept)),
            list(dict.fromkeys(r.shape for r in kept)), len(refused))


def load_calls(path: str | os.PathLike) -> list[Called]:
    """Every row of a recorded-calls file; a missing or empty one is a one-line TlabError."""
    path = Path(path)
    if not path.exists():
        raise TlabError(f"--shapes-from {str(path)!r}: no such file (record one with "
                        f"ops.record_shapes or {ENV}=FILE)")
    rows = read_table(path, Called)
    if not rows:
        raise TlabError(f"--shapes-from {str(path)!r}: no calls recorded in it")
    return rows


def recorded_kernels(path: str | os.PathLike) -> list[str]:
    """The kernels a recorded-calls file holds calls of, in the order first called."""
    return list(dict.fromkeys(r.kernel for r in load_calls(path)))
