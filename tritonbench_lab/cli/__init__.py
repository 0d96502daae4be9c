"""The `tlab` command. Each sub-command lives in its own module and stays thin: parse the
options, call one library function, print the result.

Errors the user can fix (a `TlabError`, or a usage error from the option parser, which keeps
its "Try 'tlab X --help'" hint) become one line on stderr and exit code 2. TLAB_DEBUG=1
shows the traceback instead. Shell completion: `tlab --install-completion`.

May import every wing. `tlab --help` loads every command module, so a command imports what
loads torch, triton, pandas or matplotlib inside its function (each such import says so).
"""

from __future__ import annotations

import os
import sys

import typer

from tritonbench_lab import __version__
from tritonbench_lab.cli import (
    archive_cmd,
    calibrate_cmd,
    check_cmd,
    compare_cmd,
    compile_cmd,
    explain_cmd,
    export_cmd,
    hosttimes_cmd,
    list_cmd,
    modelbench_cmd,
    new_cmd,
    opsbench_cmd,
    plot_cmd,
    portability_cmd,
    sweep_cmd,
    targets_cmd,
)
from tritonbench_lab.errors import TlabError

app = typer.Typer(
    name="tlab",
    help="Tune Triton kernels over their config spaces, verify them against PyTorch, "
    "and measure them honestly.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's layout: it re-wraps docstrings instead of keeping their line breaks
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"tlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True,
        help="Print tlab's version and exit.",
    ),
) -> None:
    """Tune Triton kernels over their config spaces, verify them, measure them honestly."""


list_cmd.register(app)
sweep_cmd.register(app)
calibrate_cmd.register(app)
hosttimes_cmd.register(app)
plot_cmd.register(app)
export_cmd.register(app)
check_cmd.register(app)
compare_cmd.register(app)
portability_cmd.register(app)
targets_cmd.register(app)
explain_cmd.register(app)
opsbench_cmd.register(app)
modelbench_cmd.register(app)
compile_cmd.register(app)
archive_cmd.register(app)
new_cmd.register(app)


def fail(message: str) -> None:
    """One line on stderr, exit code 2."""
    print(f"tlab: error: {message}", file=sys.stderr)
    sys.exit(2)


def _is_click(err: BaseException, name: str) -> bool:
    # Typer up to 0.2x raises click's exceptions, later versions a vendored copy of click:
    # match by class name so both work.
    return any(cls.__name__ == name for cls in type(err).__mro__)


def _help_hint(err: BaseException) -> str:
    """Click's "Try 'tlab sweep --help' for help." for usage errors, on the same line."""
    ctx = getattr(err, "ctx", None)
    if not _is_click(err, "UsageError") or ctx is None:
        return ""
    return f" Try '{ctx.command_path} --help' for help."


def main(argv: list[str] | None = None) -> None:
    debug = os.environ.get("TLAB_DEBUG") == "1"
    try:
        code = app(args=argv, prog_name="tlab", standalone_mode=False)
    except TlabError as err:
        if debug:
            raise
        fail(str(err))
    except KeyboardInterrupt:
        print("tlab: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as err:
        if _is_click(err, "Abort"):
            print("tlab: interrupted", file=sys.stderr)
            sys.exit(130)
        if _is_click(err, "NoArgsIsHelpError"):  # bare `tlab`: the help was just printed
            sys.exit(0)
        if debug or not _is_click(err, "ClickException"):
            raise
        message = " ".join(err.format_message().split())
        if _help_hint(err) and not message.endswith((".", "?", "!", ")")):
            message += "."  # the hint's sentence follows on the same line
        fail(message + _help_hint(err))
    sys.exit(code if isinstance(code, int) else 0)
