"""``blkstack sweep``: one scenario over many parameter values, on every core or a Ray cluster."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List

from blkstack.cli.common import EXIT_OK, PROG, UsageError, check_input, check_output, say

SWEEP_DESCRIPTION = """\
Run a scenario over every point of a sweep file and write one table: a row
per point and device, the axis values as columns, then the figures
(requests, mean request size, merges, splits, zero-seek share, throughput,
btt latencies, the iostat -x columns, simulated and wall time). A point
that fails (limits the kernel refuses, a bad combination) is a row with its
error. The table is Parquet (--out) and, on request, CSV (--csv).

A sweep file names a base scenario and its axes:

  scenario = "raid5-recursive-split"        # built-in name or path
  [grid]                                    # every combination
  kernel = ["6.12", "7.2"]
  "disks.*.queue.max_sectors_kb" = [128, 512, 1280]   # any --set path
  [zip]                                     # lists taken together
  "workload.bs" = ["1M", "4M"]
  "workload.count" = [64, 16]
  [random]                                  # n seeded draws
  n = 200
  "disks.*.queue.nr_requests" = { min = 4, max = 256 }

The points run on every core of this machine (a process pool), or on a Ray
cluster with --ray. Results are the same, bit for bit, whatever runs them
(the wall-time column aside). Ctrl-C writes the finished points; running
the same sweep again reuses them (by a hash of each point's resolved
scenario and the blkstack version) and runs only the rest. docs/sweeps.md
has the details."""

SWEEP_EPILOG = """\
examples:
  blkstack sweep msk.sweep.toml                       # -> msk.sweep.parquet
  blkstack sweep msk.sweep.toml --out msk.parquet --csv msk.csv --workers 2
  blkstack sweep msk.sweep.toml --ray                 # a local Ray
  blkstack sweep msk.sweep.toml --ray auto            # the Ray cluster this machine belongs to
  blkstack plot msk.parquet --x disks.*.queue.max_sectors_kb --y throughput_mb_s --hue kernel --out plots/"""


def default_out(spec: str) -> str:
    stem = os.path.basename(spec)
    stem = stem[:-5] if stem.endswith(".toml") else stem
    return stem + ".parquet"


def cmd_sweep(args: argparse.Namespace) -> int:
    from blkstack.sweep_run import SweepRun, run_spec
    from blkstack.sweep_spec import SweepError, read_spec

    check_input(args.spec)
    out = args.out or default_out(args.spec)
    check_output("--out", out)
    if args.csv:
        check_output("--csv", args.csv)
    for opt, value in (("--workers", args.workers), ("--batch", args.batch)):
        if value is not None and value < 1:
            raise UsageError(f"{opt} {value}: must be 1 or more")
    try:
        spec = read_spec(args.spec, yes=args.yes)
    except SweepError as exc:
        raise UsageError(str(exc))

    def report(state: SweepRun) -> None:
        if args.quiet and not state.interrupted:
            return
        what = (f"{state.ran} ran, {state.reused} reused" if state.reused else f"{state.ran} ran")
        failed = sum(1 for r in state.results.values() if "error" in r)
        done = len(state.results)
        line = (f"{done} of {state.points} points ({what}; {failed} failed) in {state.wall_s:.1f} s; "
                f"table: {out}" + (f", {args.csv}" if args.csv else ""))
        say(sys.stderr, line)
        if state.interrupted:
            say(sys.stderr, f"{PROG}: interrupted: the table holds the finished points; "
                                          "run the same command again to run the rest")

    try:
        run_spec(spec, out=out, csv=args.csv, workers=args.workers, ray=args.ray, batch=args.batch,
                 resume=not args.fresh, progress=not args.quiet, report=report)
    except SweepError as exc:
        raise UsageError(str(exc))
    # KeyboardInterrupt (Ctrl-C, SIGTERM, SIGHUP) goes on to main, whose exit
    # status names the signal; the partial table is already written.
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("sweep", help="run a scenario over many parameter values: one table (Parquet)",
                       description=SWEEP_DESCRIPTION, epilog=SWEEP_EPILOG, formatter_class=fmt)
    p.add_argument("spec", metavar="SWEEP.toml", help="the sweep file")
    add_backend_options(p)
    p.add_argument("--out", metavar="FILE", help="the table (Parquet; default: SWEEP.parquet here)")
    p.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    p.add_argument("--yes", action="store_true", help="run a sweep of more than ten million points")
    p.add_argument("--fresh", action="store_true", help="run every point, reusing nothing from --out")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no closing line")
    p.set_defaults(func=cmd_sweep)


def add_backend_options(p: Any) -> None:
    """--workers, --batch and --ray: where the points run (sweep, identify)."""
    p.add_argument("--workers", type=int, metavar="N",
                   help="local worker processes (default: every core), or a local Ray's CPUs")
    p.add_argument("--batch", type=int, metavar="N", help="points per task (default: about four tasks per worker)")
    p.add_argument("--ray", nargs="?", const=True, default=None, metavar="ADDRESS",
                   help="run on Ray: a local one, or the cluster at ADDRESS ('auto', 'ray://HOST:10001'); "
                        "needs pip install 'blkstack[ray]'")
