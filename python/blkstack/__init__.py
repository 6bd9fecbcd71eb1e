"""blkstack: a fast model of the Linux block I/O path.

The simulation engine is written in Rust and lives in the compiled extension
``blkstack._core``; this package adds a small Python API and the ``blkstack``
command-line tool on top of it.

Quick start::

    import blkstack

    summary = blkstack.run("scenario.toml", kernel="6.1",
                           sets={"disks.sda.queue.max_sectors_kb": 64})
    print(summary["devices"]["sda"]["requests"])

Bad scenarios raise :class:`blkstack.ScenarioError`, whose message is one line
of the form ``FILE:LINE: KEY: what is wrong``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

try:
    from blkstack import _core
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "blkstack's compiled extension (blkstack._core) could not be imported; "
        "build and install the package with `python -m pip install .` "
        "(or `python -m pip install -e .` in a source checkout)"
    ) from exc

from blkstack._core import ScenarioError

__all__ = ["ScenarioError", "__version__", "profiles", "run", "version"]

__version__: str = _core.version()

PathLike = Union[str, "os.PathLike[str]"]
SetValue = Union[str, int, float, bool]


def version() -> str:
    """Return the version of the blkstack engine (same as ``__version__``)."""
    return _core.version()


def _format_value(value: SetValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _normalise_sets(
    sets: Union[None, Mapping[str, SetValue], Iterable[str]],
) -> List[str]:
    if sets is None:
        return []
    if isinstance(sets, str):
        # A lone "key=value" string is a common slip; accept it.
        return [sets]
    if isinstance(sets, Mapping):
        return [f"{key}={_format_value(value)}" for key, value in sets.items()]
    return [str(item) for item in sets]


def run(
    path: PathLike,
    *,
    kernel: Optional[str] = None,
    sets: Union[None, Mapping[str, SetValue], Iterable[str]] = None,
    trace: Optional[PathLike] = None,
    requests: Optional[PathLike] = None,
    interval: Optional[float] = None,
) -> Dict[str, Any]:
    """Run the scenario TOML file at *path* and return its summary as a dict.

    :param kernel: kernel profile to use instead of the scenario's own
        (``"6.1"``, ``"6.12"`` or ``"7.2"``; see :func:`profiles`).
    :param sets: overrides of scenario keys, either ``"key=value"`` strings
        (as given to ``blkstack run --set``) or a mapping ``{key: value}``.
    :param trace: write a blkparse-style text trace to this file
        (``"-"`` writes it to standard output).
    :param requests: write one CSV row per issued request to this file
        (``device,seq,time_ns,rwbs,sector,nr_sectors``; ``"-"`` for
        standard output).
    :raises ScenarioError: the scenario, an override or the workload is invalid.
    :raises OSError: an output file cannot be written.

    The summary has the keys ``scenario``, ``kernel``, ``profile``,
    ``behaviour``, ``devices`` (per device: ``kind``, ``major``, ``minor``,
    ``bios_queued``, ``splits``, ``remaps``, ``requests``, ``sectors`` and
    ``limits``), ``sim_time_ns``, ``wall_time_s``, ``bios`` and ``bios_per_s``.
    """
    text = _core.run(
        os.fspath(path),
        kernel,
        _normalise_sets(sets),
        None if trace is None else os.fspath(trace),
        None if requests is None else os.fspath(requests),
    )
    summary: Dict[str, Any] = json.loads(text)
    return summary


def profiles() -> Dict[str, Any]:
    """Return the kernel profiles and behaviour switches as a dict.

    ``{"profiles": [{"name": "6.1", "kernel": "6.1.192", ...}, ...],
    "switches": [{"name": ..., "values": [...], "description": ...,
    "per_profile": {"6.1": ..., ...}}, ...]}``
    """
    data: Dict[str, Any] = json.loads(_core.profiles())
    return data
