"""``blkstack fio``: fio job files or options on a scenario's stack, fio's report."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, List

from blkstack import ScenarioError
from blkstack.cli import common
from blkstack.cli.common import (EXIT_OK, UsageError, check_input, check_run_outputs, check_sets, print_warnings,
                                 write_json_output)


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text)


def fio_workload(fio_args: List[str]) -> str:
    """The ``--set`` that makes a scenario's workload these fio arguments."""
    return "workload={type = \"fio\", args = [" + ", ".join(_toml_string(a) for a in fio_args) + "]}"


FIO_DESCRIPTION = """\
Run fio jobs on the devices of a scenario. Give fio's own arguments: job
files and/or options (--name=NAME starts a job; options before the first
--name are global), read as fio 3.x reads them. Each job's filename= is a
scenario device (/dev/NAME); without it, the top of the stack.

Prints fio 3.33's report: the job lines, per job IOPS, bandwidth,
slat/clat/lat and clat percentiles, bandwidth and IOPS samples, the latency
distribution, IO depths, fsync latency, a run status block per reporting
group and fio's "Disk stats"; --output-format=json or json+ prints fio's
JSON instead (normal,json both).
Options fio has that do not change the I/O (output, logging, verify, CPU
placement) are ignored with a warning on standard error; any other option
the model does not reproduce is an error.

fio's arguments (everything that is not one of the options below):
  JOBFILE ...           fio job files (INI), read as 'fio JOBFILE' reads them
  --NAME[=VALUE] ...    fio's options: --name=NAME starts a job (--rw=randwrite,
                        --bs=4k, ...); flags such as --time_based take no value"""


FIO_USAGE = ("blkstack fio [JOBFILE ...] [--FIO-OPTION[=VALUE] ...] --stack SCENARIO.toml [--kernel K] "
             "[--set KEY=VALUE] [--trace FILE|-] [--requests FILE|-] [--json FILE|-] [--blktrace DIR] [--blktrace-dump FILE]")


FIO_EPILOG = """\
examples:
  blkstack fio job.fio --stack my.toml
  blkstack fio --stack my.toml --name=w --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=32 --size=1G
  blkstack fio job.fio --stack my.toml --kernel 6.1 --json - | python3 -m json.tool
  blkstack fio job.fio --stack my.toml --trace trace.txt"""


def fio_error(message: str, stack: str) -> str:
    """An error about fio's arguments as the user gave them: the jobs reach
    the engine as the scenario key workload.args, which the user never
    wrote, so that prefix becomes "fio"."""
    prefix = f"{stack}: --set workload.args: "
    if message.startswith(prefix):
        return "fio: " + message[len(prefix):]
    return message


def cmd_fio(args: argparse.Namespace) -> int:
    fio_args: List[str] = list(args.fio_args or [])
    if not fio_args:
        raise UsageError("fio: give a job file or fio's options, e.g. 'blkstack fio job.fio --stack S.toml' "
                         "or 'blkstack fio --stack S.toml --name=x --rw=randwrite' (see 'blkstack fio --help')")
    sets: List[str] = args.set or []
    check_sets(sets)
    check_input(args.stack)
    args.scenario = args.stack
    to_stdout = check_run_outputs(args)
    try:
        summary = common.simulate(args.stack, args.kernel, [fio_workload(fio_args)] + sets, args.trace, args.requests,
                                  blktrace=args.blktrace, blktrace_dump=args.blktrace_dump)
    except ScenarioError as exc:
        raise UsageError(fio_error(str(exc), args.stack)) from None
    print_warnings(summary)
    write_json_output("--json", args.json, summary)
    stream = sys.stderr if to_stdout else sys.stdout
    report = (summary.get("reports") or {}).get("fio") or ""
    print(report.rstrip("\n"), file=stream)
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("fio", help="run fio job files or fio options on a scenario's stack",
                       description=FIO_DESCRIPTION, epilog=FIO_EPILOG, formatter_class=fmt, allow_abbrev=False,
                       usage=FIO_USAGE)
    p.add_argument("--stack", required=True, metavar="SCENARIO.toml",
                   help="the scenario whose devices (and kernel) the jobs run on; its own workload is replaced")
    p.add_argument("--kernel", choices=kernels, metavar="|".join(kernels),
                   help="kernel profile to model instead of the scenario's 'kernel'")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override one scenario key, e.g. workload.buffer_fragmentation=0.1; may be repeated")
    p.add_argument("--trace", metavar="FILE|-", help="write a blkparse-style text trace to FILE ('-' for standard output)")
    p.add_argument("--requests", metavar="FILE|-", help="write one CSV row per issued request to FILE")
    p.add_argument("--json", metavar="FILE|-", help="write the summary (with fio's figures under 'fio') as JSON to FILE")
    common.add_blktrace_option(p)
    p.set_defaults(func=cmd_fio, fio_args=[])
