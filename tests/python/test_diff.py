"""blkstack diff: comparing two block traces, on small hand-written traces.

The traces are written the way the real tools print them: blkparse's
default output (with its message lines and end-of-run summary) and the
kernel's ftrace text of the block_* tracepoints in 6.1's layout and in
6.12's (which adds the request's I/O priority before the comm or error).
"""

from __future__ import annotations

import json
import textwrap

import pytest

from blkstack import cli
from blkstack.diff import (
    Trace, TraceFileError, align, diff_files, limit_differences, limits_by_devno, op_letters,
    read_sysfs_snapshot,
)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return str(p)


# Three 128 KiB reads issued to sda (8,0), as blkparse prints them, with a
# message line, a plug/unplug pair and blkparse's summary at the end.
BLKPARSE = """
  8,0    0        1     0.000000000   843  Q  RS 2048 + 768 [dd]
  8,0    0        2     0.000001000   843  X  RS 2048 / 2304 [dd]
  8,0    0        3     0.000002000   843  G  RS 2048 + 256 [dd]
  8,0    0        4     0.000002500   843  P   N [dd]
  8,0    0        5     0.000003000   843  D  RS 2048 + 256 [dd]
  8,0    1        0     0.000003100  1234  m   N cfq1234 insert_request
  8,0    0        6     0.000004000   843  D  RS 2304 + 256 [dd]
  8,0    0        7     0.000004500   843  U   N [dd] 1
  8,0    0        8     0.000005000   843  D  RS 2560 + 256 [dd]
  8,0    0        9     0.000100000     0  C  RS 2048 + 256 [0]
CPU0 (8,0):
 Reads Queued:           1,      384KiB\t Writes Queued:           0,        0KiB
Total (8,0):
 Reads Queued:           1,      384KiB\t Writes Queued:           0,        0KiB

Throughput (R/W): 384KiB/s / 0KiB/s
Events (8,0): 10 entries
Skips: 0 forward (0 -   0.0%)
"""

# The same three requests in the kernel's 6.1 ftrace layout.
FTRACE_61 = """
# tracer: nop
#
# entries-in-buffer/entries-written: 5/5   #P:1
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
              dd-843     [000] .....    11.357000: block_bio_queue: 8,0 RS 2048 + 768 [dd]
              dd-843     [000] .....    11.357001: block_split: 8,0 RS 2048 / 2304 [dd]
    kworker/0:1H-38      [000] .....    11.357392: block_rq_issue: 8,0 RS 131072 () 2048 + 256 [kworker/0:1H]
    kworker/0:1H-38      [000] .....    11.357400: block_rq_issue: 8,0 RS 131072 () 2304 + 256 [kworker/0:1H]
              dd-843     [000] .....    11.357402: block_plug: [dd]
    kworker/0:1H-38      [000] .....    11.357410: block_rq_issue: 8,0 RS 131072 () 2560 + 256 [kworker/0:1H]
          <idle>-0       [000] d.h1.    11.358001: block_rq_complete: 8,0 RS () 2048 + 256 [0]
"""

# 6.12's layout: the I/O priority ("none,0,0") before the bracket, and the
# record-tgid column after the task.
FTRACE_612 = """
# tracer: nop
              dd-843     (    843) [000] .....    11.357000: block_bio_queue: 8,0 RS 2048 + 768 [dd]
    kworker/0:1H-38      (     38) [000] .....    11.357392: block_rq_issue: 8,0 RS 131072 () 2048 + 256 none,0,0 [kworker/0:1H]
    kworker/0:1H-38      (     38) [000] .....    11.357400: block_rq_issue: 8,0 RS 131072 () 2304 + 256 none,0,0 [kworker/0:1H]
CPU:0 [LOST 3 EVENTS]
    kworker/0:1H-38      (     38) [000] .....    11.357410: block_rq_issue: 8,0 RS 131072 () 2560 + 256 be,0,4 [kworker/0:1H]
          <idle>-0       (      0) [000] d.h1.    11.358001: block_rq_complete: 8,0 RS () 2048 + 256 none,0,0 [0]
"""


def test_blkparse_and_ftrace_of_the_same_requests_are_identical(tmp_path):
    bp = write(tmp_path, "bp.txt", BLKPARSE)
    for text in (FTRACE_61, FTRACE_612):
        ft = write(tmp_path, "ft.txt", text)
        report = diff_files(ft, bp)
        assert report.identical
        (s,) = report.streams
        assert (s.real_dev, s.action, len(s.real), len(s.sim), s.matched) == ("8,0", "D", 3, 3, 3)
        assert report.match_percent == 100.0
        assert "3 of 3 events match in order (100.0%): identical" in report.text()


def test_a_flush_request_reads_the_same_in_both_formats(tmp_path):
    # A FUA write on a disk without FUA, then its post-flush: the kernel's
    # tracepoint spells the flush request (REQ_OP_FLUSH | REQ_PREFLUSH)
    # "FF" and gives it sector 0 (its completion -1), blkparse "FN" (no
    # write bit, no data) and no sector at all.
    ft = write(tmp_path, "ft.txt", """
        kworker/0:1H-38      [000] .....     4.707183: block_rq_issue: 254,0 WS 65536 () 4608 + 128 [kworker/0:1H]
        kworker/0:1H-38      [000] .....     4.707947: block_rq_issue: 254,0 FF 0 () 0 + 0 [kworker/0:1H]
    """)
    bp = write(tmp_path, "bp.txt", """
        254,0    0        1     0.000000000    92  D  WS 4608 + 128 [kworker/0:1H]
        254,0    0        2     0.000100000    92  D  FN [kworker/0:1H]
    """)
    report = diff_files(ft, bp)
    assert report.identical, report.text()
    assert [str(e) for e in Trace(bp).stream("254,0", "D")] == ["WS 4608 + 128", "FF"]


def test_message_lines_summaries_and_headers_are_not_events(tmp_path):
    t = Trace(write(tmp_path, "bp.txt", BLKPARSE))
    # 10 event lines, of which one is a message ('m'); the summary (8 lines)
    # and one blank line are skipped.
    assert t.count == 10
    assert [str(e) for e in t.stream("8,0", "D")] == ["RS 2048 + 256", "RS 2304 + 256", "RS 2560 + 256"]
    assert len(t.stream("8,0", "m")) == 1
    assert t.bad == []
    ft = Trace(write(tmp_path, "ft.txt", FTRACE_612))
    # The lost-events note and the header are skipped, not errors.
    assert ft.bad == [] and ft.count == 5
    # block_plug names no device: it is kept under the empty device and not paired.
    t61 = Trace(write(tmp_path, "ft61.txt", FTRACE_61))
    assert t61.device_numbers() == ["8,0"]
    assert len(t61.stream("", "P")) == 1


def test_first_divergence_and_match_percentages(tmp_path):
    real = write(tmp_path, "real.txt", """
      8,0  0  1  0.000000000  1  D  R 0 + 8 [a]
      8,0  0  2  0.000000001  1  D  R 8 + 8 [a]
      8,0  0  3  0.000000002  1  D  R 16 + 8 [a]
      8,0  0  4  0.000000003  1  D  R 24 + 8 [a]
      8,0  0  5  0.000000004  1  D  R 32 + 8 [a]
    """)
    # The sim issued request 3 as two halves: 16+4, 20+4.
    sim = write(tmp_path, "sim.txt", """
      8,0  0  1  0.000000000  1  D  R 0 + 8 [a]
      8,0  0  2  0.000000001  1  D  R 8 + 8 [a]
      8,0  0  3  0.000000002  1  D  R 16 + 4 [a]
      8,0  0  4  0.000000002  1  D  R 20 + 4 [a]
      8,0  0  5  0.000000003  1  D  R 24 + 8 [a]
      8,0  0  6  0.000000004  1  D  R 32 + 8 [a]
    """)
    report = diff_files(real, sim)
    (s,) = report.streams
    # 4 requests line up (0, 8, 24, 32) out of max(5, 6) = 6: 66.7 %.
    assert (s.matched, s.set_matched) == (4, 4)
    assert s.match_percent == pytest.approx(100 * 4 / 6)
    assert s.first_divergence() == ("replace", 2, 3, 2, 4)
    text = report.text()
    assert "first divergence at real event 3, sim event 3" in text
    assert "> R 16 + 8  [line 3]" in text and "R 16 + 4  [line 3]" in text and "R 20 + 4  [line 4]" in text
    assert not report.identical
    js = report.to_json()
    assert js["streams"][0]["first_divergence"]["real"] == ["R 16 + 8"]
    assert js["streams"][0]["first_divergence"]["sim"] == ["R 16 + 4", "R 20 + 4"]


def test_order_is_reported_separately_from_content(tmp_path):
    real = write(tmp_path, "real.txt", "8,0 0 1 0.0 1 D W 0 + 8 [a]\n8,0 0 2 0.0 1 D W 8 + 8 [a]\n8,0 0 3 0.0 1 D W 16 + 8 [a]\n")
    sim = write(tmp_path, "sim.txt", "8,0 0 1 0.0 1 D W 16 + 8 [a]\n8,0 0 2 0.0 1 D W 0 + 8 [a]\n8,0 0 3 0.0 1 D W 8 + 8 [a]\n")
    (s,) = diff_files(real, sim).streams
    # In order the longest common run is (0, 8): 2 of 3; as a set all 3.
    assert (s.matched, s.set_matched) == (2, 3)
    assert s.set_match_percent == 100.0


def test_ignore_flags_compares_only_the_operation(tmp_path):
    real = write(tmp_path, "real.txt", "8,0 0 1 0.0 1 D RS 0 + 8 [a]\n8,0 0 2 0.0 1 D FWFS 8 + 8 [a]\n")
    sim = write(tmp_path, "sim.txt", "8,0 0 1 0.0 1 D R 0 + 8 [a]\n8,0 0 2 0.0 1 D FW 8 + 8 [a]\n")
    assert diff_files(real, sim).matched == 0
    assert diff_files(real, sim, ignore_flags=True).identical
    assert [op_letters(x) for x in ("RS", "FWFSM", "DE", "F", "N", "RA", "WFS")] == ["R", "FW", "DE", "F", "N", "R", "W"]


def test_devices_pair_by_number_by_map_and_singly(tmp_path):
    # Real: a virtio disk 254,0; sim: the same disk as 8,0. One device on
    # each side: paired without being told.
    real = write(tmp_path, "real.txt", "254,0 0 1 0.0 1 D R 0 + 8 [a]\n")
    sim = write(tmp_path, "sim.txt", "8,0 0 1 0.0 1 D R 0 + 8 [a]\n")
    assert diff_files(real, sim).identical
    # Two devices on each side, numbers differing: unpaired until mapped.
    real2 = write(tmp_path, "real2.txt", "254,0 0 1 0.0 1 D R 0 + 8 [a]\n254,16 0 1 0.0 1 D R 8 + 8 [a]\n")
    sim2 = write(tmp_path, "sim2.txt", "8,0 0 1 0.0 1 D R 0 + 8 [a]\n8,16 0 1 0.0 1 D R 8 + 8 [a]\n")
    r = diff_files(real2, sim2)
    assert (r.unpaired_real, r.unpaired_sim, r.identical) == (["254,0", "254,16"], ["8,0", "8,16"], False)
    assert "only in the real trace" in r.text() and "--map" in r.text()
    r = diff_files(real2, sim2, mapping={"254,0": "8,0", "254,16": "8,16"})
    assert r.identical and len(r.streams) == 2


def test_align_large_equal_streams_is_linear():
    from blkstack.diff import Event
    a = [Event("R", i * 8, 8, i) for i in range(200_000)]
    b = list(a)
    b[100_000] = Event("W", 0, 8, 0)
    matched, common, ops = align(a, b)
    assert matched == 199_999 and common == 199_999
    assert ops[1] == ("replace", 100_000, 100_001, 100_000, 100_001)


SYSFS = """
/sys/block/vda/dev:254:0
/sys/block/vda/queue/scheduler:[mq-deadline] none
/sys/block/vda/queue/max_sectors_kb:1280
/sys/block/vda/queue/max_segments:254
/sys/block/vda/queue/nr_requests:256
/sys/block/vda/queue/rotational:1
/sys/block/vda/queue/iosched/fifo_batch:16
/sys/block/vda/queue/wbt_lat_usec:75000
"""


def test_sysfs_snapshot_and_limit_differences(tmp_path):
    snap = read_sysfs_snapshot(write(tmp_path, "limits.txt", SYSFS))
    assert snap["vda"]["scheduler"] == "[mq-deadline] none"
    assert snap["vda"]["dev"] == "254,0"
    assert "fifo_batch" not in snap["vda"] and "iosched/fifo_batch" not in snap["vda"]
    model = {"scheduler": "mq-deadline", "max_sectors_kb": 128, "max_segments": 254, "nr_requests": 64, "rotational": 1}
    # The scheduler is the bracketed one; files only one side has are not compared.
    assert limit_differences(snap["vda"], model) == [("max_sectors_kb", "1280", "128"), ("nr_requests", "256", "64")]
    by = limits_by_devno(str(tmp_path / "limits.txt"))
    assert by["254,0"] is by["vda"]
    with pytest.raises(TraceFileError, match="grep -r"):
        read_sysfs_snapshot(write(tmp_path, "empty.txt", "nothing here\n"))


def test_limits_in_the_report(tmp_path):
    real = write(tmp_path, "real.txt", "254,0 0 1 0.0 1 D R 0 + 8 [a]\n")
    sim = write(tmp_path, "sim.txt", "254,0 0 1 0.0 1 D R 0 + 8 [a]\n")
    r = diff_files(real, sim, real_limits={"254,0": {"max_sectors_kb": "1280"}},
                   sim_limits={"254,0": {"max_sectors_kb": 128}})
    assert r.limits == {"254,0": [("max_sectors_kb", "1280", "128")]}
    assert "254,0: max_sectors_kb: 1280 / 128" in r.text()


def test_a_file_without_events_is_an_error(tmp_path):
    empty = write(tmp_path, "e.txt", "# tracer: nop\n#\n")
    real = write(tmp_path, "real.txt", "8,0 0 1 0.0 1 D R 0 + 8 [a]\n")
    with pytest.raises(TraceFileError, match="no block trace events"):
        diff_files(empty, real)


# -- the command line --------------------------------------------------------


def run_cli(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_status_follows_diff(tmp_path, capsys):
    bp = write(tmp_path, "bp.txt", BLKPARSE)
    ft = write(tmp_path, "ft.txt", FTRACE_612)
    code, out, err = run_cli(["diff", ft, bp], capsys)
    assert (code, err) == (0, "")
    assert "issued requests (D): real 3, sim 3; 3 match in order (100.0%)" in out
    other = write(tmp_path, "other.txt", "8,0 0 1 0.0 1 D RS 2048 + 256 [dd]\n")
    code, out, _err = run_cli(["diff", ft, other, "--events", "D,Q"], capsys)
    assert code == 1
    assert "queued bios (Q): real 1, sim 0" in out


def test_cli_json_and_limits(tmp_path, capsys):
    real = write(tmp_path, "real.txt", "254,0 0 1 0.0 1 D R 0 + 8 [a]\n")
    sim = write(tmp_path, "sim.txt", "8,0 0 1 0.0 1 D R 0 + 8 [a]\n")
    limits = write(tmp_path, "limits.txt", SYSFS)
    summary = write(tmp_path, "summary.json", json.dumps(
        {"devices": {"sda": {"major": 8, "minor": 0, "limits": {"max_sectors_kb": 1280, "nr_requests": 64}}}}))
    code, out, _err = run_cli(["diff", real, sim, "--map", "254:0=8,0", "--real-limits", limits,
                               "--sim-limits", summary, "--json", "-"], capsys)
    data = json.loads(out)
    assert code == 0 and data["identical"] and data["match_percent"] == 100.0
    assert data["limits"] == {"254,0": [{"file": "nr_requests", "real": "256", "sim": "64"}]}


@pytest.mark.parametrize("argv,message", [
    (["diff", "missing.txt", "x"], "missing.txt: no such file"),
    (["diff", "{real}", "{real}", "--map", "8=8,0"], "--map 8=8,0: '8' is not a device number"),
    (["diff", "{real}", "{real}", "--events", "D,Z"], "unknown event 'Z'"),
    (["diff", "{real}", "{empty}"], "no block trace events found"),
    (["diff", "{real}", "{real}", "--kernel", "6.1"], "--kernel needs --scenario"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, argv, message):
    paths = {"real": write(tmp_path, "real.txt", "8,0 0 1 0.0 1 D R 0 + 8 [a]\n"),
             "empty": write(tmp_path, "empty.txt", "\n")}
    code, out, err = run_cli([a.format(**paths) for a in argv], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("blkstack: error: ") and message in err


def test_cli_diff_help_has_examples(capsys):
    code, out, _err = run_cli(["diff", "--help"], capsys)
    assert code == 0 and "examples:" in out and "blkstack diff real.txt sim.txt" in out
    code, out, _err = run_cli(["validate", "--help"], capsys)
    assert code == 0 and "examples:" in out and "--kernel" in out


def test_split_events_compare_their_split_point(tmp_path):
    # Both traces split a read at sector 0, one at 256 and one at 9999: the
    # splits differ (blkparse prints the bio's sector / the remainder's).
    real = write(tmp_path, "real.txt", """
      8,0  0  1  0.000000000  1  X  R 0 / 256 [a]
    """)
    sim = write(tmp_path, "sim.txt", """
      8,0  0  1  0.000000000  1  X  R 0 / 9999 [a]
    """)
    report = diff_files(real, sim, events=["X"])
    assert not report.identical
    assert [str(e) for e in Trace(real).stream("8,0", "X")] == ["R 0 / 256"]
    assert "R 0 / 256" in report.text() and "R 0 / 9999" in report.text()
    assert diff_files(real, real, events=["X"]).identical


def test_first_divergence_of_splits_is_the_first_differing_split(tmp_path):
    # Splits 1 to 7 agree; split 8 splits at 300 instead of 256, and the
    # rest agree again: the first divergence is event 8.
    rows = [f"  8,0  0  {i}  0.00000000{i % 10}  1  X  WS {1000 * i} / {1000 * i + 256} [a]" for i in range(1, 12)]
    real = write(tmp_path, "real.txt", "\n".join(rows) + "\n")
    rows[7] = rows[7].replace("/ 8256", "/ 8300")
    sim = write(tmp_path, "sim.txt", "\n".join(rows) + "\n")
    (s,) = diff_files(real, sim, events=["X"]).streams
    assert s.first_divergence()[1] == 7
    assert "first divergence at real event 8, sim event 8" in diff_files(real, sim, events=["X"]).text()


def test_context_pairs_that_differ_are_marked(tmp_path):
    # With --ignore-flags, R and RS line up; shown as context, they still
    # differ and are marked "~".
    real = write(tmp_path, "real.txt", """
      8,0  0  1  0.000000000  1  D  RS 0 + 8 [a]
      8,0  0  2  0.000000001  1  D  R 8 + 8 [a]
    """)
    sim = write(tmp_path, "sim.txt", """
      8,0  0  1  0.000000000  1  D  R 0 + 8 [a]
      8,0  0  2  0.000000001  1  D  R 16 + 8 [a]
    """)
    text = diff_files(real, sim, ignore_flags=True).text()
    context = [line for line in text.splitlines() if "RS 0 + 8" in line]
    assert context and context[0].lstrip().startswith("~ "), text
