#!/usr/bin/env python3
"""The report of an 8-disk array: how long `blkstack report` takes and how
big its file is (targets: under 5 s and under 2 MB).

    python bench/report_bench.py               # the seed raid5 array, 3 times
    python bench/report_bench.py --repeat 5 --kernel 6.1 --kernel 7.2
    python bench/report_bench.py --stages      # processor seconds per stage, in this process

Runs the command as a process (start-up included) and prints, per run, the
wall and processor seconds (this process's children) and the file's size;
then the median of each. ``--stages`` instead runs the report's steps one
after another in this process and prints the processor seconds of each
(import, the run, the event table, the summary, the timeline's data, its
JSON, the detail tables, the page), the median over the repeats. The scenario is the seed raid5 array: md0 over
eight SATA disks, 200 direct reads of 4480 KiB (28,000 bios on md0, 9,600
member requests).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = Path(__file__).resolve().parent.parent / "python" / "blkstack" / "scenarios" / "raid5-recursive-split.toml"


def one(out: Path, kernels: list) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "blkstack", "report", str(SCENARIO), "--out", str(out), "-q"]
    for k in kernels:
        cmd += ["--kernel", k]
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stat().st_size


def stages(kernels: list) -> list:
    """(stage, processor seconds) of one report, step by step as
    ``blkstack.report.build`` takes them."""
    out = []
    clock = time.process_time

    def timed(name, fn):
        t0 = clock()
        value = fn()
        out.append((name, clock() - t0))
        return value

    timed("import blkstack", lambda: __import__("blkstack.report"))
    from blkstack import report as R
    from blkstack import report_data as D
    from blkstack.cli.inputs import load_runs

    runs = timed("run (engine, summary)", lambda: load_runs([str(SCENARIO)], kernels, [], jobs=1))
    timed("event table", lambda: [r.result.events for r in runs])
    timed("summary section", lambda: R.summary_section(runs))
    data = timed("timeline data", lambda: D.timeline(runs))
    timed("timeline JSON", lambda: json.dumps(data, separators=(",", ":"), allow_nan=False))
    timed("detail tables", lambda: [R.details_section(f"run-{i}", r) for i, r in enumerate(runs)])
    timed("whole page (build)", lambda: R.build(runs))
    return out


def stages_in_child(kernels: list) -> list:
    """:func:`stages` in a fresh process (the import is timed cold)."""
    code = ("import json, sys; sys.path.insert(0, %r); import report_bench as b; "
            "print(json.dumps(b.stages(%r)))") % (str(Path(__file__).resolve().parent), kernels)
    proc = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernel", action="append", default=[])
    ap.add_argument("--stages", action="store_true", help="processor seconds per stage, in one process")
    a = ap.parse_args()
    if a.stages:
        runs = [stages_in_child(a.kernel) for _ in range(a.repeat)]
        for i, (name, _) in enumerate(runs[0]):
            print(f"{name:24s} {statistics.median(r[i][1] for r in runs):7.3f} s processor")
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(a.repeat):
            rows.append(one(Path(d) / f"r{i}.html", a.kernel))
            wall, cpu, size = rows[-1]
            print(f"run {i + 1}: {wall:.2f} s wall, {cpu:.2f} s processor, {size / 1e6:.3f} MB")
    print(f"median: {statistics.median(r[0] for r in rows):.2f} s wall, "
          f"{statistics.median(r[1] for r in rows):.2f} s processor, "
          f"{statistics.median(r[2] for r in rows) / 1e6:.3f} MB  (targets: 5 s, 2 MB; {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
