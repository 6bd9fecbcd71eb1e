"""The Python API: run scenarios and get pandas DataFrames.

The engine builds every table in Rust; events cross over as one raw array
per column, so large traces never become Python objects one by one.

DataFrames of a :class:`Result` (columns and dtypes):

``events`` -- every tracepoint, in order:
    ``time_ns`` uint64, ``device`` category, ``action`` category (blkparse
    letters Q X A G I D C P U UT M F R), ``rwbs`` category, ``sector``
    uint64, ``nr_sectors`` uint32, ``bytes`` uint32, ``pid`` uint32,
    ``comm`` category, ``error`` int32, ``arg`` uint64 (X: the remainder's
    sector, A: the source sector, U: the depth), ``from_device`` category
    (A: the source device, else empty).
``requests`` -- one row per issued request ('D'), as ``--requests`` writes:
    ``device`` category, ``seq`` int64 (per device, from 0), ``time_ns``
    uint64, ``rwbs`` category, ``sector`` uint64, ``nr_sectors`` uint32.
``iostat`` -- ``iostat -x`` figures, one row per device (and interval):
    ``device`` object, ``start_s``/``end_s`` float64, then sysstat's columns
    (``r/s``, ``rkB/s``, ... ``%util``) as float64.
``diskstats`` -- the 17 /proc/diskstats fields at the end, per device:
    ``device`` object, then uint64 columns :data:`DISKSTATS_FIELDS`.
``latency`` -- btt stage latencies: ``device`` object, ``stage`` object
    (Q2Q Q2G G2I Q2M I2D D2C Q2C), ``min_s``/``avg_s``/``max_s`` float64,
    ``n`` int64.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from blkstack import _core
from blkstack.compare import device_figures
from blkstack.tracefile import check_text_trace

PathLike = Union[str, "os.PathLike[str]"]
SetValue = Union[str, int, float, bool]

DISKSTATS_FIELDS = (
    "reads", "reads_merged", "sectors_read", "ms_reading",
    "writes", "writes_merged", "sectors_written", "ms_writing",
    "in_flight", "io_ticks_ms", "time_in_queue_ms",
    "discards", "discards_merged", "sectors_discarded", "ms_discarding",
    "flushes", "ms_flushing",
)

_COLUMN_DTYPES = {
    "time_ns": "<u8", "dev": "<u4", "action": "u1", "rwbs": "<u2", "sector": "<u8",
    "bytes": "<u4", "task": "<u4", "error": "<i4", "arg": "<u8", "from_dev": "<u4",
}


def _pandas():
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - pandas is a dependency
        raise ImportError("blkstack's DataFrame API needs pandas: python -m pip install pandas") from exc
    return pandas


def _format_value(value: SetValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def normalise_sets(sets: Union[None, Mapping[str, SetValue], Iterable[str]],
                   overrides: Optional[Mapping[str, SetValue]] = None) -> List[str]:
    """``--set`` strings from a mapping, an iterable of ``"key=value"`` or a
    single string, plus keyword overrides (``__`` stands for ``.``, so
    ``disks__sda__queue__max_sectors_kb=64`` is ``disks.sda.queue.max_sectors_kb=64``)."""
    out: List[str] = []
    if isinstance(sets, str):
        out.append(sets)
    elif isinstance(sets, Mapping):
        out += [f"{k}={_format_value(v)}" for k, v in sets.items()]
    elif sets is not None:
        out += [str(item) for item in sets]
    for key, value in (overrides or {}).items():
        out.append(f"{key.replace('__', '.')}={_format_value(value)}")
    return out


class Scenario:
    """A scenario file, read and validated (see :func:`load`).

    :attr:`info` holds what the engine resolved: the profile, the behaviour
    switches and every device with its queue limits."""

    def __init__(self, path: PathLike, info: Dict[str, Any]) -> None:
        self.path = os.fspath(path)
        with open(self.path, encoding="utf-8") as f:
            self.text = f.read()
        self.info = info

    def __repr__(self) -> str:
        return f"Scenario({self.path!r})"

    def __fspath__(self) -> str:
        return self.path


def load(path: PathLike, kernel: Optional[str] = None, *,
         sets: Union[None, Mapping[str, SetValue], Iterable[str]] = None, **overrides: SetValue) -> Scenario:
    """Read and validate the scenario at *path* (nothing is simulated);
    raises :class:`blkstack.ScenarioError` (one line: ``FILE:LINE: KEY:
    what is wrong``) if it is invalid."""
    info = json.loads(_core.check(os.fspath(path), kernel, normalise_sets(sets, overrides)))
    return Scenario(path, info)


class Result(Mapping[str, Any]):
    """A finished run: the JSON summary (this object reads like it), and
    DataFrames built on demand."""

    def __init__(self, summary: Dict[str, Any], columns: Optional[Dict[str, bytes]] = None,
                 tables: Optional[Dict[str, Any]] = None) -> None:
        self.summary = summary
        self._columns = columns
        self._tables = tables or {}
        self._events = None

    # Mapping over the summary, so ``result["devices"]`` works as before.
    def __getitem__(self, key: str) -> Any:
        return self.summary[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.summary)

    def __len__(self) -> int:
        return len(self.summary)

    def __repr__(self) -> str:
        if "trace" in self.summary:
            return f"<blkstack.Result of trace {self.summary['trace']}>"
        return f"<blkstack.Result {self.summary.get('scenario')} kernel {self.summary.get('kernel')}>"

    @property
    def duration_s(self) -> float:
        """Seconds the run (simulated) or the trace covers."""
        return self.summary.get("sim_time_ns", self.summary.get("duration_ns", 0)) / 1e9

    @property
    def events(self):
        """Every tracepoint event (see the module documentation)."""
        if self._events is None:
            self._events = _events_frame(self._columns, self._tables)
        return self._events

    @property
    def requests(self):
        """One row per issued request, in issue order."""
        pd = _pandas()
        ev = self.events
        d = ev[ev["action"] == "D"]
        out = pd.DataFrame({
            "device": d["device"],
            "seq": d.groupby("device", observed=True).cumcount().astype("int64"),
            "time_ns": d["time_ns"],
            "rwbs": d["rwbs"],
            "sector": d["sector"],
            "nr_sectors": d["nr_sectors"],
        })
        return out.reset_index(drop=True)

    @property
    def iostat(self):
        """``iostat -x`` figures per device (and per interval)."""
        pd = _pandas()
        rows = []
        intervals = self.summary.get("iostat_intervals")
        if intervals:
            start = 0.0
            for iv in intervals:
                for dev, cols in iv["devices"].items():
                    rows.append({"device": dev, "start_s": start, "end_s": iv["time_s"], **cols})
                start = iv["time_s"]
        else:
            end = self.duration_s
            for dev, d in self.summary["devices"].items():
                if "iostat" in d:
                    rows.append({"device": dev, "start_s": 0.0, "end_s": end, **d["iostat"]})
        return pd.DataFrame(rows)

    @property
    def diskstats(self):
        """The /proc/diskstats fields of every device at the end of the run."""
        pd = _pandas()
        rows = [{"device": dev, **dict(zip(DISKSTATS_FIELDS, d["diskstats"]))}
                for dev, d in self.summary["devices"].items() if "diskstats" in d]
        frame = pd.DataFrame(rows, columns=["device", *DISKSTATS_FIELDS])
        return frame.astype({f: "uint64" for f in DISKSTATS_FIELDS})

    @property
    def latency(self):
        """btt's stage latencies per device, in seconds."""
        pd = _pandas()
        rows = [{"device": dev, "stage": stage, **vals}
                for dev, d in self.summary["devices"].items()
                for stage, vals in (d.get("btt") or {}).items()]
        frame = pd.DataFrame(rows, columns=["device", "stage", "min_s", "avg_s", "max_s", "n"])
        return frame.astype({"n": "int64"})


def _events_frame(columns: Optional[Dict[str, bytes]], tables: Dict[str, Any]):
    pd = _pandas()
    import numpy as np

    if columns is None:
        raise ValueError("this result was run without events: use blkstack.run(..., events=True)")
    raw = {k: np.frombuffer(v, dtype=_COLUMN_DTYPES[k]) for k, v in columns.items()}
    devices = [d[0] for d in tables["devices"]]
    tasks = tables["tasks"]

    def cat(codes, names):
        return pd.Categorical.from_codes(codes.astype("int64"), categories=names)

    comm_names = [t[1] for t in tasks]
    comm_categories = list(dict.fromkeys(comm_names))
    comm_index = np.array([comm_categories.index(c) for c in comm_names], dtype="int64")
    pid = np.array([t[0] for t in tasks], dtype="uint32")
    task = raw["task"].astype("int64")
    from_dev = pd.Categorical.from_codes(
        np.where(raw["action"] == 2, raw["from_dev"].astype("int64"), -1), categories=devices)
    return pd.DataFrame({
        "time_ns": raw["time_ns"],
        "device": cat(raw["dev"], devices),
        "action": cat(raw["action"], tables["actions"]),
        "rwbs": cat(raw["rwbs"], tables["rwbs"]),
        "sector": raw["sector"],
        "nr_sectors": (raw["bytes"] >> 9).astype("uint32"),
        "bytes": raw["bytes"],
        "pid": pid[task] if len(task) else np.array([], dtype="uint32"),
        "comm": pd.Categorical.from_codes(comm_index[task] if len(task) else np.array([], dtype="int64"),
                                          categories=comm_categories),
        "error": raw["error"],
        "arg": raw["arg"],
        "from_device": from_dev,
    })


def run(scenario: Union[PathLike, Scenario], kernel: Optional[str] = None, *,
        sets: Union[None, Mapping[str, SetValue], Iterable[str]] = None,
        trace: Optional[PathLike] = None, requests: Optional[PathLike] = None,
        interval: Optional[float] = None, events: bool = True, blktrace: Optional[PathLike] = None,
        **overrides: SetValue) -> Result:
    """Run a scenario and return a :class:`Result`.

    :param kernel: kernel profile ("6.1", "6.12", "7.2", ...) instead of the
        scenario's own.
    :param sets: ``--set`` overrides as a mapping or ``"key=value"`` strings.
    :param overrides: more overrides as keywords, ``__`` for ``.``:
        ``run(s, disks__sda__queue__max_sectors_kb=64)``.
    :param trace: also write the blkparse text trace there.
    :param requests: also write the issued-request CSV there.
    :param interval: seconds of simulated time between iostat samples.
    :param events: keep every event for :attr:`Result.events` (memory grows
        with the run); ``False`` gives only the summary tables.
    :param blktrace: also write blktrace's binary files into this directory
        (``NAME.blktrace.0`` per disk).
    :raises blkstack.ScenarioError: the scenario or an override is invalid.
    """
    path = os.fspath(scenario)
    set_list = normalise_sets(sets, overrides)
    if events and trace is None and requests is None and blktrace is None:
        summary, columns, tables = _core.run_columns(path, kernel, set_list, interval)
        return Result(json.loads(summary), columns, tables)
    text = _core.run(path, kernel, set_list,
                     None if trace is None else os.fspath(trace),
                     None if requests is None else os.fspath(requests), interval,
                     blktrace=None if blktrace is None else os.fspath(blktrace))
    return Result(json.loads(text))


def load_trace(path: PathLike, *, interval: Optional[float] = None, events: bool = True, btt: bool = False,
               blktrace: Optional[PathLike] = None, blktrace_dump: Optional[PathLike] = None,
               names: Sequence[str] = ()) -> Result:
    """Analyse a block trace from a real machine -- blkparse's default text
    or the kernel's ftrace text of the ``block_*`` tracepoints (6.1 and
    6.12 layouts) -- as a simulated run is analysed, and return a
    :class:`Result`: the same DataFrames (``events`` with times relative to
    the trace's first record, ``requests``, ``iostat``, ``diskstats``,
    ``latency``) and a summary with the same ``devices`` and ``reports``
    keys, plus ``trace``, ``format``, ``duration_ns``, ``bad_lines``
    (``{"line", "text", "reason"}`` of lines that did not parse, which are
    skipped), ``skipped_lines`` (headers, summaries, other tracepoints),
    ``other_records`` and ``unknown_rwbs``.

    Devices are named as Linux names those with fixed majors (``8,0`` is
    ``sda``, ``9,1`` is ``md1``); a device with a dynamic major (virtio's
    ``254,0``) by the name its blktrace file carries (``vda.blktrace.0``),
    by ``names``, or else by ``MAJ,MIN``.

    :param interval: seconds of trace time between iostat snapshots.
    :param events: keep every event for :attr:`Result.events`.
    :param btt: also btt's report in ``summary["reports"]["btt"]`` (what
        ``btt -A`` prints for the trace).
    :param blktrace: a directory to write the trace into as blktrace's
        binary files (``NAME.blktrace.0`` per device), for blkparse, btt and
        iowatcher.
    :param blktrace_dump: a file to write every device's records into as
        one time-ordered stream, as ``blkparse -d`` dumps them (for ``btt
        -i``).
    :param names: ``MAJ:MIN=NAME`` mappings (``"254:0=vda"``) naming devices.
    :raises OSError: the file cannot be read.
    :raises ValueError: a mapping in ``names`` is malformed.
    :raises blkstack.TraceFormatError: the file is binary data, and not
        blktrace's per-CPU output (``sda.blktrace.0``, which is read, with
        every ``sda.blktrace.N`` beside it).
    """
    check_text_trace(path)
    summary, columns, tables = _core.trace_stats(os.fspath(path), interval, events, btt,
                                                 None if blktrace is None else os.fspath(blktrace),
                                                 None if blktrace_dump is None else os.fspath(blktrace_dump),
                                                 list(names))
    return Result(json.loads(summary), columns, tables)


def compare(scenario: Union[PathLike, Scenario], kernels: Sequence[str] = ("6.1", "6.12"), *,
            sets: Union[None, Mapping[str, Any], Sequence[Any]] = None):
    """Run one scenario under several kernels (or several override sets,
    given as a list of mappings in *sets*) and return a DataFrame with one
    row per run and device: the figures ``blkstack compare`` shows
    (requests, mean_request_kib, merges, bios_queued, splits, zero_seek_pct,
    throughput_mb_s), every iostat -x column and the simulated time."""
    pd = _pandas()
    variants: List[tuple] = []
    if isinstance(sets, Sequence) and not isinstance(sets, (str, bytes)) and sets and isinstance(sets[0], Mapping):
        variants = [(kernels[0] if kernels else None, s, ",".join(f"{k}={v}" for k, v in s.items())) for s in sets]
    else:
        variants = [(k, sets, k) for k in kernels]
    rows = []
    for kernel, s, label in variants:
        r = run(scenario, kernel, sets=s, events=False)
        for dev, d in r["devices"].items():
            if "iostat" not in d:
                continue
            rows.append({"run": label, "device": dev, **d["iostat"], **device_figures(d),
                         "sim_time_s": r["sim_time_ns"] / 1e9})
    return pd.DataFrame(rows)
