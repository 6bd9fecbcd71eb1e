#!/usr/bin/env python3
"""What users wait for: blkstack commands timed end to end, as processes,
start-up included, each beside a baseline run in the same invocation.

    python bench/cli.py                       # start-up and validation-suite runs
    python bench/cli.py seeds                 # blkstack seeds, --jobs 1 against --jobs 2
    python bench/cli.py --baseline OTHER/bin/python version run
    python bench/cli.py --repeat 7 version help

Each case runs a command (A) and its baseline (B) in turn, A B A B ...,
and prints the median, least and most wall and processor seconds of each
and the median of the pairwise ratios A/B: pairing keeps the ratio
meaningful on a machine whose speed drifts while it runs. Without
--baseline the baseline is the case's own yardstick: the bare interpreter
for start-up, one job for `seeds`. With --baseline PYTHON it is the same
command under another installation of blkstack (another virtual
environment or checkout), so the ratios compare two versions.

Cases:
  version   blkstack --version                       (target 0.1 s)
  help      blkstack --help                          (target 0.1 s)
  run       blkstack run of each validation-suite scenario, one case each
            (target 0.15 s end to end)
  seeds     blkstack seeds (target 10 s; with two cores, --jobs 2 at least
            1.7 times as fast as --jobs 1)
  seeds-cores  blkstack seeds on two cores against the same on one core
            (`taskset -c 0`, --jobs 1): the two-core speed-up, with every
            thread of a run (its analysis thread too) confined to one core
            in the baseline (target 1.7)
  seed002   blkstack run of seed 002 full size, before (--kernel 5.8: about
            21.7 million bios; target 2.0 s)
  raid10-100t  blkstack run of seed 002's whole-array discard on 100 TiB
            members, 6.1 (target 0.2 s)
  merge-4k  blkstack run of bench.py's merge-4k-mq-deadline (2 million
            bios; target 0.2 s, 10 million bios/s)
Processor seconds are the steadier figure on a loaded machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "validate" / "scenarios").glob("*.toml"))
TARGETS = {"version": 0.1, "help": 0.1, "run": 0.15, "seeds": 10.0, "seed002": 2.0, "raid10-100t": 0.2, "merge-4k": 0.2}
QUICK = ("version", "help", "run")


class Case(NamedTuple):
    name: str
    a: List[str]
    b: List[str]
    a_label: str
    b_label: str
    target: Optional[float]


class Sample(NamedTuple):
    wall: float
    cpu: float


def blkstack_command(python: str) -> List[str]:
    """The `blkstack` script installed beside *python*, else `python -m blkstack`."""
    script = Path(python).parent / "blkstack"
    return [str(script)] if script.exists() else [python, "-m", "blkstack"]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# The commands run as an installed package does: with its byte-code files
# (pip writes them at install). An environment that forbids writing them
# would otherwise time the compilation of every module at every start.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: Sequence[str]) -> Sample:
    """One run of *cmd*, output thrown away; a failure stops the bench."""
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=ENV)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return Sample(wall, children_cpu() - cpu)


def scenario_file(name: str) -> List[str]:
    """`run` arguments of a speed case: a scenario written from bench.py's
    workloads into a directory that lasts as long as this process."""
    import atexit
    import shutil
    import tempfile

    sys.path.insert(0, str(ROOT / "bench"))
    import bench  # the workloads' text

    workload = {"raid10-100t": "raid10-discard-100t", "merge-4k": "merge-4k-mq-deadline"}[name]
    d = tempfile.mkdtemp(prefix="blkstack-bench-")
    atexit.register(shutil.rmtree, d, True)
    path = Path(d) / f"{name}.toml"
    path.write_text(bench.WORKLOADS[workload])
    return ["run", str(path)]


def speed_args(name: str) -> List[str]:
    """`blkstack` arguments of a speed case."""
    if name == "seed002":
        import blkstack

        return ["run", str(Path(blkstack.__file__).parent / "scenarios" / "raid10-discard.toml"), "--kernel", "5.8"]
    return scenario_file(name)


def cases(names: Sequence[str], python: str, baseline: Optional[str]) -> List[Case]:
    cmd = blkstack_command(python)
    other = blkstack_command(baseline) if baseline else None
    bare = [python, "-c", "pass"]
    out: List[Case] = []
    for name in names:
        if name in ("version", "help"):
            args = [f"--{name}"]
            b, b_label = (other + args, "baseline") if other else (bare, "python -c pass")
            out.append(Case(name, cmd + args, b, f"blkstack {args[0]}", b_label, TARGETS[name]))
        elif name == "run":
            for s in SCENARIOS:
                args = ["run", str(s)]
                b, b_label = (other + args, "baseline") if other else (bare, "python -c pass")
                out.append(Case(f"run {s.stem}", cmd + args, b, "blkstack run", b_label, TARGETS["run"]))
        elif name == "seeds":
            if other:
                out.append(Case("seeds", cmd + ["seeds"], other + ["seeds"], "blkstack seeds", "baseline",
                                TARGETS["seeds"]))
            else:
                out.append(Case("seeds", cmd + ["seeds", "--jobs", "2"], cmd + ["seeds", "--jobs", "1"],
                                "--jobs 2", "--jobs 1", TARGETS["seeds"]))
        elif name == "seeds-cores":
            out.append(Case("seeds-cores", cmd + ["seeds"], ["taskset", "-c", "0"] + cmd + ["seeds", "--jobs", "1"],
                            "two cores", "one core (taskset)", TARGETS["seeds"]))
        elif name in ("seed002", "raid10-100t", "merge-4k"):
            args = speed_args(name)
            b, b_label = (other + args, "baseline") if other else (bare, "python -c pass")
            out.append(Case(name, cmd + args, b, "blkstack run", b_label, TARGETS[name]))
        else:
            raise SystemExit(f"bench: unknown case {name} (known: version, help, run, seeds, seeds-cores, seed002, raid10-100t, merge-4k)")
    return out


def spread(values: Sequence[float]) -> str:
    return f"{statistics.median(values):8.3f} [{min(values):.3f}-{max(values):.3f}]"


def measure(case: Case, repeat: int) -> Dict[str, List[float]]:
    timed(case.a)  # warm the page cache and the byte-code files
    timed(case.b)
    got: Dict[str, List[float]] = {k: [] for k in ("a_wall", "a_cpu", "b_wall", "b_cpu", "wall_ratio", "cpu_ratio")}
    for _ in range(repeat):
        a, b = timed(case.a), timed(case.b)
        got["a_wall"].append(a.wall)
        got["a_cpu"].append(a.cpu)
        got["b_wall"].append(b.wall)
        got["b_cpu"].append(b.cpu)
        got["wall_ratio"].append(a.wall / b.wall)
        got["cpu_ratio"].append(a.cpu / b.cpu if b.cpu > 0 else float("nan"))
    return got


def report(case: Case, got: Dict[str, List[float]]) -> None:
    target = ""
    if case.target is not None:
        met = statistics.median(got["a_wall"]) <= case.target
        target = f"  target {case.target:g} s: {'met' if met else 'NOT met'}"
    print(f"{case.name}")
    print(f"  A {case.a_label:<22} wall {spread(got['a_wall'])}   cpu {spread(got['a_cpu'])}{target}")
    print(f"  B {case.b_label:<22} wall {spread(got['b_wall'])}   cpu {spread(got['b_cpu'])}")
    print(f"  A/B                      wall {spread(got['wall_ratio'])}   cpu {spread(got['cpu_ratio'])}")
    if (case.name == "seeds" and case.b_label == "--jobs 1") or case.name == "seeds-cores":
        speedup = [1 / r for r in got["wall_ratio"]]
        what = "of --jobs 2" if case.name == "seeds" else "of two cores"
        print(f"  speed-up {what:<16}{spread(speedup)}  (target 1.7 with two free cores)")
    sys.stdout.flush()


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="bench/cli.py", description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", metavar="CASE", help="version, help, run, seeds, seeds-cores, seed002, raid10-100t, merge-4k (default: the first three)")
    p.add_argument("--baseline", metavar="PYTHON", help="the interpreter of another blkstack installation")
    p.add_argument("--repeat", type=int, default=5, help="pairs of runs per case (default 5; seeds and seed002 3)")
    args = p.parse_args(argv)
    names = args.cases or list(QUICK)
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}; seconds as median [least-most]")
    for case in cases(names, sys.executable, args.baseline):
        repeat = min(args.repeat, 3) if case.name in ("seeds", "seeds-cores", "seed002") and args.repeat == 5 else args.repeat
        report(case, measure(case, repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
