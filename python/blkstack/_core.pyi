"""Type stubs for ``blkstack._core``, the compiled Rust engine.

Use the friendlier wrappers in :mod:`blkstack` (``blkstack.run`` returns a
dict); this module's functions return JSON text.
"""

class ScenarioError(Exception):
    """A scenario, an override or a workload is invalid.

    ``str(error)`` is one line, already formatted for a user::

        FILE:LINE: KEY: what is wrong
        FILE: KEY: what is wrong        (no line is known)
        --set KEY: what is wrong        (the error is in a --set override)
    """

class CheckError(Exception):
    """The run finished, but the conservation check or the integrity oracle
    found the stack issuing what it should not (the message is the report)."""

def run(
    path: str,
    kernel: str | None = None,
    sets: list[str] = ...,
    trace: str | None = None,
    requests: str | None = None,
    interval: float | None = None,
    progress: bool = False,
    check: str | None = None,
    blktrace: str | None = None,
    btt: bool = False,
    blktrace_dump: str | None = None,
) -> str:
    """Run the scenario TOML file at *path* and return its JSON summary.
    *blktrace*: a directory to write blktrace's binary files into
    (``NAME.blktrace.0`` per disk, read by blkparse and btt).

    :param path: the scenario file.
    :param kernel: a kernel profile ("6.1", "6.12", "7.2") overriding the
        scenario's ``kernel``, or None to keep it.
    :param sets: raw ``"key=value"`` overrides, as given to ``--set``.
    :param trace: path of a blkparse-style text trace to write, ``"-"`` for
        standard output, or None for no trace.
    :param requests: path of a CSV file with one row per issued request
        (``device,seq,time_ns,rwbs,sector,nr_sectors``), ``"-"`` for
        standard output, or None.
    :param interval: take /proc/diskstats snapshots every *interval*
        seconds of simulated time; ``iostat_intervals`` and the iostat
        report then cover each interval.
    :param progress: show a progress bar on standard error (a terminal
        only) during runs longer than a second (``BLKSTACK_PROGRESS_AFTER``
        seconds, if set): the share of the workload handed out when its
        sources know it, simulated time and bios/s, redrawn four times a
        second of wall time.
    :param check: ``"integrity"`` also runs the integrity oracle (the
        conservation check always runs).
    :returns: JSON text of a dict with the keys ``scenario``, ``kernel``,
        ``profile``, ``behaviour`` (switch -> value), ``devices`` (name ->
        ``{"kind", "major", "minor", "bios_queued", "splits", "remaps",
        "requests", "sectors": {"read", "write", "discard", "write_zeroes"},
        "limits": {sysfs name: value}, "diskstats": [17 fields],
        "iostat": {column: value}, "btt": {stage: {"min_s", "avg_s",
        "max_s", "n"}}, "merge_info", "seek_histogram", "size_histogram",
        "plug"}``), ``sim_time_ns``, ``wall_time_s``, ``engine_cpu_s``
        (the engine thread's processor seconds), ``bios``, ``bios_per_s``,
        ``iostat_intervals`` and ``reports`` (text blocks
        ``iostat``, ``btt``, ``histograms``).
    :raises ScenarioError: on any bad input.
    :raises OSError: an output file cannot be written (or the input read).
    :raises BrokenPipeError: the reader of standard output went away.
    :raises KeyboardInterrupt: Ctrl-C during the run.
    :raises CheckError: a conservation or integrity check failed.

    The trace and requests files are written atomically: they do not exist
    after a failed run.
    """

def profiles() -> str:
    """Return the kernel profiles and behaviour switches as JSON text.

    ``{"profiles": [{"name": "6.1", "kernel": "6.1.192", ...}, ...],
    "switches": [{"name": "behaviour.split_remainder", "values": [...],
    "description": "...", "per_profile": {"6.1": "tail", ...}}, ...]}``
    """

def profile_names() -> list[str]:
    """Return the kernel profiles' names, in :func:`profiles`'s order."""

def run_columns(
    path: str,
    kernel: str | None = None,
    sets: list[str] = ...,
    interval: float | None = None,
    check: str | None = None,
    trace: str | None = None,
    requests: str | None = None,
    progress: bool = False,
    blktrace: str | None = None,
    btt: bool = False,
    blktrace_dump: str | None = None,
    events: bool = True,
) -> tuple[str, Events, dict[str, list]]:
    """Like :func:`run`, and also the events, kept compactly: ``(summary
    JSON, Events, {table: list})``. *events*: keep every event (else the
    issued requests only). The tables name what the columns hold:
    ``devices`` (``(name, major, minor)`` by ``dev``), ``tasks`` (``(pid,
    comm)`` by ``task``), ``actions`` (blkparse's letters by ``action``),
    ``rwbs`` (strings by ``rwbs``)."""

class Events:
    """The events of a run or a trace, a few bytes each, decoded into
    columns when asked for."""

    complete: bool
    """True when every event was kept; False when only the issued requests
    were (``events=False``)."""
    nbytes: int
    """Bytes the kept events take."""

    def __len__(self) -> int: ...
    def rows(self, issues_only: bool = False) -> int:
        """Entries of a column: one per event, or per issued request."""
    def columns(self, names: list[str], issues_only: bool = False) -> dict[str, bytes]:
        """Columns as little-endian arrays, decoded in one pass:
        ``time_ns`` u64, ``dev`` u32, ``action`` u8, ``rwbs`` u16,
        ``sector`` u64, ``bytes`` u32, ``nr_sectors`` u32, ``task`` u32,
        ``error`` i32, ``arg`` u64 (X: the remainder's sector, A: the source
        sector, U: the depth), ``from_dev`` u32 (A: the source device); with
        *issues_only* one entry per issued request ('D') and also ``seq``
        i64 (the request's number on its device, from 0)."""

IOSTAT_COLUMNS: list[str]
"""``iostat -x``'s columns, in sysstat's order."""
BTT_STAGES: list[str]
"""btt's stages, in btt's order."""

def trace_streams(
    path: str,
) -> tuple[list[str], list[str], list[tuple[int, str, dict[str, bytes]]], int, int, list[tuple[int, str, str]]]:
    """Read a block trace (blkparse or ftrace text, blktrace's binary
    files) line by line into per-device, per-action streams, as ``blkstack
    diff`` compares them.

    Returns ``(devices, rwbs, streams, records, skipped, bad)``:
    ``devices`` are ``"maj,min"`` (``""`` first, for events that name no
    device); each stream is ``(device index, action, columns)`` in order of
    its first event, the columns little-endian arrays: ``line`` u64,
    ``rwbs`` u32 (into ``rwbs``), ``sector`` u64, ``nr_sectors`` u32,
    ``split`` u64 (a split's remainder sector; 2**64 - 1 when absent, as
    for ``sector``).

    :raises OSError: the file cannot be read.
    """

def align_streams(
    a: tuple[bytes, bytes, bytes, bytes],
    b: tuple[bytes, bytes, bytes, bytes],
) -> tuple[int, int, list[tuple[str, int, int, int, int]]]:
    """Align two event streams given as columns ``(rwbs ids u32, sector
    u64, nr_sectors u32, split u64)``, the RWBS ids common to both sides.
    Returns ``(matched in order, in common ignoring order, opcodes)``, the
    opcodes as difflib's ``(tag, i1, i2, j1, j2)``."""

def trace_stats(
    path: str,
    interval: float | None = None,
    events: bool = False,
    btt: bool = False,
    blktrace: str | None = None,
    blktrace_dump: str | None = None,
    names: list[str] = ...,
    requests: bool = True,
) -> tuple[str, Events, dict[str, list]]:
    """Analyse a block trace -- blkparse's default text or the kernel's
    ftrace text of the ``block_*`` tracepoints -- through the analysis a
    simulated run uses: btt stages, merge information, histograms, and
    /proc/diskstats rebuilt from the requests (so iostat figures).

    Returns ``(summary JSON, Events, tables)``: the events and tables as
    :func:`run_columns` gives them (every event with *events*, else the
    issued requests), times relative
    to the trace's first record and each event's RWBS as the trace printed
    it. The summary has ``trace``, ``format`` (``blkparse``, ``ftrace``,
    ``mixed``), ``events``, ``origin_ns``, ``duration_ns``, ``devices``
    (name -> ``{"major", "minor", "request_based", "requests",
    "sectors_issued", "unmatched_completions", "diskstats", "iostat",
    "btt", "merge_info", "seek_histogram", "size_histogram"}``),
    ``iostat_intervals``, ``reports`` (as :func:`run`), ``other_records``
    (kind -> count of records not analysed: messages, bounces,
    ``block_io_start``...), ``no_device_records``, ``unknown_rwbs``
    (``[{"line", "rwbs"}]``), ``bad_lines`` (``[{"line", "text",
    "reason"}]``: skipped) and ``skipped_lines``.

    :param interval: seconds of trace time between diskstats snapshots.
    :raises OSError: the file cannot be read.
    """

def version() -> str:
    """Return the engine's version string."""

def interrupt() -> None:
    """Stop every run in progress, on any thread, at its next tick: each
    raises KeyboardInterrupt. Runs started afterwards are not affected.
    (Ctrl-C reaches a run on the main thread by itself; runs on worker
    threads need this.)"""
