"""Shared helpers for the Python tests of blkstack.

These tests exercise the real compiled engine (``blkstack._core``): run them
after ``python -m pip install -e '.[test]'`` (``make test`` does both).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

# The scenario of the README: 4 direct dd reads of 1 MiB from a SATA disk
# whose max_sectors_kb is 128 (256 sectors of 512 bytes).
TINY = """\
kernel = "6.12"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.queue]
logical_block_size = 512
max_sectors_kb = 128
[workload]
type = "dd"
if = "/dev/sda"
of = "/dev/null"
bs = "1M"
count = 4
iflag = "direct"
"""


def replace_once(text: str, old: str, new: str) -> str:
    """``text.replace(old, new)`` that insists *old* occurs exactly once."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def run_cli(*args: object, cwd: os.PathLike | str | None = None, stdout=subprocess.PIPE,
            env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m blkstack ARGS`` and capture its output as text."""
    env = dict(os.environ)
    env.pop("BLKSTACK_DEBUG", None)
    env["PYTHONIOENCODING"] = "utf-8"
    if env_extra:
        env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "blkstack", *map(str, args)],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
        text=True, timeout=300,
    )


def assert_one_error_line(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """The run failed as bad input: status 2, one ``blkstack: error:`` line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("blkstack: error: "), line
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[..., Path]:
    """Write scenario text to a file in tmp_path; returns its path."""

    def write(text: str = TINY, name: str = "tiny.toml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def tiny(write_scenario) -> Path:
    """The README's scenario, written to tmp_path/tiny.toml."""
    return write_scenario()
