"""``blkstack stats`` and ``blkstack.load_trace`` on real-format traces.

The traces in tests/data/ were written by hand from the formats (blkparse's
default output, the kernel's ftrace text of the block tracepoints in the 6.1
and 6.12 layouts); every figure below is worked out from their lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import blkstack

from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).resolve().parent.parent / "data"
BLKPARSE = DATA / "blkparse-sda-sdb.txt"
FTRACE_61 = DATA / "ftrace-6.1-sda.txt"
FTRACE_612 = DATA / "ftrace-6.12-sda.txt"

US = 1e-6


def stats_json(path: Path) -> dict:
    proc = run_cli("stats", path, "--json", "-", "--quiet")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def stage(dev: dict, name: str):
    """(min, avg, max) in microseconds and n of a btt stage."""
    s = dev["btt"][name]
    return (round(s["min_s"] / US, 3), round(s["avg_s"] / US, 3), round(s["max_s"] / US, 3), s["n"])


# --------------------------------------------------------------------------
# blkparse text: sda (8,0) and sdb (8,16)
# --------------------------------------------------------------------------
#
# sda, times in microseconds from the first line:
#   read  2048+256 (from sda1 sector 0): Q 0.5, split at 2176 (X 1.0);
#         2048+128: G 1.5, I 2.5, D 5.0, C 5005.0
#         2176+128: G 3.0, I 3.5, D 6.0, C 9006.0
#   write 10000+8: Q 10000.0, G 10000.1; 10008+8: Q 10000.3, back merge
#         M 10000.4; 10000+16: I 10000.5, D 10000.7, C 12000.7
#   write 20000+8 "WSV" (no Q or G in the trace): D 20000.0, C 20100.0
# sdb: read 0+8: Q 30000.0, G 30000.1, D 30000.2, C 31000.2
# The trace ends at 31000.2 us = 0.0310002 s.


def test_blkparse_btt_stages_by_hand():
    s = stats_json(BLKPARSE)
    sda, sdb = s["devices"]["sda"], s["devices"]["sdb"]
    # Q2Q: 10000.0 - 0.5 = 9999.5 and 10000.3 - 10000.0 = 0.3.
    assert stage(sda, "Q2Q") == (0.3, 4999.9, 9999.5, 2)
    # Q2G: 1.5 - 0.5 = 1.0; 3.0 - 0.5 = 2.5 (the split keeps the Q time);
    # 10000.1 - 10000.0 = 0.1; mean 3.6 / 3 = 1.2.
    assert stage(sda, "Q2G") == (0.1, 1.2, 2.5, 3)
    # G2I: 1.0, 0.5, 0.4 (mean 1.9 / 3); I2D: 2.5, 2.5, 0.2 (mean 5.2 / 3).
    assert stage(sda, "G2I") == (0.4, 0.633, 1.0, 3)
    assert stage(sda, "I2D") == (0.2, 1.733, 2.5, 3)
    # Q2M: 10000.4 - 10000.3.
    assert stage(sda, "Q2M") == (0.1, 0.1, 0.1, 1)
    # D2C: 5000, 9000, 2000 and 100 (the WSV request, followed from its D):
    # mean 16100 / 4 = 4025.
    assert stage(sda, "D2C") == (100.0, 4025.0, 9000.0, 4)
    # Q2C: 5005.0 - 0.5, 9006.0 - 0.5, 12000.7 - 10000.0; mean 16010.7 / 3.
    assert stage(sda, "Q2C") == (2000.7, 5336.9, 9005.5, 3)
    assert stage(sdb, "Q2C") == (1000.2, 1000.2, 1000.2, 1)
    assert stage(sdb, "D2C") == (1000.0, 1000.0, 1000.0, 1)
    # Merge information: 3 Qs, 4 Ds of 128, 128, 16 and 8 sectors
    # (280 in all, 70 on average); #Q shows max(Q, D) = 4 as btt does.
    # The JSON gives btt's figures (the text's), and the Q events seen.
    assert sda["merge_info"] == {"q": 4, "d": 4, "ratio": 1.0, "q_events": 3, "blkmin": 8, "blkavg": 70,
                                 "blkmax": 128, "total": 280}
    assert "(  8,  0) |        4        4     1.0 |        8       70      128      280" in s["reports"]["btt"]


def test_blkparse_diskstats_and_iostat_by_hand():
    s = stats_json(BLKPARSE)
    assert s["format"] == "blkparse"
    assert s["duration_ns"] == 31_000_200
    sda = s["devices"]["sda"]
    # Reads: 2 requests, 256 sectors, latencies from G to C 5003.5 + 9003.0
    # us = 14 ms (whole ms). Writes: 10000+16 (G 10000.1 to C 12000.7,
    # 2000.6 us) and 20000+8 (D to C, 100 us): 2 requests, 24 sectors,
    # 2 ms, 1 merge. io_ticks (HZ 250, 4 ms jiffies): the C at 5005 us
    # (jiffy 1) and at 9006 us (jiffy 2) end busy jiffies, the C at
    # 12000.7 us (jiffy 3) another: 3 jiffies = 12 ms. time_in_queue: all
    # latencies, 16.1071 ms -> 16.
    assert sda["diskstats"][:11] == [2, 0, 256, 14, 2, 1, 24, 2, 0, 12, 16]
    io = sda["iostat"]
    t = 0.0310002
    assert io["r/s"] == pytest.approx(2 / t)
    assert io["rkB/s"] == pytest.approx(128 / t)          # 256 sectors = 128 kB
    assert (io["r_await"], io["rareq-sz"]) == (7.0, 64.0)  # 14 ms / 2, 128 kB / 2
    assert io["wrqm/s"] == pytest.approx(1 / t)
    assert io["%wrqm"] == pytest.approx(100 / 3)            # 1 merge / (1 + 2)
    assert (io["w_await"], io["wareq-sz"]) == (1.0, 6.0)    # 2 ms / 2, 12 kB / 2
    assert io["aqu-sz"] == pytest.approx(0.016 / t)
    assert io["%util"] == pytest.approx(0.012 / t * 100)
    # sdb: one read of 8 sectors, 1.0001 ms -> 1 ms; G (jiffy 7) and C
    # (jiffy 7) in the same jiffy: no busy tick.
    assert s["devices"]["sdb"]["diskstats"][:11] == [1, 0, 8, 1, 0, 0, 0, 0, 0, 0, 1]


def test_blkparse_histograms_by_hand():
    sda = stats_json(BLKPARSE)["devices"]["sda"]
    # Ds in order: 2048+128, 2176+128 (seek 0), 10000+16 (from 2304: 7696
    # sectors = 3848 KiB, bucket [2048, 4096)), 20000+8 (from 10016: 9984
    # sectors = 4992 KiB, bucket [4096, 8192)).
    seek = sda["seek_histogram"]
    assert (seek["count"], seek["zero"]) == (3, 1)
    assert {(b["from_kb"], b["count"]) for b in seek["buckets"] if b["count"]} == {(0, 1), (2048, 1), (4096, 1)}
    # Sizes 64, 64, 8 and 4 KiB.
    size = sda["size_histogram"]
    assert {(b["from_kb"], b["count"]) for b in size["buckets"] if b["count"]} == {(64, 2), (8, 1), (4, 1)}


def test_blkparse_odd_lines():
    s = stats_json(BLKPARSE)
    # Line 23 (a Q whose range is "garbage") and line 27 (action 'Z') are
    # bad; lines 32-59 are blkparse's closing summary (28 lines); line 22
    # is a message ('m'); lines 25-26 carry the unknown RWBS letter 'V'.
    assert [b["line"] for b in s["bad_lines"]] == [23, 27]
    assert "unknown action 'Z'" in s["bad_lines"][1]["reason"]
    assert s["skipped_lines"] == 28
    assert s["other_records"] == {"m (message)": 1}
    assert s["unknown_rwbs"] == [{"line": 25, "rwbs": "WSV"}, {"line": 26, "rwbs": "WSV"}]
    # 31 event lines - 2 bad - 1 message = 28 events (P, U, UT included).
    assert s["events"] == 28


def test_stats_cli_reports_bad_lines_on_stderr():
    proc = run_cli("stats", BLKPARSE)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    assert err[0].startswith(f"blkstack: warning: {BLKPARSE}:23: ")
    assert err[1].startswith(f"blkstack: warning: {BLKPARSE}:27: unknown action 'Z'")
    assert err[2] == f"blkstack: warning: {BLKPARSE}: 2 bad lines skipped"
    assert "'WSV'" in err[3] and "line 25" in err[3]
    out = proc.stdout
    assert "2 bad lines skipped" in out.splitlines()[1]
    # The three reports, as 'blkstack run' prints them.
    for needle in ("Device            r/s", "Q2C", "Device Merge Information", "Read|Write seek",
                   "Read|Write request size", "sda:", "sdb:"):
        assert needle in out, needle
    row = next(line for line in out.splitlines() if line.startswith("sda "))
    # r/s 2 / 0.0310002 = 64.52; rkB/s 128 / 0.0310002 = 4129.01.
    assert row.split()[1:3] == ["64.52", "4129.01"]


def test_stats_cli_chooses_reports():
    proc = run_cli("stats", BLKPARSE, "--btt")
    assert proc.returncode == 0
    assert "Q2C" in proc.stdout and "r/s" not in proc.stdout and "seek" not in proc.stdout


# --------------------------------------------------------------------------
# ftrace text, 6.1 and 6.12 layouts: the same I/O on sda (8,0)
# --------------------------------------------------------------------------
#
# Times in microseconds after 11.000000:
#   read 2048+512: Q 0, split at 2304 (X 1); 2048+256: G 2, I 6, D 10,
#        C 2010; 2304+256: G 4, I 7, D 12, C 4012
#   write 4096+8: Q 10000, G 10001; 4104+8: Q 10002, back merge 10003;
#        4096+16: I 10004, D 10005, C 11005
#   flush ("FF", issued by the flush machinery, no G): D 11006, C 12506


@pytest.mark.parametrize("path", [FTRACE_61, FTRACE_612], ids=["6.1", "6.12"])
def test_ftrace_by_hand(path):
    s = stats_json(path)
    assert s["format"] == "ftrace"
    assert s["duration_ns"] == 12_506_000
    sda = s["devices"]["sda"]
    # Q2G: 2, 4 (the remainder keeps the Q time), 1; G2I: 4, 3, 3; I2D: 4, 5, 1.
    assert stage(sda, "Q2G") == (1.0, 2.333, 4.0, 3)
    assert stage(sda, "G2I") == (3.0, 3.333, 4.0, 3)
    assert stage(sda, "I2D") == (1.0, 3.333, 5.0, 3)
    # D2C: 2000, 4000, 1000, 1500 (the flush); mean 8500 / 4 = 2125.
    assert stage(sda, "D2C") == (1000.0, 2125.0, 4000.0, 4)
    # Q2C: 2010, 4012, 1005; mean 7027 / 3.
    assert stage(sda, "Q2C") == (1005.0, 2342.333, 4012.0, 3)
    # Reads: 2 of 512 sectors, 2008 + 4007 us = 6 ms; writes: 1 of 16
    # sectors, 1004 us = 1 ms, 1 merge; the flush: 1500 us = 1 ms (fields
    # 16-17). io_ticks: the C at 4012 us (jiffy 1) and the flush's C at
    # 12506 us (jiffy 3, after the write's G at jiffy 2 found the disk idle)
    # end busy jiffies: 2 jiffies = 8 ms. time_in_queue 8.519 ms -> 8.
    assert sda["diskstats"] == [2, 0, 512, 6, 1, 1, 16, 1, 0, 8, 8, 0, 0, 0, 0, 1, 1]
    io = sda["iostat"]
    t = 0.012506
    assert io["f/s"] == pytest.approx(1 / t)
    assert (io["r_await"], io["rareq-sz"], io["%wrqm"], io["f_await"]) == (3.0, 128.0, 50.0, 1.0)
    assert io["%util"] == pytest.approx(0.008 / t * 100)
    # The header's 12 lines, the lost-events note, block_dirty_buffer and
    # sched_switch are skipped; the Q with no sector count is bad; plug and
    # unplug name no device.
    assert s["skipped_lines"] == 15
    assert len(s["bad_lines"]) == 1 and s["bad_lines"][0]["text"].endswith("4112 + [dd]")
    assert s["no_device_records"] == 2


def test_ftrace_layouts_agree():
    a, b = stats_json(FTRACE_61), stats_json(FTRACE_612)
    # 6.12 adds the I/O priority and block_io_start/done, nothing else.
    assert b["other_records"] == {"block_io_start": 1, "block_io_done": 1}
    assert a["other_records"] == {}
    assert a["devices"] == b["devices"] and a["reports"] == b["reports"]


# --------------------------------------------------------------------------
# The Python API and bad input
# --------------------------------------------------------------------------


def test_load_trace_gives_the_run_dataframes():
    r = blkstack.load_trace(BLKPARSE)
    req = r.requests
    assert list(req["device"].astype(str)) == ["sda"] * 4 + ["sdb"]
    assert list(req["sector"]) == [2048, 2176, 10000, 20000, 0]
    assert list(req["nr_sectors"]) == [128, 128, 16, 8, 8]
    # The RWBS as the trace printed it, unknown letter and all.
    assert list(req["rwbs"].astype(str)) == ["R", "R", "W", "WSV", "R"]
    assert list(req["time_ns"]) == [5000, 6000, 10_000_700, 20_000_000, 30_000_200]
    lat = r.latency.set_index(["device", "stage"])
    assert lat.loc[("sda", "D2C"), "n"] == 4
    assert r.iostat.set_index("device").loc["sda", "end_s"] == pytest.approx(0.0310002)
    # The remap names its source, sda1 (8,1), which has no events of its own
    # and is not reported.
    ev = r.events
    assert list(ev.loc[ev["action"] == "A", "from_device"].astype(str)) == ["sda1"]
    assert set(r.summary["devices"]) == {"sda", "sdb"}


def test_stats_errors(tmp_path):
    assert_one_error_line(run_cli("stats", tmp_path / "missing.txt"), "missing.txt: no such file")
    assert_one_error_line(run_cli("stats", tmp_path), "is a directory")
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nworld\n")
    assert_one_error_line(run_cli("stats", junk), "no block trace events", "line 1")
    assert_one_error_line(run_cli("stats", BLKPARSE, "--interval", "0"), "--interval 0")
    assert_one_error_line(run_cli("stats", BLKPARSE, "--json", tmp_path / "no" / "x.json"), "does not exist")


def test_a_trace_without_events_leaves_no_blktrace_dump(tmp_path):
    # Found by fuzz/cli_fuzz.py: the dump was written while the file was
    # read, then the run failed (no events) and left it behind.
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nworld\n")
    assert_one_error_line(run_cli("stats", junk, "--blktrace-dump", tmp_path / "d.txt"), "no block trace events")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.txt"]


def test_stats_interval(tmp_path):
    # Every 10 ms of trace time: snapshots at 10, 20 and 30 ms and the end
    # (31.0002 ms): four intervals. sda's reads complete in the first.
    s = json.loads(run_cli("stats", BLKPARSE, "--interval", "0.01", "--json", "-", "-q").stdout)
    iv = s["iostat_intervals"]
    assert [round(i["time_s"], 7) for i in iv] == [0.01, 0.02, 0.03, 0.0310002]
    assert iv[0]["devices"]["sda"]["r/s"] == pytest.approx(2 / 0.01)
    assert iv[1]["devices"]["sda"]["r/s"] == 0.0


# --------------------------------------------------------------------------
# What a trace lacks, and files that are not text traces

MD_NO_COMPLETIONS = """\
  9,0    0        1     0.000000000   500  Q   W 0 + 64 [dd]
  9,0    0        2     0.010000000   500  Q   W 64 + 64 [dd]
  8,0    0        3     0.010000100   500  D   W 0 + 64 [dd]
  8,0    0        4     0.011000000     0  C   W 0 + 64 [0]
"""


def test_stats_says_what_an_md_trace_lacks(tmp_path):
    # md0 queued two bios and the trace has no completion for them: its
    # iostat row would read 0 r/s and a busy disk with everything in
    # flight, so it is left out and the header and stderr say why; sda's
    # row is still there.
    path = tmp_path / "md.txt"
    path.write_text(MD_NO_COMPLETIONS)
    proc = run_cli("stats", path, "--iostat")
    assert proc.returncode == 0, proc.stderr
    assert "md0: no completions (C) in the trace: iostat figures, depth and throughput left out" in proc.stdout
    rows = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith(("md0 ", "sda "))]
    assert rows == ["sda"]
    assert "md0: the trace has 2 queued bios (Q) and no completions (C)" in proc.stderr
    s = stats_json(path)
    assert "iostat" not in s["devices"]["md0"] and s["devices"]["md0"]["missing"] == "completions"


def test_plots_of_a_trace_without_completions_leave_out_depth_and_throughput(tmp_path):
    from blkstack.plots import close, run_plots
    path = tmp_path / "md.txt"
    path.write_text(MD_NO_COMPLETIONS)
    plots = run_plots(blkstack.load_trace(path))
    names = [p.name for p in plots]
    close(plots)
    assert "lba-md0" in names and "depth-md0" not in names and "throughput-md0" not in names
    assert "depth-sda" in names and "throughput-sda" in names


def test_stats_flush_latency_from_flush_requests(tmp_path):
    # A flush request (blkparse's FN) issued at 0 and completed 12.5 ms
    # later: 1 flush in 12.5 ms of trace, f/s 1 / 0.0125 = 80, f_await
    # 12 ms (diskstats keep whole ms).
    path = tmp_path / "flush.txt"
    path.write_text("  8,0    2        1     0.000000000    78  D  FN [kworker/2:1H]\n"
                    "  8,0    2        2     0.012500000     0  C  FN [0]\n")
    io = stats_json(path)["devices"]["sda"]["iostat"]
    assert (io["f/s"], io["f_await"], io["r/s"]) == (80.0, 12.0, 0.0)


def test_time_running_backwards_is_warned_about(tmp_path):
    path = tmp_path / "back.txt"
    path.write_text("  8,0    0        1     0.010000000   500  D   W 0 + 8 [dd]\n"
                    "  8,0    0        2     0.005000000   500  D   W 8 + 8 [dd]\n"
                    "  8,0    0        3     0.020000000     0  C   W 0 + 8 [0]\n")
    proc = run_cli("stats", path, "--quiet")
    assert proc.returncode == 0
    assert "time runs backwards 1 time (first at line 2" in proc.stderr


def test_stats_reads_a_binary_blktrace_file(tmp_path):
    # One issued 4 KiB write as struct blk_io_trace (BLK_IO_TRACE_MAGIC |
    # version 7, little endian; action __BLK_TA_ISSUE 7 with the WRITE
    # category, 1 << 17): read as the event it is, not as text.
    import struct
    path = tmp_path / "sda.blktrace.0"
    path.write_bytes(struct.pack("<IIQQIIIIIHH", 0x65617407, 1, 1000, 2048, 4096, 7 | (1 << 17), 843, 8 << 20,
                                 0, 0, 0))
    proc = run_cli("stats", path, "--json", "-", "--quiet")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["events"] == 1 and s["devices"]["sda"]["requests"] == 1


def test_load_trace_raises_on_other_binary_data(tmp_path):
    garbage = tmp_path / "x.bin"
    garbage.write_bytes(b"\x00\x01\x02garbage")
    with pytest.raises(blkstack.TraceFormatError, match="binary data"):
        blkstack.load_trace(garbage)
    line = assert_one_error_line(run_cli("stats", garbage), "x.bin: binary data, not a block trace")
    assert "\\x" not in line and "\ufffd" not in line
