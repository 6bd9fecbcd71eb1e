"""blkparse's per-CPU closing summary and the CPU column of events, against a
REAL two-CPU trace.

tests/data/real-2cpu/ holds what `blkstack validate --blktrace` recorded
for its fio-2cpu.toml on Debian's 6.12.117 kernel (qemu -smp 2): blktrace's
own per-CPU binary files (sda.blktrace.0 and .1, written by Debian's
blktrace 1.2.0 in the guest), real blkparse 1.2.0's text of them
(`LC_ALL=C blkparse -i sda -D DIR`, blkparse.txt) and the guest fio's
report (fio.txt). Two fio jobs of 16 O_DIRECT 64 KiB reads (psync), each
held to a CPU of its own, on a virtio-scsi disk with a request queue per
CPU.

What must agree exactly, and why: every per-CPU block (queued,
dispatches, requeues, completions, merges with their KiB, depth, unplugs),
the Total block and the event count. Job i submits on CPU i, so its Q, G,
P, U and D are recorded there; the disk's queue for CPU i has its
interrupt bound to CPU i (managed affinity, one vector per virtqueue), and
blk-mq completes a request there, so each C lands on its submitter's CPU
too; sd's 2560-sector cap leaves a 64 KiB read whole, nothing merges, and
each job's plug is flushed once per read (one `U` per read). The depth is
2: both jobs have one read in flight at a time.

What may differ: the throughput line and every time (the guest runs
under qemu's TCG, the model runs its device model), the sequence numbers
and the order in which the two jobs' events interleave (the guest's
scheduling), so events are compared by what they are (action, sector) and
the CPU they were recorded on, not by position. On a disk with one queue
for all CPUs (virtio-blk) every completion would land on CPU 0 instead,
as the model also does (tests/python/test_blkparse_summary.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import run_cli

DATA = Path(__file__).resolve().parent.parent / "data" / "real-2cpu"
SCENARIO = DATA / "fio-2cpu.toml"
EVENT = re.compile(r"\s*(\d+,\d+)\s+(\d+)\s+\d+\s+\d+\.\d{9}\s+\d+\s+([A-Z]+)\s+(\S+)\s*(\d*)")


def closing_summary(text: str) -> list[str]:
    """From the first ``CPUn (...)`` line to the ``Skips:`` line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"CPU\d+ \(", line))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("Skips:"))
    return lines[start:end + 1]


def cpu_of_events(text: str) -> Counter:
    """(action, sector or '-', CPU) of every event line, counted."""
    out: Counter = Counter()
    for line in text.splitlines():
        m = EVENT.match(line)
        if m:
            _dev, cpu, action, _rwbs, sector = m.groups()
            out[(action, sector or "-", int(cpu))] += 1
    return out


@pytest.fixture(scope="module")
def model_text(tmp_path_factory) -> str:
    """blkstack's blkparse text of the scenario, with the guest fio's
    release (as validate runs it)."""
    out = tmp_path_factory.mktemp("real2cpu") / "sim.txt"
    proc = run_cli("run", SCENARIO, "--trace", out, "--set", "workload.fio_version=3.33", "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def test_per_cpu_summary_is_the_real_kernels(model_text):
    real = closing_summary((DATA / "blkparse.txt").read_text())
    mine = closing_summary(model_text)
    # The real trace: 16 reads of 64 KiB queued, dispatched and completed on
    # each CPU (two jobs of size=1M, bs=64k), none merged or requeued.
    cpu1 = real.index("CPU1 (sda):")
    assert real[0] == "CPU0 (sda):"
    for at in (0, cpu1):
        assert real[at + 1] == " Reads Queued:          16,     1024KiB\t Writes Queued:           0,        0KiB"
        assert real[at + 2] == " Read Dispatches:       16,     1024KiB\t Write Dispatches:        0,        0KiB"
        assert real[at + 4] == " Reads Completed:       16,     1024KiB\t Writes Completed:        0,        0KiB"
        assert real[at + 5] == " Read Merges:            0,        0KiB\t Write Merges:            0,        0KiB"
    # Everything but the throughput (a rate over the trace's time) agrees.
    throughput = [i for i, line in enumerate(real) if line.startswith("Throughput (R/W):")]
    assert len(throughput) == 1
    assert [line for line in mine if not line.startswith("Throughput")] == \
        [line for line in real if not line.startswith("Throughput")]
    assert "Events (sda): 192 entries" in mine


def test_each_event_is_on_the_real_kernels_cpu(model_text):
    real = cpu_of_events((DATA / "blkparse.txt").read_text())
    mine = cpu_of_events(model_text)
    # 32 reads: Q, G, D and C of each, on its job's CPU; a P and a U per read.
    assert sum(real.values()) == 32 * 4 + 32 * 2 == sum(mine.values())
    assert {cpu for (action, _s, cpu) in real if action == "C"} == {0, 1}
    assert mine == real


def test_stats_reads_the_real_per_cpu_files():
    # Given one CPU's file, stats reads every CPU's file beside it, as
    # `blkparse -i sda` does: all 192 records, the device named by the file.
    proc = run_cli("stats", DATA / "sda.blktrace.0", "--json", "-", "-q")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["events"] == 192
    assert list(s["devices"]) == ["sda"]
    assert s["devices"]["sda"]["requests"] == 32
    assert s["cpus"] == 2


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse (Debian's blktrace) is not installed")
def test_blkparse_of_the_real_files_is_the_fixture(tmp_path):
    # The fixture is what Debian's blkparse prints for the real files.
    for f in ("sda.blktrace.0", "sda.blktrace.1"):
        shutil.copy(DATA / f, tmp_path / f)
    env = dict(os.environ, LC_ALL="C")
    text = subprocess.run(["blkparse", "-i", "sda", "-D", str(tmp_path)], check=True, capture_output=True,
                          text=True, timeout=60, env=env).stdout
    assert closing_summary(text) == closing_summary((DATA / "blkparse.txt").read_text())
