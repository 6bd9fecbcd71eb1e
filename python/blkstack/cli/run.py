"""``blkstack run``: simulate a scenario file and print its summary and reports."""

from __future__ import annotations

import argparse
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing would cost every command's start
    from typing import Any, Dict, List

from blkstack.cli import common
from blkstack.cli.common import (EXIT_OK, add_bio_option, bio_tools, check_input, check_run_outputs, check_sets, fmt_duration_ns,
                                 fmt_int, fmt_rate, fmt_seconds, fmt_value, print_warnings, table, write_json_output)
from blkstack.comparison import zone_errors_text, zone_order_text


def format_summary(summary: Dict[str, Any]) -> str:
    """Render a run's summary as a short human-readable table."""
    devices = summary.get("devices") or {}
    headers = ["DEVICE", "KIND", "MAJ:MIN", "BIOS Q", "SPLITS", "REQUESTS",
               "SECT READ", "SECT WRITTEN", "SECT DISCARDED"]
    right = [False, False, False, True, True, True, True, True, True]
    rows = []
    partitions = []
    zoned = []
    for name, dev in devices.items():
        if "zone_write_errors" in dev:
            zoned.append(f"{name}: {zone_errors_text(dev)}; {zone_order_text(dev)}")
        if dev.get("partition_of"):
            # A partition's bios are traced and counted on its disk's queue.
            partitions.append(f"{name} is a partition of {dev['partition_of']} starting at sector {dev.get('start')}")
            continue
        sectors = dev.get("sectors") or {}
        rows.append([
            str(name),
            fmt_value(dev.get("kind")),
            f"{fmt_value(dev.get('major'))}:{fmt_value(dev.get('minor'))}",
            fmt_int(dev.get("bios_queued")),
            fmt_int(dev.get("splits")),
            fmt_int(dev.get("requests")),
            fmt_int(sectors.get("read")),
            fmt_int(sectors.get("write")),
            fmt_int(sectors.get("discard")),
        ])
    scenario = fmt_value(summary.get("scenario"))
    if summary.get("name"):
        scenario = f"{summary['name']} ({scenario})"
    lines = [f"scenario: {scenario}", ""]
    lines += table(headers, rows, right)
    lines += [f"({p}; its I/O is counted on the disk)" for p in partitions]
    lines += zoned
    if summary.get("errors"):
        lines.append(f"{fmt_int(summary['errors'])} submitted bios ended with an error")
    lines.append("")
    lines.append(
        f"profile {fmt_value(summary.get('profile'))} "
        f"(kernel {fmt_value(summary.get('kernel'))})  "
        f"simulated {fmt_duration_ns(summary.get('sim_time_ns'))}  "
        f"wall {fmt_seconds(summary.get('wall_time_s'))}  "
        f"{fmt_int(summary.get('bios'))} bios, {fmt_rate(summary.get('bios_per_s'))} bios/s"
    )
    return "\n".join(lines)


RUN_DESCRIPTION = """\
Simulate the scenario in SCENARIO.toml and print a summary per device: bios
queued, splits, requests and sectors read, written and discarded, then the
kernel profile, simulated time, wall time and simulation speed.

The summary goes to standard output, or to standard error when standard
output carries the trace, the requests or the JSON summary (FILE is '-').
Output files are written whole or not at all: a failed run leaves none."""


RUN_EPILOG = """\
examples:
  blkstack run my.toml
  blkstack run my.toml --kernel 6.1 --set disks.sda.queue.max_sectors_kb=64
  blkstack run my.toml --trace trace.txt --requests requests.csv
  blkstack run my.toml --trace - | head -20
  blkstack run my.toml --json - | python3 -m json.tool
  blkstack run my.toml --iostat --btt --histograms
  blkstack run my.toml --interval 0.1            # iostat -x every 100 ms of simulated time
  blkstack run my.toml --bio biolatency,biosnoop # bcc's tools' views of the run
  blkstack run my.toml --bio 'biolatency -D -m'  # one histogram per disk, in msecs

A scenario file looks like this:
  kernel = "6.12"
  [disks.sda]
  kind = "sata"
  size = "1GiB"
  [disks.sda.queue]
  logical_block_size = 512
  max_sectors_kb = 128
  [workload]
  type = "dd"
  if = "/dev/sda"
  of = "/dev/null"
  bs = "1M"
  count = 4
  iflag = "direct"
"""


def _report(summary: dict, key: str, timestamps: bool) -> str:
    """One text report of the summary; iostat's as sysstat prints it, with
    its banner (and -t's times)."""
    if key == "iostat":
        from blkstack.iostat_text import for_summary
        return for_summary(summary, host="blkstack", timestamps=timestamps).rstrip("\n")
    return summary["reports"][key].rstrip("\n")


def cmd_run(args: argparse.Namespace) -> int:
    sets: List[str] = args.set or []
    check_sets(sets)
    check_input(args.scenario)
    to_stdout = check_run_outputs(args)

    tools = bio_tools(args.bio)
    run = common.simulate_events if tools else common.simulate
    result = run(args.scenario, args.kernel, sets, args.trace, args.requests, args.interval, args.check,
                 progress=not args.quiet, blktrace=args.blktrace, btt=args.btt,
                 blktrace_dump=args.blktrace_dump)
    summary, events = result if tools else (result, None)
    print_warnings(summary)

    write_json_output("--json", args.json, summary)
    stream = sys.stderr if to_stdout else sys.stdout
    blocks = [] if args.quiet else [format_summary(summary)]
    reports = summary.get("reports") or {}
    wanted = [("iostat", args.iostat or args.interval is not None), ("btt", args.btt), ("histograms", args.histograms)]
    blocks += [_report(summary, key, args.timestamps) for key, on in wanted if on and reports.get(key)]
    if tools:
        from blkstack.biotools import render
        blocks.append(render(events, tools, summary.get("sim_time_ns") or 0))
    if blocks:
        print("\n\n".join(blocks), file=stream)
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("run", help="simulate a scenario file", description=RUN_DESCRIPTION,
                       epilog=RUN_EPILOG, formatter_class=fmt)
    p.add_argument("scenario", metavar="SCENARIO.toml", help="the scenario file to simulate")
    p.add_argument("--kernel", choices=kernels, metavar="|".join(kernels),
                   help="kernel profile to model instead of the scenario's 'kernel' (see 'blkstack profiles')")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override one scenario key, e.g. disks.sda.queue.max_sectors_kb=64 "
                        "or behaviour.split_remainder=tail; may be repeated")
    p.add_argument("--trace", metavar="FILE|-",
                   help="write a blkparse-style text trace to FILE ('-' for standard output)")
    p.add_argument("--requests", metavar="FILE|-",
                   help="write one CSV row per issued request to FILE ('-' for standard output): "
                        "device,seq,time_ns,rwbs,sector,nr_sectors")
    p.add_argument("--json", metavar="FILE|-",
                   help="write the summary as JSON to FILE ('-' for standard output)")
    common.add_blktrace_option(p)
    p.add_argument("--iostat", action="store_true",
                   help="print 'iostat -x' figures (sysstat's layout) over the whole run")
    p.add_argument("-t", "--timestamps", action="store_true",
                   help="print each iostat report's time before it, as 'iostat -t' does (the wall clock at the "
                        "start plus the simulated time)")
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="print 'iostat -x' per interval of simulated time (implies --iostat)")
    p.add_argument("--btt", action="store_true",
                   help="print what 'btt -A' prints for the run: stage latencies per process and device (Q2Q, Q2G, "
                        "G2I, I2D, D2C, Q2C, the dm rows), device overhead, merge, seek, plug, active-request "
                        "and active-period tables, the Q2D histogram and activity ranges")
    p.add_argument("--histograms", action="store_true",
                   help="print the seek-distance and request-size histograms of each disk")
    add_bio_option(p)
    p.add_argument("--check", choices=["integrity"], metavar="integrity",
                   help="also run the integrity oracle: every copy of every written block is tracked, and a "
                        "missed copy, a stale read or a discard outside its range fails the run (exit status 3); "
                        "the conservation check always runs")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="do not print the human-readable summary, nor the progress bar that runs longer than a "
                        "second show on a terminal")
    p.set_defaults(func=cmd_run)
