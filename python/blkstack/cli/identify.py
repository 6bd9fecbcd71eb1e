"""``blkstack identify``: which kernel profile and switches explain a real trace."""

from __future__ import annotations

import argparse
from typing import Any, List

from blkstack.cli.common import (EXIT_OK, UsageError, add_event_options, check_input, check_output, split_events,
                                 write_json_output)
from blkstack.cli.sweep import add_backend_options

IDENTIFY_DESCRIPTION = """\
Find the kernel profile (and behaviour switch values) that explain a block
trace from a real machine. The bios the trace shows processes submitting
are replayed through the stack of STACK.toml (its own workload is ignored;
see the replay workload in docs/scenario.md) under every kernel profile, and
under every profile with one behaviour switch changed; each replay's issued
requests are compared with the trace's in order, as 'blkstack diff' does.
Prints the ranking (profile, switches, match), which profiles issue the same
requests for this workload (the trace cannot tell those apart), and the
best candidate's first divergence.

TRACE is blkparse text or the kernel's block_* tracepoint text. The stack's
devices must have the trace's device numbers (blkstack numbers devices as
Linux does). The candidates run as a sweep: on every core, or on Ray."""

IDENTIFY_EPILOG = """\
examples:
  blkstack identify real.txt --stack my.toml
  blkstack identify real.txt --stack my.toml --kernel 6.1 --kernel 6.12 --no-switches
  blkstack identify real.txt --stack my.toml --json - --ray"""


def cmd_identify(args: argparse.Namespace) -> int:
    from blkstack.diff import TraceFileError
    from blkstack.identify import identify
    from blkstack.sweep_spec import SweepError

    check_input(args.trace)
    check_input(args.stack)
    if args.json not in (None, "-"):
        check_output("--json", args.json)
    if args.top < 1:
        raise UsageError(f"--top {args.top}: must be 1 or more")
    try:
        found = identify(args.trace, args.stack, kernels=args.kernel or None, switches=not args.no_switches,
                         timing=args.timing, events=split_events(args.events), ignore_flags=args.ignore_flags,
                         workers=args.workers, ray=args.ray, batch=args.batch)
    except (TraceFileError, SweepError) as exc:
        raise UsageError(str(exc))
    if args.json != "-":
        print(found.text(args.top), end="")
    write_json_output("--json", args.json, found.to_json())
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("identify", help="which kernel profile and switches explain a real block trace",
                       description=IDENTIFY_DESCRIPTION, epilog=IDENTIFY_EPILOG, formatter_class=fmt)
    p.add_argument("trace", metavar="TRACE", help="a block trace (blkparse or the kernel's block_* text)")
    p.add_argument("--stack", required=True, metavar="STACK.toml", help="the scenario whose devices replay it")
    p.add_argument("--kernel", action="append", default=[], choices=kernels, metavar="|".join(kernels),
                   help="only these profiles (default: every one); may be repeated")
    p.add_argument("--no-switches", action="store_true", help="only the profiles as they are")
    p.add_argument("--timing", choices=("original", "asap"), default="original",
                   help="replay timing (default original: the trace's submission times)")
    add_event_options(p)
    p.add_argument("--top", type=int, default=10, metavar="N", help="candidates shown (default 10)")
    add_backend_options(p)
    p.add_argument("--json", metavar="FILE|-", help="write the ranking as JSON to FILE ('-' for standard output)")
    p.set_defaults(func=cmd_identify)
