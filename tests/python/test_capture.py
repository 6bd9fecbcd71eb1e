"""``blkstack capture`` on fake sysfs trees: capture, run, and the limits the
run resolves equal what the tree shows.

The trees in tests/data/sysfs-*/ hold what such machines show:

* sysfs-raid10-nvme: Debian 6.12, md0 raid10 (near 2, 512 KiB chunks,
  metadata 1.2, data offset 264192) over four 1.92 TB NVMe whose driver
  allows 128 KiB and 33 segments. md0's own queue/ files are the kernel's
  rules worked by hand: io_min = the chunk (524288), io_opt = chunk x 4
  members / 2 copies (1048576), max_(hw_)sectors_kb and max_segments the
  members' smallest (128, 33), discard_max_bytes the members' own
  (2199023255040: raid10 passes whole ranges since 5.13).
* sysfs-sata-partitions: Debian 6.1, a SATA SSD with 4 KiB physical blocks
  and two partitions, plus a CD drive and an empty loop device; cgroup v2
  groups: `limited` with io.max lines for sda (8:0) and loop0 (7:0),
  io.weight 50 and the default io.bfq.weight, `system.slice` with no
  limits of its own and a nested `docker.service` with some.
* sysfs-hdd-bfq: Debian 6.12, a 7200 rpm SATA disk (512e) with bfq as its
  scheduler, low_latency switched off in queue/iosched/.
* sysfs-nvme-multipath: Debian 6.12, one NVMe namespace (the raid10
  tree's first disk) reached through two controllers with native
  multipath: the head nvme0n1 (bio-based: scheduler none, nr_requests
  128, no mq/) links its paths in multipath/, nvme0c0n1 optimized and
  nvme0c1n1 non-optimized, and its subsystem's iopolicy (device/) is
  round-robin.
* sysfs-dm-linear: no osrelease, a dm-linear volume (vg-data, 1 GiB at
  sector 2048) over a QEMU SCSI disk; dm-0's limits are the disk's
  (dm stacks them: max_sectors_kb 1280 = min(2560 sectors), ...).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).resolve().parent.parent / "data"


def tree_value(text: str):
    """A queue/ file's value as the JSON summary gives it."""
    text = text.strip()
    if text.startswith("[") or " [" in text:  # scheduler: "[none] mq-deadline"
        return text[text.index("[") + 1:text.index("]")]
    try:
        return int(text)
    except ValueError:
        return text


def tree_limits(root: Path) -> dict:
    """{scenario device name: {queue file: value}} of every block device."""
    out = {}
    for dev in sorted((root / "sys/block").iterdir()):
        name = (dev / "dm/name").read_text().strip() if (dev / "dm/name").exists() else dev.name
        out[name] = {f.name: tree_value(f.read_text()) for f in (dev / "queue").iterdir() if f.is_file()}
    return out


def capture_and_run(tmp_path, tree: str, *extra):
    out = tmp_path / f"{tree}.toml"
    proc = run_cli("capture", "--root", DATA / tree, "--out", out, *extra)
    assert proc.returncode == 0, proc.stderr
    run = run_cli("run", out, "--json", "-", "--quiet")
    assert run.returncode == 0, run.stderr + out.read_text()
    return out.read_text(), json.loads(run.stdout), proc.stderr


def capture_edited(tmp_path, tree: str, files: dict):
    """Capture a copy of a data tree with some files written (made if new)
    into tmp_path/captured.toml: its text and the warnings."""
    import shutil
    root = tmp_path / "root"
    shutil.copytree(DATA / tree, root)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    out = tmp_path / "captured.toml"
    proc = run_cli("capture", "--root", root, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out.read_text(), proc.stderr


def assert_limits_match(tree: str, summary: dict, devices) -> int:
    compared = 0
    limits = tree_limits(DATA / tree)
    for name in devices:
        got = summary["devices"][name]["limits"]
        for key, value in limits[name].items():
            if key in got:
                assert got[key] == value, (name, key, got[key], value)
                compared += 1
    return compared


def test_raid10_over_four_nvme(tmp_path):
    text, s, err = capture_and_run(tmp_path, "sysfs-raid10-nvme")
    assert 'kernel = "6.12"' in text and "6.12.38+deb13-amd64" in text
    # Every queue file the summary shows: each disk's 23 files (write_cache
    # included: "write through"; wbt_lat_usec 0, switched off, which the
    # scenario keeps), and md0's 13 worked by hand.
    n = assert_limits_match("sysfs-raid10-nvme", s, ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "md0"])
    assert n == 4 * 23 + 13
    assert text.count("wbt_lat_usec = 0") == 4
    # The array: raid10 of the four in slot order, its component size and
    # so its size: 2 x 1875241984 KiB = 7500967936 sectors (md0's size file).
    assert s["devices"]["md0"]["size_bytes"] == 7500967936 * 512
    assert 'members = ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]' in text
    assert "data_offset = 264192" in text and "layout = 258" in text
    # The workload reads the top of the stack: 16 MiB from md0.
    assert 'if = "/dev/md0"' in text and s["devices"]["md0"]["sectors"]["read"] == 16 * 2048
    assert err == ""


def test_partitioned_sata_disk(tmp_path):
    text, s, err = capture_and_run(tmp_path, "sysfs-sata-partitions")
    assert 'kernel = "6.1"' in text
    # All 23 queue files; wbt_lat_usec shows the default of a
    # non-rotational disk (2000), so the scenario leaves it to the kernel rule.
    assert assert_limits_match("sysfs-sata-partitions", s, ["sda"]) == 23
    assert "wbt_lat_usec" not in text
    assert s["devices"]["sda"]["kind"] == "sata"
    assert (s["devices"]["sda1"]["start"], s["devices"]["sda2"]["start"]) == (2048, 1050624)
    assert s["devices"]["sda2"]["size_bytes"] == 999162880 * 512
    # The CD drive and the empty loop device are named, not captured.
    assert "# Note: sr0: left out" in text and "# Note: loop0: left out" in text
    # io.max as the kernel prints it, 8:0 as sda; loop0's line, the default
    # bfq weight and the nested group are left out (and named).
    assert ('[cgroups.limited]\n"io.max" = ["sda rbps=10485760 wbps=max riops=max wiops=1000"]\n'
            '"io.weight" = ["default 50"]\n') in text
    assert "system.slice]" not in text and "docker" not in text.split("[cgroups.")[-1]
    assert sorted(err.splitlines()) == [
        "blkstack: warning: cgroup limited/io.max: the line for 7:0 left out (not a captured device)",
        "blkstack: warning: cgroup system.slice: nested groups left out (docker.service)",
        "blkstack: warning: loop0: left out (a kind blkstack does not model)",
        "blkstack: warning: sr0: left out (a kind blkstack does not model)"]


def test_bfq_disk_keeps_its_iosched_settings(tmp_path):
    # sysfs-hdd-bfq: Debian 6.12, a 7200 rpm SATA disk with bfq, whose
    # low_latency was switched off (the other iosched files hold bfq's
    # defaults: slice_idle_us 8000 is written as slice_idle = 8 ms).
    text, s, err = capture_and_run(tmp_path, "sysfs-hdd-bfq")
    assert 'scheduler = "bfq"' in text and "[disks.sda.queue.iosched]\n" in text
    assert "low_latency = 0" in text.split("[disks.sda.queue.iosched]")[1] and "slice_idle = 8" in text
    assert "slice_idle_us" not in text and "timeout_sync = 124" in text
    assert s["devices"]["sda"]["kind"] == "hdd"
    assert s["devices"]["sda"]["limits"]["scheduler"] == "bfq"
    assert assert_limits_match("sysfs-hdd-bfq", s, ["sda"]) >= 20
    assert err == ""


def test_nvme_multipath_head_and_its_paths(tmp_path):
    # The head's paths by controller number, their ANA states and the
    # subsystem's policy become [disks.nvme0n1.multipath]; the head's own
    # scheduler and nr_requests are left to the model (bio-based).
    text, s, err = capture_and_run(tmp_path, "sysfs-nvme-multipath")
    assert ('[disks.nvme0n1.multipath]\npaths = 2\niopolicy = "round-robin"\n'
            'ana = ["optimized", "non-optimized"]\n') in text
    assert "nr_requests = " not in text and "scheduler = " not in text
    assert set(s["devices"]) == {"nvme0n1", "nvme0c0n1", "nvme0c1n1"}
    assert s["devices"]["nvme0n1"]["limits"]["nr_requests"] == 128
    assert err == ""


def test_dm_linear_over_a_disk(tmp_path):
    text, s, _ = capture_and_run(tmp_path, "sysfs-dm-linear", "--dmsetup",
                                 DATA / "sysfs-dm-linear/dmsetup-table.txt")
    # No osrelease: the default profile. The table's 8:16 is sdb.
    assert 'kernel = "6.12"' in text and "0 2097152 linear /dev/sdb 2048" in text
    # sdb's 20 files, dm-0's 10.
    assert assert_limits_match("sysfs-dm-linear", s, ["sdb", "vg-data"]) == 20 + 10
    assert s["devices"]["sdb"]["kind"] == "virtio-scsi"  # vendor QEMU: a scsi-hd
    assert s["devices"]["vg-data"]["size_bytes"] == 2097152 * 512


def test_dm_crypt_table_keeps_dmsetups_zero_key(tmp_path):
    # dmsetup table prints a crypt key as zeros (64 bytes: 128 digits) unless --showkeys.
    table = tmp_path / "table.txt"
    table.write_text("vg-data: 0 2097152 crypt aes-xts-plain64 " + "0" * 128 + " 0 8:16 2048 1 allow_discards\n")
    text, s, _ = capture_and_run(tmp_path, "sysfs-dm-linear", "--dmsetup", table)
    assert "0 2097152 crypt aes-xts-plain64 " + "0" * 128 + " 0 /dev/sdb 2048 1 allow_discards" in text
    assert s["devices"]["vg-data"]["size_bytes"] == 2097152 * 512


def test_dm_without_its_table_is_left_out(tmp_path):
    text, s, err = capture_and_run(tmp_path, "sysfs-dm-linear")
    assert "[dm." not in text and "vg-data" in err and "--dmsetup" in err
    assert sorted(s["devices"]) == ["sdb"]


def test_capture_to_stdout_and_errors(tmp_path):
    proc = run_cli("capture", "--root", DATA / "sysfs-sata-partitions")
    assert proc.returncode == 0 and proc.stdout.startswith("# Captured by 'blkstack capture'")
    assert_one_error_line(run_cli("capture", "--root", tmp_path / "nope"), "not a directory")
    assert_one_error_line(run_cli("capture", "--root", tmp_path), "no block devices")
    assert_one_error_line(run_cli("capture", "--root", DATA / "sysfs-dm-linear", "--dmsetup", tmp_path / "x"),
                          "no such file")
    assert_one_error_line(run_cli("capture", "--root", DATA / "sysfs-dm-linear", "--out", tmp_path / "a" / "b"),
                          "does not exist")


def test_md_sysfs_writes_and_differences(tmp_path):
    # On the raid10 machine someone wrote 64 to md0's max_sectors_kb: the
    # scenario writes it too. An io_opt the model does not derive (the
    # tree claims 2 MiB, the rules give 1 MiB) cannot be written: it is
    # named in a comment and a warning.
    text, err = capture_edited(tmp_path, "sysfs-raid10-nvme", {"sys/block/md0/queue/max_sectors_kb": "64\n",
                                                          "sys/block/md0/queue/optimal_io_size": "2097152\n"})
    assert "[md.md0.queue]\nmax_sectors_kb = 64\n" in text
    differs = "md0 optimal_io_size: the machine shows 2097152, the model derives 1048576"
    assert f"# Differs: {differs}." in text
    assert err == f"blkstack: warning: {differs}\n"
    s = json.loads(run_cli("run", tmp_path / "captured.toml", "--json", "-", "-q").stdout)
    assert s["devices"]["md0"]["limits"]["max_sectors_kb"] == 64


def test_profile_for_a_release():
    from blkstack.capture import profile_for
    profiles = ["6.1", "6.12", "6.15", "7.2"]
    # The newest profile not newer than the machine's kernel.
    assert profile_for("6.18.44-fc", profiles, "6.12")[0] == "6.15"
    assert profile_for("6.1.0-31-amd64", profiles, "6.12")[0] == "6.1"
    assert profile_for("5.10.0", profiles, "6.12")[0] == "6.1"      # older than all: the oldest
    assert profile_for(None, profiles, "6.12") == ("6.12", "no /proc/sys/kernel/osrelease: the default profile")


def test_kyber_latency_targets_from_iosched(tmp_path):
    # The SATA tree with kyber selected and its queue/iosched/ files (a
    # 1 ms read target written, the 10 ms write default): capture writes
    # them to [disks.sda.queue.iosched], and the run takes them.
    queue = "sys/block/sda/queue/"
    text, _ = capture_edited(tmp_path, "sysfs-sata-partitions", {queue + "scheduler": "mq-deadline [kyber] none\n",
                                                              queue + "iosched/read_lat_nsec": "1000000\n",
                                                              queue + "iosched/write_lat_nsec": "10000000\n"})
    out = tmp_path / "captured.toml"
    assert 'scheduler = "kyber"' in text
    assert "[disks.sda.queue.iosched]\nread_lat_nsec = 1000000\nwrite_lat_nsec = 10000000\n" in text
    run = run_cli("run", out, "--json", "-", "--quiet")
    assert run.returncode == 0, run.stderr + text
    dev = json.loads(run.stdout)["devices"]["sda"]
    assert dev["limits"]["scheduler"] == "kyber"
    assert dev["iosched"] == {"read_lat_nsec": 1000000, "write_lat_nsec": 10000000}
