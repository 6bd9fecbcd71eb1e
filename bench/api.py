#!/usr/bin/env python3
"""The Python API's memory and time: seed 002 (md raid10 discard, mkfs.xfs on
4 x 1.9 TB NVMe) through ``blkstack.run()`` as a notebook would run it,
each in a process of its own, printing peak resident memory.

    python bench/api.py                          # full size, kernel 5.8 (~100 M events)
    python bench/api.py --scale 0.5              # members half the size
    python bench/api.py --no-events              # events=False (the requests only)
    python bench/api.py --baseline OTHER/bin/python   # the same beside another installation

Each case prints the run's wall and processor seconds, the events kept and
the bytes they take, the peak RSS after the run, then after building the
``requests`` DataFrame and (with --events-frame) the ``events`` DataFrame.
The target: a full-size run fits in 4 GB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = ("nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1")
MEMBER_SIZE = 1_900_000_000_000
TARGET_GB = 4.0

# Runs in the child: one measurement, printed as one JSON line.
CHILD = r"""
import json, resource, sys, time, importlib.resources
import blkstack
from blkstack.cli.scenarios import builtin_scenarios

kernel, events, frames, sets = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(","), sys.argv[4:]

def rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6

out = {}
with importlib.resources.as_file(builtin_scenarios()["raid10-discard"]) as path:
    wall, cpu = time.perf_counter(), time.process_time()
    r = blkstack.run(path, kernel, sets=sets, events=events)
    out["run_s"], out["run_cpu_s"], out["rss_run_gb"] = time.perf_counter() - wall, time.process_time() - cpu, rss_gb()
    store = getattr(r, "_store", None)
    out["events"] = len(store) if store is not None and hasattr(store, "nbytes") else None
    out["stored_bytes"] = getattr(r, "stored_bytes", None)
    for frame in [f for f in frames if f]:
        wall, cpu = time.perf_counter(), time.process_time()
        rows = len(getattr(r, frame))
        out["frame_" + frame] = {"rows": rows, "s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                                 "rss_gb": rss_gb()}
print(json.dumps(out))
"""


def measure(python: str, kernel: str, events: bool, frames: list, sets: list) -> dict:
    cmd = [python, "-c", CHILD, kernel, "1" if events else "0", ",".join(frames), *sets]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {python} failed: {proc.stderr[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def show(label: str, m: dict) -> None:
    print(f"{label}:")
    print(f"  run            {m['run_s']:8.2f} s wall {m['run_cpu_s']:8.2f} s cpu   peak RSS {m['rss_run_gb']:6.2f} GB"
          f"{'  (target ' + str(TARGET_GB) + ' GB)' if m['rss_run_gb'] else ''}")
    if m.get("events") is not None and m.get("stored_bytes") is not None:
        per = m["stored_bytes"] / m["events"] if m["events"] else 0.0
        print(f"  events kept    {m['events']:,} taking {m['stored_bytes'] / 1e6:,.0f} MB ({per:.1f} bytes/event)")
    for frame in ("requests", "events"):
        f = m.get("frame_" + frame)
        if f:
            print(f"  .{frame:<13} {f['rows']:,} rows in {f['s']:.2f} s wall {f['cpu_s']:.2f} s cpu, "
                  f"peak RSS {f['rss_gb']:.2f} GB")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="5.8", help="kernel profile (default 5.8: the seed's slow, chunk-by-chunk side)")
    p.add_argument("--scale", type=float, default=1.0, help="member size as a fraction of 1.9 TB (default 1)")
    p.add_argument("--no-events", action="store_true", help="run with events=False")
    p.add_argument("--events-frame", action="store_true", help="also build the events DataFrame (large)")
    p.add_argument("--baseline", metavar="PYTHON", help="also measure under this interpreter's blkstack")
    args = p.parse_args()
    sets = [] if args.scale == 1.0 else [f"disks.{m}.size={int(MEMBER_SIZE * args.scale) // 4096 * 4096}"
                                          for m in MEMBERS]
    frames = ["requests"] + (["events"] if args.events_frame and not args.no_events else [])
    print(f"seed 002 raid10-discard, kernel {args.kernel}, members {args.scale:g} x 1.9 TB, "
          f"events={not args.no_events}")
    show("this", measure(sys.executable, args.kernel, not args.no_events, frames, sets))
    if args.baseline:
        show("baseline", measure(args.baseline, args.kernel, not args.no_events, frames, sets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
