"""fio's `cpu` line (usr, sys, ctx, majf, minf) from the host CPU model:
the kernel time charged to the job's task and the times it slept and was
woken; zeros without the model (docs/scenario.md, type = "fio")."""

from __future__ import annotations

import json

from conftest import run_cli

NVME = """\
kernel = "6.12"
{host}
[disks.nvme0n1]
kind = "nvme"
size = "1GiB"
[workload]
type = "dd"
if = "/dev/nvme0n1"
of = "/dev/null"
bs = "4k"
count = 1
iflag = "direct"
"""

# 65,536 sequential 4 KiB O_DIRECT preads, one at a time.
JOB = ["--name=r", "--rw=read", "--bs=4k", "--size=256M", "--ioengine=psync", "--direct=1",
       "--filename=/dev/nvme0n1"]


def job_of(tmp_path, host: str, *extra: str) -> dict:
    (tmp_path / "nvme.toml").write_text(NVME.format(host=host))
    proc = run_cli("fio", "--stack", "nvme.toml", *JOB, *extra, "--output-format=json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["jobs"][0]


def test_cpu_line_is_the_host_models_estimate(tmp_path):
    job = job_of(tmp_path, '[host]\ncpu = "server"')
    # Each pread, on the "server" costs (src/host_cpu.rs): one system call
    # (100 ns), the unit (60), a bio with one page (40 + 15), the bio
    # through submit_bio (30), a tag and request (40), the plug's flush
    # (30) and ->queue_rq (80): 395 ns; every pread after the first also
    # reaps the previous completion (50): 65,536 * 445 - 50 = 29,163,470 ns,
    # which fio keeps as 29 whole ms. The completion interrupts are not the
    # task's. sys = 100 * 29 / the job's run time in ms.
    assert job["sys_cpu"] == round(100 * 29 / job["job_runtime"], 6)
    # A psync job sleeps in each pread until its read completes: 65,536
    # wake-ups. fio's user time and page faults are not modelled.
    assert job["ctx"] == 65536
    assert (job["usr_cpu"], job["majf"], job["minf"]) == (0.0, 0, 0)
    # The text line says the same, to two decimals.
    (tmp_path / "nvme.toml").write_text(NVME.format(host='[host]\ncpu = "server"'))
    text = run_cli("fio", "--stack", "nvme.toml", *JOB, cwd=tmp_path).stdout
    assert f"  cpu          : usr=0.00%, sys={100 * 29 / job['job_runtime']:.2f}%, ctx=65536, majf=0, minf=0\n" in text


def test_cpu_line_is_zero_without_the_host_model(tmp_path):
    job = job_of(tmp_path, "")
    assert (job["usr_cpu"], job["sys_cpu"], job["ctx"], job["majf"], job["minf"]) == (0.0, 0.0, 0, 0, 0)
