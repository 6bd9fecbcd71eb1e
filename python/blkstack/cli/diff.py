"""``blkstack diff``: compare two block traces device by device."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

from blkstack import _core
from blkstack.cli.common import (EXIT_OK, UsageError, add_event_options, check_input, check_output, split_events,
                                 write_json_output)


DIFF_DESCRIPTION = """\
Compare two block traces device by device: the requests issued to each
device (or other events, --events), aligned in order. Prints the match
percentage per device, the first divergence with the events around it, and
the queue limits that differ when both sides' limits are given.

Each trace may be blkparse's default text (blkparse -i DEV, or blkstack run
--trace) or the kernel's tracepoint text (/sys/kernel/tracing/trace with
the block_* events enabled, 6.1 or 6.12 layout). Devices are paired by
device number; --map pairs numbers that differ (a single device on each side
is paired anyway).

Exit status: 0 when the streams are identical, 1 when they differ, 2 on
bad input."""


DIFF_EPILOG = """\
examples:
  blkstack diff real.txt sim.txt
  blkstack diff real.txt sim.txt --map 254,0=8,0 --events Q,X,D
  blkstack diff real.txt sim.txt --ignore-flags --json -
  blkstack diff real.txt sim.txt --real-limits limits.txt --scenario my.toml --kernel 6.1

On a real machine:
  cd /sys/kernel/tracing && echo 1 > events/block/enable && echo > trace
  ... run the workload ...
  cat trace > real.txt
  grep -r . /sys/block/*/dev /sys/block/*/queue/ > limits.txt 2>/dev/null"""


def cmd_diff(args: argparse.Namespace) -> int:
    from blkstack.diff import TraceFileError, diff_files, limits_by_devno, parse_devno
    for path in (args.real, args.sim):
        check_input(path)
    if args.json not in (None, "-"):
        check_output("--json", args.json)
    mapping: Dict[str, str] = {}
    for item in args.map:
        left, eq, right = item.partition("=")
        try:
            if not eq:
                raise ValueError("expected REAL=SIM")
            mapping[parse_devno(left)] = parse_devno(right)
        except ValueError as exc:
            raise UsageError(f"--map {item}: {exc} (e.g. --map 254,0=8,0)")
    if args.context < 0:
        raise UsageError(f"--context {args.context}: must be 0 or more")
    if args.scenario and args.sim_limits:
        raise UsageError("--scenario and --sim-limits both give the model's limits: use one")
    if args.kernel and not args.scenario:
        raise UsageError("--kernel needs --scenario (the model's limits come from the scenario)")
    try:
        real_limits = limits_by_devno(args.real_limits) if args.real_limits else None
        sim_limits = limits_by_devno(args.sim_limits) if args.sim_limits else None
        if args.scenario:
            check_input(args.scenario)
            data = json.loads(_core.check(args.scenario, args.kernel, []))
            sim_limits = {}
            for name, dev in (data.get("devices") or {}).items():
                if dev.get("limits"):
                    sim_limits[name] = dev["limits"]
                    sim_limits[f"{dev.get('major')},{dev.get('minor')}"] = dev["limits"]
        report = diff_files(args.real, args.sim, events=split_events(args.events), mapping=mapping,
                            ignore_flags=args.ignore_flags, real_limits=real_limits,
                            sim_limits=sim_limits if real_limits is not None else None, context=args.context)
    except TraceFileError as exc:
        raise UsageError(str(exc))
    if args.json == "-":
        write_json_output("--json", "-", report.to_json())
    else:
        sys.stdout.write(report.text())
        write_json_output("--json", args.json, report.to_json())
    return EXIT_OK if report.identical else 1


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("diff", help="compare two block traces (blkparse or kernel tracepoint text)",
                       description=DIFF_DESCRIPTION, epilog=DIFF_EPILOG, formatter_class=fmt)
    p.add_argument("real", metavar="REAL", help="the reference trace (e.g. from a real kernel)")
    p.add_argument("sim", metavar="SIM", help="the trace to compare with it (e.g. blkstack run --trace)")
    p.add_argument("--map", action="append", default=[], metavar="REAL=SIM",
                   help="pair device REAL of the first trace with SIM of the second (MAJ,MIN=MAJ,MIN); may be repeated")
    add_event_options(p)
    p.add_argument("--context", type=int, default=3, metavar="N",
                   help="events shown around the first divergence (default 3)")
    p.add_argument("--real-limits", metavar="FILE",
                   help="queue limits of the first trace's machine: 'grep -r . /sys/block/*/dev /sys/block/*/queue/' output")
    p.add_argument("--sim-limits", metavar="FILE",
                   help="queue limits of the second: a sysfs snapshot or a 'blkstack run --json' summary")
    p.add_argument("--scenario", metavar="SCENARIO.toml", help="take the second side's limits from this scenario")
    p.add_argument("--kernel", choices=kernels, metavar="|".join(kernels), help="profile for --scenario")
    p.add_argument("--json", metavar="FILE|-", help="write the comparison as JSON to FILE ('-' for standard output)")
    p.set_defaults(func=cmd_diff)
