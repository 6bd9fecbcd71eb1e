"""``blkstack validate``: a scenario on a real kernel under qemu, compared with blkstack."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Optional, Sequence

from blkstack.cli.common import (EXIT_OK, EXIT_USAGE, PROG, UsageError, add_event_options, check_input, check_output,
                                 one_line, say, split_events, table, write_json_output)


def _expand_scenarios(items: Sequence[str]) -> List[str]:
    out: List[str] = []
    for item in items:
        if os.path.isdir(item):
            found = sorted(os.path.join(item, f) for f in os.listdir(item) if f.endswith(".toml"))
            if not found:
                raise UsageError(f"{item}: no .toml scenarios in this directory")
            out += found
        else:
            check_input(item)
            out.append(item)
    return out


VALIDATE_DESCRIPTION = """\
Run a scenario on a real Linux kernel and in blkstack, and compare them.

A Debian kernel (5.10, 6.1, 6.12 or 7.2) boots under qemu (TCG) with the scenario's
disks; the guest builds the stack (partitions, md arrays, dm tables, sysfs
writes), runs the workload for real and records the block tracepoints and
every /sys/block/*/queue/* value. blkstack then runs the same scenario with
the matching profile, and the requests issued to each disk are compared in
order, with the queue limits that differ.

The first run downloads the kernel and a few packages from Debian's mirror
(about 80-110 MB per kernel) into the cache and builds a guest; later runs
reuse them. A guest takes 10-60 s per scenario. Needs qemu-system-x86_64,
apt-get, dpkg and a C compiler with a static libc (gcc, libc6-dev).

A scenario may state what it should reach, in comment lines:
  # expect: exact
  # expect 6.12: 87.5% -- why it differs (issue #N)
--check makes the exit status 1 when a result falls short of that (or,
without such a line, is not exact)."""


VALIDATE_EPILOG = """\
examples:
  blkstack validate validate/scenarios/split-max-sectors.toml --kernel 6.1
  blkstack validate my.toml --kernel all               # 5.10, 6.1, 6.12 and 7.2
  blkstack validate validate/scenarios --kernel all --check --summary
  blkstack validate my.toml --out run/ --events Q,X,D  # keep the traces in run/
  blkstack diff run/trace.txt run/sim-trace.txt        # compare them again

Output files (in --out, else CACHE/runs/SCENARIO-KERNEL): trace.txt (the
guest's ftrace text), sim-trace.txt (blkstack's blkparse text), sysfs.txt,
devices.txt, job.sh, job.log, console.log, diff.txt, diff.json.

environment:
  BLKSTACK_VALIDATE_CACHE   cache directory (default ~/.cache/blkstack/validate)
  BLKSTACK_QEMU             qemu binary (default qemu-system-x86_64)
  BLKSTACK_DEBIAN_MIRROR    Debian mirror (default http://deb.debian.org/debian)"""


def cmd_validate_random(args: argparse.Namespace) -> int:
    """``--random N``: scenarios drawn from ``--seed``, run per kernel."""
    from blkstack import validate as V
    from blkstack.validate.randomized import random_validate
    if args.scenario:
        raise UsageError("--random draws its own scenarios: give no scenario files")
    if args.random < 1:
        raise UsageError(f"--random {args.random}: must be at least 1")
    kernels = list(V.KERNELS) if "all" in (args.kernel or []) else (args.kernel or [])
    if not kernels or any(k not in V.KERNELS for k in kernels):
        raise UsageError(f"--random needs --kernel ({' or '.join(V.KERNELS)}, or all)")
    cache = args.cache or V.default_cache()
    reports = []
    for k in kernels:
        out_root = os.path.abspath(args.out or os.path.join(cache, "random", f"seed{args.seed}-{k}"))
        try:
            r = random_validate(args.random, args.seed, k, cache, out_root, os.path.abspath(args.found), V._stderr,
                                timeout=args.timeout, shrink=not args.no_shrink, host_cpu=args.host_cpu,
                                disk_latency=args.disk_latency or 0)
        except (V.ValidationError, V.GuestError, V.DebianError, V.PlanError) as exc:
            raise UsageError(one_line(str(exc)))
        sys.stdout.write(r.text())
        reports.append(r.figures())
    if args.json is not None:
        write_json_output("--json", args.json, reports)
    exact = all(r["exact_scenarios"] == r["scenarios"] for r in reports)
    return EXIT_OK if exact or not args.check else 1


def check_host_cpu(value: Optional[str]) -> None:
    """``--host-cpu``: a CPU class of ``[host] cpu``."""
    from blkstack.validate.plan import HOST_CPU_CLASSES
    if value is not None and value not in HOST_CPU_CLASSES:
        raise UsageError(f"--host-cpu {value}: unknown CPU class; expected one of {', '.join(HOST_CPU_CLASSES)}")


def check_disk_latency(value: Optional[int]) -> None:
    """``--disk-latency``: whole ms, 0 (off) to 10 s, as ``[validate] disk_latency_ms``."""
    if value is not None and not 0 <= value <= 10_000:
        raise UsageError(f"--disk-latency {value}: a latency in ms from 0 (off) to 10000")


def cmd_validate(args: argparse.Namespace) -> int:
    from blkstack import validate as V
    check_host_cpu(args.host_cpu)
    check_disk_latency(args.disk_latency)
    if args.random is not None:
        return cmd_validate_random(args)
    if not args.scenario:
        raise UsageError("give scenario files (or directories), or --random N")
    scenarios = _expand_scenarios(args.scenario)
    kernels: List[Optional[str]] = []
    for k in args.kernel or [None]:
        if k == "all":
            kernels += list(V.KERNELS)
        elif k is not None and k not in V.KERNELS:
            raise UsageError(f"--kernel {k}: Debian ships {V.kernel_list()} (or 'all')")
        else:
            kernels.append(k)
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be a positive number of seconds")
    if args.json not in (None, "-"):
        check_output("--json", args.json)
    events = split_events(args.events)
    runs = [(s, k) for s in scenarios for k in kernels]
    single = len(runs) == 1
    results = []
    failures = 0
    for scenario, kernel in runs:
        out_dir = None
        if args.out:
            kname = V.scenario_kernel(scenario, kernel)
            stem = os.path.splitext(os.path.basename(scenario))[0]
            out_dir = args.out if single else os.path.join(args.out, f"{stem}-{kname}")
        try:
            v = V.validate(scenario, kernel, cache=args.cache, out_dir=out_dir, timeout=args.timeout,
                           events=events, rebuild=args.rebuild, ignore_flags=args.ignore_flags,
                           blktrace=args.blktrace, host_cpu=args.host_cpu, disk_latency=args.disk_latency)
        except V.ValidationError as exc:
            if single:
                raise UsageError(str(exc))
            say(sys.stderr, f"{PROG}: error: {scenario} ({kernel or 'its kernel'}): {one_line(str(exc))}")
            failures += 1
            results.append({"scenario": scenario, "kernel": kernel, "error": one_line(str(exc))})
            continue
        if args.json != "-" and not args.summary:
            sys.stdout.write(v.text())
            if not single:
                sys.stdout.write("\n")
            sys.stdout.flush()
        results.append(v)
    rows = []
    unexpected = failures
    for r in results:
        if isinstance(r, dict):
            rows.append([os.path.basename(r["scenario"]), str(r["kernel"] or "-"), "error", "-", "-", "error"])
            continue
        exp = r.expectation
        if exp is None:
            ok = r.report.identical
            status = "exact" if ok else "differs"
        else:
            ok = bool(r.meets_expectation)
            status = "as expected" if ok else "NOT as expected"
            if ok and not exp.exact and r.match_percent > exp.percent + 0.05:
                status = "at least as expected"
        if args.check and not ok:
            unexpected += 1
        rows.append([os.path.basename(r.scenario), r.kernel, f"{r.match_percent:.1f}%",
                     f"{r.report.ops_match_percent:.1f}%",
                     "-" if exp is None else ("exact" if exp.exact else f"{exp.percent:.1f}%"), status])
    if args.json is not None:
        write_json_output("--json", args.json, [r if isinstance(r, dict) else r.to_json() for r in results])
    if not single or args.summary:
        stream = sys.stderr if args.json == "-" else sys.stdout
        print("validation summary (requests issued to each disk, in order):", file=stream)
        for line in table(["SCENARIO", "KERNEL", "MATCH", "OPS ONLY", "EXPECTED", "STATUS"], rows,
                           [False, False, True, True, True, False]):
            print("  " + line, file=stream)
    if args.check and unexpected:
        return 1
    return EXIT_OK if not failures else EXIT_USAGE


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("validate", help="run a scenario on a real kernel (qemu) and compare with blkstack",
                       description=VALIDATE_DESCRIPTION, epilog=VALIDATE_EPILOG, formatter_class=fmt)
    p.add_argument("scenario", nargs="*", metavar="SCENARIO.toml",
                   help="scenario files, or directories of them (a suite)")
    p.add_argument("--kernel", action="append", metavar="6.1|6.12|all",
                   help="Debian kernel to boot and profile to model (default: the scenario's); may be repeated")
    p.add_argument("--cache", metavar="DIR", help="download and guest cache (default $BLKSTACK_VALIDATE_CACHE "
                                                  "or ~/.cache/blkstack/validate)")
    p.add_argument("--out", metavar="DIR", help="where to keep the traces and reports (one subdirectory per run "
                                                "when there are several)")
    add_event_options(p)
    p.add_argument("--timeout", type=float, default=900.0, metavar="SECONDS",
                   help="give up on a guest after this long (default 900)")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached guest")
    p.add_argument("--blktrace", action="store_true",
                   help="also run blktrace on each disk in the guest; its per-CPU files go to OUT/blktrace/")
    p.add_argument("--host-cpu", metavar="CLASS",
                   help="the model charges CPU time per kernel operation with this [host] cpu class (tcg: the "
                        "guest's vCPU under qemu TCG, docs/validation.md C); default none")
    p.add_argument("--disk-latency", type=int, metavar="MS",
                   help="slow disks: nbdkit answers each of the guest's disk commands after MS ms and the model's "
                        "disks do the same, so the guest's CPU never outruns a disk (docs/validation.md, slow "
                        "disks; needs nbdkit). Overrides the scenario's [validate] disk_latency_ms; with --random, "
                        "recorded in every drawn scenario. 0: off (default)")
    p.add_argument("--check", action="store_true",
                   help="exit with status 1 when a result does not meet its scenario's '# expect' line")
    p.add_argument("--summary", action="store_true", help="print only the summary table")
    p.add_argument("--json", metavar="FILE|-", help="write every result as JSON to FILE ('-' for standard output)")
    p.add_argument("--random", type=int, metavar="N",
                   help="run N scenarios drawn at random (docs/validation.md, randomized testing) instead of files")
    p.add_argument("--seed", type=int, default=1, help="seed of --random's draws (default 1)")
    p.add_argument("--found", default=os.path.join("validate", "found"), metavar="DIR",
                   help="where --random saves the shrunk scenarios that differ (default validate/found)")
    p.add_argument("--no-shrink", action="store_true", help="save --random's differing scenarios as drawn")
    p.set_defaults(func=cmd_validate)
