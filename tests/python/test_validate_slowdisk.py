"""Slow disks (``[validate] disk_latency_ms``, ``validate --disk-latency``):
the nbdkit servers and qemu drives a plan gets, what the model is told, and
the random scenarios that record it (no virtual machine is booted; nbdkit
itself is not needed: ``BLKSTACK_NBDKIT`` names a stand-in)."""

from __future__ import annotations

import json
import random
import sys

import pytest

from blkstack import _core, cli
from blkstack.validate import disk_latency_sets
from blkstack.validate.plan import PlanError, build_plan
from blkstack.validate.slowdisk import SlowDiskError, nbdkit_command, serving

DISKS = """
[disks.vda]
kind = "virtio"
size = "256MiB"
[disks.sda]
kind = "virtio-scsi"
size = "256MiB"
[disks.nvme0n1]
kind = "nvme"
size = "256MiB"
[disks.sdb]
kind = "sata"
size = "256MiB"
[workload]
type = "dd"
if = "/dev/vda"
of = "/dev/null"
bs = "64k"
count = 2
iflag = "direct"
"""


@pytest.fixture
def nbdkit(monkeypatch):
    """``true`` stands in for nbdkit: plans only name it."""
    import shutil
    path = shutil.which("true")
    monkeypatch.setenv("BLKSTACK_NBDKIT", path)
    return path


def _plan(tmp_path, text, latency=None):
    p = tmp_path / "s.toml"
    p.write_text(text)
    resolved = json.loads(_core.check(str(p), "6.12", disk_latency_sets(latency)))
    return build_plan(str(p), "6.12", str(tmp_path), resolved, disk_latency_ms=latency)


def _options(args, flag):
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def test_each_disk_is_served_by_nbdkit_with_the_latency(tmp_path, nbdkit):
    plan = _plan(tmp_path, "[validate]\ndisk_latency_ms = 50\n" + DISKS)
    assert plan.disk_latency_ms == 50
    names = ["vda", "sda", "nvme0n1", "sdb"]
    # One server per disk on a socket in the work directory: the delay
    # filter nearest qemu, the fua filter below it (no host fsync), 16
    # threads for the NBD client's 16 requests in flight.
    assert plan.servers == [
        [nbdkit, "--foreground", "--exit-with-parent", "--unix", str(tmp_path / f"{n}.sock"), "--pidfile",
         str(tmp_path / f"{n}.sock.pid"), "--threads", "16", "--filter=delay", "--filter=fua", "file",
         f"file={tmp_path / n}.img", "delay-read=50ms", "delay-write=50ms", "delay-trim=50ms", "delay-zero=50ms",
         "fuamode=discard"] for n in names]
    # Each drive is qemu's NBD client on that socket, cached and discarding
    # as the raw image was.
    assert _options(plan.qemu_args, "-drive") == [
        f"driver=nbd,server.type=unix,server.path={tmp_path / n}.sock,if=none,id=d{i},cache=unsafe,discard=unmap"
        for i, n in enumerate(names)]


def test_the_guests_devices_stay_the_same(tmp_path, nbdkit):
    fast = _plan(tmp_path, DISKS)
    slow = _plan(tmp_path, "[validate]\ndisk_latency_ms = 50\n" + DISKS)
    assert not fast.servers and fast.disk_latency_ms == 0
    assert all(d.startswith("file=") and d.endswith(",format=raw,if=none,id=d%d,cache=unsafe,discard=unmap,aio=threads" % i)
               for i, d in enumerate(_options(fast.qemu_args, "-drive")))
    # The same devices with the same properties; virtio-blk only stops
    # QEMU merging adjacent requests into one NBD command (host side).
    devices = [d.replace(",request-merging=off", "") for d in _options(slow.qemu_args, "-device")]
    assert devices == _options(fast.qemu_args, "-device")
    assert "request-merging=off" in _options(slow.qemu_args, "-device")[0]
    assert slow.job == fast.job
    # scsi-hd reports the NBD client's 32 MiB transfer as its WRITE SAME
    # limit: the model's virtio-scsi disk is told so.
    assert slow.sim_sets == ["disks.sda.queue.write_zeroes_max_bytes=33554432"]
    assert fast.sim_sets == []


def test_the_option_overrides_the_scenario(tmp_path, nbdkit):
    text = "[validate]\ndisk_latency_ms = 50\n" + DISKS
    assert _plan(tmp_path, text, latency=20).servers[0][-5] == "delay-read=20ms"
    off = _plan(tmp_path, text, latency=0)
    assert not off.servers and off.disk_latency_ms == 0 and off.sim_sets == []
    assert disk_latency_sets(None) == [] and disk_latency_sets(20) == ["validate.disk_latency_ms=20"]


def test_without_nbdkit_the_plan_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BLKSTACK_NBDKIT", str(tmp_path / "no-nbdkit"))
    with pytest.raises(PlanError, match="apt-get install nbdkit"):
        _plan(tmp_path, "[validate]\ndisk_latency_ms = 50\n" + DISKS)
    assert not _plan(tmp_path, DISKS).servers  # fast disks need none


def test_bad_latencies_are_one_line_errors(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text(DISKS)
    assert cli.main(["validate", str(p), "--kernel", "6.12", "--disk-latency", "-5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--disk-latency -5: a latency in ms from 0 (off) to 10000" in err
    p.write_text("[validate]\ndisk_latency_ms = 20000\n" + DISKS)
    with pytest.raises(Exception, match=r"s.toml:2: validate.disk_latency_ms: 20000 ms: at most 10000 ms"):
        _core.check(str(p), "6.12", [])


def test_random_scenarios_record_the_latency_and_draw_the_same(tmp_path, nbdkit):
    from blkstack.validate.randomized import draw_disk_set, generate
    docs = {}
    for latency in (0, 50):
        rng = random.Random(3)
        base = draw_disk_set(rng)
        docs[latency] = [generate(rng, base, "6.12", str(tmp_path), f"l{latency}-{i}", latency) for i in range(4)]
    for fast, slow in zip(docs[0], docs[50]):
        assert "validate" not in fast
        assert slow.pop("validate") == {"disk_latency_ms": 50}
        assert dict(slow, name="") == dict(fast, name="")
    # The scenario file is what the guest and the model both read.
    path = str(tmp_path / "l50-0.toml")
    plan = build_plan(path, "6.12", str(tmp_path), json.loads(_core.check(path, "6.12", [])))
    assert plan.disk_latency_ms == 50 and len(plan.servers) == len(plan.disks)


def _fake_server(pidfile, code="import sys, time; open(sys.argv[2], 'w').write('1'); time.sleep(60)"):
    return [sys.executable, "-c", code, "--pidfile", pidfile]


def test_servers_listen_before_qemu_starts_and_stop_after(tmp_path):
    import os
    pidfile = str(tmp_path / "a.sock.pid")
    with serving([_fake_server(pidfile)], str(tmp_path)) as procs:
        assert os.path.exists(pidfile) and procs[0].poll() is None
    # Stopped (SIGTERM) and reaped when the block ends.
    assert procs[0].returncode == -15


def test_a_server_that_exits_fails_the_boot(tmp_path):
    with pytest.raises(SlowDiskError, match="nbdkit exited with status 3"):
        with serving([_fake_server(str(tmp_path / "b.pid"), "raise SystemExit(3)")], str(tmp_path)):
            pass


def test_nbdkit_command_names_every_delay():
    cmd = nbdkit_command("nbdkit", "/x/vda.img", "/x/vda.sock", 7)
    assert [a for a in cmd if a.startswith("delay-")] == ["delay-read=7ms", "delay-write=7ms", "delay-trim=7ms",
                                                          "delay-zero=7ms"]


def test_found_scenarios_on_slow_disks_are_named_apart():
    from blkstack.validate.randomized import found_name
    assert found_name("6.12", "random-1-085", {"disks": {}}) == "6.12-random-1-085"
    assert found_name("6.12", "random-1-085", {"validate": {"disk_latency_ms": 50}}) == "6.12-slow50-random-1-085"
