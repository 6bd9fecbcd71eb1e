"""Compare two block traces: what each device was asked to do, in order.

Either trace may be blkparse's default text (``blkparse -i sda``, or
``blkstack run --trace``) or the kernel's ftrace text of the ``block_*``
tracepoints (``/sys/kernel/tracing/trace``, ``trace-cmd report`` in its
default layout); 6.1's and 6.12's field layouts are both read (the parser is
the engine's, ``blkstack._core.trace_streams``).

For each device the chosen events (by default ``D``, the requests issued to
the driver) form a stream of (RWBS, sector, sectors). The two streams are
aligned in order (equal runs as they come, meeting again at the nearest
pair of equal events after a difference: linear time on equal or locally
reordered streams, as :func:`align` explains); the
report gives the share of events that line up, the share that match when
order is ignored, and the first divergence with the events around it. When
both sides' queue limits are known (a sysfs snapshot of the real machine,
the model's resolved limits), the values that differ are listed too.

    from blkstack.diff import diff_files
    report = diff_files("real.txt", "sim.txt")
    print(report.text())
"""

from __future__ import annotations

import json
import os
import re
from array import array
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from blkstack import _core
from blkstack.tracefile import TraceFormatError, check_text_trace

ABSENT_U64 = (1 << 64) - 1
ABSENT_I32 = -(1 << 31)

# Event names accepted by --events, as blkparse prints them.
EVENT_NAMES = {
    "Q": "queued bios", "X": "splits", "A": "remaps", "G": "requests allocated", "I": "inserts",
    "D": "issued requests", "C": "completions", "M": "back merges", "F": "front merges",
    "P": "plugs", "U": "unplugs", "UT": "timer unplugs", "R": "requeues",
}


class TraceFileError(Exception):
    """A trace that cannot be read or holds no block events (one line)."""


@dataclass(frozen=True)
class Event:
    """One event of a stream."""

    rwbs: str
    sector: Optional[int]
    nr_sectors: int
    line: int
    # A split (X): the sector where the remainder starts ("X R 0 / 256").
    split: Optional[int] = None

    def key(self, ignore_flags: bool = False) -> Tuple[str, Optional[int], int]:
        rwbs = op_letters(self.rwbs) if ignore_flags else self.rwbs
        if self.split is not None:
            # A split carries no size; where it splits is what it says.
            return (rwbs, self.sector, -1 - self.split)
        # An event without data has no meaningful sector: blkparse prints
        # none ("D FN [kworker]"), the tracepoints 0 or -1.
        sector = self.sector if self.nr_sectors else None
        return (rwbs, sector, self.nr_sectors)

    def __str__(self) -> str:
        if self.sector is None:
            return f"{self.rwbs}"
        if self.split is not None:
            # blkparse's split line: the bio's sector / the remainder's.
            return f"{self.rwbs} {self.sector} / {self.split}"
        return f"{self.rwbs} {self.sector} + {self.nr_sectors}"


def canonical_rwbs(rwbs: str) -> str:
    """One spelling per request kind: blkparse prints a flush request
    (REQ_OP_FLUSH | REQ_PREFLUSH) as ``FN`` (no write bit, no data), the
    kernel's tracepoints as ``FF``; both read as ``FF``."""
    return "FF" + rwbs[2:] if rwbs.startswith("FN") else rwbs


def op_letters(rwbs: str) -> str:
    """The operation part of an RWBS string: a leading preflush ``F`` and
    the op (``R``, ``W``, ``D``, ``DE``, ``F``, ``N``), without FUA, sync,
    meta or readahead letters."""
    m = re.match(r"^(F?)(DE|[RWDFN])", rwbs)
    if not m:
        return rwbs
    return m.group(1) + m.group(2)


class EventStream(SequenceABC):
    """The events of one device and kind, kept as the engine's columns
    (``_core.trace_streams``) and made :class:`Event` objects only when
    looked at: a stream of millions of events costs a few arrays."""

    def __init__(self, cols: Mapping[str, bytes], rwbs: Sequence[str]) -> None:
        self.cols = cols
        self.rwbs_table = rwbs
        self._line = memoryview(cols["line"]).cast("Q")
        self._rwbs = memoryview(cols["rwbs"]).cast("I")
        self._sector = memoryview(cols["sector"]).cast("Q")
        self._nr = memoryview(cols["nr_sectors"]).cast("I")
        self._split = memoryview(cols["split"]).cast("Q")

    def __len__(self) -> int:
        return len(self._line)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        s, split = self._sector[i], self._split[i]
        return Event(self.rwbs_table[self._rwbs[i]], None if s == ABSENT_U64 else s, self._nr[i], self._line[i],
                     None if split == ABSENT_U64 else split)


class Trace:
    """A parsed trace file: per device and action, its events in order."""

    def __init__(self, path: str) -> None:
        self.path = path
        if not os.path.exists(path):
            raise TraceFileError(f"{path}: no such file")
        if os.path.isdir(path):
            raise TraceFileError(f"{path}: is a directory")
        try:
            check_text_trace(path)
        except TraceFormatError as exc:
            raise TraceFileError(str(exc)) from None
        devices, rwbs, streams, count, skipped, bad = _core.trace_streams(path)
        self.skipped: int = skipped
        self.bad: List[Tuple[int, str, str]] = list(bad)
        self.devices: List[str] = list(devices)
        self.count: int = count
        table = [canonical_rwbs(r) for r in rwbs]
        self.events: Dict[Tuple[str, str], EventStream] = {
            (self.devices[dev], action): EventStream(cols, table) for dev, action, cols in streams}

    def device_numbers(self) -> List[str]:
        """Devices that have events, in order of first appearance (ftrace's
        plug/unplug events name none and are left out)."""
        seen: Dict[str, None] = {}
        for (dev, _act) in self.events:
            if dev:
                seen.setdefault(dev, None)
        return list(seen)

    def stream(self, dev: str, action: str) -> Sequence[Event]:
        return self.events.get((dev, action), [])


# ---------------------------------------------------------------------------
# Alignment


@dataclass
class StreamDiff:
    """Two event streams of one device compared."""

    real_dev: str
    sim_dev: str
    action: str
    real: List[Event]
    sim: List[Event]
    matched: int
    set_matched: int
    # (tag, real from, real to, sim from, sim to) as difflib's opcodes.
    opcodes: List[Tuple[str, int, int, int, int]]
    real_name: str = ""
    sim_name: str = ""
    # Events that line up when only the operation is compared (no flags).
    ops_matched: Optional[int] = None

    @property
    def identical(self) -> bool:
        return self.matched == len(self.real) == len(self.sim)

    @property
    def match_percent(self) -> float:
        """Events that line up in order, over the longer stream (100 when
        both are empty)."""
        n = max(len(self.real), len(self.sim))
        return 100.0 if n == 0 else 100.0 * self.matched / n

    @property
    def set_match_percent(self) -> float:
        n = max(len(self.real), len(self.sim))
        return 100.0 if n == 0 else 100.0 * self.set_matched / n

    @property
    def ops_match_percent(self) -> float:
        n = max(len(self.real), len(self.sim))
        m = self.matched if self.ops_matched is None else self.ops_matched
        return 100.0 if n == 0 else 100.0 * m / n

    def first_divergence(self) -> Optional[Tuple[str, int, int, int, int]]:
        for op in self.opcodes:
            if op[0] != "equal":
                return op
        return None

    def to_json(self) -> Dict[str, Any]:
        first = self.first_divergence()
        return {
            "real_device": self.real_dev, "sim_device": self.sim_dev,
            "real_name": self.real_name or None, "sim_name": self.sim_name or None,
            "event": self.action, "real_events": len(self.real), "sim_events": len(self.sim),
            "matched": self.matched, "match_percent": round(self.match_percent, 3),
            "set_matched": self.set_matched, "set_match_percent": round(self.set_match_percent, 3),
            "ops_matched": self.matched if self.ops_matched is None else self.ops_matched,
            "ops_match_percent": round(self.ops_match_percent, 3),
            "first_divergence": None if first is None else {
                "real_index": first[1], "sim_index": first[3],
                "real": [str(e) for e in self.real[first[1]:first[2]][:5]],
                "sim": [str(e) for e in self.sim[first[3]:first[4]][:5]],
                "real_line": self.real[first[1]].line if first[1] < len(self.real) else None,
                "sim_line": self.sim[first[3]].line if first[3] < len(self.sim) else None,
            },
        }


def _columns(events: Sequence[Event], ids: Dict[str, int], ignore_flags: bool) -> Tuple[bytes, bytes, bytes, bytes]:
    """The columns ``_core.align_streams`` compares: RWBS as ids common to
    both sides (*ids*), sector, sectors and split point."""
    def rwbs_id(r: str) -> int:
        return ids.setdefault(op_letters(r) if ignore_flags else r, len(ids))
    if isinstance(events, EventStream):
        codes = [rwbs_id(r) for r in events.rwbs_table]
        rw = array("I", (codes[c] for c in memoryview(events.cols["rwbs"]).cast("I")))
        c = events.cols
        return rw.tobytes(), c["sector"], c["nr_sectors"], c["split"]
    rw = array("I", (rwbs_id(e.rwbs) for e in events))
    sector = array("Q", (ABSENT_U64 if e.sector is None else e.sector for e in events))
    nr = array("I", (e.nr_sectors for e in events))
    split = array("Q", (ABSENT_U64 if e.split is None else e.split for e in events))
    return rw.tobytes(), sector.tobytes(), nr.tobytes(), split.tobytes()


def align(real: Sequence[Event], sim: Sequence[Event], ignore_flags: bool = False
          ) -> Tuple[int, int, List[Tuple[str, int, int, int, int]]]:
    """(events aligned in order, events in common ignoring order, opcodes).

    Equal runs are taken as they come; at a mismatch the streams meet again
    at the nearest pair of equal events (``src/trace/align.rs``), so the
    time is linear in the streams' length when they are equal or locally
    reordered, and bounded per mismatch otherwise."""
    ids: Dict[str, int] = {}
    a, b = _columns(real, ids, ignore_flags), _columns(sim, ids, ignore_flags)
    matched, common, ops = _core.align_streams(a, b)
    return matched, common, [tuple(op) for op in ops]


# ---------------------------------------------------------------------------
# Queue limits


# sysfs files compared (those the model resolves); values are compared as text
# after normalising (the scheduler's "[mq-deadline] none" is "mq-deadline").
LIMIT_KEYS = (
    "logical_block_size", "physical_block_size", "minimum_io_size", "optimal_io_size",
    "max_hw_sectors_kb", "max_sectors_kb", "max_segments", "max_segment_size", "virt_boundary_mask",
    "chunk_sectors", "discard_granularity", "discard_max_bytes", "discard_max_hw_bytes",
    "max_discard_segments", "write_zeroes_max_bytes", "nr_requests", "scheduler", "nomerges",
    "rotational", "zoned", "dma_alignment", "write_cache", "fua",
)


def read_sysfs_snapshot(path: str) -> Dict[str, Dict[str, str]]:
    """Queue limits per device from a snapshot of /sys/block/*/queue/*.

    The format is what ``grep -r . /sys/block/*/dev /sys/block/*/queue/``
    prints on any Linux machine: ``/sys/block/sda/queue/max_sectors_kb:1280``,
    one file a line; a device's ``dev`` line (``/sys/block/sda/dev:8:0``) is
    kept as ``"dev": "8,0"``. A ``PATH VALUE`` layout and a JSON object
    ``{device: {file: value}}`` are read too."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise TraceFileError(f"{path}: {exc.strerror or exc}")
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TraceFileError(f"{path}: not valid JSON: {exc}")
        return {str(d): {str(k): str(v) for k, v in (vals or {}).items()} for d, vals in data.items()}
    out: Dict[str, Dict[str, str]] = {}
    for raw in text.splitlines():
        m = re.match(r"^/sys/(?:block|class/block)/([^/]+)/queue/([^/:\s]+)[:\s](.*)$", raw.strip())
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = m.group(3).strip()
            continue
        # /sys/block/sda/dev:8:0 names the device's number.
        m = re.match(r"^/sys/(?:block|class/block)/([^/]+)/dev[:\s]\s*(\d+):(\d+)$", raw.strip())
        if m:
            out.setdefault(m.group(1), {})["dev"] = f"{m.group(2)},{m.group(3)}"
    if not any(k != "dev" for vals in out.values() for k in vals):
        raise TraceFileError(f"{path}: no /sys/block/DEV/queue/FILE:VALUE lines "
                             "(make one with: grep -r . /sys/block/*/dev /sys/block/*/queue/)")
    return out


def normalise_limit(key: str, value: Any) -> str:
    text = str(value).strip()
    if key == "scheduler":
        m = re.search(r"\[([^\]]+)\]", text)
        if m:
            return m.group(1)
    if isinstance(value, bool):
        return "1" if value else "0"
    return text


def limit_differences(real: Mapping[str, Any], sim: Mapping[str, Any]) -> List[Tuple[str, str, str]]:
    """(file, real value, model value) for every compared file both know
    and whose values differ."""
    out = []
    for key in LIMIT_KEYS:
        if key in real and key in sim:
            r, s = normalise_limit(key, real[key]), normalise_limit(key, sim[key])
            if r != s:
                out.append((key, r, s))
    return out


# ---------------------------------------------------------------------------
# The whole comparison


@dataclass
class DiffReport:
    real_path: str
    sim_path: str
    events: List[str]
    streams: List[StreamDiff] = field(default_factory=list)
    unpaired_real: List[str] = field(default_factory=list)
    unpaired_sim: List[str] = field(default_factory=list)
    limits: Dict[str, List[Tuple[str, str, str]]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    context: int = 3

    @property
    def identical(self) -> bool:
        return all(s.identical for s in self.streams) and not self.unpaired_real and not self.unpaired_sim

    @property
    def matched(self) -> int:
        return sum(s.matched for s in self.streams)

    @property
    def total(self) -> int:
        return sum(max(len(s.real), len(s.sim)) for s in self.streams)

    @property
    def match_percent(self) -> float:
        return 100.0 if self.total == 0 else 100.0 * self.matched / self.total

    @property
    def ops_match_percent(self) -> float:
        """The match when only operations are compared, not RWBS flags."""
        m = sum(s.matched if s.ops_matched is None else s.ops_matched for s in self.streams)
        return 100.0 if self.total == 0 else 100.0 * m / self.total

    def to_json(self) -> Dict[str, Any]:
        return {
            "real": self.real_path, "sim": self.sim_path, "events": self.events,
            "identical": self.identical, "matched": self.matched, "total": self.total,
            "match_percent": round(self.match_percent, 3),
            "ops_match_percent": round(self.ops_match_percent, 3),
            "streams": [s.to_json() for s in self.streams],
            "unpaired_real": self.unpaired_real, "unpaired_sim": self.unpaired_sim,
            "limits": {dev: [{"file": k, "real": r, "sim": s} for k, r, s in diffs] for dev, diffs in self.limits.items()},
            "notes": self.notes,
        }

    def text(self) -> str:
        lines: List[str] = [f"real: {self.real_path}", f"sim:  {self.sim_path}", ""]
        for s in self.streams:
            lines += _stream_text(s, self.context)
            lines.append("")
        for dev in self.unpaired_real:
            lines.append(f"{dev}: only in the real trace")
        for dev in self.unpaired_sim:
            lines.append(f"{dev}: only in the simulated trace")
        if self.unpaired_real or self.unpaired_sim:
            lines.append("  (pair devices with --map REAL=SIM, e.g. --map 254,0=8,0)")
            lines.append("")
        if self.limits:
            lines.append("queue limits that differ (real / model):")
            for dev, diffs in self.limits.items():
                if not diffs:
                    continue
                for key, r, s in diffs:
                    lines.append(f"  {dev}: {key}: {r} / {s}")
            if not any(self.limits.values()):
                lines.append("  none")
            lines.append("")
        lines += self.notes
        verdict = "identical" if self.identical else "different"
        lines.append(f"total: {self.matched} of {self.total} events match in order "
                     f"({self.match_percent:.1f}%): {verdict}")
        return "\n".join(lines).rstrip() + "\n"


def _label(dev: str, name: str) -> str:
    return f"{name} ({dev})" if name else dev


def _stream_text(s: StreamDiff, context: int) -> List[str]:
    what = EVENT_NAMES.get(s.action, s.action)
    left, right = _label(s.real_dev, s.real_name), _label(s.sim_dev, s.sim_name)
    head = left if left == right else f"{left} <-> {right}"
    lines = [f"{head}: {what} ({s.action}): real {len(s.real)}, sim {len(s.sim)}; "
             f"{s.matched} match in order ({s.match_percent:.1f}%), "
             f"{s.set_match_percent:.1f}% ignoring order"]
    if s.ops_matched is not None and s.ops_matched != s.matched:
        lines.append(f"  ({s.ops_matched} match in order ({s.ops_match_percent:.1f}%) comparing operations only, "
                     "without FUA/sync/meta/readahead letters)")
    first = s.first_divergence()
    if first is None:
        return lines
    tag, i1, i2, j1, j2 = first
    lines.append(f"  first divergence at real event {i1 + 1}, sim event {j1 + 1}:")
    rows: List[Tuple[str, str, str]] = []
    for k in range(max(0, i1 - context), i1):
        # Before the divergence both sides are equal, offset by j1 - i1.
        rows.append(_context_row(s.real, k, s.sim, k + (j1 - i1)))
    width = max(i2 - i1, j2 - j1)
    shown = min(width, context + 2)
    for k in range(shown):
        r = _ev(s.real, i1 + k) if i1 + k < i2 else ""
        m = _ev(s.sim, j1 + k) if j1 + k < j2 else ""
        rows.append(("> ", r, m))
    if width > shown:
        rows.append(("  ", f"... {i2 - i1 - min(i2 - i1, shown)} more", f"... {j2 - j1 - min(j2 - j1, shown)} more"))
    # What follows, if the streams meet again.
    nxt = s.opcodes[s.opcodes.index(first) + 1:]
    if nxt and nxt[0][0] == "equal":
        _t, a1, a2, b1, _b2 = nxt[0]
        for k in range(min(context, a2 - a1)):
            rows.append(_context_row(s.real, a1 + k, s.sim, b1 + k))
    wl = max([len(r[1]) for r in rows] + [len("real")])
    lines.append(f"    {'real'.ljust(wl)}   sim")
    for mark, r, m in rows:
        lines.append(f"  {mark}{r.ljust(wl)}   {m}".rstrip())
    return lines


def _context_row(real: Sequence[Event], i: int, sim: Sequence[Event], j: int) -> Tuple[str, str, str]:
    """A pair the alignment calls equal, marked ``~`` when the two events
    still differ as printed (letters --ignore-flags left out)."""
    same = 0 <= i < len(real) and 0 <= j < len(sim) and str(real[i]) == str(sim[j])
    return ("  " if same else "~ ", _ev(real, i), _ev(sim, j))


def _ev(events: Sequence[Event], i: int) -> str:
    if 0 <= i < len(events):
        e = events[i]
        return f"{str(e)}  [line {e.line}]"
    return ""


def pair_devices(real: Sequence[str], sim: Sequence[str], mapping: Mapping[str, str]
                 ) -> Tuple[List[Tuple[str, str]], List[str], List[str]]:
    """Pairs (real device, sim device): *mapping* first, then equal device
    numbers, then, if one device is left on each side, those two."""
    pairs: List[Tuple[str, str]] = []
    left_r, left_s = list(real), list(sim)
    for r, s in mapping.items():
        pairs.append((r, s))
        if r in left_r:
            left_r.remove(r)
        if s in left_s:
            left_s.remove(s)
    for r in list(left_r):
        if r in left_s:
            pairs.append((r, r))
            left_r.remove(r)
            left_s.remove(r)
    if len(left_r) == 1 and len(left_s) == 1:
        pairs.append((left_r[0], left_s[0]))
        left_r, left_s = [], []
    return pairs, left_r, left_s


def parse_devno(text: str) -> str:
    m = re.fullmatch(r"\s*(\d+)\s*[,:]\s*(\d+)\s*", text)
    if not m:
        raise ValueError(f"'{text}' is not a device number MAJOR,MINOR")
    return f"{int(m.group(1))},{int(m.group(2))}"


def diff_traces(real: Trace, sim: Trace, events: Sequence[str] = ("D",), mapping: Optional[Mapping[str, str]] = None,
                names: Optional[Mapping[str, Tuple[str, str]]] = None, ignore_flags: bool = False,
                real_limits: Optional[Mapping[str, Mapping[str, Any]]] = None,
                sim_limits: Optional[Mapping[str, Mapping[str, Any]]] = None,
                context: int = 3, devices: Optional[Sequence[str]] = None) -> DiffReport:
    """Compare two parsed traces.

    *mapping*: real device number -> sim device number (``"254,0"``);
    *names*: real device number -> (real name, sim name), for the report
    and to look up limits; *real_limits*/*sim_limits*: queue limits by
    device name (or device number when there are no names); *devices*:
    compare only these real device numbers."""
    report = DiffReport(real.path, sim.path, list(events), context=context)
    mapping = dict(mapping or {})
    names = dict(names or {})
    pairs, ur, us = pair_devices(real.device_numbers(), sim.device_numbers(), mapping)
    if devices is not None:
        pairs = [p for p in pairs if p[0] in devices]
        ur = [d for d in ur if d in devices]
        us = []
    report.unpaired_real, report.unpaired_sim = ur, us
    for rdev, sdev in pairs:
        rname, sname = names.get(rdev, ("", ""))
        for act in events:
            a, b = real.stream(rdev, act), sim.stream(sdev, act)
            if not a and not b and act != "D":
                continue
            if not a and not b:
                # A device with events, but none of this kind (a bio-based
                # device has no issued requests): nothing to compare.
                continue
            matched, common, ops = align(a, b, ignore_flags)
            ops_matched = matched if ignore_flags or matched == len(a) == len(b) else align(a, b, True)[0]
            report.streams.append(StreamDiff(rdev, sdev, act, a, b, matched, common, ops, rname, sname, ops_matched))
        if real_limits is not None and sim_limits is not None:
            rl = real_limits.get(rname) or real_limits.get(rdev)
            sl = sim_limits.get(sname) or sim_limits.get(sdev)
            if rl is not None and sl is not None:
                report.limits[_label(rdev, rname)] = limit_differences(rl, sl)
    for t, side in ((real, "real"), (sim, "sim")):
        if t.bad:
            line, text, reason = t.bad[0]
            report.notes.append(f"{side} trace: {len(t.bad)} line(s) not understood, first: line {line}: {reason}")
    return report


def diff_files(real_path: str, sim_path: str, **kwargs: Any) -> DiffReport:
    real, sim = Trace(real_path), Trace(sim_path)
    for t in (real, sim):
        if t.count == 0:
            raise TraceFileError(f"{t.path}: no block trace events found (expected blkparse text or the kernel's block_* trace)")
    return diff_traces(real, sim, **kwargs)


def limits_by_devno(path: str) -> Dict[str, Dict[str, Any]]:
    """Queue limits keyed by device number ("8,0") and by name, from a sysfs
    snapshot (see :func:`read_sysfs_snapshot`) or a ``blkstack run --json``
    summary."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise TraceFileError(f"{path}: {exc.strerror or exc}")
    out: Dict[str, Dict[str, Any]] = {}
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TraceFileError(f"{path}: not valid JSON: {exc}")
        if isinstance(data, dict) and isinstance(data.get("devices"), dict):
            for name, dev in data["devices"].items():
                limits = dict(dev.get("limits") or {})
                if not limits:
                    continue
                out[name] = limits
                if dev.get("major") is not None:
                    out[f"{dev['major']},{dev.get('minor')}"] = limits
            if not out:
                raise TraceFileError(f"{path}: the summary has no device limits")
            return out
    for name, vals in read_sysfs_snapshot(path).items():
        out[name] = vals
        if "dev" in vals:
            out[vals["dev"]] = vals
    return out
