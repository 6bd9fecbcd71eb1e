"""blkparse's per-CPU closing summary and the CPU column of events, against
REAL two-CPU traces.

tests/data/real-2cpu/ holds what `blkstack validate --blktrace` recorded
for two scenarios on Debian's 6.12.117 kernel (qemu -smp 2): blktrace's
own per-CPU binary files (NAME.blktrace.0 and .1, written by Debian's
blktrace 1.2.0 in the guest), real blkparse 1.2.0's text of them
(`LC_ALL=C blkparse -i NAME -D DIR`, blkparse-NAME.txt) and the guest
fio's report (fio-*.txt):

* fio-2cpu.toml: two fio jobs of 16 O_DIRECT 64 KiB reads (psync), each
  held to a CPU of its own, on a virtio-scsi disk (sda) with a request
  queue per CPU;
* nvme-2cpu.toml: 64 random 4 KiB reads on CPU 0 and 64 random 4 KiB
  writes on CPU 1 (libaio, depth 4) on an nvme disk, a queue per CPU;
* dd/: the suite's virtio-scsi-2cpu, one dd left to the guest's scheduler.

What must agree exactly, and why: every per-CPU block (queued,
dispatches, requeues, completions, merges with their KiB, depth, unplugs),
the Total block and the event count. Job i submits on CPU i, so its Q, G,
P, U and D are recorded there; the disk's queue for CPU i has its
interrupt bound to CPU i (managed affinity, one vector per queue), and
blk-mq completes a request there, so each C lands on its submitter's CPU
too; nothing merges (sda's 2560-sector cap leaves a 64 KiB read whole;
random 4 KiB I/Os are not contiguous), and each submission's plug is
flushed once (one `U` each). The depth is the device's most in flight:
2 on sda (one read per job), 4 per direction on nvme (depth 4).

What may differ: the throughput line and every time (the guest runs
under qemu's TCG, the model runs its device model), the sequence numbers
and the order in which the two jobs' events interleave (the guest's
scheduling), so events are compared by what they are (action, sector) and
the CPU they were recorded on, not by position; and the CPU a task runs
on when nothing holds it to one (dd/: the guest ran its one dd on CPU 1,
the model's job 0 is on CPU 0). On a disk with one queue
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
# (scenario, device, requests per CPU, KiB per CPU, blkparse's event count)
CASES = [("fio-2cpu.toml", "sda", 16, 1024, 192), ("nvme-2cpu.toml", "nvme0n1", 64, 256, 768)]
EVENT = re.compile(r"\s*(\d+,\d+)\s+(\d+)\s+\d+\s+\d+\.\d{9}\s+\d+\s+([A-Z]+)\s+(\S+)\s*(\d*)")


def closing_summary(text: str) -> list[str]:
    """From the first ``CPUn (...)`` line to the ``Skips:`` line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"CPU\d+ \(", line))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("Skips:"))
    return lines[start:end + 1]


def figures(line: str) -> list[int]:
    """The numbers of a summary line (counts and KiB, read then write)."""
    return [int(x) for x in re.findall(r"(\d+)(?:KiB)?(?=[,\s]|$)", line)]


def cpu_of_events(text: str) -> Counter:
    """(action, sector or '-', CPU) of every event line, counted."""
    out: Counter = Counter()
    for line in text.splitlines():
        m = EVENT.match(line)
        if m:
            _dev, cpu, action, _rwbs, sector = m.groups()
            out[(action, sector or "-", int(cpu))] += 1
    return out


def model_text(tmp_path, scenario: str) -> str:
    """blkstack's blkparse text of *scenario*, with the guest fio's release
    (as validate runs it)."""
    out = tmp_path / "sim.txt"
    proc = run_cli("run", DATA / scenario, "--trace", out, "--set", "workload.fio_version=3.33", "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


@pytest.mark.parametrize("scenario,dev,n,kib,events", CASES)
def test_per_cpu_summary_is_the_real_kernels(tmp_path, scenario, dev, n, kib, events):
    real = closing_summary((DATA / f"blkparse-{dev}.txt").read_text())
    mine = closing_summary(model_text(tmp_path, scenario))
    # The real trace: job 0's n I/Os queued, dispatched and completed on
    # CPU 0, job 1's on CPU 1 (sda: reads on both; nvme: reads on CPU 0,
    # writes on CPU 1), none merged or requeued.
    cpu1 = real.index(f"CPU1 ({dev}):")
    assert real[0] == f"CPU0 ({dev}):"
    assert real[1].startswith(" Reads Queued:") and figures(real[1]) == [n, kib, 0, 0]
    assert real[4].startswith(" Reads Completed:") and figures(real[4]) == [n, kib, 0, 0]
    assert real[cpu1 + 2].startswith(" Read Dispatches:")
    assert figures(real[cpu1 + 2]) == ([n, kib, 0, 0] if dev == "sda" else [0, 0, n, kib])
    assert real[cpu1 + 5].startswith(" Read Merges:") and figures(real[cpu1 + 5]) == [0, 0, 0, 0]
    # Everything but the throughput (a rate over the trace's time) agrees.
    assert len([line for line in real if line.startswith("Throughput (R/W):")]) == 1
    assert [line for line in mine if not line.startswith("Throughput")] == \
        [line for line in real if not line.startswith("Throughput")]
    assert f"Events ({dev}): {events} entries" in mine


@pytest.mark.parametrize("scenario,dev,n,kib,events", CASES)
def test_each_event_is_on_the_real_kernels_cpu(tmp_path, scenario, dev, n, kib, events):
    real = cpu_of_events((DATA / f"blkparse-{dev}.txt").read_text())
    mine = cpu_of_events(model_text(tmp_path, scenario))
    # 2n I/Os: a Q, G, D and C each, on its job's CPU; a P and U per plug.
    assert sum(c for (action, _s, _cpu), c in real.items() if action in "QGDC") == 2 * n * 4
    assert {cpu for (action, _s, cpu) in real if action == "C"} == {0, 1}
    assert mine == real


@pytest.mark.parametrize("scenario,dev,n,kib,events", CASES)
def test_stats_reads_the_real_per_cpu_files(scenario, dev, n, kib, events):
    # Given one CPU's file, stats reads every CPU's file beside it, as
    # `blkparse -i NAME` does: every record, the device named by the file.
    proc = run_cli("stats", DATA / f"{dev}.blktrace.0", "--json", "-", "-q")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["events"] == events
    assert list(s["devices"]) == [dev]
    assert s["devices"][dev]["requests"] == 2 * n
    assert s["cpus"] == 2


def test_real_blkparse_text_names_a_dynamic_major():
    # nvme0n1 is 259,0: an extended, dynamically allocated major, which names
    # nothing by itself. The closing summary real blkparse printed names it.
    text = (DATA / "blkparse-nvme0n1.txt").read_text()
    assert text.split()[0] == "259,0"
    s = json.loads(run_cli("stats", DATA / "blkparse-nvme0n1.txt", "--json", "-", "-q").stdout)
    assert list(s["devices"]) == ["nvme0n1"]


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse (Debian's blktrace) is not installed")
@pytest.mark.parametrize("dev", ["sda", "nvme0n1"])
def test_blkparse_of_the_real_files_is_the_fixture(tmp_path, dev):
    # The fixture is what Debian's blkparse prints for the real files.
    for cpu in (0, 1):
        shutil.copy(DATA / f"{dev}.blktrace.{cpu}", tmp_path / f"{dev}.blktrace.{cpu}")
    env = dict(os.environ, LC_ALL="C")
    text = subprocess.run(["blkparse", "-i", dev, "-D", str(tmp_path)], check=True, capture_output=True,
                          text=True, timeout=60, env=env).stdout
    assert closing_summary(text) == closing_summary((DATA / f"blkparse-{dev}.txt").read_text())


def test_a_task_left_to_the_scheduler_may_run_on_another_cpu(tmp_path):
    # dd/: the suite's virtio-scsi-2cpu (8 direct 2 MiB reads, each split
    # into a 1280 KiB and a 768 KiB request) with one dd not held to a CPU.
    # The guest's scheduler ran it on CPU 1 (sda.blktrace.0 is empty), the
    # model runs its one job on CPU 0: every figure of the CPU's block is
    # the same, only the CPU it is under differs. (With one job per CPU,
    # cpus_allowed pins the guest's jobs where the model puts them.)
    real_text = (DATA / "dd" / "blkparse-sda.txt").read_text()
    real = closing_summary(real_text)
    assert (DATA / "dd" / "sda.blktrace.0").stat().st_size == 0
    assert {cpu for (_a, _s, cpu) in cpu_of_events(real_text)} == {1}
    out = tmp_path / "sim.txt"
    proc = run_cli("run", DATA / "dd" / "virtio-scsi-2cpu.toml", "--trace", out,
                   "--set", "workload.buffer_hugepages=true", "--quiet")
    assert proc.returncode == 0, proc.stderr
    mine = closing_summary(out.read_text())
    assert real[0] == "CPU1 (sda):" and mine[0] == "CPU0 (sda):"
    # 8 reads queued (16,384 KiB), 16 requests dispatched and completed.
    assert figures(real[1]) == [8, 16384, 0, 0] and figures(real[2]) == [16, 16384, 0, 0]
    assert [line for line in mine[1:] if not line.startswith("Throughput")] == \
        [line for line in real[1:] if not line.startswith("Throughput")]
    assert {(a, s) for (a, s, _cpu) in cpu_of_events(out.read_text())} == \
        {(a, s) for (a, s, _cpu) in cpu_of_events(real_text)}
