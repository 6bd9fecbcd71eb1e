"""``blkstack demo``: the guided first run."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List

from blkstack.cli import common
from blkstack.cli.common import EXIT_OK, bullet, fmt_int, fmt_value
from blkstack.cli.run import format_summary
from blkstack.cli.scenarios import builtin_scenarios


def _leading_comments(text: str) -> List[str]:
    """The comment block at the top of a scenario file, without the '#'."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        body = stripped[1:]
        lines.append(body[1:] if body.startswith(" ") else body)
    return lines


def explain_demo(summary: Dict[str, Any], scenario_text: str = "") -> str:
    """A few lines explaining what the demo run shows."""
    lines: List[str] = []
    about = _leading_comments(scenario_text)
    if about:
        lines += ["", "About this scenario:"] + ["  " + line if line else "" for line in about]
    lines += ["", "What happened:"]
    for name, dev in (summary.get("devices") or {}).items():
        kind = fmt_value(dev.get("kind"))
        if dev.get("partition_of"):
            parent = dev["partition_of"]
            text = (f"{name} is a partition of {parent}: each bio sent to it is remapped ('A') onto "
                    f"{parent}, shifted by its start sector, and is queued, split and counted there.")
            lines += bullet(text)
            continue
        limits = dev.get("limits") or {}
        text = f"{name} ({kind}): {fmt_int(dev.get('bios_queued'))} bios queued ('Q')"
        remaps = dev.get("remaps")
        if isinstance(remaps, int) and remaps > 0:
            text += f", {fmt_int(remaps)} of them remapped onto it ('A')"
        splits = dev.get("splits")
        if isinstance(splits, int) and splits > 0:
            text += f"; bios larger than its queue limits were split {fmt_int(splits)} times ('X')"
            if "max_sectors_kb" in limits:
                text += f" (max_sectors_kb = {fmt_value(limits['max_sectors_kb'])})"
        reqs = dev.get("requests")
        if isinstance(reqs, int):
            text += f"; {fmt_int(reqs)} requests were issued to the driver ('D')"
        lines += bullet(text + ".")
    lines += bullet(
        f"Kernel profile {fmt_value(summary.get('profile'))} decided the edge cases; "
        "'blkstack profiles' lists every behaviour switch and its value per kernel.")
    lines += [
        "",
        "Try next:",
        "  blkstack demo --kernel 7.2                     # the same run under another kernel",
        "  blkstack scenarios demo --show > my.toml       # copy the scenario, then edit it",
        "  blkstack run my.toml --trace - | head -40      # see every event, blkparse-style",
    ]
    return "\n".join(lines)


DEMO_DESCRIPTION = """\
Run the built-in demo scenario, print its summary and explain what it shows,
then run the five seed scenarios compactly: each kernel change before and
after, one headline figure beside the seed's own measurement. It takes a
few seconds."""


DEMO_EPILOG = """\
examples:
  blkstack demo
  blkstack demo --kernel 6.1
  blkstack scenarios demo --show     # the scenario the demo runs"""


def cmd_demo(args: argparse.Namespace) -> int:
    import importlib.resources

    from blkstack.cli.seeds import evaluate_all, format_compact
    from blkstack.seeds import SEEDS

    scenarios = builtin_scenarios()
    if "demo" not in scenarios:
        raise RuntimeError("the built-in scenario demo.toml is missing from this installation")
    text = scenarios["demo"].read_text(encoding="utf-8")
    with importlib.resources.as_file(scenarios["demo"]) as path:
        summary = common.simulate(str(path), args.kernel, [], None, None)
    # Show the scenario by name, not by where the package happens to live.
    summary["scenario"] = "built-in demo.toml; see it with: blkstack scenarios demo --show"
    print(format_summary(summary))
    print(explain_demo(summary, text))
    print()
    print("The five kernel changes blkstack started from, before -> after (each run twice here;")
    print("'blkstack seeds NAME' prints the full evidence, 'blkstack explain SWITCH' the switch):")
    print()
    sys.stdout.flush()
    results = list(evaluate_all(SEEDS, quick=True))
    print("\n".join("  " + line for line in format_compact(results).splitlines()))
    return EXIT_OK


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("demo", help="run the built-in demo and explain it", description=DEMO_DESCRIPTION,
                       epilog=DEMO_EPILOG, formatter_class=fmt)
    p.add_argument("--kernel", choices=kernels, metavar="|".join(kernels),
                   help="kernel profile to model instead of the demo's own")
    p.set_defaults(func=cmd_demo)
