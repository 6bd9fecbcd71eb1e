"""The ``blkstack`` command line, run as ``python -m blkstack`` in a subprocess."""

from __future__ import annotations

import importlib.resources
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import blkstack

from conftest import TINY, assert_one_error_line, replace_once, run_cli

VOLATILE = ("wall_time_s", "engine_cpu_s", "bios_per_s")


def _stable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in VOLATILE and k != "scenario"}


def _files(directory: Path) -> list:
    return sorted(p.name for p in directory.iterdir())


# --------------------------------------------------------------------------
# blkstack run: success
# --------------------------------------------------------------------------


def test_run_prints_a_summary(tiny, tmp_path):
    proc = run_cli("run", tiny.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    for needle in ("sda", "sata", "8:0", "6.12", "BIOS Q", "SPLITS", "REQUESTS", "SECT READ",
                   "SECT WRITTEN", "SECT DISCARDED", "simulated", "wall", "bios/s"):
        assert needle in out, needle
    row = next(line for line in out.splitlines() if line.startswith("sda "))
    assert row.split()[3:9] == ["4", "28", "32", "8,192", "0", "0"], row
    assert _files(tmp_path) == ["tiny.toml"]


def test_run_names_where_zone_writes_failed(tmp_path):
    # zoned-split-order, worked by hand in tests/zoned_split_order.rs: 48
    # writes fail in 6.12 and 6.1, before the disk with 6.12's zone write
    # plugging and at the disk in 6.1, and every zone's writes came out of
    # order; 7.2 encrypts above the block layer and writes in order.
    scenario = importlib.resources.files("blkstack") / "scenarios" / "zoned-split-order.toml"
    out_of_order = "writes submitted out of order in 8 of 8 zones written"
    expected = {
        "6.12": f"sda: 48 zone write errors (48 failed by zone write plugging); {out_of_order}",
        "6.1": f"sda: 48 zone write errors (48 refused by the disk); {out_of_order}",
        "7.2": "sda: 0 zone write errors; writes submitted in order in all 8 zones written",
    }
    with importlib.resources.as_file(scenario) as path:
        for kernel, want in expected.items():
            proc = run_cli("run", str(path), "--kernel", kernel, cwd=tmp_path)
            assert proc.returncode == 0, proc.stderr
            line = next(l for l in proc.stdout.splitlines() if l.startswith("sda: "))
            assert line == want, (kernel, line)


def test_run_json_to_stdout(tiny, tmp_path):
    proc = run_cli("run", tiny.name, "--json", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["devices"]["sda"]["requests"] == 32
    assert summary["devices"]["sda"]["splits"] == 28
    # stdout carries the JSON, so the human summary went to stderr.
    assert "SPLITS" in proc.stderr
    assert proc.stdout.startswith("{\n  ")  # pretty, indent 2


def test_run_json_to_file(tiny, tmp_path):
    out = tmp_path / "summary.json"
    out.write_text("old contents")  # replaced whole
    proc = run_cli("run", tiny.name, "--json", out.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "SPLITS" in proc.stdout
    text = out.read_text()
    assert text.startswith("{\n  ") and text.endswith("}\n")
    summary = json.loads(text)
    assert _stable(summary) == _stable(blkstack.run(tiny))
    assert _files(tmp_path) == ["summary.json", "tiny.toml"]  # no temp file left


def test_run_trace_to_stdout(tiny, tmp_path):
    proc = run_cli("run", tiny.name, "--trace", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "no trace on stdout"
    assert "SPLITS" not in proc.stdout
    assert "SPLITS" in proc.stderr and "sda" in proc.stderr
    proc2 = run_cli("run", tiny.name, "--trace", "t.trace", cwd=tmp_path)
    assert proc2.returncode == 0, proc2.stderr
    assert (tmp_path / "t.trace").read_text() == proc.stdout


def test_run_trace_requests_and_json_files(tiny, tmp_path):
    proc = run_cli("run", tiny.name, "--trace", "t.trace", "--requests", "r.csv", "--json", "s.json",
                   "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert _files(tmp_path) == ["r.csv", "s.json", "t.trace", "tiny.toml"]
    assert (tmp_path / "t.trace").stat().st_size > 0
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 1 + 32


def test_run_kernel_and_set(tiny, tmp_path):
    proc = run_cli("run", tiny.name, "--kernel", "6.1", "--set", "disks.sda.queue.max_sectors_kb=64",
                   "--json", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["profile"] == "6.1"
    assert summary["devices"]["sda"]["requests"] == 64


# --------------------------------------------------------------------------
# blkstack run: bad input
# --------------------------------------------------------------------------

# (id, scenario text or None for "no file", extra arguments, text the error must name)
BAD_INPUTS = [
    ("malformed-toml", replace_once(TINY, 'size = "1GiB"', 'size = "1GiB'), [], ["bad.toml:4"]),
    ("unknown-key", replace_once(TINY, 'kind = "sata"', 'kind = "sata"\ncolour = "blue"'), [],
     ["bad.toml", "colour"]),
    ("wrong-type", replace_once(TINY, "count = 4", 'count = "four"'), [], ["bad.toml", "count"]),
    ("max-sectors-below-block-size",
     replace_once(replace_once(TINY, "logical_block_size = 512", "logical_block_size = 4096"),
                  "max_sectors_kb = 128", "max_sectors_kb = 2"), [], ["bad.toml", "max_sectors_kb"]),
    ("block-size-not-power-of-two", replace_once(TINY, "logical_block_size = 512", "logical_block_size = 1000"),
     [], ["bad.toml", "logical_block_size"]),
    ("io-beyond-device-end", replace_once(TINY, "count = 4", "count = 2048"), [], ["bad.toml", "count"]),
    ("unaligned-direct-io", replace_once(TINY, 'bs = "1M"', 'bs = "1000"'), [], ["bad.toml", "bs"]),
    ("unknown-set-key", TINY, ["--set", "disks.sda.queue.no_such_limit=1"], ["--set", "no_such_limit"]),
    ("set-without-equals", TINY, ["--set", "disks.sda.queue.max_sectors_kb"], ["--set", "max_sectors_kb"]),
    ("unknown-option", TINY, ["--no-such-option"], ["--no-such-option"]),
    ("unknown-kernel", TINY, ["--kernel", "5.4"], ["--kernel", "5.4"]),
    ("missing-file", None, [], ["bad.toml: no such file"]),
]


@pytest.mark.parametrize("text,extra,needles", [pytest.param(*case[1:], id=case[0]) for case in BAD_INPUTS])
def test_bad_input_is_one_error_line_and_writes_nothing(tmp_path, text, extra, needles):
    if text is not None:
        (tmp_path / "bad.toml").write_text(text)
    before = _files(tmp_path)
    proc = run_cli("run", "bad.toml", *extra, "--trace", "t.trace", "--requests", "r.csv", "--json", "s.json",
                   cwd=tmp_path)
    assert_one_error_line(proc, *needles)
    assert proc.stdout == ""
    assert _files(tmp_path) == before  # no output file, no temp file


def test_bad_input_keeps_an_existing_output_file(tmp_path):
    (tmp_path / "bad.toml").write_text(replace_once(TINY, "count = 4", 'count = "four"'))
    (tmp_path / "s.json").write_text("previous")
    proc = run_cli("run", "bad.toml", "--json", "s.json", cwd=tmp_path)
    assert_one_error_line(proc, "bad.toml", "count")
    assert (tmp_path / "s.json").read_text() == "previous"


def test_run_requests_to_stdout(tiny, tmp_path):
    proc = run_cli("run", tiny.name, "--requests", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "device,seq,time_ns,rwbs,sector,nr_sectors"
    assert len(lines) == 1 + 32
    assert "SPLITS" in proc.stderr


@pytest.mark.parametrize("outputs", [("--trace", "--json"), ("--trace", "--requests"), ("--requests", "--json"),
                                     ("--trace", "--requests", "--json")])
def test_only_one_output_can_use_stdout(tiny, tmp_path, outputs):
    args = [arg for opt in outputs for arg in (opt, "-")]
    proc = run_cli("run", tiny.name, *args, cwd=tmp_path)
    assert_one_error_line(proc, *outputs)
    assert proc.stdout == ""


def test_output_into_a_missing_directory(tiny, tmp_path):
    proc = run_cli("run", tiny.name, "--trace", "t.trace", "--json", "nodir/s.json", cwd=tmp_path)
    assert_one_error_line(proc, "nodir")
    assert _files(tmp_path) == ["tiny.toml"]


def test_scenario_is_a_directory(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    assert_one_error_line(run_cli("run", "dir.toml", cwd=tmp_path), "dir.toml")


def test_missing_scenario_argument(tmp_path):
    assert_one_error_line(run_cli("run", cwd=tmp_path), "SCENARIO")


def test_missing_and_unknown_command(tmp_path):
    assert_one_error_line(run_cli(cwd=tmp_path), "COMMAND")
    assert_one_error_line(run_cli("frobnicate", cwd=tmp_path), "frobnicate")


# --------------------------------------------------------------------------
# Other commands
# --------------------------------------------------------------------------


@pytest.mark.parametrize("command", [None, "run", "demo", "profiles", "scenarios"])
def test_help_teaches_with_an_example(command):
    args = ["--help"] if command is None else [command, "--help"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert out.startswith("usage: blkstack")
    assert "examples:" in out
    example = "  blkstack " + (command or "")
    examples = out.split("examples:", 1)[1]
    assert example in examples, out


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"blkstack {blkstack.__version__}"


def test_profiles_table():
    data = blkstack.profiles()
    proc = run_cli("profiles")
    assert proc.returncode == 0, proc.stderr
    for prof in data["profiles"]:
        assert prof["name"] in proc.stdout and prof["kernel"] in proc.stdout
    for switch in data["switches"]:
        assert switch["name"] in proc.stdout
        row = next(line for line in proc.stdout.splitlines() if line.split()[:1] == [switch["name"]])
        values = [switch["per_profile"][p["name"]] for p in data["profiles"]]
        assert row.split()[1:] == [json.dumps(v) if isinstance(v, bool) else str(v) for v in values]
        # The description is there too (wrapped, so compare its first words).
        first_words = " ".join(switch["description"].split()[:3])
        assert first_words in " ".join(proc.stdout.split())


def test_profiles_json():
    proc = run_cli("profiles", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == blkstack.profiles()


def _builtin():
    folder = importlib.resources.files("blkstack").joinpath("scenarios")
    try:
        return {e.name[:-5]: e.read_text(encoding="utf-8") for e in folder.iterdir() if e.name.endswith(".toml")}
    except (FileNotFoundError, NotADirectoryError):
        return {}


def test_scenarios_lists_the_builtin_files():
    proc = run_cli("scenarios")
    assert proc.returncode == 0, proc.stderr
    names = _builtin()
    if not names:
        assert "No built-in scenarios" in proc.stdout
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ") and line.strip()]
    assert listed[1:] == sorted(names)  # after the NAME header


@pytest.mark.parametrize("name", sorted(_builtin()) or [pytest.param(None, marks=pytest.mark.skip(
    reason="no built-in scenarios yet"))])
def test_scenarios_show_prints_the_file(name):
    proc = run_cli("scenarios", name, "--show")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n") == _builtin()[name].rstrip("\n")


def test_scenarios_unknown_name():
    assert_one_error_line(run_cli("scenarios", "no-such-scenario", "--show"), "no-such-scenario")


@pytest.mark.skipif("demo" not in _builtin(), reason="scenarios/demo.toml is not written yet")
def test_demo(tmp_path):
    proc = run_cli("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "DEVICE" in proc.stdout and "bios/s" in proc.stdout
    assert "What happened" in proc.stdout
    assert _files(tmp_path) == []


# --------------------------------------------------------------------------
# Pipes, the installed script
# --------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["profiles"], ["run", "tiny.toml"], ["run", "tiny.toml", "--trace", "-"]],
                         ids=["profiles", "run", "run-trace-stdout"])
def test_closed_stdout_pipe_exits_quietly(tiny, tmp_path, args):
    # Like `blkstack ... | head` once head has gone: every write gets EPIPE.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = run_cli(*args, cwd=tmp_path, stdout=write_end)
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == 141


def test_console_script_is_installed():
    script = Path(sys.executable).parent / ("blkstack.exe" if os.name == "nt" else "blkstack")
    if not script.exists():
        pytest.skip("the blkstack script is not next to this Python")
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"blkstack {blkstack.__version__}"
