"""Independent runs in parallel: the engine releases the GIL, and seeds,
compare, report and plot run their runs on threads (--jobs). The output is
the same byte for byte with one job and with two, and errors and Ctrl-C
behave as in a loop."""

from __future__ import annotations

import threading

import pytest

from blkstack import _core
from blkstack.cli.parallel import Runs
from blkstack.cli.scenarios import builtin_scenarios

from conftest import run_cli


def builtin(name: str) -> str:
    return str(builtin_scenarios()[name])


def both(*args: object) -> tuple:
    """The command's standard output with --jobs 1 and with --jobs 2."""
    outs = []
    for jobs in ("1", "2"):
        proc = run_cli(*args, "--jobs", jobs)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    return tuple(outs)


@pytest.mark.parametrize("fmt", [[], ["--json", "-"]], ids=["text", "json"])
def test_seeds_same_with_one_and_two_jobs(fmt):
    # raid5-recursive-split: two sides, a variant scenario of its own and
    # figures read from the runs' traces; bio-align: variants by --set.
    one, two = both("seeds", "raid5-recursive-split", *fmt)
    assert one == two and one
    one, two = both("seeds", "bio-align", *fmt)
    assert one == two and one


@pytest.mark.parametrize("fmt", [[], ["--json", "-"]], ids=["text", "json"])
def test_compare_same_with_one_and_two_jobs(fmt):
    one, two = both("compare", builtin("plug-order"), *fmt)
    assert one == two and one


def test_report_same_with_one_and_two_jobs(tmp_path, tiny):
    pages = []
    for jobs in ("1", "2"):
        out = tmp_path / f"r{jobs}.html"
        proc = run_cli("report", tiny, "--kernel", "6.1", "--kernel", "6.12", "--jobs", jobs, "--out", out, "-q")
        assert proc.returncode == 0, proc.stderr
        pages.append(out.read_bytes())
    assert pages[0] == pages[1]


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_jobs_must_be_a_whole_number_of_one_or_more(bad):
    proc = run_cli("seeds", "bio-align", "--jobs", bad)
    assert proc.returncode == 2
    assert proc.stderr.startswith("blkstack: error:") and "--jobs" in proc.stderr


def _fails(message: str):
    raise ValueError(message)


@pytest.mark.parametrize("jobs", [1, 2])
def test_first_error_in_submission_order_wins(jobs):
    # As a loop would: the first failing call, in the order submitted,
    # is the error raised, whichever finishes first.
    seen = []
    with pytest.raises(ValueError, match="first"):
        with Runs(jobs) as runs:
            futures = [runs.submit(seen.append, 0), runs.submit(_fails, "first"), runs.submit(_fails, "second")]
            for f in futures:
                f.result()
    assert seen == [0]


def test_one_job_runs_each_call_when_its_result_is_read():
    order = []
    with Runs(1) as runs:
        a = runs.submit(order.append, "a")
        b = runs.submit(order.append, "b")
        assert order == []
        b.result()
        a.result()
    assert order == ["b", "a"]


def test_interrupt_stops_runs_in_other_threads_and_not_later_ones():
    # Seed 002 before its fix: ~22 million bios, many ticks of the engine.
    # interrupt() is called until the run returns, so it lands between the
    # run's start and one of its ticks whatever the scheduling.
    path = builtin("raid10-discard")
    outcome = {}
    done = threading.Event()

    def long_run():
        try:
            _core.run(path, "5.8")
            outcome["result"] = "finished"
        except KeyboardInterrupt:
            outcome["result"] = "interrupted"
        finally:
            done.set()

    worker = threading.Thread(target=long_run)
    worker.start()
    while not done.is_set():
        _core.interrupt()
        done.wait(0.001)
    worker.join()
    assert outcome["result"] == "interrupted"
    # A run started afterwards is not affected.
    assert '"devices"' in _core.run(builtin("bio-align"))


def test_seeds_start_the_slow_seed_first():
    # Seed 002 (index 2 of 000-004) is the one with quick overrides, for
    # its 22 million bios: its runs start first on threads; quick runs, all
    # small, keep the seeds' order.
    from blkstack import seeds as S
    from blkstack.cli.seeds import slow_first

    assert [s.number for s in S.SEEDS] == ["000", "001", "002", "003", "004"]
    assert slow_first(S.SEEDS, quick=False) == [2, 0, 1, 3, 4]
    assert slow_first(S.SEEDS, quick=True) == [0, 1, 2, 3, 4]
