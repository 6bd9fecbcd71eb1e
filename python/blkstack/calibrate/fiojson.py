"""Reading fio's ``--output-format=json`` (fio 3.x) into the figures the
fit needs: per job its pattern, block size, queue depth, bandwidth, IOPS
and mean completion latency.

Each job's options are its ``job options`` over the file's ``global
options``, with fio's defaults (``rw=read``, ``iodepth=1``, ``bs=4k``).
Anything missing or malformed is a ``FioJsonError`` naming the file, the
job and the field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple


class FioJsonError(ValueError):
    """fio's JSON lacks a figure or option the fit needs."""


# fio's rw values: (direction, random). Mixed jobs (rw, randrw) are not
# used for the fit: one job's two directions share its queue depth.
RW_PATTERNS = {
    "read": ("read", False),
    "randread": ("read", True),
    "write": ("write", False),
    "randwrite": ("write", True),
}
MIXED = ("rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite", "randtrimwrite")

# fio's size suffixes with its default kb_base=1024.
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


@dataclass(frozen=True)
class FioJob:
    """One fio job's measured figures."""
    name: str
    direction: str  # "read" or "write"
    random: bool
    bs: int  # bytes
    iodepth: int
    bw_bytes: float  # bytes per second
    iops: float
    clat_ns: float  # mean completion latency

    @property
    def is_write(self) -> bool:
        return self.direction == "write"

    def label(self) -> str:
        """rw/bs/qd as fio would spell them."""
        rw = ("rand" if self.random else "") + self.direction
        return f"{rw} {fmt_size(self.bs)} qd{self.iodepth}"


def fmt_size(n: int) -> str:
    for unit, scale in (("m", 1 << 20), ("k", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def parse_size(text: str) -> int:
    """A fio size such as ``4k``, ``1m`` or ``4096``; for ``bs=4k,16k``
    (reads, writes) the first."""
    value = str(text).split(",")[0].split(":")[0].strip().lower()
    digits = value.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = value[len(digits):]
    if not digits or unit not in _UNITS:
        raise ValueError(text)
    return int(float(digits) * _UNITS[unit])


def load(path: str) -> List[FioJob]:
    """The jobs of one fio JSON file, in its order (mixed jobs left out)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise FioJsonError(f"{path}: not fio JSON output (not UTF-8 text: {exc.reason})") from None
    return parse(path, text)


def parse(path: str, text: str) -> List[FioJob]:
    # fio prints notes ("fio: ...") before the JSON when they go to the same stream.
    start = text.find("{")
    try:
        data = json.loads(text[start:] if start >= 0 else text)
    except json.JSONDecodeError as exc:
        raise FioJsonError(f"{path}: not fio JSON output (line {exc.lineno}: {exc.msg}); "
                           "run fio with --output-format=json") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise FioJsonError(f"{path}: no 'jobs' list: not fio's --output-format=json")
    if not data["jobs"]:
        raise FioJsonError(f"{path}: 'jobs' is empty: fio ran no job")
    glob = data.get("global options") or {}
    jobs = []
    for i, raw in enumerate(data["jobs"]):
        job = _job(path, i, raw, glob)
        if job is not None:
            jobs.append(job)
    return jobs


def _job(path: str, index: int, raw: Any, glob: Dict[str, Any]) -> "FioJob | None":
    if not isinstance(raw, dict):
        raise FioJsonError(f"{path}: jobs[{index}] is not an object")
    name = raw.get("jobname")
    if not isinstance(name, str) or not name:
        raise FioJsonError(f"{path}: jobs[{index}]: missing field 'jobname'")
    where = f"{path}: job '{name}'"
    if raw.get("error"):
        raise FioJsonError(f"{where}: fio reports error {raw['error']}: the job did not run")
    opts = dict(glob)
    opts.update(raw.get("job options") or {})
    rw = str(opts.get("rw", opts.get("readwrite", "read"))).split(":")[0]
    if rw in MIXED:
        return None
    if rw not in RW_PATTERNS:
        raise FioJsonError(f"{where}: option 'rw' is '{rw}', not one fio knows")
    direction, random = RW_PATTERNS[rw]
    bs, depth = _option_int(where, opts, "bs", "4k"), _option_int(where, opts, "iodepth", "1")
    if _option_int(where, opts, "numjobs", "1") != 1:
        raise FioJsonError(f"{where}: option 'numjobs' is {opts['numjobs']}: the fit reads one process per job; "
                           "run the job set with numjobs=1")
    side = raw.get(direction)
    if not isinstance(side, dict):
        raise FioJsonError(f"{where}: missing field '{direction}'")
    bw, iops = _figure(where, side, direction, "bw_bytes"), _figure(where, side, direction, "iops")
    clat = side.get("clat_ns")
    mean = clat.get("mean") if isinstance(clat, dict) else None
    if not isinstance(mean, (int, float)) or isinstance(mean, bool):
        raise FioJsonError(f"{where}: missing field '{direction}.clat_ns.mean'")
    if bw <= 0 or iops <= 0 or mean <= 0:
        raise FioJsonError(f"{where}: '{direction}' shows no I/O (bw_bytes {bw}, iops {iops}): "
                           "the job moved no data")
    return FioJob(name, direction, random, bs, depth, float(bw), float(iops), float(mean))


def _option_int(where: str, opts: Dict[str, Any], key: str, default: str) -> int:
    text = opts.get(key, opts.get("blocksize" if key == "bs" else key, default))
    try:
        value = parse_size(text)
    except ValueError:
        raise FioJsonError(f"{where}: option '{key}' is '{text}', not a number") from None
    if value <= 0:
        raise FioJsonError(f"{where}: option '{key}' is '{text}': must be positive")
    return value


def _figure(where: str, side: Dict[str, Any], direction: str, key: str) -> float:
    value = side.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise FioJsonError(f"{where}: missing field '{direction}.{key}'")
    return float(value)


def split(jobs: List[FioJob]) -> Tuple[List[FioJob], List[FioJob]]:
    """Reads, writes."""
    return [j for j in jobs if not j.is_write], [j for j in jobs if j.is_write]
