"""Where a sweep's points run: a local process pool or a Ray cluster.

Both take *tasks* -- ``(index, kind, args)`` -- in batches, run each with
:func:`run_task` and hand ``(index, result)`` back as batches finish. A
task's result depends only on its arguments (the engine is deterministic),
so the backend and the worker count change nothing but the wall time.

Kinds: ``figures`` (a sweep point: :func:`blkstack.sweep_figures.point_rows`)
and ``identify`` (a candidate replay: :func:`blkstack.identify.candidate_result`).
"""

from __future__ import annotations

import hashlib
import os
import signal
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

Task = Tuple[int, str, Tuple[Any, ...]]
OnResult = Callable[[int, Dict[str, Any]], None]

# A batch takes about this many tasks per worker slot at most: few enough
# that progress moves and Ctrl-C loses little, many enough that a cluster
# is not sent sub-second tasks one at a time.
MAX_BATCH = 64
BATCHES_PER_WORKER = 4


def default_workers() -> int:
    """Every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def batch_size(n_tasks: int, workers: int, requested: Optional[int] = None) -> int:
    if requested:
        return max(1, requested)
    return max(1, min(MAX_BATCH, -(-n_tasks // (workers * BATCHES_PER_WORKER))))


def batches(tasks: Sequence[Task], size: int) -> List[List[Task]]:
    return [list(tasks[i:i + size]) for i in range(0, len(tasks), size)]


# ---------------------------------------------------------------------------
# In a worker


_MATERIALISED: Dict[str, str] = {}


def scenario_file(path: str, text: Optional[str]) -> str:
    """The scenario to run: *path* when this machine has it with the same
    text (the local pool, a shared file system), else a private copy of
    *text* (a Ray node elsewhere)."""
    if text is None:
        return path
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return path
    except OSError:
        pass
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    if digest not in _MATERIALISED:
        folder = tempfile.mkdtemp(prefix="blkstack-sweep-")
        copy = os.path.join(folder, os.path.basename(path))
        with open(copy, "w", encoding="utf-8") as fh:
            fh.write(text)
        _MATERIALISED[digest] = copy
    return _MATERIALISED[digest]


def run_task(kind: str, args: Tuple[Any, ...]) -> Dict[str, Any]:
    if kind == "figures":
        from blkstack.sweep_figures import point_rows
        path, text, kernel, sets = args
        return point_rows(scenario_file(path, text), kernel, sets)
    if kind == "identify":
        from blkstack.identify import candidate_result
        return candidate_result(*args)
    raise ValueError(f"unknown task kind {kind!r}")


def run_batch(batch: Sequence[Task]) -> List[Tuple[int, Dict[str, Any]]]:
    from blkstack import _core
    version = _core.version()
    out = []
    for index, kind, args in batch:
        result = run_task(kind, args)
        result["version"] = version
        out.append((index, result))
    return out


def _ignore_sigint() -> None:
    # Ctrl-C is the parent's to handle: it stops the pool and keeps what
    # finished; a worker must not die with a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# ---------------------------------------------------------------------------
# Local process pool


def run_pool(tasks: Sequence[Task], on_result: OnResult, workers: int, batch: Optional[int] = None) -> None:
    """Run *tasks* on *workers* local processes; one worker runs them here."""
    import multiprocessing

    size = batch_size(len(tasks), workers, batch)
    groups = batches(tasks, size)
    if workers == 1 or len(groups) == 1:
        for group in groups:
            for index, result in run_batch(group):
                on_result(index, result)
        return
    ctx = multiprocessing.get_context(_start_method())
    pool = ctx.Pool(processes=min(workers, len(groups)), initializer=_ignore_sigint)
    try:
        for done in pool.imap_unordered(run_batch, groups):
            for index, result in done:
                on_result(index, result)
    except BaseException:
        # Ctrl-C (or a failure): the running batches are lost, the
        # finished ones are the caller's already.
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()


def _start_method() -> str:
    """``fork`` where it is safe: a copy of this process starts at once and
    needs no ``if __name__ == "__main__"`` guard in the caller's script.
    With other Python threads running (a Ray driver, a notebook's) a fork
    could copy a lock one of them holds: ``spawn`` then, a fresh
    interpreter (the script's main module must then be import-safe)."""
    import multiprocessing
    import threading
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    return "spawn"


# ---------------------------------------------------------------------------
# Ray


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        from blkstack.sweep_spec import SweepError
        raise SweepError("--ray needs Ray: python -m pip install 'blkstack[ray]' (or pip install ray)")
    return ray


def start_ray(address: Optional[str], workers: int) -> bool:
    """Connect to the cluster at *address* ("auto": the one this machine
    belongs to), or start a local one on the loopback address with
    *workers* CPUs. Returns whether this call started it."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False, configure_logging=False)
    return True


def run_ray(tasks: Sequence[Task], on_result: OnResult, address: Optional[str], workers: int,
            batch: Optional[int] = None) -> None:
    """Run *tasks* as Ray tasks of one batch each; results stream back as
    batches finish."""
    ray = ray_module()
    started = start_ray(address, workers)
    try:
        slots = max(1, int(ray.cluster_resources().get("CPU", workers)))
        remote = ray.remote(num_cpus=1, max_retries=1)(run_batch)
        refs = [remote.remote(g) for g in batches(tasks, batch_size(len(tasks), slots, batch))]
        try:
            while refs:
                done, refs = ray.wait(refs, num_returns=1)
                for index, result in ray.get(done[0]):
                    on_result(index, result)
        except BaseException:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started:
            ray.shutdown()
