"""blktrace's binary per-CPU files (``sda.blktrace.N``) read wherever a text
trace is read, checked against Debian's real ``blkparse`` on the same
files (skipped where blkparse is not installed; CI installs it).

The records are written here from struct blk_io_trace's layout
(include/uapi/linux/blktrace_api.h): 48 bytes, then the payload.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import blkstack
from blkstack.diff import diff_files

from conftest import run_cli

MAGIC = 0x65617407  # BLK_IO_TRACE_MAGIC | version 7


def tc(bits: int) -> int:
    """A category in the action word (BLK_TC_SHIFT 16)."""
    return bits << 16


WRITE, FLUSH, SYNC, QUEUE, ISSUE, COMPLETE, NOTIFY = 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 6, 1 << 7, 1 << 10
TA_QUEUE, TA_GETRQ, TA_ISSUE, TA_COMPLETE, TA_SPLIT = 1, 4, 7, 8, 13
SDA = 8 << 20  # dev_t of 8,0 (MINORBITS 20)


def rec(seq, time_ns, sector, nbytes, action, pid, cpu=0, pdu=b""):
    return struct.pack("<IIQQIIIIIHH", MAGIC, seq, time_ns, sector, nbytes, action, pid, SDA, cpu, 0, len(pdu)) + pdu


def cpu0() -> bytes:
    # dd (pid 843) queues a 384 KiB sync write, splits it at 2304, gets and
    # issues its first 128 KiB; a flush request (FLUSH, no data) follows.
    ws = tc(WRITE | SYNC)
    return b"".join([
        rec(0, 0, 0, 0, tc(NOTIFY), 843, pdu=b"dd\0"),
        rec(1, 1000, 2048, 768 * 512, TA_QUEUE | ws | tc(QUEUE), 843),
        rec(2, 2000, 2048, 0, TA_SPLIT | ws, 843, pdu=struct.pack(">Q", 2304)),
        rec(3, 2500, 2048, 256 * 512, TA_GETRQ | ws | tc(QUEUE), 843),
        rec(4, 3000, 2048, 256 * 512, TA_ISSUE | ws | tc(ISSUE), 843),
        rec(5, 4000, 0, 0, TA_ISSUE | tc(FLUSH | ISSUE), 843),
    ])


def cpu1() -> bytes:
    # The completions, on CPU 1 (interrupt context, pid 0).
    return b"".join([
        rec(1, 900000, 2048, 256 * 512, TA_COMPLETE | tc(WRITE | SYNC | COMPLETE), 0, cpu=1),
        rec(2, 1400000, 0, 0, TA_COMPLETE | tc(FLUSH | COMPLETE), 0, cpu=1),
    ])


@pytest.fixture
def blktrace_dir(tmp_path):
    (tmp_path / "sda.blktrace.0").write_bytes(cpu0())
    (tmp_path / "sda.blktrace.1").write_bytes(cpu1())
    return tmp_path


def test_both_cpu_files_are_read(blktrace_dir):
    r = blkstack.load_trace(blktrace_dir / "sda.blktrace.0")
    s = r.summary
    # 8 records, one a process notify (dd's name): 7 events, Q X G D D C C.
    assert s["events"] == 7 and s["format"] == "blkparse"
    sda = s["devices"]["sda"]
    # One write of 256 sectors completed (G at 2500 to C at 900000 ns) and
    # the flush (D at 4000 to C at 1400000): diskstats writes 1, sectors
    # written 256, flushes 1.
    assert (sda["diskstats"][4], sda["diskstats"][6], sda["diskstats"][15]) == (1, 256, 1)
    assert list(r.events["action"].astype(str)) == ["Q", "X", "G", "D", "D", "C", "C"]


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse (Debian's blktrace) is not installed")
def test_real_blkparse_reads_the_same_events(blktrace_dir):
    text = blktrace_dir / "blkparse.txt"
    subprocess.run(["blkparse", "-i", "sda", "-o", str(text)], cwd=blktrace_dir, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    binary = blktrace_dir / "sda.blktrace.0"
    report = diff_files(str(binary), str(text), events=["Q", "X", "G", "D", "C"])
    assert report.identical, report.text()
    # Every figure stats computes is the same from either.
    a, b = blkstack.load_trace(binary).summary, blkstack.load_trace(text).summary
    assert a["devices"] == b["devices"] and a["reports"] == b["reports"]
    proc = run_cli("stats", binary, "--btt")
    assert proc.returncode == 0, proc.stderr


needs_blkparse = pytest.mark.skipif(shutil.which("blkparse") is None or shutil.which("btt") is None,
                                    reason="blkparse and btt (Debian's blktrace) are not installed")


def event_lines(text: str):
    """blkparse's event lines, without its closing summary."""
    out = []
    for line in text.splitlines():
        if line.startswith("CPU") or line.startswith("Total"):
            break
        if line.strip():
            out.append(line)
    return out


def text_and_binary(tmp_path, scenario, *extra):
    """Run *scenario* writing blkstack's text trace and blktrace's binary
    files of the same run: (binary directory, text file, the process)."""
    out = tmp_path / "bt"
    out.mkdir()
    own = tmp_path / "own.txt"
    proc = run_cli("run", scenario, "--trace", own, "--blktrace", out, "--quiet", *extra)
    assert proc.returncode == 0, proc.stderr
    return out, own, proc


@needs_blkparse
def test_real_blkparse_reads_blkstacks_binary_output(tmp_path, write_scenario):
    # TINY: four 1 MiB direct reads split to 128 KiB requests. blkstack
    # writes its own blkparse text and blktrace's binary files of the same
    # run; real blkparse prints the binary files as blkstack's text.
    out, own, _ = text_and_binary(tmp_path, write_scenario())
    assert sorted(p.name for p in out.iterdir()) == ["sda.blktrace.0"]
    real = subprocess.run(["blkparse", "-i", "sda", "-D", str(out)], check=True, capture_output=True, text=True,
                          timeout=60).stdout
    assert event_lines(real) == event_lines(own.read_text())


@needs_blkparse
def test_real_blkparse_prints_the_splits_of_plain_reads(tmp_path):
    # examples/dd-read-split.toml under 6.1: O_DIRECT dd reads without
    # REQ_SYNC, split at max_sectors_kb (32 X events). A split record has no
    # category of its kind, so its only one is its direction (__blk_add_trace
    # sets ddir_act's READ for every op that is not a write); a record
    # without any category is dropped by blkparse, which then printed none
    # of the 32 X lines blkstack's own text has.
    example = Path(__file__).resolve().parents[2] / "examples" / "dd-read-split.toml"
    out, own, _ = text_and_binary(tmp_path, example)
    real = subprocess.run(["blkparse", "-i", "sda", "-D", str(out)], check=True, capture_output=True, text=True,
                          timeout=60).stdout
    assert sum(" X " in line for line in event_lines(own.read_text())) == 32
    assert event_lines(real) == event_lines(own.read_text())


def test_blkstack_reads_its_binary_output_as_its_text(tmp_path, write_scenario):
    out, own, _ = text_and_binary(tmp_path, write_scenario())
    a, b = blkstack.load_trace(out / "sda.blktrace.0").summary, blkstack.load_trace(own).summary
    assert a["events"] == b["events"] > 0
    assert a["devices"] == b["devices"] and a["reports"] == b["reports"]
    # A directory that does not exist is refused before the run.
    assert run_cli("run", write_scenario(), "--blktrace", tmp_path / "nope").returncode == 2


@needs_blkparse
def test_real_btt_reads_blkstacks_binary_output(tmp_path, write_scenario):
    # Eight 128 KiB direct reads on TINY's disk (max_sectors_kb 128: no
    # split). btt on blkparse's dump of blkstack's binary output gives
    # blkstack's own btt figures: every stage's count, the Q2Q, D2C and
    # Q2C times, and the merge information row. (btt's tdelta reports a
    # zero delta as 1 ns, so Q2G, G2I and I2D, all 0 here, are compared by
    # count only.)
    out, _, proc = text_and_binary(tmp_path, write_scenario(), "--set", "workload.bs=128k", "--set", "workload.count=8",
                                   "--btt")
    subprocess.run(["blkparse", "-i", "sda", "-D", str(out), "-d", str(tmp_path / "dump.bin"), "-O"], check=True,
                   capture_output=True, timeout=60)
    real = subprocess.run(["btt", "-i", str(tmp_path / "dump.bin")], check=True, capture_output=True, text=True,
                          cwd=tmp_path, timeout=60).stdout

    def all_devices(text: str):
        rows = {}
        section = text.split("==================== All Devices ====================")[1].split("====")[0]
        for line in section.splitlines():
            fields = line.split()
            if len(fields) == 5 and fields[0] in ("Q2Q", "Q2G", "G2I", "I2D", "D2C", "Q2C"):
                rows[fields[0]] = fields[1:]
        return rows

    def merge_row(text: str) -> str:
        section = text.split("==================== Device Merge Information ====================")[1]
        return next(line for line in section.splitlines() if line.startswith(" (  8,  0)"))

    theirs, ours = all_devices(real), all_devices(proc.stdout)
    assert sorted(theirs) == sorted(ours) == ["D2C", "G2I", "I2D", "Q2C", "Q2G", "Q2Q"]
    for stage in ours:
        assert theirs[stage][3] == ours[stage][3], (stage, theirs, ours)
    for stage in ("Q2Q", "D2C", "Q2C"):
        assert theirs[stage] == ours[stage], (stage, theirs, ours)
    assert merge_row(real) == merge_row(proc.stdout)
