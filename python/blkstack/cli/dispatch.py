"""The ``blkstack`` command line: its parser, the dispatch to a command's
module, and how a run ends.

Every bad input ends the program with exactly one line on standard error,
``blkstack: error: ...``, and exit status 2. An unexpected failure prints one
line ``blkstack: internal error: ...`` and exits with status 1 (set
``BLKSTACK_DEBUG=1`` to see the traceback instead). Ctrl-C exits with status
130, SIGTERM with 143 and SIGHUP with 129, each leaving no output file
behind; a closed output pipe (``blkstack ... | head``) ends it quietly.

Each command lives in a module of its own with a ``register(sub, kernels)``
function that adds its parser; ``COMMANDS`` names them in ``--help`` order.
A command run as ``blkstack COMMAND ...`` imports its own module alone.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import select
import signal
import stat
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing would cost every command's start
    from typing import Any, List, Optional, Sequence

from blkstack import ScenarioError, __version__
from blkstack._core import CheckError
from blkstack.tracefile import TraceFormatError
from blkstack.cli.common import (EXIT_CHECK, EXIT_INTERNAL, EXIT_OK, EXIT_SIGINT, EXIT_SIGPIPE, EXIT_USAGE, PROG,
                                 ArgumentParser, UsageError, kernel_choices, one_line, os_error_message, say,
                                 write_atomic)

__all__ = ["main", "build_parser", "UsageError", "write_atomic"]

COMMANDS = ["run", "compare", "seeds", "fio", "calibrate", "sweep", "stats", "plot", "report", "capture", "demo",
            "profiles", "explain", "scenarios", "validate", "diff", "identify"]


MAIN_DESCRIPTION = """\
blkstack models the Linux block I/O path -- bio splitting, device stacking,
plugging, merging and blktrace-style tracing -- for a scenario described in a
TOML file, under the behaviour of a chosen kernel version."""


MAIN_EPILOG = """\
examples:
  blkstack demo                                  # a guided first run
  blkstack scenarios demo --show > my.toml       # copy a built-in scenario
  blkstack run my.toml                           # simulate it, print a summary
  blkstack run my.toml --kernel 6.1 --trace -    # blkparse-style trace on stdout
  blkstack seeds                                 # the five seed kernel changes, before and after
  blkstack compare my.toml --kernel 6.1 --kernel 7.2   # one scenario under two kernels, side by side
  blkstack explain split_remainder               # what one behaviour switch models
  blkstack fio job.fio --stack my.toml           # fio jobs on the scenario's devices
  blkstack calibrate --from fio.json --disk vda  # fit a disk's model from real fio results
  blkstack report my.toml --kernel 6.1 --kernel 6.12 --out r.html   # HTML: tables and plots
  blkstack plot my.toml --out plots/             # LBA over time, sizes, seeks, depth, throughput
  blkstack stats real-trace.txt                  # iostat, btt, histograms of a real trace
  blkstack capture > stack.toml                  # this machine's disks, md and dm as a scenario
  blkstack profiles                              # kernel profiles and switches
  blkstack validate my.toml --kernel 6.1         # the same scenario on a real kernel (qemu)
  blkstack diff real.txt sim.txt                 # compare two block traces
  blkstack sweep my.sweep.toml                   # many runs, one table (Parquet)
  blkstack identify real.txt --stack my.toml     # which kernel profile explains a real trace

Run 'blkstack COMMAND --help' for the details of one command."""


class _Unbuilt:
    """The parser of a command listed in --help but not run: what its
    ``register`` does to it is dropped."""

    def __getattr__(self, name: str) -> Any:
        return self._drop

    def _drop(self, *args: Any, **kwargs: Any) -> "_Unbuilt":
        return self


class _ListOnly:
    """The subcommands action as ``register`` sees it, building the options
    of one command only: the others are named, with their help line, and
    left empty (building every command's options would take longer than
    running most commands)."""

    def __init__(self, sub: Any, command: str) -> None:
        self.sub, self.command = sub, command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name == self.command or self.command in kwargs.get("aliases", ()):
            return self.sub.add_parser(name, **kwargs)
        aliases = tuple(kwargs.get("aliases", ()))
        if "help" in kwargs:
            self.sub._choices_actions.append(self.sub._ChoicesPseudoAction(name, aliases, kwargs["help"]))
        for key in (name,) + aliases:
            self.sub._name_parser_map[key] = _Unbuilt()
        return _Unbuilt()


def _command_of(argv: Sequence[str]) -> str:
    """The command an argument list runs: its first word not an option
    (the top-level parser has no option taking a value)."""
    return next((a for a in argv if not a.startswith("-")), "")


def build_parser(command: Optional[str] = None) -> ArgumentParser:
    """The whole command line; with *command*, only that command's options
    are built (the others are listed, as --help shows them)."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = ArgumentParser(prog=PROG, description=MAIN_DESCRIPTION, epilog=MAIN_EPILOG,
                            formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)

    kernels = kernel_choices()
    registrar = sub if command is None else _ListOnly(sub, command)
    for name in COMMANDS:
        _module(name).register(registrar, kernels)
    return parser


def _module(name: str) -> Any:
    """The module of command *name* (``blkstack.cli.NAME``)."""
    return importlib.import_module(f"blkstack.cli.{name}")


def _command_parser(command: str) -> ArgumentParser:
    """The parser of ``blkstack COMMAND ...`` when COMMAND comes first: no
    top-level option can follow, so the top level's help is never shown
    and the other commands need only be known by name (their modules are
    not imported)."""
    parser = ArgumentParser(prog=PROG, description=MAIN_DESCRIPTION, epilog=MAIN_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    _module(command).register(_ListOnly(sub, command), kernel_choices())
    for name in COMMANDS:
        sub._name_parser_map.setdefault(name, _Unbuilt())
    return parser


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so exit-time flushing is quiet."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _stdout_is_broken() -> bool:
    """True if standard output is a pipe whose reading end has been closed."""
    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _dispatch(argv: Optional[Sequence[str]]) -> int:
    args_given = sys.argv[1:] if argv is None else list(argv)
    if args_given and args_given[0] in COMMANDS:
        parser = _command_parser(args_given[0])
    else:
        parser = build_parser(_command_of(args_given))
    try:
        args, extras = parser.parse_known_args(argv)
    except SystemExit as exc:  # --help and --version
        sys.stdout.flush()
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    if extras and args.command == "fio":
        # Everything argparse does not know is fio's: options and job files.
        args.fio_args, extras = extras, []
    if extras:
        where = f"{PROG} {args.command}" if args.command else PROG
        raise UsageError(f"unrecognized arguments: {' '.join(extras)} (see '{where} --help')")
    if args.command is None:
        names = ", ".join(sub_names(parser))
        raise UsageError(f"missing COMMAND: one of {names} (see 'blkstack --help')")
    status = args.func(args)
    sys.stdout.flush()
    return status


# The signal that stopped the run: SIGINT unless SIGTERM or SIGHUP came.
_stopped_by = [signal.SIGINT]


def _stop(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP stop a run as Ctrl-C does: the engine sees it at
    its next look at Python's signals, every output file's temporary copy
    is removed, and the exit status is 128 + the signal's number."""
    _stopped_by[0] = signum
    raise KeyboardInterrupt


def _catch_stop_signals() -> dict:
    """Install :func:`_stop` for SIGTERM and SIGHUP; return what it replaced."""
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread
            previous[sig] = signal.signal(sig, _stop)
    return previous


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line *argv* (default: ``sys.argv[1:]``); return the exit status."""
    previous = _catch_stop_signals()
    _stopped_by[0] = signal.SIGINT
    try:
        return _main(argv)
    finally:
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)


def _main(argv: Optional[Sequence[str]]) -> int:
    try:
        return _dispatch(argv)
    except KeyboardInterrupt:
        return EXIT_SIGINT if _stopped_by[0] == signal.SIGINT else 128 + int(_stopped_by[0])
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_SIGPIPE
    except (UsageError, TraceFormatError) as exc:
        say(sys.stderr, f"{PROG}: error: {one_line(str(exc))}")
        return EXIT_USAGE
    except ScenarioError as exc:
        say(sys.stderr, f"{PROG}: error: {one_line(str(exc)) or 'invalid scenario'}")
        return EXIT_USAGE
    except CheckError as exc:
        say(sys.stderr, f"{PROG}: check failed: {exc}")
        return EXIT_CHECK
    except OSError as exc:
        if _stdout_is_broken():
            # The engine wrote the trace to a closed pipe (`--trace - | head`)
            # and reports EPIPE as a plain OSError.
            _silence_stdout()
            return EXIT_SIGPIPE
        # A file we were asked to read or write could not be (permissions,
        # full disk, ...): the user's environment, not a bug.
        say(sys.stderr, f"{PROG}: error: {one_line(os_error_message(exc))}")
        return EXIT_USAGE
    except BaseException as exc:  # also pyo3's PanicException (a BaseException)
        if isinstance(exc, SystemExit):
            raise
        if os.environ.get("BLKSTACK_DEBUG") == "1":
            raise
        detail = one_line(str(exc))
        what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        say(sys.stderr, f"{PROG}: internal error: {what} (set BLKSTACK_DEBUG=1 for a traceback)")
        return EXIT_INTERNAL


def sub_names(parser: argparse.ArgumentParser) -> List[str]:
    """The command names, in the order --help lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []

