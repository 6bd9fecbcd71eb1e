"""The Python API (blkstack.run, blkstack.profiles) on the real engine."""

from __future__ import annotations

import csv
import importlib.machinery
import importlib.metadata
import importlib.resources
import json

import pytest

import blkstack
from blkstack import ScenarioError, _core

from conftest import TINY, replace_once

KERNELS = ("5.8", "5.10", "5.13", "6.1", "6.12", "6.15", "7.2")
VOLATILE = ("wall_time_s", "engine_cpu_s", "bios_per_s")  # depend on the machine, not the model


def _stable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in VOLATILE}


def _switch_key(name: str) -> str:
    return name[len("behaviour."):] if name.startswith("behaviour.") else name


def _behaviour(summary: dict) -> dict:
    return {_switch_key(k): v for k, v in summary["behaviour"].items()}


def test_extension_is_compiled():
    # The tests must run against the Rust engine, not a stand-in.
    assert _core.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), _core.__file__


def test_version_is_consistent():
    assert blkstack.__version__ == _core.version() == blkstack.version()
    assert blkstack.__version__
    assert importlib.metadata.version("blkstack") == blkstack.__version__


def test_scenario_error_is_an_exception():
    assert issubclass(ScenarioError, Exception)
    assert blkstack.ScenarioError is _core.ScenarioError


def test_run_hand_worked_dd(tiny):
    # 4 direct reads of 1 MiB = 2048 sectors each; max_sectors_kb = 128 means
    # at most 256 sectors per request, so each read is split 7 times into 8
    # requests. Split fronts inherit the bio's Q, so only 4 bios are queued.
    summary = blkstack.run(tiny)
    assert summary["profile"] == "6.12"
    assert summary["kernel"].startswith("6.12")
    sda = summary["devices"]["sda"]
    assert sda["kind"] == "sata"
    assert (sda["major"], sda["minor"]) == (8, 0)
    assert sda["bios_queued"] == 4
    assert sda["splits"] == 28
    assert sda["requests"] == 32
    assert sda["remaps"] == 0
    assert {k: sda["sectors"][k] for k in ("read", "write", "discard", "write_zeroes")} == {
        "read": 8192, "write": 0, "discard": 0, "write_zeroes": 0}
    assert int(sda["limits"]["max_sectors_kb"]) == 128
    assert int(sda["limits"]["logical_block_size"]) == 512
    # Every bio object the engine handled: 4 submitted by dd plus the
    # 28 fronts split off them.
    assert summary["bios"] == 4 + 28
    assert summary["sim_time_ns"] > 0
    assert summary["wall_time_s"] >= 0
    assert summary["engine_cpu_s"] >= 0
    assert summary["bios_per_s"] >= 0
    assert set(summary) >= {"scenario", "kernel", "profile", "behaviour", "devices", "sim_time_ns",
                            "wall_time_s", "engine_cpu_s", "bios", "bios_per_s"}


def test_run_returns_the_engines_json(tiny):
    raw = json.loads(_core.run(str(tiny), None, [], None, None))
    assert _stable(raw) == _stable(blkstack.run(str(tiny)))


def test_run_is_deterministic(tiny, tmp_path):
    a = blkstack.run(tiny, trace=tmp_path / "a.trace", requests=tmp_path / "a.csv")
    b = blkstack.run(tiny, trace=tmp_path / "b.trace", requests=tmp_path / "b.csv")
    assert _stable(a) == _stable(b)
    assert (tmp_path / "a.trace").read_bytes() == (tmp_path / "b.trace").read_bytes()
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_override_picks_the_profile(tiny, kernel):
    summary = blkstack.run(tiny, kernel=kernel)
    assert summary["profile"] == kernel
    expected = {_switch_key(s["name"]): s["per_profile"][kernel] for s in blkstack.profiles()["switches"]}
    assert _behaviour(summary) == expected


def test_set_overrides_a_queue_limit(tiny):
    # 64 KiB = 128 sectors per request: 16 requests (15 splits) per 1 MiB read.
    for sets in ({"disks.sda.queue.max_sectors_kb": 64}, ["disks.sda.queue.max_sectors_kb=64"]):
        sda = blkstack.run(tiny, sets=sets)["devices"]["sda"]
        assert sda["requests"] == 64
        assert sda["splits"] == 60
        assert sda["bios_queued"] == 4
        assert int(sda["limits"]["max_sectors_kb"]) == 64


def test_set_overrides_a_behaviour_switch(tiny):
    switches = blkstack.profiles()["switches"]
    if not switches:
        pytest.skip("the engine has no behaviour switches")
    switch = switches[0]
    current = switch["per_profile"]["6.12"]
    other = next((v for v in switch["values"] if v != current), None)
    if other is None:
        pytest.skip(f"{switch['name']} has a single value")
    value = json.dumps(other) if isinstance(other, bool) else str(other)
    summary = blkstack.run(tiny, sets=[f"{switch['name']}={value}"])
    assert _behaviour(summary)[_switch_key(switch["name"])] == other


def test_trace_and_requests_files(tiny, tmp_path):
    trace, requests = tmp_path / "out.trace", tmp_path / "out.csv"
    blkstack.run(tiny, trace=str(trace), requests=str(requests))
    assert trace.read_text().strip()
    with requests.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    # A header, then one row per issued request: 32 of 256 sectors covering
    # the first 4 MiB of sda once.
    assert len(rows) == 32
    assert {row["device"] for row in rows} == {"sda"}
    assert [int(row["nr_sectors"]) for row in rows] == [256] * 32
    assert sorted(int(row["sector"]) for row in rows) == list(range(0, 8192, 256))


def test_scenario_error_is_one_line_naming_file_and_key(write_scenario):
    bad = write_scenario(replace_once(TINY, "count = 4", 'count = "four"'), name="bad.toml")
    with pytest.raises(ScenarioError) as info:
        blkstack.run(bad)
    message = str(info.value)
    assert "\n" not in message
    assert "bad.toml" in message and "count" in message


def test_failed_run_writes_no_files(write_scenario, tmp_path):
    text = replace_once(TINY, "logical_block_size = 512", "logical_block_size = 4096")
    bad = write_scenario(replace_once(text, "max_sectors_kb = 128", "max_sectors_kb = 2"), name="bad.toml")
    with pytest.raises(ScenarioError):
        blkstack.run(bad, trace=tmp_path / "t.trace", requests=tmp_path / "r.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_unknown_set_key_raises(tiny):
    with pytest.raises(ScenarioError) as info:
        blkstack.run(tiny, sets=["disks.sda.queue.no_such_limit=1"])
    assert "no_such_limit" in str(info.value)


def test_profiles():
    data = blkstack.profiles()
    assert json.loads(_core.profiles()) == data
    names = [p["name"] for p in data["profiles"]]
    assert _core.profile_names() == names, "--kernel's choices are the profiles, in order"
    assert set(KERNELS) <= set(names), "the profiles this project promises"
    for prof in data["profiles"]:
        assert prof["kernel"].startswith(prof["name"] + ".")
    assert data["switches"], "no behaviour switches"
    for switch in data["switches"]:
        assert switch["name"] and switch["description"] and switch["values"]
        assert set(switch["per_profile"]) == set(names), switch["name"]
        for value in switch["per_profile"].values():
            assert value in switch["values"], (switch["name"], value)


def _builtin_scenarios():
    folder = importlib.resources.files("blkstack").joinpath("scenarios")
    try:
        return sorted(e.name for e in folder.iterdir() if e.name.endswith(".toml"))
    except (FileNotFoundError, NotADirectoryError):
        return []


@pytest.mark.parametrize("name", _builtin_scenarios() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no built-in scenarios yet"))])
def test_builtin_scenarios_run(name):
    resource = importlib.resources.files("blkstack").joinpath("scenarios").joinpath(name)
    with importlib.resources.as_file(resource) as path:
        summary = blkstack.run(path)
    assert summary["devices"]
