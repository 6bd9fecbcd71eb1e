"""Capture a live block stack as a scenario: ``blkstack capture``.

Reads, under a root directory (``/`` on a live machine, a copy of its files
in tests):

* ``/sys/block/*``: each disk's ``dev``, ``size`` and ``queue/*`` limits,
  ``device/queue_depth`` and ``device/vendor`` (which SCSI-disk kind), the
  number of ``mq/*`` hardware queues, its partitions (``X/X1/start``,
  ``size``), ``slaves/`` and ``holders/``;
* md arrays: ``md/level``, ``chunk_size``, ``layout``,
  ``metadata_version``, ``component_size`` and per member ``dev-*/slot``
  and ``offset`` (the data offset), else ``/proc/mdstat``;
* dm devices: ``dm/name``, and their tables from ``dmsetup table`` output
  (linear, striped and crypt targets; a crypt table keeps dmsetup's zeros in
  place of the key, which only needs the right length)
  (a file, or the command itself on a live machine);
* ``/proc/sys/kernel/osrelease``, for the closest kernel profile;
* nvme native multipath: a head disk's ``multipath/`` links to its paths
  (``nvmeXcYnZ``, hidden disks) with each path's ``ana_state``, and its
  subsystem's ``iopolicy`` (``device/iopolicy``), as
  ``[disks.NAME.multipath]``;
* cgroup v2 groups directly under ``/sys/fs/cgroup``: their ``io.max``,
  ``io.weight`` and ``io.bfq.weight`` lines for the captured devices, as
  ``[cgroups.NAME]`` tables (nested groups are left out and named).

and writes a scenario ``blkstack run`` accepts: every disk with the
driver's values as read and the current sysfs settings, the md and dm
devices stacked on them, and a small workload (a short O_DIRECT dd read of
the top of the stack). Whatever cannot be modelled (loop devices, CD
drives, a dm target other than linear, striped and crypt) is left out and named
in a comment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from blkstack import _core

# queue/ files that are driver values or sysfs writes in a scenario.
INT_KEYS = ("logical_block_size", "physical_block_size", "minimum_io_size", "optimal_io_size", "max_hw_sectors_kb",
            "max_segments", "max_segment_size", "virt_boundary_mask", "dma_alignment", "chunk_sectors",
            "discard_granularity", "discard_max_hw_bytes", "max_discard_segments", "write_zeroes_max_bytes",
            "max_sectors_kb", "discard_max_bytes", "nr_requests", "nomerges")
# bfq's iosched/ files, keys of the disk's queue.iosched table when bfq is
# the scheduler (slice_idle is read as slice_idle_us, which keeps microseconds).
BFQ_IOSCHED_KEYS = ("slice_idle_us", "low_latency", "back_seek_max", "back_seek_penalty", "fifo_expire_sync",
                    "fifo_expire_async", "timeout_sync", "max_budget", "strict_guarantees")
# queue/ files of an nvme multipath head that are its own, not its paths'.
HEAD_ONLY_KEYS = ("scheduler", "nr_requests", "wbt_lat_usec", "iosched")
# What md and dm devices accept (sysfs writes on the array).
STACK_WRITES = ("max_sectors_kb", "discard_max_bytes")
SKIPPED_PREFIXES = ("loop", "ram", "zram", "sr", "fd", "nbd", "mmcblk", "xvd", "rbd", "pmem", "ubi", "mtd")
MIB = 1 << 20


class CaptureError(Exception):
    """The root holds no block devices blkstack can model."""


class Reader:
    """Files under a root directory; missing or unreadable ones read as None."""

    def __init__(self, root: str) -> None:
        self.root = root

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *[p.lstrip("/") for p in parts])

    def text(self, *parts: str) -> Optional[str]:
        try:
            with open(self.path(*parts), encoding="utf-8", errors="replace") as fh:
                return fh.read().strip()
        except OSError:
            return None

    def int(self, *parts: str) -> Optional[int]:
        t = self.text(*parts)
        try:
            return int(t, 0) if t is not None else None
        except ValueError:
            return None

    def list(self, *parts: str) -> List[str]:
        try:
            return sorted(os.listdir(self.path(*parts)))
        except OSError:
            return []


def toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(str(v))


def _version(s: str) -> Optional[Tuple[int, int]]:
    m = re.match(r"(\d+)\.(\d+)", s)
    return (int(m.group(1)), int(m.group(2))) if m else None


def profile_for(release: Optional[str], profiles: Sequence[str], default: str) -> Tuple[str, str]:
    """(profile, why): the newest of *profiles* not newer than the release."""
    have = _version(release or "")
    if have is None:
        why = f"kernel {release}" if release else "no /proc/sys/kernel/osrelease"
        return default, f"{why}: the default profile"
    known = sorted((v, p) for p in profiles for v in [_version(p)] if v is not None)
    fits = [p for v, p in known if v <= have]
    return (fits[-1] if fits else known[0][1]), f"the machine runs {release}"


def disk_kind(r: Reader, name: str, rotational: bool) -> Optional[str]:
    if name.startswith("nvme"):
        return "nvme"
    if name.startswith("vd"):
        return "virtio"
    if name.startswith("nullb"):
        return "null_blk"
    if name.startswith("sd"):
        vendor = (r.text("sys/block", name, "device/vendor") or "").strip()
        if vendor == "ATA":
            return "hdd" if rotational else "sata"
        if vendor == "Msft":
            return "hyperv"
        if vendor == "QEMU":
            # QEMU's scsi-hd, nearly always behind virtio-scsi.
            return "virtio-scsi"
        return "scsi"
    return None


# queue/iosched/ files the model reads, per scheduler.
IOSCHED_KEYS = {"kyber": ("read_lat_nsec", "write_lat_nsec")}


def _queue(r: Reader, name: str) -> Dict[str, Any]:
    q: Dict[str, Any] = {}
    base = ("sys/block", name, "queue")
    for key in INT_KEYS:
        v = r.int(*base, key)
        if v is not None:
            q[key] = v
    sched = r.text(*base, "scheduler")
    if sched:
        m = re.search(r"\[([^\]]+)\]", sched)
        q["scheduler"] = m.group(1) if m else sched.split()[0]
    iosched = {k: v for k in IOSCHED_KEYS.get(q.get("scheduler", ""), ()) if (v := r.int(*base, "iosched", k)) is not None}
    if q.get("scheduler") == "bfq":
        iosched.update(_bfq_iosched(r, base))
    if iosched:
        q["iosched"] = iosched
    for key in ("rotational",):
        v = r.int(*base, key)
        if v is not None:
            q[key] = bool(v)
    zoned = r.text(*base, "zoned")
    if zoned:
        q["zoned"] = zoned
    wc = r.text(*base, "write_cache")
    if wc in ("write back", "write through"):
        q["write_cache"] = wc
    wbt = r.int(*base, "wbt_lat_usec")
    if wbt is not None and wbt != _wbt_default_usec(q):
        q["wbt_lat_usec"] = wbt
    return q


def _wbt_default_usec(q: Dict[str, Any]) -> int:
    """What ``wbt_lat_usec`` shows when nobody wrote it
    (``wbt_default_latency_nsec``): 75 ms rotational, 2 ms otherwise. A
    value equal to it is left out: the model then applies the kernel's own
    rule, which also keeps wbt off under bfq (6.1 shows the default there
    while wbt is off; 6.12 shows 0, which is kept)."""
    return 75000 if q.get("rotational", True) else 2000


def _bfq_iosched(r: Reader, base: Tuple[str, ...]) -> Dict[str, Any]:
    """bfq's tunables from queue/iosched/, as keys of the queue.iosched table."""
    out: Dict[str, Any] = {}
    for key in BFQ_IOSCHED_KEYS:
        v = r.int(*base, "iosched", key)
        if v is None:
            continue
        if key == "slice_idle_us" and v % 1000 == 0:
            out["slice_idle"] = v // 1000
        else:
            out[key] = v
    return out


class Stack:
    """What was read: disks, md arrays, dm devices, and notes."""

    def __init__(self) -> None:
        self.disks: Dict[str, Dict[str, Any]] = {}
        self.md: Dict[str, Dict[str, Any]] = {}
        self.dm: Dict[str, Dict[str, Any]] = {}  # by sysfs name (dm-N)
        self.devno: Dict[str, str] = {}  # "maj:min" -> scenario name
        self.holders: Dict[str, List[str]] = {}
        self.notes: List[str] = []
        self.sysfs_queue: Dict[str, Dict[str, Any]] = {}  # scenario name -> queue values read
        self.cgroups: Dict[str, Dict[str, List[str]]] = {}  # group -> control file -> lines


def read_disk(r: Reader, st: Stack, name: str) -> None:
    q = _queue(r, name)
    sectors = r.int("sys/block", name, "size") or 0
    kind = disk_kind(r, name, bool(q.get("rotational")))
    if kind is None or sectors == 0:
        why = "empty" if sectors == 0 else "a kind blkstack does not model"
        st.notes.append(f"{name}: left out ({why})")
        return
    depth = r.int("sys/block", name, "device/queue_depth")
    if depth is None and q.get("scheduler") == "none" and "nr_requests" in q:
        depth = q["nr_requests"]  # without a scheduler, nr_requests is the tag depth
    if depth is not None:
        q["queue_depth"] = depth
    hw = [d for d in r.list("sys/block", name, "mq") if d.isdigit()]
    if hw:
        q["nr_hw_queues"] = len(hw)
    parts = {}
    for sub in r.list("sys/block", name):
        start = r.int("sys/block", name, sub, "start")
        size = r.int("sys/block", name, sub, "size")
        if sub.startswith(name) and start is not None and size:
            parts[sub] = {"start": start, "size": f"{size}s"}
            dev = r.text("sys/block", name, sub, "dev")
            if dev:
                st.devno[dev] = sub
            st.holders[sub] = r.list("sys/block", name, sub, "holders")
    st.disks[name] = {"kind": kind, "size": sectors * 512, "queue": q, "partitions": parts}
    mp = read_multipath(r, name) if kind == "nvme" else None
    if mp:
        # The head is bio-based: its scheduler, nr_requests and wbt are not
        # the paths' (hidden disks, whose queues the scenario describes).
        st.disks[name]["queue"] = {k: v for k, v in q.items() if k not in HEAD_ONLY_KEYS}
        st.disks[name]["multipath"] = mp
    st.sysfs_queue[name] = q


def read_multipath(r: Reader, name: str) -> Optional[Dict[str, Any]]:
    """An nvme head's paths (``multipath/nvmeXcYnZ``, by controller
    number), their ANA states and the subsystem's iopolicy; None for a
    namespace without native multipath."""
    paths = [p for p in r.list("sys/block", name, "multipath") if re.fullmatch(r"nvme\d+c\d+n\d+", p)]
    if not paths:
        return None
    paths.sort(key=lambda p: int(re.search(r"c(\d+)n", p).group(1)))
    mp: Dict[str, Any] = {"paths": len(paths)}
    policy = r.text("sys/block", name, "device", "iopolicy")
    if policy and policy != "numa":
        mp["iopolicy"] = policy
    ana = [r.text("sys/block", name, "multipath", p, "ana_state") or "optimized" for p in paths]
    if any(a != "optimized" for a in ana):
        mp["ana"] = ana
    return mp


MDSTAT_LINE = re.compile(r"^(md\d+)\s*:\s*active\s+(?:\([^)]*\)\s+)?(raid\d+|linear)\s+(.*)$")


def read_mdstat(r: Reader) -> Dict[str, Dict[str, Any]]:
    """md arrays from /proc/mdstat: level, members by slot, metadata, chunk."""
    out: Dict[str, Dict[str, Any]] = {}
    lines = (r.text("proc/mdstat") or "").splitlines()
    for i, line in enumerate(lines):
        m = MDSTAT_LINE.match(line)
        if not m:
            continue
        members = sorted((int(slot), dev) for dev, slot in re.findall(r"(\S+?)\[(\d+)\]", m.group(3)))
        info: Dict[str, Any] = {"level": m.group(2), "members": [d for _, d in members]}
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        sup = re.search(r"super (\S+)", nxt)
        chunk = re.search(r"(\d+)k chunk", nxt, re.IGNORECASE)
        if sup:
            info["metadata"] = sup.group(1)
        if chunk:
            info["chunk"] = int(chunk.group(1)) * 1024
        out[m.group(1)] = info
    return out


def read_md(r: Reader, st: Stack, name: str, mdstat: Dict[str, Dict[str, Any]]) -> None:
    base = ("sys/block", name, "md")
    from_stat = mdstat.get(name, {})
    level = r.text(*base, "level") or from_stat.get("level")
    slots = []
    for d in r.list(*base):
        if d.startswith("dev-"):
            slot = r.int(*base, d, "slot")
            if slot is not None:
                slots.append((slot, d[4:], r.int(*base, d, "offset")))
    slots.sort()
    members = [m for _, m, _ in slots] or from_stat.get("members") or r.list("sys/block", name, "slaves")
    if not level or not members:
        st.notes.append(f"{name}: left out (no md/level or members readable)")
        return
    md: Dict[str, Any] = {"level": int(level[4:]) if level.startswith("raid") else level, "members": members}
    chunk = r.int(*base, "chunk_size") or from_stat.get("chunk")
    if chunk and md["level"] != 1:
        md["chunk"] = f"{chunk // 1024}KiB"
    layout = r.int(*base, "layout")
    if layout is not None and md["level"] in (0, 4, 5, 6, 10) and not (md["level"] == 0 and layout == 0):
        md["layout"] = layout
    meta = r.text(*base, "metadata_version") or from_stat.get("metadata")
    if meta and meta not in ("none", "external"):
        md["metadata"] = meta
    offsets = {o for _, _, o in slots if o is not None}
    if len(offsets) == 1:
        md["data_offset"] = offsets.pop()
    comp = r.int(*base, "component_size")
    if comp and md["level"] != 0:
        md["size"] = f"{comp}KiB"
    st.md[name] = md
    st.sysfs_queue[name] = _queue(r, name)


def dm_tables(r: Reader, table_file: Optional[str], live: bool) -> Dict[str, str]:
    """dm name -> table text, from `dmsetup table` output."""
    text = None
    if table_file:
        with open(table_file, encoding="utf-8") as fh:
            text = fh.read()
    elif live:
        try:
            text = subprocess.run(["dmsetup", "table"], capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL).stdout
        except (OSError, subprocess.SubprocessError):
            text = None
    tables: Dict[str, List[str]] = {}
    for line in (text or "").splitlines():
        name, sep, rest = line.partition(": ")
        if sep and rest.strip():
            tables.setdefault(name.strip(), []).append(rest.strip())
    return {n: "\n".join(t) for n, t in tables.items()}


def read_dm(r: Reader, st: Stack, name: str, tables: Dict[str, str]) -> None:
    dm_name = r.text("sys/block", name, "dm/name") or name
    table = tables.get(dm_name)
    if table is None:
        st.notes.append(f"{name} ({dm_name}): left out (no table: give 'dmsetup table' output with --dmsetup)")
        return
    st.dm[name] = {"name": dm_name, "table": table}
    st.sysfs_queue[dm_name] = _queue(r, name)


def _dm_table_names(st: Stack, name: str, table: str) -> Optional[str]:
    """The table with MAJ:MIN devices named; None if a target is not modelled."""
    lines = []
    for line in table.splitlines():
        words = line.split()
        if len(words) < 3 or words[2] not in ("linear", "striped", "crypt"):
            st.notes.append(f"{name}: left out (target '{words[2] if len(words) > 2 else line}' is not modelled)")
            return None
        for i, w in enumerate(words):
            if i >= 3 and re.fullmatch(r"\d+:\d+", w):
                if w not in st.devno:
                    st.notes.append(f"{name}: left out (its table names {w}, which was not captured)")
                    return None
                words[i] = "/dev/" + st.devno[w]
        lines.append(" ".join(words))
    return "\n".join(lines) + "\n"


def read_stack(root: str, dmsetup: Optional[str] = None) -> Tuple[Stack, Reader]:
    r = Reader(root)
    st = Stack()
    names = r.list("sys/block")
    if not names:
        raise CaptureError(f"{r.path('sys/block')}: no block devices there (is --root a machine's root?)")
    for name in names:
        dev = r.text("sys/block", name, "dev")
        if dev:
            st.devno[dev] = name
        st.holders[name] = r.list("sys/block", name, "holders")
    mdstat = read_mdstat(r)
    tables = dm_tables(r, dmsetup, live=os.path.abspath(root) == "/")
    for name in names:
        if name.startswith(SKIPPED_PREFIXES):
            st.notes.append(f"{name}: left out (a kind blkstack does not model)")
        elif name.startswith("md"):
            read_md(r, st, name, mdstat)
        elif name.startswith("dm-"):
            read_dm(r, st, name, tables)
        else:
            read_disk(r, st, name)
    for name, dm in st.dm.items():
        st.devno[r.text("sys/block", name, "dev") or ""] = dm["name"]
    return st, r


CGROUP_FILES = ("io.max", "io.weight", "io.bfq.weight")


def read_cgroups(r: Reader, st: Stack) -> Dict[str, Dict[str, List[str]]]:
    """cgroup v2 groups directly under /sys/fs/cgroup: each control file's
    lines for captured whole devices, devices by scenario name; a weight
    file only when it is not the default alone."""
    whole = set(st.disks) | set(st.md) | {dm["name"] for dm in st.dm.values()}
    out: Dict[str, Dict[str, List[str]]] = {}
    for name in r.list("sys/fs/cgroup"):
        base = ("sys/fs/cgroup", name)
        if not os.path.isdir(r.path(*base)):
            continue
        files = {}
        for f in CGROUP_FILES:
            lines = _cgroup_lines(r.text(*base, f) or "", st, whole, f"{name}/{f}")
            if lines and lines != ["default 100"]:
                files[f] = lines
        nested = [c for c in r.list(*base) if os.path.isdir(r.path(*base, c)) and r.text(*base, c, "io.max")]
        if nested:
            st.notes.append(f"cgroup {name}: nested groups left out ({', '.join(nested)})")
        if files:
            out[name] = files
    return out


def _cgroup_lines(text: str, st: Stack, whole: set, where: str) -> List[str]:
    """A control file's lines, MAJ:MIN as the scenario's device name."""
    lines = []
    for line in text.splitlines():
        first, _, rest = line.strip().partition(" ")
        if first == "default" or ":" not in first:
            lines.append(line.strip())
        elif st.devno.get(first) in whole:
            lines.append(f"{st.devno[first]} {rest.strip()}")
        else:
            st.notes.append(f"cgroup {where}: the line for {first} left out (not a captured device)")
    return lines


def _drop_unresolved(st: Stack) -> None:
    """Leave out md/dm devices whose members were left out, until none is."""
    known = set(st.disks) | {p for d in st.disks.values() for p in d["partitions"]}
    changed = True
    while changed:
        changed = False
        names = known | set(st.md) | {dm["name"] for dm in st.dm.values()}
        for n, md in list(st.md.items()):
            missing = [m for m in md["members"] if m not in names]
            if missing:
                st.notes.append(f"{n}: left out (member {missing[0]} was not captured)")
                del st.md[n]
                changed = True
        for n, dm in list(st.dm.items()):
            table = _dm_table_names(st, dm["name"], dm["table"]) if "resolved" not in dm else dm["resolved"]
            if table is None:
                del st.dm[n]
                changed = True
            else:
                dm["resolved"] = table


def top_device(st: Stack) -> Optional[Tuple[str, int]]:
    """(name, bytes) to read in the workload: an md or dm device nothing is
    stacked on, else the first disk nothing is stacked on (holders left out
    of the scenario, such as a dm device without its table, do not count:
    a captured scenario always has something to run)."""
    dm_by_sysfs = {n: dm["name"] for n, dm in st.dm.items()}

    def held(n: str) -> bool:
        return any(h in st.md or h in dm_by_sysfs for h in st.holders.get(n, []))

    for n in list(st.md) + list(dm_by_sysfs):
        if not held(n):
            return dm_by_sysfs.get(n, n), 0
    for n, d in st.disks.items():
        if not held(n) and not any(held(p) for p in d["partitions"]):
            return n, d["size"]
    return None


def render(st: Stack, root: str, profile: str, why: str, extra_queue: Dict[str, Dict[str, int]],
           sizes: Dict[str, int], mismatches: Sequence[str]) -> str:
    out = ["# Captured by 'blkstack capture': the block devices, their queue limits and",
           "# partitions, md arrays and dm devices, as the machine shows them",
           f"# (root {root}).",
           f"# Kernel profile {profile}: {why}.",
           "# Disks keep the driver values read from queue/ (and device/queue_depth)",
           "# and the current sysfs settings (max_sectors_kb, scheduler, ...)."]
    out += [f"# Note: {n}." for n in st.notes]
    out += [f"# Differs: {m}." for m in mismatches]
    out += ["", 'name = "captured"', f'kernel = "{profile}"', ""]
    for name, d in st.disks.items():
        out += [f"[disks.{toml_key(name)}]", f'kind = "{d["kind"]}"', f"size = {d['size']}", "",
                f"[disks.{toml_key(name)}.queue]"]
        out += [f"{k} = {toml_value(v)}" for k, v in d["queue"].items() if k != "iosched"]
        out.append("")
        if d["queue"].get("iosched"):
            out += [f"[disks.{toml_key(name)}.queue.iosched]"]
            out += [f"{k} = {toml_value(v)}" for k, v in d["queue"]["iosched"].items()] + [""]
        if d.get("multipath"):
            out += [f"[disks.{toml_key(name)}.multipath]"]
            out += [f"{k} = {toml_value(v)}" for k, v in d["multipath"].items()] + [""]
        for p, part in d["partitions"].items():
            out += [f"[disks.{toml_key(name)}.partitions.{toml_key(p)}]", f"start = {part['start']}",
                    f'size = "{part["size"]}"', ""]
    for name, md in st.md.items():
        out.append(f"[md.{toml_key(name)}]")
        out += [f"{k} = {toml_value(v)}" for k, v in md.items()]
        out.append("")
        out += _queue_writes(f"md.{toml_key(name)}", extra_queue.get(name))
    for dm in st.dm.values():
        key = toml_key(dm["name"])
        out += [f"[dm.{key}]", 'table = """', dm["resolved"].rstrip("\n"), '"""', ""]
        out += _queue_writes(f"dm.{key}", extra_queue.get(dm["name"]))
    for name, files in st.cgroups.items():
        out.append(f"[cgroups.{toml_key(name)}]")
        out += [f"{json.dumps(f)} = {toml_value(lines)}" for f, lines in files.items()]
        out.append("")
    top = top_device(st)
    if top:
        name, size = top
        size = size or sizes.get(name, 0)
        count = max(1, min(16, size // MIB))
        out += [f"# A small workload to start from: {count} MiB of 1 MiB O_DIRECT reads from",
                f"# the top of the stack, as 'dd if=/dev/{name} of=/dev/null bs=1M count={count}",
                "# iflag=direct'. Replace it with your own (docs/scenario.md, [workload]).",
                "[workload]", 'type = "dd"', f'if = "/dev/{name}"', 'of = "/dev/null"', 'bs = "1M"',
                f"count = {count}", 'iflag = "direct"']
    return "\n".join(out).rstrip("\n") + "\n"


def _queue_writes(table: str, writes: Optional[Dict[str, int]]) -> List[str]:
    if not writes:
        return []
    return [f"[{table}.queue]"] + [f"{k} = {v}" for k, v in writes.items()] + [""]


def comparable(key: str, tree: Any, model: Any) -> bool:
    """Whether a value read from sysfs and one the model resolved agree."""
    if isinstance(tree, bool):
        return bool(model) == tree
    return tree == model


def capture(root: str = "/", dmsetup: Optional[str] = None,
            check: Optional[Callable[[str], Dict[str, Any]]] = None) -> Tuple[str, List[str]]:
    """The scenario text for the stack under *root*, and warnings.

    *check* resolves a scenario text to ``blkstack.load().info`` (the
    model's limits); it is used to add the sysfs writes md and dm devices
    accept where the model's defaults differ from what was read, and to
    list what still differs."""
    st, r = read_stack(root, dmsetup)
    _drop_unresolved(st)
    st.cgroups = read_cgroups(r, st)
    if not st.disks:
        raise CaptureError(f"{r.path('sys/block')}: no disk blkstack can model ({'; '.join(st.notes) or 'none'})")
    info = json.loads(_core.profiles())
    names = [str(p["name"]) for p in info["profiles"]]
    profile, why = profile_for(r.text("proc/sys/kernel/osrelease"), names, str(info.get("default", names[-1])))
    extra: Dict[str, Dict[str, int]] = {}
    sizes: Dict[str, int] = {}
    mismatches: List[str] = []
    if check is not None:
        info = check(render(st, root, profile, why, extra, sizes, []))
        for name, dev in (info.get("devices") or {}).items():
            sizes[name] = dev.get("size_bytes", 0)
            if name in st.md or name in {d["name"] for d in st.dm.values()}:
                tree = st.sysfs_queue.get(name, {})
                writes = {k: tree[k] for k in STACK_WRITES
                          if k in tree and tree[k] != (dev.get("limits") or {}).get(k)}
                if writes:
                    extra[name] = writes
        if extra:
            info = check(render(st, root, profile, why, extra, sizes, []))
        for name, dev in (info.get("devices") or {}).items():
            limits = dev.get("limits") or {}
            for key, value in st.sysfs_queue.get(name, {}).items():
                if key in limits and not comparable(key, value, limits[key]):
                    mismatches.append(f"{name} {key}: the machine shows {value}, the model derives {limits[key]}")
    text = render(st, root, profile, why, extra, sizes, mismatches)
    return text, [f"{n}" for n in st.notes] + mismatches
