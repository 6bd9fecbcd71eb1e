"""SIGTERM and SIGHUP stop a run as Ctrl-C does: the temporary copy of
every output file is removed, and the exit status is 128 + the signal.

The run is a long one (a minute of simulated fio I/O writing its trace to
a file); the signal is sent once the trace's temporary file exists, which
the engine creates before the run starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

LONG = """\
[disks.nvme0n1]
kind = "nvme"
size = "8GiB"
[workload]
type = "fio"
args = ["--name=w", "--rw=randwrite", "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=32",
        "--time_based", "--runtime=600", "--filename=/dev/nvme0n1"]
"""


def _wait_for(predicate, proc, limit_s=120.0):
    """Poll until *predicate* holds (the process must still be running)."""
    deadline = time.monotonic() + limit_s
    while not predicate():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started writing its trace"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_removes_temporary_outputs(tmp_path, sig):
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG)
    out = tmp_path / "out.txt"
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    env.pop("BLKSTACK_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "blkstack", "run", str(scenario), "--trace", str(out), "--quiet"],
                            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: any(p.name.startswith(".out.txt.") for p in tmp_path.iterdir()), proc)
        proc.send_signal(sig)
        _stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + int(sig), (proc.returncode, stderr)
    assert "Traceback" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.toml"]
