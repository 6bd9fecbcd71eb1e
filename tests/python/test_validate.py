"""blkstack validate, the parts that need no virtual machine: partition
tables, the initramfs format, module dependencies, expectations, and the
job a scenario turns into. (The suite itself, which boots real kernels, is
tests/python/test_validate_suite.py, run by `make validate`.)"""

from __future__ import annotations

import json
import os
import struct
import textwrap
import zlib

import pytest

from blkstack import _core, cli
from blkstack.validate import Expectation, read_expectations
from blkstack.validate.debian import _depends, parse_control
from blkstack.validate.guest import Cpio, _modinfo, module_closure
from blkstack.validate.plan import PlanError, build_plan, parse_dd_number, parse_size, partition_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.path.join(ROOT, "validate", "scenarios")


def test_sizes_and_dd_numbers():
    assert [parse_size(x) for x in (4096, "4KiB", "4480k", "1.5M", "2048s", "1GB")] == [
        4096, 4096, 4480 * 1024, 3 << 19, 1 << 20, 10**9]
    assert [parse_dd_number(x) for x in ("1M", "768k", "512", "2x4k", "1kB")] == [1 << 20, 768 << 10, 512, 8192, 1000]
    with pytest.raises(PlanError):
        parse_size("12 parsecs")


def test_mbr_partition_table():
    # Two partitions of a 1 GiB disk: sda1 at 2048 for 262144 sectors, sda2 at 264192.
    (write,) = partition_table(1 << 30, 512, [(1, 2048, 262144), (2, 264192, 524288)])
    off, mbr = write
    assert off == 0 and len(mbr) == 512 and mbr[510:] == b"\x55\xaa"
    # Entry 1 at byte 446: type 0x83 at +4, LBA start and count at +8, +12.
    assert mbr[446 + 4] == 0x83 and struct.unpack_from("<II", mbr, 446 + 8) == (2048, 262144)
    assert struct.unpack_from("<II", mbr, 462 + 8) == (264192, 524288)
    assert mbr[478:510] == b"\0" * 32


def test_4k_disks_count_partitions_in_logical_blocks():
    ((_, mbr),) = partition_table(1 << 30, 4096, [(1, 2048, 8192)])
    # 2048 sectors of 512 bytes = LBA 256 of 4096 bytes; 8192 sectors = 1024 blocks.
    assert struct.unpack_from("<II", mbr, 446 + 8) == (256, 1024)
    with pytest.raises(PlanError, match="multiples of the logical block size"):
        partition_table(1 << 30, 4096, [(1, 2047, 8192)])


def test_gpt_past_four_partitions():
    parts = [(i, 2048 * i, 2048) for i in range(1, 6)]
    writes = dict(partition_table(64 << 20, 512, parts))
    hdr = writes[512]
    assert hdr[:8] == b"EFI PART"
    # The header's CRC covers its 92 bytes with the CRC field zeroed.
    crc = struct.unpack_from("<I", hdr, 16)[0]
    zeroed = hdr[:16] + b"\0\0\0\0" + hdr[20:92]
    assert crc == zlib.crc32(zeroed) & 0xFFFFFFFF
    entries = writes[1024]
    assert struct.unpack_from("<I", hdr, 88)[0] == zlib.crc32(entries) & 0xFFFFFFFF
    # Entry 5: first and last LBA.
    assert struct.unpack_from("<QQ", entries, 4 * 128 + 32) == (10240, 12287)
    # The backup header is in the last sector.
    assert writes[(64 << 20) - 512][:8] == b"EFI PART"


def test_cpio_newc_layout():
    c = Cpio()
    c.file("bin/x", b"hello", 0o755)
    c.symlink("bin/y", "x")
    data = c.bytes()
    assert len(data) % 512 == 0
    # "bin" directory first, then bin/x: magic, then 13 hex fields.
    assert data[:6] == b"070701"
    i = data.index(b"bin/x\0")
    hdr = data[i - 110:i]
    assert hdr[:6] == b"070701" and int(hdr[54:62], 16) == 5 and int(hdr[14:22], 16) == 0o100755
    assert b"TRAILER!!!\0" in data


def test_module_closure_orders_dependencies_first(tmp_path):
    def mod(name, deps):
        return b"\x7fELF...\0name=" + name.encode() + b"\0depends=" + ",".join(deps).encode() + b"\0vermagic=x\0"
    files = {}
    for name, deps in {"raid456": ["async_tx", "raid6_pq", "libcrc32c"], "async_tx": [], "raid6_pq": [],
                       "libcrc32c": ["crc32c_generic"], "md_mod": []}.items():
        p = tmp_path / f"{name}.ko"
        p.write_bytes(mod(name, deps))
        files[name] = str(p)
    assert _modinfo(mod("a", ["b-c"]), "depends") == "b-c"
    # crc32c_generic is built in: neither shipped nor loaded.
    order, deps, data = module_closure(["raid456", "md_mod"], files, {"crc32c_generic"})
    assert order == ["async_tx", "raid6_pq", "libcrc32c", "raid456", "md_mod"]
    assert deps["raid456"] == ["async_tx", "raid6_pq", "libcrc32c"]
    assert deps["libcrc32c"] == []


def test_debian_control_parsing():
    text = "Package: linux-image-amd64\nVersion: 6.1.192-2\nDepends: linux-image-6.1.0-56-amd64 (= 6.1.192-2),\n foo | bar\n\nPackage: other\n"
    f = parse_control(text)
    assert f["Package"] == "linux-image-amd64" and f["Version"] == "6.1.192-2"
    assert _depends(f["Depends"]) == ["linux-image-6.1.0-56-amd64", "foo"]
    assert _depends("libc6 (>= 2.34), libudev1:amd64 (>= 183)") == ["libc6", "libudev1"]


def test_expectation_lines(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text("# about\n# expect: exact\n# expect 6.12: 87.5% -- raid10 reads balance differently (issue 9)\nkernel = \"6.1\"\n")
    exp = read_expectations(str(p))
    assert exp[""].exact and exp[""].reason == ""
    assert exp["6.12"].percent == 87.5 and exp["6.12"].reason.startswith("raid10")
    assert str(Expectation(87.5, "x")) == "87.5% (x)"


def _plan(tmp_path, text, kernel="6.1"):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    resolved = json.loads(_core.check(str(p), kernel, []))
    return build_plan(str(p), kernel, str(tmp_path), resolved)


def test_plan_for_a_partitioned_virtio_disk(tmp_path):
    plan = _plan(tmp_path, """
        [disks.vda]
        kind = "virtio"
        size = "1GiB"
        [disks.vda.queue]
        max_sectors_kb = 128
        scheduler = "none"
        discard_granularity = 65536
        max_segment_size = 65536
        [disks.vda.partitions.vda1]
        start = 2048
        size = "100MiB"
        [workload]
        type = "dd"
        if = "/dev/vda1"
        of = "/dev/null"
        bs = "1M"
        count = 4
        iflag = "direct"
    """)
    (disk,) = plan.disks
    assert disk.partitions == [("vda1", 1, 2048, 204800)]
    dev = plan.qemu_args[plan.qemu_args.index("-device") + 1]
    assert dev.startswith("virtio-blk-pci,drive=d0,serial=BLKSTACK00Z") and "discard_granularity=65536" in dev
    # max_segment_size cannot be set on virtio-blk: reported, not dropped silently.
    assert any("max_segment_size" in w for w in plan.warnings)
    job = plan.job
    # The scheduler is written before max_sectors_kb (switching it resets nr_requests).
    assert job.index("queue/scheduler") < job.index("queue/max_sectors_kb")
    # Writeback throttling keeps the kernel's default (the scenario leaves it).
    assert "record vda1 $p" in job and "wbt_lat_usec" not in job
    assert "blkio dd if=/dev/blkstack/vda1 of=/dev/null bs=1048576 count=4 iflag=direct" in job
    assert job.index("tracing_on") < job.index("blkio dd")


def test_plan_for_md_and_dm(tmp_path):
    plan = _plan(tmp_path, """
        [disks.vda]
        kind = "virtio"
        size = "256MiB"
        [disks.vdb]
        kind = "virtio"
        size = "256MiB"
        [disks.vdc]
        kind = "virtio"
        size = "256MiB"
        [dm.lin]
        table = "0 100000 linear /dev/vdc 0"
        [md.md0]
        level = 10
        layout = "f2"
        chunk = "64KiB"
        members = ["vda", "vdb"]
        [workload]
        type = "bios"
        device = "md0"
        [[workload.bio]]
        op = "write"
        flags = ["sync", "fua"]
        sector = 0
        size = "8KiB"
        repeat = 2
        [[workload.bio]]
        op = "discard"
        device = "lin"
        sector = 0
        size = "1MiB"
    """)
    job = plan.job
    assert ("mdadm --create /dev/md0 --run --assume-clean --force --level=10 --raid-devices=2 --metadata=1.2 "
            "--bitmap=none --chunk=64K --layout=f2 /dev/blkstack/vda /dev/blkstack/vdb") in job
    assert "for m in virtio_blk dm_mod md_mod raid10; do load $m; done" in job
    # The superblock is dirtied before tracing starts.
    assert job.index("safe_mode_delay") < job.index("tracing_on")
    assert "0 100000 linear /dev/blkstack/vdc 0" in job
    # Two entries: the write (8 KiB twice, 16 sectors apart) with RWF_DSYNC, the discard on lin.
    assert plan.bios_file.splitlines() == [
        "depth 2 batch 1",
        "write /dev/blkstack/md0 0 8192 fua 2 8192",
        "discard /dev/blkstack/lin 0 1048576 - 1 1048576",
    ]


def test_plan_refuses_what_a_guest_cannot_do(tmp_path):
    with pytest.raises(PlanError, match="'hyperv' cannot be reproduced"):
        _plan(tmp_path, """
            [disks.sda]
            kind = "hyperv"
            size = "1GiB"
        """)


def test_every_suite_scenario_plans_and_states_expectations(tmp_path):
    names = sorted(f for f in os.listdir(SUITE) if f.endswith(".toml"))
    assert len(names) >= 12
    for name in names:
        path = os.path.join(SUITE, name)
        exp = read_expectations(path)
        for kernel in ("6.1", "6.12"):
            assert kernel in exp or "" in exp, f"{name}: no '# expect' line for {kernel}"
            e = exp.get(kernel) or exp[""]
            assert e.exact or e.reason, f"{name}: a known difference on {kernel} needs its reason"
            resolved = json.loads(_core.check(path, kernel, []))
            plan = build_plan(path, kernel, str(tmp_path), resolved)
            assert plan.disks


def test_validate_cli_errors(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text('[disks.sda]\nkind = "sata"\nsize = "1GiB"\n')
    assert cli.main(["validate", str(p), "--kernel", "6.15"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("blkstack: error: --kernel 6.15: Debian ships 5.10, 6.1, 6.12 and 7.2") and err.count("\n") == 1
    assert cli.main(["validate", str(tmp_path / "nope.toml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_validate_without_qemu_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    # Checked before anything is downloaded.
    monkeypatch.setenv("BLKSTACK_QEMU", "qemu-that-does-not-exist")
    monkeypatch.setenv("BLKSTACK_VALIDATE_CACHE", str(tmp_path / "cache"))
    code = cli.main(["validate", os.path.join(SUITE, "split-max-sectors.toml"), "--kernel", "6.1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "qemu-that-does-not-exist not found: install it with 'apt-get install qemu-system-x86'" in err
    assert not (tmp_path / "cache" / "apt").exists()


def test_plan_writes_the_scenarios_wbt_lat_usec_last(tmp_path):
    # wbt_lat_usec after rotational: -1 takes the default for the value
    # written before it, as blkstack resolves it.
    plan = _plan(tmp_path, """
        [disks.vda]
        kind = "virtio"
        size = "1GiB"
        [disks.vda.queue]
        wbt_lat_usec = -1
        rotational = false
        [workload]
        type = "dd"
        if = "/dev/vda"
        of = "/dev/null"
        bs = "1M"
        count = 1
        iflag = "direct"
    """)
    job = plan.job
    assert "echo -1 > /sys/block/$n/queue/wbt_lat_usec" in job
    assert job.index("queue/rotational") < job.index("queue/wbt_lat_usec")


def test_each_kernel_comes_from_its_own_debian_release(tmp_path):
    from blkstack.validate.debian import Apt, apt_root, kernel_apt, release_sources
    # bookworm keeps the original directory, so existing caches stay valid.
    assert apt_root("/c", "6.1") == apt_root("/c", "6.12") == "/c/apt"
    assert kernel_apt(str(tmp_path), "5.10").root == str(tmp_path / "apt-bullseye")
    assert kernel_apt(str(tmp_path), "7.2").release == "unstable"
    assert "Suites: bullseye-security" in release_sources("bullseye", "")
    assert "security" not in release_sources("unstable", "")
    # 7.x splits the image: linux-binary-ABI (vmlinuz) and linux-modules-ABI.
    image = {"Package": "linux-image-7.2.13+deb14-amd64",
             "Depends": "dracut | initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool, "
                        "linux-base-7.2.13+deb14-amd64 (= 7.2.13-1), linux-binary-7.2.13+deb14-amd64 (= 7.2.13-1), "
                        "linux-modules-7.2.13+deb14-amd64 (= 7.2.13-1)"}
    assert Apt(str(tmp_path)).kernel_parts(image) == [
        "linux-base-7.2.13+deb14-amd64", "linux-binary-7.2.13+deb14-amd64", "linux-modules-7.2.13+deb14-amd64"]
    # Up to 6.x the image package holds everything.
    old = {"Package": "linux-image-6.1.0-56-amd64", "Depends": "kmod, linux-base (>= 4.3~), initramfs-tools (>= 0.120+deb8u2)"}
    assert Apt(str(tmp_path)).kernel_parts(old) == []


def test_guest_command_line_and_model_overrides_per_kernel(tmp_path):
    from blkstack.validate import guest_sets
    from blkstack.validate.guest import kernel_append
    assert kernel_append("5.10") == "no_timer_check"
    assert kernel_append("7.2") == "preempt=full"
    assert kernel_append("6.1") == kernel_append("6.12") == ""
    dd = tmp_path / "dd.toml"
    dd.write_text('[workload]\ntype = "dd"\n')
    assert guest_sets(str(dd)) == ["workload.buffer_hugepages=true"]
    bios = tmp_path / "bios.toml"
    bios.write_text('[workload]\ntype = "bios"\n')
    assert guest_sets(str(bios)) == []


def test_plan_loads_kyber_and_writes_its_iosched_files(tmp_path):
    # kyber is a module in Debian's kernels: loaded with the disk driver;
    # its iosched/ files are written after the scheduler is.
    plan = _plan(tmp_path, """
        [disks.vda]
        kind = "virtio"
        size = "256MiB"
        [disks.vda.queue]
        scheduler = "kyber"
        [disks.vda.queue.iosched]
        read_lat_nsec = 1000000
        [workload]
        type = "bios"
        device = "vda"
        [[workload.bio]]
        op = "read"
        flags = ["sync"]
        sector = 0
        size = "4KiB"
    """)
    job = plan.job
    assert "for m in virtio_blk kyber_iosched; do load $m; done" in job
    assert job.index("queue/scheduler") < job.index("echo 1000000 > /sys/block/$n/queue/iosched/read_lat_nsec")
    assert not plan.warnings


def test_plan_takes_syscall_flags_and_asks_for_them(tmp_path):
    # 'syscall' stands for what the guest's preadv2/pwritev2/BLKDISCARD give
    # their bios: no warning. An entry without it (or sync) gets one naming it.
    text = """
        [disks.vda]
        kind = "virtio"
        size = "256MiB"
        [workload]
        type = "bios"
        device = "vda"
        iodepth = 1
        [[workload.bio]]
        op = "read"
        FLAGS
        sector = 0
        size = "4KiB"
        [[workload.bio]]
        op = "write"
        FLAGS
        sector = 8
        size = "4KiB"
        [[workload.bio]]
        op = "discard"
        FLAGS
        sector = 2048
        size = "1MiB"
    """
    plan = _plan(tmp_path, text.replace("FLAGS", 'flags = ["syscall"]'))
    assert not plan.warnings
    plan = _plan(tmp_path, text.replace("FLAGS", ""))
    assert len(plan.warnings) == 3
    assert all('add flags = ["syscall"]' in w for w in plan.warnings)


def test_multipath_job_records_the_guests_list_head_as_the_models(tmp_path):
    # The guest's path list is in probe order, which varies; one numa read
    # before the scenario's policy finds its head, recorded under the name
    # the model puts first (the last: nvme0c1n1).
    plan = _plan(tmp_path, """
        [disks.nvme0n1]
        kind = "nvme"
        size = "256MiB"
        [disks.nvme0n1.multipath]
        paths = 2
        iopolicy = "round-robin"
        [workload]
        type = "dd"
        if = "/dev/nvme0n1"
        of = "/dev/null"
        bs = "128k"
        count = 2
        iflag = "direct"
    """)
    job = plan.job
    probe = job.index("echo numa > /sys/block/$n/device/iopolicy")
    assert probe < job.index("blkio dd if=/dev/$n of=/dev/null bs=4096 count=1 iflag=direct") \
        < job.index('echo "nvme0c1n1 list-head $first" >> /out/devices.txt') \
        < job.index("echo round-robin > /sys/block/$n/device/iopolicy") < job.rindex("echo 1 > $T/tracing_on")
    # The other path's number is the one the workload's trace shows.
    assert job.index("cat $T/trace > /out/trace.txt") < job.index("set -- nvme0c0n1\n")
