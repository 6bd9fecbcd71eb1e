"""``blkstack scenarios``: list or print the scenario files that ship with the package."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from typing import Any, Dict, List

from blkstack.cli.common import EXIT_OK, UsageError, one_line, table


def _scenario_dir():
    import importlib.resources

    return importlib.resources.files("blkstack").joinpath("scenarios")


def builtin_scenarios() -> Dict[str, Any]:
    """Map name (file name without .toml) -> resource, sorted by name."""
    folder = _scenario_dir()
    found = {}
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in folder.iterdir():
            if entry.name.endswith(".toml") and entry.is_file():
                found[entry.name[: -len(".toml")]] = entry
    return dict(sorted(found.items()))


_DESCRIPTION_RE = re.compile(r'^description\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*(?:#.*)?$')


def scenario_description(text: str) -> str:
    """The scenario's top-level ``description``, else its first comment line."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            break
        match = _DESCRIPTION_RE.match(stripped)
        if match:
            try:
                return one_line(json.loads(f'"{match.group(1)}"'))
            except ValueError:
                return match.group(1)
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            desc = stripped.lstrip("#").strip()
            if desc:
                return desc
            continue
        break
    return ""


def find_builtin(name: str):
    scenarios = builtin_scenarios()
    key = name[: -len(".toml")] if name.endswith(".toml") else name
    if key not in scenarios:
        available = ", ".join(scenarios) or "none"
        raise UsageError(f"{name}: no such built-in scenario (available: {available})")
    return scenarios[key]


SCENARIOS_DESCRIPTION = """\
List the scenario files that come with blkstack, or print one of them so
you can copy it and edit it."""


SCENARIOS_EPILOG = """\
examples:
  blkstack scenarios
  blkstack scenarios demo --show
  blkstack scenarios demo --show > my.toml && blkstack run my.toml"""


def cmd_scenarios(args: argparse.Namespace) -> int:
    if args.name is None:
        if args.show:
            raise UsageError("--show needs a scenario NAME (see 'blkstack scenarios')")
        scenarios = builtin_scenarios()
        if not scenarios:
            print("No built-in scenarios are installed.")
            return EXIT_OK
        rows = [[name, scenario_description(res.read_text(encoding="utf-8"))]
                for name, res in scenarios.items()]
        print("Built-in scenarios (print one with: blkstack scenarios NAME --show):")
        print()
        for line in table(["NAME", "DESCRIPTION"], rows, [False, False]):
            print("  " + line)
        return EXIT_OK
    resource = find_builtin(args.name)
    text = resource.read_text(encoding="utf-8")
    if args.show:
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    else:
        name = resource.name[: -len(".toml")]
        desc = scenario_description(text)
        print(f"{name}: {desc}" if desc else name)
        print(f"Print it with:  blkstack scenarios {name} --show > {name}.toml")
        print(f"Run it with:    blkstack run {name}.toml")
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("scenarios", help="list or print the built-in scenarios",
                       description=SCENARIOS_DESCRIPTION, epilog=SCENARIOS_EPILOG, formatter_class=fmt)
    p.add_argument("name", nargs="?", metavar="NAME", help="a built-in scenario (e.g. demo)")
    p.add_argument("--show", action="store_true", help="print the scenario file NAME")
    p.set_defaults(func=cmd_scenarios)
