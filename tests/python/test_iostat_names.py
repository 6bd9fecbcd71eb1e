"""iostat's banner and -t times as sysstat prints them (recorded in
tests/data/iostat), and devices with dynamic majors shown by name."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import run_cli

DATA = Path(__file__).resolve().parent.parent / "data" / "iostat"

VIRTIO = """\
kernel = "6.12"
[disks.vda]
kind = "virtio"
size = "1GiB"
[workload]
type = "fio"
args = ["--name=r", "--rw=randread", "--bs=4k", "--size=4M", "--ioengine=libaio", "--iodepth=4", "--direct=1",
        "--filename=/dev/vda"]
"""

BANNER = r"Linux \S+ \(\S+\) \t\d\d/\d\d/\d\d \t_x86_64_\t\(\d+ CPU\)"


def shape(text: str) -> list:
    """Each line's kind: banner, blank, time, header, row."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        if re.fullmatch(BANNER, line):
            out.append("banner")
        elif line == "":
            out.append("blank")
        elif re.fullmatch(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d", line):
            out.append("time")
        elif line.startswith("Device "):
            out.append("header")
        elif out and out[-1] in ("header", "row"):
            out.append("row")
        else:
            raise AssertionError(f"not iostat's: {line!r}")
    return out


def test_banner_and_times_as_sysstat(tmp_path):
    real = (DATA / "iostat-dxt.txt").read_text()
    (tmp_path / "s.toml").write_text(VIRTIO)
    proc = run_cli("run", "s.toml", "--iostat", "--interval", "0.01", "-t", "--quiet", cwd=tmp_path,
                   env_extra={"SOURCE_DATE_EPOCH": "1795571893"})
    assert proc.returncode == 0, proc.stderr
    mine = proc.stdout
    # sysstat (3 devices, 2 reports): banner, blank, then per report its
    # time, the header, the rows and two blank lines (the last report's
    # trailing blank lines are not counted: shape() strips the end).
    real_shape = shape(real)
    assert real_shape == ["banner", "blank", "time", "header", "row", "row", "row", "blank", "blank",
                          "time", "header", "row", "row", "row"]
    mine_shape = shape(mine)
    assert mine_shape[:2] == ["banner", "blank"]
    report = ["time", "header", "row", "blank", "blank"]
    n = (len(mine_shape) - 2 + 2) // len(report)
    assert n >= 2 and mine_shape[2:] == (report * n)[:-2]
    # The header line is sysstat's, byte for byte; the banner names the
    # kernel profile's release and the date of SOURCE_DATE_EPOCH (UTC).
    assert mine.split("\n")[3] == real.split("\n")[3]
    assert mine.startswith("Linux 6.12")
    assert "\t11/25/26 \t_x86_64_\t(1 CPU)\n\n11/25/26 01:58:13\n" in mine
    # The banner counts the scenario's CPUs when it gives them (one job
    # above, so one CPU; `cpus = 2` makes two).
    (tmp_path / "s2.toml").write_text("cpus = 2\n" + VIRTIO)
    two = run_cli("run", "s2.toml", "--iostat", "--quiet", cwd=tmp_path).stdout
    assert re.match(r"Linux \S+ \(blkstack\) \t\d\d/\d\d/\d\d \t_x86_64_\t\(2 CPU\)\n", two)


def test_blktrace_file_names_its_device_and_name_option(tmp_path):
    (tmp_path / "s.toml").write_text(VIRTIO)
    bt = tmp_path / "bt"
    bt.mkdir()
    proc = run_cli("run", "s.toml", "--blktrace", bt, "--trace", "t.txt", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # virtio-blk's major is dynamic: the text trace's records show only
    # numbers; its closing summary, as blkparse prints it, names the device.
    text = (tmp_path / "t.txt").read_text()
    major_minor = text.split()[0]
    assert not major_minor.startswith("8,")
    s = json.loads(run_cli("stats", bt / "vda.blktrace.0", "--json", "-", "-q").stdout)
    assert list(s["devices"]) == ["vda"]
    s = json.loads(run_cli("stats", tmp_path / "t.txt", "--json", "-", "-q").stdout)
    assert list(s["devices"]) == ["vda"]
    # Without the summary nothing names it.
    (tmp_path / "t.txt").write_text(text[:text.index("\nCPU0 (vda):")] + "\n")
    s = json.loads(run_cli("stats", tmp_path / "t.txt", "--json", "-", "-q").stdout)
    assert list(s["devices"]) == [major_minor]
    maj, mnr = major_minor.split(",")
    proc = run_cli("stats", tmp_path / "t.txt", "--name", f"{maj}:{mnr}=vda", "--iostat")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^vda +\d", proc.stdout, re.M)
    bad = run_cli("stats", tmp_path / "t.txt", "--name", "vda")
    assert bad.returncode != 0 and "MAJ:MIN=NAME" in bad.stderr


def test_trace_banner_counts_the_cpus_its_records_name():
    # A real two-CPU trace (tests/data/real-2cpu: events on CPUs 0 and 1):
    # "(2 CPU)". No trace format records the kernel's release: "unknown";
    # the host is the trace's file name.
    trace = DATA.parent / "real-2cpu" / "blkparse-sda.txt"
    proc = run_cli("stats", trace, "--iostat", env_extra={"SOURCE_DATE_EPOCH": "1795571893"})
    assert proc.returncode == 0, proc.stderr
    assert "Linux unknown (blkparse-sda.txt) \t11/25/26 \t_x86_64_\t(2 CPU)\n" in proc.stdout
