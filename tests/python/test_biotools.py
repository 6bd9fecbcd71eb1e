"""bcc's block I/O tools (``--bio``) on a run and on a real-format trace.

Every expected text below is worked out by hand from bcc's formats:
table.py's ``_print_log2_hist`` (header ``"     %-19s : count     distribution"``,
lines ``"%10d -> %-10d : %-8d |%-40s|"`` from slot 1 to the last non-empty
slot, slot k covering [2^(k-1), 2^k - 1] after ``bpf_log2l``, the bar
``40 * count / max`` stars rounded up, the max taken over every slot
including slot 0), biosnoop's ``"%-11.6f %-14.14s %-7s %-9s %-1s %-10s %-7s"``
then ``"%7.2f"`` of LAT(ms), and biopattern's ``"%-9s %-7s %5d %5d %8d %10d"``.
"""

from __future__ import annotations

import textwrap

from conftest import assert_one_error_line, run_cli

BAR = "*" * 40
NONE = " " * 40

# Three requests on sda, as blkparse prints them:
#  1. read of 8 sectors (4096 bytes) by fio (pid 100): inserted at 0,
#     issued at 10 µs, completed at 60 µs: D2C 50 µs (slot 6, 32 -> 63),
#     insert to issue 10 µs.
#  2. write of 128 sectors (65536 bytes) by dd (pid 200), issued directly
#     (no insert) at 70 µs, completed at 1070 µs: 1000 µs (slot 10, 512 -> 1023).
#  3. write of 32 sectors (16384 bytes) by dd at sector 1128, where request
#     2 ended: issued at 2000 µs, completed at 2500 µs: 500 µs (slot 9).
TRACE = """\
  8,0    0        1     0.000000000   100  I   R 0 + 8 [fio]
  8,0    0        2     0.000010000   100  D   R 0 + 8 [fio]
  8,0    0        3     0.000060000     0  C   R 0 + 8 [0]
  8,0    0        4     0.000070000   200  D   W 1000 + 128 [dd]
  8,0    0        5     0.001070000     0  C   W 1000 + 128 [0]
  8,0    0        6     0.002000000   200  D   W 1128 + 32 [dd]
  8,0    0        7     0.002500000     0  C   W 1128 + 32 [0]
"""

USECS_HEADER = "     usecs               : count     distribution"


def hist_line(low: int, high: int, count: int, bar: str) -> str:
    return f"{low:>10} -> {high:<10} : {count:<8} |{bar:<40}|"


def stats_bio(tmp_path, tools: str) -> list:
    path = tmp_path / "trace.txt"
    path.write_text(TRACE)
    proc = run_cli("stats", path, "--bio", tools)
    assert proc.returncode == 0, proc.stderr
    # The first block is the trace's header line; the tools follow.
    out = proc.stdout.rstrip("\n").split("\n")
    assert out[0].startswith("trace: ")
    assert out[1] == ""
    return out[2:]


# Slots 1..10: empty but 6 (request 1), 9 (request 3) and 10 (request 2),
# each 1 of a maximum of 1: a full bar.
USECS = [
    USECS_HEADER,
    hist_line(0, 1, 0, NONE),
    hist_line(2, 3, 0, NONE),
    hist_line(4, 7, 0, NONE),
    hist_line(8, 15, 0, NONE),
    hist_line(16, 31, 0, NONE),
    hist_line(32, 63, 1, BAR),
    hist_line(64, 127, 0, NONE),
    hist_line(128, 255, 0, NONE),
    hist_line(256, 511, 1, BAR),
    hist_line(512, 1023, 1, BAR),
]


def test_biolatency_of_a_trace(tmp_path):
    assert stats_bio(tmp_path, "biolatency") == USECS
    assert USECS[6] == "        32 -> 63         : 1        |****************************************|"


def test_biolatency_msecs_counts_slot_zero_in_the_bar_scale(tmp_path):
    # In ms (integer division): 0, 1 and 0. Slot 0 holds 2 and is not
    # printed, but it is the maximum: the 1 in slot 1 gets 40 * 1 / 2 = 20 stars.
    assert stats_bio(tmp_path, "biolatency -m") == [
        "     msecs               : count     distribution",
        hist_line(0, 1, 1, "*" * 20),
    ]


def test_biolatency_per_disk_and_per_flags(tmp_path):
    assert stats_bio(tmp_path, "biolatency -D") == ["disk = 'sda'"] + USECS
    # -F: the read alone (slot 6), then the writes (slots 9 and 10).
    assert stats_bio(tmp_path, "biolatency -F") == (
        ["flags = Read"] + USECS[:7] + ["", "flags = Write"] + USECS[:6] + [hist_line(32, 63, 0, NONE)] + USECS[7:])


def test_biosnoop_lines(tmp_path):
    # TIME(s) from the first completion (60 µs): 0, 1010 µs and 2440 µs.
    # COMM and PID of the task that queued the request (request 2 and 3 had
    # no insert: the issuing task). T is W only for writes. With -Q,
    # QUE(ms) is insert to issue: 0.01 for request 1, 0 for the others.
    head = "TIME(s)     COMM           PID     DISK      T SECTOR     BYTES  "
    assert stats_bio(tmp_path, "biosnoop") == [
        head + "LAT(ms)",
        "0.000000    fio            100     sda       R 0          4096      0.05",
        "0.001010    dd             200     sda       W 1000       65536     1.00",
        "0.002440    dd             200     sda       W 1128       16384     0.50",
    ]
    assert stats_bio(tmp_path, "biosnoop -Q") == [
        head + "QUE(ms) LAT(ms)",
        "0.000000    fio            100     sda       R 0          4096      0.01    0.05",
        "0.001010    dd             200     sda       W 1000       65536     0.00    1.00",
        "0.002440    dd             200     sda       W 1128       16384     0.00    0.50",
    ]


def test_bitesize_per_process(tmp_path):
    # dd issued 64 KiB (slot 7, 64 -> 127) and 16 KiB (slot 5, 16 -> 31);
    # fio 4 KiB (slot 3, 4 -> 7).
    kb = "     Kbytes              : count     distribution"
    assert stats_bio(tmp_path, "bitesize") == [
        "Process Name = dd", kb,
        hist_line(0, 1, 0, NONE), hist_line(2, 3, 0, NONE), hist_line(4, 7, 0, NONE),
        hist_line(8, 15, 0, NONE), hist_line(16, 31, 1, BAR), hist_line(32, 63, 0, NONE),
        hist_line(64, 127, 1, BAR),
        "",
        "Process Name = fio", kb,
        hist_line(0, 1, 0, NONE), hist_line(2, 3, 0, NONE), hist_line(4, 7, 1, BAR),
    ]


def test_biopattern(tmp_path):
    # The first completion (0 + 8) only sets the position to 8; request 2
    # at 1000 is random, request 3 at 1128 (= 1000 + 128) sequential:
    # 2 counted, round(50.0) = 50 %RND, 50 %SEQ, (65536 + 16384) / 1024
    # = 80 KBYTES. One interval: the whole trace, ending at 2.5 ms.
    assert stats_bio(tmp_path, "biopattern") == [
        "TIME      DISK     %RND  %SEQ    COUNT     KBYTES",
        "0.002500  sda        50    50        2         80",
    ]


def test_several_tools_and_bad_values(tmp_path):
    out = stats_bio(tmp_path, "biolatency,biopattern")
    assert out == USECS + ["", "TIME      DISK     %RND  %SEQ    COUNT     KBYTES",
                           "0.002500  sda        50    50        2         80"]
    path = tmp_path / "trace.txt"
    for bad, needle in [("biolat", "unknown tool"), ("biolatency -X", "unknown option"),
                        ("biolatency -D -F", "only use -D or -F"), ("biopattern 0", "positive"),
                        ("biosnoop,", "empty tool name")]:
        assert_one_error_line(run_cli("stats", path, "--bio", bad), needle)


NULLB = textwrap.dedent("""\
    [disks.nullb0]
    kind = "null_blk"
    size = "1GiB"
    null_blk = { irqmode = 2, completion_nsec = 50000 }
    [workload]
    type = "dd"
    if = "/dev/nullb0"
    of = "/dev/null"
    bs = "4k"
    count = 16
    iflag = "direct"
    """)


def test_biolatency_and_biosnoop_of_a_null_blk_run(tmp_path):
    # null_blk in timer mode completes every request 50 µs after issue:
    # 16 reads of 4 KiB, all in slot 6 (32 -> 63) with the full bar, and
    # each biosnoop line a 4096-byte read by dd at sector 8·i with LAT 0.05.
    scenario = tmp_path / "nullb.toml"
    scenario.write_text(NULLB)
    proc = run_cli("run", scenario, "-q", "--bio", "biolatency,biosnoop")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip("\n").split("\n")
    assert out[:7] == [
        USECS_HEADER,
        hist_line(0, 1, 0, NONE), hist_line(2, 3, 0, NONE), hist_line(4, 7, 0, NONE),
        hist_line(8, 15, 0, NONE), hist_line(16, 31, 0, NONE),
        "        32 -> 63         : 16       |****************************************|",
    ]
    assert out[7] == ""
    assert out[8] == "TIME(s)     COMM           PID     DISK      T SECTOR     BYTES  LAT(ms)"
    lines = out[9:]
    assert len(lines) == 16
    for i, line in enumerate(lines):
        fields = line.split()
        assert fields[1] == "dd" and fields[3:] == ["nullb0", "R", str(8 * i), "4096", "0.05"], line
    assert lines[0].startswith("0.000000    dd ")


def test_biopattern_per_interval(tmp_path):
    # Intervals of 2 ms: the first holds the completions at 60 µs and
    # 1070 µs (request 2 counted, random: the position was 8), the second
    # only the one at 2500 µs, which there only sets the position (bcc
    # clears its counters each interval): no row for it.
    assert stats_bio(tmp_path, "biopattern 0.002") == [
        "TIME      DISK     %RND  %SEQ    COUNT     KBYTES",
        "0.002000  sda       100     0        1         64",
    ]


def test_bitesize_and_biopattern_of_a_run(tmp_path):
    # 4 direct dd reads of 192 KiB with max_sectors_kb 128: each bio is
    # split into 128 KiB (slot 8, 128 -> 255) and 64 KiB (slot 7, 64 -> 127),
    # 4 of each, issued by dd. The 8 requests follow each other (0+256,
    # 256+128, 384+256, ...): the first sets the position, the other 7
    # are sequential: 0 %RND, 100 %SEQ, 7 requests, 768 - 128 = 640 KBYTES.
    scenario = tmp_path / "split.toml"
    scenario.write_text(textwrap.dedent("""\
        [disks.sda]
        kind = "sata"
        size = "1GiB"
        queue = { max_sectors_kb = 128 }
        [workload]
        type = "dd"
        if = "/dev/sda"
        of = "/dev/null"
        bs = "192k"
        count = 4
        iflag = "direct"
        """))
    proc = run_cli("run", scenario, "-q", "--bio", "bitesize,biopattern")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip("\n").split("\n")
    assert out[:10] == [
        "Process Name = dd",
        "     Kbytes              : count     distribution",
        hist_line(0, 1, 0, NONE), hist_line(2, 3, 0, NONE), hist_line(4, 7, 0, NONE),
        hist_line(8, 15, 0, NONE), hist_line(16, 31, 0, NONE), hist_line(32, 63, 0, NONE),
        hist_line(64, 127, 4, BAR), hist_line(128, 255, 4, BAR),
    ]
    assert out[10:12] == ["", "TIME      DISK     %RND  %SEQ    COUNT     KBYTES"]
    assert out[12].split()[1:] == ["sda", "0", "100", "7", "640"]
    assert len(out) == 13


def test_run_bio_still_writes_the_trace_and_checks_the_option(tmp_path):
    scenario = tmp_path / "nullb.toml"
    scenario.write_text(NULLB)
    trace = tmp_path / "out.txt"
    proc = run_cli("run", scenario, "-q", "--bio", "biolatency", "--trace", trace)
    assert proc.returncode == 0, proc.stderr
    # 16 reads of 8 sectors: 16 issues in the blkparse text beside the histogram.
    assert sum(" D " in line for line in trace.read_text().splitlines()) == 16
    assert "32 -> 63         : 16 " in proc.stdout
    assert_one_error_line(run_cli("run", scenario, "--bio", "iotop"), "unknown tool")


def test_completions_without_an_issue_are_left_out(tmp_path):
    # md0 (9,0) is bio-based: its bio's Q and C have no D, which bcc never
    # sees (it hooks requests). Only sda's three requests are shown.
    md = ("  9,0    0        1     0.000000000   100  Q   R 0 + 8 [fio]\n"
          "  9,0    0        2     0.000080000     0  C   R 0 + 8 [0]\n")
    path = tmp_path / "trace.txt"
    path.write_text(md + TRACE)
    proc = run_cli("stats", path, "--bio", "biolatency -D")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n").split("\n")[2:] == ["disk = 'sda'"] + USECS


def test_biolatency_per_interval(tmp_path):
    # Intervals of 2 ms: the first ends at 2 ms with the completions at
    # 60 µs (slot 6) and 1070 µs (slot 10); the second, the trace's end at
    # 2.5 ms, with the one at 2500 µs (slot 9).
    first = USECS[:9] + [hist_line(256, 511, 0, NONE), USECS[10]]
    assert stats_bio(tmp_path, "biolatency 0.002") == ["0.002000"] + first + ["", "0.002500"] + USECS[:6] + [hist_line(32, 63, 0, NONE)] + USECS[7:10]


def test_an_insert_belongs_to_one_request(tmp_path):
    # Two reads at sector 0: the first inserted at 0 and issued at 10 µs,
    # the second issued directly at 100 µs (no insert of its own). With -Q
    # the second's queue time is 0, not 100 µs from the first's insert:
    # QUE(ms) 0.01 and 0.00, LAT(ms) 0.05 and 0.02.
    path = tmp_path / "trace.txt"
    path.write_text("  8,0    0        1     0.000000000   100  I   R 0 + 8 [fio]\n"
                    "  8,0    0        2     0.000010000   100  D   R 0 + 8 [fio]\n"
                    "  8,0    0        3     0.000060000     0  C   R 0 + 8 [0]\n"
                    "  8,0    0        4     0.000100000   200  D   R 0 + 8 [dd]\n"
                    "  8,0    0        5     0.000120000     0  C   R 0 + 8 [0]\n")
    proc = run_cli("stats", path, "--bio", "biosnoop -Q")
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[-2:] for line in proc.stdout.splitlines()[-2:]] == [["0.01", "0.05"], ["0.00", "0.02"]]
    assert proc.stdout.splitlines()[-1].split()[1:3] == ["dd", "200"]
