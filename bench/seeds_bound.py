#!/usr/bin/env python3
"""The most a second core can give `blkstack seeds`, from processor time.

    python bench/seeds_bound.py                 # every seed, full size
    python bench/seeds_bound.py --repeat 3

Runs `blkstack seeds` one run at a time (--jobs 1) and times each run's
threads: the engine, on a thread of its own (the summary's `engine_cpu_s`),
and the analysis and check threads beside it (the process's processor time
less the engine's). No run can finish before its engine thread has run, so
with two cores the whole cannot take less than the longest engine thread,
nor less than half of all the work:

    bound = total / max(longest engine thread, total / 2)

is the two-core speed-up with perfect packing. Measured speed-ups
(bench/cli.py seeds-cores) stay below it by however much the longest
engine thread waits for a core behind its neighbours' threads (runs with
far less processor time yield to it: the engine's critical_path.rs). Processor seconds drift less than wall time on a
loaded machine, and the bound is a ratio of figures taken in one run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Dict, List, Tuple


def timed_runs() -> List[Tuple[str, float, float]]:
    """(run, engine seconds, analysis seconds) of every run of `seeds`."""
    from blkstack import seeds as S
    from blkstack.cli import seeds as cli_seeds

    runs: List[Tuple[str, float, float]] = []
    run_traced = cli_seeds._run_traced

    def timed(what: str, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        process0 = time.process_time()
        out = run_traced(what, *args, **kwargs)
        engine = out["engine_cpu_s"]
        runs.append((what, engine, time.process_time() - process0 - engine))
        return out

    cli_seeds._run_traced = timed
    try:
        for _ in cli_seeds.evaluate_all(S.SEEDS, jobs=1):
            pass
    finally:
        cli_seeds._run_traced = run_traced
    return runs


def bound(runs: List[Tuple[str, float, float]]) -> Tuple[float, float, float]:
    """(total seconds, longest engine thread, two-core bound)."""
    total = sum(e + a for _, e, a in runs)
    longest = max(e for _, e, _ in runs)
    return total, longest, total / max(longest, total / 2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=1, help="times to run seeds (default 1)")
    p.add_argument("--top", type=int, default=6, help="runs listed, longest first (default 6)")
    args = p.parse_args()
    bounds = []
    for i in range(args.repeat):
        runs = timed_runs()
        total, longest, b = bound(runs)
        bounds.append(b)
        print(f"pass {i + 1}: {len(runs)} runs, {total:.2f} processor s in all; "
              f"longest engine thread {longest:.2f} s ({longest / total:.1%}); two-core bound {b:.3f}")
        for what, e, a in sorted(runs, key=lambda r: -(r[1] + r[2]))[:args.top]:
            print(f"  {e:8.2f} s engine {a:7.2f} s analysis  {what}")
    if args.repeat > 1:
        print(f"two-core bound: median {statistics.median(bounds):.3f} [{min(bounds):.3f}-{max(bounds):.3f}] "
              f"of {args.repeat} passes")


if __name__ == "__main__":
    main()
