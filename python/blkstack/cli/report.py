"""``blkstack report``: one self-contained HTML file of runs, tables and plots."""

from __future__ import annotations

import argparse
import os
from typing import Any, List

from blkstack.cli.common import EXIT_OK, UsageError, check_output, same_file, write_atomic


REPORT_DESCRIPTION = """\
Run a scenario (under each --kernel given, or its own) and write one HTML
file with what happened: the devices and their queue limits, 'iostat -x',
btt's stage latencies and merge information, the plots of each device
(see 'blkstack plot --help'), with two or more kernels a comparison table
and before/after overlays, and the scenario's text.

The file stands alone: styles inline, plots embedded as images, no scripts
and no network fetches (its Content-Security-Policy allows none), so it can
be mailed or attached to a bug report. A block trace (blkparse or ftrace
text, e.g. from a real machine) may be given instead of, or beside, a
scenario."""


REPORT_EPILOG = """\
examples:
  blkstack report my.toml --out report.html
  blkstack report my.toml --kernel 6.1 --kernel 6.12 --out before-after.html
  blkstack report my.toml --set disks.sda.queue.max_sectors_kb=64 --format png --out report.html
  blkstack report real-trace.txt --out real.html"""


def cmd_report(args: argparse.Namespace) -> int:
    from blkstack.cli.inputs import load_runs
    from blkstack.report import build

    if not args.out:
        raise UsageError("--out FILE is required (e.g. --out report.html)")
    check_output("--out", args.out)
    for path in args.inputs:
        if os.path.exists(path) and same_file(path, args.out):
            raise UsageError(f"--out {args.out}: would overwrite the input {path}")
    runs = load_runs(args.inputs, args.kernel, args.set, args.jobs)
    write_atomic(args.out, build(runs, args.format))
    if not args.quiet:
        print(args.out)
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    from blkstack.cli.inputs import add_run_options
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("report", help="a self-contained HTML report: tables, iostat, btt, plots, scenario",
                       description=REPORT_DESCRIPTION, epilog=REPORT_EPILOG, formatter_class=fmt)
    p.add_argument("inputs", nargs="+", metavar="SCENARIO", help="a scenario (.toml), or a block trace")
    p.add_argument("--out", metavar="FILE", help="the HTML file to write; required")
    add_run_options(p, kernels)
    p.add_argument("--format", choices=("svg", "png"), default="svg",
                   help="how plots are embedded (default svg: sharp at any zoom)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the file name")
    p.set_defaults(func=cmd_report)
