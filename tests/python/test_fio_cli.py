"""``blkstack fio``: fio job files and fio's options on a scenario's stack."""

from __future__ import annotations

import json

from conftest import assert_one_error_line, run_cli

STACK = """\
kernel = "6.12"
[disks.nvme1n1]
kind = "nvme"
size = "64GiB"
"""

# Seed 001's benchmark with a 20 ms runtime.
SEED_001_JOB = """\
[global]
time_based

[benchmark]
size=50G
rw=randwrite
runtime=20ms
filename=/dev/nvme1n1
ioengine=psync
randrepeat=0
iodepth=1
fsync=64
invalidate=1
verify=0
verify_fatal=0
blocksize=4k
numjobs=4
group_reporting
"""

SEED_001_ARGS = [
    "--time_based", "--name=benchmark", "--size=50G", "--rw=randwrite", "--runtime=20ms",
    "--filename=/dev/nvme1n1", "--ioengine=psync", "--randrepeat=0", "--iodepth=1", "--fsync=64",
    "--invalidate=1", "--verify=0", "--verify_fatal=0", "--blocksize=4k", "--numjobs=4",
    "--group_reporting",
]

VOLATILE = ("wall_time_s", "engine_cpu_s", "bios_per_s", "warnings", "scenario")


def _setup(tmp_path):
    (tmp_path / "stack.toml").write_text(STACK)
    (tmp_path / "seed001.fio").write_text(SEED_001_JOB)


def _stable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in VOLATILE}


def test_job_file_and_options_give_identical_results(tmp_path):
    _setup(tmp_path)
    # fio prints the wall-clock time after each job's pid: held still.
    clock = {"SOURCE_DATE_EPOCH": "1795569172"}
    a = run_cli("fio", "seed001.fio", "--stack", "stack.toml", "--json", "a.json", cwd=tmp_path, env_extra=clock)
    b = run_cli("fio", "--stack", "stack.toml", *SEED_001_ARGS, "--json", "b.json", cwd=tmp_path, env_extra=clock)
    assert a.returncode == 0, a.stderr
    assert b.returncode == 0, b.stderr
    assert a.stdout == b.stdout
    ja = json.loads((tmp_path / "a.json").read_text())
    jb = json.loads((tmp_path / "b.json").read_text())
    assert _stable(ja) == _stable(jb)
    # fio's report: the job line, IOPS/BW, percentiles, fsync and Disk stats.
    out = a.stdout
    assert out.startswith("benchmark: (g=0): rw=randwrite, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, "
                          "ioengine=psync, iodepth=1\n...\nfio-3.33\nStarting 4 processes\n\n")
    assert "\nbenchmark: (groupid=0, jobs=4): err= 0: pid=4242: Wed Nov 25 01:12:52 2026\n" in out
    assert "  write: IOPS=" in out and "clat percentiles" in out
    assert "  fsync/fdatasync/sync_file_range:\n" in out
    assert "\nDisk stats (read/write):\n  nvme1n1: ios=0/" in out
    write = ja["fio"]["jobs"][0]["write"]
    assert write["total_ios"] > 0 and write["bw_bytes"] > 0
    assert set(write["clat_ns"]) >= {"p50", "p90", "p99", "p99.9", "percentile"}
    disk = ja["fio"]["disk_util"][0]
    assert disk["name"] == "nvme1n1" and disk["read_ios"] == 0 and disk["write_ios"] > 0


def test_cosmetic_options_warn_on_stderr(tmp_path):
    _setup(tmp_path)
    proc = run_cli("fio", "seed001.fio", "--stack", "stack.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines == ["blkstack: warning: seed001.fio:14: verify: ignored: it does not change the I/O",
                     "blkstack: warning: seed001.fio:15: verify_fatal: ignored: it does not change the I/O"]
    data = json.loads(run_cli("fio", "seed001.fio", "--stack", "stack.toml", "--json", "-", cwd=tmp_path).stdout)
    assert data["warnings"] == ["seed001.fio:14: verify: ignored: it does not change the I/O",
                                "seed001.fio:15: verify_fatal: ignored: it does not change the I/O"]


def test_shape_changing_option_fails_with_one_line(tmp_path):
    _setup(tmp_path)
    proc = run_cli("fio", "--stack", "stack.toml", "--name=x", "--rw=randwrite", "--rate_iops_min=5", cwd=tmp_path)
    assert_one_error_line(proc, "command line argument 3", "rate_iops_min", "not modelled")
    (tmp_path / "bad.fio").write_text("[x]\nrw=randwrite\nrate_iops_min=5\n")
    proc = run_cli("fio", "bad.fio", "--stack", "stack.toml", cwd=tmp_path)
    assert_one_error_line(proc, "bad.fio:3: rate_iops_min")


def test_fio_needs_a_job(tmp_path):
    _setup(tmp_path)
    proc = run_cli("fio", "--stack", "stack.toml", cwd=tmp_path)
    assert_one_error_line(proc, "give a job file or fio's options")


def test_run_prints_fio_warnings(tmp_path):
    text = STACK + '[workload]\ntype = "fio"\njob = """\n[w]\nrw=write\ndirect=1\nsize=1M\nthread\n"""\n'
    (tmp_path / "s.toml").write_text(text)
    proc = run_cli("run", "s.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # The job's line 5 ("thread") is the scenario's line 12 (the job starts on line 8).
    assert proc.stderr == "blkstack: warning: s.toml:12: workload.job: thread: ignored: it does not change the I/O\n"
