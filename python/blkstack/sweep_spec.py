"""Sweep files: a base scenario and the axes to vary over it.

A sweep file is TOML::

    scenario = "raid5-recursive-split"     # a built-in scenario or a path (relative to this file)
    devices = ["md0", "sda"]               # optional: keep only these devices' rows
    figures = ["requests", "throughput_mb_s"]   # optional: default the per-device summary
    seed = 1                               # seeds [random]

    [grid]                                 # every combination (cartesian product)
    kernel = ["6.12", "7.2"]               # kernel profiles
    "disks.*.queue.max_sectors_kb" = [128, 256, 512]   # any --set path; '*' matches every name
    [zip]                                  # lists of one length, taken together
    "workload.bs" = ["1M", "2M"]
    "workload.count" = [64, 32]
    [random]                               # n points drawn with the seed
    n = 200
    "disks.*.queue.nr_requests" = { min = 4, max = 256 }      # integers (floats if a bound is one)
    "md.md0.chunk" = { choices = ["64KiB", "128KiB"] }

The axes ``kernel`` (profile names) and ``scenario`` (other scenarios,
built-in names or paths) are special; every other axis is a ``--set`` path.
The points are grid x zip x random samples. Everything is checked before
anything runs: an unknown path, a value of the wrong type, an empty axis and
a grid over :data:`MAX_POINTS` points (without ``yes``) are a
:class:`SweepError` naming the file, line and key.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import json
import math
import os
import random
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

MAX_POINTS = 10_000_000
SECTIONS = ("grid", "zip", "random")
TOP_KEYS = ("scenario", "devices", "figures", "seed", "name", "description") + SECTIONS
SPECIAL_AXES = ("kernel", "scenario")

# Engine messages about a --set path or value that no point could run with
# (a misspelt key, a value of the wrong type or outside its choices), as
# opposed to a value one combination refuses (a failed point).
_SPEC_ERRORS = (": unknown key", ": expected ", " is not one of ", "unknown kernel profile", ": missing")


class SweepError(Exception):
    """A bad sweep file (one line: ``FILE:LINE: KEY: what is wrong``)."""


@dataclass(frozen=True)
class Point:
    """One run of a sweep: the axis values and what they resolve to."""

    index: int
    values: Tuple[Tuple[str, Any], ...]   # (axis, value) in axis order
    scenario: str                        # scenario file path
    kernel: Optional[str]
    sets: Tuple[str, ...]

    def key(self, scenario_digest: str, version: str) -> str:
        """Hash of the resolved scenario (its text, profile and overrides)
        and the blkstack version: a finished point with this key is reused."""
        blob = json.dumps([version, scenario_digest, self.kernel, list(self.sets)])
        return hashlib.sha256(blob.encode()).hexdigest()[:24]


@dataclass
class Axis:
    name: str
    section: str
    values: List[Any]
    line: Optional[int]
    # scenario axis: value as written -> scenario file
    paths: Dict[Any, str] = field(default_factory=dict)


@dataclass
class SweepSpec:
    path: str
    scenario: str                         # the base scenario's file
    axes: List[Axis]
    points: List[Point]
    devices: Optional[List[str]] = None
    figures: Optional[List[str]] = None
    digests: Dict[str, str] = field(default_factory=dict)   # scenario path -> sha256 of its text

    @property
    def axis_names(self) -> List[str]:
        return list(dict.fromkeys(a.name for a in self.axes))


# ---------------------------------------------------------------------------
# Where a key is: tomllib keeps no line numbers, so find the key's line in
# its section of the text.


def key_line(text: str, section: Optional[str], key: str) -> Optional[int]:
    current: Optional[str] = None
    quoted = re.escape(key)
    pattern = re.compile(rf'^\s*(?:{quoted}|"{quoted}"|\'{quoted}\')\s*=')
    for number, raw in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", raw)
        if header:
            current = header.group(1).strip().strip('"')
            if section is not None and current == section and key == section:
                return number
            continue
        if current == section and pattern.match(raw):
            return number
    return None


class _Where:
    """Error messages naming the sweep file, the line and the key."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text

    def error(self, section: Optional[str], key: str, message: str) -> SweepError:
        line = key_line(self.text, section, key) if self.text else None
        full = f"{section}.{key}" if section and key != section else key
        where = f"{self.path}:{line}" if line else self.path
        return SweepError(f"{where}: {full}: {message}")


# ---------------------------------------------------------------------------
# Reading


def read_spec(path: str, *, yes: bool = False, check: bool = True) -> SweepSpec:
    """Read and check the sweep file at *path* (nothing runs)."""
    import tomllib

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise SweepError(f"{path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise SweepError(f"{path}:{line}: not UTF-8 text (at byte offset {exc.start}); a sweep file is TOML")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"^(.*) \(at line (\d+), column \d+\)$", str(exc))
        where = f"{path}:{m.group(2)}" if m else path
        raise SweepError(f"{where}: not valid TOML: {m.group(1) if m else exc}")
    return build_spec(data, path=path, text=text, yes=yes, check=check)


def build_spec(data: Mapping[str, Any], *, path: str = "<sweep>", text: str = "", yes: bool = False,
               check: bool = True, base_dir: Optional[str] = None) -> SweepSpec:
    """Check a sweep given as a mapping (a sweep file's tables) and list its points."""
    where = _Where(path, text)
    base_dir = base_dir if base_dir is not None else (os.path.dirname(os.path.abspath(path)) if text else os.getcwd())
    for key in data:
        if key not in TOP_KEYS:
            raise where.error(None, key, f"unknown key (expected one of {', '.join(TOP_KEYS)})")
    if "scenario" not in data:
        raise SweepError(f"{path}: scenario: missing (a built-in scenario name or a scenario file)")
    base = _resolve_scenario(where, None, "scenario", data["scenario"], base_dir)
    axes = _read_axes(where, data, base_dir)
    if not axes:
        raise SweepError(f"{path}: no axes: give at least one of [grid], [zip] or [random]")
    devices = _string_list(where, data, "devices")
    figures = _string_list(where, data, "figures")
    if figures:
        from blkstack.sweep_figures import FIGURE_NAMES
        for name in figures:
            if name not in FIGURE_NAMES:
                raise where.error(None, "figures", f"unknown figure '{name}' (one of {', '.join(FIGURE_NAMES)})")
    count = _count_points(data, axes)
    if count > MAX_POINTS and not yes:
        raise where.error("grid", "grid", f"{count:,} points is more than {MAX_POINTS:,}: "
                                           "narrow the axes, or confirm with --yes (yes=True)")
    wildcard = _wildcard_names(base)
    points = list(_points(data, axes, base, wildcard, _seed(where, data)))
    spec = SweepSpec(path, base, axes, points, devices, figures)
    for p in points:
        if p.scenario not in spec.digests:
            spec.digests[p.scenario] = _digest(p.scenario)
    if check:
        _check_values(where, spec, wildcard)
        _check_devices(where, spec)
    return spec


def _check_devices(where: _Where, spec: SweepSpec) -> None:
    """Every device of ``devices`` is a device of some scenario swept."""
    if not spec.devices:
        return
    from blkstack import _core
    known: List[str] = []
    for scenario in dict.fromkeys(p.scenario for p in spec.points):
        known += list(json.loads(_core.check(scenario, None, [])).get("devices") or {})
    for name in spec.devices:
        if name not in known:
            raise where.error(None, "devices", f"'{name}' is not a device of the scenario "
                                               f"(its devices: {', '.join(dict.fromkeys(known))})")


def _string_list(where: _Where, data: Mapping[str, Any], key: str) -> Optional[List[str]]:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise where.error(None, key, "expected a list of strings")
    if not value:
        raise where.error(None, key, "empty list")
    return list(value)


def _seed(where: _Where, data: Mapping[str, Any]) -> int:
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise where.error(None, "seed", f"expected an integer, found {type(seed).__name__}")
    return seed


def _resolve_scenario(where: _Where, section: Optional[str], key: str, value: Any, base_dir: str) -> str:
    """A scenario path: relative to the sweep file, or a built-in name."""
    if not isinstance(value, str) or not value:
        raise where.error(section, key, "expected a scenario file or a built-in scenario name")
    candidate = value if os.path.isabs(value) else os.path.join(base_dir, value)
    if os.path.isfile(candidate):
        return os.path.abspath(candidate)
    from blkstack.cli.scenarios import builtin_scenarios
    name = value[:-5] if value.endswith(".toml") else value
    found = builtin_scenarios().get(name)
    if found is None:
        raise where.error(section, key, f"{value}: no such file or built-in scenario")
    return os.fspath(found)


def _read_axes(where: _Where, data: Mapping[str, Any], base_dir: str) -> List[Axis]:
    axes: List[Axis] = []
    seen: Dict[str, str] = {}
    for section in SECTIONS:
        table = data.get(section)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise where.error(None, section, "expected a table")
        for name, raw in table.items():
            if section == "random" and name == "n":
                continue
            if name in seen:
                raise where.error(section, name, f"also an axis in [{seen[name]}]")
            seen[name] = section
            line = key_line(where.text, section, name)
            values = _axis_values(where, section, name, raw)
            paths: Dict[Any, str] = {}
            if name == "scenario":
                paths = {v: _resolve_scenario(where, section, name, v, base_dir) for v in values}
            elif name == "kernel":
                _check_kernels(where, section, values)
            elif not _is_path(name):
                raise where.error(section, name, "unknown axis: expected 'kernel', 'scenario' or a --set path "
                                                 "such as disks.sda.queue.max_sectors_kb")
            axes.append(Axis(name, section, values, line, paths))
        if section == "zip":
            lengths = {a.name: len(a.values) for a in axes if a.section == "zip"}
            if len(set(lengths.values())) > 1:
                desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
                raise where.error("zip", next(iter(lengths)), f"zipped axes must have one length ({desc})")
        if section == "random":
            n = table.get("n")
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise where.error("random", "n", "expected the number of samples, a positive integer")
    return axes


def _is_path(name: str) -> bool:
    return "." in name and bool(re.fullmatch(r"[A-Za-z0-9_*?\-]+(\.[A-Za-z0-9_*?\-\[\]]+)+", name))


def _axis_values(where: _Where, section: str, name: str, raw: Any) -> List[Any]:
    if section == "random":
        if not isinstance(raw, dict):
            raise where.error(section, name, "expected { min = A, max = B } or { choices = [...] }")
        unknown = set(raw) - {"min", "max", "log", "choices"}
        if unknown:
            raise where.error(section, name, f"unknown key '{sorted(unknown)[0]}' (min, max, log, choices)")
        if "choices" in raw:
            values = raw["choices"]
        else:
            lo, hi = raw.get("min"), raw.get("max")
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi)):
                raise where.error(section, name, "min and max must both be numbers")
            if lo > hi:
                raise where.error(section, name, f"min {lo} is above max {hi}")
            if raw.get("log") and lo <= 0:
                raise where.error(section, name, "log needs min above 0")
            return [lo, hi]
    else:
        values = raw
    if not isinstance(values, list):
        raise where.error(section, name, "expected a list of values")
    if not values:
        raise where.error(section, name, "empty axis: give at least one value")
    for v in values:
        if not isinstance(v, (str, int, float, bool)):
            raise where.error(section, name, f"value {v!r}: expected a string, number or boolean")
    return list(values)


def _check_kernels(where: _Where, section: str, values: Sequence[Any]) -> None:
    from blkstack import _core
    known = [p["name"] for p in json.loads(_core.profiles())["profiles"]]
    for v in values:
        if not isinstance(v, str) or v not in known:
            raise where.error(section, "kernel", f"unknown kernel profile {v!r} (known: {', '.join(known)})")


def _count_points(data: Mapping[str, Any], axes: Sequence[Axis]) -> int:
    count = math.prod(len(a.values) for a in axes if a.section == "grid")
    zipped = [a for a in axes if a.section == "zip"]
    if zipped:
        count *= len(zipped[0].values)
    if any(a.section == "random" for a in axes):
        count *= int(data["random"]["n"])
    return count


# ---------------------------------------------------------------------------
# Points


def _points(data: Mapping[str, Any], axes: Sequence[Axis], base: str, wildcard: Dict[str, List[str]],
            seed: int) -> Iterable[Point]:
    grid = [a for a in axes if a.section == "grid"]
    zipped = [a for a in axes if a.section == "zip"]
    rand = [a for a in axes if a.section == "random"]
    zip_rows = list(zip(*[a.values for a in zipped])) if zipped else [()]
    rand_rows = list(_samples(data.get("random") or {}, rand, seed)) if rand else [()]
    names = [a.name for a in grid] + [a.name for a in zipped] + [a.name for a in rand]
    paths = {v: p for a in axes for v, p in a.paths.items()}
    index = 0
    for g in itertools.product(*[a.values for a in grid]):
        for z in zip_rows:
            for r in rand_rows:
                values = tuple(zip(names, g + tuple(z) + tuple(r)))
                yield _resolve(index, values, base, wildcard, paths)
                index += 1


def _samples(table: Mapping[str, Any], axes: Sequence[Axis], seed: int) -> Iterable[Tuple[Any, ...]]:
    """*n* draws of every random axis, from one seeded generator (the same
    points on every machine and Python version: random.Random's Mersenne
    Twister and its integer and float draws are stable)."""
    rng = random.Random(seed)
    for _ in range(int(table["n"])):
        row = []
        for a in axes:
            spec = table[a.name]
            if "choices" in spec:
                row.append(a.values[rng.randrange(len(a.values))])
                continue
            lo, hi = a.values
            if isinstance(lo, int) and isinstance(hi, int):
                if spec.get("log"):
                    row.append(int(round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))
                else:
                    row.append(rng.randint(lo, hi))
            elif spec.get("log"):
                row.append(math.exp(rng.uniform(math.log(lo), math.log(hi))))
            else:
                row.append(rng.uniform(lo, hi))
        yield tuple(row)


def format_value(value: Any) -> str:
    """An axis value as ``--set`` reads it (TOML): strings quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _resolve(index: int, values: Tuple[Tuple[str, Any], ...], base: str, wildcard: Dict[str, List[str]],
             paths: Dict[Any, str]) -> Point:
    scenario, kernel, sets = base, None, []
    for name, value in values:
        if name == "scenario":
            scenario = paths[value]
        elif name == "kernel":
            kernel = value
        else:
            sets += [f"{path}={format_value(value)}" for path in expand_path(name, wildcard)]
    return Point(index, values, scenario, kernel, tuple(sets))


def expand_path(name: str, wildcard: Dict[str, List[str]]) -> List[str]:
    """``disks.*.queue.max_sectors_kb`` -> one path per disk of the base
    scenario (a '*' or '?' in the second part matches the table's names)."""
    parts = name.split(".")
    if len(parts) < 2 or not any(c in parts[1] for c in "*?"):
        return [name]
    names = [n for n in wildcard.get(parts[0], []) if fnmatch.fnmatchcase(n, parts[1])]
    return [".".join([parts[0], n] + parts[2:]) for n in names] or [name]


def _wildcard_names(scenario: str) -> Dict[str, List[str]]:
    """The base scenario's table names (disks, md, dm, ...), for '*'."""
    import tomllib
    try:
        with open(scenario, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError):
        return {}
    return {k: list(v) for k, v in data.items() if isinstance(v, dict)}


def _digest(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return ""


def _check_values(where: _Where, spec: SweepSpec, wildcard: Dict[str, List[str]]) -> None:
    """Each distinct value of each --set axis against each scenario swept
    (``_core.check``, nothing simulated): a misspelt path or a wrong type is
    a sweep file error; a value only some combinations refuse is left to
    its points, which fail on their own."""
    from blkstack import ScenarioError, _core

    scenarios = list(dict.fromkeys(p.scenario for p in spec.points))
    for axis in spec.axes:
        if axis.name in SPECIAL_AXES:
            continue
        if "*" in axis.name or "?" in axis.name:
            if expand_path(axis.name, wildcard) == [axis.name]:
                raise where.error(axis.section, axis.name, f"'{axis.name.split('.')[1]}' matches no "
                                                           f"[{axis.name.split('.')[0]}] name of the scenario")
        for value in dict.fromkeys(axis.values):
            sets = [f"{p}={format_value(value)}" for p in expand_path(axis.name, wildcard)]
            for scenario in scenarios:
                try:
                    _core.check(scenario, None, sets[:1])
                except ScenarioError as exc:
                    message = str(exc)
                    if any(s in message for s in _SPEC_ERRORS):
                        detail = message.split(": ", 2)[-1]
                        raise where.error(axis.section, axis.name, f"value {value!r}: {detail}")
