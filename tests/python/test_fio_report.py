"""fio's report against real fio 3.33 output (tests/data/fio-report): the
same lines and JSON keys in the same order, in fio's formats; the figures
are the model's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List

from conftest import run_cli

DATA = Path(__file__).resolve().parent.parent / "data" / "fio-report"

STACK = """\
kernel = "6.12"
[disks.vda]
kind = "virtio"
size = "1GiB"
"""

# The randread job recorded in randread-libaio.*, on the scenario's vda.
RANDREAD = ["--name=rr", "--filename=/dev/vda", "--size=8M", "--rw=randread", "--bs=4k", "--direct=1",
            "--ioengine=libaio", "--iodepth=8", "--runtime=1", "--time_based"]

NUM = r"[\d.]+[kMGTP]?"
SIZE = r"[\d.]+(?:[kKMGTP]i?)?B"
RATE = r"[\d.]+(?:[kKMGTP]i?)?B/s"
PCT = r"[\d.]+%"
# Every line fio's normal output has, by kind: the text of stat.c's and
# init.c's format strings with their numbers as patterns.
LINES = [
    ("announce", rf"\S+: \(g=\d+\): rw=\w+, bs=\(R\) {SIZE}-{SIZE}, \(W\) {SIZE}-{SIZE}, \(T\) {SIZE}-{SIZE}, "
                 r"ioengine=\w+, iodepth=\d+"),
    ("clones", r"\.\.\."),
    ("version", r"fio-3\.33"),
    ("starting", r"Starting \d+ process(es)?"),
    ("layout", r"\S+: Laying out IO file .*"),
    ("blank", r""),
    ("job", r"\S+: \(groupid=\d+, jobs=\d+\): err= 0: pid=\d+: \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}"),
    ("ddir", rf"  (read|write|trim): IOPS={NUM}, BW={RATE} \({RATE}\)\({SIZE}/\d+msec\)(; 0 zone resets)?"),
    ("slat", rf"    slat \((nsec|usec|msec)\): min={NUM}, max={NUM}, avg=[ \d.]+, stdev=[ \d.]+"),
    ("clat", rf"    clat \((nsec|usec|msec)\): min={NUM}, max={NUM}, avg=[ \d.]+, stdev=[ \d.]+"),
    ("lat", rf"     lat \((nsec|usec|msec)\): min={NUM}, max={NUM}, avg=[ \d.]+, stdev=[ \d.]+"),
    ("percentiles", r"    (clat|sync) percentiles \((nsec|usec|msec)\):"),
    ("prow", r"     \|( [ \d]\d\.\d\dth=\[ *\d+\][,]?)+"),
    ("bw", r"   bw \(  (KiB|MiB|kB)/s\): min= *\d+, max= *\d+, per=[\d.]+%, avg=[ \d.]+, stdev=[ \d.]+, samples=\d+"),
    ("iops", r"   iops        : min= *\d+, max= *\d+, avg=[ \d.]+, stdev=[ \d.]+, samples=\d+"),
    ("latdist", rf"  lat \((nsec|usec|msec)\)   : (>=)?\d+={PCT}(, (>=)?\d+={PCT}){{0,4}}"),
    ("fsync", r"  fsync/fdatasync/sync_file_range:"),
    ("sync", rf"    sync \((nsec|usec|msec)\): min={NUM}, max={NUM}, avg=[ \d.]+, stdev=[ \d.]+"),
    ("cpu", rf"  cpu          : usr={PCT}, sys={PCT}, ctx=\d+, majf=\d+, minf=\d+"),
    ("depths", rf"  IO depths    : 1={PCT}, 2={PCT}, 4={PCT}, 8={PCT}, 16={PCT}, 32={PCT}, >=64={PCT}"),
    ("submit", rf"     submit    : 0={PCT}, 4={PCT}, 8={PCT}, 16={PCT}, 32={PCT}, 64={PCT}, >=64={PCT}"),
    ("complete", rf"     complete  : 0={PCT}, 4={PCT}, 8={PCT}, 16={PCT}, 32={PCT}, 64={PCT}, >=64={PCT}"),
    ("issued", r"     issued rwts: total=\d+,\d+,\d+,\d+ short=\d+,\d+,\d+,\d+ dropped=\d+,\d+,\d+,\d+"),
    ("latency", r"     latency   : target=\d+, window=\d+, percentile=[\d.]+%, depth=\d+"),
    ("group", r"Run status group \d+ \(all jobs\):"),
    ("gddir", rf"  ( READ|WRITE| TRIM): bw={RATE} \({RATE}\), {RATE}-{RATE} \({RATE}-{RATE}\), io={SIZE} \({SIZE}\), "
              r"run=\d+-\d+msec"),
    ("diskstats", r"Disk stats \(read/write\):"),
    ("disk", r"  \w+: ios=\d+/\d+, merge=\d+/\d+, ticks=\d+/\d+, in_queue=\d+, util=[\d.]+%"),
]


def kinds(text: str) -> List[str]:
    """Each line's kind; a line no format matches fails the test. Runs of
    percentile rows and of latency-distribution lines count once (how many
    there are depends on the figures)."""
    out: List[str] = []
    for line in text.rstrip("\n").split("\n"):
        kind = next((k for k, pat in LINES if re.fullmatch(pat, line)), None)
        assert kind is not None, f"no fio format matches {line!r}"
        if kind in ("prow", "latdist") and out and out[-1] == kind:
            continue
        if kind != "layout":
            out.append(kind)
    return out


def key_paths(v, path=""):
    """Every key of a JSON document in order, as paths; the bins of json+
    and the names of the job's options only by their parent."""
    if isinstance(v, dict):
        out = []
        for k, x in v.items():
            out.append(f"{path}/{k}")
            if k not in ("bins", "job options", "global options"):
                out.extend(key_paths(x, f"{path}/{k}"))
        return out
    if isinstance(v, list):
        return [p for i, x in enumerate(v) for p in key_paths(x, f"{path}[{i}]")]
    return []


def _fio(tmp_path, *args, env=None):
    (tmp_path / "stack.toml").write_text(STACK)
    proc = run_cli("fio", "--stack", "stack.toml", *args, cwd=tmp_path, env_extra=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_normal_output_has_real_fio_lines(tmp_path):
    real = kinds((DATA / "randread-libaio.txt").read_text())
    mine = kinds(_fio(tmp_path, *RANDREAD))
    assert mine == real
    # The sequence fio prints for a libaio reader (recorded).
    assert real == ["announce", "version", "starting", "blank", "job", "ddir", "slat", "clat", "lat", "percentiles",
                    "prow", "bw", "iops", "latdist", "cpu", "depths", "submit", "complete", "issued", "latency",
                    "blank", "group", "gddir", "blank", "diskstats", "disk"]


def test_json_has_real_fio_keys_in_order(tmp_path):
    for fmt, fixture in (("json", "randread-libaio.json"), ("json+", "randread-libaio.jsonplus")):
        real_text = (DATA / fixture).read_text()
        mine_text = _fio(tmp_path, *RANDREAD, f"--output-format={fmt}")
        real, mine = json.loads(real_text), json.loads(mine_text)
        assert key_paths(mine) == key_paths(real), fmt
        assert list(mine["jobs"][0]["job options"]) == list(real["jobs"][0]["job options"])
        # fio's printer: two spaces a level, "key" : value, floats %f.
        assert mine_text.split("\n")[:2] == ['{', '  "fio version" : "fio-3.33",']
        assert re.search(r'\n        "iops" : \d+\.\d{6},\n', mine_text)
        assert mine_text.endswith("\n}\n") and real_text.endswith("\n}\n")
    bins = mine["jobs"][0]["read"]["clat_ns"]["bins"]
    assert bins and sum(bins.values()) == mine["jobs"][0]["read"]["clat_ns"]["N"]


def test_groups_stonewall_rate_thinktime_ramp(tmp_path):
    """groups.fio (three groups: stonewall, new_group; rate_iops, thinktime,
    ramp_time) gives fio's lines and JSON keys, group by group."""
    job = (DATA / "groups.fio").read_text().replace("/tmp/fr/f2", "/dev/vda")
    (tmp_path / "groups.fio").write_text(job)
    out = _fio(tmp_path, "groups.fio")
    assert kinds(out) == kinds((DATA / "groups.txt").read_text())
    mine = json.loads(_fio(tmp_path, "groups.fio", "--output-format=json"))
    real = json.loads((DATA / "groups.json").read_text())
    assert key_paths(mine) == key_paths(real)
    assert [j["groupid"] for j in mine["jobs"]] == [0, 1, 2]
    assert mine["global options"] == {**real["global options"], "filename": "/dev/vda"}
    seqw, randrw, think = mine["jobs"]
    # rate_iops=2000 for 1 s from the job's start: an I/O every 500 µs per
    # direction, so at most 2000 reads and 2000 writes (fio: 1992 and 1998).
    assert 0 < randrw["read"]["total_ios"] <= 2001 and 0 < randrw["write"]["total_ios"] <= 2001
    # thinktime=100 µs after each psync read: each read takes its latency
    # plus 100 µs, so at most 1 s / 100 µs = 10000 in the measured second.
    assert think["read"]["total_ios"] < 10000 and think["job_runtime"] >= 1000
    # fsync=16: one fsync per 16 writes (fio: 1754 writes, 109 fsyncs).
    assert seqw["sync"]["total_ios"] == seqw["write"]["total_ios"] // 16


def test_normal_then_json_order(tmp_path):
    """--output-format=normal,json: job lines and Starting, the JSON, then
    the normal report, as fio writes them."""
    args = ["--name=grp", "--filename=/dev/vda", "--size=8M", "--rw=randwrite", "--bs=4k", "--direct=1",
            "--ioengine=libaio", "--iodepth=2", "--numjobs=2", "--group_reporting", "--runtime=1", "--time_based",
            "--output-format=normal,json"]
    mine = _fio(tmp_path, *args)
    real = (DATA / "group-reporting-normal-json.txt").read_text()

    def split(text):
        start, end = text.index("\n{\n") + 1, text.index("\n}\n") + 3
        return text[:start], json.loads(text[start:end]), text[end:]

    (mh, mj, mt), (rh, rj, rt) = split(mine), split(real)
    assert kinds(mh) == kinds(rh) == ["announce", "clones", "version", "starting"]
    assert key_paths(mj) == key_paths(rj)
    assert kinds(mt) == kinds(rt)
    assert "grp: (groupid=0, jobs=2)" in mt
    # fio sums total_run_time over the group's jobs (job_runtime: 2010 ms
    # for two 1 s clones in the recording) but takes the longest run for a
    # direction's runtime (1008 ms there).
    job = mj["jobs"][0]
    assert 1000 <= job["write"]["runtime"] < 1100 and 2000 <= job["job_runtime"] <= 2 * job["write"]["runtime"]


def test_report_time_follows_source_date_epoch(tmp_path):
    out = _fio(tmp_path, *RANDREAD, env={"SOURCE_DATE_EPOCH": "1795569172"})
    assert re.search(r"^rr: \(groupid=0, jobs=1\): err= 0: pid=\d+: Wed Nov 25 01:12:52 2026$", out, re.M)


def test_bad_output_format_is_an_error(tmp_path):
    (tmp_path / "stack.toml").write_text(STACK)
    proc = run_cli("fio", "--stack", "stack.toml", *RANDREAD, "--output-format=terse", cwd=tmp_path)
    assert proc.returncode != 0
    assert "output-format" in proc.stderr and "terse" in proc.stderr
