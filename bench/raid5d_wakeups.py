#!/usr/bin/env python3
"""When raid5d ran while a submitter was still setting up a raid5 write,
read from the guests' own traces (the ftrace text `blkstack validate`
leaves as `trace.txt`), never from blkstack's output.

    python bench/raid5d_wakeups.py DIR...          # every trace.txt under DIR
    python bench/raid5d_wakeups.py DIR... --runs   # and each write's CPU timeline

A write is a `block_bio_queue` of a `W` bio on an md array (major 9) by a
task other than an md thread or a kworker; it is followed until that task
queues its next array bio (or 45 ms). Writes md did not split are skipped:
raid5d then has nothing to preempt. The guests run one CPU per trace line
(`[000]`), so consecutive events of one task are one stretch of its time
on the CPU.

6.12 ends each piece of a split write with its own `__submit_bio` plug:
md's plug callback releases the piece's stripe_heads and traces
`block_unplug` for the submitter (the `N` flag: need-resched was set).
The script lists the pieces after whose unplug raid5d ran before the
submitter's next event: the wake-ups that preempted it (the last piece's
does not count; the submitter sleeps there anyway). 7.x has no plug around
the write and traces nothing between releases, so the script lists
raid5d's stretches on the CPU before the submitter's last split, each as
(plugs, bios queued): raid5d handled a stripe_head alone per plug.

Identical trace files (a found scenario is a copy of a shrinking round's
run) count once. The summary gives, per kernel, disk speed (`slow` when
the path names a slow-disk run) and write, how many runs showed each
pattern. The ftrace text is read directly: blkstack's trace reader keeps
neither the flags column nor plug events.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import re
import sys
from collections import Counter, defaultdict
from typing import Dict, List, Optional, Tuple

LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+block_(\w+):\s*(.*)$")
KERNEL = re.compile(r"(?:^|/)(5\.10|6\.1|6\.12|7\.2)(?:/|-)")
WINDOW_S = 0.045

# (comm, flags, seconds, event, rest of the line)
Event = Tuple[str, str, float, str, str]


def events(path: str) -> List[Event]:
    out = []
    with open(path, errors="replace") as fh:
        for line in fh:
            m = LINE.match(line)
            if m:
                comm, _pid, _cpu, flags, ts, ev, rest = m.groups()
                out.append((comm.strip(), flags, float(ts), ev, rest))
    return out


def is_raid5d(comm: str) -> bool:
    return comm.startswith("md") and "_raid5" in comm


def array_writes(ev: List[Event]) -> List[int]:
    """Indices of the writes submitters queued on an md array."""
    return [i for i, (comm, _f, _t, e, rest) in enumerate(ev)
            if e == "bio_queue" and re.match(r"9,\d+ W", rest) and not comm.startswith(("md", "kworker"))]


def write_events(ev: List[Event], i: int) -> List[Event]:
    """The events from write *i* until its task queues its next array bio."""
    task, t0 = ev[i][0], ev[i][2]
    out = [ev[i]]
    for x in ev[i + 1:]:
        if x[2] - t0 > WINDOW_S or (x[0] == task and x[3] == "bio_queue" and x[4].startswith("9,")):
            break
        out.append(x)
    return out


def preempting_unplugs(seg: List[Event], task: str) -> Tuple[int, ...]:
    """6.12: the pieces (1-based, the last left out) after whose unplug
    raid5d ran before the submitter's next event."""
    unplugs = [j for j, x in enumerate(seg) if x[0] == task and x[3] == "unplug"]
    out = []
    for n, j in enumerate(unplugs[:-1]):
        k = next((k for k in range(j + 1, len(seg)) if seg[k][0] == task), len(seg))
        if any(is_raid5d(x[0]) for x in seg[j + 1:k]):
            out.append(n + 1)
    return tuple(out)


def raid5d_stretches(seg: List[Event], task: str) -> Tuple[Tuple[int, int], ...]:
    """7.x: raid5d's stretches on the CPU before the submitter's last
    event, each (plugs, bios queued)."""
    last = max(j for j, x in enumerate(seg) if x[0] == task)
    out: List[List[int]] = []
    cur: Optional[List[int]] = None
    for comm, _f, _t, e, _r in seg[:last]:
        if is_raid5d(comm):
            if cur is None:
                cur = [0, 0]
                out.append(cur)
            cur[0] += e == "plug"
            cur[1] += e == "bio_queue"
        elif comm == task:
            cur = None
    return tuple((p, q) for p, q in out)


def timeline(seg: List[Event], task: str) -> str:
    """Who had the CPU, in order: B the submitter (splits, unplugs with
    `N` or `u`), R raid5d (plugs, bios queued), others by name; each
    stretch's span and the gap before it, in ms."""
    runs: List[List] = []
    for x in seg:
        who = "B" if x[0] == task else "R" if is_raid5d(x[0]) else x[0]
        if runs and runs[-1][0] == who:
            runs[-1][2] = x[2]
            runs[-1][3].append(x)
        else:
            runs.append([who, x[2], x[2], [x]])
    parts = []
    for n, (who, a, z, xs) in enumerate(runs):
        if n:
            parts.append(f"+{(a - runs[n - 1][2]) * 1e3:.2f}")
        if who == "B":
            ups = "".join("N" if "N" in x[1] else "u" for x in xs if x[3] == "unplug")
            note = f"s{sum(x[3] == 'split' for x in xs)}" + (f" {ups}" if ups else "")
        elif who == "R":
            note = f"p{sum(x[3] == 'plug' for x in xs)} q{sum(x[3] == 'bio_queue' for x in xs)}"
        else:
            note = ""
        name = who if who in "BR" else f"{who}:"
        parts.append(f"{name}{(z - a) * 1e3:.2f}" + (f"[{note}]" if note else ""))
    return " ".join(parts)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--runs", action="store_true", help="print each write's CPU timeline")
    args = ap.parse_args(argv)
    seen = set()
    summary: Dict[Tuple[str, str, str], Counter] = defaultdict(Counter)
    for root in args.roots:
        for path in sorted(glob.glob(os.path.join(root, "**", "trace.txt"), recursive=True)):
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            k = KERNEL.search(path)
            kernel = k.group(1) if k else "?"
            speed = "slow" if "slow" in path else "fast"
            ev = events(path)
            if not any(is_raid5d(x[0]) for x in ev):
                continue
            for i in array_writes(ev):
                seg = write_events(ev, i)
                task = ev[i][0]
                if not any(x[0] == task and x[3] == "split" for x in seg):
                    continue
                what = ev[i][4].split("[")[0].strip()
                if any(x[0] == task and x[3] == "unplug" for x in seg):
                    pattern = f"preempting unplugs {preempting_unplugs(seg, task) or 'none'}"
                else:
                    pattern = f"raid5d mid-write {raid5d_stretches(seg, task) or 'none'}"
                summary[(kernel, speed, what)][pattern] += 1
                if args.runs:
                    print(f"{path}: {what}: {pattern}\n    {timeline(seg, task)}")
    for (kernel, speed, what), c in sorted(summary.items()):
        print(f"{kernel} {speed} {what}: {sum(c.values())} runs")
        for pattern, n in c.most_common():
            print(f"  {n:3d}  {pattern}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
