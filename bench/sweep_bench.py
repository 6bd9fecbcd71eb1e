#!/usr/bin/env python3
"""Points per second of ``blkstack sweep`` on each backend.

A sweep of seed 000's raid5 array (kernel x member max_sectors_kb x dd
block size) runs:

* in this process, one point after another (the engine alone: no pool);
* on the local process pool with 1 worker, then with 2 (or --workers N);
* on a local Ray (started here, on 127.0.0.1, with as many CPUs), when Ray
  is installed (pip install '.[ray]').

It prints points/s, the speed-up of N workers over 1, and Ray's cost per
point over the local pool ((Ray time - pool time) / points, start-up of the
local Ray cluster reported apart). Every backend's table is checked equal
to the in-process one (wall time aside). Not part of the test run: figures
depend on the machine and on what else it runs (the 1-minute load average
is printed beside them).

With the kernel's autogroup scheduling on (/proc/sys/kernel/sched_autogroup_enabled,
the default of most desktop kernels), CFS shares the CPUs fairly between
sessions first: on a machine other sessions keep busy, all the pool's
workers (in this session) get one session's share, however many they are,
while a local Ray's workers (started by its daemon, a session of its own)
get another. --own-sessions puts each pool worker in a session of its own
(setsid), which measures the scaling a machine the sweep has to itself
would show; blkstack itself leaves its workers in the caller's session.

    python bench/sweep_bench.py                  # 80 points
    python bench/sweep_bench.py --count 50 --workers 2
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

from blkstack.sweep_backend import default_workers
from blkstack.sweep_figures import MEASURED, point_rows
from blkstack.sweep_run import build_table, run_spec
from blkstack.sweep_spec import build_spec


def spec(count: int):
    return build_spec({
        "scenario": "raid5-recursive-split",
        "grid": {
            "kernel": ["6.1", "6.12", "6.15", "7.2"],
            "disks.*.queue.max_sectors_kb": [64, 128, 192, 256, 384, 512, 640, 768, 1024, 1280],
            "workload.bs": ["1M", "4480k"],
            "workload.count": [count],
        },
    })


def in_process(s):
    from blkstack import _core
    keys = {p.index: p.key(s.digests[p.scenario], _core.version()) for p in s.points}
    start = time.perf_counter()
    results = {p.index: point_rows(p.scenario, p.kernel, p.sets) for p in s.points}
    return build_table(s, results, keys), time.perf_counter() - start


def timed(s, **kwargs):
    start = time.perf_counter()
    table, _ = run_spec(s, resume=False, **kwargs)
    return table, time.perf_counter() - start


def cpu_children() -> float:
    """CPU seconds of this process and its finished children (the pool's
    workers, once it has shut down; one worker runs in this process)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


def pool_runs(s, workers: int, repeat: int):
    """Median wall time of *repeat* runs, and the workers' CPU seconds per run."""
    walls, cpus, table = [], [], None
    for _ in range(repeat):
        cpu0 = cpu_children()
        table, wall = timed(s, workers=workers)
        walls.append(wall)
        cpus.append(cpu_children() - cpu0)
    return table, statistics.median(walls), statistics.median(cpus), walls


def same(a, b) -> bool:
    return a.drop(columns=list(MEASURED)).equals(b.drop(columns=list(MEASURED)))


def autogroup() -> str:
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as fh:
            return "on" if fh.read().strip() == "1" else "off"
    except OSError:
        return "unknown"


def line(label: str, n: int, seconds: float, note: str = "") -> None:
    print(f"  {label:<28} {n:>5} points  {seconds:7.2f} s  {n / seconds:7.1f} points/s  {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100, help="dd blocks per point (the work in one point)")
    ap.add_argument("--workers", type=int, default=max(2, default_workers()), help="workers for the scaled runs")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each pool size (the median is shown)")
    ap.add_argument("--no-ray", action="store_true", help="skip Ray")
    ap.add_argument("--own-sessions", action="store_true", help="each pool worker in a session of its own (setsid)")
    args = ap.parse_args()
    if args.own_sessions:
        import blkstack.sweep_backend as backend
        quiet = backend._ignore_sigint

        def own_session() -> None:
            quiet()
            os.setsid()

        backend._ignore_sigint = own_session
    s = spec(args.count)
    n = len(s.points)
    print(f"sweep: {n} points of seed 000 (dd count={args.count}); {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}; autogroup {autogroup()}"
          + ("; pool workers in sessions of their own" if args.own_sessions else ""))
    ref, t_ref = in_process(s)
    line("in process (no pool)", n, t_ref)
    results = {}
    for _ in range(args.repeat):  # alternate, so both see the same neighbours
        for w in (1, args.workers):
            table, wall, cpu, _walls = pool_runs(s, w, 1)
            results.setdefault(w, []).append((wall, cpu, table))
    for w in (1, args.workers):
        walls = [r[0] for r in results[w]]
        cpu = statistics.median(r[1] for r in results[w])
        ok = all(same(ref, r[2]) for r in results[w])
        note = (f"median of {', '.join(f'{x:.2f}' for x in walls)} s; CPU {cpu:.2f} s "
                f"({n / cpu:.1f} points per CPU-second)") + ("" if ok else "; TABLE DIFFERS")
        line(f"local pool, {w} worker{'s' if w > 1 else ''}", n, statistics.median(walls), note)
    t_one = statistics.median(r[0] for r in results[1])
    t_many = statistics.median(r[0] for r in results[args.workers])
    print(f"  speed-up of {args.workers} workers over 1: {t_one / t_many:.2f}x")
    print(f"  load average now {os.getloadavg()[0]:.2f}")
    if args.no_ray:
        return
    try:
        import ray
    except ImportError:
        print("  Ray: not installed (pip install '.[ray]')")
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             configure_logging=False)
    t_start = time.perf_counter() - start
    try:
        timed(s, ray=True, batch=1)  # workers warm: their first import is start-up, not per point
        on_ray, t_ray = timed(s, ray=True)
        line(f"Ray local, {args.workers} CPUs", n, t_ray,
             f"{1e3 * (t_ray - t_many) / n:+.1f} ms/point over the pool" + ("" if same(ref, on_ray) else
                                                                            "; TABLE DIFFERS"))
        small, t_small = timed(s, ray=True, batch=1)
        line(f"Ray local, batch of 1", n, t_small, f"{1e3 * (t_small - t_many) / n:+.1f} ms/point over the pool")
    finally:
        ray.shutdown()
    print(f"  Ray local cluster start-up: {t_start:.2f} s (once per sweep that starts it)")


if __name__ == "__main__":
    main()
