"""Validation against real Linux kernels.

``validate(scenario, kernel)`` runs a scenario twice: on a Debian kernel
booted under qemu (the disks, partitions, md arrays, dm tables and sysfs
writes built for real, the workload run for real, the ``block_*``
tracepoints captured) and in blkstack with the matching profile; then it
compares the requests each disk received (:mod:`blkstack.diff`) and the
queue limits of every device.

Downloads (the kernel and a few userland packages from Debian's mirror) and
built guests are cached in ``~/.cache/blkstack/validate``
(``$BLKSTACK_VALIDATE_CACHE``, or ``cache=``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from blkstack import _core
from blkstack.diff import DiffReport, Trace, diff_traces, read_sysfs_snapshot
from blkstack.validate.debian import KERNEL_META, DebianError
from blkstack.validate.guest import GuestError, boot, build_guest, build_tools, find_qemu, kernel_append
from blkstack.validate.plan import (Plan, PlanError, build_plan, fio_version_sets, host_cpu_sets, load_toml, make_image,
                                    read_devices)

__all__ = ["KERNELS", "ValidationError", "Validation", "Expectation", "default_cache", "read_expectations", "validate"]

KERNELS = tuple(KERNEL_META)
Progress = Callable[[str], None]


class ValidationError(Exception):
    """Validation could not run (one line)."""


def kernel_list() -> str:
    """The kernel choices as a phrase: "5.10, 6.1, 6.12 and 7.2"."""
    return ", ".join(KERNELS[:-1]) + " and " + KERNELS[-1]


def default_cache() -> str:
    env = os.environ.get("BLKSTACK_VALIDATE_CACHE")
    if env:
        return os.path.abspath(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "blkstack", "validate")


@dataclass
class Expectation:
    """What a suite scenario states it should reach on a kernel: ``exact``
    (100 %) or a percentage, with the reason for a known difference."""

    percent: float
    reason: str = ""

    @property
    def exact(self) -> bool:
        return self.percent >= 100.0

    def __str__(self) -> str:
        text = "exact" if self.exact else f"{self.percent:.1f}%"
        return f"{text} ({self.reason})" if self.reason else text


_EXPECT_RE = re.compile(r"^#\s*expect(?:\s+([0-9.]+))?\s*:\s*(exact|[0-9.]+\s*%)\s*(?:--\s*(.*))?$")


def read_expectations(path: str) -> Dict[str, Expectation]:
    """``# expect: exact`` / ``# expect 6.12: 87.5% -- reason`` lines of a
    scenario file, by kernel (``""`` for every kernel)."""
    out: Dict[str, Expectation] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = _EXPECT_RE.match(line.strip())
            if not m:
                continue
            kernel = m.group(1) or ""
            value = m.group(2)
            pct = 100.0 if value == "exact" else float(value.rstrip("% "))
            out[kernel] = Expectation(pct, (m.group(3) or "").strip())
    return out


@dataclass
class Validation:
    """One scenario run on one kernel, real and simulated, compared."""

    scenario: str
    kernel: str
    package: str
    out_dir: str
    report: DiffReport
    warnings: List[str]
    devices: Dict[str, Tuple[str, str]]
    sim_devices: Dict[str, Tuple[str, str]]
    md_offsets: List[str] = field(default_factory=list)
    boot_s: float = 0.0
    expectation: Optional[Expectation] = None

    @property
    def match_percent(self) -> float:
        return self.report.match_percent

    @property
    def meets_expectation(self) -> Optional[bool]:
        if self.expectation is None:
            return None
        return abs(self.report.match_percent - self.expectation.percent) < 0.05 or (
            self.report.match_percent >= self.expectation.percent)

    def text(self) -> str:
        lines = [f"scenario: {self.scenario}", f"kernel:   {self.package} (blkstack profile {self.kernel})",
                 f"output:   {self.out_dir}", ""]
        width = max([len(n) for n in self.devices] + [6])
        lines.append(f"  {'DEVICE'.ljust(width)}  REAL            SIM")
        for name, (guest, devno) in self.devices.items():
            sim = self.sim_devices.get(name, ("-", "-"))
            lines.append(f"  {name.ljust(width)}  {(guest + ' ' + devno).ljust(14)}  {sim[1]}")
        lines.append("")
        if self.md_offsets:
            lines.append("md members (device, data offset, size in sectors), real:")
            lines += ["  " + l for l in self.md_offsets]
            lines.append("")
        for w in self.warnings:
            lines.append(f"note: {w}")
        if self.warnings:
            lines.append("")
        lines.append(self.report.text().rstrip())
        if self.expectation is not None:
            ok = "as expected" if self.meets_expectation else "NOT as expected"
            lines.append(f"expected: {self.expectation}: {ok}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> Dict[str, Any]:
        return {
            "scenario": self.scenario, "kernel": self.kernel, "package": self.package, "out_dir": self.out_dir,
            "match_percent": round(self.match_percent, 3), "identical": self.report.identical,
            "devices": {n: {"real": g, "real_dev": d, "sim_dev": self.sim_devices.get(n, ("", ""))[1]}
                        for n, (g, d) in self.devices.items()},
            "warnings": self.warnings, "diff": self.report.to_json(), "boot_s": round(self.boot_s, 1),
            "expectation": None if self.expectation is None else {
                "percent": self.expectation.percent, "reason": self.expectation.reason,
                "met": self.meets_expectation},
        }


def _stderr(msg: str) -> None:
    print(f"blkstack: {msg}", file=sys.stderr, flush=True)


def guest_sets(path: str) -> List[str]:
    """What the guest does that a scenario leaves to its defaults, as
    ``--set`` overrides for the model: blkio's dd buffer is in 2 MiB huge
    pages (one folio, which 7.x direct I/O makes one bvec)."""
    import tomllib
    try:
        with open(path, "rb") as fh:
            workload = tomllib.load(fh).get("workload") or {}
    except (OSError, ValueError):
        return []
    if workload.get("type") == "dd" and "buffer_hugepages" not in workload:
        return ["workload.buffer_hugepages=true"]
    return []


def disk_latency_sets(disk_latency: Optional[int]) -> List[str]:
    """``--disk-latency MS`` as the model's ``--set`` (the scenario's own
    ``[validate]`` key otherwise)."""
    return [] if disk_latency is None else [f"validate.disk_latency_ms={int(disk_latency)}"]


def scenario_kernel(path: str, kernel: Optional[str]) -> str:
    if kernel:
        return kernel
    resolved = json.loads(_core.check(path, None, []))
    return str(resolved.get("profile"))


def _add_tools(plan: Plan, scenario: str, cache: str, progress: Progress, rebuild: bool) -> None:
    """Give a plan that runs fio (or blktrace) the tools share, and the
    model of a fio workload the guest fio's ``fio_version``."""
    if not plan.tools:
        return
    try:
        tools = build_tools(cache, progress, rebuild=rebuild)
    except (DebianError, GuestError) as exc:
        raise ValidationError(str(exc))
    plan.qemu_args += tools.share_args()
    workload = load_toml(scenario).get("workload") or {}
    if workload.get("type") == "fio":  # (--blktrace gives any workload the tools)
        plan.sim_sets += fio_version_sets(workload, tools.fio_version, plan.warnings)


def validate(scenario: str, kernel: Optional[str] = None, cache: Optional[str] = None,
             out_dir: Optional[str] = None, timeout: float = 900.0, progress: Progress = _stderr,
             events: Sequence[str] = ("D",), rebuild: bool = False, keep_images: bool = False,
             ignore_flags: bool = False, blktrace: bool = False, host_cpu: Optional[str] = None,
             disk_latency: Optional[int] = None) -> Validation:
    """Run *scenario* on a real kernel and in blkstack and compare them.
    *blktrace*: the guest also runs blktrace on each disk and leaves its
    per-CPU binary files in ``OUT/blktrace/`` (for real blkparse and btt).
    *host_cpu*: the model charges the guest's CPU time with this CPU class
    (``tcg``; docs/validation.md C). *disk_latency*: slow disks, every
    command answered after this many ms in the guest and in the model (0:
    off; None: the scenario's ``[validate] disk_latency_ms``)."""
    cache = cache or default_cache()
    kernel = scenario_kernel(scenario, kernel)
    if kernel not in KERNELS:
        raise ValidationError(f"kernel {kernel}: Debian ships {kernel_list()}; choose one with --kernel")
    latency_sets = disk_latency_sets(disk_latency)
    # The model must accept the scenario before anything is downloaded.
    resolved = json.loads(_core.check(scenario, kernel, latency_sets))
    try:
        find_qemu()
    except GuestError as exc:
        raise ValidationError(str(exc))
    stem = os.path.splitext(os.path.basename(scenario))[0]
    out_dir = os.path.abspath(out_dir or os.path.join(cache, "runs", f"{stem}-{kernel}"))
    if os.path.isdir(out_dir):
        for f in os.listdir(out_dir):
            p = os.path.join(out_dir, f)
            if os.path.isfile(p):
                os.unlink(p)
    os.makedirs(out_dir, exist_ok=True)

    try:
        guest = build_guest(cache, kernel, progress, rebuild=rebuild)
    except (DebianError, GuestError) as exc:
        raise ValidationError(str(exc))
    work = tempfile.mkdtemp(prefix="disks-", dir=os.path.join(cache))
    try:
        try:
            plan = build_plan(scenario, kernel, work, resolved, blktrace=blktrace, disk_latency_ms=disk_latency)
        except PlanError as exc:
            raise ValidationError(f"{scenario}: {exc}")
        plan.sim_sets += latency_sets
        _add_tools(plan, scenario, cache, progress, rebuild)
        plan.sim_sets += host_cpu_sets(load_toml(scenario), host_cpu, plan.warnings)
        for d in plan.disks:
            make_image(d)
        plan.save(out_dir)
        progress(f"booting {guest.package} with {len(plan.disks)} disk(s) (qemu TCG) for {stem}")
        try:
            boot_s = boot(guest, out_dir, plan.qemu_args, timeout, progress, cpus=plan.cpus,
                          append=kernel_append(kernel), servers=plan.servers)
        except GuestError as exc:
            raise ValidationError(str(exc))
    finally:
        if not keep_images:
            shutil.rmtree(work, ignore_errors=True)
    return compare_run(scenario, kernel, plan, out_dir, guest.package, boot_s, progress, events, ignore_flags)


def compare_run(scenario: str, kernel: str, plan: Plan, out_dir: str, package: str, boot_s: float,
                progress: Progress = _stderr, events: Sequence[str] = ("D",), ignore_flags: bool = False) -> Validation:
    """What the guest left in *out_dir* for *scenario*, compared with
    blkstack's run of it (written beside it)."""
    stem = os.path.splitext(os.path.basename(scenario))[0]
    err_path = os.path.join(out_dir, "job.error")
    if os.path.exists(err_path):
        with open(err_path) as fh:
            msg = fh.read().strip()
        raise ValidationError(f"in the guest: {msg} (log: {os.path.join(out_dir, 'job.log')})")
    real_trace = os.path.join(out_dir, "trace.txt")
    if not os.path.exists(real_trace):
        raise ValidationError(f"the guest left no trace (console: {os.path.join(out_dir, 'console.log')})")
    warnings = list(plan.warnings)
    stats = os.path.join(out_dir, "trace.stats")
    if os.path.exists(stats):
        with open(stats) as fh:
            m = re.search(r"overrun:\s*(\d+)", fh.read())
        if m and int(m.group(1)):
            warnings.append(f"the guest's trace buffer overran: {m.group(1)} events were lost")

    progress(f"simulating {stem} with profile {kernel}")
    sim_trace = os.path.join(out_dir, "sim-trace.txt")
    summary = json.loads(_core.run(scenario, kernel, guest_sets(scenario) + list(plan.sim_sets), sim_trace, None, None,
                                   False))
    with open(os.path.join(out_dir, "sim-summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)

    devices = read_devices(out_dir)
    sim_devices = {name: (name, f"{d.get('major')},{d.get('minor')}") for name, d in (summary.get("devices") or {}).items()}
    # Compare whole devices (a partition's requests are its disk's).
    partitions = {n for n, d in (summary.get("devices") or {}).items() if d.get("partition_of")}
    mapping: Dict[str, str] = {}
    names: Dict[str, Tuple[str, str]] = {}
    for name, (_guest, rdev) in devices.items():
        if name in partitions or name not in sim_devices:
            continue
        mapping[rdev] = sim_devices[name][1]
        names[rdev] = (name, name)
    real_limits_by_guest = read_sysfs_snapshot(os.path.join(out_dir, "sysfs.txt")) if os.path.exists(os.path.join(out_dir, "sysfs.txt")) else {}
    real_limits = {name: real_limits_by_guest.get(g, {}) for name, (g, _d) in devices.items()}
    sim_limits = {name: d.get("limits") or {} for name, d in (summary.get("devices") or {}).items()}
    real = Trace(real_trace)
    sim = Trace(sim_trace)
    report = diff_traces(real, sim, events=events, mapping=mapping, names=names,
                         real_limits=real_limits, sim_limits=sim_limits, devices=list(mapping),
                         ignore_flags=ignore_flags)
    md_offsets: List[str] = []
    md_txt = os.path.join(out_dir, "md.txt")
    if os.path.exists(md_txt):
        with open(md_txt) as fh:
            md_offsets = [l.strip() for l in fh if l.strip()]
    v = Validation(scenario, kernel, package, out_dir, report, warnings, devices, sim_devices,
                   md_offsets, boot_s, read_expectations(scenario).get(kernel) or read_expectations(scenario).get(""))
    with open(os.path.join(out_dir, "diff.txt"), "w") as fh:
        fh.write(v.text())
    with open(os.path.join(out_dir, "diff.json"), "w") as fh:
        json.dump(v.to_json(), fh, indent=2)
    return v
