"""blkstack: a fast model of the Linux block I/O path.

The simulation engine is written in Rust and lives in the compiled extension
``blkstack._core``; this package adds a small Python API and the ``blkstack``
command-line tool on top of it.

Quick start::

    import blkstack

    result = blkstack.run("scenario.toml", kernel="6.1",
                          sets={"disks.sda.queue.max_sectors_kb": 64})
    print(result["devices"]["sda"]["requests"])   # the JSON summary
    result.requests                                # issued requests, a DataFrame
    result.iostat                                  # iostat -x figures

Bad scenarios raise :class:`blkstack.ScenarioError`, whose message is one line
of the form ``FILE:LINE: KEY: what is wrong``.
"""

from __future__ import annotations

try:
    from blkstack import _core
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "blkstack's compiled extension (blkstack._core) could not be imported; "
        "build and install the package with `python -m pip install .` "
        "(or `python -m pip install -e .` in a source checkout)"
    ) from exc

from blkstack._core import ScenarioError

# The API's names are imported on first use (PEP 562 ``__getattr__``
# below), so that ``blkstack --version`` loads the extension alone.
_LAZY = {name: "blkstack.api" for name in
         ("DISKSTATS_FIELDS", "Result", "Scenario", "compare", "load", "load_trace", "run")}
_LAZY["TraceFormatError"] = "blkstack.tracefile"

__all__ = [
    "DISKSTATS_FIELDS",
    "Result",
    "Scenario",
    "ScenarioError",
    "TraceFormatError",
    "__version__",
    "compare",
    "load",
    "load_trace",
    "profiles",
    "run",
    "sweep",
    "version",
]

__version__: str = _core.version()


def version() -> str:
    """Return the version of the blkstack engine (same as ``__version__``)."""
    return _core.version()


def sweep(spec: Any, **options: Any) -> Any:
    """Run a sweep (a sweep file, or its tables as a dict) and return its
    table as a pandas DataFrame: see :func:`blkstack.sweep_run.sweep` for the
    options (``out``, ``csv``, ``workers``, ``ray``, ``batch``, ``yes``,
    ``resume``) and docs/sweeps.md for the format."""
    from blkstack.sweep_run import sweep as run_sweep
    return run_sweep(spec, **options)


def profiles() -> Dict[str, Any]:
    """Return the kernel profiles and behaviour switches as a dict.

    ``{"profiles": [{"name": "6.1", "kernel": "6.1.192", ...}, ...],
    "switches": [{"name": ..., "values": [...], "description": ...,
    "per_profile": {"6.1": ..., ...}}, ...]}``
    """
    import json

    data: Dict[str, Any] = json.loads(_core.profiles())
    return data


def __getattr__(name: str) -> Any:
    """An API name of :data:`_LAZY`, imported from its module when first used."""
    if name not in _LAZY:
        raise AttributeError(f"module 'blkstack' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
