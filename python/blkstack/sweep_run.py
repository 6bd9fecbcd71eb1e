"""``blkstack.sweep``: run a scenario over many parameter values.

A sweep file (:mod:`blkstack.sweep_spec`) names a base scenario and the axes
to vary; every point is one run of the engine. The result is one tidy table:
one row per point and device, the axis values as columns, then the figures
(:mod:`blkstack.sweep_figures`); a point that failed (a bad combination,
limits the kernel refuses) is one row with its ``error``.

The table is written as Parquet (and CSV on request) and returned as a
pandas DataFrame. It is also the sweep's memory: each row carries its
point's ``key`` (a hash of the resolved scenario and the blkstack version),
and a re-run reuses the rows whose key it needs and runs only the rest. The
table is rewritten every few seconds and on Ctrl-C, so an interrupted sweep
leaves a valid partial table.

    import blkstack
    df = blkstack.sweep("msk.sweep.toml", out="msk.parquet")
    df.groupby(["kernel", "disks.*.queue.max_sectors_kb"])["throughput_mb_s"].mean()
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from blkstack.sweep_figures import FIGURE_NAMES
from blkstack.sweep_spec import Point, SweepError, SweepSpec, build_spec, read_spec

__all__ = ["sweep", "SweepError", "load_table", "run_spec", "SweepRun"]

CHECKPOINT_S = 5.0
FIXED_COLUMNS = ("point", "key", "device", "kind", "profile", "error")


@dataclass
class SweepRun:
    """What a run of a sweep did (the table aside)."""

    points: int = 0
    reused: int = 0
    ran: int = 0
    failed: int = 0
    interrupted: bool = False
    wall_s: float = 0.0
    results: Dict[int, Dict[str, Any]] = field(default_factory=dict)


def sweep(spec: Union[str, "os.PathLike[str]", Mapping[str, Any], SweepSpec], *, out: Optional[str] = None,
          csv: Optional[str] = None, workers: Optional[int] = None, ray: Union[None, bool, str] = None,
          batch: Optional[int] = None, yes: bool = False, resume: bool = True, progress: bool = False):
    """Run a sweep and return its table as a pandas DataFrame.

    :param spec: a sweep file, or its tables as a dict (paths relative to
        the current directory).
    :param out: write the table there as Parquet (and reuse the finished
        points of an earlier run found there).
    :param csv: also write it as CSV there.
    :param workers: local processes (default: every core) or Ray CPUs for a
        local Ray.
    :param ray: run on Ray: ``True`` for a local Ray (or the one this
        process already joined), an address (``"auto"``, ``"ray://host:10001"``)
        for a cluster.
    :param batch: points per task (default: about four tasks per worker, at
        most 64 points each).
    :param yes: allow a sweep of more than ten million points.
    :param resume: reuse finished points from *out* (default).
    :raises SweepError: the sweep file is bad (``FILE:LINE: KEY: ...``).
    :raises KeyboardInterrupt: after writing the partial table.
    """
    if not isinstance(spec, SweepSpec):
        if isinstance(spec, Mapping):
            spec = build_spec(spec, yes=yes)
        else:
            spec = read_spec(os.fspath(spec), yes=yes)
    table, _ = run_spec(spec, out=out, csv=csv, workers=workers, ray=ray, batch=batch, resume=resume,
                        progress=progress)
    return table


def run_spec(spec: SweepSpec, *, out: Optional[str] = None, csv: Optional[str] = None,
             workers: Optional[int] = None, ray: Union[None, bool, str] = None, batch: Optional[int] = None,
             resume: bool = True, progress: bool = False,
             report: Optional[Callable[[SweepRun], None]] = None):
    """Run a checked sweep: ``(DataFrame, SweepRun)``."""
    from blkstack import _core
    from blkstack.sweep_backend import default_workers, run_pool, run_ray

    # The table's libraries now: a Ctrl-C must not land in their first import.
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    version = _core.version()
    keys = {p.index: p.key(spec.digests[p.scenario], version) for p in spec.points}
    state = SweepRun(points=len(spec.points))
    if resume and out and os.path.exists(out):
        for index, result in _reusable(out, spec, keys).items():
            state.results[index] = result
        state.reused = len(state.results)
    todo = [p for p in spec.points if p.index not in state.results]
    texts = {path: _read(path) for path in {p.scenario for p in todo}}
    tasks = [(p.index, "figures", (p.scenario, texts[p.scenario], p.kernel, list(p.sets))) for p in todo]
    n_workers = workers or default_workers()
    bar = Progress(len(todo), state.reused, enabled=progress)
    last_write = [time.monotonic()]
    start = time.monotonic()

    def on_result(index: int, result: Dict[str, Any]) -> None:
        check_version(result, version)
        state.results[index] = result
        state.ran += 1
        failed = "error" in result
        state.failed += failed
        bar.update(failed)
        if out and time.monotonic() - last_write[0] >= CHECKPOINT_S:
            write_table(build_table(spec, state.results, keys), out)
            last_write[0] = time.monotonic()

    try:
        if not tasks:
            pass
        elif ray is not None and ray is not False:
            run_ray(tasks, on_result, None if ray is True else str(ray), n_workers, batch)
        else:
            run_pool(tasks, on_result, n_workers, batch)
    except KeyboardInterrupt:
        state.interrupted = True
    finally:
        bar.close()
        state.wall_s = time.monotonic() - start
    table = build_table(spec, state.results, keys)
    if out:
        write_table(table, out)
    if csv:
        write_csv(table, csv)
    if report is not None:
        report(state)
    if state.interrupted:
        raise KeyboardInterrupt
    return table, state


def check_version(result: Dict[str, Any], version: str) -> None:
    """A point run by another blkstack version (a Ray node installed apart)
    would be stored under the wrong key: stop the sweep."""
    theirs = result.pop("version", version)
    if theirs != version:
        raise SweepError(f"a worker runs blkstack {theirs}, this is {version}: install the same version on "
                         "every node of the cluster")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


# ---------------------------------------------------------------------------
# The table


def figure_columns(spec: SweepSpec) -> List[str]:
    return list(spec.figures) if spec.figures else list(FIGURE_NAMES)


def build_table(spec: SweepSpec, results: Mapping[int, Dict[str, Any]], keys: Mapping[int, str]):
    """The tidy table of the finished points, in point order."""
    import pandas as pd

    axes = spec.axis_names
    figures = figure_columns(spec)
    columns = ["point", *axes, "device", "kind", "profile", *figures, "error", "key"]
    rows: List[Dict[str, Any]] = []
    for point in spec.points:
        result = results.get(point.index)
        if result is None:
            continue
        head: Dict[str, Any] = {"point": point.index, **dict(point.values), "key": keys[point.index]}
        if "error" in result:
            rows.append({**head, "error": result["error"]})
            continue
        for dev in result["rows"]:
            if spec.devices and dev["device"] not in spec.devices:
                continue
            rows.append({**head, **{k: dev.get(k) for k in ("device", "kind", "profile", *figures)}, "error": None})
    frame = pd.DataFrame(rows, columns=columns)
    return _typed(frame, axes, figures)


def _typed(frame: Any, axes: Sequence[str], figures: Sequence[str]) -> Any:
    """Stable dtypes whatever rows there are (an empty table, a failed
    point's empty figures), so every run writes the same schema."""
    import pandas as pd

    # Text columns as Parquet gives them back (pandas 3: "str"), so a table
    # read from the file equals the one returned.
    text = "str" if int(pd.__version__.split(".")[0]) >= 3 else "object"
    frame["point"] = frame["point"].astype("int64")
    for col in ("device", "kind", "profile", "error", "key"):
        frame[col] = frame[col].astype(text)
    for col in figures:
        frame[col] = frame[col].astype("float64")
    for col in axes:
        values = [v for v in frame[col] if v is not None]
        if len({type(v) for v in values}) > 1:
            frame[col] = frame[col].map(lambda v: None if v is None else str(v))
        if frame[col].dtype == object:
            frame[col] = frame[col].astype(text)
    return frame


def write_table(table: Any, path: str) -> None:
    """Parquet, written atomically (a reader sees the old table or the new)."""
    from blkstack.cli.common import write_atomic
    write_atomic(path, table.to_parquet(None, index=False))


def write_csv(table: Any, path: str) -> None:
    from blkstack.cli.common import write_atomic
    write_atomic(path, table.to_csv(index=False))


def load_table(path: str):
    """A sweep table written by :func:`sweep` (Parquet, or CSV by its name)."""
    import pandas as pd
    if path.lower().endswith(".csv"):
        return pd.read_csv(path)
    return pd.read_parquet(path)


def _reusable(path: str, spec: SweepSpec, keys: Mapping[int, str]) -> Dict[int, Dict[str, Any]]:
    """Finished points of an earlier run in the table at *path*: by key,
    when it holds every figure this sweep keeps."""
    try:
        old = load_table(path)
    except Exception as exc:  # not a table of ours: run everything, overwrite it
        _say(f"warning: {path}: not read ({type(exc).__name__}: {exc}); every point runs")
        return {}
    needed = set(figure_columns(spec)) | {"key", "device", "error"}
    if not needed <= set(old.columns):
        return {}
    by_key: Dict[str, List[Dict[str, Any]]] = {}
    for rec in old.to_dict("records"):
        by_key.setdefault(rec["key"], []).append(rec)
    out: Dict[int, Dict[str, Any]] = {}
    for index, key in keys.items():
        recs = by_key.get(key)
        if not recs:
            continue
        err = recs[0].get("error")
        if isinstance(err, str):
            out[index] = {"error": err}
        else:
            out[index] = {"rows": [{k: r.get(k) for k in ("device", "kind", "profile", *figure_columns(spec))}
                                   for r in recs]}
    return out


# ---------------------------------------------------------------------------
# Progress


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class Progress:
    """``412/1000 points  3 failed  37.2 points/s  ETA 0:16`` on standard
    error, redrawn at most four times a second, when it is a terminal."""

    def __init__(self, total: int, reused: int, enabled: bool) -> None:
        self.total, self.reused = total, reused
        self.done = self.failed = 0
        self.start = time.monotonic()
        self.drawn = 0.0
        self.enabled = enabled and sys.stderr.isatty()
        self.width = 0

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        now = time.monotonic()
        if self.enabled and (now - self.drawn >= 0.25 or self.done == self.total):
            self.drawn = now
            self._draw(now)

    def text(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        share = self.done / self.total if self.total else 1.0
        bar = "#" * int(share * 20)
        reused = f"  ({self.reused} reused)" if self.reused else ""
        return (f"sweep [{bar:<20}] {self.done}/{self.total} points  {self.failed} failed  "
                f"{rate:.1f} points/s  ETA {_clock(eta)}{reused}")

    def _draw(self, now: float) -> None:
        line = self.text(now)
        pad = max(0, self.width - len(line))
        self.width = len(line)
        sys.stderr.write("\r" + line + " " * pad)
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
