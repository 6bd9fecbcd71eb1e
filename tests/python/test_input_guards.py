"""Options and inputs refused up front, with one clear line: outputs that
cannot be written, iostat intervals the kernel's accounting cannot give,
scenarios with nothing to run, fio's arguments as the user wrote them."""

from __future__ import annotations

import os

import pytest

import blkstack

from conftest import TINY, assert_one_error_line, replace_once, run_cli

NVME = """\
[disks.nvme0n1]
kind = "nvme"
size = "8GiB"
"""


def test_report_out_where_no_file_can_be_made_fails_before_the_work(tmp_path, write_scenario):
    # /proc refuses new files even to root, for whom os.access says yes;
    # the error comes before any run and names the user's path.
    scenario = write_scenario()
    out = "/proc/blkstack-report.html"
    line = assert_one_error_line(run_cli("report", scenario, "--out", out), f"--out {out}: ")
    assert ".tmp" not in line
    if os.geteuid() == 0:
        assert "cannot write there" in line


@pytest.mark.parametrize("value", ["nan", "inf", "0.001", "1e-9", "-1", "0"])
def test_run_interval_that_iostat_cannot_give_is_refused(write_scenario, value):
    assert_one_error_line(run_cli("run", write_scenario(), "--interval", value, "--quiet"), f"--interval ")


def test_stats_interval_below_a_jiffy_is_refused(tmp_path):
    trace = tmp_path / "t.txt"
    trace.write_text("  8,0    0        1     0.000000000   500  D   W 0 + 8 [dd]\n")
    assert_one_error_line(run_cli("stats", trace, "--interval", "0.001"), "below one jiffy")


def test_python_run_refuses_a_negative_interval(write_scenario):
    with pytest.raises(ValueError, match="--interval -1"):
        blkstack.run(write_scenario(), interval=-1)


def test_interval_summary_keeps_the_run_time(write_scenario):
    # TINY's four 1 MiB reads end within a few ms; an --interval 0.5 sample
    # due afterwards does not make the run "simulated 500 ms".
    r = blkstack.run(write_scenario(), interval=0.5, events=False)
    assert r["sim_time_ns"] < 100_000_000


@pytest.mark.parametrize("text,needle", [("", "the scenario is empty"), (NVME, "no [workload] table")])
def test_a_scenario_with_nothing_to_run_is_an_error(write_scenario, text, needle):
    assert_one_error_line(run_cli("run", write_scenario(text)), needle)


def test_fio_errors_name_fio_not_a_set_key(write_scenario):
    stack = write_scenario(NVME, "nvme.toml")
    line = assert_one_error_line(run_cli("fio", "--stack", stack, "--name=bw", "--rw=randwrote", "--size=1M"),
                                 "fio: command line argument 2: rw: 'randwrote'")
    assert "--set" not in line
    # A --set the user gave still names itself.
    assert_one_error_line(run_cli("fio", "--stack", stack, "--set", "disks.nvme0n1.queue.nomerges=7", "--name=bw",
                                  "--rw=read", "--size=1M"), "nomerges")


def test_fio_numjobs_beyond_fios_limit_is_refused(write_scenario):
    stack = write_scenario(NVME, "nvme.toml")
    assert_one_error_line(run_cli("fio", "--stack", stack, "--name=bw", "--rw=read", "--size=1M",
                                  "--numjobs=100000000"), "numjobs", "4088")


def test_fio_value_less_flags(write_scenario):
    stack = write_scenario(NVME, "nvme.toml")
    proc = run_cli("fio", "--stack", stack, "--name=bw", "--stonewall", "--rw=write", "--size=64k", "--direct=1",
                   "--new_group", "--hipri")
    assert proc.returncode == 0, proc.stderr
    assert "WRITE: bw=" in proc.stdout


def test_fio_help_shows_the_job_file(tmp_path):
    proc = run_cli("fio", "--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: blkstack fio [JOBFILE ...]")
    assert "JOBFILE ..." in proc.stdout.split("options:")[0].split("usage:")[1]


def test_nr_requests_above_the_kernel_maximum_is_refused(write_scenario):
    # sata with mq-deadline: scheduler tags grow to MAX_SCHED_RQ = 2048.
    text = replace_once(TINY, "max_sectors_kb = 128", "max_sectors_kb = 128\nnr_requests = 4096")
    assert_one_error_line(run_cli("run", write_scenario(text)), "nr_requests", "EINVAL")
    text = replace_once(TINY, "max_sectors_kb = 128", "max_sectors_kb = 128\nnr_requests = 2048")
    assert run_cli("run", write_scenario(text), "--quiet").returncode == 0
