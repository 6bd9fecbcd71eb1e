"""The data behind the report's interactive timeline (report_view.js).

Per device of each run, from the events of a :class:`blkstack.Result`:

* the requests it issued ('D'; on md and dm, the bios queued, 'Q'), each
  with its completion when the trace has one, thinned to one per pixel cell
  of a 1000 x 250 grid (seekwatcher's picture shows no more) and to a
  budget shared by every device, so an 8-disk array's report stays small;
* fixed fine time bins (FINE_BINS over the longest run) holding the bytes
  completed per operation, the seeks, and the in-flight count's least,
  most and time-weighted mean. The page merges whole fine bins for display.

Throughput, depth and seeks are binned by :mod:`blkstack.timebins`
(throughput spread over each request's time in the device: no aliasing).

Views: each md/dm array with its members first (the scenario says which
devices are members), then every device alone, then, with several runs,
each device over all runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from blkstack.plots import OP_COLOURS, OPS, _op_codes
from blkstack.timebins import completion_starts, depth_bins, pair_by_sector, seek_flags, spread_bytes

if TYPE_CHECKING:
    import numpy as np

FINE_BINS = 2000
GRID = (1000, 250)
POINT_BUDGET = 30_000
SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
                  "#8c564b", "#7f7f7f", "#bcbd22", "#17becf")
ACTIONS = {"D": "issued", "Q": "queued"}


def thin_cells(t: np.ndarray, sector: np.ndarray, t_end: float, budget: int) -> np.ndarray:
    """Indices of the first point in each cell of a GRID over [0, t_end] x
    the sectors used, then every k-th of those if still over *budget*."""
    import numpy as np

    if len(t) == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = float(sector.min()), float(sector.max())
    cx = np.minimum((t / (t_end or 1.0) * GRID[0]).astype(np.int64), GRID[0] - 1)
    cy = np.minimum(((sector - lo) / ((hi - lo) or 1.0) * GRID[1]).astype(np.int64), GRID[1] - 1)
    _, first = np.unique(cx * GRID[1] + cy, return_index=True)
    keep = np.sort(first)
    step = -(-len(keep) // max(1, budget))
    return keep[::step] if step > 1 else keep


def _sig(values: Any, digits: int = 4) -> List[float]:
    """Values rounded to *digits* significant figures (a smaller page), as
    ``float(f"{v:.{digits}g}")`` rounds each: scaled to an integer and
    back in numpy, except for values whose scaled form lies within a hair
    of a rounding tie or needs a power of ten that is not exact in a
    double, which go through the text as before."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    out = v.copy()
    nz = np.flatnonzero(np.isfinite(v) & (v != 0))
    a = np.abs(v[nz])
    mag = np.floor(np.log10(a))
    mag += a >= 10.0 ** (mag + 1)
    mag -= a < 10.0 ** mag
    k = digits - 1 - mag
    exact = np.abs(k) <= 22  # 10**k is exact: scaling back rounds once
    p = 10.0 ** np.abs(np.where(exact, k, 0))
    scaled = np.where(k >= 0, v[nz] * p, v[nz] / p)
    near_tie = np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) < 1e-6
    r = np.round(scaled)
    out[nz] = np.where(k >= 0, r / p, r * p)
    for i in nz[~exact | near_tie]:
        out[i] = float(f"{v[i]:.{digits}g}")
    return out.tolist()


def device_data(ev: Any, device: str, edges: np.ndarray, budget: int, rwbs_index: Dict[str, int],
                comm_index: Dict[str, int]) -> Optional[Dict[str, Any]]:
    """Points and fine bins of one device of one run (None if it issued
    nothing)."""
    import numpy as np

    on_dev = ev["device"] == device
    actions = ev["action"]
    action = "D" if bool(((actions == "D") & on_dev).any()) else "Q"
    issued = ev[on_dev & (actions == action)]
    if issued.empty:
        return None
    done = ev[on_dev & (actions == "C")]
    t = issued["time_ns"].to_numpy(dtype=np.float64) / 1e3
    nr = issued["nr_sectors"].to_numpy(dtype=np.int64)
    keep = thin_cells(t, issued["sector"].to_numpy(dtype=np.float64), float(edges[-1]), budget)
    done_t = done["time_ns"].to_numpy(dtype=np.float64) / 1e3
    finished = pair_by_sector(done["sector"].to_numpy(), done_t, issued["sector"].to_numpy()[keep])
    rw = [rwbs_index.setdefault(str(r), len(rwbs_index)) for r in issued["rwbs"].to_numpy()[keep]]
    comm = [comm_index.setdefault(str(c), len(comm_index)) for c in issued["comm"].to_numpy()[keep]]
    lat = finished - t[keep]
    seeks, _ = np.histogram(t[seek_flags(issued["sector"].to_numpy(), nr)], bins=edges)
    out: Dict[str, Any] = {
        "device": device, "action": action,
        "pts": {"t": _sig(t[keep], 9), "s": [int(x) for x in issued["sector"].to_numpy()[keep]],
                "n": [int(x) for x in nr[keep]], "op": [int(x) for x in _op_codes(issued)[keep]], "rw": rw,
                "lat": [round(float(x), 2) if x == x else -1 for x in lat], "comm": comm,
                "total": int(len(t)), "shown": int(len(keep))},
        "seeks": [int(x) for x in seeks], "tput": None, "depth": None,
    }
    if len(done_t):
        start_t, began = completion_starts(ev, on_dev, actions, action, issued, done)
        ops = _op_codes(done)
        nbytes = done["nr_sectors"].to_numpy(dtype=np.float64) * 512
        out["tput"] = [[j, _sig(spread_bytes(began[ops == j], done_t[ops == j], nbytes[ops == j], edges))]
                       for j in range(len(OPS)) if nbytes[ops == j].sum() > 0]
        out["depth"] = {k: _sig(v, 3) for k, v in depth_bins(start_t, done_t, edges).items()}
    return out


def stack_groups(summary: Dict[str, Any]) -> List[Tuple[str, List[str]]]:
    """(array, its member disks) for every md and dm device of a scenario's
    summary; members that are partitions count as their disk."""
    devices = summary.get("devices") or {}

    def disk(name: str) -> str:
        return (devices.get(name) or {}).get("partition_of") or name

    groups = []
    for name, d in devices.items():
        members: List[str] = []
        if d.get("md"):
            members = [m["device"] for m in d["md"].get("members", [])]
        elif d.get("dm"):
            for target in d["dm"].get("table", []):
                members += [target["device"]] if "device" in target else [x["device"] for x in target.get("devices", [])]
        if members:
            groups.append((name, list(dict.fromkeys(disk(m) for m in members))))
    return groups


def timeline(runs: Sequence[Any]) -> Dict[str, Any]:
    """Everything the page draws, for *runs* (``blkstack.cli.inputs.Run``)."""
    import numpy as np

    events = [r.result.events for r in runs]
    t_end = max([float(ev["time_ns"].max()) / 1e3 for ev in events if not ev.empty] + [1.0])
    edges = np.linspace(0.0, t_end, FINE_BINS + 1)
    devices = [[str(d) for d in ev["device"].cat.categories] if not ev.empty else [] for ev in events]
    budget = max(500, POINT_BUDGET // max(1, sum(len(d) for d in devices)))
    rwbs: Dict[str, int] = {}
    comms: Dict[str, int] = {}
    series: List[Dict[str, Any]] = []
    index: Dict[Tuple[int, str], int] = {}
    several = len(runs) > 1
    for i, (r, ev) in enumerate(zip(runs, events)):
        # Each device's rows, split once (not a mask over the run per device).
        by_dev = {str(k): g for k, g in ev.groupby("device", observed=True, sort=False)} if not ev.empty else {}
        for dev in devices[i]:
            if dev not in by_dev:
                continue
            s = device_data(by_dev[dev], dev, edges, budget, rwbs, comms)
            if s is None:
                continue
            s["run"] = i
            s["label"] = f"{r.label}: {dev}" if several else dev
            s["colour"] = SERIES_COLOURS[len(series) % len(SERIES_COLOURS)]
            index[(i, dev)] = len(series)
            series.append(s)
    return {"t_end_us": t_end, "bins": FINE_BINS, "series": series, "views": views(runs, index, series),
            "ops": list(OPS), "op_colours": [OP_COLOURS[o] for o in OPS], "rwbs": list(rwbs),
            "comms": list(comms), "actions": ACTIONS}


def remap_groups(events: Any, devices: Sequence[str]) -> List[Tuple[str, List[str]]]:
    """(device, the devices it remaps bios to) from a trace's remap events
    ('A' on the member, from the array): a trace's stacking, where no
    scenario names it. Only devices with events of their own count as
    arrays (a partition's remap to its disk does not)."""
    if events.empty:
        return []
    a = events[events["action"].astype(str) == "A"]
    pairs = a[["from_device", "device"]].dropna().astype(str).drop_duplicates()
    groups: Dict[str, List[str]] = {}
    for src, dst in pairs.itertuples(index=False):
        if src in devices and src != dst:
            groups.setdefault(src, []).append(dst)
    return [(k, sorted(v)) for k, v in groups.items()]


def run_groups(result: Any) -> List[Tuple[str, List[str]]]:
    """A run's arrays and members: the scenario's md/dm devices, or for a
    trace its remaps."""
    groups = stack_groups(result.summary)
    if groups or "trace" not in result.summary:
        return groups
    return remap_groups(result.events, list(result.summary.get("devices") or {}))


def array_order(groups: List[Tuple[str, List[str]]], names: Sequence[str]) -> List[Tuple[str, str]]:
    """(device, role) for *names*: each array of *groups* followed by its
    members (role "array", "member of ARRAY"), then the devices in no
    array ("")."""
    out: List[Tuple[str, str]] = []
    seen = set()
    for array, members in groups:
        if array in names and array not in seen:
            out.append((array, "array"))
            seen.add(array)
            out += [(m, f"member of {array}") for m in members if m in names and m not in seen]
            seen.update(members)
    return out + [(n, "") for n in names if n not in seen]


def single_order(runs: Sequence[Any], index: Dict[Tuple[int, str], int]) -> List[Tuple[int, str]]:
    """(run, device) pairs of the series: per run, arrays and members first."""
    return [(i, dev) for i, r in enumerate(runs)
            for dev, _ in array_order(run_groups(r.result), [d for (j, d) in index if j == i])]


def views(runs: Sequence[Any], index: Dict[Tuple[int, str], int], series: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The device picker's entries: arrays with their members, then single
    devices, then (several runs) each device across the runs."""
    out: List[Dict[str, Any]] = []
    several = len(runs) > 1
    prefix = (lambda r: f"{r.label}: ") if several else (lambda r: "")
    for i, r in enumerate(runs):
        for array, members in run_groups(r.result):
            ids = [index[(i, m)] for m in members if (i, m) in index]
            if (i, array) not in index or not ids:
                continue
            top = index[(i, array)]
            what = "bios queued" if series[top]["action"] == "Q" else "requests"
            out.append({"name": f"{prefix(r)}{array} with its {len(ids)} members",
                        "note": f"{array}: {what} by start sector on the array, then its members' requests "
                                f"({', '.join(members)}), one colour per member.",
                        "lba": [{"title": f"{array}: {what} by start sector", "series": [top]},
                                {"title": f"members of {array}: requests by start sector", "series": ids}],
                        "lines": [top] + ids})
    for i, dev in single_order(runs, index):
        sid = index[(i, dev)]
        what = "bios queued" if series[sid]["action"] == "Q" else "requests issued"
        out.append({"name": f"{prefix(runs[i])}{dev}", "note": f"{series[sid]['label']}: {what}, coloured by operation.",
                    "lba": [{"title": f"{series[sid]['label']}: {what} by start sector", "series": [sid]}],
                    "lines": [sid]})
    if several:
        names = dict.fromkeys(dev for (_, dev) in single_order(runs, index))
        for dev in names:
            ids = [index[(i, dev)] for i in range(len(runs)) if (i, dev) in index]
            if len(ids) > 1:
                out.append({"name": f"{dev}: all runs", "note": f"{dev} in each run, one colour per run.",
                            "lba": [{"title": f"{dev}: each run's requests by start sector", "series": ids}],
                            "lines": ids})
    return out
