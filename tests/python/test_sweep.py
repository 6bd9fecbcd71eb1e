"""blkstack sweep: sweep files, the table, resuming, and the backends.

The base scenario is conftest's TINY: four O_DIRECT dd reads of 1 MiB from a
SATA disk. Each read is one 1 MiB bio, split to max_sectors_kb
(bio_split_to_limits): at 64 KiB it becomes 16 requests, at 128 KiB 8, so
the run issues 64 or 32 requests of 64 or 128 KiB; split pieces do not merge
back (a merge may not pass max_sectors). max_sectors_kb = 2 is below one
page, which the kernel refuses (queue_max_sectors_store): that point fails.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import TINY, assert_one_error_line, run_cli

import blkstack
from blkstack.sweep_run import load_table, run_spec
from blkstack.sweep_figures import MEASURED
from blkstack.sweep_spec import MAX_POINTS, SweepError, build_spec, read_spec

AXIS = "disks.sda.queue.max_sectors_kb"


def spec_file(tmp_path: Path, body: str, name: str = "s.sweep.toml") -> Path:
    (tmp_path / "tiny.toml").write_text(TINY)
    path = tmp_path / name
    path.write_text('scenario = "tiny.toml"\n' + body)
    return path


GRID = f"""
[grid]
kernel = ["6.1", "6.12"]
"{AXIS}" = [64, 128, 2]
"""


def results(frame):
    """The table without what is measured rather than modelled (wall time)."""
    return frame.drop(columns=list(MEASURED)).reset_index(drop=True)


def test_grid_table_rows_and_failed_point(tmp_path):
    df = blkstack.sweep(spec_file(tmp_path, GRID), workers=1)
    # 2 kernels x 3 values = 6 points; one device each, the failed ones one row.
    assert list(df["point"]) == [0, 1, 2, 3, 4, 5]
    assert list(df["kernel"]) == ["6.1"] * 3 + ["6.12"] * 3
    ok = df[df["error"].isna()]
    assert list(ok["device"]) == ["sda"] * 4
    assert list(ok["requests"]) == [64, 32, 64, 32]
    assert list(ok["mean_request_kib"]) == [64.0, 128.0, 64.0, 128.0]
    bad = df[df["error"].notna()]
    assert list(bad[AXIS]) == [2, 2]
    assert all("below the logical block size" in e for e in bad["error"])


def test_backends_and_worker_counts_give_identical_tables(tmp_path):
    path = spec_file(tmp_path, GRID)
    one = blkstack.sweep(path, workers=1)
    two = blkstack.sweep(path, workers=2, batch=1)
    assert results(one).equals(results(two))


def test_ray_local_cluster_gives_the_same_table(tmp_path):
    ray = pytest.importorskip("ray")
    path = spec_file(tmp_path, GRID)
    pool = blkstack.sweep(path, workers=2)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             configure_logging=False)
    try:
        on_ray = blkstack.sweep(path, ray=True, batch=2)
    finally:
        ray.shutdown()
    assert results(pool).equals(results(on_ray))


def test_parquet_and_csv_written_and_loaded(tmp_path):
    path = spec_file(tmp_path, GRID)
    out, csv = tmp_path / "t.parquet", tmp_path / "t.csv"
    df = blkstack.sweep(path, out=str(out), csv=str(csv), workers=1)
    back = load_table(str(out))
    assert results(back).equals(results(df))
    assert list(load_table(str(csv))["requests"].dropna()) == [64, 32, 64, 32]


def test_rerun_reuses_finished_points_and_runs_the_rest(tmp_path):
    out = str(tmp_path / "t.parquet")
    small = read_spec(str(spec_file(tmp_path, f'[grid]\n"{AXIS}" = [64]\nkernel = ["6.12"]\n')))
    _, first = run_spec(small, out=out, workers=1)
    assert (first.ran, first.reused) == (1, 0)
    big = read_spec(str(spec_file(tmp_path, f'[grid]\n"{AXIS}" = [64, 128]\nkernel = ["6.12"]\n')))
    table, second = run_spec(big, out=out, workers=1)
    # The point (64, 6.12) has the same resolved scenario: it is reused.
    assert (second.ran, second.reused) == (1, 1)
    assert list(table["requests"]) == [64, 32]
    _, third = run_spec(big, out=out, workers=1)
    assert (third.ran, third.reused) == (0, 2)


def test_zip_random_and_wildcard_points(tmp_path):
    spec = read_spec(str(spec_file(tmp_path, """
[zip]
"disks.*.queue.max_sectors_kb" = [64, 128]
"workload.count" = [2, 4]
[random]
n = 3
"disks.sda.queue.nr_requests" = { min = 4, max = 64 }
""")))
    assert len(spec.points) == 2 * 3
    # '*' expands to every disk of the base scenario (sda only).
    assert spec.points[0].sets[0] == "disks.sda.queue.max_sectors_kb=64"
    assert spec.points[0].sets[1] == "workload.count=2"
    again = read_spec(spec.path)
    assert [p.sets for p in again.points] == [p.sets for p in spec.points]  # seeded


@pytest.mark.parametrize("body, line, needle", [
    (f'[grid]\n"disks.sda.queue.max_sectorz_kb" = [64]\n', 3, "unknown key"),
    (f'[grid]\n"{AXIS}" = ["lots"]\n', 3, "expected a non-negative integer"),
    (f'[grid]\nkernel = ["6.12"]\n"{AXIS}" = []\n', 4, "empty axis"),
    ('[grid]\nkernel = ["9.9"]\n', 3, "unknown kernel profile"),
    ('[zip]\n"workload.count" = [1, 2]\n"workload.bs" = ["1M"]\n', 3, "one length"),
    ('[grid\n', 2, "not valid TOML"),
    ('devices = ["sdb"]\n[grid]\nkernel = ["6.12"]\n', 2, "'sdb' is not a device of the scenario"),
    ('[grid]\nbs = [1]\n', 3, "unknown axis"),
])
def test_bad_sweep_files_name_file_line_and_key(tmp_path, body, line, needle):
    path = spec_file(tmp_path, body)
    with pytest.raises(SweepError) as err:
        read_spec(str(path))
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert needle in str(err.value)


def test_grid_over_the_limit_needs_yes(tmp_path):
    # 10 axes of 6 values: 6**10 = 60,466,176 points, over MAX_POINTS.
    axes = "".join(f'"workload.x{i}" = [1, 2, 3, 4, 5, 6]\n' for i in range(10))
    path = spec_file(tmp_path, "[grid]\n" + axes)
    with pytest.raises(SweepError, match=f"60,466,176 points is more than {MAX_POINTS:,}"):
        read_spec(str(path))


def test_cli_bad_sweep_file_is_one_error_line(tmp_path):
    path = spec_file(tmp_path, f'[grid]\n"disks.sda.queue.max_sectorz_kb" = [64]\n')
    proc = run_cli("sweep", path, "--out", tmp_path / "t.parquet")
    assert_one_error_line(proc, f"{path}:3: grid.disks.sda.queue.max_sectorz_kb")
    assert not (tmp_path / "t.parquet").exists()


def test_cli_sweep_file_that_is_not_utf8_is_one_error_line(tmp_path):
    # Found by fuzz/cli_fuzz.py: a mutated byte in a comment was an
    # internal error (UnicodeDecodeError). Line 1 is 18 bytes with its
    # newline, "# 64 " 5 more: the bad byte is at offset 23, on line 2.
    path = tmp_path / "x.sweep.toml"
    path.write_bytes(b'scenario = "demo"\n# 64 \xe7\x8b KiB\n[grid]\nkernel = ["6.1"]\n')
    assert_one_error_line(run_cli("sweep", path, "--out", tmp_path / "t.parquet"),
                          f"{path}:2: not UTF-8 text (at byte offset 23)")
    assert not (tmp_path / "t.parquet").exists()


def test_cli_sweep_stopped_by_sigterm_keeps_its_table_and_exits_143(tmp_path):
    # Found by fuzz/cli_fuzz.py: SIGTERM gave Ctrl-C's status 130. The
    # finished points' table is kept (a rerun resumes from it), and the
    # status names the signal, 128 + 15.
    import os
    import signal
    import sys
    import time
    # Enough points that the sweep is still running when its table is first
    # written (every few seconds): 2,000 tiny points now finish in that
    # time, so 1,000 counts (each fits the tiny disk) by 20 max_sectors_kb.
    counts = ", ".join(str(n) for n in range(1, 1001))
    sizes = ", ".join(str(4 * n) for n in range(1, 21))
    path = spec_file(tmp_path, f'[grid]\n"workload.count" = [{counts}]\n"{AXIS}" = [{sizes}]\n')
    out = tmp_path / "t.parquet"
    env = dict(os.environ)
    env.pop("BLKSTACK_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "blkstack", "sweep", str(path), "--out", str(out), "-q",
                             "--workers", "1"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not out.exists():  # the table is first written a few seconds in
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, stderr
    assert "interrupted: the table holds the finished points" in stderr and "Traceback" not in stderr
    assert 0 < load_table(str(out))["point"].nunique() < 20000


def test_cli_sweep_writes_table(tmp_path):
    path = spec_file(tmp_path, GRID)
    proc = run_cli("sweep", path, "--out", tmp_path / "t.parquet", "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    assert "6 of 6 points (6 ran; 2 failed)" in proc.stderr
    assert len(load_table(str(tmp_path / "t.parquet"))) == 6


def test_python_mapping_spec(tmp_path):
    (tmp_path / "tiny.toml").write_text(TINY)
    spec = build_spec({"scenario": str(tmp_path / "tiny.toml"), "grid": {AXIS: [64]}}, check=True)
    assert spec.points[0].sets == (f"{AXIS}=64",)


def test_plot_and_report_of_a_sweep_table(tmp_path):
    path = spec_file(tmp_path, GRID)
    out = tmp_path / "t.parquet"
    blkstack.sweep(path, out=str(out), workers=1)
    proc = run_cli("plot", out, "--x", AXIS, "--y", "requests", "--hue", "kernel", "--out", tmp_path / "plots")
    assert proc.returncode == 0, proc.stderr
    assert [Path(p).name for p in proc.stdout.split()] == [
        f"sweep-requests-vs-disks.sda.queue.max_sectors_kb-by-kernel-sda.png"]
    proc = run_cli("plot", out, "--x", "nope", "--y", "requests", "--out", tmp_path / "plots")
    assert_one_error_line(proc, "--x nope: not an axis of this sweep")
    proc = run_cli("report", out, "--out", tmp_path / "r.html", "--y", "requests", "--format", "png")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text()
    # The best (highest) request count per kernel is the 64 KiB point: 64.
    assert "Best point per kernel on sda" in html and "Failed points" in html


def test_interrupt_leaves_a_partial_table_and_the_rerun_runs_the_rest(tmp_path, monkeypatch):
    import blkstack.sweep_figures as figures

    spec = read_spec(str(spec_file(tmp_path, GRID)))
    out = str(tmp_path / "t.parquet")
    real = figures.point_rows
    calls = []

    def interrupted_third(*args):
        # Ctrl-C arrives during the third point (one worker: in this process).
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(figures, "point_rows", interrupted_third)
    with pytest.raises(KeyboardInterrupt):
        run_spec(spec, out=out, workers=1)
    partial = load_table(out)
    assert list(partial["point"]) == [0, 1]
    monkeypatch.setattr(figures, "point_rows", real)
    table, state = run_spec(spec, out=out, workers=1)
    assert (state.reused, state.ran) == (2, 4)
    assert list(table["point"]) == [0, 1, 2, 3, 4, 5]


def test_progress_line():
    from blkstack.sweep_run import Progress

    bar = Progress(10, 2, enabled=False)
    bar.start = 100.0
    for failed in (False, True, False, False):
        bar.update(failed)
    # 4 of 10 in 2 s: 2 points/s, 6 left take 3 s; 4/10 of 20 columns is 8.
    assert bar.text(102.0) == "sweep [########            ] 4/10 points  1 failed  2.0 points/s  ETA 0:03  (2 reused)"


def test_latency_percentiles_are_fios_bucket_midpoints(tmp_path):
    # null_blk in timer mode (irqmode=2, completion_nsec=50000) completes
    # every request 50 µs after issue, so each D2C is 50,000 ns. fio's
    # latency buckets (6 bits): the top bit is 2^15, 9 error bits, offset
    # (50000 >> 9) & 63 = 97 & 63 = 33, so the bucket's midpoint is
    # 2^15 + (2·33 + 1) · 2^8 = 49,920 ns: every percentile is 0.04992 ms.
    from blkstack.sweep_figures import point_rows

    scenario = tmp_path / "nullb.toml"
    scenario.write_text('[disks.nullb0]\nkind = "null_blk"\nsize = "1GiB"\n'
                        'null_blk = { irqmode = 2, completion_nsec = 50000 }\n'
                        '[workload]\ntype = "dd"\nif = "/dev/nullb0"\nof = "/dev/null"\n'
                        'bs = "4k"\ncount = 16\niflag = "direct"\n')
    (row,) = point_rows(str(scenario), None, [])["rows"]
    for p in ("p50", "p90", "p99", "p99.9"):
        assert row[f"d2c_{p}_ms"] == pytest.approx(0.04992, abs=1e-12)
    assert row["d2c_avg_ms"] == pytest.approx(0.05)
