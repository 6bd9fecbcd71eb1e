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

Fitted: read_latency_us from the random read of the smallest block at
depth 1; seq_read_latency_us from the sequential one; parallelism from the
random reads' IOPS at depth 8 and 32 (Little's law); command_overhead_us
and bandwidth by least squares of the log bandwidth error over every job,
starting from the 1/bw-against-1/bs line of the jobs at depth >= 8 with
blocks >= 64k; the write parameters the same way from write jobs, when
given. Completions posted each as it finishes (the slots-and-transfer
knee) or in batches (a ramp with queue depth: --completions), whichever
fits the jobs better unless told. Predictions: each job run through 'blkstack fio' for 200 ms of
simulated time on a one-disk scenario (--kind) with the fitted model, or
with --analytic the model's steady state worked out by hand (what the
fit itself uses).

Given a DEVICE or FILE instead of --from, runs the job set there with the
system's fio, job by job (a line each on standard error), within
--runtime: reads only (fio --readonly, O_DIRECT) unless --allow-writes.
A FILE must hold data: ext4 and xfs answer reads of never-written space
without any I/O."""

CALIBRATE_EPILOG = """\
examples:
  blkstack calibrate --jobs                                   # where read.fio and write.fio are
  blkstack calibrate /dev/nvme1n1 --runtime 30 --save nvme1n1.json   # measure (reads only) and fit
  blkstack calibrate /scratch/file --allow-writes              # a file written in full beforehand
  blkstack calibrate --from read.json --disk vda --kind virtio   # section on stdout, fit on stderr
  blkstack calibrate --from read.json --from write.json --disk vda --kind virtio --out vda.toml"""

# A job's ramp and measured time in the shipped files: 1 s + 3 s.
DEFAULT_SECONDS_PER_JOB = 4.0

_DISK_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from blkstack import calibrate
    if args.jobs:
        print(calibrate.JOBS_DIR)
        return EXIT_OK
    if not args.sources and not args.target:
        raise UsageError("calibrate: give a device or file to measure, or fio's JSON with --from FILE "
                         "(see 'blkstack calibrate --help')")
    if args.sources and args.target:
        raise UsageError(f"calibrate: give either {args.target} to measure or --from, not both")
    if not _DISK_NAME.match(args.disk):
        raise UsageError(f"--disk {args.disk!r}: a disk name is letters, digits, '-' and '_'")
    if args.allow_writes and not args.target:
        raise UsageError("--allow-writes: only with a device or file to measure")
    to_stdout = args.out == "-"
    for option, path in (("--out", None if to_stdout else args.out), ("--save", args.save)):
        if path is not None:
            check_output(option, path)
    for path in args.sources:
        check_input(path)
    from blkstack.calibrate import fiojson
    from blkstack.calibrate.fit import COMPLETIONS, FitError, fit, predict
    try:
        jobs = _measured_jobs(args) if args.target else [job for path in args.sources for job in fiojson.load(path)]
        reads, writes = fiojson.split(jobs)
        fitted = fit(reads, writes, COMPLETIONS[args.completions])
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


def _measured_jobs(args: argparse.Namespace) -> list:
    """Run the job set on the target with fio; its jobs (and --save)."""
    import json

    from blkstack.calibrate import fiojson, measure
    from blkstack.calibrate.measure import MeasureError
    budget = args.runtime if args.runtime is not None else DEFAULT_SECONDS_PER_JOB * _job_count(args.allow_writes)
    try:
        runs = measure.run_job_set(args.target, args.allow_writes, budget, lambda line: say(sys.stderr, line))
    except MeasureError as exc:
        raise UsageError(str(exc)) from None
    text = json.dumps(measure.merge(runs), indent=1) + "\n"
    if args.save:
        write_atomic(args.save, text)
    return fiojson.parse(args.save or f"fio on {args.target}", text)


def _job_count(writes: bool) -> int:
    from blkstack.calibrate import job_file
    from blkstack.calibrate.measure import sections
    names = ["read", "write"] if writes else ["read"]
    return sum(len(sections(open(job_file(n), encoding="utf-8").read())) for n in names)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"'{text}': must be positive")
    return value


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("calibrate", help="fit a disk's service model from fio measurements of a real device",
                       description=CALIBRATE_DESCRIPTION, epilog=CALIBRATE_EPILOG, formatter_class=fmt,
                       allow_abbrev=False)
    p.add_argument("target", nargs="?", metavar="DEVICE|FILE",
                   help="run the job set on this block device or file with the system's fio (reads only, "
                        "O_DIRECT) instead of reading --from")
    p.add_argument("--allow-writes", action="store_true",
                   help="also run the write jobs on DEVICE|FILE: destroys its data; refused on a device that is "
                        "mounted, swap, or part of md/dm")
    p.add_argument("--runtime", type=_seconds, metavar="SECONDS",
                   help="time budget for the whole job set, shared by its jobs (default 4 s a job: 52 s reading, "
                        "72 s with writes)")
    p.add_argument("--save", metavar="FILE", help="with DEVICE|FILE: also write fio's JSON of the run to FILE")
    p.add_argument("--from", dest="sources", action="append", metavar="FIO.json", default=[],
                   help="fio's --output-format=json of the job set; may be repeated (reads and writes)")
    p.add_argument("--disk", default="nvme0n1", metavar="NAME", help="the disk the section is for (default nvme0n1)")
    p.add_argument("--kind", default="nvme", metavar="KIND",
                   help="the disk's kind (nvme, sata, virtio, ...) for the fit-quality runs (default nvme)")
    p.add_argument("--analytic", action="store_true",
                   help="predict each job from the model's steady state instead of running it through blkstack fio")
    p.add_argument("--completions", choices=("auto", "batched", "each"), default="auto",
                   help="whether the device posts completions in batches (batch_completions: a virtual disk whose "
                        "host drains its queue before it interrupts, as Firecracker's virtio-block does) or each as "
                        "it finishes; auto (default) keeps whichever fits the jobs better")
    p.add_argument("--preset", metavar="NAME",
                   help="the preset the section starts from (default: the disk kind's); sets what fio does not "
                        "measure (discard, flush)")
    p.add_argument("--out", default="-", metavar="FILE|-",
                   help="write the section to FILE (atomically) instead of standard output")
    p.add_argument("--jobs", action="store_true", help="print the directory of the shipped fio job files and exit")
    p.set_defaults(func=cmd_calibrate)
