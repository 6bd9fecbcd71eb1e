"""``blkstack plot`` and the plots module."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import blkstack
from blkstack import plots

from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).resolve().parent.parent / "data"
PNG = b"\x89PNG\r\n\x1a\n"
KINDS = ("lba", "sizes", "seeks", "depth", "throughput")


def test_op_of_rwbs():
    # A leading F before the op letter is a preflush; on an empty write,
    # or before the flush op itself ("FF"), the request is a flush.
    assert [plots.op_of(r) for r in ("R", "RA", "WS", "WFS", "FWS", "D", "DE", "N")] == \
        ["read", "read", "write", "write", "write", "discard", "discard", "other"]
    assert plots.op_of("FWS", 0) == "flush" and plots.op_of("FF") == "flush"


def test_series_of_the_readme_run(tiny):
    # 4 dd reads of 1 MiB at queue depth 1, each split into 8 requests of
    # 256 sectors issued together: 32 Ds and 32 Cs, at most 8 in the driver,
    # 4 MiB completed.
    s = plots.device_series(blkstack.run(tiny))["sda"]
    assert (len(s.issue_t), len(s.done_t), s.issue_action) == (32, 32, "D")
    assert set(s.issue_sectors) == {256}
    assert sorted(s.issue_sector) == [256 * i for i in range(32)]
    t, depth = plots._depth_steps(s)
    assert (depth.max(), depth[-1], len(t)) == (8, 0, 64)
    assert s.done_bytes.sum() == 4 << 20
    assert set(plots.OPS[i] for i in s.issue_op) == {"read"}


def test_depth_of_a_trace_started_mid_flight():
    # The blkparse sample's WSV request (D, C) and sdb's read: at most one
    # request at a time on sdb; on sda the two reads overlap (2), then one
    # write, then one write.
    r = blkstack.load_trace(DATA / "blkparse-sda-sdb.txt")
    series = plots.device_series(r)
    assert sorted(series) == ["sda", "sdb"]
    _, depth = plots._depth_steps(series["sda"])
    assert list(depth) == [1, 2, 1, 0, 1, 0, 1, 0]
    _, depth = plots._depth_steps(series["sdb"])
    assert list(depth) == [1, 0]


def test_plot_names_and_files(tiny, tmp_path):
    out = tmp_path / "plots"
    proc = run_cli("plot", tiny, "--out", out)
    assert proc.returncode == 0, proc.stderr
    # One run: no prefix; sda issued requests, so all five kinds.
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{k}-sda.png" for k in KINDS)
    assert proc.stdout.split() == [str(out / f"{k}-sda.png") for k in KINDS]
    for p in out.iterdir():
        assert p.read_bytes().startswith(PNG)


def test_plot_two_kernels_svg(tiny, tmp_path):
    proc = run_cli("plot", tiny, "--kernel", "6.1", "--kernel", "7.2", "--format", "svg", "--out", tmp_path, "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    names = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".svg")
    want = [f"{prefix}-{k}-sda.svg" for prefix in ("6.1", "7.2", "compare") for k in KINDS]
    assert names == sorted(want)
    svg = ET.parse(tmp_path / "compare-lba-sda.svg").getroot()
    assert svg.tag.endswith("svg")
    # The overlay's legend names both runs.
    text = (tmp_path / "compare-lba-sda.svg").read_text()
    assert "6.1" in text and "7.2" in text


def test_plot_a_saved_trace(tiny, tmp_path):
    # A run saved as a trace plots the same devices as the run itself.
    assert run_cli("run", tiny, "--trace", tmp_path / "t.txt", "-q").returncode == 0
    proc = run_cli("plot", tmp_path / "t.txt", "--out", tmp_path / "p", "-q")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == sorted(f"{k}-sda.png" for k in KINDS)


def test_plot_errors(tiny, tmp_path):
    assert_one_error_line(run_cli("plot", tiny), "--out DIR is required")
    (tmp_path / "file").write_text("x")
    assert_one_error_line(run_cli("plot", tiny, "--out", tmp_path / "file"), "not a directory")
    assert_one_error_line(run_cli("plot", DATA / "blkparse-sda-sdb.txt", "--kernel", "6.1", "--out", tmp_path),
                          "--kernel applies to scenarios")
    assert_one_error_line(run_cli("plot", tmp_path / "nope.toml", "--out", tmp_path), "no such file")
    assert_one_error_line(run_cli("plot", tiny, "--format", "gif", "--out", tmp_path), "invalid choice")
    bad = tmp_path / "bad.toml"
    bad.write_text("[disks.sda]\nkind = 'floppy'\n")
    assert_one_error_line(run_cli("plot", bad, "--out", tmp_path), "bad.toml")
    # Nothing was written for the failed runs.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml", "file", "tiny.toml"]


def test_file_names_are_safe():
    assert plots.file_name("lba-259,0", "png") == "lba-259_0.png"
    assert plots.file_name("lba-vg/lv", "svg") == "lba-vg_lv.svg"
    assert plots.label_runs(["6.1", "6.1", "a b"]) == ["6.1", "6.1-2", "a_b"]
