"""Which kernel profile and behaviour switches explain a real trace.

:func:`identify` replays the bios a trace shows processes submitting (the
``replay`` workload: its ``Q`` roots, with their timing and plugging)
through a stack under each candidate: every kernel profile as it is, and
every profile with one behaviour switch set to each of its other values.
Each candidate's issued requests are compared with the trace's, in order
(:func:`blkstack.diff.diff_traces`, as ``blkstack diff`` compares them), and
the candidates are ranked by the share that line up.

A switch that leaves this workload's issued requests as its profile issues
them cannot be seen in the trace; it is left out of the ranking. Profiles
that issue the very same requests for the workload cannot be told apart by
it, and :attr:`Identification.groups` says which.

The candidates are a sweep: they run on the sweep backends (every core, or
Ray).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from blkstack.diff import Trace, TraceFileError, _stream_text, diff_traces


@dataclass
class Candidate:
    profile: str
    switch: Optional[str] = None       # behaviour.NAME set away from the profile's value
    value: Optional[str] = None
    match_percent: float = 0.0
    matched: int = 0
    total: int = 0
    digest: str = ""                   # of the issued requests, to find equal candidates
    divergence: List[str] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def switches(self) -> str:
        return f"{self.switch}={self.value}" if self.switch else "-"

    def to_json(self) -> Dict[str, Any]:
        return {"profile": self.profile, "switch": self.switch, "value": self.value,
                "match_percent": round(self.match_percent, 3), "matched": self.matched, "total": self.total,
                "first_divergence": self.divergence, "error": self.error}


@dataclass
class Identification:
    trace: str
    stack: str
    ranking: List[Candidate]           # best first; switches that change nothing left out
    profiles: List[Candidate]          # every profile as it is, best first
    groups: List[List[str]]            # profiles issuing identical requests for this workload
    tried: int = 0
    relevant_switches: List[str] = field(default_factory=list)

    @property
    def best(self) -> Candidate:
        return self.ranking[0]

    @property
    def best_profiles(self) -> List[str]:
        """Every profile (unchanged) at the best profile match."""
        top = self.profiles[0].match_percent
        return [c.profile for c in self.profiles if c.error is None and c.match_percent == top]

    def to_json(self) -> Dict[str, Any]:
        return {"trace": self.trace, "stack": self.stack, "candidates_tried": self.tried,
                "best_profiles": self.best_profiles, "indistinguishable": [g for g in self.groups if len(g) > 1],
                "relevant_switches": self.relevant_switches,
                "ranking": [c.to_json() for c in self.ranking],
                "profiles": [c.to_json() for c in self.profiles]}

    def text(self, top: int = 10) -> str:
        lines = [f"trace: {self.trace}", f"stack: {self.stack}",
                 f"candidates: {self.tried} (every profile, and each with one switch changed); "
                 f"switches that change this workload's issued requests: "
                 f"{', '.join(self.relevant_switches) or 'none'}", ""]
        shown = self.ranking[:top]
        w_sw = max([len(c.switches) for c in shown] + [8])
        w_p = max([len(c.profile) for c in shown] + [7])
        lines.append(f"  RANK  {'PROFILE'.ljust(w_p)}  {'SWITCHES'.ljust(w_sw)}  MATCH")
        rank, last = 0, None
        for i, c in enumerate(shown):
            if c.match_percent != last:
                rank, last = i + 1, c.match_percent
            figure = f"{c.match_percent:5.1f}%  ({c.matched} of {c.total})" if c.error is None else f"error: {c.error}"
            lines.append(f"  {rank:>4}  {c.profile.ljust(w_p)}  {c.switches.ljust(w_sw)}  {figure}")
        if len(self.ranking) > top:
            lines.append(f"  ... {len(self.ranking) - top} more (--top N)")
        lines.append("")
        lines.append("profiles as they are: " + ", ".join(
            f"{c.profile} {c.match_percent:.1f}%" for c in self.profiles if c.error is None))
        same = [g for g in self.groups if len(g) > 1]
        for g in same:
            lines.append(f"cannot be told apart by this workload (identical issued requests): {' = '.join(g)}")
        lines.append(f"best profile{'s' if len(self.best_profiles) > 1 else ''}: {', '.join(self.best_profiles)}")
        best = self.best
        lines.append("")
        if best.divergence:
            lines.append(f"first divergence of the best candidate ({best.profile}, {best.switches}):")
            lines += ["  " + l for l in best.divergence]
        elif best.error is None:
            lines.append(f"the best candidate ({best.profile}, {best.switches}) issues exactly the trace's requests")
        return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------
# The replay scenario


_WORKLOAD_HEADER = re.compile(r"^\s*\[\[?\s*workload(\.[^\]]*)?\s*\]\]?\s*(#.*)?$")
_HEADER = re.compile(r"^\s*\[")


def replay_scenario(stack_text: str, trace: str, timing: str = "original") -> str:
    """The stack file with its workload replaced by a replay of *trace*."""
    kept: List[str] = []
    in_workload = False
    for line in stack_text.splitlines():
        if _HEADER.match(line):
            in_workload = bool(_WORKLOAD_HEADER.match(line))
        if not in_workload:
            kept.append(line)
    kept += ["", "[workload]", 'type = "replay"', f"trace = {json.dumps(os.path.abspath(trace))}",
             f"timing = {json.dumps(timing)}"]
    return "\n".join(kept) + "\n"


def candidates(profiles_json: Dict[str, Any], kernels: Optional[Sequence[str]] = None,
               switches: bool = True) -> List[Tuple[str, Optional[str], Optional[str]]]:
    """(profile, switch, value): each profile, then each with one switch at
    each of its other values."""
    names = [p["name"] for p in profiles_json["profiles"] if not kernels or p["name"] in kernels]
    out: List[Tuple[str, Optional[str], Optional[str]]] = [(p, None, None) for p in names]
    if not switches:
        return out
    for p in names:
        for sw in profiles_json["switches"]:
            current = str(sw["per_profile"].get(p))
            for v in sw.get("values") or []:
                if str(v) != current:
                    out.append((p, sw["name"], str(v)))
    return out


# ---------------------------------------------------------------------------
# In a worker


_TRACES: Dict[str, Trace] = {}


def _real(path: str) -> Trace:
    if path not in _TRACES:
        _TRACES[path] = Trace(path)
    return _TRACES[path]


def candidate_result(scenario: str, real_trace: str, kernel: str, sets: Sequence[str],
                     events: Sequence[str] = ("D",), ignore_flags: bool = False) -> Dict[str, Any]:
    """Replay under one candidate and diff with the real trace."""
    from blkstack import _core

    fd, sim_path = tempfile.mkstemp(prefix="blkstack-identify-", suffix=".txt")
    os.close(fd)
    try:
        try:
            _core.run(scenario, kernel, list(sets), sim_path, None, None, False, None)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return {"error": f"{exc}".replace("\n", " ")}
        sim = Trace(sim_path)
        report = diff_traces(_real(real_trace), sim, events=list(events), ignore_flags=ignore_flags)
    finally:
        os.unlink(sim_path)
    digest = hashlib.sha256()
    for s in report.streams:
        digest.update(repr((s.sim_dev, s.action, [e.key(ignore_flags) for e in s.sim])).encode())
    first = next((s for s in report.streams if not s.identical), None)
    divergence = [l.replace(sim_path, "sim") for l in _stream_text(first, 3)] if first else []
    return {"match_percent": report.match_percent, "matched": report.matched, "total": report.total,
            "digest": digest.hexdigest(), "divergence": divergence}


# ---------------------------------------------------------------------------
# The sweep


def identify(trace: Union[str, "os.PathLike[str]"], stack: Union[str, "os.PathLike[str]"], *,
             kernels: Optional[Sequence[str]] = None, switches: bool = True, timing: str = "original",
             events: Sequence[str] = ("D",), ignore_flags: bool = False, workers: Optional[int] = None,
             ray: Union[None, bool, str] = None, batch: Optional[int] = None) -> Identification:
    """Rank kernel profiles (and single switch changes) by how well they
    reproduce the requests issued in *trace* when its submitted bios are
    replayed through the scenario *stack* (its own workload is ignored).

    :raises blkstack.ScenarioError: the stack (or the replay of the trace
        on it) is invalid.
    :raises blkstack.diff.TraceFileError: the trace cannot be read.
    """
    from blkstack import _core
    from blkstack.sweep_backend import default_workers, run_pool, run_ray
    from blkstack.sweep_run import check_version

    trace, stack = os.fspath(trace), os.fspath(stack)
    real = Trace(trace)
    if real.count == 0:
        raise TraceFileError(f"{trace}: no block trace events found (expected blkparse text or the kernel's "
                             "block_* trace)")
    if not any(a == "D" for (_d, a) in real.events):
        raise TraceFileError(f"{trace}: the trace has no issued requests (D, block_rq_issue) to compare")
    folder = tempfile.mkdtemp(prefix="blkstack-identify-")
    scenario = os.path.join(folder, os.path.basename(stack))
    try:
        # The replay groups the trace's bios into submissions itself, by
        # each task's plug and unplug (workload_replay.rs).
        with open(stack, encoding="utf-8") as fh:
            text = replay_scenario(fh.read(), str(trace), timing)
        with open(scenario, "w", encoding="utf-8") as fh:
            fh.write(text)
        _check_replay(scenario, stack)
        profiles_json = json.loads(_core.profiles())
        cands = candidates(profiles_json, kernels, switches)
        tasks = [(i, "identify", (scenario, os.path.abspath(trace), p,
                                  [] if sw is None else [f"{sw}={v}"], list(events), ignore_flags))
                 for i, (p, sw, v) in enumerate(cands)]
        results: Dict[int, Dict[str, Any]] = {}

        def on_result(index: int, result: Dict[str, Any]) -> None:
            check_version(result, _core.version())
            results[index] = result

        n = workers or default_workers()
        if ray is not None and ray is not False:
            run_ray(tasks, on_result, None if ray is True else str(ray), n, batch)
        else:
            run_pool(tasks, on_result, n, batch)
    finally:
        _remove_tree(folder)
    order = [p["name"] for p in profiles_json["profiles"]]
    return rank(trace, stack, cands, results, order)


def _check_replay(scenario: str, stack: str) -> None:
    from blkstack import ScenarioError, _core
    try:
        _core.check(scenario, None, [])
    except ScenarioError as exc:
        # The message names the temporary copy: name the user's file.
        raise ScenarioError(str(exc).replace(scenario, stack))


def _remove_tree(folder: str) -> None:
    import shutil
    shutil.rmtree(folder, ignore_errors=True)


def rank(trace: str, stack: str, cands: Sequence[Tuple[str, Optional[str], Optional[str]]],
         results: Dict[int, Dict[str, Any]], order: Sequence[str]) -> Identification:
    built = []
    for i, (p, sw, v) in enumerate(cands):
        r = results.get(i, {"error": "not run"})
        c = Candidate(p, sw, v, error=r.get("error"))
        if c.error is None:
            c.match_percent, c.matched, c.total = r["match_percent"], r["matched"], r["total"]
            c.digest, c.divergence = r["digest"], r["divergence"]
        built.append(c)
    base = {c.profile: c for c in built if c.switch is None}
    # A switch whose value changes nothing this workload issues is invisible in it.
    kept = [c for c in built if c.switch is None or c.error is not None or c.digest != base[c.profile].digest]
    relevant = sorted({c.switch for c in kept if c.switch and c.error is None})

    def key(c: Candidate) -> Tuple[Any, ...]:
        return (c.error is not None, -c.match_percent, c.switch is not None, order.index(c.profile))

    kept.sort(key=key)
    profiles = sorted(base.values(), key=key)
    groups: Dict[str, List[str]] = {}
    for name in order:
        c = base.get(name)
        if c is not None and c.error is None:
            groups.setdefault(c.digest, []).append(name)
    return Identification(trace, stack, kept, profiles, list(groups.values()), len(cands), relevant)
