"""Docstrings say what the code does, never what it measured (issue 49).

Measured figures, dates, GPU serials and run ids in docstrings go stale with every sweep, and
the figures belong to the committed results and their write-ups, not to the code. This walks
every module of the package with `ast`, takes the module, class and function docstrings, and
fails on anything that reads as a measurement; comments (read with `tokenize`) may keep a
number that explains a constant, but never a date, a serial, a run id or a pointer to
BENCHMARKS.md.
"""

from __future__ import annotations

import ast
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tritonbench_lab"

# What never belongs in a comment or a docstring.
ANYWHERE = {
    "a date": r"\b20\d\d-\d\d-\d\d\b",
    "a GPU serial": r"(?i)\bserials?\b",
    "a run id": r"\b\d{8}T\d{6}Z\b",
    "a pointer to BENCHMARKS.md": r"BENCHMARKS",
}

# What reads as a measurement in a docstring. Limits and defaults stay legal: a budget in ms
# ("100 ms", `--rep-ms 50`), a tolerance, a target written as a bound (">= 0.90x"), sizes
# ("256 MB of zeros"), a device name as an example ("NVIDIA H200" -> "nvidia-h200").
MEASURED = {
    "a throughput figure": r"\d+(\.\d+)?\s*(TFLOP/s|GB/s|TB/s)",
    "a measured ratio": r"(?<![<>=]\s)(?<![<>=])\b\d+\.\d+x\b",
    "a time in microseconds": r"\d(\.\d+)?\s*(µs|us)\b",
    "a measured difference": r"\d+(\.\d+)?%\s+(slower|faster|more|less|apart)\b",
    "a measured share of runs": r"\bin \d+(\.\d+)?% of\b",
    "a GPU model (outside a device name such as 'NVIDIA H200')":
        r"(?<!NVIDIA )\b(GB200|[ABH]\d00)(s|'s)?\b",
}

_ANYWHERE = {what: re.compile(pattern) for what, pattern in ANYWHERE.items()}
_MEASURED = {what: re.compile(pattern) for what, pattern in MEASURED.items()}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def docstrings(path: Path) -> list[tuple[int, str, str]]:
    """(line, owner, text) of the module's docstring and of every class and function in it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        text = ast.get_docstring(node, clean=False)
        if text is None:
            continue
        owner = getattr(node, "name", "module")
        found.append((node.body[0].lineno, owner, text))
    return found


def comments(path: Path) -> list[tuple[int, str]]:
    with path.open("rb") as f:
        return [(tok.start[0], tok.string) for tok in tokenize.tokenize(f.readline)
                if tok.type == tokenize.COMMENT]


def docstring_problems(text: str) -> list[tuple[str, str]]:
    """(what, the offending line) for each pattern a docstring matches, line by line (a
    docstring's lines; a figure split over two lines is caught on the joined text too)."""
    lines = text.splitlines()
    joined = " ".join(line.strip() for line in lines)
    problems = []
    for what, pattern in {**_ANYWHERE, **_MEASURED}.items():
        hit = next((line.strip() for line in lines if pattern.search(line)), None)
        if hit is None and (m := pattern.search(joined)):
            hit = joined[max(0, m.start() - 40):m.end() + 40]
        if hit is not None:
            problems.append((what, hit))
    return problems


def comment_problems(text: str) -> list[str]:
    return [what for what, pattern in _ANYWHERE.items() if pattern.search(text)]


def _relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_the_package_has_docstrings_to_check():
    assert len(modules()) > 20
    assert sum(len(docstrings(p)) for p in modules()) > 100


def test_no_measurements_dates_or_serials_in_docstrings():
    offenders = [f"{_relative(path)}:{line} ({owner}): {what}: {hit!r}"
                 for path in modules() for line, owner, text in docstrings(path)
                 for what, hit in docstring_problems(text)]
    assert not offenders, (
        "docstrings must say what the code does, not what it measured; move figures to the "
        "results and their write-ups:\n" + "\n".join(offenders))


def test_no_dates_serials_or_run_ids_in_comments():
    offenders = [f"{_relative(path)}:{line}: {what}: {text!r}"
                 for path in modules() for line, text in comments(path)
                 for what in comment_problems(text)]
    assert not offenders, "comments carry no dates, serials, run ids:\n" + "\n".join(offenders)


@pytest.mark.parametrize("text", [
    "0.93x torch.matmul at 4096 cubed",
    "the copy reached 4257 GB/s",
    "859.6 TFLOP/s at 8192^3",
    "Measured on 2026-12-04.",
    "see BENCHMARKS.md, 'Search strategies'",
    "the run 20261204T101500Z",
    "GPU serial 1652922001234",
    "1.6-4.5 µs a call on that host",
    "~80 us on an H200",
    "libdevice's erf cost 4-8% more",
    "it came within 2% of the best in 97% of runs",
    "two runs may be two H200s apart",
])
def test_the_patterns_catch_measurements(text):
    assert docstring_problems(text), text


@pytest.mark.parametrize("text", [
    "Timing every config for do_bench's full 100 ms is most of a sweep's time.",
    "`--rep-ms 50` and `--first-rep-ms 5`: the budgets in ms.",
    "An output element passes when |out - ref| <= atol + rtol * |ref| (rtol 1.6e-2).",
    "matmul: tuned Triton >= 0.90x torch.matmul at 2048, 4096 and 8192 cubed.",
    "softmax >= 1.5x torch.softmax where >= 64 MB move.",
    "do_bench's L2 flush (writing 256 MB of zeros)",
    "(`NVIDIA H200` -> `nvidia-h200`)",
    "`N=4096,K=4096,device_name=NVIDIA_H200,dtype=bf16.json`",
    "TFLOP/s or GB/s (10^9 bytes) of one call that took `ms` milliseconds.",
    "a loss under ~1% is within the noise, not a miss",
    "A serialised config: 'BLOCK_M=128 num_warps=8'.",
])
def test_the_patterns_pass_what_code_does(text):
    assert not docstring_problems(text), docstring_problems(text)


def test_comment_patterns():
    assert comment_problems("# measured 2026-12-03 on an H200")
    assert comment_problems("# run 20261203T120000Z")
    assert not comment_problems("# a 4096-column row measured ~2x faster with 8 warps than 4")
