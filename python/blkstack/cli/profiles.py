"""``blkstack profiles``: kernel profiles and every behaviour switch."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any, Dict, List

from blkstack import _core
from blkstack.cli.common import EXIT_OK, fmt_value, one_line, table


def format_profiles(data: Dict[str, Any]) -> str:
    """Render ``profiles()`` as two tables: profiles, then behaviour switches."""
    profiles = data.get("profiles") or []
    switches = data.get("switches") or []
    names = [str(p.get("name")) for p in profiles]

    # Profiles: name and kernel first, then whatever else the engine reports.
    keys: List[str] = ["name", "kernel"]
    for prof in profiles:
        for key, value in prof.items():
            if key not in keys and not isinstance(value, (list, dict)):
                keys.append(key)
    rows = [[fmt_value(p.get(k)) for k in keys] for p in profiles]
    lines = ["Kernel profiles (choose one with: blkstack run SCENARIO --kernel NAME)", ""]
    lines += ["  " + l for l in table([k.upper() for k in keys], rows, [False] * len(keys))]
    if data.get("default"):
        lines += ["", f"  A scenario without a 'kernel' key uses profile {fmt_value(data['default'])}."]

    lines += ["", "Behaviour switches (value under each profile; override with --set NAME=VALUE)", ""]
    headers = ["SWITCH"] + names
    rows = []
    for sw in switches:
        per = sw.get("per_profile") or {}
        rows.append([str(sw.get("name"))] + [fmt_value(per.get(n)) for n in names])
    switch_table = table(headers, rows, [False] * len(headers))
    lines.append("  " + switch_table[0])
    for sw, row_text in zip(switches, switch_table[1:]):
        lines.append("  " + row_text)
        desc = one_line(sw.get("description") or "")
        values = sw.get("values")
        if values:
            desc = (desc + " " if desc else "") + "Values: " + ", ".join(fmt_value(v) for v in values) + "."
        if desc:
            lines += textwrap.wrap(desc, width=78, initial_indent="      ", subsequent_indent="      ")
    if not switches:
        lines.append("  (none)")
    return "\n".join(lines)


PROFILES_DESCRIPTION = """\
List the kernel profiles blkstack can model and every behaviour switch, with
its value under each profile and what it changes. A profile is chosen by the
scenario's 'kernel' key or by 'blkstack run --kernel'; a single switch can be
overridden with --set."""


PROFILES_EPILOG = """\
examples:
  blkstack profiles
  blkstack profiles --json
  blkstack run my.toml --kernel 6.1 --set behaviour.split_remainder=tail"""


def cmd_profiles(args: argparse.Namespace) -> int:
    data = json.loads(_core.profiles())
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(format_profiles(data))
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("profiles", help="list kernel profiles and behaviour switches",
                       description=PROFILES_DESCRIPTION, epilog=PROFILES_EPILOG, formatter_class=fmt)
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.set_defaults(func=cmd_profiles)
