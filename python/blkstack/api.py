"""The Python API: run scenarios and get pandas DataFrames.

The engine builds every table in Rust. A run keeps its events compactly
in Rust (a few bytes each); a table is decoded from them when it is first
asked for and crosses over as one raw array per column, so large traces
never become Python objects one by one. :meth:`Result.to_arrow` and
:meth:`Result.to_polars` give the same tables as Arrow tables and polars
DataFrames, their numeric columns wrapping the engine's arrays without a
copy.

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
    Kept with ``events=False`` too, without the events table.
``iostat`` -- ``iostat -x`` figures, one row per device (and interval):
    ``device`` object, ``start_s``/``end_s`` float64, then sysstat's columns
    in the order ``iostat -x`` prints them (``r/s``, ``rkB/s``, ...
    ``%util``: :data:`IOSTAT_COLUMNS`) as float64.
``diskstats`` -- the 17 /proc/diskstats fields at the end, per device:
    ``device`` object, then uint64 columns :data:`DISKSTATS_FIELDS`.
``latency`` -- btt stage latencies: ``device`` object, ``stage`` object
    (Q2Q Q2G G2I Q2M I2D D2C Q2C, btt's order: :data:`BTT_STAGES`),
    ``min_s``/``avg_s``/``max_s`` float64, ``n`` int64.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from blkstack import _core
from blkstack.comparison import device_figures
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

#: ``iostat -x``'s columns, in the order sysstat prints them.
IOSTAT_COLUMNS = tuple(_core.IOSTAT_COLUMNS)
#: btt's stages, in the order ``btt`` prints them.
BTT_STAGES = tuple(_core.BTT_STAGES)

# The engine's columns (trace::store): name -> (numpy dtype, Arrow type name).
_COLUMN_DTYPES = {
    "time_ns": "<u8", "dev": "<u4", "action": "u1", "rwbs": "<u2", "sector": "<u8", "bytes": "<u4",
    "nr_sectors": "<u4", "task": "<u4", "error": "<i4", "arg": "<u8", "from_dev": "<u4", "seq": "<i8",
}
_ARROW_TYPES = {"<u8": "uint64", "<u4": "uint32", "u1": "uint8", "<u2": "uint16", "<i4": "int32", "<i8": "int64"}
# The action code of a remap ('A'), whose from_dev names its source.
_REMAP = 2


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

    def __init__(self, summary: Dict[str, Any], events: Any = None,
                 tables: Optional[Dict[str, Any]] = None) -> None:
        self.summary = summary
        self._store = events  # blkstack._core.Events, or None
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
    def stored_bytes(self) -> int:
        """Bytes of memory the kept events take (a few per event)."""
        return 0 if self._store is None else self._store.nbytes

    @property
    def events(self):
        """Every tracepoint event (see the module documentation)."""
        if self._events is None:
            self._events = _events_frame(self._store, self._tables)
        return self._events

    @property
    def requests(self):
        """One row per issued request, in issue order."""
        return _requests_table(self._store, self._tables, _PandasTables())

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
        return pd.DataFrame(rows, columns=_in_order(["device", "start_s", "end_s", *IOSTAT_COLUMNS], rows))

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
        """btt's stage latencies per device, in seconds, stages in btt's order."""
        pd = _pandas()
        order = {stage: i for i, stage in enumerate(BTT_STAGES)}
        rows = [{"device": dev, "stage": stage, **vals}
                for dev, d in self.summary["devices"].items()
                for stage, vals in sorted((d.get("btt") or {}).items(), key=lambda kv: order.get(kv[0], len(order)))]
        frame = pd.DataFrame(rows, columns=["device", "stage", "min_s", "avg_s", "max_s", "n"])
        return frame.astype({"n": "int64"})

    def to_arrow(self, table: str = "events"):
        """A table as a :class:`pyarrow.Table`: ``events`` and ``requests``
        wrap the engine's arrays (no copy of the numeric columns; devices,
        actions, rwbs and comms as dictionary arrays), the others are
        converted from their DataFrames."""
        import pyarrow as pa

        if table == "events":
            return _events_table(self._store, self._tables, _ArrowTables())
        if table == "requests":
            return _requests_table(self._store, self._tables, _ArrowTables())
        if table in ("iostat", "diskstats", "latency"):
            return pa.Table.from_pandas(getattr(self, table), preserve_index=False)
        raise ValueError(f"{table}: no such table (events, requests, iostat, diskstats, latency)")

    def to_polars(self, table: str = "events"):
        """A table as a polars DataFrame, from :meth:`to_arrow` (numeric
        columns without a copy). Needs polars (the ``polars`` extra)."""
        try:
            import polars
        except ImportError as exc:
            raise ImportError("Result.to_polars needs polars: python -m pip install 'blkstack[polars]'") from exc
        return polars.from_arrow(self.to_arrow(table))


def _in_order(columns: List[str], rows: List[Dict[str, Any]]) -> List[str]:
    """*columns*, then any other key the rows have, in their order."""
    seen = set(columns)
    extra = [k for row in rows for k in row if k not in seen and not seen.add(k)]
    return columns + extra


_EVENT_COLUMNS = ["time_ns", "dev", "action", "rwbs", "sector", "nr_sectors", "bytes", "task", "error", "arg",
                  "from_dev"]
_REQUEST_COLUMNS = ["dev", "seq", "time_ns", "rwbs", "sector", "nr_sectors"]


def _raw(store: Any, names: List[str], issues_only: bool = False) -> Dict[str, Any]:
    """Engine columns, decoded in one pass, as numpy arrays over their
    bytes (no copy)."""
    import numpy as np

    return {k: np.frombuffer(v, dtype=_COLUMN_DTYPES[k]) for k, v in store.columns(names, issues_only).items()}


def _need_events(store: Any) -> None:
    if store is None or not store.complete:
        raise ValueError("this result was run without events: use blkstack.run(..., events=True)")


def _need_requests(store: Any) -> None:
    if store is None:
        raise ValueError("this result keeps no requests")


def _task_columns(tables: Dict[str, Any]):
    """Per task id: pid (uint32), comm code (int64) and the comm names."""
    import numpy as np

    comm_names = [t[1] for t in tables["tasks"]]
    comms = list(dict.fromkeys(comm_names))
    code = {c: i for i, c in enumerate(comms)}
    comm_index = np.array([code[c] for c in comm_names], dtype="int64")
    pid = np.array([t[0] for t in tables["tasks"]], dtype="uint32")
    return pid, comm_index, comms


class _PandasTables:
    """How the tables are made as pandas DataFrames: numpy arrays over the
    engine's bytes, categoricals for names."""

    def __init__(self) -> None:
        self.pd = _pandas()

    def columns(self, store: Any, names: List[str], issues_only: bool) -> Dict[str, Any]:
        return _raw(store, names, issues_only)

    def numpy(self, column: Any) -> Any:
        return column

    def names(self, codes: Any, names: Sequence[str]) -> Any:
        """*codes* (-1: none) as a column of *names*."""
        return self.pd.Categorical.from_codes(codes.astype("int64"), categories=list(names))

    def table(self, columns: Dict[str, Any]) -> Any:
        return self.pd.DataFrame(columns)


class _ArrowTables:
    """How the tables are made as Arrow tables: arrays over the engine's
    bytes (no copy), dictionary arrays for names."""

    def __init__(self) -> None:
        import pyarrow

        self.pa = pyarrow

    def columns(self, store: Any, names: List[str], issues_only: bool) -> Dict[str, Any]:
        return _arrow_columns(store, names, issues_only)

    def numpy(self, column: Any) -> Any:
        return column.to_numpy(zero_copy_only=True)

    def names(self, codes: Any, names: Sequence[str]) -> Any:
        """*codes* (-1: none, a null) as a dictionary array of *names*."""
        pa = self.pa
        if not isinstance(codes, pa.Array):
            codes = pa.array(codes.astype("int32"), mask=codes < 0)
        return pa.DictionaryArray.from_arrays(codes, pa.array(list(names), type=pa.string()))

    def table(self, columns: Dict[str, Any]) -> Any:
        return self.pa.table(columns)


def _events_table(store: Any, tables: Dict[str, Any], make: Any):
    """The events table, made by *make* (:class:`_PandasTables` or
    :class:`_ArrowTables`)."""
    import numpy as np

    _need_events(store)
    devices = [d[0] for d in tables["devices"]]
    pid, comm_index, comms = _task_columns(tables)
    col = make.columns(store, _EVENT_COLUMNS, False)
    task = make.numpy(col["task"]).astype("int64")
    remap = make.numpy(col["action"]) == _REMAP
    from_dev = np.where(remap, make.numpy(col["from_dev"]).astype("int64"), -1)
    return make.table({
        "time_ns": col["time_ns"],
        "device": make.names(col["dev"], devices),
        "action": make.names(col["action"], tables["actions"]),
        "rwbs": make.names(col["rwbs"], tables["rwbs"]),
        "sector": col["sector"],
        "nr_sectors": col["nr_sectors"],
        "bytes": col["bytes"],
        "pid": pid[task] if len(task) else np.array([], dtype="uint32"),
        "comm": make.names(comm_index[task] if len(task) else np.array([], dtype="int64"), comms),
        "error": col["error"],
        "arg": col["arg"],
        "from_device": make.names(from_dev, devices),
    })


def _requests_table(store: Any, tables: Dict[str, Any], make: Any):
    """The issued requests, decoded alone (without the events table), made
    by *make*."""
    _need_requests(store)
    devices = [d[0] for d in tables["devices"]]
    col = make.columns(store, _REQUEST_COLUMNS, True)
    return make.table({
        "device": make.names(col["dev"], devices),
        "seq": col["seq"],
        "time_ns": col["time_ns"],
        "rwbs": make.names(col["rwbs"], tables["rwbs"]),
        "sector": col["sector"],
        "nr_sectors": col["nr_sectors"],
    })


def _events_frame(store: Any, tables: Dict[str, Any]):
    """The events DataFrame (also for the commands that plot a run)."""
    return _events_table(store, tables, _PandasTables())


def _arrow_columns(store: Any, names: List[str], issues_only: bool = False) -> Dict[str, Any]:
    """Engine columns, decoded in one pass, as Arrow arrays over the same
    bytes."""
    import pyarrow as pa

    out = {}
    for name, data in store.columns(names, issues_only).items():
        kind = getattr(pa, _ARROW_TYPES[_COLUMN_DTYPES[name]])()
        out[name] = pa.Array.from_buffers(kind, len(data) // kind.byte_width, [None, pa.py_buffer(data)])
    return out


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
    :param events: keep every event for :attr:`Result.events` (compactly,
        a few bytes each); ``False`` keeps only the issued requests
        (:attr:`Result.requests`) beside the summary tables.
    :param blktrace: also write blktrace's binary files into this directory
        (``NAME.blktrace.0`` per disk).
    :raises blkstack.ScenarioError: the scenario or an override is invalid.
    """
    path = os.fspath(scenario)
    set_list = normalise_sets(sets, overrides)
    summary, store, tables = _core.run_columns(path, kernel, set_list, interval,
                                               trace=None if trace is None else os.fspath(trace),
                                               requests=None if requests is None else os.fspath(requests),
                                               blktrace=None if blktrace is None else os.fspath(blktrace),
                                               events=events)
    return Result(json.loads(summary), store, tables)


def load_trace(path: PathLike, *, interval: Optional[float] = None, events: bool = True, btt: bool = False,
               blktrace: Optional[PathLike] = None, blktrace_dump: Optional[PathLike] = None,
               names: Sequence[str] = (), requests: bool = True) -> Result:
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
    :param events: keep every event for :attr:`Result.events` (``False``:
        the issued requests only).
    :param btt: also btt's report in ``summary["reports"]["btt"]`` (what
        ``btt -A`` prints for the trace).
    :param blktrace: a directory to write the trace into as blktrace's
        binary files (``NAME.blktrace.0`` per device), for blkparse, btt and
        iowatcher.
    :param blktrace_dump: a file to write every device's records into as
        one time-ordered stream, as ``blkparse -d`` dumps them (for ``btt
        -i``).
    :param names: ``MAJ:MIN=NAME`` mappings (``"254:0=vda"``) naming devices.
    :param requests: with ``events=False``, keep the issued requests for
        :attr:`Result.requests` (``False``: no table of events or requests,
        and memory that does not grow with the trace).
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
                                                 list(names), requests)
    return Result(json.loads(summary), columns, tables)


def compare(scenario: Union[PathLike, Scenario], kernels: Sequence[str] = ("6.1", "6.12"), *,
            sets: Union[None, Mapping[str, Any], Sequence[Any]] = None,
            labels: Optional[Sequence[str]] = None, jobs: Optional[int] = None):
    """Run one scenario under several kernels (or several override sets,
    given as a list of mappings in *sets*) and return a DataFrame with one
    row per run and device: ``run`` (the run's label), ``device``, every
    iostat -x column in iostat's order, the figures ``blkstack compare``
    shows (requests, mean_request_kib, merges, bios_queued, splits,
    zero_seek_pct, throughput_mb_s) and the simulated time.

    :param labels: the runs' names in the ``run`` column, one per kernel
        (or per override set); by default the kernel, or the overrides as
        ``key=value,...``.
    :param jobs: at most this many runs at once (default: one per
        processor); the table is the same for every value.
    """
    from blkstack.cli.parallel import Runs

    pd = _pandas()
    variants: List[tuple] = []
    if isinstance(sets, Sequence) and not isinstance(sets, (str, bytes)) and sets and isinstance(sets[0], Mapping):
        variants = [(kernels[0] if kernels else None, s, ",".join(f"{k}={v}" for k, v in s.items())) for s in sets]
    else:
        variants = [(k, sets, k) for k in kernels]
    if labels is not None:
        labels = [str(label) for label in labels]
        if len(labels) != len(variants):
            raise ValueError(f"labels: {len(labels)} given for {len(variants)} runs")
        variants = [(kernel, s, label) for (kernel, s, _), label in zip(variants, labels)]
    path = os.fspath(scenario)
    with Runs(jobs, most=len(variants)) as pool:
        futures = [pool.submit(_core.run, path, kernel, normalise_sets(s)) for kernel, s, _ in variants]
        summaries = [json.loads(f.result()) for f in futures]
    rows = []
    for (_, _, label), r in zip(variants, summaries):
        for dev, d in r["devices"].items():
            if "iostat" not in d:
                continue
            rows.append({"run": label, "device": dev, **d["iostat"], **device_figures(d),
                         "sim_time_s": r["sim_time_ns"] / 1e9})
    return pd.DataFrame(rows, columns=_in_order(["run", "device", *IOSTAT_COLUMNS], rows))
