"""``blkstack report``: one self-contained HTML file of runs, tables and plots."""

from __future__ import annotations

import argparse
import os
from typing import Any, List

from blkstack.cli.common import EXIT_OK, UsageError, check_output, same_file, write_atomic
from blkstack.cli.plot import is_sweep_table


REPORT_DESCRIPTION = """\
Run a scenario (under each --kernel given, or its own) and write one HTML
file with what happened: a summary with each md/dm array and its members
together, an interactive timeline, the full 'iostat -x' columns, queue
limits, btt's stage latencies and merge information, the request-size and
seek histograms, with two or more runs a comparison, and the scenario's
text.

The timeline has a view per array (the array and its members together),
per device and, with several runs, per device across the runs (pick one
in its menu): requests by start sector over time (seekwatcher's picture),
throughput (each request's bytes spread over its time in the device, so
the rate does not alias with the bin width), seeks per second, and the
requests in flight (mean per bin in a band from least to most). The wheel
zooms time, dragging pans, hovering a point shows its request.

The file stands alone and opens offline: styles and the timeline's small
script inline, nothing fetched (its Content-Security-Policy allows only
that script), so it can be mailed or attached to a bug report. A block
trace (blkparse or ftrace text, or binary blktrace, e.g. from a real
machine) may be given instead of, or beside, a scenario; --label names
each input.

A sweep table (blkstack sweep's .parquet) gets a report of its own: the
figure --y against each axis (a line per kernel when the kernel is an
axis, the best point starred), heat maps over pairs of axes (the best cell
outlined), the best point per kernel, and the failed points."""


REPORT_EPILOG = """\
examples:
  blkstack report my.toml --out report.html
  blkstack report my.toml --kernel 6.1 --kernel 6.12 --out before-after.html
  blkstack report my.toml --set disks.sda.queue.max_sectors_kb=64 --out report.html
  blkstack report real-trace.txt my.toml --label real --label model --out real-vs-model.html
  blkstack report sweep.parquet --y zero_seek_pct --out sweep.html   # a blkstack sweep table"""


def _sweep_report(args: argparse.Namespace) -> str:
    from blkstack.cli.plot import load_sweep_table
    from blkstack.report import build_sweep
    from blkstack.sweep_figures import FIGURE_NAMES

    if len(args.inputs) != 1 or args.kernel or args.set or args.label:
        raise UsageError("a sweep table is reported alone, without --kernel, --set or --label")
    frame = load_sweep_table(args.inputs[0])
    figures = [f for f in FIGURE_NAMES if f in frame.columns]
    figure = args.y or ("throughput_mb_s" if "throughput_mb_s" in figures else figures[0])
    if figure not in figures:
        raise UsageError(f"--y {figure}: not a figure of this sweep (one of {', '.join(figures)})")
    return build_sweep(frame, args.inputs[0], args.format, figure)


def cmd_report(args: argparse.Namespace) -> int:
    from blkstack.cli.inputs import load_runs
    from blkstack.report import build

    if not args.out:
        raise UsageError("--out FILE is required (e.g. --out report.html)")
    check_output("--out", args.out)
    for path in args.inputs:
        if os.path.exists(path) and same_file(path, args.out):
            raise UsageError(f"--out {args.out}: would overwrite the input {path}")
    if any(is_sweep_table(p) for p in args.inputs):
        text = _sweep_report(args)
    else:
        if args.y:
            raise UsageError("--y is for a sweep table (.parquet)")
        text = build(load_runs(args.inputs, args.kernel, args.set, args.jobs, args.label))
    write_atomic(args.out, text)
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
                   help="how a sweep table's plots are embedded (default svg: sharp at any zoom)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the file name")
    p.add_argument("--y", metavar="FIGURE", help="for a sweep table: the figure plotted (default throughput_mb_s)")
    p.set_defaults(func=cmd_report)
