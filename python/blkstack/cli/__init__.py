"""The ``blkstack`` command-line tool (:mod:`blkstack.cli.dispatch` builds
its parser and runs a command; each command lives in a module of its own).

``blkstack --version`` is answered here, before the argument parser and its
standard-library imports are loaded: a script that checks the version pays
only for the interpreter's start.
"""

from __future__ import annotations

import sys

__all__ = ["main", "build_parser", "UsageError", "write_atomic"]


def main(argv=None) -> int:
    """Run the command line *argv* (default: ``sys.argv[1:]``); return the exit status."""
    if (sys.argv[1:] if argv is None else list(argv)) == ["--version"]:
        return _print_version()
    from blkstack.cli.dispatch import main as dispatch
    return dispatch(argv)


def _print_version() -> int:
    """What argparse's version action prints, without building the parser."""
    from blkstack import __version__
    try:
        sys.stdout.write(f"blkstack {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `blkstack --version | true`: quiet, as every command
        from blkstack.cli.dispatch import EXIT_SIGPIPE, _silence_stdout
        _silence_stdout()
        return EXIT_SIGPIPE
    return 0


def __getattr__(name: str):
    """The parser's names (``build_parser``, ``sub_names``, ``COMMANDS``,
    ...) come from :mod:`blkstack.cli.dispatch`, imported on first use."""
    import importlib

    dispatch = importlib.import_module("blkstack.cli.dispatch")
    if name in globals():  # a submodule the import above has just loaded, e.g. ``common``
        return globals()[name]
    try:
        return getattr(dispatch, name)
    except AttributeError:
        raise AttributeError(f"module 'blkstack.cli' has no attribute {name!r}") from None

