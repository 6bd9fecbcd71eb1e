"""Running the shipped job set with the system's fio (``blkstack
calibrate TARGET``): one job at a time, so a line per job shows progress,
within a time budget, reading only unless writes were asked for."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from typing import Any, Callable, Dict, List, Optional

from blkstack.calibrate import job_file

# Each job's ramp is this share of its time: 1 s ramp + 3 s measured in the files.
RAMP_SHARE = 0.25
MIN_JOB_SECONDS = 0.5


class MeasureError(ValueError):
    """The target or the system cannot run the job set."""


def sections(text: str) -> List[str]:
    """The job names of a fio job file, in order."""
    return [n for n in re.findall(r"^\[([^\]]+)\]", text, re.M) if n != "global"]


def with_timing(text: str, seconds_per_job: float) -> str:
    """The job file with each job's ramp and measured time set so that
    a job takes ``seconds_per_job`` in all."""
    ramp = seconds_per_job * RAMP_SHARE
    run = seconds_per_job - ramp
    text = re.sub(r"^runtime=.*$", f"runtime={int(run * 1000)}ms", text, flags=re.M)
    return re.sub(r"^ramp_time=.*$", f"ramp_time={int(ramp * 1000)}ms", text, flags=re.M)


def device_number(path: str) -> Optional[int]:
    """st_rdev of a block device, None for a regular file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise MeasureError(f"{path}: {exc.strerror.lower() if exc.strerror else exc}") from None
    if stat.S_ISBLK(st.st_mode):
        return st.st_rdev
    if stat.S_ISREG(st.st_mode):
        return None
    raise MeasureError(f"{path}: neither a block device nor a regular file")


def in_use(dev: int, mountinfo: str, swaps: str, holders: List[str], partitions: List[str]) -> Optional[str]:
    """Why writing to the device (or a partition of it) would destroy
    data in use: mounted, swap, or held by md/dm; None when it is free."""
    numbers = {f"{os.major(dev)}:{os.minor(dev)}"} | set(partitions)
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[2] in numbers:
            return f"device {fields[2]} is mounted on {fields[4]}"
    if holders:
        return f"it is part of {', '.join(holders)}"
    for line in swaps.splitlines()[1:]:
        if line.split() and _same_device(line.split()[0], numbers):
            return f"it is swap ({line.split()[0]})"
    return None


def _same_device(path: str, numbers: set) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISBLK(st.st_mode) and f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" in numbers


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _listdir(path: str) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def check_writable(target: str, dev: int) -> None:
    """Refuse writes to a device the system is using."""
    sysfs = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    partitions = [_read(os.path.join(sysfs, p, "dev")).strip() for p in _listdir(sysfs)
                  if os.path.exists(os.path.join(sysfs, p, "partition"))]
    holders = _listdir(os.path.join(sysfs, "holders"))
    why = in_use(dev, _read("/proc/self/mountinfo"), _read("/proc/swaps"), holders, partitions)
    if why:
        raise MeasureError(f"{target}: refusing to write: {why}")


def run_job_set(target: str, allow_writes: bool, budget: float, say: Callable[[str], None]) -> List[Dict[str, Any]]:
    """Run read.fio (and write.fio) job by job on ``target``; fio's JSON
    of each run, in order."""
    dev = device_number(target)
    if allow_writes and dev is not None:
        check_writable(target, dev)
    files = ["read"] + (["write"] if allow_writes else [])
    texts = {name: open(job_file(name), encoding="utf-8").read() for name in files}
    total = sum(len(sections(t)) for t in texts.values())
    per_job = budget / total
    if per_job < MIN_JOB_SECONDS:
        raise MeasureError(f"--runtime {budget:g}: {total} jobs need at least {MIN_JOB_SECONDS * total:g} s")
    fio = shutil.which("fio")
    if fio is None:
        raise MeasureError("fio is not installed (apt-get install fio); or run the job set by hand where it is "
                           "and calibrate with --from")
    results, done = [], 0
    with tempfile.TemporaryDirectory(prefix="blkstack-calibrate-") as tmp:
        for name in files:
            path = os.path.join(tmp, f"{name}.fio")
            with open(path, "w", encoding="utf-8") as f:
                f.write(with_timing(texts[name], per_job))
            for section in sections(texts[name]):
                done += 1
                say(f"[{done}/{total}] {section} on {target} ({per_job:.1f} s)")
                results.append(_run_one(fio, path, section, target, name == "read", tmp))
    return results


def _run_one(fio: str, job_path: str, section: str, target: str, readonly: bool, tmp: str) -> Dict[str, Any]:
    out = os.path.join(tmp, f"{section}.json")
    cmd = [fio, f"--section={section}", "--output-format=json", f"--output={out}", job_path]
    if readonly:
        cmd.insert(1, "--readonly")
    proc = subprocess.run(cmd, env=dict(os.environ, TARGET=target), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0 or not os.path.exists(out):
        detail = " ".join((proc.stderr or proc.stdout).split())[:300]
        raise MeasureError(f"fio failed on job '{section}' (status {proc.returncode}): {detail}")
    with open(out, encoding="utf-8") as f:
        text = f.read()
    return json.loads(text[text.find("{"):])


def merge(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One fio JSON document holding every run's jobs, with each run's
    global options folded into its jobs' options."""
    jobs = []
    for run in runs:
        glob = run.get("global options") or {}
        for job in run.get("jobs") or []:
            job = dict(job)
            job["job options"] = {**glob, **(job.get("job options") or {})}
            jobs.append(job)
    first = runs[0] if runs else {}
    return {"fio version": first.get("fio version"), "time": first.get("time"), "jobs": jobs}
