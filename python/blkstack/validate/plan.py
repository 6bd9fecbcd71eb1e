"""A scenario, turned into what the guest does: qemu disks, a partition
table written into each disk image, and the job script that builds the
stack (md arrays, dm tables, sysfs writes), traces the workload and brings
everything out through the 9p share.

How each part of a scenario is reproduced (docs/validation.md says the
same for users):

* disks: ``virtio`` is virtio-blk-pci, ``scsi`` a scsi-hd on virtio-scsi,
  ``nvme`` one qemu nvme controller per disk, ``sata`` an ide-hd on an AHCI
  controller; each backed by a sparse raw file with ``discard=unmap``.
  Driver values qemu can set (block sizes, io sizes, discard granularity
  and maximum, write-zeroes maximum, virtqueue size, nvme MDTS) become
  device properties; the others cannot be reproduced and are reported.
  With slow disks (``[validate] disk_latency_ms``) each image is served by
  nbdkit with a fixed delay and the drive is QEMU's NBD client
  (slowdisk.py); the guest's device is the same.
* partitions: an MBR (GPT past four partitions or 2 TiB) written into the
  image before boot; the kernel reads it when the disk appears.
* queue sysfs writes: written in the guest before tracing starts
  (scheduler first, since switching it resets nr_requests;
  ``wbt_lat_usec`` last). Writeback throttling keeps the kernel's default
  unless the scenario sets ``wbt_lat_usec``, as blkstack does.
* md: ``mdadm --create --assume-clean --bitmap=none`` (no resync, no
  bitmap writes); arrays with redundancy get ``safe_mode_delay = 0`` and
  one 4 KiB write at their end before tracing, so the superblock is
  already dirty and the traced workload triggers no superblock writes.
* dm: ``dmsetup create NAME --table ...`` with the scenario's device names
  replaced by the guest's.
* ``dd``: the ``blkio dd`` helper (coreutils dd's loop, with O_DIRECT).
* ``bios``: ``blkio bios``: one O_DIRECT pread/pwritev2 per entry at
  iodepth 1, Linux AIO (io_submit, ``batch`` iocbs per call) above it;
  discard, secure_erase and write_zeroes are the BLKDISCARD,
  BLKSECDISCARD and BLKZEROOUT ioctls, flush is fsync(2).
* ``fio``: Debian's fio (from the ``tools`` share) with the scenario's job
  file, its devices replaced by the guest's.
* ``cpus``: qemu ``-smp``; ``[cgroups.NAME]``: cgroup v2 groups, their
  files written, the workload (or each fio job) run inside its group.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .slowdisk import (NBD_MAX_TRANSFER, SlowDiskError, find_nbdkit, nbd_drive, nbdkit_command,
                       scenario_disk_latency)

try:  # Python 3.11+
    import tomllib  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    tomllib = None  # type: ignore[assignment]

TRACE_EVENTS = (
    "block_bio_queue", "block_split", "block_bio_remap", "block_getrq", "block_rq_insert", "block_rq_issue",
    "block_rq_complete", "block_bio_complete", "block_plug", "block_unplug", "block_bio_backmerge",
    "block_bio_frontmerge", "block_rq_merge",
)

# Sysfs writes, in the order the guest applies them.
# wbt_lat_usec last: -1 takes the default for the rotational value written before it.
SYSFS_WRITES = ("scheduler", "nr_requests", "max_sectors_kb", "discard_max_bytes", "nomerges", "rotational", "write_cache",
                "wbt_lat_usec")
STACK_SYSFS_WRITES = ("max_sectors_kb", "discard_max_bytes")
# Schedulers Debian builds as modules: loaded before a queue switches to one.
SCHED_MODULES = {"kyber": "kyber_iosched", "bfq": "bfq"}

GUEST_KINDS = ("virtio", "scsi", "nvme", "sata", "ssd", "virtio-scsi", "virtio_scsi")


class PlanError(Exception):
    """A scenario the guest cannot reproduce (one line)."""


def parse_size(value: Any) -> int:
    """A size as scenarios write it: bytes, or a string with a unit."""
    if isinstance(value, bool):
        raise PlanError(f"{value!r} is not a size")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    m = re.fullmatch(r"([0-9.]+)\s*([A-Za-z]*)", text)
    if not m:
        raise PlanError(f"'{text}' is not a size")
    units = {"": 1, "b": 1, "B": 1, "s": 512, "k": 1 << 10, "K": 1 << 10, "KiB": 1 << 10, "kiB": 1 << 10,
             "m": 1 << 20, "M": 1 << 20, "MiB": 1 << 20, "g": 1 << 30, "G": 1 << 30, "GiB": 1 << 30,
             "t": 1 << 40, "T": 1 << 40, "TiB": 1 << 40, "p": 1 << 50, "P": 1 << 50, "PiB": 1 << 50,
             "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
    if m.group(2) not in units:
        raise PlanError(f"'{text}' has an unknown unit")
    return int(float(m.group(1)) * units[m.group(2)])


def parse_dd_number(value: Any) -> int:
    """dd's numbers: ``1M``, ``4480k``, ``512``, ``2x4``..."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    total = 1
    for part in text.split("x"):
        m = re.fullmatch(r"(\d+)([cwbkKMGT]?)(B|iB)?", part)
        if not m:
            raise PlanError(f"'{text}' is not a dd number")
        mult = {"": 1, "c": 1, "w": 2, "b": 512, "k": 1024, "K": 1024, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2)]
        if m.group(3) == "B":
            mult = {"k": 1000, "K": 1000, "M": 10**6, "G": 10**9, "T": 10**12}.get(m.group(2), mult)
        total *= int(m.group(1)) * mult
    return total


@dataclass
class Disk:
    name: str
    kind: str
    size: int
    serial: str
    image: str
    lbs: int = 512
    partitions: List[Tuple[str, int, int, int]] = field(default_factory=list)  # (name, number, start, sectors)
    props: Dict[str, Any] = field(default_factory=dict)
    writes: Dict[str, Any] = field(default_factory=dict)
    iosched: Dict[str, Any] = field(default_factory=dict)  # queue/iosched/ writes
    iops: int = 0
    multipath: Optional[Dict[str, Any]] = None  # [disks.NAME.multipath]
    socket: str = ""  # served by nbdkit on this unix socket (slow disks), else the raw image


@dataclass
class Plan:
    scenario: str
    kernel: str
    disks: List[Disk]
    qemu_args: List[str]
    job: str
    bios_file: Optional[str]
    warnings: List[str]
    # Every scenario device name: disks, partitions, md, dm.
    devices: List[str]
    # Further files the job reads from the share (job.fio, ...), by name.
    files: Dict[str, str] = field(default_factory=dict)
    # Whether the job runs tools from the tools share (fio).
    tools: bool = False
    # --set overrides the model runs with (the guest fio's fio_version).
    sim_sets: List[str] = field(default_factory=list)
    # Guest CPUs (qemu -smp): the scenario's cpus.
    cpus: int = 1
    # Slow disks: each disk's latency in ms (0: qemu's own disks) and the
    # nbdkit servers that run beside qemu (slowdisk.py).
    disk_latency_ms: int = 0
    servers: List[List[str]] = field(default_factory=list)

    def save(self, share: str) -> None:
        with open(os.path.join(share, "job.sh"), "w") as fh:
            fh.write(self.job)
        if self.bios_file is not None:
            with open(os.path.join(share, "bios.txt"), "w") as fh:
                fh.write(self.bios_file)
        for name, text in self.files.items():
            with open(os.path.join(share, name), "w") as fh:
                fh.write(text)


def load_toml(path: str) -> Dict[str, Any]:
    if tomllib is None:  # pragma: no cover
        raise PlanError("blkstack validate needs Python 3.11 or later (tomllib)")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise PlanError(f"{path}: {exc.strerror or exc}")
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: {exc}")


# ---------------------------------------------------------------------------
# Partition tables


def partition_table(size: int, lbs: int, parts: Sequence[Tuple[int, int, int]]) -> List[Tuple[int, bytes]]:
    """(byte offset, data) writes of a partition table holding *parts*,
    each (number, first 512-byte sector, sectors): an MBR when every
    partition fits one, else a GPT."""
    per = lbs // 512
    lba = [(n, start // per, count // per) for n, start, count in parts]
    for n, start, count in parts:
        if start % per or count % per:
            raise PlanError(f"partition {n}: start {start} and size {count} must be multiples of the logical block size")
    if all(1 <= n <= 4 for n, _s, _c in lba) and all(s + c < 1 << 32 for _n, s, c in lba) and size // lbs < 1 << 32:
        mbr = bytearray(512)
        for n, start, count in lba:
            off = 446 + 16 * (n - 1)
            mbr[off:off + 16] = struct.pack("<B3sB3sII", 0, b"\xfe\xff\xff", 0x83, b"\xfe\xff\xff", start, count)
        mbr[510:512] = b"\x55\xaa"
        return [(0, bytes(mbr))]
    return _gpt(size, lbs, lba)


def _gpt(size: int, lbs: int, parts: Sequence[Tuple[int, int, int]]) -> List[Tuple[int, bytes]]:
    nblocks = size // lbs
    entries = bytearray(128 * 128)
    linux = bytes.fromhex("AF3DC60F838472478E793D69D8477DE4")  # 0FC63DAF-8483-4772-8E79-3D69D8477DE4, mixed-endian
    for n, start, count in parts:
        if not 1 <= n <= 128:
            raise PlanError(f"partition number {n} is not between 1 and 128")
        uniq = struct.pack("<QQ", 0x626C6B737461636B, n)
        entries[(n - 1) * 128:n * 128] = linux + uniq + struct.pack("<QQQ", start, start + count - 1, 0) + b"\0" * 72
    ecrc = zlib.crc32(entries) & 0xFFFFFFFF
    eblocks = (len(entries) + lbs - 1) // lbs
    first, last = 2 + eblocks, nblocks - 2 - eblocks

    def header(cur: int, backup: int, entries_lba: int) -> bytes:
        h = bytearray(struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x00010000, 92, 0, 0, cur, backup, first, last,
                                  struct.pack("<QQ", 0x626C6B737461636B, 0), entries_lba, 128, 128, ecrc))
        crc = zlib.crc32(bytes(h)) & 0xFFFFFFFF
        h[16:20] = struct.pack("<I", crc)
        return bytes(h) + b"\0" * (lbs - len(h))

    pmbr = bytearray(lbs)
    pmbr[446:462] = struct.pack("<B3sB3sII", 0, b"\x00\x02\x00", 0xEE, b"\xff\xff\xff", 1, min(nblocks - 1, 0xFFFFFFFF))
    pmbr[510:512] = b"\x55\xaa"
    return [(0, bytes(pmbr)), (lbs, header(1, nblocks - 1, 2)), (2 * lbs, bytes(entries)),
            ((nblocks - 1 - eblocks) * lbs, bytes(entries)), ((nblocks - 1) * lbs, header(nblocks - 1, 1, nblocks - 1 - eblocks))]


def make_image(disk: Disk) -> None:
    with open(disk.image, "wb") as fh:
        fh.truncate(disk.size)
        if disk.partitions:
            for off, data in partition_table(disk.size, disk.lbs, [(n, s, c) for _name, n, s, c in disk.partitions]):
                fh.seek(off)
                fh.write(data)


# ---------------------------------------------------------------------------
# Disks and qemu


def _qemu_disk(d: Disk, index: int, warnings: List[str], controllers: Dict[str, Any]) -> List[str]:
    if d.socket:
        drive = nbd_drive(d.socket, index)
    else:
        drive = f"file={d.image},format=raw,if=none,id=d{index},cache=unsafe,discard=unmap,aio=threads"
    if d.iops:
        drive += f",throttling.iops-total={d.iops}"
    args = ["-drive", drive]
    p = d.props
    common = []
    for key, prop in (("logical_block_size", "logical_block_size"), ("physical_block_size", "physical_block_size"),
                      ("minimum_io_size", "min_io_size"), ("optimal_io_size", "opt_io_size"),
                      ("discard_granularity", "discard_granularity")):
        if key in p:
            common.append(f"{prop}={int(p.pop(key))}")
    if d.kind == "virtio":
        dev = [f"virtio-blk-pci,drive=d{index},serial={d.serial},addr={0x10 + index:#x}"] + common
        if d.socket:
            # QEMU would merge adjacent requests of one notification into one
            # NBD command, holding one of its 16 slots where the model holds two.
            dev.append("request-merging=off")
        if "discard_max_hw_bytes" in p:
            v = int(p.pop("discard_max_hw_bytes"))
            dev.append("discard=off" if v == 0 else f"max-discard-sectors={v // 512}")
        if "write_zeroes_max_bytes" in p:
            v = int(p.pop("write_zeroes_max_bytes"))
            dev.append("write-zeroes=off" if v == 0 else f"max-write-zeroes-sectors={v // 512}")
        qsize = None
        if "max_segments" in p:
            qsize = int(p.pop("max_segments")) + 2
        if "queue_depth" in p:
            q = int(p.pop("queue_depth"))
            if qsize is not None and qsize != q:
                warnings.append(f"{d.name}: virtio-blk's max_segments is its queue size - 2; queue_depth {q} is not reproduced")
            qsize = qsize or q
        if qsize is not None:
            if qsize & (qsize - 1) or not 4 <= qsize <= 1024:
                warnings.append(f"{d.name}: virtqueue size {qsize} (max_segments + 2 or queue_depth) is not a power of two "
                                "from 4 to 1024: qemu's default 256 is used")
            else:
                dev.append(f"queue-size={qsize}")
        dev += _num_queues(d, p, int(controllers.get("cpus", 1)), "num-queues", warnings)
        args += ["-device", ",".join(dev)]
    elif d.kind == "virtio-scsi":
        args += _virtio_scsi_disk(d, index, common, int(controllers.get("cpus", 1)), warnings)
    elif d.kind == "scsi":
        warnings.append(f"{d.name}: the guest's scsi disk is QEMU's scsi-hd behind virtio-scsi, whose limits "
                        "(segments, FUA, discard, queue depth) are kind = \"virtio-scsi\"'s, not the generic scsi preset's")
        if not controllers.get("scsi"):
            args += ["-device", "virtio-scsi-pci,id=scsi0,addr=0x8"]
            controllers["scsi"] = True
        dev = [f"scsi-hd,drive=d{index},bus=scsi0.0,channel=0,scsi-id={index},lun=0,serial={d.serial}"] + common
        if "discard_max_hw_bytes" in p:
            dev.append(f"max_unmap_size={int(p.pop('discard_max_hw_bytes'))}")
        args += ["-device", ",".join(dev)]
    elif d.kind == "nvme" and d.multipath is not None:
        args += _qemu_multipath(d, index, common)
    elif d.kind == "nvme":
        dev = [f"nvme,drive=d{index},serial={d.serial},addr={0x10 + index:#x}"] + common
        if "max_hw_sectors_kb" in p:
            kb = int(p.pop("max_hw_sectors_kb"))
            mdts = max(0, (kb // 4).bit_length() - 1)
            if 4 << mdts != kb:
                warnings.append(f"{d.name}: max_hw_sectors_kb {kb} is not 4 KiB times a power of two (nvme MDTS): using {4 << mdts}")
            dev.append(f"mdts={mdts}")
        args += ["-device", ",".join(dev)]
    elif d.kind in ("sata", "ssd"):
        if not controllers.get("ahci"):
            args += ["-device", "ahci,id=ahci0,addr=0x9"]
            controllers["ahci"] = True
        port = controllers.get("ahci_port", 0)
        controllers["ahci_port"] = port + 1
        dev = [f"ide-hd,drive=d{index},bus=ahci0.{port},serial={d.serial},rotation_rate=1"] + common
        args += ["-device", ",".join(dev)]
        warnings.extend(_qemu_ata_warnings(d, controllers.get("kernel", "")))
    for key in sorted(p):
        warnings.append(f"{d.name}: driver value {key} = {p[key]} cannot be set on qemu's {d.kind} device: "
                        "the guest keeps its own (see the limits below)")
    return args


def _qemu_ata_warnings(d: Disk, kernel: str) -> List[str]:
    """QEMU's ide-hd identifies as "QEMU HARDDISK", which only kernels with
    its ATA_QUIRK_BRIDGE_OK entry (6.12 has it, 6.1 not) spare from
    ata_dev_knobble's bridge limits: 6.1 caps its requests at 128 KiB."""
    if kernel != "6.1":
        return []
    return [f"{d.name}: on 6.1 QEMU's sata disk gets libata's bridge limits (ata_dev_knobble: max_hw_sectors_kb "
            "128, UDMA/100); the model's sata preset is a real SATA SSD's (32767): requests above 128 KiB differ"]


def _num_queues(d: Disk, p: Dict[str, Any], cpus: int, prop: str, warnings: List[str]) -> List[str]:
    """A virtio device's queue count: the driver asks for one per CPU and
    gets min(queues, CPUs) (virtblk's init_vq, virtscsi_probe); QEMU offers
    one per vCPU unless told."""
    if "nr_hw_queues" not in p:
        return []
    n = int(p.pop("nr_hw_queues"))
    if n > cpus:
        warnings.append(f"{d.name}: nr_hw_queues {n}: the guest has {cpus} CPU(s) and the driver uses at most one "
                        "queue per CPU")
    return [f"{prop}={n}"]


def _virtio_scsi_disk(d: Disk, index: int, common: List[str], cpus: int, warnings: List[str]) -> List[str]:
    """``virtio-scsi``: a scsi-hd on a virtio-scsi-pci controller of its
    own, so that the disk's driver values become the controller's
    properties: ``max_segments`` is the virtqueue size - 2 (seg_max),
    ``max_hw_sectors_kb`` its ``max_sectors``, ``queue_depth`` its
    ``cmd_per_lun``."""
    p = d.props
    ctrl = [f"virtio-scsi-pci,id=vscsi{index},addr={0x10 + index:#x}"]
    if "max_segments" in p:
        q = int(p.pop("max_segments")) + 2
        if q & (q - 1) or not 4 <= q <= 1024:
            warnings.append(f"{d.name}: max_segments {q - 2}: the virtqueue size (max_segments + 2) must be a power "
                            "of two from 4 to 1024: qemu's default 256 is used")
        else:
            ctrl.append(f"virtqueue_size={q}")
    if "max_hw_sectors_kb" in p:
        ctrl.append(f"max_sectors={min(int(p.pop('max_hw_sectors_kb')) * 2, 0xFFFF)}")
    if "queue_depth" in p:
        ctrl.append(f"cmd_per_lun={int(p.pop('queue_depth'))}")
    ctrl += _num_queues(d, p, cpus, "num_queues", warnings)
    dev = [f"scsi-hd,drive=d{index},bus=vscsi{index}.0,channel=0,scsi-id=0,lun=0,serial={d.serial}"] + common
    if "discard_max_hw_bytes" in p:
        dev.append(f"max_unmap_size={int(p.pop('discard_max_hw_bytes'))}")
    return ["-device", ",".join(ctrl), "-device", ",".join(dev)]


# ---------------------------------------------------------------------------
# The job script


JOB_HEAD = r"""# blkstack validation job (generated)
set -u
export MDADM_NO_UDEV=1 DM_DISABLE_UDEV=1
T=/sys/kernel/tracing
[ -d $T/events ] || T=/sys/kernel/debug/tracing
mkdir -p /dev/blkstack
fail() { echo "blkstack-job: $*"; echo "$*" > /out/job.error; exit 1; }
# find_disk SERIAL: the block device whose serial is SERIAL
find_disk() {
    for b in /sys/block/*; do
        for f in $b/serial $b/device/serial $b/device/vpd_pg80 $b/device/wwid; do
            if [ -r $f ] && grep -q "$1" $f 2>/dev/null; then echo ${b##*/}; return 0; fi
        done
    done
    return 1
}
# wait_disk SERIAL: find_disk, waiting up to 20 s for an asynchronous scan
wait_disk() {
    i=0
    while [ $i -lt 200 ]; do
        n=$(find_disk "$1") && { echo $n; return 0; }
        usleep 100000; i=$((i + 1))
    done
    return 1
}
# part_of DISK NUMBER: the partition's name
part_of() {
    for p in /sys/block/$1/*/partition; do
        [ "$(cat $p)" = "$2" ] && { p=${p%/partition}; echo ${p##*/}; return 0; }
    done
    return 1
}
record() { echo "$1 $2 $(cat /sys/class/block/$2/dev)" >> /out/devices.txt; ln -sf /dev/$2 /dev/blkstack/$1; }
: > /out/devices.txt
"""


def _dev_path(name: str) -> str:
    return f"/dev/blkstack/{name}"


def _strip_dev(name: str) -> str:
    return name[5:] if name.startswith("/dev/") else name


def build_plan(path: str, kernel: str, workdir: str, resolved: Dict[str, Any], blktrace: bool = False,
               disk_latency_ms: Optional[int] = None) -> Plan:
    """*resolved*: ``blkstack._core.check`` of the scenario (sizes, limits).
    *blktrace*: also record each disk with blktrace (its per-CPU binary
    files, in the share's ``blktrace/``). *disk_latency_ms*: slow disks
    (``--disk-latency``; None: the scenario's ``[validate]`` key)."""
    doc = load_toml(path)
    latency = scenario_disk_latency(doc, disk_latency_ms)
    warnings: List[str] = []
    if doc.get("behaviour"):
        warnings.append("the scenario overrides behaviour switches ([behaviour]): the model is not plain "
                        f"profile {kernel}, so differences from the real kernel are expected")
    res_devs = resolved.get("devices") or {}
    disks: List[Disk] = []
    names: List[str] = []
    for i, (name, spec) in enumerate((doc.get("disks") or {}).items()):
        kind = str(spec.get("kind", "")).lower()
        if kind not in GUEST_KINDS:
            raise PlanError(f"disks.{name}.kind: '{kind}' cannot be reproduced in the qemu guest "
                            "(validate supports virtio, virtio-scsi, scsi, nvme and sata disks)")
        rd = res_devs.get(name) or {}
        size = int(rd.get("size_bytes") or parse_size(spec.get("size", 0)))
        q = dict(spec.get("queue") or {})
        lbs = int((rd.get("limits") or {}).get("logical_block_size", q.get("logical_block_size", 512)))
        kind = {"ssd": "sata", "virtio_scsi": "virtio-scsi"}.get(kind, kind)
        d = Disk(name, kind, size, f"BLKSTACK{i:02d}Z", os.path.join(workdir, f"{name}.img"), lbs)
        for key in SYSFS_WRITES:
            if key in q:
                d.writes[key] = q.pop(key)
        d.iosched = dict(q.pop("iosched", None) or {})
        for key in ("zoned",):
            if q.get(key, "none") != "none":
                raise PlanError(f"disks.{name}.queue.zoned: zoned disks cannot be reproduced in the guest")
            q.pop(key, None)
        d.props = q
        d.multipath = spec.get("multipath")
        for j, (pname, pspec) in enumerate((spec.get("partitions") or {}).items()):
            start = int(pspec.get("start", 0))
            prd = res_devs.get(pname) or {}
            count = int(prd.get("size_bytes") or parse_size(pspec.get("size", 0))) // 512
            d.partitions.append((pname, j + 1, start, count))
            names.append(pname)
        model = spec.get("model") or {}
        if isinstance(model, dict) and model.get("iops"):
            # The one service figure that changes what is issued: a device
            # admitting few commands per second lets requests wait in the
            # scheduler, whose choices then decide the order (qemu's I/O
            # throttling admits as many).
            d.iops = int(model["iops"])
        disks.append(d)
        names.insert(len(names) - len(d.partitions), name)

    servers = slow_disk_servers(disks, latency, workdir)
    qemu: List[str] = []
    controllers: Dict[str, Any] = {"cpus": scenario_cpus(doc), "kernel": kernel}
    for i, d in enumerate(disks):
        qemu += _qemu_disk(d, i, warnings, controllers)

    kinds = {d.kind for d in disks}
    mods = []
    if "virtio" in kinds:
        mods.append("virtio_blk")
    if kinds & {"scsi", "virtio-scsi"}:
        mods += ["sd_mod", "virtio_scsi"]
    if "sata" in kinds:
        mods += ["sd_mod", "ahci"]
    if "nvme" in kinds:
        mods.append("nvme")
    md = doc.get("md") or {}
    dm = doc.get("dm") or {}
    if dm:
        mods.append("dm_mod")
        mods += _dm_crypt_modules(dm)
    if md:
        mods.append("md_mod")
        levels = {str(a.get("level")) for a in md.values()}
        for lv, mod in (("0", "raid0"), ("1", "raid1"), ("10", "raid10")):
            if lv in levels:
                mods.append(mod)
        if levels & {"4", "5", "6"}:
            mods.append("raid456")
    mods += sorted({SCHED_MODULES[s] for d in disks if (s := str(d.writes.get("scheduler", ""))) in SCHED_MODULES})

    job = [JOB_HEAD]
    job.append(f"for m in {' '.join(mods)}; do load $m; done")
    for d in disks:
        if d.multipath is not None:
            job += _multipath_job(d)
            continue
        job.append(f"n=$(wait_disk {d.serial}) || fail 'disk {d.name} (serial {d.serial}) did not appear'")
        job.append(f"record {shlex.quote(d.name)} $n")
        for pname, num, _s, _c in d.partitions:
            job.append(f"p=$(part_of $n {num}) || fail 'partition {num} of {d.name} was not found'")
            job.append(f"record {shlex.quote(pname)} $p")
        for key in SYSFS_WRITES:
            if key in d.writes:
                v = d.writes[key]
                if isinstance(v, bool):
                    v = int(v)
                job.append(f"echo {shlex.quote(str(v))} > /sys/block/$n/queue/{key} || fail 'writing {v} to {d.name}/queue/{key} failed'")
        for key, v in d.iosched.items():
            v = int(v) if isinstance(v, bool) else v
            job.append(f"echo {shlex.quote(str(v))} > /sys/block/$n/queue/iosched/{key} || fail 'writing {v} to {d.name}/queue/iosched/{key} failed'")

    # Stacked devices, in file order (md, then dm, as written).
    stack_order = _stack_order(md, dm)
    for kind, name in stack_order:
        if kind == "md":
            job += _md_job(name, md[name], warnings)
        else:
            job += _dm_job(name, dm[name], names)
        names.append(name)

    cgroups_at = len(job)
    # The first open of a new md or dm device reads its partition table
    # (bdev_disk_changed): open each one now, not inside the trace.
    job.append("for d in /dev/blkstack/*; do : < $d; done")
    job.append("grep -r . /sys/block/*/dev /sys/block/*/queue/ > /out/sysfs.txt 2>/dev/null")
    job.append("for d in /sys/block/md*/md/dev-*; do [ -d $d ] && echo \"${d#/sys/block/} $(cat $d/offset) $(cat $d/size)\"; done > /out/md.txt 2>/dev/null")
    # Tracing.
    job.append("echo 0 > $T/tracing_on; echo 65536 > $T/buffer_size_kb; echo > $T/trace")
    job.append(f"for e in {' '.join(TRACE_EVENTS)}; do echo 1 > $T/events/block/$e/enable || fail \"cannot enable $e\"; done")
    job.append("sync; echo 3 > /proc/sys/vm/drop_caches")
    # No periodic (kupdate) writeback: the model has none. Its timer, armed
    # when a device's first page is dirtied (wb_wakeup_delayed), fires after
    # dirty_writeback_centisecs (5 s), and a buffered writer slower than that
    # under TCG saw the flusher start background writeback of a device with
    # no writeout history (wb_over_bg_thresh: its share of the threshold is
    # near 0). An hour keeps it out of any run; 0 would wake it at once.
    job.append("echo 360000 > /proc/sys/vm/dirty_writeback_centisecs")
    job.append("echo 1 > $T/tracing_on")
    workload = doc.get("workload") or {}
    files: Dict[str, str] = {}
    if workload.get("type") == "fio":
        top = stack_order[-1][1] if stack_order else (names[0] if len(disks) == 1 and not disks[0].partitions else None)
        wl, files, used = fio_workload(workload, path, names, top, warnings)
        bios_file = None
    else:
        wl, bios_file = _workload_job(workload, names, warnings, resolved)
        wl = in_cgroup(wl, workload.get("cgroup"))
        used = [str(workload["cgroup"])] if workload.get("cgroup") else []
    job[cgroups_at:cgroups_at] = cgroup_job(doc, names, resolved, used)
    job += blktrace_job(disks) + wl if blktrace else wl
    job.append("rc=$?")
    if blktrace:
        job += BLKTRACE_STOP
    job.append("echo 0 > $T/tracing_on")
    job.append("cat $T/trace > /out/trace.txt")
    for d in disks:
        if d.multipath is not None:
            job += _multipath_post(d)
    job.append("cat $T/per_cpu/cpu0/stats > /out/trace.stats 2>/dev/null")
    job.append("cat /proc/diskstats > /out/diskstats.txt")
    job.append("[ $rc -eq 0 ] || fail \"the workload failed (status $rc)\"")
    job.append("echo blkstack-job: ok")
    return Plan(path, kernel, disks, qemu, "\n".join(job) + "\n", bios_file, warnings, names, files,
                tools=workload.get("type") == "fio" or blktrace, cpus=scenario_cpus(doc),
                sim_sets=nbd_limit_sets(disks), disk_latency_ms=latency, servers=servers)


def slow_disk_servers(disks: Sequence[Disk], latency_ms: int, workdir: str) -> List[List[str]]:
    """With slow disks, each disk's nbdkit command, its socket set on the
    disk (the drive then connects to it); none without."""
    if not latency_ms:
        return []
    try:
        nbdkit = find_nbdkit()
    except SlowDiskError as exc:
        raise PlanError(str(exc))
    out = []
    for d in disks:
        d.socket = os.path.join(workdir, f"{d.name}.sock")
        out.append(nbdkit_command(nbdkit, d.image, d.socket, latency_ms))
    return out


def nbd_limit_sets(disks: Sequence[Disk]) -> List[str]:
    """The one limit a slow disk changes in the guest, as the model's
    ``--set``: QEMU's scsi-hd reports its backend's largest transfer as its
    WRITE SAME limit (Block Limits VPD page), and QEMU's NBD client moves
    at most 32 MiB per command (``NBD_MAX_BUFFER_SIZE``), so a slow scsi
    disk writes zeroes in pieces of 32 MiB at most (unless the scenario
    gives its own limit)."""
    return [f"disks.{d.name}.queue.write_zeroes_max_bytes={NBD_MAX_TRANSFER}" for d in disks
            if d.socket and d.kind in ("scsi", "virtio-scsi") and "write_zeroes_max_bytes" not in d.props]


# blktrace (from the tools share) beside the tracepoints: blktrace's own
# per-CPU relay buffers, written as NAME.blktrace.CPU for real blkparse.
# It writes to the guest's memory and the files are copied out after.
def blktrace_job(disks: Sequence[Disk]) -> List[str]:
    job = ["mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null; mkdir -p /tmp/blktrace /out/blktrace",
           GUEST_TOOLS_MOUNT, "bt_pids="]
    for d in disks:
        job.append(f"/tools/lib/ld-linux-x86-64.so.2 --library-path /tools/lib /tools/bin/blktrace "
                   f"-d /dev/blkstack/{d.name} -o {d.name} -D /tmp/blktrace > /out/blktrace/{d.name}.log 2>&1 &")
        job.append("bt_pids=\"$bt_pids $!\"")
    # blktrace has set up its buffers once its per-CPU files exist.
    job.append("i=0; while [ $i -lt 100 ] && [ $(ls /tmp/blktrace | wc -l) -lt "
               f"$(({len(disks)} * $(nproc))) ]; do sleep 0.1; i=$((i + 1)); done")
    return job


BLKTRACE_STOP = ["sync", "kill -INT $bt_pids; for p in $bt_pids; do wait $p; done",
                 "cp /tmp/blktrace/* /out/blktrace/"]


def scenario_cpus(doc: Dict[str, Any]) -> int:
    """The guest's CPU count: the scenario's top-level ``cpus`` (1 without it)."""
    cpus = doc.get("cpus", 1)
    if isinstance(cpus, bool) or not isinstance(cpus, int) or not 1 <= cpus <= 64:
        raise PlanError(f"cpus: {cpus!r}: the guest takes 1 to 64 CPUs")
    return cpus


def _stack_order(md: Dict[str, Any], dm: Dict[str, Any]) -> List[Tuple[str, str]]:
    """md and dm devices, each after the devices it is built on."""
    items = [("md", n) for n in md] + [("dm", n) for n in dm]
    deps: Dict[str, List[str]] = {}
    for kind, n in items:
        if kind == "md":
            deps[n] = [_strip_dev(str(m)) for m in md[n].get("members", [])]
        else:
            deps[n] = [_strip_dev(t) for t in str(dm[n].get("table", "")).split()]
    done: List[Tuple[str, str]] = []
    names = {n for _k, n in items}
    left = list(items)
    while left:
        for it in left:
            if all(d not in names or d in [x[1] for x in done] for d in deps[it[1]] if d != it[1]):
                done.append(it)
                left.remove(it)
                break
        else:
            raise PlanError(f"the stacked devices depend on each other in a loop: {', '.join(n for _k, n in left)}")
    return done


def _md_job(name: str, spec: Dict[str, Any], warnings: List[str]) -> List[str]:
    if not re.fullmatch(r"md\d+", name):
        raise PlanError(f"md.{name}: the guest names arrays mdN (md0, md1, ...); rename the array")
    level = int(spec.get("level"))
    members = [_strip_dev(str(m)) for m in spec.get("members", [])]
    args = ["mdadm", "--create", f"/dev/{name}", "--run", "--assume-clean", "--force", f"--level={level}",
            f"--raid-devices={len(members)}", f"--metadata={spec.get('metadata', '1.2')}"]
    if level != 0:
        args.append("--bitmap=none")
    if "chunk" in spec:
        args.append(f"--chunk={parse_size(spec['chunk']) // 1024}K")
    if "layout" in spec:
        args.append(f"--layout={spec['layout']}")
    if "data_offset" in spec:
        v = spec["data_offset"]
        sectors = v if isinstance(v, int) else parse_size(v) // 512
        if sectors % 2:
            raise PlanError(f"md.{name}.data_offset: mdadm takes whole KiB; {sectors} sectors is not")
        args.append(f"--data-offset={sectors // 2}K")
    if "size" in spec:
        v = spec["size"]
        sectors = v if isinstance(v, int) else parse_size(v) // 512
        args.append(f"--size={sectors // 2}K")
    for key in ("devices_handle_discard_safely", "rmw_level"):
        pass
    args += [_dev_path(m) for m in members]
    lines = [" ".join(shlex.quote(a) for a in args) + f" < /dev/null || fail 'mdadm --create {name} failed'",
             f"record {name} {name}"]
    if spec.get("devices_handle_discard_safely"):
        lines.append("echo Y > /sys/module/raid456/parameters/devices_handle_discard_safely")
        warnings.append(f"md.{name}: devices_handle_discard_safely is set after the array starts; the guest "
                        "stops and reassembles nothing, so raid5 discard limits may not follow")
    if "rmw_level" in spec:
        lines.append(f"echo {int(spec['rmw_level'])} > /sys/block/{name}/md/rmw_level")
    for key in STACK_SYSFS_WRITES:
        if key in (spec.get("queue") or {}):
            lines.append(f"echo {spec['queue'][key]} > /sys/block/{name}/queue/{key} || fail 'writing {name}/queue/{key} failed'")
    if level != 0:
        # Dirty the superblock now, not in the middle of the traced workload.
        lines.append(f"echo 0 > /sys/block/{name}/md/safe_mode_delay")
        lines.append(f"sz=$(cat /sys/block/{name}/size); blkio dd if=/dev/zero of=/dev/{name} bs=4096 count=1 "
                     f"seek=$((sz / 8 - 1)) oflag=direct || fail 'warm-up write to {name} failed'")
        lines.append(f"echo 'md {name}:' $(cat /sys/block/{name}/md/array_state)")
    return lines


def _qemu_multipath(d: Disk, index: int, common: List[str]) -> List[str]:
    """An NVMe subsystem with one controller per path and the disk as a
    namespace shared by all of them (``nvme-subsys``; ``nvme-ns`` with
    ``shared=on`` attaches to every controller of the subsystem)."""
    paths = int((d.multipath or {}).get("paths", 2))
    sub = f"nvs{index}"
    args = ["-device", f"nvme-subsys,id={sub},nqn=blkstack{index}"]
    for i in range(paths):
        args += ["-device", f"nvme,id={sub}c{i},serial={d.serial},subsys={sub},addr={0x10 + index * 0x4 + i:#x}"]
    args += ["-device", ",".join([f"nvme-ns,drive=d{index},bus={sub}c0,nsid=1,shared=on"] + common)]
    d.props.pop("max_hw_sectors_kb", None)
    return args


def _multipath_job(d: Disk) -> List[str]:
    """Find the multipath head (``nvmeSnN``, not a path ``nvmeScCnN``) by the
    subsystem's serial, find which path heads its path list, set the
    subsystem's iopolicy, and write the disk's sysfs values to each path
    (hidden from ``/sys/block``, but in ``/sys/class/block``; the head is
    bio-based).

    The model's list holds the paths in the reverse of their names
    (``nvme0c1n1`` first); the guest's holds them in the order their
    namespaces joined the head while the controllers were probed, which
    varies from boot to boot, and so do the paths' device numbers (a hidden
    disk has no ``dev`` attribute; its minor, and the head's, come in the
    order the disks were added). So the guest's list head is found and
    recorded under the model's first name: one 4 KiB O_DIRECT read under the
    numa policy goes to the first path of the list (``__nvme_find_path``, or
    the current path, which the head's partition scan took from the list
    head), traced for its device number. The other paths are recorded after
    the workload (``_multipath_post``). Writing the scenario's policy
    afterwards leaves the current path as it was (6.1) or clears it (6.12),
    as it would have without the read (docs/validation.md, P)."""
    mp = d.multipath or {}
    policy = str(mp.get("iopolicy", "numa"))
    names = _path_names(d.name, int(mp.get("paths", 2)))
    lines = [
        "n=; i=0",
        "while [ -z \"$n\" ] && [ $i -lt 200 ]; do",
        f"    for b in /sys/block/nvme*n*; do case ${{b##*/}} in *c*) continue;; esac; grep -q {d.serial} $b/device/serial 2>/dev/null && n=${{b##*/}}; done",
        "    [ -n \"$n\" ] || usleep 100000; i=$((i + 1))",
        "done",
        f"[ -n \"$n\" ] || fail 'multipath disk {d.name} (serial {d.serial}) did not appear'",
        f"record {shlex.quote(d.name)} $n",
        "echo numa > /sys/block/$n/device/iopolicy || fail 'setting iopolicy numa failed'",
        "echo 0 > $T/tracing_on; echo > $T/trace; echo 1 > $T/events/block/block_rq_issue/enable; echo 1 > $T/tracing_on",
        "blkio dd if=/dev/$n of=/dev/null bs=4096 count=1 iflag=direct >/dev/null 2>&1",
        "echo 0 > $T/tracing_on; echo 0 > $T/events/block/block_rq_issue/enable",
        "first=$(grep -o 'block_rq_issue: [0-9]*,[0-9]*' $T/trace | head -1 | sed 's/.* //; s/,/:/')",
        f"[ -n \"$first\" ] || fail 'multipath disk {d.name}: no path took the probe read'",
        f"echo \"{names[-1]} list-head $first\" >> /out/devices.txt",
        f"echo {shlex.quote(policy)} > /sys/block/$n/device/iopolicy || fail 'setting iopolicy {policy} failed'",
        "h=${n#nvme}; s=${h%%n*}; ns=${h#*n}",
        f"mp_{_shell_id(d.name)}=\"$(cat /sys/block/$n/dev) $first\"",
        "for p in /sys/class/block/nvme${s}c*n${ns}; do",
        "    echo 0 > $p/queue/wbt_lat_usec 2>/dev/null",
    ]
    for key in SYSFS_WRITES:
        if key in d.writes:
            v = d.writes[key]
            v = int(v) if isinstance(v, bool) else v
            lines.append(f"    echo {shlex.quote(str(v))} > $p/queue/{key} || fail 'writing {v} to a path of {d.name}: {key} failed'")
    lines.append("done")
    return lines


def _multipath_post(d: Disk) -> List[str]:
    """After the workload: the multipath disk's other paths are the other
    devices of the head's major in the trace (the head and the list head
    excluded), recorded under the model's other names in number order."""
    names = _path_names(d.name, int((d.multipath or {}).get("paths", 2)))
    return [
        f"set -- {' '.join(shlex.quote(p) for p in names[:-1])}",
        f"known=$mp_{_shell_id(d.name)}; mj=${{known%%:*}}",
        "for dv in $(grep -o \"block_rq_issue: $mj,[0-9]*\" /out/trace.txt | sed 's/.* //; s/,/:/' | sort -t: -k2 -n -u); do",
        "    case \" $known \" in *\" $dv \"*) continue;; esac",
        "    [ $# -gt 0 ] || break",
        "    echo \"$1 path $dv\" >> /out/devices.txt; shift",
        "done",
    ]


def _shell_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _path_names(head: str, paths: int) -> List[str]:
    """The model's path disk names (src/scenario/multipath.rs ``path_names``):
    ``nvme0n1`` -> ``nvme0c0n1``, ``nvme0c1n1``; other names get ``c<i>``."""
    m = re.fullmatch(r"(nvme\d+)(n\d+)", head)
    return [f"{m.group(1)}c{i}{m.group(2)}" if m else f"{head}c{i}" for i in range(paths)]


def _dm_crypt_modules(dm: Dict[str, Any]) -> List[str]:
    """The modules a table with a crypt target needs loaded, crypto first
    (``guest.DM_CRYPT_MODULES``: the guest cannot autoload them)."""
    from .guest import DM_CRYPT_MODULES
    if any(" crypt " in f" {spec.get('table', '')} " for spec in dm.values()):
        return list(DM_CRYPT_MODULES)
    return []


def _dm_job(name: str, spec: Dict[str, Any], known: Sequence[str]) -> List[str]:
    table = str(spec.get("table", "")).strip()
    out_lines = []
    for line in table.splitlines():
        if not line.strip() or line.strip().startswith("#"):
            continue
        words = []
        for w in line.split():
            base = _strip_dev(w)
            words.append(_dev_path(base) if base in known else w)
        out_lines.append(" ".join(words))
    text = "\\n".join(out_lines)
    lines = [f"printf '{text}\\n' | dmsetup create {shlex.quote(name)} || fail 'dmsetup create {name} failed'",
             f"dn=$(basename $(readlink -f /dev/mapper/{shlex.quote(name)}))",
             "[ -e /sys/block/$dn ] || for b in /sys/block/dm-*; do [ \"$(cat $b/dm/name)\" = " + shlex.quote(name) + " ] && dn=${b##*/}; done",
             f"record {shlex.quote(name)} $dn"]
    for key in STACK_SYSFS_WRITES:
        if key in (spec.get("queue") or {}):
            lines.append(f"echo {spec['queue'][key]} > /sys/block/$dn/queue/{key} || fail 'writing {name}/queue/{key} failed'")
    return lines


_FLAG_RWF = {"fua": "fua", "nowait": "nowait", "polled": "polled", "atomic": "atomic"}


def _workload_job(w: Dict[str, Any], names: Sequence[str], warnings: List[str],
                  resolved: Optional[Dict[str, Any]] = None) -> Tuple[List[str], Optional[str]]:
    ty = w.get("type")
    devs = (resolved or {}).get("devices") or {}
    # Discard limits are the whole disk's; a partition's bios are cut on the disk's grid.
    limits = {n: (devs.get(d.get("partition_of")) or d).get("limits") or {} for n, d in devs.items()}
    starts = {n: int(d.get("start") or 0) for n, d in devs.items() if d.get("partition_of")}
    if not w:
        warnings.append("the scenario has no workload: only the queue limits are compared")
        return ["true"], None

    def dev(v: Any, key: str) -> str:
        s = str(v)
        base = _strip_dev(s)
        if base in names:
            return _dev_path(base)
        if s in ("/dev/zero", "/dev/null"):
            return s
        raise PlanError(f"workload.{key}: '{s}' is not a scenario device")

    if ty == "dd":
        args = ["blkio", "dd", f"if={dev(w.get('if', ''), 'if')}", f"of={dev(w.get('of', ''), 'of')}",
                f"bs={parse_dd_number(w.get('bs', 512))}"]
        for key in ("count", "skip", "seek"):
            if key in w:
                args.append(f"{key}={parse_dd_number(w[key])}")
        for key in ("iflag", "oflag"):
            if key in w:
                args.append(f"{key}={w[key]}")
        _buffer_warnings(w, warnings)
        return [" ".join(shlex.quote(a) for a in args)], None
    if ty == "bios":
        depth = int(w.get("iodepth", 0) or 0)
        entries = w.get("bio") or []
        depth = depth or max(1, len(entries))
        batch = int(w.get("batch", 1) or 1)
        if w.get("plug") and depth > 1 and batch < 3:
            warnings.append("workload.plug: io_submit plugs only calls of 3 or more iocbs; with batch "
                            f"{batch} the guest's submissions are not plugged")
        lines = [f"depth {depth} batch {batch}"]
        default_dev = w.get("device")
        for i, e in enumerate(entries):
            op = str(e.get("op"))
            d = dev(e.get("device", default_dev), f"bio[{i}].device")
            sector = int(e.get("sector", 0))
            if "bvecs" in e:
                warnings.append(f"workload.bio[{i}].bvecs: physical addresses cannot be chosen in the guest; "
                                "its buffer is one contiguous huge page")
                size = sum(int(b[1]) for b in e["bvecs"])
            else:
                size = parse_size(e.get("size", 0)) if op != "flush" else 0
            flags = [str(f) for f in e.get("flags", [])]
            rwf = []
            waited = op in ("discard", "secure_erase", "write_zeroes", "flush") or (op == "read" and depth == 1)
            for f in flags:
                if f in _FLAG_RWF and op in ("read", "write"):
                    rwf.append(_FLAG_RWF[f])
                elif f == "syscall":
                    pass  # the model gives the bio the flags of the system call the guest makes
                elif f == "sync" and (op == "write" or waited):
                    pass  # O_DIRECT writes are REQ_SYNC; submit_bio_wait adds it to the others
                elif f == "idle" and op == "write":
                    pass  # O_DIRECT writes are REQ_SYNC | REQ_IDLE (dio_bio_write_op)
                elif f == "nounmap" and op == "write_zeroes":
                    pass  # BLKZEROOUT passes BLKDEV_ZERO_NOUNMAP
                else:
                    warnings.append(f"workload.bio[{i}].flags: '{f}' on a {op} cannot be requested from user space "
                                    f"{'through AIO ' if op == 'read' else ''}; the guest's bio goes without it")
            said = "sync" in flags or "syscall" in flags
            if op == "write" and not said:
                warnings.append(f"workload.bio[{i}]: an O_DIRECT write is always REQ_SYNC; add flags = [\"syscall\"] "
                                "for the model to match")
            if waited and not said:
                how = "a synchronous O_DIRECT read" if op == "read" else f"the {op} ioctl" if op != "flush" else "fsync"
                warnings.append(f"workload.bio[{i}]: {how} ends in submit_bio_wait, which sets REQ_SYNC (a read: "
                                "from 5.16); add flags = [\"syscall\"] for the model to match")
            if op in ("discard", "secure_erase"):
                dname = _strip_dev(str(e.get("device", default_dev)))
                gran = int(((limits.get(dname) or {}).get("discard_granularity")) or 0) // 512
                start = starts.get(dname, 0) + sector
                if gran > 1 and start % gran:
                    ioctl = "BLKDISCARD" if op == "discard" else "BLKSECDISCARD"
                    warnings.append(f"workload.bio[{i}]: the guest's {ioctl} "
                                    f"ioctl cuts a range that starts off the discard granularity grid ({gran} sectors) "
                                    "into a first bio up to the next grid point (blkdev_issue_discard); the model "
                                    "submits the entry as one bio")
            if op in ("zone_append",):
                raise PlanError(f"workload.bio[{i}].op: {op} cannot be issued from user space")
            repeat = int(e.get("repeat", 1))
            stride = int(e.get("stride", size // 512 if size else 0))
            lines.append(f"{op} {d} {sector * 512} {size} {','.join(rwf) or '-'} {repeat} {stride * 512}")
        return ["blkio bios /out/bios.txt"], "\n".join(lines) + "\n"
    raise PlanError(f"workload.type: '{ty}' cannot be run in the guest yet (validate runs dd and bios workloads)")


def read_devices(share: str) -> Dict[str, Tuple[str, str]]:
    """{scenario name: (guest name, "maj,min")} from the job's devices.txt."""
    out: Dict[str, Tuple[str, str]] = {}
    path = os.path.join(share, "devices.txt")
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 3:
                out[parts[0]] = (parts[1], parts[2].replace(":", ","))
    return out


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True)


# ---------------------------------------------------------------------------
# fio workloads: Debian's fio in the guest runs the scenario's own jobs


CGROUP_ROOT = "/sys/fs/cgroup"
# What the guest cannot give a fio job the way the model does.
_FIO_TIMING_OPTIONS = ("runtime", "time_based", "ramp_time")


@dataclass
class FioJobs:
    """The scenario's fio jobs as the guest runs them: the job file's text
    with device names and cgroups translated, and what it warns about."""

    text: str
    # Job section name -> the cgroup its process joins (cgroup v2).
    cgroups: Dict[str, str] = field(default_factory=dict)


def fio_job_source(w: Dict[str, Any], scenario: str) -> str:
    """The fio jobs of a ``type = "fio"`` workload as one job file: ``job``,
    ``jobfile`` (relative to the scenario) or ``args`` (fio's options: those
    before the first ``--name`` are global, each ``--name`` starts a job)."""
    base = os.path.dirname(os.path.abspath(scenario))
    if w.get("job") is not None:
        return _inline_includes(str(w["job"]), base, "workload.job")
    if w.get("jobfile") is not None:
        path = os.path.join(base, str(w["jobfile"]))
        return _inline_includes(_read_text(path, "workload.jobfile"), os.path.dirname(path), path)
    lines = ["[global]"]
    for i, a in enumerate(w.get("args") or []):
        a = str(a)
        if not a.startswith("--"):
            path = os.path.join(base, a)
            lines.append(_inline_includes(_read_text(path, f"workload.args[{i}]"), os.path.dirname(path), path))
            continue
        key, eq, value = a[2:].partition("=")
        lines.append(f"[{value}]" if key == "name" else f"{key}={value}" if eq else key)
    return "\n".join(lines) + "\n"


def _read_text(path: str, what: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError as exc:
        raise PlanError(f"{what}: {path}: {exc.strerror or exc}")


def _inline_includes(text: str, base: str, what: str) -> str:
    """The job file with each ``include FILE`` line replaced by the file
    (the guest sees only the share)."""
    out = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("include") and s[7:8] in (" ", "\t"):
            path = os.path.join(base, s[8:].strip())
            out.append(_inline_includes(_read_text(path, f"{what}: include"), os.path.dirname(path), path))
        else:
            out.append(line)
    return "\n".join(out)


def _fio_sections(text: str) -> List[Tuple[str, List[Tuple[str, str, str]]]]:
    """(section name, [(key, value, line)]) in order; comment and blank
    lines are dropped, options before any section belong to ``global``."""
    sections: List[Tuple[str, List[Tuple[str, str, str]]]] = [("global", [])]
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1].strip(), []))
            continue
        key, _eq, value = line.partition("=")
        sections[-1][1].append((key.strip().lower(), value.strip(), line))
    return sections if sections[0][1] else sections[1:]


def guest_fio_jobs(text: str, names: Sequence[str], top: Optional[str], cgroup: Optional[str],
                   warnings: List[str]) -> FioJobs:
    """Translate a job file for the guest: ``filename`` scenario devices to
    /dev/blkstack/NAME (the top of the stack for a job without one), fio's
    ``cgroup`` option (cgroup v1) to the cgroup v2 group each job joins."""
    out: List[str] = []
    groups: Dict[str, str] = {}
    global_group = cgroup
    global_file = False
    timing: List[str] = []
    jobs = 0
    for name, opts in _fio_sections(text):
        is_global = name.lower() == "global"
        out.append(f"[{name}]")
        group = global_group
        has_file = global_file
        for key, value, line in opts:
            if key == "filename":
                # fio adds the files of every filename= it reads: one line per section.
                has_file = True
                out.append("filename=" + ":".join(_fio_device(v, names) for v in value.split(":")))
            elif key == "cgroup":
                group = value
            elif key in ("cgroup_nodelete", "cgroup_weight"):
                warnings.append(f"fio option {key}: cgroup v1 only; the guest's groups are the scenario's [cgroups]")
            else:
                if key in _FIO_TIMING_OPTIONS and key not in timing:
                    timing.append(key)
                if key == "numjobs" and value not in ("", "1"):
                    jobs += 1
                out.append(line)
        if is_global:
            global_group, global_file = group, has_file
            continue
        if not has_file and top:
            out.append(f"filename={_dev_path(top)}")
        jobs += 1
        if group:
            groups[name] = group
    if timing:
        warnings.append(f"fio {', '.join(timing)}: how many I/Os the guest's fio issues in that time depends on the "
                        "guest's speed under TCG, so the traces can differ in length")
    if jobs > 1:
        warnings.append("several fio jobs run at once in the guest: their I/Os interleave by the guest's timing")
    return FioJobs("\n".join(out) + "\n", groups)


def _fio_device(value: str, names: Sequence[str]) -> str:
    base = _strip_dev(value.strip())
    if base not in names:
        raise PlanError(f"workload: fio filename '{value}' is not a scenario device")
    return _dev_path(base)


def fio_randomness_warnings(text: str, warnings: List[str]) -> None:
    """Seeds the guest's fio draws itself (``randrepeat=0`` without
    ``randseed``: /dev/urandom) cannot be the model's."""
    opts = {k for _n, o in _fio_sections(text) for k, v, _l in o if not (k == "randrepeat" and v in ("1", "true"))}
    if "randrepeat" in opts and "randseed" not in opts:
        warnings.append("fio randrepeat=0 without randseed: the guest's fio seeds from /dev/urandom, the model from "
                        "the scenario's seed, so random offsets differ")


# The `[host] cpu` classes (src/host_cpu.rs CLASSES but "none"), for
# `validate --host-cpu` to refuse another name before a guest boots.
HOST_CPU_CLASSES = ("server", "vm", "tcg")


def host_cpu_sets(doc: Dict[str, Any], host_cpu: Optional[str], warnings: List[str]) -> List[str]:
    """``--set`` overrides that give the model the guest's CPU time
    (``validate --host-cpu CLASS``, e.g. ``tcg``: ``[host] cpu``), unless
    the scenario has a ``[host]`` table of its own, which is kept."""
    if not host_cpu:
        return []
    if "host" in doc:
        warnings.append(f"--host-cpu {host_cpu}: the scenario's own [host] table is used")
        return []
    return [f"host.cpu={host_cpu}"]


def fio_version_sets(w: Dict[str, Any], guest_version: str, warnings: List[str]) -> List[str]:
    """``--set`` overrides that give the model the guest fio's seed rules:
    ``workload.fio_version`` when the scenario leaves it out, else a warning
    when it names another release."""
    mine = w.get("fio_version")
    if mine is None:
        return [f"workload.fio_version={guest_version}"]
    if str(mine) != guest_version:
        warnings.append(f"workload.fio_version = \"{mine}\", but the guest runs fio {guest_version}: random "
                        "offsets follow different seed rules")
    return []


def _buffer_warnings(w: Dict[str, Any], warnings: List[str]) -> None:
    """User-buffer layouts the guest cannot reproduce (dd and fio)."""
    if int(w.get("buffer_offset", 0) or 0):
        warnings.append("workload.buffer_offset: the guest's buffer starts on a page boundary")
    if float(w.get("buffer_fragmentation", 0) or 0):
        warnings.append("workload.buffer_fragmentation: the guest's buffer is a huge page, not fragmented")
    if w.get("buffer_segments"):
        warnings.append("workload.buffer_segments: the guest's buffer is a huge page, one piece")


def fio_workload(w: Dict[str, Any], scenario: str, names: Sequence[str], top: Optional[str],
                 warnings: List[str]) -> Tuple[List[str], Dict[str, str], List[str]]:
    """The job lines that run a fio workload, the files they read
    (``job.fio`` in the share) and the cgroups its jobs join."""
    text = fio_job_source(w, scenario)
    _buffer_warnings(w, warnings)
    fio_randomness_warnings(text, warnings)
    jobs = guest_fio_jobs(text, names, top, w.get("cgroup"), warnings)
    job_text = jobs.text
    if jobs.cgroups:
        job_text = _fio_join_cgroups(job_text, jobs.cgroups)
    lines = [f"{GUEST_FIO_CMD} --output=/out/fio.txt /out/job.fio"]
    files = {"job.fio": job_text}
    if jobs.cgroups:
        files["cgjoin.sh"] = CGJOIN
    return lines, files, sorted(set(jobs.cgroups.values()))


# fio from the read-only tools share (guest.build_tools), with its own loader.
# The loader runs as /bin/fio (a link), so that the task's comm is fio's.
GUEST_TOOLS_MOUNT = ("mkdir -p /tools && { [ -e /tools/bin/fio ] || mount -t 9p -o trans=virtio,version=9p2000.L,"
                     "msize=262144,ro tools /tools; }")
GUEST_FIO_CMD = (GUEST_TOOLS_MOUNT + " && ln -sf /tools/lib/ld-linux-x86-64.so.2 /bin/fio && "
                 "fio --library-path /tools/lib /tools/bin/fio")


def _fio_join_cgroups(text: str, groups: Dict[str, str]) -> str:
    """Each job section in *groups* gets an ``exec_prerun`` that moves the
    job's own process into its cgroup v2 group before its first I/O (fio
    runs the command with system(3), so the shell's parent is the job): one
    fio process keeps fio's thread numbers, and so its random seeds."""
    out = []
    for line in text.splitlines():
        out.append(line)
        s = line.strip()
        if s.startswith("[") and s.endswith("]") and s[1:-1] in groups:
            g = groups[s[1:-1]]
            out.append(f"exec_prerun=sh /out/cgjoin.sh {g}")
    return "\n".join(out) + "\n"


# cgjoin.sh GROUP: move the nearest ancestor that is not a shell (fio's job
# process; the shell system(3) starts may or may not fork again) into GROUP.
CGJOIN = f"""p=$PPID
while [ "$(cat /proc/$p/comm)" = sh ]; do p=$(cut -d' ' -f4 /proc/$p/stat); [ "$p" -gt 1 ] || exit 1; done
echo $p > {CGROUP_ROOT}/$1/cgroup.procs
"""



# ---------------------------------------------------------------------------
# cgroups: the scenario's [cgroups.NAME] tables in the guest's cgroup v2


# cgexec GROUP CMD...: run CMD inside GROUP (its shell joins the group, then execs).
CGROUP_HEAD = f"""CG={CGROUP_ROOT}
mkdir -p $CG
grep -q " $CG cgroup2 " /proc/mounts || mount -t cgroup2 none $CG || fail 'cannot mount cgroup2'
cgexec() {{ g=$1; shift; sh -c 'echo $$ > "$0"/cgroup.procs && exec "$@"' "$CG/$g" "$@"; }}
# devno NAME: the guest's MAJ:MIN of scenario device NAME
devno() {{ cat /sys/class/block/$(basename $(readlink -f /dev/blkstack/$1))/dev; }}"""


def cgroup_tables(doc: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The scenario's ``[cgroups.NAME]`` tables, read tolerantly: a group
    is a table of cgroup v2 file names and what is written to each (a
    string, a number, or a list of lines written one by one)."""
    groups = doc.get("cgroups") or {}
    if not isinstance(groups, dict):
        raise PlanError("cgroups: a table of [cgroups.NAME] tables")
    out: Dict[str, Dict[str, Any]] = {}
    for name, files in groups.items():
        if not isinstance(files, dict):
            raise PlanError(f"cgroups.{name}: a table of cgroup file names")
        _check_cgroup_name(name, f"cgroups.{name}")
        out[name] = files
    return out


def _check_cgroup_name(name: str, where: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*", name):
        raise PlanError(f"{where}: not a cgroup name the guest can create")


def _cgroup_line(value: str, names: Sequence[str], devnos: Dict[str, str], where: str) -> str:
    """One line for a cgroup file, its device (``vdb`` or the model's
    ``MAJ:MIN``) turned into the guest's MAJ:MIN (a shell expansion)."""
    words = value.split()
    if len(words) < 2:
        return shlex.quote(value)  # a plain value: "100", "max"
    first = words[0]
    rest = " ".join(words[1:])
    name = _strip_dev(first)
    if name not in names and re.fullmatch(r"\d+:\d+", first):
        name = devnos.get(first, "")
        if not name:
            raise PlanError(f"{where}: device {first} is none of the scenario's devices")
    elif name not in names:
        if "=" in first or first == "default":
            return shlex.quote(value)  # "default 100", or a line without a device
        raise PlanError(f"{where}: '{first}' is not a scenario device")
    return f"\"$(devno {name})\"" + (shlex.quote(" " + rest) if rest else "")


def cgroup_job(doc: Dict[str, Any], names: Sequence[str], resolved: Optional[Dict[str, Any]] = None,
               used: Sequence[str] = ()) -> List[str]:
    """Job lines that mount cgroup2, enable the io controller down to each
    group, create the groups (those of [cgroups] and those the workload
    names, *used*) and write their files (in file order)."""
    groups = cgroup_tables(doc)
    for g in used:
        _check_cgroup_name(g, f"workload: cgroup '{g}'")
        groups.setdefault(g, {})
    if not groups:
        return []
    devnos = {f"{d.get('major')}:{d.get('minor')}": n for n, d in ((resolved or {}).get("devices") or {}).items()
              if d.get("major") is not None}
    lines = [CGROUP_HEAD]
    parents = set()
    for name in groups:
        parts = name.split("/")
        for i in range(len(parts)):
            parents.add("/".join(parts[:i]))
    for p in sorted(parents, key=lambda x: x.count("/") + (1 if x else 0)):
        d = f"$CG/{p}" if p else "$CG"
        lines.append(f"mkdir -p {d}; echo +io > {d}/cgroup.subtree_control || fail 'cannot enable the io controller in {p or '/'}'")
    for name, files in groups.items():
        lines.append(f"mkdir -p $CG/{name}")
        for fname, value in files.items():
            if not re.fullmatch(r"[a-z][a-z0-9_.]*", fname):
                raise PlanError(f"cgroups.{name}: '{fname}' is not a cgroup file name")
            values = value if isinstance(value, list) else [value]
            for v in values:
                text = _cgroup_line(str(int(v) if isinstance(v, bool) else v), names, devnos, f"cgroups.{name}.{fname}")
                lines.append(f"echo {text} > $CG/{name}/{fname} || fail \"writing {fname} of {name} failed\"")
    return lines


def in_cgroup(lines: List[str], group: Optional[str]) -> List[str]:
    """A workload's command lines run inside cgroup *group* (``cgroup = "NAME"``)."""
    if not group:
        return lines
    return [f"cgexec {shlex.quote(str(group))} {line}" for line in lines]
