#!/usr/bin/env python3
"""`blkstack stats` and `blkstack diff` on large real-format traces, beside
real btt and blkparse (Debian's blktrace package) on the same data.

    python bench/traces.py                     # 1 M-line traces, 3 pairs of runs
    python bench/traces.py --ios 50000 --repeat 5
    python bench/traces.py --keep /tmp/traces  # keep the generated files

The traces come from a blkstack run of a fio random-write job (libaio,
iodepth 32, mq-deadline) with --trace (blkparse text) and --blktrace-dump
(blktrace's binary records as one stream, as `blkparse -d` writes it, for
btt) and --blktrace DIR (sda.blktrace.0, for blkparse).
Each case runs A and its baseline B in turn, A B A B ..., and prints the
median [least-most] wall seconds and peak resident memory of each, and
the median of the pairwise ratios A/B. On a loaded machine the
processor seconds (user + system) compare better than the wall ones:

  stats         blkstack stats TEXT -q (every report, btt's included)
                against btt -i DUMP                                 (target A/B <= 1)
  stats-iostat  blkstack stats TEXT --iostat -q (no btt bookkeeping) against btt -i DUMP
  stats-1core   stats on one core (taskset -c 0, both sides): blkstack then parses
                on its own thread, not on a second one
  parse         blkstack stats TEXT --iostat -q against blkparse -i sda -D DIR (blktrace's files read back to text)
  memory        blkstack stats on the whole trace against its first half:
                peak memory should not grow with the trace's length (A/B near 1)
  diff          blkstack diff TEXT REORDERED against awk + GNU diff of the D lines (target A <= 10 s)

REORDERED is the text trace with each device's events of each kind
locally reordered (every fifth pair of neighbours of the same kind
swapped, seeded): two traces that agree but for local order.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Sequence, Tuple

# A blkparse event line: "  8,0    0        1     0.000000000  4242  Q  WS ...".
EVENT = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+\S+\s+\S+")

SCENARIO = """\
name = "bench-traces"
kernel = "6.12"

[disks.sda]
kind = "sata"
size = "64GiB"

[workload]
type = "fio"
job = \"\"\"
[w]
filename=/dev/sda
rw=randwrite
bs=4k
size={size}
ioengine=libaio
iodepth=32
direct=1
\"\"\"
"""


# blkstack runs as an installed package does, from its byte-code files
# (bench/cli.py says why).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class Sample(NamedTuple):
    wall: float
    cpu: float
    rss_mb: float


def blkstack() -> List[str]:
    script = Path(sys.executable).parent / "blkstack"
    return [str(script)] if script.exists() else [sys.executable, "-m", "blkstack"]


def timed(cmd: Sequence[str], ok: Tuple[int, ...] = (0,)) -> Sample:
    """One run of *cmd*, output thrown away: wall and processor seconds
    and peak resident memory (GNU time's, of the command alone)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        start = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-q", "-f", "%M", "-o", peak.name, *cmd], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err = proc.stderr.read().decode() if proc.stderr else ""
        code = os.waitstatus_to_exitcode(status)
        if code not in ok:
            raise SystemExit(f"bench: {' '.join(cmd)} failed ({code}): {err[-500:]}")
        kb = int((peak.read().split() or ["0"])[-1])
    return Sample(wall, usage.ru_utime + usage.ru_stime, kb / 1024)


def shell(cmd: str) -> List[str]:
    return ["sh", "-c", cmd]


def generate(where: Path, ios: int) -> Dict[str, Path]:
    scen = where / "bench.toml"
    scen.write_text(SCENARIO.format(size=f"{ios * 4}k"))
    text, dump, per_cpu = where / "trace.txt", where / "trace.dump", where / "blktrace"
    per_cpu.mkdir(exist_ok=True)
    subprocess.run(blkstack() + ["run", str(scen), "--trace", str(text), "--blktrace-dump", str(dump),
                                 "--blktrace", str(per_cpu)], check=True, stdout=subprocess.DEVNULL)
    lines = text.read_text().splitlines(keepends=True)
    events = [i for i, ln in enumerate(lines) if EVENT.match(ln)]
    # Each kind of event locally reordered: every fifth pair of
    # neighbours of the same device and action swapped (seeded).
    rng = random.Random(18)
    by_kind: Dict[Tuple[str, str], List[int]] = {}
    for i in events:
        f = lines[i].split()
        by_kind.setdefault((f[0], f[5]), []).append(i)
    swapped = list(lines)
    for same in by_kind.values():
        for k in range(0, len(same) - 1, 2):
            if rng.random() < 0.2:
                swapped[same[k]], swapped[same[k + 1]] = lines[same[k + 1]], lines[same[k]]
    reordered = where / "reordered.txt"
    reordered.write_text("".join(swapped))
    half = where / "half.txt"
    half.write_text("".join(lines[i] for i in events[:len(events) // 2]))
    print(f"# trace: {len(events):,} event lines ({text.stat().st_size / 1e6:.0f} MB text, "
          f"{dump.stat().st_size / 1e6:.0f} MB binary)")
    del lines, swapped
    return {"text": text, "dump": dump, "reordered": reordered, "half": half, "per_cpu": per_cpu}


def cases(f: Dict[str, Path], out: Path) -> List[Tuple[str, List[str], List[str], Tuple[int, ...]]]:
    b = blkstack()
    d_lines = "awk '$6 == \"D\" {{print $7, $8, $9, $10}}' {} > {}"
    gnu_diff = (d_lines.format(f["text"], out / "a.d") + " && " + d_lines.format(f["reordered"], out / "b.d")
                + f" && diff {out / 'a.d'} {out / 'b.d'} > /dev/null; test $? -le 1")
    return [
        ("stats", b + ["stats", str(f["text"]), "-q"], ["btt", "-i", str(f["dump"]), "-o", str(out / "btt")], (0,)),
        ("stats-iostat", b + ["stats", str(f["text"]), "--iostat", "-q"], ["btt", "-i", str(f["dump"]), "-o", str(out / "btt")], (0,)),
        ("stats-1core", ["taskset", "-c", "0"] + b + ["stats", str(f["text"]), "-q"],
         ["taskset", "-c", "0", "btt", "-i", str(f["dump"]), "-o", str(out / "btt")], (0,)),
        ("parse", b + ["stats", str(f["text"]), "--iostat", "-q"], shell(f"blkparse -i sda -D {f['per_cpu']} > /dev/null"), (0,)),
        ("memory", b + ["stats", str(f["text"]), "--iostat", "-q"], b + ["stats", str(f["half"]), "--iostat", "-q"], (0,)),
        ("diff", b + ["diff", str(f["text"]), str(f["reordered"])], shell(gnu_diff), (0, 1)),
    ]


def _label(cmd: Sequence[str]) -> str:
    if cmd[:2] == ["sh", "-c"]:
        words = cmd[2].split()
        return f"{words[0]} {words[1]} {words[2]} ..." if words[0] == "blkparse" else "awk + GNU diff of the D lines"
    return " ".join(Path(x).name for x in cmd[:4])


def spread(values: Sequence[float], fmt: str = "8.3f") -> str:
    return f"{statistics.median(values):{fmt}} [{min(values):.3f}-{max(values):.3f}]"


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="bench/traces.py", description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="stats, stats-iostat, stats-1core, parse, memory, diff (default: all)")
    p.add_argument("--ios", type=int, default=150_000, help="fio I/Os in the generated trace (default 150000: "
                   "about 1 M trace lines)")
    p.add_argument("--repeat", type=int, default=3, help="pairs of runs per case (default 3)")
    p.add_argument("--keep", metavar="DIR", help="generate the traces into DIR and leave them there")
    args = p.parse_args(argv)
    where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="blkstack-bench-"))
    where.mkdir(parents=True, exist_ok=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}; wall seconds and peak MB as median [least-most]")
    files = generate(where, args.ios)
    home = os.getcwd()
    os.chdir(where)  # btt writes its iops and mbps files into the current directory
    for name, a, b, ok in cases(files, where):
        if args.cases and name not in args.cases:
            continue
        timed(a, ok), timed(b, ok)  # warm the page cache
        runs = [(timed(a, ok), timed(b, ok)) for _ in range(args.repeat)]
        print(name)
        for side, label in ((0, "A " + _label(a)), (1, "B " + _label(b))):
            got = [r[side] for r in runs]
            print(f"  {label[:44]:<44} wall {spread([g.wall for g in got])}  cpu {spread([g.cpu for g in got])}"
                  f"  peak MB {spread([g.rss_mb for g in got], '6.0f')}")
        print(f"  {'A/B':<44} wall {spread([r[0].wall / r[1].wall for r in runs])}"
              f"  cpu {spread([r[0].cpu / r[1].cpu for r in runs])}  peak {spread([r[0].rss_mb / r[1].rss_mb for r in runs])}")
        sys.stdout.flush()
    os.chdir(home)
    if not args.keep:
        shutil.rmtree(where)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
