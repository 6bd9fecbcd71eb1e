"""Randomized differential testing: ``blkstack validate --random N --seed S``.

Scenarios are drawn from a grammar of what both the guest and the model
reproduce: 1-8 disks (virtio, virtio-scsi, nvme, sata), partitions, an md
array (levels 0, 1, 10, 5; chunks, layouts) or a dm table (linear,
striped), each disk's scheduler and ``max_sectors_kb``, and one workload
(dd, explicit bios or fio, O_DIRECT) with random sizes and offsets.

Scenarios that share a disk set (drawn once per batch) run in one guest
boot, one after the other: the job tears each stack down (dm tables
removed, md arrays stopped and their superblocks zeroed) before the next,
and every scenario writes every disk's scheduler and ``max_sectors_kb``, so
none inherits another's state. Each is compared with blkstack per device.
A scenario that differs is shrunk (its workload halved, entries dropped,
offsets zeroed, schedulers set to none) while it still differs, and saved
under ``validate/found/`` with both traces.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from blkstack import _core
from blkstack.validate.guest import GuestError
from blkstack.validate.plan import Plan, build_plan, fio_version_sets, host_cpu_sets, load_toml, make_image

Progress = Callable[[str], None]
Doc = Dict[str, Any]

MIB = 1 << 20
DISK_SIZE = 256 * MIB
PART_SIZE = 64 * MIB
KINDS = ("virtio", "virtio", "virtio-scsi", "nvme", "sata")
MAX_SECTORS_KB = (64, 128, 256, 512, 1024, 1280)
BATCH = 8
SHRINK_ROUNDS = 3


# ---------------------------------------------------------------------------
# The grammar


def draw_disk_set(rng: random.Random) -> Doc:
    """The part of a scenario a batch shares: CPUs, disks, partitions."""
    n = rng.randint(1, 8)
    disks: Doc = {}
    counts = {"vd": 0, "sd": 0, "nvme": 0}
    for _ in range(n):
        kind = rng.choice(KINDS)
        if kind == "virtio":
            name = "vd" + "abcdefgh"[counts["vd"]]
            counts["vd"] += 1
        elif kind == "nvme":
            name = f"nvme{counts['nvme']}n1"
            counts["nvme"] += 1
        else:
            name = "sd" + "abcdefgh"[counts["sd"]]
            counts["sd"] += 1
        spec: Doc = {"kind": kind, "size": DISK_SIZE}
        if rng.random() < 0.3:
            sep = "p" if kind == "nvme" else ""
            spec["partitions"] = {f"{name}{sep}{i + 1}": {"start": 2048 + i * (PART_SIZE // 512 + 2048),
                                                          "size": PART_SIZE}
                                  for i in range(rng.randint(1, 2))}
        disks[name] = spec
    return {"cpus": rng.choice((1, 1, 2)), "disks": disks}


def leaves(doc: Doc) -> List[str]:
    """Devices a stack can be built on: partitions, and disks without any."""
    out = []
    for name, spec in doc["disks"].items():
        parts = list((spec.get("partitions") or {}))
        out += parts or [name]
    return out


def same_size_leaves(rng: random.Random, doc: Doc) -> List[str]:
    """Leaves of one size (partitions, or whole disks), the larger group
    or, when both could serve, either: md members of one size make one
    raid0 zone."""
    parts = [l for l in leaves(doc) if l not in doc["disks"]]
    whole = [l for l in leaves(doc) if l in doc["disks"]]
    if len(parts) >= 2 and len(whole) >= 2:
        return rng.choice((parts, whole))
    return parts if len(parts) > len(whole) else whole


def draw_stack(rng: random.Random, doc: Doc) -> Optional[str]:
    """Add an md array or a dm table (or nothing); the device a workload
    should use, or None for a leaf."""
    ls = leaves(doc)
    same = same_size_leaves(rng, doc)
    r = rng.random()
    if r < 0.35 and len(same) >= 2:
        ls = same
        level = rng.choice((0, 1, 10, 5))
        if level == 5 and len(ls) < 3:
            level = 0
        members = rng.sample(ls, rng.randint(3 if level == 5 else 2, min(4, len(ls))))
        md: Doc = {"level": level, "members": members}
        if level != 1:
            md["chunk"] = f"{rng.choice((16, 32, 64, 128, 256))}KiB"
        if level == 10:
            md["layout"] = rng.choice(("n2", "f2", "o2"))
        if level == 5:
            md["layout"] = rng.choice(("left-symmetric", "right-asymmetric"))
        doc["md"] = {"md0": md}
        return "md0"
    if r < 0.6:
        if rng.random() < 0.5 or len(ls) < 2:
            dev = rng.choice(ls)
            off = rng.randrange(0, 4096, 8)
            doc["dm"] = {"lin": {"table": f"0 {PART_SIZE // 512 - 8192} linear /dev/{dev} {off}"}}
            return "lin"
        n = rng.randint(2, min(3, len(ls)))
        chunk = rng.choice((8, 16, 64, 128, 256))
        members = rng.sample(ls, n)
        length = (PART_SIZE // 512 - 8192) // chunk * chunk * n  # each member's share fits a partition
        devs = " ".join(f"/dev/{m} 0" for m in members)
        doc["dm"] = {"str": {"table": f"0 {length} striped {n} {chunk} {devs}"}}
        return "str"
    return None


def draw_queues(rng: random.Random, doc: Doc, cap_kb: Dict[str, int]) -> None:
    """Every disk's scheduler and max_sectors_kb (at most *cap_kb*), written in the guest."""
    for name, spec in doc["disks"].items():
        kb = [k for k in MAX_SECTORS_KB if k <= cap_kb.get(name, 128)] or [cap_kb.get(name, 128)]
        spec["queue"] = {"scheduler": rng.choice(("none", "mq-deadline")), "max_sectors_kb": rng.choice(kb)}


def draw_workload(rng: random.Random, target: str, size: int) -> Doc:
    """dd, bios or fio on *target* (*size* bytes), O_DIRECT."""
    kind = rng.choice(("dd", "dd", "bios", "fio"))
    dev = f"/dev/{target}"
    if kind == "dd":
        bs = rng.choice((4, 16, 64, 256, 512, 1024, 2048)) * 1024
        count = rng.randint(1, 16)
        blocks = size // bs
        count = max(1, min(count, blocks))
        at = rng.randrange(0, max(1, blocks - count + 1))
        if rng.random() < 0.4:
            return {"type": "dd", "if": "/dev/zero", "of": dev, "bs": bs, "count": count, "seek": at,
                    "oflag": "direct"}
        return {"type": "dd", "if": dev, "of": "/dev/null", "bs": bs, "count": count, "skip": at, "iflag": "direct"}
    if kind == "bios":
        entries = []
        for _ in range(rng.randint(1, 4)):
            nbytes = rng.choice((4, 8, 32, 128, 512, 1024)) * 1024
            sector = rng.randrange(0, (size - nbytes) // 512 + 1, 8)
            entries.append({"op": rng.choice(("read", "write")), "sector": sector, "size": nbytes, "flags": ["syscall"]})
        return {"type": "bios", "device": target, "iodepth": 1, "bio": entries}
    bs = rng.choice((4, 8, 16, 64, 128, 256)) * 1024
    region = min(size, rng.choice((1, 2, 4, 8)) * MIB) // bs * bs
    offset = rng.randrange(0, (size - region) // MIB + 1) * MIB
    rw = rng.choice(("read", "write", "randread", "randwrite"))
    job = f"[r]\nfilename={dev}\nrw={rw}\nbs={bs}\noffset={offset}\nsize={region}\nioengine=psync\ndirect=1\n"
    return {"type": "fio", "job": job}


def resolve(path: str, kernel: str) -> Doc:
    return json.loads(_core.check(path, kernel, []))


def generate(rng: random.Random, base: Doc, kernel: str, work: str, name: str, disk_latency: int = 0) -> Doc:
    """One scenario on the disk set *base*: a stack, queues, a workload;
    with *disk_latency*, slow disks (``[validate] disk_latency_ms``, drawn
    from no random number: the same seed draws the same scenarios)."""
    doc = json.loads(json.dumps(base))
    doc["name"] = name
    target = draw_stack(rng, doc) or rng.choice(leaves(doc))
    path = os.path.join(work, name + ".toml")
    write_toml(path, doc)
    devs = resolve(path, kernel).get("devices") or {}
    # At most the default max_sectors_kb; on sata at most 128 KiB: 6.1
    # gives QEMU's disk libata's bridge limits (docs/validation.md, M).
    caps = {n: int((d.get("limits") or {}).get("max_sectors_kb") or 128) for n, d in devs.items()}
    caps.update({n: min(caps.get(n, 128), 128) for n, s in doc["disks"].items() if s["kind"] == "sata"})
    draw_queues(rng, doc, caps)
    doc["workload"] = draw_workload(rng, target, int(devs[target]["size_bytes"]))
    if disk_latency:
        doc["validate"] = {"disk_latency_ms": disk_latency}
    write_toml(path, doc)
    return doc


# ---------------------------------------------------------------------------
# TOML (the few shapes the grammar produces)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, str) and "\n" in v:
        return '"""\n' + v + '"""'
    return json.dumps(v)


def toml_text(doc: Doc, header: str = "") -> str:
    lines = [header.rstrip()] if header else []
    tables: List[Tuple[str, Doc]] = []

    def walk(prefix: str, d: Doc) -> None:
        plain = {k: v for k, v in d.items() if not isinstance(v, dict) and not (
            isinstance(v, list) and v and isinstance(v[0], dict))}
        if prefix:
            tables.append((prefix, plain))
        else:
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in plain.items())
        for k, v in d.items():
            if isinstance(v, dict):
                walk(f"{prefix}.{k}" if prefix else k, v)
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                for item in v:
                    tables.append((f"[{prefix}.{k}]", item))

    walk("", doc)
    for name, plain in tables:
        lines.append("")
        lines.append(f"[{name}]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in plain.items())
    return "\n".join(lines) + "\n"


def write_toml(path: str, doc: Doc, header: str = "") -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(toml_text(doc, header))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# One boot, several scenarios


# Between two scenarios of a batch: the stack goes, the disks stay.
TEARDOWN = r"""teardown() {
    dmsetup remove_all 2>/dev/null
    for m in /dev/md[0-9]*; do [ -b $m ] && mdadm --stop $m >/dev/null 2>&1; done
    for d in $(cut -d' ' -f2 $1/devices.txt 2>/dev/null); do
        case $d in md*|dm-*) ;; *) mdadm --zero-superblock --force /dev/$d >/dev/null 2>&1;; esac
    done
    rm -f /dev/blkstack/*
}
"""


def batch_job(plans: Sequence[Plan]) -> Tuple[str, Dict[str, str]]:
    """The job that runs every plan in turn, each in its own share
    directory ``sI`` (its files' /out/ paths moved there), and the files."""
    lines = ["# blkstack randomized batch (generated)", TEARDOWN]
    files: Dict[str, str] = {}
    for i, plan in enumerate(plans):
        d = f"s{i}"
        files[f"{d}/job.sh"] = plan.job.replace("/out/", f"/out/{d}/")
        if plan.bios_file is not None:
            files[f"{d}/bios.txt"] = plan.bios_file
        for name, text in plan.files.items():
            files[f"{d}/{name}"] = text.replace("/out/", f"/out/{d}/")
        lines.append(f"echo 'blkstack-batch: scenario {i}'")
        lines.append(f"( . /out/{d}/job.sh ) > /out/{d}/job.log 2>&1; echo $? > /out/{d}/job.status")
        lines.append(f"teardown /out/{d}")
    lines.append("echo blkstack-job: ok")
    return "\n".join(lines) + "\n", files


@dataclass
class Outcome:
    """One scenario of a batch: its file, run directory, and per device
    (name, exact?, real requests, sim requests, match %), or an error."""

    path: str
    out_dir: str
    devices: List[Tuple[str, bool, int, int, float]] = field(default_factory=list)
    error: str = ""

    @property
    def exact(self) -> bool:
        return not self.error and all(d[1] for d in self.devices)


def run_batch(paths: Sequence[str], kernel: str, cache: str, out_dir: str, progress: Progress,
              timeout: float = 900.0, host_cpu: Optional[str] = None) -> List[Outcome]:
    """Boot once and run every scenario in *paths* (one disk set); the
    model with *host_cpu*'s CPU time (``validate --host-cpu``)."""
    from blkstack.validate import ValidationError, compare_run
    from blkstack.validate.guest import boot, build_guest, build_tools, kernel_append
    guest = build_guest(cache, kernel, progress)
    work = tempfile.mkdtemp(prefix="disks-", dir=cache)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    try:
        plans = [build_plan(p, kernel, work, resolve(p, kernel)) for p in paths]
        for p, path in zip(plans, paths):
            p.sim_sets += host_cpu_sets(load_toml(path), host_cpu, p.warnings)
        lead = plans[0]
        if any(p.tools for p in plans):
            tools = build_tools(cache, progress)
            lead.qemu_args += tools.share_args()
            for p, path in zip(plans, paths):
                if p.tools:
                    p.sim_sets += fio_version_sets(load_toml(path).get("workload") or {}, tools.fio_version,
                                                   p.warnings)
        for d in lead.disks:
            make_image(d)
        job, files = batch_job(plans)
        for name, text in files.items():
            os.makedirs(os.path.join(out_dir, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(out_dir, name), "w") as fh:
                fh.write(text)
        with open(os.path.join(out_dir, "job.sh"), "w") as fh:
            fh.write(job)
        progress(f"booting {guest.package} for {len(plans)} random scenario(s)")
        boot_s, boot_error = 0.0, ""
        try:
            boot_s = boot(guest, out_dir, lead.qemu_args, timeout, progress, cpus=lead.cpus,
                          append=kernel_append(kernel), servers=lead.servers)
        except GuestError as exc:  # the scenarios the guest finished still count
            boot_error = str(exc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out: List[Outcome] = []
    for i, (path, plan) in enumerate(zip(paths, plans)):
        d = os.path.join(out_dir, f"s{i}")
        o = Outcome(path, d)
        if boot_error and not os.path.exists(os.path.join(d, "job.status")):
            o.error = boot_error
            out.append(o)
            continue
        try:
            v = compare_run(path, kernel, plan, d, guest.package, boot_s, lambda m: None)
            for s in v.report.streams:
                if s.real or s.sim:
                    o.devices.append((s.real_name or s.real_dev, s.identical, len(s.real), len(s.sim),
                                      100.0 * s.matched / max(len(s.real), len(s.sim))))
        except (ValidationError, GuestError, ValueError) as exc:
            o.error = str(exc)
        out.append(o)
    return out


# ---------------------------------------------------------------------------
# Shrinking


def shrink_candidates(doc: Doc) -> List[Doc]:
    """Smaller versions of *doc* on the same disks: less work, fewer
    entries, offsets at zero, schedulers none."""
    out: List[Doc] = []

    def variant(change: Callable[[Doc], bool]) -> None:
        c = json.loads(json.dumps(doc))
        if change(c):
            out.append(c)

    w = doc["workload"]
    if w["type"] == "dd":
        variant(lambda c: c["workload"]["count"] > 1 and bool(c["workload"].update(count=c["workload"]["count"] // 2) or 1))
        for k in ("skip", "seek"):
            variant(lambda c, k=k: bool(c["workload"].get(k)) and bool(c["workload"].update({k: 0}) or 1))
    elif w["type"] == "bios":
        for i in range(len(w["bio"])):
            variant(lambda c, i=i: len(c["workload"]["bio"]) > 1 and bool(c["workload"]["bio"].pop(i)))
    else:
        def halve(c: Doc) -> bool:
            opts = dict(l.split("=", 1) for l in c["workload"]["job"].splitlines() if "=" in l)
            size, bs = int(opts["size"]), int(opts["bs"])
            if size // 2 < bs:
                return False
            c["workload"]["job"] = c["workload"]["job"].replace(f"size={size}\n", f"size={size // 2 // bs * bs}\n")
            return True
        variant(halve)
    for name in doc["disks"]:
        variant(lambda c, n=name: c["disks"][n]["queue"]["scheduler"] != "none" and bool(
            c["disks"][n]["queue"].update(scheduler="none") or 1))
    return out


# ---------------------------------------------------------------------------
# The driver


@dataclass
class RandomReport:
    kernel: str
    seed: int
    outcomes: List[Outcome]
    found: List[str]
    wall_s: float

    def figures(self) -> Dict[str, Any]:
        devs = [d for o in self.outcomes for d in o.devices]
        exact_devs = sum(1 for d in devs if d[1])
        return {"kernel": self.kernel, "seed": self.seed, "scenarios": len(self.outcomes),
                "exact_scenarios": sum(1 for o in self.outcomes if o.exact),
                "errors": sum(1 for o in self.outcomes if o.error),
                "devices": len(devs), "exact_devices": exact_devs,
                "exact_device_percent": round(100.0 * exact_devs / len(devs), 1) if devs else 100.0,
                "found": self.found, "wall_s": round(self.wall_s, 1)}

    def text(self) -> str:
        f = self.figures()
        lines = [f"random scenarios on {self.kernel}, seed {self.seed}: {f['scenarios']} run, "
                 f"{f['exact_scenarios']} exact on every device, {f['errors']} failed to run",
                 f"devices: {f['exact_devices']} of {f['devices']} exact ({f['exact_device_percent']}%)",
                 f"wall time: {f['wall_s']:.0f} s"]
        for o in self.outcomes:
            if not o.exact:
                what = o.error or ", ".join(f"{n} {p:.1f}% ({r} real, {s} sim)" for n, ok, r, s, p in o.devices if not ok)
                lines.append(f"  {os.path.basename(o.path)}: {what}")
        lines += [f"  saved: {p}" for p in self.found]
        return "\n".join(lines) + "\n"


def random_validate(n: int, seed: int, kernel: str, cache: str, out_root: str, found_dir: str,
                    progress: Progress, timeout: float = 900.0, batch: int = BATCH,
                    shrink: bool = True, host_cpu: Optional[str] = None, disk_latency: int = 0) -> RandomReport:
    """Draw *n* scenarios from *seed*, run them *batch* per boot on
    *kernel*, shrink and save those that differ; with *disk_latency* (ms)
    on slow disks, which each scenario file records."""
    start = time.monotonic()
    rng = random.Random(seed)
    work = os.path.join(out_root, "scenarios")
    os.makedirs(work, exist_ok=True)
    outcomes: List[Outcome] = []
    found: List[str] = []
    i = 0
    while i < n:
        base = draw_disk_set(rng)
        paths = []
        for _ in range(min(batch, n - i)):
            name = f"random-{seed}-{i:03d}"
            generate(rng, base, kernel, work, name, disk_latency)
            paths.append(os.path.join(work, name + ".toml"))
            i += 1
        progress(f"batch of {len(paths)} ({i}/{n}), {len(base['disks'])} disk(s)")
        try:
            results = run_batch(paths, kernel, cache, os.path.join(out_root, f"boot-{i:03d}"), progress, timeout,
                                host_cpu)
        except GuestError as exc:  # a guest that hangs or dies fails its batch, not the run
            results = [Outcome(p, "", error=str(exc)) for p in paths]
        progress(f"  {sum(1 for o in results if o.exact)} of {len(results)} exact")
        outcomes += results
        for o in results:
            if not o.exact and not o.error:
                found.append(shrink_and_save(o, kernel, cache, out_root, found_dir, progress, timeout, shrink,
                                             host_cpu))
    return RandomReport(kernel, seed, outcomes, found, time.monotonic() - start)


def found_name(kernel: str, stem: str, doc: Doc) -> str:
    """A found scenario's name: ``KERNEL-random-SEED-NNN``, with
    ``slowMS-`` after the kernel for one drawn on slow disks (the same
    draw on fast disks is another case)."""
    ms = int((doc.get("validate") or {}).get("disk_latency_ms") or 0)
    return f"{kernel}-slow{ms}-{stem}" if ms else f"{kernel}-{stem}"


def shrink_and_save(o: Outcome, kernel: str, cache: str, out_root: str, found_dir: str, progress: Progress,
                    timeout: float, shrink: bool, host_cpu: Optional[str] = None) -> str:
    """Shrink a differing scenario while it still differs; save the
    smallest with both traces under *found_dir*."""
    best, best_dir = load_toml(o.path), o.out_dir
    stem = os.path.splitext(os.path.basename(o.path))[0]
    work = os.path.join(out_root, "shrink", stem)
    os.makedirs(work, exist_ok=True)
    for rnd in range(SHRINK_ROUNDS if shrink else 0):
        cands = shrink_candidates(best)[:BATCH]
        if not cands:
            break
        paths = []
        for j, c in enumerate(cands):
            c["name"] = f"{stem}-r{rnd}c{j}"
            p = os.path.join(work, c["name"] + ".toml")
            write_toml(p, c)
            paths.append(p)
        progress(f"shrinking {stem}: round {rnd + 1}, {len(paths)} candidate(s)")
        try:
            results = run_batch(paths, kernel, cache, os.path.join(work, f"boot-{rnd}"), progress, timeout, host_cpu)
        except Exception as exc:  # a candidate the guest cannot run ends the shrinking
            progress(f"shrinking {stem}: {exc}")
            break
        still = next(((c, r) for c, r in zip(cands, results) if not r.exact and not r.error), None)
        if still is None:
            break
        best, best_dir = still[0], still[1].out_dir
    dest = os.path.join(found_dir, found_name(kernel, stem, best))
    os.makedirs(dest, exist_ok=True)
    diff_txt = os.path.join(best_dir, "diff.txt")
    summary = ""
    if os.path.exists(diff_txt):
        with open(diff_txt) as fh:
            summary = "".join(l for l in fh if l.startswith("total:")).strip()
    best["name"] = found_name(kernel, stem, best)
    header = (f"# Found by blkstack validate --random on {kernel} ({stem}), shrunk.\n"
              f"# {summary or 'differs'}\n# expect {kernel}: 0.0% -- found by randomized testing; not yet explained\n")
    write_toml(os.path.join(dest, "scenario.toml"), best, header)
    for f in ("trace.txt", "sim-trace.txt", "diff.txt", "job.log"):
        src = os.path.join(best_dir, f)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(dest, f))
    return dest
