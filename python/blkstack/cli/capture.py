"""``blkstack capture``: write a scenario of the machine's block stack."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List

from blkstack.cli.common import (EXIT_OK, PROG, UsageError, check_input, check_output, say, write_atomic)


CAPTURE_DESCRIPTION = """\
Read this machine's block stack and print a scenario of it that 'blkstack
run' accepts: every disk (NVMe, SATA/SCSI, virtio, Hyper-V) with the queue
limits its driver set and the current sysfs settings (/sys/block/*/queue/,
device/queue_depth), its partitions, the md arrays (/sys/block/md*/md/,
/proc/mdstat) and dm devices (dm/name and 'dmsetup table') stacked on
them, and the closest kernel profile. The workload is a short O_DIRECT dd
read of the top of the stack, to replace with your own.

Nothing needs root: what cannot be read is left out and named in a
comment, as are devices blkstack does not model (loop, CD drives, ...).
Where an md or dm device's limits as the model derives them differ from
the machine's, the scenario writes the sysfs settings it can
(max_sectors_kb, discard_max_bytes) and the comments list the rest."""


CAPTURE_EPILOG = """\
examples:
  blkstack capture > stack.toml && blkstack run stack.toml
  blkstack capture --dmsetup <(sudo dmsetup table) > stack.toml
  blkstack capture --root /mnt/othermachine --out stack.toml   # a copy of /sys and /proc"""


def cmd_capture(args: argparse.Namespace) -> int:
    from blkstack.capture import CaptureError, capture

    if not os.path.isdir(args.root):
        raise UsageError(f"--root {args.root}: not a directory")
    if args.dmsetup is not None:
        check_input(args.dmsetup)
    if args.out not in (None, "-"):
        check_output("--out", args.out)

    def check(text: str) -> Dict[str, Any]:
        import tempfile

        from blkstack.api import load
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False, encoding="utf-8") as fh:
            fh.write(text)
        try:
            return load(fh.name).info
        finally:
            os.unlink(fh.name)

    try:
        text, warnings = capture(args.root, args.dmsetup, check)
    except CaptureError as exc:
        raise UsageError(str(exc))
    for w in warnings:
        say(sys.stderr, f"{PROG}: warning: {w}")
    if args.out in (None, "-"):
        sys.stdout.write(text)
    else:
        write_atomic(args.out, text)
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("capture", help="write a scenario of this machine's disks, md and dm devices",
                       description=CAPTURE_DESCRIPTION, epilog=CAPTURE_EPILOG, formatter_class=fmt)
    p.add_argument("--root", default="/", metavar="DIR",
                   help="read DIR/sys/block and DIR/proc instead of the machine's own (default /)")
    p.add_argument("--dmsetup", metavar="FILE",
                   help="'dmsetup table' output for the dm devices (default: run dmsetup when --root is /)")
    p.add_argument("--out", metavar="FILE|-", help="write the scenario to FILE (default standard output)")
    p.set_defaults(func=cmd_capture)
