"""The command line: build the parser from the command modules, parse, dispatch, and turn how a
command ended into its exit status. Errors are caught once, here: bad input (UserError) is one line
and exit 2, a condition of the moment (RuntimeProblem: campaign busy, database unreachable) one line
and exit 1, an interrupt one line and exit 130; anything else keeps its traceback (a bug).

A command is one module of jitterlab/cli/commands with `add_parser(subparsers)` and `run(args) -> int`,
listed in COMMANDS."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import threading
from types import ModuleType
from typing import ClassVar

from rich.markup import escape

from jitterlab import __version__
from jitterlab.cli.commands import (
    check,
    compare,
    doctor,
    explain,
    export,
    import_,
    labgrid_board,
    lava_bundle,
    monitor,
    push,
    report,
    run,
    show,
    summary,
    tune,
)
from jitterlab.cli.commands import list as list_
from jitterlab.cli.exits import EXIT_INTERRUPTED, EXIT_RUNTIME, EXIT_USAGE, sigterm_as_interrupt
from jitterlab.cli.help import HelpFormatter
from jitterlab.cli.mistyped import commands_of, reworded, unknown_option
from jitterlab.model.errors import RuntimeProblem, UserError
from jitterlab.report.console import SafeConsole

# in the order `jitterlab --help` lists them
COMMANDS: tuple[ModuleType, ...] = (
    run, summary, tune, list_, show, explain, monitor, report, compare, export, import_, push, check, doctor,
    labgrid_board, lava_bundle)

_DESCRIPTION = """\
Measure how precisely Linux programs keep time on a machine.

A campaign file (TOML) describes a matrix: targets x benchmark x load x the benchmark's own
keys (for squarewave: impl x period x probe; for cyclictest, udp-echo, iperf3, ...: see
`jitterlab list`), with repetitions. `jitterlab run` measures every cell on local, ssh,
labgrid or qemu targets, stores raw series and metrics in a results directory, and prints a
summary per benchmark. Start from examples/quickstart.toml.
"""


class _Parser(argparse.ArgumentParser):
    commands: ClassVar[dict[str, argparse.ArgumentParser]] = {}  # every command's (build_parser sets it)

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)  # every command's --help
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        # a command's words: an option it does not take is said before argparse reads the rest
        if args is not None and self._subparsers is None and (
                message := unknown_option(self, list(args), self.commands)):
            raise UserError(message)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # argparse exits 2 too, but with a usage dump
        raise UserError(f"{self.prog}: {reworded(message)} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="jitterlab", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"jitterlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(func=command.run)
    commands = commands_of(parser)
    for made in commands.values():
        made.commands = commands
    return parser


MAX_ERROR_CHARS = 2000  # an error echoing a huge input still prints as one readable line


def main(argv: list[str] | None = None) -> int:
    """The command line; as the program itself (argv None: the `jitterlab` script, `python -m
    jitterlab`) it ends the process once the command is done (exit_now)."""
    code = _command(argv)
    if argv is None:
        exit_now(code)
    return code


def exit_now(code: int) -> None:
    """End the process with `code` once its output is written and its exit handlers ran (temporary
    directories removed, logs flushed), without the interpreter's teardown: freeing every module and
    unloading numba's and pyarrow's libraries took 0.3 to 4 s after the last line was printed. With a
    thread still running (nothing jitterlab leaves) the interpreter ends as usual, waiting for it."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (| head): nothing more to say
            stream.flush()
    os._exit(code)


def _command(argv: list[str] | None) -> int:
    console = SafeConsole(stderr=True)
    try:
        with sigterm_as_interrupt():
            args = build_parser().parse_args(argv)
            return args.func(args)
    except UserError as exc:
        message = " ".join(str(exc).splitlines())
        if len(message) > MAX_ERROR_CHARS:
            message = f"{message[:MAX_ERROR_CHARS]}… ({len(message)} characters)"
        console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        return EXIT_RUNTIME if isinstance(exc, RuntimeProblem) else EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM before a campaign started: nothing to keep
        console.print("[yellow]interrupted[/]", highlight=False)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
