"""``blkstack compare``: one scenario under two kernels (or two sets of
switches), side by side."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Tuple

from blkstack import _core
from blkstack.cli import common
from blkstack.cli.common import EXIT_OK, UsageError, check_input, check_output, check_sets, write_json_output
from blkstack.cli.parallel import Runs, add_jobs_option, results
from blkstack.comparison import compare_runs, format_comparison

Side = Tuple[str, Optional[str], List[str]]  # label, kernel, sets


def scenario_sides(path: str) -> Optional[Tuple[Side, Side]]:
    """The scenario's own ``[compare]`` table, if it has one."""
    info = json.loads(_core.check(path, None, []))
    table = info.get("compare")
    if not table:
        return None
    return tuple((s["label"], s.get("kernel"), list(s.get("set") or [])) for s in (table["before"], table["after"]))  # type: ignore[return-value]


def _label(kernel: Optional[str], sets: List[str]) -> str:
    return " + ".join(([kernel] if kernel else []) + sets) or "scenario as written"


def sides_from_args(args: argparse.Namespace) -> Tuple[Side, Side]:
    """Before and after from --kernel/--before-set/--after-set, else the
    scenario's [compare] table."""
    kernels: List[str] = args.kernel or []
    if len(kernels) > 2:
        raise UsageError(f"--kernel given {len(kernels)} times: compare takes two (before, after)")
    before_sets, after_sets = list(args.before_set or []), list(args.after_set or [])
    check_sets(before_sets + after_sets + list(args.set or []))
    if not kernels and not before_sets and not after_sets:
        sides = scenario_sides(args.scenario)
        if sides is None:
            raise UsageError(f"{args.scenario}: give two kernels (--kernel A --kernel B), --before-set/--after-set, "
                             "or a [compare] table in the scenario")
        return sides
    if len(kernels) == 1 and not before_sets and not after_sets:
        raise UsageError("one --kernel: give a second one (--kernel A --kernel B) or --before-set/--after-set")
    k_before = kernels[0] if kernels else None
    k_after = kernels[-1] if kernels else None
    return ((_label(k_before, before_sets), k_before, before_sets),
            (_label(k_after, after_sets), k_after, after_sets))


def run_side(scenario: str, side: Side, common_sets: List[str], progress: bool = True) -> Dict[str, Any]:
    _label_text, kernel, sets = side
    return common.simulate(scenario, kernel, list(common_sets) + list(sets), None, None, progress=progress)


def cmd_compare(args: argparse.Namespace) -> int:
    check_input(args.scenario)
    if args.json not in (None, "-"):
        check_output("--json", args.json)
    before, after = sides_from_args(args)
    common_sets = list(args.set or [])
    with Runs(args.jobs, most=2) as pool:
        runs = results([pool.submit(run_side, args.scenario, side, common_sets, not pool.parallel)
                        for side in (before, after)])
    result = compare_runs(*runs)
    for name in args.device or []:
        if name not in result["devices"]:
            raise UsageError(f"--device {name}: no such device with a queue (have: {', '.join(result['devices'])})")
    result["before"] = {"label": before[0], "kernel": runs[0].get("profile"), "set": common_sets + before[2]}
    result["after"] = {"label": after[0], "kernel": runs[1].get("profile"), "set": common_sets + after[2]}
    if args.json == "-":
        write_json_output("--json", "-", result)
        return EXIT_OK
    name = runs[0].get("name") or args.scenario
    print(f"{name}: before = {before[0]} (profile {runs[0].get('profile')}), "
          f"after = {after[0]} (profile {runs[1].get('profile')})")
    print()
    print(format_comparison(result, ("before", "after"), args.device))
    write_json_output("--json", args.json, result)
    sys.stdout.flush()
    return EXIT_OK


DESCRIPTION = """\
Run one scenario twice -- under two kernel profiles, or with two sets of
behaviour switches -- and print, per device, the figures side by side:
requests issued, mean request size, merges, bios queued, splits, zero-seek
share, throughput, the iostat -x columns, and the simulated elapsed time.
Rows whose value changed are marked '*', with the relative change.

Without --kernel or --before-set/--after-set the scenario's own [compare]
table says what the two sides are (every built-in seed scenario has one)."""

EPILOG = """\
examples:
  blkstack compare my.toml --kernel 6.1 --kernel 6.12
  blkstack compare my.toml --kernel 6.12 --after-set behaviour.split_remainder=head
  blkstack compare my.toml --before-set behaviour.gap_rule=old --after-set behaviour.gap_rule=current
  blkstack seeds raid5-recursive-split --show > r5.toml && blkstack compare r5.toml
  blkstack compare my.toml --kernel 6.1 --kernel 7.2 --device sda --json -

A [compare] table in a scenario:
  [compare]
  before = { label = "tail insertion", kernel = "6.12" }
  after = { label = "head insertion", kernel = "7.2" }"""


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("compare", help="run a scenario under two kernels (or switch sets) side by side",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=fmt)
    p.add_argument("scenario", metavar="SCENARIO.toml", help="the scenario file to run twice")
    p.add_argument("--kernel", action="append", choices=kernels, metavar="|".join(kernels),
                   help="kernel profile of the before side, then of the after side (give it twice; "
                        "once with --before-set/--after-set uses it for both)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key on both sides; may be repeated")
    p.add_argument("--before-set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key on the before side only, e.g. behaviour.split_remainder=tail")
    p.add_argument("--after-set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key on the after side only")
    p.add_argument("--device", action="append", metavar="NAME", help="show only this device; may be repeated")
    p.add_argument("--json", metavar="FILE|-", help="write the comparison as JSON to FILE ('-' for standard output)")
    add_jobs_option(p)
    p.set_defaults(func=cmd_compare)
