#!/usr/bin/env python3
"""Compare saved guest runs with the model again, without and with a host
CPU class, and print per run and kernel the devices exact before and after.

    python bench/tcg_recompare.py DIR... [--host-cpu tcg] [--work /tmp/recompare]
    python bench/tcg_recompare.py --random 100 --seed 1 --kernel 6.12   # the model alone

A run is a directory holding the guest's `trace.txt` and `devices.txt`:
a suite run (`NAME-KERNEL`, its scenario validate/scenarios/NAME.toml), a
found scenario (`KERNEL-random-S-NNN` with its `scenario.toml`), one
scenario of a random batch (`.../boot-III/sK`, its scenario
`.../scenarios/random-S-NNN.toml`, NNN = III minus the batch's size plus
K) or one candidate of a shrinking round (`.../shrink/NAME/boot-R/sC`,
its scenario `.../shrink/NAME/NAME-rRcC.toml`). Each run is copied under --work (the saved runs are only read) and
compared with `blkstack.validate.compare_run`, as `blkstack validate`
compares a fresh one: once as the validation translates it, once with
`host.cpu=CLASS` added to the model's overrides.

`--random N --seed S --kernel K` needs no guest run: it draws the
scenarios `blkstack validate --random N --seed S` draws on K and runs the
model of each without and with the class, comparing the requests each
device is issued. Where they are the same, the scenario's devices are
exact against any guest run with the class exactly when they are without.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(os.path.dirname(HERE), "validate", "scenarios")
KERNELS = ("5.10", "6.1", "6.12", "7.2")
GUEST_FIO = "3.33"  # the guests' fio (bookworm's), as docs/validation.md says


def scenario_of(d: str) -> Tuple[Optional[str], Optional[str]]:
    """(scenario file, kernel) of a saved run directory."""
    base = os.path.basename(os.path.normpath(d))
    parent = os.path.dirname(os.path.normpath(d))
    if os.path.exists(os.path.join(d, "scenario.toml")):
        m = re.match(r"^(\d+\.\d+)-", base)
        return os.path.join(d, "scenario.toml"), m.group(1) if m else None
    m = re.match(r"^s(\d+)$", base)
    b = re.match(r"^boot-(\d+)$", os.path.basename(parent))
    top = os.path.dirname(parent)
    if m and b and os.path.basename(os.path.dirname(top)) == "shrink":
        # A shrinking round's run: boot-R/sC ran candidate NAME-rRcC.toml.
        cand = os.path.join(top, f"{os.path.basename(top)}-r{b.group(1)}c{m.group(1)}.toml")
        k = re.search(r"(\d+\.\d+)$", os.path.dirname(os.path.dirname(top)))
        return (cand if os.path.exists(cand) else None), (k.group(1) if k else None)
    if m and b and os.path.isdir(os.path.join(top, "scenarios")):
        subs = [x for x in os.listdir(parent) if re.match(r"^s\d+$", x)]
        index = int(b.group(1)) - len(subs) + int(m.group(1))
        root = os.path.dirname(parent)
        scen = [f for f in os.listdir(os.path.join(root, "scenarios")) if f.endswith(f"-{index:03d}.toml")]
        k = re.search(r"(\d+\.\d+)$", root)
        short = re.search(r"r(\d)(\d+)$", root)  # r61, r612
        kernel = k.group(1) if k else f"{short.group(1)}.{short.group(2)}" if short else None
        return (os.path.join(root, "scenarios", scen[0]) if scen else None), kernel
    m = re.match(r"^(.*)-(\d+\.\d+)$", base)
    if m and os.path.exists(os.path.join(SUITE, m.group(1) + ".toml")):
        return os.path.join(SUITE, m.group(1) + ".toml"), m.group(2)
    return None, None


def runs(roots: List[str]) -> List[str]:
    out = []
    for root in roots:
        for d, _dirs, files in os.walk(root):
            if "trace.txt" in files and ("devices.txt" in files or "diff.txt" in files):
                out.append(d)
    return sorted(out)


def devices_from_diff(d: str) -> None:
    """A found scenario keeps diff.txt but not devices.txt: write the
    latter from the former's device table (NAME GUEST MAJ,MIN SIM)."""
    if os.path.exists(os.path.join(d, "devices.txt")) or not os.path.exists(os.path.join(d, "diff.txt")):
        return
    rows = []
    with open(os.path.join(d, "diff.txt")) as fh:
        table = fh.read().split("  DEVICE", 1)[-1].split("\n\n", 1)[0]
    for line in table.splitlines()[1:]:
        f = line.split()
        if len(f) == 4:
            rows.append(f"{f[0]} {f[1]} {f[2].replace(',', ':')}\n")
    with open(os.path.join(d, "devices.txt"), "w") as fh:
        fh.writelines(rows)


def compare(d: str, scenario: str, kernel: str, extra: List[str], work: str) -> List[Tuple[str, bool, float]]:
    """Per device: (name, exact, match %) of the model against run *d*."""
    from blkstack.validate import compare_run
    from blkstack.validate.plan import build_plan, fio_version_sets, load_toml
    from blkstack.validate.randomized import resolve
    copy = os.path.join(work, re.sub(r"[^A-Za-z0-9.-]+", "_", d.strip("/")))
    if not os.path.isdir(copy):
        shutil.copytree(d, copy)
        devices_from_diff(copy)
    plan = build_plan(scenario, kernel, tempfile.mkdtemp(dir=work), resolve(scenario, kernel))
    w = load_toml(scenario).get("workload") or {}
    if w.get("type") == "fio":
        plan.sim_sets += fio_version_sets(w, GUEST_FIO, plan.warnings)
    plan.sim_sets += extra
    v = compare_run(scenario, kernel, plan, copy, "saved", 0.0, lambda m: None)
    return [(s.real_name or s.real_dev, s.identical, 100.0 * s.matched / max(len(s.real), len(s.sim), 1))
            for s in v.report.streams if s.real or s.sim]


def random_streams(n: int, seed: int, kernel: str, host_cpu: str, work: str) -> Tuple[int, int, List[str]]:
    """The model of the N draws of `validate --random N --seed S` on
    *kernel*, without and with the class: (scenarios, devices, the
    scenarios whose issued requests differ, with the devices)."""
    import random
    from blkstack import _core
    from blkstack.diff import Trace, diff_traces
    from blkstack.validate import guest_sets
    from blkstack.validate.plan import fio_version_sets
    from blkstack.validate.randomized import BATCH, draw_disk_set, generate
    rng = random.Random(seed)
    scen = os.path.join(work, f"seed{seed}-{kernel}")
    os.makedirs(scen, exist_ok=True)
    changed: List[str] = []
    i = devices = 0
    while i < n:
        base = draw_disk_set(rng)
        for _ in range(min(BATCH, n - i)):
            name = f"random-{seed}-{i:03d}"
            doc = generate(rng, base, kernel, scen, name)
            path = os.path.join(scen, name + ".toml")
            fio = fio_version_sets(doc["workload"], GUEST_FIO, []) if doc["workload"]["type"] == "fio" else []
            sets = guest_sets(path) + fio
            out = []
            for extra in ([], [f"host.cpu={host_cpu}"]):
                t = os.path.join(scen, f"{name}-{len(extra)}.txt")
                _core.run(path, kernel, sets + extra, t, None, None, False)
                out.append(Trace(t))
            rep = diff_traces(out[0], out[1], events=("D",))
            streams = [s for s in rep.streams if s.real or s.sim]
            devices += len(streams)
            bad = [s.real_dev or s.sim_dev for s in streams if not s.identical]
            if bad:
                changed.append(f"{name}: {', '.join(bad)}")
            i += 1
    return n, devices, changed


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="*")
    ap.add_argument("--random", type=int, metavar="N", help="the model alone on N random draws (no guest runs)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kernel", action="append", help="with --random: the kernels (repeat)")
    ap.add_argument("--host-cpu", default="tcg", help="the CPU class of the second comparison (default tcg)")
    ap.add_argument("--work", default=None, help="where the runs are copied (default: a new temporary directory)")
    args = ap.parse_args(argv)
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="recompare-"))
    os.makedirs(work, exist_ok=True)
    if args.random:
        for k in args.kernel or ["6.1", "6.12", "7.2"]:
            n, devs, changed = random_streams(args.random, args.seed, k, args.host_cpu, work)
            print(f"{k}: {n} random scenarios of seed {args.seed}, {devs} devices; issued requests that differ "
                  f"with host.cpu={args.host_cpu}: {len(changed)} scenarios", flush=True)
            for c in changed:
                print(f"  {c}")
        return 0
    totals: Dict[str, List[int]] = {}
    for d in runs(args.roots):
        scenario, kernel = scenario_of(d)
        if not scenario or kernel not in KERNELS:
            print(f"skipped {d}: no scenario or kernel", file=sys.stderr)
            continue
        try:
            before = compare(d, scenario, kernel, [], work)
            after = compare(d, scenario, kernel, [f"host.cpu={args.host_cpu}"], work)
        except Exception as exc:  # a run that cannot be compared is reported, not fatal
            print(f"skipped {d}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
            continue
        t = totals.setdefault(kernel, [0, 0, 0])
        t[0] += len(before)
        t[1] += sum(1 for x in before if x[1])
        t[2] += sum(1 for x in after if x[1])
        changed = [(b[0], b[2], a[2]) for b, a in zip(before, after) if abs(b[2] - a[2]) > 0.05 or b[1] != a[1]]
        mark = "  " if not changed else "* "
        figs = ", ".join(f"{n} {b:.1f}%->{a:.1f}%" for n, b, a in changed) or \
            ", ".join(f"{n} {p:.1f}%" for n, exact, p in before if not exact) or "exact"
        print(f"{mark}{kernel:5s} {os.path.relpath(d)}: {figs}", flush=True)
    for k, (n, b, a) in sorted(totals.items()):
        print(f"{k}: devices exact {b} of {n} without, {a} of {n} with host.cpu={args.host_cpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
