"""What every command shares: exit statuses, the one-line usage error,
table and number formatting, safe file output and running the engine."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing would cost every command's start
    from typing import Any, Dict, List, NoReturn, Optional, Sequence, TextIO, Tuple, Union

from blkstack import _core


PROG = "blkstack"


KNOWN_KERNELS = ("6.1", "6.12", "7.2")


EXIT_OK = 0


EXIT_INTERNAL = 1


EXIT_USAGE = 2


EXIT_CHECK = 3


EXIT_SIGINT = 130


EXIT_SIGPIPE = 141  # what a shell reports for a process killed by SIGPIPE


class UsageError(Exception):
    """Bad input from the user: reported as one ``blkstack: error:`` line."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse builds a formatter for every add_argument and, given no
        # width, asks shutil for the terminal's; importing shutil (bz2, lzma,
        # zlib) then costs every command's start, though a width is only
        # used when help is printed.
        return self.formatter_class(prog=self.prog, width=terminal_columns() - 2)


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: $COLUMNS, else standard
    output's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def fmt_int(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else str(value)
    return f"{int(value):,}"


def fmt_duration_ns(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    ns = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.0f} ns"


def fmt_seconds(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return fmt_duration_ns(float(value) * 1e9)


def fmt_rate(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    rate = float(value)
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if rate >= scale:
            return f"{rate / scale:.2f} {unit}"
    return f"{rate:.0f}"


def fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "-"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> List[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            out.append(cell.rjust(widths[i]) if right[i] else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return [line(headers)] + [line(row) for row in rows]


def check_input(path: str) -> None:
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{path}: permission denied")


def check_output(option: str, path: str) -> None:
    """Refuse an output path that cannot be written, before anything runs."""
    if path == "":
        raise UsageError(f"{option}: empty file name")
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {os.path.dirname(path) or '.'} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: permission denied")
    _probe_output(option, path, parent)


def _probe_output(option: str, path: str, parent: str) -> None:
    """Create (and remove) a file where *path*'s temporary file will go, so
    a directory that refuses files (a read-only or special filesystem, which
    os.access does not see for root) fails now, before any work, naming the
    user's path."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            if not os.access(path, os.W_OK):
                raise UsageError(f"{option} {path}: permission denied")
            return  # written in place (/dev/null, a FIFO)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror or exc}") from None
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"{option} {path}: cannot write there ({reason[:1].lower() + reason[1:]})") from None


def same_file(a: str, b: str) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _new_file_mode(target: str) -> int:
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str, text: Union[str, bytes]) -> None:
    """Write *text* (or bytes) to *path*: a temp file in the same directory, then rename.

    Readers see either the old file or the complete new one, never a part.
    A target that exists and is not a regular file (``/dev/null``, a FIFO)
    is written in place: renaming over it would replace the device node.
    """
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        special = False
    binary = isinstance(text, bytes)
    if special:
        with (open(path, "wb") if binary else open(path, "w", encoding="utf-8", newline="\n")) as fh:
            fh.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    mode = _new_file_mode(path)
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), path) from None
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # Name the user's file, not the temporary one beside it.
        raise OSError(exc.errno, exc.strerror or str(exc), path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def os_error_message(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"{exc.filename}: {reason[:1].lower() + reason[1:]}"
    return reason


def kernel_choices() -> List[str]:
    try:
        names = list(_core.profile_names())
    except Exception:
        names = []
    return names or list(KNOWN_KERNELS)


def check_sets(sets: Sequence[str]) -> None:
    for item in sets:
        key, eq, _value = item.partition("=")
        if not eq:
            raise UsageError(f"--set {item}: expected KEY=VALUE, e.g. --set disks.sda.queue.max_sectors_kb=64")
        if not key.strip():
            raise UsageError(f"--set {item}: missing KEY before '=' (expected KEY=VALUE)")


def simulate(scenario: str, kernel: Optional[str], sets: Sequence[str],
              trace: Optional[str], requests: Optional[str],
              interval: Optional[float] = None, check: Optional[str] = None,
              progress: bool = True, blktrace: Optional[str] = None, btt: bool = False,
              blktrace_dump: Optional[str] = None) -> Dict[str, Any]:
    """Run a scenario for a command; with *progress*, runs longer than a
    second show a progress bar on standard error when it is a terminal;
    *blktrace*: a directory for blktrace's binary files; *blktrace_dump*: a
    file for all of them in one stream; *btt*: also btt's report
    (``reports["btt"]``)."""
    text = _engine(lambda: _core.run(scenario, kernel, list(sets), trace, requests, interval, progress, check,
                                     blktrace, btt, blktrace_dump))
    return json.loads(text)


def simulate_events(scenario: str, kernel: Optional[str], sets: Sequence[str],
                    trace: Optional[str], requests: Optional[str],
                    interval: Optional[float] = None, check: Optional[str] = None,
                    progress: bool = True, blktrace: Optional[str] = None,
                    btt: bool = False, blktrace_dump: Optional[str] = None) -> Tuple[Dict[str, Any], Any]:
    """:func:`simulate`, also keeping every event: (summary, the events
    DataFrame of :attr:`blkstack.Result.events`)."""
    from blkstack.api import _events_frame
    text, columns, tables = _engine(lambda: _core.run_columns(scenario, kernel, list(sets), interval, check, trace,
                                                              requests, progress, blktrace, btt,
                                                              blktrace_dump))
    return json.loads(text), _events_frame(columns, tables)


def _engine(call: Any) -> Any:
    # Rust may write the trace to file descriptor 1 itself: flush ours first.
    sys.stdout.flush()
    try:
        return call()
    except ValueError as exc:  # an option value the engine refuses (--interval)
        raise UsageError(str(exc)) from None


def check_run_outputs(args: argparse.Namespace) -> List[str]:
    """Refuse output files that cannot be written or collide; return the
    options whose output goes to standard output."""
    outputs = [(opt, path) for opt, path in
               (("--trace", args.trace), ("--requests", args.requests), ("--json", args.json),
                ("--blktrace-dump", getattr(args, "blktrace_dump", None)))
               if path is not None]
    if getattr(args, "blktrace_dump", None) == "-":
        raise UsageError("--blktrace-dump -: binary records do not go to standard output; name a file for 'btt -i'")
    files = [(opt, path) for opt, path in outputs if path != "-"]
    for opt, path in files:
        check_output(opt, path)
        if same_file(path, args.scenario):
            raise UsageError(f"{opt} {path}: would overwrite the scenario file")
    for i, (opt_a, path_a) in enumerate(files):
        for opt_b, path_b in files[i + 1:]:
            if same_file(path_a, path_b):
                raise UsageError(f"{opt_a} and {opt_b} name the same file {path_b}")
    blktrace = getattr(args, "blktrace", None)
    if blktrace is not None and not os.path.isdir(blktrace):
        raise UsageError(f"--blktrace {blktrace}: not a directory (blktrace's files go there: NAME.blktrace.0)")
    to_stdout = [opt for opt, path in outputs if path == "-"]
    if len(to_stdout) > 1:
        both = " and ".join(f"{opt} -" for opt in to_stdout)
        raise UsageError(f"{both}: only one output can go to standard output; send the others to files")
    return to_stdout


def print_warnings(summary: Dict[str, Any]) -> None:
    """What the workload ignored (fio's cosmetic options), on stderr."""
    for warning in summary.get("warnings") or []:
        say(sys.stderr, f"{PROG}: warning: {one_line(warning)}")


def split_events(text: str) -> List[str]:
    from blkstack.diff import EVENT_NAMES
    events = [e.strip() for e in text.split(",") if e.strip()]
    for e in events:
        if e not in EVENT_NAMES:
            raise UsageError(f"--events {text}: unknown event '{e}' (one or more of {', '.join(EVENT_NAMES)})")
    if not events:
        raise UsageError("--events: empty list (e.g. --events D or --events Q,X,D)")
    return events


def add_blktrace_option(p: argparse.ArgumentParser) -> None:
    """--blktrace DIR and --blktrace-dump FILE: what blktrace would have
    written, for blkparse and btt."""
    p.add_argument("--blktrace", metavar="DIR",
                   help="write blktrace's binary files into DIR (NAME.blktrace.0 per disk), "
                        "for 'blkparse -i NAME -D DIR', btt and blkstack stats")
    p.add_argument("--blktrace-dump", metavar="FILE",
                   help="write every disk's blktrace records into FILE as one time-ordered stream, "
                        "as 'blkparse -d FILE' dumps them: for 'btt -i FILE'")


def add_event_options(p: argparse.ArgumentParser) -> None:
    """--events and --ignore-flags: which trace events two traces are compared on."""
    p.add_argument("--events", default="D", metavar="LIST",
                   help="events to compare, comma-separated blkparse letters (default D: issued requests)")
    p.add_argument("--ignore-flags", action="store_true",
                   help="compare only the operation of each event, not its FUA/sync/meta/readahead letters")


def write_json_output(option: str, path: Optional[str], data: Any) -> None:
    if path is None:
        return
    text = json.dumps(data, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        write_atomic(path, text)


def say(stream: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(line + "\n")
        stream.flush()


def bullet(text: str) -> List[str]:
    import textwrap  # only for notes: its patterns cost every start

    return textwrap.wrap(text, width=78, initial_indent="  * ", subsequent_indent="    ")


BIO_HELP = ("print bcc's block I/O tools' views, in their own formats: biolatency (log2 histogram of issue-to-"
            "completion time; options -m msecs, -D per disk, -F per flags, -Q from insert; an interval in seconds), biosnoop (one line "
            "per completed request; -Q adds QUE(ms)), bitesize (request sizes per process), biopattern "
            "(%%RND/%%SEQ per disk; an interval in seconds, e.g. 'biopattern 0.5'); several separated by commas")


def add_bio_option(p: argparse.ArgumentParser) -> None:
    """The ``--bio TOOL[,TOOL]`` option of ``run`` and ``stats``."""
    p.add_argument("--bio", metavar="TOOL[,TOOL]", help=BIO_HELP)


def bio_tools(text: Optional[str]) -> List[Any]:
    """The parsed ``--bio`` value (empty without it), or a usage error."""
    if text is None:
        return []
    from blkstack.biotools import BioToolError, parse_tools
    try:
        return parse_tools(text)
    except BioToolError as exc:
        raise UsageError(str(exc)) from None
