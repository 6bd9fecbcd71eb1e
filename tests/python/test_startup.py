"""Start-up: the commands that draw nothing load no plotting or DataFrame
library (matplotlib, numpy, pandas, pyarrow, ray); these take most of a
second to import, which ``blkstack --help`` must not pay. Checked through
``sys.modules`` in a fresh interpreter, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("matplotlib", "numpy", "pandas", "pyarrow", "ray")

PROBE = """\
import json, sys
from blkstack.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
sys.stderr.write("\\nHEAVY " + json.dumps({"status": status, "heavy": heavy}) + "\\n")
"""


def loaded(*argv: str) -> dict:
    """Run the CLI in a fresh interpreter; its exit status and which heavy
    libraries it had imported when it finished."""
    code = f"HEAVY = {HEAVY!r}\n{PROBE}"
    proc = subprocess.run([sys.executable, "-c", code, *argv], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    line = proc.stderr.rsplit("HEAVY ", 1)[-1]
    return json.loads(line)


@pytest.mark.parametrize("argv", [
    ["--version"],
    ["--help"],
    ["run", "--help"],
    ["seeds", "--list"],
    ["run", str(ROOT / "validate" / "scenarios" / "raid0.toml")],
    ["profiles"],
], ids=lambda a: " ".join(Path(x).name for x in a))
def test_no_heavy_import(argv):
    got = loaded(*argv)
    assert got["status"] == 0
    assert got["heavy"] == []


def test_importing_the_cli_loads_no_heavy_library():
    code = (f"import sys, blkstack.cli; print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_plot_still_loads_matplotlib_when_it_draws(tmp_path, tiny):
    # The other side of the lazy import: the command that draws gets it.
    got = loaded("plot", str(tiny), "--out", str(tmp_path / "p"), "-q")
    assert got["status"] == 0
    assert "matplotlib" in got["heavy"]


def _subparser(parser, name):
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def test_parser_of_one_command_is_the_full_parsers():
    # main() builds only the options of the command it runs; --help and
    # each command's --help must read exactly as with every one built.
    from blkstack import cli

    full = cli.build_parser()
    assert cli.build_parser("").format_help() == full.format_help()
    for name in cli.sub_names(full):
        assert cli.build_parser(name).format_help() == full.format_help(), name
        assert _subparser(cli.build_parser(name), name).format_help() == _subparser(full, name).format_help(), name
