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
    python bench/bench.py --baseline OTHER/bin/python [--instructions] [WORKLOAD...]

Timings move with whatever else the machine runs. --instructions counts
instead the instructions one run executes (valgrind's callgrind, in a fresh
interpreter, less the interpreter's own start): slow, but the same from run
to run, for comparing two versions of the engine. --baseline PYTHON
measures each workload under this interpreter (A) and under another
installation of blkstack (B: another virtual environment or checkout) in
the same invocation and prints A/B; timings then come from fresh
processes, A B A B ..., as median [least-most] of the engine's wall time.
"""

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import blkstack

SEED_002 = Path(blkstack.__file__).parent / "scenarios" / "raid10-discard.toml"


def seed_002(kernel: str, member_size: str) -> str:
    """Seed 002's stack (md raid10 over four NVMe, mkfs.xfs discarding the
    whole array) on `kernel`, with members of `member_size`."""
    text = SEED_002.read_text()
    text = text.replace('kernel = "5.13"', f'kernel = "{kernel}"', 1)
    return text.replace("size = 1900000000000", f"size = {member_size}")


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
    # Seed 002 before (5.8): raid10 discards its whole array chunk by
    # chunk through the write path, at a twentieth of the seed's size
    # (members of 95 GB: about 1.1 million bios; the full size's
    # 21.7 million take bench/cli.py's seed002 case).
    "seed002-before-20th": seed_002("5.8", "95000000000"),
    # Whole-array discards of raid10 on 100 TiB members (6.1: one discard
    # per member range): the conservation check maps each root's range.
    "raid10-discard-100t": seed_002("6.1", '"100TiB"'),
}

# Targets in bios per second, for the workloads that have one.
TARGETS = {"dd-10g": 5e6, "merge-4k-mq-deadline": 10e6}


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


def callgrind_instructions(code: str, python: str = sys.executable) -> int:
    """Instructions callgrind counts for `python -c code`."""
    # Imported here: the timing mode's peak-RSS column should not grow.
    import re
    import subprocess

    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c", code]
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


def spread(values: list[float]) -> str:
    import statistics

    return f"{statistics.median(values):.4f} [{min(values):.4f}-{max(values):.4f}]"


def baseline_compare(names: list[str], baseline: str, count: bool, repeat: int = 3) -> int:
    """Each workload under this interpreter (A) and `baseline` (B): the
    instructions of one run each, or the engine's wall time of `repeat`
    fresh runs each, A B A B ...; then A/B."""
    import subprocess

    start = "import blkstack._core as c"
    what = "instructions" if count else "engine wall s and run cpu s, median [least-most]"
    print(f"{'workload':<22} {'bios':>10}  A ({what}) / B / A÷B")
    for n in names:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "w.toml"
            path.write_text(WORKLOADS[n])
            bios = json.loads(blkstack._core.run(str(path)))["bios"]
            if count:
                a = callgrind_instructions(f"{start}; c.run({str(path)!r})") - callgrind_instructions(start)
                b = callgrind_instructions(f"{start}; c.run({str(path)!r})", baseline) - callgrind_instructions(start, baseline)
                print(f"{n:<22} {bios:>10}  A {a:,} ({a / bios:,.0f}/bio)  B {b:,} ({b / bios:,.0f}/bio)  A/B {a / b:.3f}")
                continue
            # The engine's wall time, and the processor time of the run.
            code = (f"{start}; import json, resource; r = lambda: sum(resource.getrusage(0)[:2]); t = r(); "
                    f"w = json.loads(c.run({str(path)!r}))['wall_time_s']; print(w, r() - t)")
            got: dict[str, list[float]] = {"A wall": [], "B wall": [], "A cpu": [], "B cpu": []}
            for _ in range(repeat):
                for python, side in ((sys.executable, "A"), (baseline, "B")):
                    r = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
                    wall, cpu = map(float, r.stdout.split())
                    got[f"{side} wall"].append(wall)
                    got[f"{side} cpu"].append(cpu)
            for kind in ("wall", "cpu"):
                a, b = got[f"A {kind}"], got[f"B {kind}"]
                ratios = [x / y for x, y in zip(a, b)]
                print(f"{n:<22} {bios:>10}  {kind:<4} A {spread(a)}  B {spread(b)}  A/B {spread(ratios)}")
        sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    args = argv[1:]
    baseline = None
    if "--baseline" in args:
        i = args.index("--baseline")
        baseline = args[i + 1] if i + 1 < len(args) else ""
        del args[i:i + 2]
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
    if baseline is not None:
        return baseline_compare(names, baseline, count)
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
