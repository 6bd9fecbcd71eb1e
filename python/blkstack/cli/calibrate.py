"""``blkstack calibrate``: fit a disk's service model from fio measurements."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, List

from blkstack.cli.common import EXIT_OK, UsageError, check_input, check_output, say, write_atomic

CALIBRATE_DESCRIPTION = """\
Fit a disk's service model ([disks.NAME.model], docs/devices.md) from fio's
JSON output of the shipped job set, print how well the fitted model
predicts each job, and write the section for a scenario.

The job set ships with blkstack and runs with plain fio where blkstack is
not installed (print its path with --jobs):
  TARGET=/dev/sdX fio --readonly --output-format=json --output=read.json read.fio
  TARGET=/scratch/file fio --output-format=json --output=write.json write.fio   # writes!
read.fio only reads (random and sequential, 4k-1m, queue depths 1, 8, 32);
write.fio destroys the target's data. Each job runs 3 s after a 1 s ramp.

Fitted: command_overhead_us and bandwidth from the 1/bw-against-1/bs line
of the jobs at queue depth >= 8 with blocks >= 64k; read_latency_us from
the 4k random read at depth 1; seq_read_latency_us from the 4k sequential
read at depth 1; parallelism from the random reads' IOPS at depth 8 and 32;
the write parameters the same way from write jobs, when given. Predictions
each job run through 'blkstack fio' for 200 ms of simulated time on a
one-disk scenario (--kind) with the fitted model, or with --analytic the
model's steady state worked out by hand (what the fit itself uses)."""

CALIBRATE_EPILOG = """\
examples:
  blkstack calibrate --jobs                                   # where read.fio and write.fio are
  blkstack calibrate --from read.json --disk vda --kind virtio   # section on stdout, fit on stderr
  blkstack calibrate --from read.json --from write.json --disk vda --kind virtio --out vda.toml"""

_DISK_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from blkstack import calibrate
    if args.jobs:
        print(calibrate.JOBS_DIR)
        return EXIT_OK
    if not args.sources:
        raise UsageError("calibrate: give fio's JSON with --from FILE (see 'blkstack calibrate --help')")
    if not _DISK_NAME.match(args.disk):
        raise UsageError(f"--disk {args.disk!r}: a disk name is letters, digits, '-' and '_'")
    to_stdout = args.out == "-"
    if not to_stdout:
        check_output("--out", args.out)
    for path in args.sources:
        check_input(path)
    from blkstack.calibrate import fiojson
    from blkstack.calibrate.fit import FitError, fit, predict
    try:
        jobs = [job for path in args.sources for job in fiojson.load(path)]
        reads, writes = fiojson.split(jobs)
        fitted = fit(reads, writes)
    except (fiojson.FioJsonError, FitError) as exc:
        raise UsageError(str(exc)) from None
    report = sys.stderr if to_stdout else sys.stdout
    text = calibrate.model_toml(fitted, args.disk, args.sources, args.preset)
    if args.analytic:
        predictions, how = [predict(fitted, j) for j in jobs], "the service model's steady state, analytically"
    else:
        from blkstack.calibrate.simulate import RUNTIME, predict_simulated
        predictions = predict_simulated(text, jobs, args.disk, args.kind)
        how = f"each job through blkstack fio for {RUNTIME} on one {args.kind} disk"
    for line in calibrate.parameter_summary(fitted) + [""] + calibrate.quality_report(jobs, predictions, how):
        say(report, line)
    if to_stdout:
        sys.stdout.write(text)
    else:
        write_atomic(args.out, text)
        say(report, f"wrote [disks.{args.disk}.model] to {args.out}")
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("calibrate", help="fit a disk's service model from fio measurements of a real device",
                       description=CALIBRATE_DESCRIPTION, epilog=CALIBRATE_EPILOG, formatter_class=fmt,
                       allow_abbrev=False)
    p.add_argument("--from", dest="sources", action="append", metavar="FIO.json", default=[],
                   help="fio's --output-format=json of the job set; may be repeated (reads and writes)")
    p.add_argument("--disk", default="nvme0n1", metavar="NAME", help="the disk the section is for (default nvme0n1)")
    p.add_argument("--kind", default="nvme", metavar="KIND",
                   help="the disk's kind (nvme, sata, virtio, ...) for the fit-quality runs (default nvme)")
    p.add_argument("--analytic", action="store_true",
                   help="predict each job from the model's steady state instead of running it through blkstack fio")
    p.add_argument("--preset", metavar="NAME",
                   help="the preset the section starts from (default: the disk kind's); sets what fio does not "
                        "measure (discard, flush)")
    p.add_argument("--out", default="-", metavar="FILE|-",
                   help="write the section to FILE (atomically) instead of standard output")
    p.add_argument("--jobs", action="store_true", help="print the directory of the shipped fio job files and exit")
    p.set_defaults(func=cmd_calibrate)
