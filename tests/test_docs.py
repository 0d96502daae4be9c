"""The README and docs/ are tested like code: every command line they quote runs, or is checked
against the real command line interface, and every link and repository path they name exists.

Command lines are the lines of fenced blocks that begin with `tlab`, `make` or `python` (after
any `VAR=value` settings; `.venv/bin/` prefixes too). In a ```sh block every line must be one
of those or a program named in OTHER_PROGRAMS.

- `tlab` lines that work from stored rows, or on a CPU in seconds, are run as written (each in
  a process of its own: helpers/cli_server.py), in the order each page gives them, with the
  current directory a sandbox per page (a temporary copy of results/, configs/, examples/ and
  pyproject.toml, whose [tool.tlab] table lists the example kernel; CUDA hidden, so kernels run
  in Triton's interpreter): list, plot, report, export, explain, targets, compare, check,
  compile, archive, new, and sweeps of the example kernels under examples/ or of a module a
  `tlab new` line of the page wrote. Each must exit 0 (RUN_EXIT_CODES and KNOWN_FAILURES name
  the exceptions, with their reasons). The worktree must be unchanged afterwards. plot, report,
  compare and archive lines that draw the committed GPU results are checked as below instead
  (CI's `make plots-check` draws every committed result with plot, report and compare, and
  tests/data/test_archive.py dry-runs archive over them: the same code on the same rows, which
  each such line ran again for seconds); those that draw the interpreter's rows of a page's own
  sweep run.
- The other `tlab` lines need a GPU, or minutes of interpreter (sweeps of built-in kernels,
  calibrate, host-times, ops-bench, check --regret). They, and the `tlab ...` spans of inline
  code, are parsed by tlab's own option parser (unknown options, missing arguments, bad types
  and ranges fail), every option they use must appear in `tlab COMMAND --help`, and kernel
  names, dtypes, sizes, shapes, spaces, searches, baselines and clocks go through tlab's own
  parsers and checks.
- `make` lines, and `make ...` spans of inline code: `make -n TARGET` succeeds. `python`
  lines: the script or module exists.

Links ([text](path#anchor)) must lead to files and headings that exist; inline code that names a
repository path or a `tritonbench_lab.*` name must name one that exists. The README stays under
10 KB, links every docs page, and lists every command of `tlab --help`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from helpers.cli_server import run_tlab

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_MAX_BYTES = 10_000

# Commands that run from stored rows, or on a CPU in seconds: their lines are run.
RUN_COMMANDS = {"list", "kernels", "plot", "report", "export", "explain", "targets", "compare",
                "check", "compile", "archive", "new"}
# Commands whose lines drawing the committed GPU results CI runs elsewhere (module docstring).
DRAWN_BY_CI = {"plot", "report", "compare", "archive"}
# Exit codes a run line may end with besides 0, and what the code means there.
RUN_EXIT_CODES = {"targets": {1: "target(s) missed"}}  # documented: exit 1 on a miss
# Lines that fail today for a reason the docs state; when one starts to pass, drop it here
# and the sentence in the page.
KNOWN_FAILURES: dict[tuple[str, ...], str] = {}
# Programs a ```sh block may name besides tlab, make and python: shown, not run.
OTHER_PROGRAMS = {"git", ".", "source", "pip", "ray"}
SANDBOX_COPIES = ("results", "configs", "examples", "pyproject.toml")
# Python blocks of these pages are quoted from this file (unless marked as not).
EXCERPTS = {"docs/writing-a-kernel.md": "examples/axpy.py"}
NOT_AN_EXCERPT = "# Not in examples/axpy.py"


# --- reading the pages ----------------------------------------------------------------------

@dataclass
class Block:
    page: Path
    line: int  # of its first line of code
    lang: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Prose:
    page: Path
    line: int
    text: str
    paragraph: str


def _rel(page: Path) -> str:
    return str(page.relative_to(REPO))


def read_page(page: Path) -> tuple[list[Block], list[Prose]]:
    blocks, prose, block = [], [], None
    lines = page.read_text().splitlines()
    paragraph_of = _paragraphs(lines)
    for number, text in enumerate(lines, start=1):
        fence = re.match(r"\s*(```|~~~)\s*([\w-]*)", text)
        if fence and block is None:
            block = Block(page, number + 1, fence.group(2).lower())
        elif fence and block is not None:
            blocks.append(block)
            block = None
        elif block is not None:
            block.lines.append(text)
        else:
            prose.append(Prose(page, number, text, paragraph_of[number - 1]))
    assert block is None, f"{_rel(page)}: a fenced block is never closed"
    return blocks, prose


def _paragraphs(lines: list[str]) -> list[str]:
    """Each line's paragraph (the run of non-blank lines it is in)."""
    out, start = [""] * len(lines), 0
    for i in range(len(lines) + 1):
        if i == len(lines) or not lines[i].strip():
            text = "\n".join(lines[start:i])
            for j in range(start, i):
                out[j] = text
            start = i + 1
    return out


def inline_spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


@dataclass
class Command:
    page: Path
    line: int
    text: str  # the segment as written
    program: str  # tlab, make, python or another
    argv: list[str]  # after the program
    env: dict[str, str]
    fenced: bool = True

    @property
    def where(self) -> str:
        return f"{_rel(self.page)}:{self.line}: {self.text}"


def split_commands(page: Path, line: int, text: str, fenced: bool = True) -> list[Command]:
    """The commands of one shell line (`a && b` is two), each without its VAR=value prefix."""
    tokens = shlex.split(text, comments=True)
    segments, current = [], []
    for token in tokens:
        if token in ("&&", "||", ";"):
            segments.append(current)
            current = []
        else:
            current.append(token)
    segments.append(current)
    commands = []
    for segment in filter(None, segments):
        env = {}
        while segment and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", segment[0]):
            name, _, value = segment.pop(0).partition("=")
            env[name] = value
        program, argv = _program(segment)
        commands.append(Command(page, line, " ".join(segment), program, argv, env, fenced))
    return commands


def _program(segment: list[str]) -> tuple[str, list[str]]:
    head, rest = segment[0], segment[1:]
    name = head.removeprefix(".venv/bin/")
    if name == "tlab":
        return "tlab", rest
    if re.fullmatch(r"python3?", name):
        if rest[:2] == ["-m", "tritonbench_lab"]:
            return "tlab", rest[2:]
        return "python", rest
    return name, rest


def all_commands() -> list[Command]:
    found = []
    for page in PAGES:
        blocks, prose = read_page(page)
        for block in blocks:
            if block.lang in ("python", "py"):
                continue
            for offset, text in enumerate(block.lines):
                stripped = text.strip()
                if not stripped or stripped.startswith("#"):
                    continue
                starts = re.match(r"([A-Z_][A-Z0-9_]*=\S*\s+)*(\.venv/bin/)?(tlab|make|python3?)\b",
                                  stripped)
                if starts or block.lang in ("sh", "bash", "shell"):
                    found += split_commands(page, block.line + offset, stripped)
    return found


def inline_commands(program: str) -> list[Command]:
    """`tlab ...` or `make ...` spans of inline code (placeholder commands such as
    `tlab COMMAND` left out)."""
    found = []
    for page in PAGES:
        for prose in read_page(page)[1]:
            for span in inline_spans(prose.text):
                if re.match(rf"(\.venv/bin/)?{program}\s+[a-z-]", span):
                    found += split_commands(page, prose.line, span, fenced=False)
    return found


# --- deciding what to do with a tlab line ---------------------------------------------------

def runs_here(command: Command) -> bool:
    """Whether a fenced tlab line is run (module docstring), else validated."""
    argv = command.argv
    if not command.fenced or not argv or argv[0].startswith("-"):
        return False
    name = argv[0]
    if "--gpu" in argv or "--regret" in argv:
        return False
    if name in DRAWN_BY_CI and "interpreter" not in argv:
        return False
    if name == "sweep":
        modules = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-m", "--kernel-module")]
        return bool(modules) and all(m.startswith("examples/") or m in written_by_new(command.page)
                                     for m in modules)
    return name in RUN_COMMANDS


@functools.cache
def written_by_new(page: Path) -> frozenset[str]:
    """The kernel modules the page's `tlab new NAME` lines write (into the page's sandbox,
    where its later lines run): small kernels made to sweep in the interpreter in seconds."""
    return frozenset(f"{c.argv[1]}.py" for c in all_commands() if c.page == page
                     and c.program == "tlab" and c.argv[:1] == ["new"] and len(c.argv) > 1)


def option_names(argv: list[str]) -> list[str]:
    return [a.split("=")[0] for a in argv if re.match(r"--?[A-Za-z]", a)]


def placeholders(argv: list[str]) -> bool:
    """Whether a line holds placeholder words (KERNEL, A, B, S) instead of values."""
    return any(re.fullmatch(r"[A-Z][A-Z0-9_]*", a) for a in argv)


# --- running ---------------------------------------------------------------------------------

def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)  # tlab sets it, as for a user
    env.update(PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               CUDA_VISIBLE_DEVICES="", COLUMNS="200")
    env.update(extra or {})
    return env


def tlab(argv: list[str], cwd: Path, extra_env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess:
    return run_tlab(argv, cwd=cwd, env=_env(extra_env), timeout=timeout)


def make_sandbox() -> Path:
    sandbox = Path(tempfile.mkdtemp(prefix="tlab-docs-"))
    for name in SANDBOX_COPIES:
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, sandbox / name)
            continue
        shutil.copytree(REPO / name, sandbox / name,
                        ignore=shutil.ignore_patterns("__pycache__", "interpreter"))
    return sandbox


def run_page(commands: list[Command]) -> list[str]:
    """Run one page's run lines in order in a sandbox of its own; the problems found."""
    problems = []
    sandbox = make_sandbox()
    try:
        for command in commands:
            done = tlab(command.argv, sandbox, command.env)
            problem = judge_run(command, done)
            if problem:
                problems.append(problem)
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    return problems


def judge_run(command: Command, done: subprocess.CompletedProcess) -> str | None:
    name = command.argv[0]
    tail = (done.stderr.strip().splitlines() or [""])[-1]
    known = next((why for key, why in KNOWN_FAILURES.items()
                  if tuple(command.argv[:len(key)]) == key), None)
    if known is not None:
        if done.returncode == 2 and known in done.stderr:
            return None
        return (f"{command.where}: expected to fail with {known!r} (KNOWN_FAILURES); exit "
                f"{done.returncode}, {tail!r}: if it works now, drop it from KNOWN_FAILURES "
                "and from the page")
    allowed = RUN_EXIT_CODES.get(name, {})
    if "Traceback (most recent call last)" in done.stderr:
        return f"{command.where}: traceback\n{done.stderr[-2000:]}"
    if done.returncode == 0:
        return None
    if done.returncode in allowed and allowed[done.returncode] in done.stdout + done.stderr:
        return None
    return f"{command.where}: exit {done.returncode}\n{done.stderr[-2000:] or done.stdout[-2000:]}"


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout


# --- validation, in a subprocess of its own (it imports kernels, and -m modules register) ---

def validate(argv: list[str], values: bool, partial: bool = False) -> str | None:
    """Parse a tlab line with tlab's own parser and check its values; the problem, or None.
    `partial`: a mention in prose (`tlab export --format autotune`), which may leave out
    required arguments, but nothing it names may be wrong."""
    import typer.main

    from tritonbench_lab.cli import app

    group = typer.main.get_command(app)
    ctx = group.context_class(group, info_name="tlab")
    if argv[0].startswith("-"):
        return None  # options of tlab itself (--version, --install-completion): help text only
    command = group.get_command(ctx, argv[0])
    if command is None:
        return f"no command {argv[0]!r}"
    try:
        params = command.make_context(argv[0], list(argv[1:]), parent=ctx).params
    except Exception as err:  # click's usage errors, whatever their module
        if partial and type(err).__name__ == "MissingParameter":
            return None
        message = err.format_message() if hasattr(err, "format_message") else str(err)
        return f"{type(err).__name__}: {message}"
    if not values:
        return None
    try:
        _check_values(argv[0], params)
    except Exception as err:  # TlabError and ValueError from tlab's own parsers
        return f"{type(err).__name__}: {err}"
    return None


def _check_values(name: str, params: dict) -> None:
    from tritonbench_lab.cli.options import known_dtypes, split_list
    from tritonbench_lab.kernels import get_spec, load_kernel_module

    for path in params.get("kernel_module") or ():
        load_kernel_module(path)
    kernel = params.get("kernel")
    names = [kernel] if isinstance(kernel, str) else split_list(kernel) or []
    specs = [get_spec(n) for n in names]
    dtypes = params.get("dtype") or None
    known_dtypes(dtypes)
    if name == "sweep" and specs:  # no KERNEL: --shapes-from names the kernels, or a bare mention
        _check_sweep(specs[0], params)
    if name == "explain":
        from tritonbench_lab.shapes import shape_sizes

        if len(shape_sizes(params["shape"])) != len(specs[0].dims):
            raise ValueError(f"--shape {params['shape']}: {specs[0].name} has dims {specs[0].dims}")


def _check_sweep(spec, params: dict) -> None:
    """What `tlab sweep` checks of its values before it needs a device (measure/plan.py)."""
    from tritonbench_lab.measure.plan import parse_baselines, parse_dtypes, parse_shapes
    from tritonbench_lab.measure.timing import TIMINGS
    from tritonbench_lab.search.strategies import parse_search
    from tritonbench_lab.space import load_space

    for dtype in parse_dtypes(spec, params["dtype"] or None, interpreting=False):
        if dtype not in spec.dtypes:
            raise ValueError(f"{spec.name} does not take {dtype}")
    for shape in parse_shapes(spec, params["sizes"], params["shapes"], interpreting=False):
        spec.check_shape(shape)
    load_space(spec.space, params["space"])
    parse_search(params["search"])
    baselines = parse_baselines(params["baselines"])
    if baselines not in (None, ("all",)) and set(baselines) - set(spec.baselines):
        raise ValueError(f"unknown baselines {sorted(set(baselines) - set(spec.baselines))}")
    if params["timing"] not in ("auto", *TIMINGS):
        raise ValueError(f"--timing {params['timing']}")
    if params["backend"] not in ("local", "ray"):
        raise ValueError(f"--backend {params['backend']}")


def resolve_name(dotted: str, allow_moved: bool) -> str | None:
    """Import the longest module prefix of `tritonbench_lab.a.b.c`, then get the rest."""
    import importlib
    import warnings

    from tritonbench_lab._moved import MovedWarning

    parts = dotted.split(".")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ImportError:
                continue
        else:
            return f"{dotted}: no such module"
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return f"{dotted}: {attr!r} not found"
            obj = getattr(obj, attr)
    if not allow_moved and any(issubclass(w.category, MovedWarning) for w in caught):
        return f"{dotted}: an old path (MovedWarning); name the module's new home"
    return None


def _validator_main() -> None:
    """`python tests/test_docs.py --validate`: JSON jobs on stdin, problems on stdout."""
    jobs = json.load(sys.stdin)
    out = []
    for job in jobs:
        if job["kind"] == "tlab":
            out.append(validate(job["argv"], job["values"], job["partial"]))
        else:
            out.append(resolve_name(job["name"], job["allow_moved"]))
    print(json.dumps(out))


def run_validator(jobs: list[dict], cwd: Path) -> list[str | None]:
    env = _env({"TRITON_INTERPRET": "1"})
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--validate"],
                          input=json.dumps(jobs), cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def help_text(argv0: str) -> str:
    args = [] if argv0.startswith("-") else [argv0]
    done = tlab([*args, "--help"], REPO, timeout=120)
    assert done.returncode == 0, f"tlab {' '.join(args)} --help: {done.stderr}"
    return done.stdout


# --- the tests -------------------------------------------------------------------------------

def test_the_pages_quote_commands():
    commands = all_commands()
    assert {c.program for c in commands} >= {"tlab", "make"}
    assert sum(runs_here(c) for c in commands if c.program == "tlab") >= 10
    for page in (REPO / "README.md", REPO / "docs" / "writing-a-kernel.md"):
        assert any(c.page == page for c in commands), f"{_rel(page)} quotes no command"


def test_every_sh_line_is_a_known_program():
    unknown = [c.where for c in all_commands()
               if c.program not in {"tlab", "make", "python"} | OTHER_PROGRAMS]
    assert unknown == [], "lines of ```sh blocks that test_docs.py cannot check"


def test_every_tlab_line_parses_and_its_options_are_in_its_help():
    """Run lines and validated lines alike: parsed by tlab's own parser, options in --help;
    the lines not run have their values checked as well."""
    commands = [c for c in [*all_commands(), *inline_commands("tlab")] if c.program == "tlab"]
    assert commands
    sandbox = make_sandbox()
    try:
        jobs = [{"kind": "tlab", "argv": c.argv, "partial": not c.fenced,
                 "values": not runs_here(c) and not placeholders(c.argv)} for c in commands]
        results = run_validator(jobs, sandbox)
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    firsts = sorted({c.argv[0] for c in commands})
    with ThreadPoolExecutor(max_workers=4) as pool:
        helps = dict(zip(firsts, pool.map(help_text, firsts), strict=True))
    problems = [f"{c.where}: {result}" for c, result in zip(commands, results, strict=True) if result]
    for c in commands:
        for option in option_names(c.argv if c.argv[0].startswith("-") else c.argv[1:]):
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", helps[c.argv[0]]):
                problems.append(f"{c.where}: {option} is not in `tlab {c.argv[0]} --help`")
    assert problems == [], "\n".join(problems)


def test_the_lines_that_run_here_run():
    """Each page's run lines, in order, in a sandbox of its own; pages side by side."""
    by_page: dict[Path, list[Command]] = {}
    for command in all_commands():
        if command.program == "tlab" and runs_here(command):
            by_page.setdefault(command.page, []).append(command)
    before = git_status()
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        problems = [p for found in pool.map(run_page, by_page.values()) for p in found]
    assert git_status() == before, "running the docs' commands changed the worktree"
    assert problems == [], "\n\n".join(problems)


def test_make_lines_name_targets_that_exist():
    problems = []
    for command in [*all_commands(), *inline_commands("make")]:
        if command.program != "make":
            continue
        done = subprocess.run(["make", "-n", *command.argv], cwd=REPO, capture_output=True,
                              text=True, timeout=60)
        if done.returncode != 0:
            problems.append(f"{command.where}: {done.stderr.strip()}")
    assert problems == [], "\n".join(problems)


def test_python_lines_name_scripts_and_modules_that_exist():
    import importlib.util

    problems = []
    for command in all_commands():
        if command.program != "python":
            continue
        argv = command.argv
        if argv[:1] == ["-m"]:
            if importlib.util.find_spec(argv[1]) is None:
                problems.append(f"{command.where}: no module {argv[1]}")
        elif argv and not argv[0].startswith("-") and not (REPO / argv[0]).is_file():
            problems.append(f"{command.where}: no file {argv[0]}")
    assert problems == [], "\n".join(problems)


def test_python_blocks_compile_and_quote_the_example_exactly():
    problems = []
    for page in PAGES:
        source = EXCERPTS.get(_rel(page))
        quoted = (REPO / source).read_text() if source else ""
        for block in read_page(page)[0]:
            if block.lang not in ("python", "py"):
                continue
            text = textwrap.dedent("\n".join(block.lines))
            try:
                compile(text, f"{_rel(page)}:{block.line}", "exec")
            except SyntaxError as err:
                problems.append(f"{_rel(page)}:{block.line}: {err}")
            if source and not text.startswith(NOT_AN_EXCERPT) and text not in quoted:
                problems.append(f"{_rel(page)}:{block.line}: not quoted verbatim from {source}")
    assert problems == [], "\n".join(problems)


def github_slug(heading: str) -> str:
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(page: Path) -> set[str]:
    slugs, seen = set(), {}
    blocks_free = [p.text for p in read_page(page)[1]]
    for text in blocks_free:
        found = re.match(r"#{1,6}\s+(.*)", text)
        if found:
            slug = github_slug(found.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            slugs.add(slug if count == 0 else f"{slug}-{count}")
    return slugs


def test_links_lead_to_files_and_headings_that_exist():
    problems = []
    for page in PAGES:
        for prose in read_page(page)[1]:
            text = re.sub(r"`[^`]*`", "", prose.text)
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                file = (page.parent / path).resolve() if path else page
                if not file.exists():
                    problems.append(f"{_rel(page)}:{prose.line}: {target}: no such file")
                elif anchor and (file.suffix != ".md" or anchor not in headings(file)):
                    problems.append(f"{_rel(page)}:{prose.line}: {target}: no such heading")
    assert problems == [], "\n".join(problems)


def _tracked() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.split()


def _path_exists(span: str, tracked: list[str]) -> bool:
    pattern = re.sub(r"<[^>]+>", "*", span).rstrip("/")
    top = {p.split("/")[0] for p in tracked}
    bases = [REPO] if pattern.split("/")[0] in top else [REPO / "tritonbench_lab"]
    if "/" not in span:  # a bare file name: somewhere in the repository
        return any(Path(p).name == pattern for p in tracked)
    if any(list(base.glob(pattern)) for base in bases):
        return True
    ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", pattern.replace("*", "x")],
                             cwd=REPO)
    return ignored.returncode == 0  # written by runs, never committed (results/interpreter/)


def _looks_like_path(span: str, tracked: list[str]) -> bool:
    if " " in span or span.startswith(("-", "$", "/", "<")) or "=" in span:
        return False
    top = {p.split("/")[0] for p in tracked}
    wings = {p.name for p in (REPO / "tritonbench_lab").iterdir() if p.is_dir()}
    first = span.split("/")[0]
    if "/" in span:
        return first in top or first in wings
    return bool(re.fullmatch(r"[\w.-]+\.(py|md|csv|toml|txt)", span))


def test_repository_paths_and_names_in_inline_code_exist():
    tracked = _tracked()
    problems, names = [], []
    for page in PAGES:
        for prose in read_page(page)[1]:
            for span in inline_spans(prose.text):
                if span.startswith("tritonbench_lab."):
                    dotted = re.match(r"[\w.]+", span).group(0).rstrip(".")
                    names.append((prose, dotted))
                elif _looks_like_path(span, tracked) and not _path_exists(span, tracked):
                    problems.append(f"{_rel(page)}:{prose.line}: `{span}` does not exist")
    jobs = [{"kind": "name", "name": dotted, "allow_moved": "MovedWarning" in prose.paragraph}
            for prose, dotted in names]
    for (prose, _), result in zip(names, run_validator(jobs, REPO), strict=True):
        if result:
            problems.append(f"{_rel(prose.page)}:{prose.line}: {result}")
    assert problems == [], "\n".join(problems)


def test_the_readme_is_the_front_door():
    readme = REPO / "README.md"
    assert readme.stat().st_size <= README_MAX_BYTES, f"README.md is {readme.stat().st_size} bytes"
    text = readme.read_text()
    for page in PAGES[1:]:
        assert f"]({_rel(page)})" in text, f"README.md does not link {_rel(page)}"
    commands = re.findall(r"^  (\w[\w-]*)\s", help_text("--help").split("Commands:")[1], re.M)
    assert len(commands) >= 10
    table = re.findall(r"^\| `tlab ([\w-]+)", text, re.M)
    missing = [c for c in commands if c not in table and c != "kernels"]  # kernels: list's alias
    assert missing == [], f"commands missing from README.md's table: {missing}"


if __name__ == "__main__" and sys.argv[1:] == ["--validate"]:
    sys.path.insert(0, str(REPO))
    _validator_main()
