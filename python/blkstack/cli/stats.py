"""``blkstack stats``: iostat, btt and histograms of a block trace from a real machine."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Dict, List

from blkstack.cli.common import (EXIT_OK, PROG, UsageError, add_bio_option, bio_tools, check_input, check_output, fmt_duration_ns, fmt_int,
                                 say, write_json_output)

# Bad lines shown one by one on standard error; the rest are counted.
MAX_BAD_SHOWN = 10


STATS_DESCRIPTION = """\
Read a block trace recorded on a real machine and print what 'blkstack run'
prints for a simulated one: 'iostat -x' figures, btt's stage latencies
(Q2Q Q2G G2I Q2M I2D D2C Q2C), its "Device Merge Information", and the
seek-distance and request-size histograms of each device. The trace goes
through the same analysis code as a simulated run's events; /proc/diskstats
is rebuilt from the requests (allocation 'G', or issue 'D' when the trace
has no 'G', to completion 'C').

TRACE is blkparse's default text output (blkparse -i DEV) or the kernel's
tracepoint text (/sys/kernel/tracing/trace with the block_* events, 6.1 or
6.12 layout). Headers, blkparse's closing summary, lost-event notes and
other tracepoints are skipped; a line that looks like an event but does not
parse is reported on standard error with its line number and skipped.
Messages ('m'), bounces and block_io_start/done lines are counted, not
analysed. Times are relative to the trace's first event.

--bio prints the views of bcc's block tools (biolatency, biosnoop,
bitesize, biopattern) in their own formats, alone or after the reports
chosen with --iostat, --btt and --histograms."""


STATS_EPILOG = """\
examples:
  blkstack stats trace.txt
  blkstack stats trace.txt --btt                 # only btt's tables
  blkstack stats trace.txt --blktrace out/ -q    # as blktrace files: blkparse -i sda -D out/
  blkstack stats trace.txt --interval 1          # iostat -x per second of trace time
  blkstack stats trace.txt --bio biolatency      # only bcc's biolatency histogram
  blkstack stats trace.txt --bio 'biolatency -F,bitesize,biopattern 1'
  blkstack stats trace.txt --json stats.json     # and the figures as JSON
  blkstack stats trace.txt --json - | python3 -m json.tool

Recording a trace:
  blktrace -d /dev/sda -o - | blkparse -i - > trace.txt
  cd /sys/kernel/tracing && echo 1 > events/block/enable && cat trace_pipe > /tmp/trace.txt"""


def _header(path: str, s: Dict[str, Any]) -> str:
    devices = s.get("devices") or {}
    kind = {"blkparse": "blkparse text", "ftrace": "ftrace text", "mixed": "blkparse and ftrace text"}.get(
        s.get("format"), "no events")
    line = (f"trace: {path} ({kind}, {fmt_int(s.get('events'))} events on {len(devices)} "
            f"device{'s' if len(devices) != 1 else ''} over {fmt_duration_ns(s.get('duration_ns'))})")
    notes = []
    bad = len(s.get("bad_lines") or [])
    if bad:
        notes.append(f"{fmt_int(bad)} bad line{'s' if bad != 1 else ''} skipped")
    if s.get("skipped_lines"):
        notes.append(f"{fmt_int(s['skipped_lines'])} other lines (headers, summaries, other tracepoints) ignored")
    other = s.get("other_records") or {}
    if other:
        notes.append("not analysed: " + ", ".join(f"{fmt_int(n)} {k}" for k, n in other.items()))
    for name, dev in devices.items():
        if dev.get("missing") == "completions":
            notes.append(f"{name}: no completions (C) in the trace: iostat figures, depth and throughput left out")
    return "\n".join([line] + [f"  {n}" for n in notes])


def report_problems(path: str, s: Dict[str, Any]) -> None:
    """Bad lines (with their numbers) and unknown RWBS letters, on stderr."""
    bad = s.get("bad_lines") or []
    for b in bad[:MAX_BAD_SHOWN]:
        say(sys.stderr, f"{PROG}: warning: {path}:{b['line']}: {b['reason']} (line skipped): {b['text'].strip()}")
    if len(bad) > MAX_BAD_SHOWN:
        say(sys.stderr, f"{PROG}: warning: {path}: {len(bad) - MAX_BAD_SHOWN} more bad lines not shown")
    if bad:
        say(sys.stderr, f"{PROG}: warning: {path}: {len(bad)} bad line{'s' if len(bad) != 1 else ''} skipped")
    for warning in s.get("warnings") or []:
        say(sys.stderr, f"{PROG}: warning: {path}: {warning}")
    odd = s.get("unknown_rwbs") or []
    if odd:
        first = odd[0]
        say(sys.stderr, f"{PROG}: warning: {path}: {len(odd)} event{'s' if len(odd) != 1 else ''} with RWBS "
                        f"letters blkstack does not know (first: line {first['line']}, '{first['rwbs']}'); "
                        f"read by the letters it knows")


def cmd_stats(args: argparse.Namespace) -> int:
    from blkstack.api import load_trace
    check_input(args.trace)
    tools = bio_tools(args.bio)
    if args.json not in (None, "-"):
        check_output("--json", args.json)
    if args.blktrace is not None and not os.path.isdir(args.blktrace):
        raise UsageError(f"--blktrace {args.blktrace}: not a directory")
    if args.blktrace_dump is not None:
        check_output("--blktrace-dump", args.blktrace_dump)
    try:
        chosen = [k for k in ("iostat", "btt", "histograms") if getattr(args, k)]
        if not chosen and not tools:
            chosen = ["iostat", "btt", "histograms"]
        result = load_trace(args.trace, interval=args.interval, events=bool(tools), btt="btt" in chosen,
                            blktrace=args.blktrace, blktrace_dump=args.blktrace_dump, names=args.name,
                            requests=False)
    except ValueError as exc:  # --interval refused by the engine, or a binary file
        raise UsageError(str(exc)) from None
    s = result.summary
    if not s.get("events"):
        if args.blktrace_dump is not None:  # a failed run leaves no output (the dump is written while reading)
            with contextlib.suppress(FileNotFoundError):
                os.remove(args.blktrace_dump)
        bad = s.get("bad_lines") or []
        hint = f"; line {bad[0]['line']}: {bad[0]['reason']}" if bad else ""
        raise UsageError(f"{args.trace}: no block trace events (expected blkparse or ftrace block_* text){hint}")
    report_problems(args.trace, s)
    write_json_output("--json", args.json, s)
    if args.quiet:
        return EXIT_OK
    stream = sys.stderr if args.json == "-" else sys.stdout
    reports = s.get("reports") or {}
    blocks: List[str] = [_header(args.trace, s)]
    for k in chosen:
        if not reports.get(k):
            continue
        if k == "iostat":
            from blkstack.iostat_text import for_summary
            host = os.path.basename(args.trace)
            blocks.append(for_summary(s, host=host, timestamps=args.timestamps, release="unknown").rstrip("\n"))
        else:
            blocks.append(reports[k].rstrip("\n"))
    if tools:
        from blkstack.biotools import render
        blocks.append(render(result.events, tools, s.get("duration_ns") or 0))
    print("\n\n".join(blocks), file=stream)
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("stats", help="iostat, btt and histograms of a real block trace (blkparse or ftrace text)",
                       description=STATS_DESCRIPTION, epilog=STATS_EPILOG, formatter_class=fmt)
    p.add_argument("trace", metavar="TRACE", help="blkparse text or the kernel's block_* tracepoint text")
    p.add_argument("--iostat", action="store_true", help="print 'iostat -x' (default: every report)")
    p.add_argument("--btt", action="store_true",
                   help="print what 'btt -A' prints for the trace (stage latencies, overhead, merge, seek, plug, "
                        "active-request and active-period tables, Q2D histogram, activity ranges)")
    p.add_argument("--histograms", action="store_true", help="print the seek-distance and request-size histograms")
    p.add_argument("--blktrace", metavar="DIR",
                   help="also write the trace as blktrace's binary files (DIR/NAME.blktrace.0 per device), for "
                        "blkparse, btt and iowatcher")
    p.add_argument("--blktrace-dump", metavar="FILE",
                   help="also write the trace's records as one stream, as 'blkparse -d FILE' dumps them: "
                        "for 'btt -i FILE'")
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="iostat -x per interval of trace time instead of over the whole trace")
    p.add_argument("-t", "--timestamps", action="store_true",
                   help="print each iostat report's time before it, as 'iostat -t' does")
    p.add_argument("--name", action="append", default=[], metavar="MAJ:MIN=NAME",
                   help="name a device, e.g. 254:0=vda (a dynamic major's device; a blktrace file's own name "
                        "NAME.blktrace.N names it by itself); may be repeated")
    add_bio_option(p)
    p.add_argument("--json", metavar="FILE|-", help="write the figures as JSON to FILE ('-' for standard output)")
    p.add_argument("-q", "--quiet", action="store_true", help="print no report (with --json)")
    p.set_defaults(func=cmd_stats)
