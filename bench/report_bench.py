#!/usr/bin/env python3
"""The report of an 8-disk array: how long `blkstack report` takes and how
big its file is (targets: under 5 s and under 2 MB).

    python bench/report_bench.py               # the seed raid5 array, 3 times
    python bench/report_bench.py --repeat 5 --kernel 6.1 --kernel 7.2

Runs the command as a process (start-up included) and prints, per run, the
wall and processor seconds (this process's children) and the file's size;
then the median of each. The scenario is the seed raid5 array: md0 over
eight SATA disks, 200 direct reads of 4480 KiB (28,000 bios on md0, 9,600
member requests).
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernel", action="append", default=[])
    a = ap.parse_args()
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
