"""blkparse's closing summary at the end of blkstack's blkparse text
(``blkstack run --trace``): per CPU, the throughput, the event count and the
skips, as blkparse 1.2.0's ``show_device_and_cpu_stats`` prints them.

The reference is Debian's real blkparse reading blkstack's binary output
(``--blktrace DIR``) of the same run, device by device (skipped where
blkparse is not installed; CI installs it). blkparse runs in the C locale:
under a locale with thousands separators its ``%'8Lu`` groups digits.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from conftest import TINY, replace_once, run_cli

# Two SATA disks mirrored (raid1), written by 16 direct 64 KiB dd writes:
# md0's bios are remapped to both members.
MD = """\
kernel = "6.1"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sdb]
kind = "sata"
size = "1GiB"
[md.md0]
level = 1
members = ["sda", "sdb"]
[workload]
type = "dd"
if = "/dev/zero"
of = "/dev/md0"
bs = "64k"
count = 16
oflag = "direct"
"""

# 256 sequential direct 4 KiB writes submitted 16 at a time: each batch
# is plugged and merged into one 64 KiB request.
MERGING_WRITES = """\
kernel = "6.1"
[disks.sda]
kind = "sata"
size = "1GiB"
[workload]
type = "fio"
args = ["--name=w", "--rw=write", "--bs=4k", "--size=1M", "--ioengine=libaio", "--iodepth=16",
        "--iodepth_batch_submit=16", "--direct=1", "--filename=/dev/sda"]
"""


def summary_of(text: str, dev: str) -> list[str]:
    """The lines of *dev*'s part of a closing summary: from its first
    ``CPUn (dev):`` line to its ``Skips:`` line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("CPU") and line.endswith(f" ({dev}):"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("Skips:"))
    return lines[start:end + 1]


def run_both(tmp_path, write_scenario, text):
    """Run *text* writing blkstack's blkparse text and blktrace's binary
    files: (the text, the binary directory)."""
    out = tmp_path / "bt"
    out.mkdir()
    own = tmp_path / "own.txt"
    proc = run_cli("run", write_scenario(text), "--trace", own, "--blktrace", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    return own.read_text(), out


def real_blkparse(directory, dev: str) -> str:
    env = dict(os.environ, LC_ALL="C")
    return subprocess.run(["blkparse", "-i", str(directory / f"{dev}.blktrace.0")], check=True, capture_output=True,
                          text=True, timeout=60, env=env).stdout


def test_summary_of_split_reads_worked_by_hand(tmp_path, write_scenario):
    # TINY: 4 direct 1 MiB reads, max_sectors_kb 128: each bio (Q, 1024
    # KiB) is split into 8 requests of 128 KiB, all dispatched and
    # completed: 4 queued / 4096 KiB, 32 dispatches and completions of
    # 4096 KiB, no writes, no merges, no requeues, no gaps in sequences.
    text, _ = run_both(tmp_path, write_scenario, TINY)
    s = summary_of(text, "sda")
    assert s[0] == "CPU0 (sda):"
    assert s[1] == " Reads Queued:           4,     4096KiB\t Writes Queued:           0,        0KiB"
    assert s[2] == " Read Dispatches:       32,     4096KiB\t Write Dispatches:        0,        0KiB"
    assert s[3] == " Reads Requeued:         0\t\t Writes Requeued:         0"
    assert s[4] == " Reads Completed:       32,     4096KiB\t Writes Completed:        0,        0KiB"
    assert s[5] == " Read Merges:            0,        0KiB\t Write Merges:            0,        0KiB"
    assert s[-1] == "Skips: 0 forward (0 -   0.0%)"
    # One CPU recorded events: no Total block. The summary follows the
    # last event, as blkparse prints it.
    assert not any(line.startswith("Total (") for line in s)
    assert text.splitlines().index("CPU0 (sda):") == len(text.splitlines()) - len(s)


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse (Debian's blktrace) is not installed")
@pytest.mark.parametrize("name,scenario,devices", [
    ("split reads", TINY, ["sda"]),
    ("split reads, 1028 KiB", replace_once(replace_once(TINY, 'bs = "1M"', 'bs = "1028k"'), '"6.12"', '"6.1"'), ["sda"]),
    ("merging writes", MERGING_WRITES, ["sda"]),
    ("md raid1", MD, ["md0", "sda", "sdb"]),
])
def test_summary_is_real_blkparses_on_the_same_run(tmp_path, write_scenario, name, scenario, devices):
    text, out = run_both(tmp_path, write_scenario, scenario)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{d}.blktrace.0" for d in devices)
    for dev in devices:
        real = real_blkparse(out, dev)
        assert summary_of(text, dev) == summary_of(real, dev), (name, dev)
    if name == "merging writes":
        # The case is what it says: writes merged (M) into fewer requests.
        merges = summary_of(text, "sda")[5]
        assert not merges.endswith(" 0,        0KiB"), merges


def _two_jobs(kind: str, dev: str) -> str:
    """Two fio jobs, a reader and a writer, each on a CPU of its own (job i
    on CPU i), on one disk of *kind*."""
    return f"""\
kernel = "6.12"
[disks.{dev}]
kind = "{kind}"
size = "1GiB"
[workload]
type = "fio"
args = ["--name=r", "--rw=randread", "--bs=4k", "--size=256k", "--ioengine=libaio", "--iodepth=4", "--direct=1",
        "--filename=/dev/{dev}", "--name=w", "--rw=randwrite", "--bs=4k", "--size=256k", "--ioengine=libaio",
        "--iodepth=4", "--direct=1", "--filename=/dev/{dev}"]
"""


def cpu_of_lines(text: str, pid_action):
    """The CPU column of the event lines whose (pid, action) match."""
    out = set()
    for line in text.splitlines():
        f = line.split()
        if len(f) > 6 and "," in f[0] and f[1].isdigit() and pid_action(int(f[4]), f[5]):
            out.add(int(f[1]))
    return out


def test_events_spread_over_the_submitting_cpus(tmp_path, write_scenario):
    # nvme: a hardware queue per CPU, so job 1's completions come on CPU 1
    # too; virtio-blk: one virtqueue, every completion on CPU 0.
    text, _ = run_both(tmp_path, write_scenario, _two_jobs("nvme", "nvme0n1"))
    assert cpu_of_lines(text, lambda pid, a: a == "Q") == {0, 1}
    assert cpu_of_lines(text, lambda pid, a: a == "C") == {0, 1}
    s = summary_of(text, "nvme0n1")
    assert s[0] == "CPU0 (nvme0n1):" and "CPU1 (nvme0n1):" in s and "Total (nvme0n1):" in s
    # 64 reads queued by job 0 on CPU 0, 64 writes by job 1 on CPU 1.
    cpu1 = s.index("CPU1 (nvme0n1):")
    assert s[1] == " Reads Queued:          64,      256KiB\t Writes Queued:           0,        0KiB"
    assert s[cpu1 + 1] == " Reads Queued:           0,        0KiB\t Writes Queued:          64,      256KiB"
    total = s.index("Total (nvme0n1):")
    assert s[total + 4] == " Reads Completed:       64,      256KiB\t Writes Completed:       64,      256KiB"
    (tmp_path / "v").mkdir()
    text, _ = run_both(tmp_path / "v", write_scenario, _two_jobs("virtio", "vda"))
    assert cpu_of_lines(text, lambda pid, a: a == "C") == {0}
    assert cpu_of_lines(text, lambda pid, a: a == "Q") == {0, 1}


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse (Debian's blktrace) is not installed")
def test_per_cpu_summary_is_real_blkparses(tmp_path, write_scenario):
    """blkstack writes one binary file per CPU; real blkparse reads them
    all (-i NAME -D DIR) and prints the same per-CPU and Total blocks as
    blkstack's own text, and the same event lines. The depth lines are
    left out: blkparse counts the depth in the order it merges its per-CPU
    streams, and for events of one instant on two CPUs that order depends
    on which stream had the turn (`ms_sort`), which the writer, seeing
    one event at a time, does not reproduce: the depths may differ by one."""
    text, out = run_both(tmp_path, write_scenario, _two_jobs("nvme", "nvme0n1"))
    assert sorted(p.name for p in out.iterdir()) == ["nvme0n1.blktrace.0", "nvme0n1.blktrace.1"]
    env = dict(os.environ, LC_ALL="C")
    real = subprocess.run(["blkparse", "-i", "nvme0n1", "-D", str(out)], check=True, capture_output=True, text=True,
                          timeout=60, env=env).stdout
    mine, theirs = summary_of(text, "nvme0n1"), summary_of(real, "nvme0n1")

    def depth(lines):
        return [[int(x) for x in re.findall(r"depth:\s+(\d+)", ln)] for ln in lines if "depth:" in ln]
    assert [ln for ln in mine if "depth:" not in ln] == [ln for ln in theirs if "depth:" not in ln]
    assert all(abs(a - b) <= 1 for m, t in zip(depth(mine), depth(theirs)) for a, b in zip(m, t))
    assert any(line.startswith("CPU1 (nvme0n1):") for line in real.splitlines())

    def events(t):
        return sorted(line for line in t.splitlines() if re.match(r"\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d{9} ", line))
    assert events(text) == events(real) and len(events(text)) > 256
