"""The progress bar of long runs: on a terminal only, never with --quiet.

A run shows it after a second of wall time; BLKSTACK_PROGRESS_AFTER=0 makes
it show from the engine's first progress tick (every 65536 events), so the
test needs no long run and no timing."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys

from conftest import replace_once, TINY, run_cli

# 70,000 reads of 4 KiB: 70,000 request completions, more than the 65,536
# events after which the engine first reports progress.
LONG = replace_once(replace_once(TINY, 'bs = "1M"', 'bs = "4k"'), "count = 4", "count = 70000")


def run_with_tty_stderr(*args, cwd):
    """Run ``python -m blkstack ARGS`` with standard error on a pseudo-terminal;
    returns (status, stdout, what the terminal received)."""
    env = dict(os.environ, BLKSTACK_PROGRESS_AFTER="0", PYTHONIOENCODING="utf-8")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "blkstack", *map(str, args)], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    received = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    return proc.wait(timeout=300), out, received.decode()


def test_bar_on_a_terminal(tmp_path):
    (tmp_path / "long.toml").write_text(LONG)
    status, out, tty = run_with_tty_stderr("run", "long.toml", cwd=tmp_path)
    assert status == 0, tty
    assert "blkstack [" in tty and "simulated" in tty and "M bios/s" in tty, tty
    # dd knows how much it has read, so the bar shows a percentage, and the
    # line is cleared when the run ends.
    assert "%" in tty
    assert tty.endswith("\r\x1b[K"), repr(tty[-40:])
    assert "REQUESTS" in out


def test_quiet_means_no_bar(tmp_path):
    (tmp_path / "long.toml").write_text(LONG)
    status, out, tty = run_with_tty_stderr("run", "long.toml", "--quiet", cwd=tmp_path)
    assert status == 0
    assert tty == "" and out == ""


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path):
    (tmp_path / "long.toml").write_text(LONG)
    proc = run_cli("run", "long.toml", cwd=tmp_path, env_extra={"BLKSTACK_PROGRESS_AFTER": "0"})
    assert proc.returncode == 0
    assert proc.stderr == ""
