"""``blkstack plot``: seekwatcher-style plots of runs and traces."""

from __future__ import annotations

import argparse
import os
from typing import Any, List

from blkstack.cli.common import EXIT_OK, UsageError


PLOT_DESCRIPTION = """\
Draw what happened on each device, for a scenario run by blkstack or a block
trace recorded on a real machine:

  lba-DEV         each request at its time and start sector (seekwatcher's
                  picture), a bar over the sectors it covers, coloured by
                  operation: read, write, discard, flush
  sizes-DEV       request-size histogram (log2 buckets)
  seeks-DEV       seek-distance histogram between consecutive requests
  depth-DEV       requests in the driver over time (issued, not completed)
  throughput-DEV  MB/s completed over time, by operation

md and dm devices issue no requests: their plots show the bios queued on
them. INPUT is a scenario (a .toml file, run first) or a result saved as a
block trace -- 'blkstack run SCENARIO --trace FILE' writes one -- or a trace
from a real machine (blkparse text or the kernel's block_* tracepoint text).

With several runs (two kernels, or several inputs) each run's plots are
prefixed with its label, and compare-KIND-DEV.FMT overlays the runs of each
device they share: before and after in one picture. Files are written
whole or not at all.

A sweep table (blkstack sweep's .parquet) is plotted as --y FIGURE against
--x AXIS, one line per --hue value, one plot per --facet value and device;
points differing in other axes are averaged, and each line's best point is
starred."""


PLOT_EPILOG = """\
examples:
  blkstack plot my.toml --out plots/
  blkstack plot my.toml --kernel 6.1 --kernel 7.2 --out plots/    # and compare-* overlays
  blkstack plot my.toml --set behaviour.split_remainder=head --format svg --out plots/
  blkstack run my.toml --trace run.txt && blkstack plot run.txt --out plots/
  blkstack plot real-trace.txt sim-trace.txt --out plots/          # a real trace against the model
  blkstack plot sweep.parquet --x md.md0.chunk --y throughput_mb_s --hue kernel --device md0 --out plots/"""


def check_out_dir(path: str) -> None:
    """The output directory: created if missing; an existing file is refused."""
    if path == "":
        raise UsageError("--out: empty directory name")
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--out {path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {path}: cannot create the directory: {exc.strerror or exc}")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"--out {path}: permission denied")


def is_sweep_table(path: str) -> bool:
    return path.lower().endswith(".parquet")


def load_sweep_table(path: str) -> Any:
    from blkstack.cli.common import check_input
    from blkstack.sweep_run import load_table
    check_input(path)
    try:
        table = load_table(path)
    except Exception as exc:
        raise UsageError(f"{path}: not a sweep table ({type(exc).__name__}: {exc})")
    if not {"point", "device", "error"} <= set(table.columns):
        raise UsageError(f"{path}: not a sweep table (no point, device and error columns)")
    return table


def _sweep_column(table: Any, option: str, name: Any, axes: List[str], what: str, choices: List[str]) -> None:
    if name is not None and name not in axes:
        raise UsageError(f"{option} {name}: not {what} of this sweep (one of {', '.join(choices)})")


def cmd_plot_sweep(args: argparse.Namespace) -> int:
    from blkstack import plots
    from blkstack.sweep_figures import FIGURE_NAMES
    from blkstack.sweep_plots import axis_columns, sweep_plots

    if len(args.inputs) != 1:
        raise UsageError("a sweep table is plotted alone: give one .parquet file")
    table = load_sweep_table(args.inputs[0])
    axes = axis_columns(table)
    figures = [f for f in FIGURE_NAMES if f in table.columns]
    if not args.x or not args.y:
        raise UsageError(f"a sweep plot needs --x AXIS and --y FIGURE (axes: {', '.join(axes)})")
    _sweep_column(table, "--x", args.x, axes, "an axis", axes)
    _sweep_column(table, "--y", args.y, figures, "a figure", figures)
    _sweep_column(table, "--hue", args.hue, axes, "an axis", axes)
    _sweep_column(table, "--facet", args.facet, axes, "an axis", axes)
    devices = sorted(set(table["device"].dropna()))
    _sweep_column(table, "--device", args.device, devices, "a device", devices)
    check_out_dir(args.out)
    figs = sweep_plots(table, args.x, args.y, args.hue, args.facet, args.device)
    written = plots.save_plots(figs, args.out, args.format)
    plots.close(figs)
    if not args.quiet:
        for path in written:
            print(path)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from blkstack import plots
    from blkstack.cli.inputs import load_runs

    if not args.out:
        raise UsageError("--out DIR is required (where the plots go)")
    if any(is_sweep_table(p) for p in args.inputs):
        return cmd_plot_sweep(args)
    if args.x or args.y or args.hue or args.facet or args.device:
        raise UsageError("--x, --y, --hue, --facet and --device are for a sweep table (.parquet)")
    runs = load_runs(args.inputs, args.kernel, args.set, args.jobs, args.label)
    check_out_dir(args.out)
    several = len(runs) > 1
    written: List[str] = []
    for r in runs:
        figures = plots.run_plots(r.result, prefix=f"{r.label}-" if several else "")
        written += plots.save_plots(figures, args.out, args.format)
        plots.close(figures)
    if several:
        figures = plots.compare_plots([(r.label, r.result) for r in runs])
        written += plots.save_plots(figures, args.out, args.format)
        plots.close(figures)
    if not written:
        raise UsageError("nothing to plot: no device issued a request")
    if not args.quiet:
        for path in written:
            print(path)
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    from blkstack.cli.inputs import add_run_options
    from blkstack.plots import FORMATS
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("plot", help="plots of a run or trace: LBA over time, sizes, seeks, depth, throughput",
                       description=PLOT_DESCRIPTION, epilog=PLOT_EPILOG, formatter_class=fmt)
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="a scenario (.toml) or a block trace (a saved result)")
    p.add_argument("--out", metavar="DIR", help="directory for the plots (created if missing); required")
    add_run_options(p, kernels)
    p.add_argument("--format", choices=FORMATS, default="png", help="image format (default png)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not list the files written")
    g = p.add_argument_group("sweep tables (blkstack sweep's .parquet)")
    g.add_argument("--x", metavar="AXIS", help="the axis along the x axis")
    g.add_argument("--y", metavar="FIGURE", help="the figure plotted (e.g. throughput_mb_s, requests)")
    g.add_argument("--hue", metavar="AXIS", help="one line per value of this axis")
    g.add_argument("--facet", metavar="AXIS", help="one plot per value of this axis")
    g.add_argument("--device", metavar="NAME", help="only this device (default: one plot per device)")
    p.set_defaults(func=cmd_plot)
