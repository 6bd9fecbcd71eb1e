"""``blkstack calibrate``: fitting the service model from fio's JSON."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from blkstack.calibrate import fiojson, job_file, measure
from blkstack.calibrate.fit import FitError, fit, line_fit, predict
from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).resolve().parent.parent / "data" / "fio-json"
READ = DATA / "virtio-read.json"
WRITE = DATA / "virtio-write.json"

US = 1e-6


def fio_json(jobs: list) -> dict:
    """fio 3.x JSON for jobs given as (name, rw, bs, iodepth, iops, clat_us)."""
    out = []
    for name, rw, bs, depth, iops, clat_us in jobs:
        side = "write" if "write" in rw else "read"
        figures = {"bw_bytes": iops * bs, "iops": iops, "clat_ns": {"mean": clat_us * 1000}}
        empty = {"bw_bytes": 0, "iops": 0, "clat_ns": {"mean": 0}}
        out.append({"jobname": name, "error": 0,
                    "job options": {"rw": rw, "bs": str(bs), "iodepth": str(depth)},
                    "read": figures if side == "read" else empty,
                    "write": figures if side == "write" else empty})
    return {"fio version": "fio-3.33", "global options": {"ioengine": "libaio", "direct": "1"}, "jobs": out}


# A device worked by hand: access 80 us, read-ahead access 30 us, overhead
# 20 us per command, 1 GB/s (1 ns a byte), 4 commands at once. X(bs) = 20 us + bs ns.
#   rand 4k qd1:    clat = 80 + 20 + 4.096 = 104.096 us, IOPS 1/104.096 us
#   seq 4k qd1:     clat = 30 + 24.096 = 54.096 us
#   rand 128k qd1:  clat = 80 + 20 + 131.072 = 231.072 us
#   rand 4k qd8/32: min(4 / 104.096 us, 1 / 24.096 us) = 38,426 IOPS (the slots bind)
#   rand 64k qd32:  min(4 / 165.536 us, 1 / 85.536 us) = 11,691 IOPS (the transfer path binds)
#   rand 128k qd32: 1 / 151.072 us = 6,619 IOPS;  rand 1m qd32: 1 / 1068.576 us = 935.8 IOPS
HAND_DEVICE = [
    ("rand-4k-qd1", "randread", 4096, 1, 1 / (104.096 * US), 104.096),
    ("seq-4k-qd1", "read", 4096, 1, 1 / (54.096 * US), 54.096),
    ("rand-128k-qd1", "randread", 131072, 1, 1 / (231.072 * US), 231.072),
    ("rand-4k-qd8", "randread", 4096, 8, 4 / (104.096 * US), 8 * 104.096 / 4),
    ("rand-4k-qd32", "randread", 4096, 32, 4 / (104.096 * US), 32 * 104.096 / 4),
    ("rand-64k-qd32", "randread", 65536, 32, 1 / (85.536 * US), 32 * 85.536),
    ("rand-128k-qd32", "randread", 131072, 32, 1 / (151.072 * US), 32 * 151.072),
    ("rand-1m-qd32", "randread", 1 << 20, 32, 1 / (1068.576 * US), 32 * 1068.576),
]


def test_fit_recovers_a_device_worked_by_hand(tmp_path):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(fio_json(HAND_DEVICE)))
    reads, writes = fiojson.split(fiojson.load(str(path)))
    f = fit(reads, writes)
    assert f.overhead == pytest.approx(20 * US, rel=1e-6)
    assert f.bandwidth == pytest.approx(1e9, rel=1e-6)
    assert f.read_latency == pytest.approx(80 * US, rel=1e-6)
    assert (f.streams, f.seq_read_latency) == (1, pytest.approx(30 * US, rel=1e-6))
    assert f.parallelism == 4
    for job in reads:
        assert predict(f, job).bw_bytes == pytest.approx(job.bw_bytes, rel=1e-6)


# A device that posts completions in batches, worked by hand: access 20 us,
# overhead 5 us, 1 GB/s, X(bs) = 5 us + bs ns. A batch of q commands waits
# 20 us once and takes the path q times: q / (20 + q X) commands per us.
#   rand/seq 4k qd1: 20 + 9.096 = 29.096 us;  rand 128k qd1: 20 + 136.072 = 156.072 us
#   rand 4k qd8:    8 / (20 + 8 x 9.096 = 92.768 us) = 86,237 IOPS
#   rand 4k qd32:   32 / (20 + 32 x 9.096 = 311.072 us)
#   rand 64k qd32:  32 / (20 + 32 x 70.536 = 2,277.152 us)
#   rand 128k qd32: 32 / (20 + 32 x 136.072 = 4,374.304 us)
#   rand 1m qd32:   32 / (20 + 32 x 1,053.576 = 33,734.432 us)
BATCHED_DEVICE = [
    (name, rw, bs, q, q / (batch * US), batch)
    for name, rw, bs, q, batch in [
        ("rand-4k-qd1", "randread", 4096, 1, 29.096),
        ("seq-4k-qd1", "read", 4096, 1, 29.096),
        ("rand-128k-qd1", "randread", 131072, 1, 156.072),
        ("rand-4k-qd8", "randread", 4096, 8, 92.768),
        ("rand-4k-qd32", "randread", 4096, 32, 311.072),
        ("rand-64k-qd32", "randread", 65536, 32, 2277.152),
        ("rand-128k-qd32", "randread", 131072, 32, 4374.304),
        ("rand-1m-qd32", "randread", 1 << 20, 32, 33734.432),
    ]
]


def test_fit_recognises_batched_completions(tmp_path):
    path = tmp_path / "batched.json"
    path.write_text(json.dumps(fio_json(BATCHED_DEVICE)))
    reads, _ = fiojson.split(fiojson.load(str(path)))
    f = fit(reads, [])
    assert f.batched and f.parallelism == 32 and f.streams == 0
    assert f.overhead == pytest.approx(5 * US, rel=1e-2)
    assert f.bandwidth == pytest.approx(1e9, rel=1e-2)
    assert f.read_latency == pytest.approx(20 * US, rel=1e-2)
    for job in reads:
        assert predict(f, job).bw_bytes == pytest.approx(job.bw_bytes, rel=1e-2)
    # Told the device completes each command as it finishes, the knee fits
    # worse: 4k at depth 8 and 32 (86,237 and 102,870 IOPS) cannot both be met.
    knee = fit(reads, [], batched=False)
    assert not knee.batched
    assert max(abs(predict(knee, j).bw_bytes / j.bw_bytes - 1) for j in reads) > 0.05


def test_line_fit_is_least_squares():
    # y = 2x + 1 through (0, 1), (1, 3), (2, 5); with (1, 4) added the mean
    # point is (1, 3.25) and the slope stays 2: intercept 1.25.
    assert line_fit([(0, 1), (1, 3), (2, 5)]) == (2, 1)
    assert line_fit([(0, 1), (1, 3), (2, 5), (1, 4)]) == (2, 1.25)


def test_fit_of_this_machines_virtio_disk():
    reads, writes = fiojson.split(fiojson.load(str(READ)) + fiojson.load(str(WRITE)))
    assert (len(reads), len(writes)) == (13, 5)
    f = fit(reads, writes)
    # rand-4k-qd1 runs 9,533.6 reads/s (bw_bytes 39,049,716 / 4096): 104.892 us
    # each, submission included (its clat, 91.875 us, leaves that out).
    assert f.read_latency + f.overhead + 4096 / f.bandwidth == pytest.approx(104.892 * US, rel=1e-4)
    # seq-4k-qd1 runs 10,344.9 reads/s, 96.666 us each: read ahead, 8.226 us sooner.
    assert f.streams == 1
    assert f.read_latency - f.seq_read_latency == pytest.approx(8.226 * US, rel=1e-3)
    # rand-4k-qd32 reaches 30,427 IOPS, each command in flight 104.9 us:
    # 30,427 x 104.9 us = 3.19 commands at once (qd8: 29,401 -> 3.08). A
    # knee, not the ramp of a device that batches its completions.
    assert f.parallelism == 3 and not f.batched
    # ... and the 4k command's transfer, which no other overlaps, lets
    # about 1 / 30,427 IOPS = 32.9 us through: the fit stays near that.
    assert f.overhead + 4096 / f.bandwidth == pytest.approx(32.9 * US, rel=0.1)
    # Large blocks: rand-1m-qd32 864 MB/s, seq-1m-qd8 599 MB/s, rand-128k-qd32 473 MB/s.
    assert 470e6 < f.bandwidth < 870e6
    # wrand-4k-qd1: 5,007.3 writes/s, 199.707 us each.
    assert f.write_latency + f.write_overhead + 4096 / f.write_bandwidth == pytest.approx(199.707 * US, rel=1e-4)


def test_calibrate_writes_a_model_section_blkstack_runs(tmp_path):
    proc = run_cli("calibrate", "--from", READ, "--from", WRITE, "--disk", "vda", "--kind", "virtio",
                   "--out", tmp_path / "vda.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    section = tomllib.loads((tmp_path / "vda.toml").read_text())["disks"]["vda"]["model"]
    assert section["parallelism"] == 3 and section["streams"] == 1
    lines = proc.stdout.splitlines()
    rows = [l for l in lines if l.startswith(("rand-", "seq-", "wrand-", "wseq-"))]
    assert len(rows) == 18
    assert rows[0].split()[:4] == ["rand-4k-qd1", "randread", "4k", "qd1"]
    assert "through blkstack fio" in lines[-2] and "median" in lines[-2]
    # The section works in a scenario.
    stack = '[disks.vda]\nkind = "virtio"\nsize = "2GiB"\n' + (tmp_path / "vda.toml").read_text()
    (tmp_path / "stack.toml").write_text(stack)
    run = run_cli("fio", "--stack", "stack.toml", "--name=x", "--rw=randread", "--bs=4k", "--iodepth=1",
                  "--ioengine=libaio", "--direct=1", "--time_based", "--runtime=20ms", "--filename=/dev/vda",
                  "--json", "x.json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # One 4k read at a time: the measured 104.892 us each, submission
    # included (the section's figures are rounded to 0.1 us).
    clat = json.loads((tmp_path / "x.json").read_text())["fio"]["jobs"][0]["read"]["clat_ns"]["mean"]
    assert clat == pytest.approx(104_892, abs=150)


def test_section_on_stdout_and_report_on_stderr(tmp_path):
    proc = run_cli("calibrate", "--from", READ, "--disk", "vda", "--analytic", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Fitted by blkstack calibrate from virtio-read.json.\n[disks.vda.model]\n")
    assert "write_bandwidth" not in proc.stdout
    assert "analytically" in proc.stderr and "no write job" in proc.stderr


def test_completions_option_sets_the_batching(tmp_path):
    # The fixture's busy-host disk fits the knee by itself; told that the
    # device batches, the section says so and serves every command of a
    # qd32 batch at once.
    proc = run_cli("calibrate", "--from", READ, "--disk", "vda", "--analytic", "--completions", "batched", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    section = tomllib.loads(proc.stdout)["disks"]["vda"]["model"]
    assert section["batch_completions"] is True and section["parallelism"] == 32
    auto = run_cli("calibrate", "--from", READ, "--disk", "vda", "--analytic", cwd=tmp_path)
    assert "batch_completions" not in auto.stdout


def test_job_files_ship_with_the_package():
    for name in ("read", "write"):
        text = Path(job_file(name)).read_text()
        assert "ioengine=libaio" in text and "direct=1" in text and "filename=${TARGET}" in text
    assert "rw=randwrite" not in Path(job_file("read")).read_text()


def _broken(tmp_path: Path, edit) -> Path:
    data = json.loads(READ.read_text())
    edit(data)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("edit, needles", [
    (lambda d: d["jobs"][0]["read"].pop("bw_bytes"), ["job 'rand-4k-qd1'", "'read.bw_bytes'"]),
    (lambda d: d["jobs"][2]["read"]["clat_ns"].pop("mean"), ["job 'rand-64k-qd1'", "'read.clat_ns.mean'"]),
    (lambda d: d["jobs"][1]["job options"].update(bs="big"), ["job 'rand-16k-qd1'", "option 'bs'", "'big'"]),
    (lambda d: d["jobs"][3].pop("jobname"), ["jobs[3]", "'jobname'"]),
    (lambda d: d["jobs"][4].update(error=5), ["job 'rand-4k-qd8'", "error 5"]),
    (lambda d: d["jobs"][0]["read"].update(bw_bytes=0, iops=0), ["job 'rand-4k-qd1'", "moved no data"]),
    (lambda d: d.pop("jobs"), ["no 'jobs' list"]),
    (lambda d: d["jobs"][5]["job options"].update(numjobs="4"), ["job 'rand-4k-qd32'", "'numjobs' is 4"]),
])
def test_bad_fio_json_names_job_and_field(tmp_path, edit, needles):
    path = _broken(tmp_path, edit)
    assert_one_error_line(run_cli("calibrate", "--from", path, "--analytic", cwd=tmp_path), "broken.json", *needles)


def test_missing_job_family_names_the_parameter(tmp_path):
    def no_random_qd1(d):
        d["jobs"] = [j for j in d["jobs"] if not j["jobname"].startswith("rand-") or not j["jobname"].endswith("qd1")]
    path = _broken(tmp_path, no_random_qd1)
    assert_one_error_line(run_cli("calibrate", "--from", path, "--analytic", cwd=tmp_path),
                          "no random read at iodepth 1", "read_latency")


def test_not_json_and_writes_alone(tmp_path):
    (tmp_path / "x.json").write_text("fio: this is not JSON\n")
    assert_one_error_line(run_cli("calibrate", "--from", "x.json", cwd=tmp_path), "x.json", "not fio JSON")
    assert_one_error_line(run_cli("calibrate", "--from", WRITE, cwd=tmp_path), "no read job")
    assert_one_error_line(run_cli("calibrate", cwd=tmp_path), "--from")
    assert_one_error_line(run_cli("calibrate", "--from", "missing.json", cwd=tmp_path), "missing.json")


def test_fit_error_without_deep_jobs():
    reads = [j for j in fiojson.load(str(READ)) if j.iodepth == 1]
    with pytest.raises(FitError, match="iodepth >= 8"):
        fit(reads, [])


# Measuring with fio itself: what can be checked without running fio.

def test_job_set_timing_fits_the_budget():
    text = Path(job_file("read")).read_text()
    names = measure.sections(text)
    assert names[0] == "rand-4k-qd1" and len(names) == 13
    # 2 s a job: a quarter ramp (500 ms), the rest measured (1500 ms).
    timed = measure.with_timing(text, 2.0)
    assert "\nruntime=1500ms\n" in timed and "\nramp_time=500ms\n" in timed


MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw shared:2 - proc proc rw
30 22 8:17 / /data rw shared:3 - xfs /dev/sdb1 rw
"""


def test_writes_refused_on_a_device_in_use():
    vda, sdb, sdc = os.makedev(254, 0), os.makedev(8, 16), os.makedev(8, 32)
    assert "254:0 is mounted on /" in measure.in_use(vda, MOUNTINFO, "", [], [])
    # sdb itself is not mounted, its first partition (8:17) is.
    assert "8:17 is mounted on /data" in measure.in_use(sdb, MOUNTINFO, "", [], ["8:17"])
    assert "part of md0" in measure.in_use(sdc, MOUNTINFO, "", ["md0"], [])
    assert measure.in_use(sdc, MOUNTINFO, "Filename Type Size Used Priority\n", [], []) is None


def test_measure_errors(tmp_path):
    target = tmp_path / "data"
    target.write_bytes(b"\0" * 4096)
    assert_one_error_line(run_cli("calibrate", target, "--runtime", "1", cwd=tmp_path),
                          "--runtime 1", "13 jobs need at least 6.5 s")
    assert_one_error_line(run_cli("calibrate", target, env_extra={"PATH": str(tmp_path)}, cwd=tmp_path),
                          "fio is not installed")
    assert_one_error_line(run_cli("calibrate", "--from", READ, "--allow-writes", cwd=tmp_path),
                          "--allow-writes", "only with a device or file")
    assert_one_error_line(run_cli("calibrate", tmp_path, cwd=tmp_path), "neither a block device nor a regular file")
