"""REPORT.md's section on another GPU's configs carried here (views/portability.py): a line
per kernel and dtype timed, the shapes where the carried config won or was timed against a
replaced winner, and the kernels both GPUs have winners of not timed yet."""

from helpers.fixture_results import winner, write_winners

from tritonbench_lab.data.portability import portability_file
from tritonbench_lab.data.records import OK, Carried
from tritonbench_lab.data.store import append_rows
from tritonbench_lab.views import portability


def _carried(kernel: str, shape: str, carried_ms: float) -> Carried:
    return Carried(
        kernel=kernel, dtype="fp32", shape=shape, from_gpu="gpu-b", carried_config="BLOCK=64",
        native_config="BLOCK=128", status=OK, carried_ms=carried_ms, native_ms=1.0, op_ms=2.0,
        rounds=3, gpu="TEST", gpu_slug="gpu-a", capability="9.0", torch="test", triton="test",
        tlab="test", source="TEST DATA", run_id="r", timestamp="2025-01-01T00:00:00+00:00")


def test_a_section_names_the_kernels_not_measured_yet(tmp_path):
    """A run stopped part way (a GPU lent for a few kernels): the table must not read as
    the whole of what both GPUs share."""
    append_rows(portability_file(tmp_path / "results", "gpu-a", "gpu-b"),
                [_carried("add", "1024", 1.02), _carried("add", "4096", 1.10)])
    for gpu, kernels in (("gpu-a", ("add", "softmax", "rope")), ("gpu-b", ("add", "softmax"))):
        for kernel in kernels:
            write_winners(tmp_path / "configs" / gpu / f"{kernel}.csv", [])
    (text,) = portability.sections(tmp_path / "results" / "gpu-a", "gpu-a")
    assert "| add | fp32 | 2 | 0 | 1.060x | 1.100x | 4096 | no |" in text
    assert "Not measured yet (both GPUs have winners): softmax." in text  # rope: gpu-a's only
    (tmp_path / "configs" / "gpu-a" / "softmax.csv").unlink()
    (text,) = portability.sections(tmp_path / "results" / "gpu-a", "gpu-a")
    assert "Not measured yet" not in text


def test_a_section_names_where_the_carried_config_beat_the_own_winner(tmp_path):
    """A carried config more than 3% faster than this GPU's own winner is a shape to sweep
    again; one timed against a winner the configs no longer hold is stale instead (its
    regret measured a config ops does not run); within 3% is timing noise: neither."""
    append_rows(portability_file(tmp_path / "results", "gpu-a", "gpu-b"),
                [_carried("add", "1024", 0.95), _carried("add", "2048", 0.98),
                 _carried("add", "4096", 0.90), _carried("add", "8192", 1.01)])
    write_winners(tmp_path / "configs" / "gpu-a" / "add.csv",
                  [winner(shape, "BLOCK=128", dtype="fp32", kernel="add")
                   for shape in ("1024", "2048", "8192")]
                  + [winner("4096", "BLOCK=256", dtype="fp32", kernel="add")])  # re-swept
    (text,) = portability.sections(tmp_path / "results" / "gpu-a", "gpu-a")
    assert ("gpu-b's config beat this GPU's own winner by more than 3% at add fp32 1024 "
            "(0.950x): shapes worth measuring again") in text
    assert ("Timed against a winner this GPU has since replaced (run `tlab portability gpu-b "
            "--kernel KERNEL` again): add fp32 4096 (0.900x).") in text
    assert "2048 (" not in text and "8192 (" not in text
