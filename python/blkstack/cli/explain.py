"""``blkstack explain SWITCH``: what one behaviour switch changes, its
value in each kernel profile, and the seed scenarios that show it."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any, Dict, List

from blkstack import _core
from blkstack.cli.common import EXIT_OK, UsageError, fmt_value, one_line, table
from blkstack.cli.compare import scenario_sides
from blkstack.cli.scenarios import builtin_scenarios


def _switches() -> Dict[str, Dict[str, Any]]:
    """Every switch, its per_profile values in the profiles' own order."""
    data = json.loads(_core.profiles())
    order = [p["name"] for p in data.get("profiles") or []]
    switches = {}
    for sw in data.get("switches") or []:
        per = sw.get("per_profile") or {}
        sw["per_profile"] = {name: per[name] for name in order if name in per}
        switches[sw["name"]] = sw
    return switches


def _find(name: str) -> Dict[str, Any]:
    switches = _switches()
    key = name if name.startswith("behaviour.") else f"behaviour.{name}"
    if key in switches:
        return switches[key]
    near = [s for s in switches if name.replace("behaviour.", "") in s]
    hint = f" (did you mean {', '.join(near[:3])}?)" if near else " (see 'blkstack profiles')"
    raise UsageError(f"{name}: no such behaviour switch{hint}")


def seeds_using(switch: str) -> List[str]:
    """Built-in scenarios whose [compare] sides or text name the switch, or
    whose before and after profiles give it different values."""
    short = switch.replace("behaviour.", "")
    found = []
    for name, resource in builtin_scenarios().items():
        text = resource.read_text(encoding="utf-8")
        if short in text:
            found.append(name)
    return found


def _seed_of(scenario: str) -> str:
    """The `blkstack seeds` argument that runs a built-in scenario: its own
    name for a seed, the seed's number for a variant scenario of a seed."""
    from blkstack.seeds import SEEDS

    for seed in SEEDS:
        if seed.name == scenario:
            return scenario
        if any(v.scenario == scenario for v in seed.scenario_variants.values()):
            return seed.number
    return scenario


def _profiles_differing(sw: Dict[str, Any]) -> List[str]:
    """'6.12 -> 7.2: tail -> head' for each step between consecutive profiles."""
    per = list((sw.get("per_profile") or {}).items())
    steps = []
    for (a, va), (b, vb) in zip(per, per[1:]):
        if va != vb:
            steps.append(f"{a} -> {b}: {fmt_value(va)} -> {fmt_value(vb)}")
    return steps


def format_explain(sw: Dict[str, Any], seeds: List[str], kernel_seeds: List[str]) -> str:
    lines = [sw["name"], ""]
    lines += textwrap.wrap(one_line(sw.get("description") or ""), width=78, initial_indent="  ",
                           subsequent_indent="  ")
    lines += ["", "  values: " + ", ".join(fmt_value(v) for v in sw.get("values") or [])]
    lines += ["", "  value per kernel profile:"]
    per = sw.get("per_profile") or {}
    lines += ["    " + l for l in table(["PROFILE", "VALUE"], [[k, fmt_value(v)] for k, v in per.items()],
                                        [False, False])]
    steps = _profiles_differing(sw)
    lines += ["", "  changes between profiles: " + ("; ".join(steps) if steps else "none (same in every profile)")]
    shown = seeds + [s for s in kernel_seeds if s not in seeds]
    lines.append("")
    if shown:
        lines.append("  seen in the built-in scenarios: " + ", ".join(shown))
        seed = _seed_of(shown[0])
        lines.append(f"    blkstack seeds {seed}          # the seed's figures, before and after")
        lines.append(f"    blkstack scenarios {shown[0]} --show > s.toml && blkstack compare s.toml")
    else:
        lines.append("  no built-in scenario exercises it; try it on your own:")
    lines.append(f"    blkstack compare my.toml --before-set {sw['name']}=A --after-set {sw['name']}=B")
    return "\n".join(lines)


def _seeds_by_profile(sw: Dict[str, Any]) -> List[str]:
    """Seeds whose [compare] kernels give the switch two different values."""
    import importlib.resources

    per = sw.get("per_profile") or {}
    found = []
    for name, resource in builtin_scenarios().items():
        with importlib.resources.as_file(resource) as path:
            sides = scenario_sides(str(path))
        if not sides:
            continue
        kb, ka = sides[0][1], sides[1][1]
        if kb and ka and kb in per and ka in per and per[kb] != per[ka]:
            found.append(name)
    return found


def cmd_explain(args: argparse.Namespace) -> int:
    sw = _find(args.switch)
    print(format_explain(sw, seeds_using(sw["name"]), _seeds_by_profile(sw)))
    return EXIT_OK


DESCRIPTION = """\
Explain one behaviour switch: what kernel behaviour it models (with the
commit that changed it), its possible values, its value under each kernel
profile, where it changed between profiles, and the built-in seed
scenarios that show its effect."""

EPILOG = """\
examples:
  blkstack explain split_remainder
  blkstack explain behaviour.plug_merge
  blkstack profiles          # every switch at once"""


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("explain", help="explain one behaviour switch and the seeds that show it",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=fmt)
    p.add_argument("switch", metavar="SWITCH", help="a switch name, with or without 'behaviour.'")
    p.set_defaults(func=cmd_explain)
