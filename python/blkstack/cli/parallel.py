"""Independent runs on every processor, with the sequential results.

The engine runs without Python's GIL (``blkstack._core.run`` releases it),
so runs on threads use one processor each. Among runs at once, one that
has had far less processor time than another lowers its threads'
priority (the engine's ``critical_path``), so the long run is not slowed
by the short ones beside it: submit the slow calls first. ``Runs`` hands
out futures and the caller reads them in the order it submitted them:
what it prints, and the first error it raises, are then those of running
one after another. With one job nothing runs ahead: each call runs when
its result is read, exactly as a loop would.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Dict, List, Optional


def default_jobs() -> int:
    """One job per processor this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def jobs_type(text: str) -> int:
    """argparse type of --jobs: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give at least 1")
    return value


def add_jobs_option(p: argparse.ArgumentParser) -> None:
    """-j/--jobs N for commands whose runs are independent."""
    p.add_argument("-j", "--jobs", type=jobs_type, metavar="N", default=None,
                   help="run at most N simulations at once (default: one per processor); "
                        "the output is the same for every N")


class _Deferred:
    """A call made when its result is first read (one job: no run ahead)."""

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> None:
        self._call: Optional[Callable[[], Any]] = lambda: fn(*args, **kwargs)
        self._value: Any = None

    def result(self) -> Any:
        if self._call is not None:
            call, self._call = self._call, None
            self._value = call()
        return self._value


class Runs:
    """``with Runs(jobs) as runs: f = runs.submit(fn, *args); f.result()``.

    *jobs* above 1 runs the calls on that many threads. Leaving the block
    by an exception (Ctrl-C, or a run's error read from its future) drops
    the calls not started and stops the runs in progress
    (:func:`blkstack._core.interrupt`) before the threads are joined."""

    def __init__(self, jobs: Optional[int] = None, most: Optional[int] = None) -> None:
        """*jobs*: at most that many calls at once (None: one per
        processor); *most*: the number of calls, when known (no idle
        threads)."""
        self.jobs = default_jobs() if jobs is None else jobs
        if most is not None:
            self.jobs = max(1, min(self.jobs, most))
        self._pool: Any = None

    @property
    def parallel(self) -> bool:
        """True when calls run ahead on threads (then no progress bars:
        several would overwrite each other)."""
        return self.jobs > 1

    def __enter__(self) -> "Runs":
        if self.parallel:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="blkstack-run")
        return self

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A future of ``fn(*args, **kwargs)``: an object whose ``result()``
        waits for the call and returns its value or raises its exception."""
        if self._pool is None:
            return _Deferred(fn, args, kwargs)
        return self._pool.submit(fn, *args, **kwargs)

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if self._pool is None:
            return
        if kind is not None:
            from blkstack import _core

            self._pool.shutdown(wait=False, cancel_futures=True)
            _core.interrupt()
        self._pool.shutdown(wait=True)


def results(futures: List[Any]) -> List[Any]:
    """Every future's result, read in order."""
    return [f.result() for f in futures]
