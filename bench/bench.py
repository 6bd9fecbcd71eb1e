#!/usr/bin/env python3
"""Throughput and memory of the blkstack engine.

Runs each workload through the installed package (the Rust engine does the
work; Python only starts it) and prints simulated bios per second, the
simulated time, peak live bios and the process's peak memory. Not part of
the test run: figures depend on the machine.

    python bench/bench.py            # all workloads
    python bench/bench.py dd-10g     # one
    python bench/bench.py --instructions [WORKLOAD...]
    python bench/bench.py --instructions --trace [WORKLOAD...]   # what --trace adds, per line
    python bench/bench.py --host-cpu vm [--instructions] [WORKLOAD...]   # with the host CPU model on

Timings move with whatever else the machine runs. --instructions counts
instead the instructions one run executes (valgrind's callgrind, in a fresh
interpreter, less the interpreter's own start): slow, but the same from run
to run, for comparing two versions of the engine.
"""

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import blkstack

WORKLOADS = {
    # 10 GiB of dd bs=1M O_DIRECT reads at max_sectors_kb=128: every 1 MiB
    # bio is split into eight requests (81,920 bio objects in all).
    "dd-10g": """
kernel = "6.12"
[disks.nvme0n1]
kind = "nvme"
size = "16GiB"
[disks.nvme0n1.queue]
max_sectors_kb = 128
[workload]
type = "dd"
if = "/dev/nvme0n1"
of = "/dev/null"
bs = "1M"
count = 10240
iflag = "direct"
""",
    # 64 GiB of 4 MiB reads from a fragmented buffer on virtio with
    # max_segments 32: bio building and the segment walk dominate.
    "dd-fragmented-64g": """
kernel = "6.12"
[disks.vda]
kind = "virtio"
size = "80GiB"
[disks.vda.queue]
max_segments = 32
[workload]
type = "dd"
if = "/dev/vda"
of = "/dev/null"
bs = "4M"
count = 16384
iflag = "direct"
buffer_fragmentation = 0.05
""",
    # 4 KiB sequential writes, 64 per plugged submission (as writeback
    # submits dirty pages), through mq-deadline: nearly every bio merges.
    "merge-4k-mq-deadline": """
kernel = "6.12"
[disks.sda]
kind = "sata"
size = "16GiB"
[workload]
type = "bios"
device = "sda"
iodepth = 64
batch = 64
plug = true
[[workload.bio]]
op = "write"
sector = 0
size = 4096
repeat = 2000000
""",
    # fio randread of 4-64 KiB through the random map, libaio at depth 32:
    # fio's generators (offset, length, axmap) run for every I/O.
    "fio-randread-bsrange": """
kernel = "6.12"
[disks.nvme0n1]
kind = "nvme"
size = "64GiB"
[workload]
type = "fio"
args = ["--name=r", "--filename=nvme0n1", "--rw=randread", "--bsrange=4k-64k", "--direct=1",
        "--ioengine=libaio", "--iodepth=32", "--size=16G", "--number_ios=1000000"]
""",
}

# Targets in bios per second, for the workloads that have one.
TARGETS = {"dd-10g": 5e6, "merge-4k-mq-deadline": 5e6}


def bench(name: str, text: str, repeat: int = 3) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{name}.toml"
        path.write_text(text)
        best = None
        for _ in range(repeat):
            start = time.perf_counter()
            summary = json.loads(blkstack._core.run(str(path)))
            summary["process_s"] = time.perf_counter() - start
            if best is None or summary["wall_time_s"] < best["wall_time_s"]:
                best = summary
        return best


def callgrind_instructions(code: str) -> int:
    """Instructions callgrind counts for `python -c code`."""
    # Imported here: the timing mode's peak-RSS column should not grow.
    import re
    import subprocess

    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    m = re.search(r"Collected : (\d+)", out)
    if not m:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out}")
    return int(m.group(1))


def instructions(names: list[str]) -> int:
    """Print each workload's instruction count (one run, as `run` does it)."""
    start = "import blkstack._core as c"
    idle = callgrind_instructions(start)
    print(f"{'workload':<20} {'bios':>10} {'instructions':>15} {'per bio':>8}")
    for n in names:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / f"{n}.toml"
            path.write_text(WORKLOADS[n])
            count = callgrind_instructions(f"{start}; c.run({str(path)!r})") - idle
            bios = json.loads(blkstack._core.run(str(path)))["bios"]
        print(f"{n:<20} {bios:>10} {count:>15,} {count / bios:>8,.0f}")
    return 0


def trace_instructions(names: list[str]) -> int:
    """Print what --trace adds to each workload's run: instructions with a
    blkparse trace written to a file, less those of the same run without,
    per line of the trace."""
    start = "import blkstack._core as c"
    print(f"{'workload':<20} {'lines':>10} {'added instructions':>19} {'per line':>9}")
    for n in names:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / f"{n}.toml"
            trace = Path(d) / "trace.txt"
            path.write_text(WORKLOADS[n])
            plain = callgrind_instructions(f"{start}; c.run({str(path)!r})")
            traced = callgrind_instructions(f"{start}; c.run({str(path)!r}, trace={str(trace)!r})")
            with open(trace, "rb") as fh:
                lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        added = traced - plain
        print(f"{n:<20} {lines:>10} {added:>19,} {added / max(lines, 1):>9,.0f}")
    return 0


def main(argv: list[str]) -> int:
    args = argv[1:]
    if "--host-cpu" in args:
        # Every workload with the host CPU model of this class on.
        i = args.index("--host-cpu")
        cls = args[i + 1] if i + 1 < len(args) else ""
        del args[i:i + 2]
        for n in WORKLOADS:
            WORKLOADS[n] += f'\n[host]\ncpu = "{cls}"\n'
    count = "--instructions" in args
    traced = "--trace" in args
    names = [a for a in args if a not in ("--instructions", "--trace")] or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        print(f"bench: unknown workload {', '.join(unknown)} (known: {', '.join(WORKLOADS)})", file=sys.stderr)
        return 2
    if count:
        return trace_instructions(names) if traced else instructions(names)
    print(f"{'workload':<20} {'bios':>10} {'engine s':>9} {'bios/s':>12} {'target':>12} {'sim s':>8} {'live':>5} {'maxrss MiB':>10}")
    for n in names:
        s = bench(n, WORKLOADS[n])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        target = TARGETS.get(n)
        versus = f"{s['bios_per_s'] / target:.2f}x of {target / 1e6:g}M" if target else "-"
        print(
            f"{n:<20} {s['bios']:>10} {s['wall_time_s']:>9.4f} {s['bios_per_s']:>12,.0f} "
            f"{versus:>12} {s['sim_time_ns'] / 1e9:>8.3f} {s['peak_live_bios']:>5} {rss:>10.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
