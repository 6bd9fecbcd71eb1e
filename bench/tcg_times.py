#!/usr/bin/env python3
"""The CPU times of a qemu TCG guest's block path, measured from the
guests' own traces (the ftrace text `blkstack validate` leaves as
`trace.txt`), never from blkstack's output.

    python bench/tcg_times.py DIR...            # every trace.txt under DIR
    python bench/tcg_times.py DIR... --json times.json
    python bench/tcg_times.py DIR... --trace-name sim-trace.txt   # the model's runs, to compare

Each trace is read with blkstack's trace parser (`blkstack.load_trace`)
and, per kernel (the run directory's `-KERNEL` suffix, or the
`KERNEL-random-...` prefix of a found scenario) and per group (`suite`:
validate/scenarios runs; `random`: the randomized ones, held out), the
script prints the median, quartiles and count of:

  c2q           a task's bio completed (C) to its next bio queued (Q) at the
                  top of the stack: the system call's return, the next
                  call and its bio (dd's loop; not counted after a remap)
  q2g, g2i, i2d   a disk request's Q (or the A that remaps it) to G, G to
                  I, I to D: the submitter's CPU time between tracepoints
  d2c             a disk request's D to C: the emulated disk's service
                  (qemu's thread pool and the completion's injection)
  c2bio           a disk request's C to the C of the bio above it (the
                  completion interrupt's work per bio)
  piece           one split piece to the next on a stacked device (X to
                  X of the same task and device): submitting one piece,
                  its member bio included
  x2a             a piece's split (X) to its remap (A) onto a member:
                  the personality's work for the piece (read_balance,
                  the clone)
  d2x             a piece's member request issued (D) to the next
                  piece's split (X): the rest of the piece's submission
  prev_done       of the pieces after the first: the share whose previous
                  piece's member request completed (C) before this piece
                  was split (X) -- what read_balance sees (C)
  d2c_in_piece    for those pieces, D to C of the previous piece
  c2x             for those pieces, the previous piece's C to this X
  busy_d2c        a request's D to C when the submitter logged work
                  (any event of its pid) between them, against idle_d2c,
                  when it logged none: whether the vCPU waits for the disk

Times are the tracepoints' own (microsecond resolution in ftrace text).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections import defaultdict, deque
from typing import Dict, Iterable, List, Optional, Tuple

KERNELS = ("5.10", "6.1", "6.12", "7.2")
STACKED = ("md", "dm-", "9,", "253,")


def traces(roots: Iterable[str], name: str = "trace.txt") -> List[Tuple[str, str, str]]:
    """(path, kernel, group) of every trace file *name* under *roots*."""
    out = []
    for root in roots:
        for d, _dirs, files in os.walk(root):
            if name not in files:
                continue
            kernel, group = run_kernel(d)
            if kernel:
                out.append((os.path.join(d, name), kernel, group))
    return sorted(out)


def run_kernel(d: str) -> Tuple[Optional[str], str]:
    """A run directory's kernel and group, from its own or its parents'
    names (`raid10-n2-6.12`, `6.1-random-1-085`, `seed1-6.12/boot-088/s3`)."""
    group = "random" if "random" in d or "/boot-" in d or "seed" in d else "suite"
    parts = d.rstrip("/").split("/")
    for part in reversed(parts):
        m = re.search(r"(?:^|_)(\d+\.\d+)-random-", part)
        if m and m.group(1) in KERNELS:
            return m.group(1), "random"
        m = re.search(r"-(\d+\.\d+)$", part)
        if m and m.group(1) in KERNELS:
            return m.group(1), group
    return None, group


def stacked(dev: str) -> bool:
    return dev.startswith(STACKED)


class Samples:
    """Named lists of microseconds."""

    def __init__(self) -> None:
        self.v: Dict[str, List[float]] = defaultdict(list)
        self.counts: Dict[str, List[int]] = defaultdict(lambda: [0, 0])

    def add(self, name: str, ns: int) -> None:
        self.v[name].append(ns / 1000.0)

    def share(self, name: str, hit: bool) -> None:
        self.counts[name][0] += int(hit)
        self.counts[name][1] += 1

    def merge(self, o: "Samples") -> None:
        for k, xs in o.v.items():
            self.v[k] += xs
        for k, (a, b) in o.counts.items():
            self.counts[k][0] += a
            self.counts[k][1] += b


def measure(path: str) -> Samples:
    """Every gap of one guest trace."""
    from blkstack import load_trace
    e = load_trace(path, events=True).events
    rows = list(zip(e["time_ns"].tolist(), e["device"].astype(str).tolist(), e["action"].astype(str).tolist(),
                    e["sector"].tolist(), e["nr_sectors"].tolist(), e["pid"].tolist(),
                    e["from_device"].astype(str).tolist()))
    s = Samples()
    queued: Dict[Tuple[str, int], deque] = defaultdict(deque)   # disk bio Q/A time, by (dev, sector)
    got: Dict[Tuple[str, int], deque] = defaultdict(deque)      # G time
    ins: Dict[Tuple[str, int], deque] = defaultdict(deque)      # I time
    d_rows: Dict[Tuple[str, int, int], deque] = defaultdict(deque)  # rows of D not completed, by (dev, sector, size)
    done_at: Dict[int, int] = {}                                # a D's row -> its C time
    last_disk_c: Optional[int] = None                           # the latest disk C not yet followed by a bio's C
    last_x: Dict[Tuple[int, str], int] = {}                     # (pid, stacked dev) -> time of its last X
    last_d: Optional[int] = None                                # row of the last disk D (one vCPU: any task's)
    top_c: Dict[int, int] = {}                                  # pid -> time its last top-level bio completed
    piece_of: List[Tuple[int, int, Optional[int]]] = []         # (row of X, time, row of the previous D)
    pid_rows: Dict[int, List[int]] = defaultdict(list)
    for i, (t, dev, act, sector, n, pid, frm) in enumerate(rows):
        pid_rows[pid].append(i)
        if act == "Q" and pid in top_c and not (i and rows[i - 1][2] == "A" and rows[i - 1][1] == dev):
            s.add("c2q", t - top_c.pop(pid))
        if stacked(dev):
            if act == "X":
                key = (pid, dev)
                if key in last_x:
                    s.add("piece", t - last_x[key])
                    piece_of.append((i, t, last_d))
                last_x[key] = t
            elif act == "C":
                top_c[pid] = t
                if last_disk_c is not None:
                    s.add("c2bio", t - last_disk_c)
                    last_disk_c = None
            continue
        if act == "A":
            if stacked(frm):
                prev_x = last_x.get((pid, frm))
                if prev_x is not None:
                    s.add("x2a", t - prev_x)
            queued[(dev, sector)].append(t)
        elif act == "Q":
            if not queued[(dev, sector)]:
                queued[(dev, sector)].append(t)
        elif act == "G":
            if queued[(dev, sector)]:
                s.add("q2g", t - queued[(dev, sector)].popleft())
            got[(dev, sector)].append(t)
        elif act == "I":
            if got[(dev, sector)]:
                s.add("g2i", t - got[(dev, sector)].popleft())
            ins[(dev, sector)].append(t)
        elif act == "D":
            if ins[(dev, sector)]:
                s.add("i2d", t - ins[(dev, sector)].popleft())
            d_rows[(dev, sector, n)].append(i)
            last_d = i
        elif act == "C":
            if d_rows[(dev, sector, n)]:
                row = d_rows[(dev, sector, n)].popleft()
                td = rows[row][0]
                s.add("d2c", t - td)
                done_at[row] = t
                sub = rows[row][5]
                busy = any(rows[r][2] != "C" for r in _between(pid_rows[sub], row, i))
                s.add("busy_d2c" if busy else "idle_d2c", t - td)
                last_disk_c = t
                top_c[pid] = t
    for i, t, prev in piece_of:
        if prev is None or rows[prev][0] > t:
            continue
        tc = done_at.get(prev)
        hit = tc is not None and tc <= t
        s.share("prev_done", hit)
        s.add("d2x", t - rows[prev][0])
        if hit:
            s.add("d2c_in_piece", tc - rows[prev][0])
            s.add("c2x", t - tc)
    return s


def _between(rows: List[int], lo: int, hi: int) -> List[int]:
    """The rows of *rows* (sorted) strictly between lo and hi."""
    import bisect
    a = bisect.bisect_right(rows, lo)
    b = bisect.bisect_left(rows, hi)
    return rows[a:b]


def quartiles(xs: List[float]) -> Tuple[float, float, float]:
    if len(xs) < 2:
        v = xs[0] if xs else float("nan")
        return v, v, v
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


ORDER = ("c2q", "q2g", "g2i", "i2d", "d2c", "c2bio", "piece", "x2a", "d2x", "d2c_in_piece", "c2x", "busy_d2c", "idle_d2c")


def table(results: Dict[Tuple[str, str], Samples]) -> Dict[str, Dict[str, object]]:
    out: Dict[str, Dict[str, object]] = {}
    for (kernel, group), s in sorted(results.items()):
        row: Dict[str, object] = {}
        for name in ORDER:
            xs = s.v.get(name, [])
            q1, med, q3 = quartiles(xs)
            row[name] = {"n": len(xs), "median_us": round(med, 1), "q1_us": round(q1, 1), "q3_us": round(q3, 1)}
        for name, (hit, n) in s.counts.items():
            row[name] = {"n": n, "share": round(hit / n, 3) if n else None}
        out[f"{kernel} {group}"] = row
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="+", help="directories holding guest runs (trace.txt)")
    ap.add_argument("--json", help="write the figures as JSON here")
    ap.add_argument("--trace-name", default="trace.txt",
                    help="the trace file of a run (sim-trace.txt: the model's run of the same scenario, to check "
                         "a CPU class against the guests)")
    ap.add_argument("--exclude", default=r"bfq-|io-max-",
                    help="skip runs whose directory matches (default: the throttled disks of the bfq and io.max "
                         "scenarios, whose I to D and D to C are throttle waits)")
    args = ap.parse_args(argv)
    results: Dict[Tuple[str, str], Samples] = defaultdict(Samples)
    found = [f for f in traces(args.roots, args.trace_name) if not re.search(args.exclude, f[0])]
    for path, kernel, group in found:
        try:
            results[(kernel, group)].merge(measure(path))
        except (OSError, ValueError) as exc:
            print(f"skipped {path}: {exc}", file=sys.stderr)
    tab = table(results)
    print(f"{len(found)} guest traces")
    for label, row in tab.items():
        print(f"\n{label}")
        for name, f in row.items():
            if "share" in f:
                print(f"  {name:13s} {f['share']!s:>6}  of {f['n']}")
            elif f["n"]:
                print(f"  {name:13s} median {f['median_us']:9.1f} us  [{f['q1_us']:.1f}-{f['q3_us']:.1f}]  n={f['n']}")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as fh:
            json.dump({"traces": [p for p, _k, _g in found], "figures": tab}, fh, indent=1)
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
