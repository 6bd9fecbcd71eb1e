"""Time-binned figures of a block trace, without aliasing.

A device's activity is summed into fixed time bins here; a plot or the
report's page may merge whole bins for display, never split them.

Throughput (:func:`spread_bytes`) spreads each request's bytes evenly from
its start (issue) to its completion, the time the device was moving them:
a steady stream then reads as a steady rate at any bin width, where
counting bytes at completion instants makes the rate alternate between
bins (aliasing) whenever the bin width is not a multiple of the completion
period. Bytes are conserved: the bins add up to the bytes completed.

In flight (:func:`depth_bins`): the step function of issues (+1) and
completions (-1), per bin its least, most and time-weighted mean -- a band
from least to most around the mean, which a plain sample per bin would
miss.

A seek (:func:`seek_flags`) is a request that does not start where the
previous one on the device ended (seekwatcher's and iowatcher's count).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict

if TYPE_CHECKING:
    import numpy as np


def spread_bytes(start: np.ndarray, end: np.ndarray, nbytes: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bytes per bin when each request's bytes flow at a constant rate from
    *start* to *end* (a request with ``end <= start`` counts at *end*)."""
    import numpy as np

    instant = end <= start
    out, _ = np.histogram(end[instant], bins=edges, weights=nbytes[instant])
    s, e, b = start[~instant], end[~instant], nbytes[~instant]
    if len(s) == 0:
        return out.astype(np.float64)
    rate = b / (e - s)
    t = np.concatenate([s, e])
    order = np.argsort(t, kind="stable")
    t = t[order]
    r = np.cumsum(np.concatenate([rate, -rate])[order])  # the rate after each breakpoint
    cum = np.concatenate([[0.0], np.cumsum(r[:-1] * np.diff(t))])  # bytes moved by each breakpoint
    return out + np.diff(_at_edges(t, cum, r, edges))


def _at_edges(t: np.ndarray, cum: np.ndarray, slope: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """A piecewise-linear running total (value *cum* and *slope* from each
    breakpoint *t* on; 0 before the first) at each edge."""
    import numpy as np

    k = np.searchsorted(t, edges, side="right") - 1
    kc = k.clip(0)
    return np.where(k >= 0, cum[kc] + slope[kc] * (edges - t[kc]), 0.0)


def depth_steps(issue_t: np.ndarray, done_t: np.ndarray) -> tuple:
    """(times, in flight after each) for issues (+1) and completions (-1),
    and the count before the first (the requests a trace started with in
    flight: the count is lifted so it never goes below zero). At equal
    times completions go first, as the kernel frees a tag before the next
    request takes it."""
    import numpy as np

    t = np.concatenate([issue_t, done_t])
    step = np.concatenate([np.ones(len(issue_t)), -np.ones(len(done_t))])
    order = np.lexsort((step, t))
    t, depth = t[order], np.cumsum(step[order])
    lift = -min(0.0, float(depth.min(initial=0.0)))
    return t, depth + lift, lift


def depth_bins(issue_t: np.ndarray, done_t: np.ndarray, edges: np.ndarray) -> Dict[str, np.ndarray]:
    """In flight (issued, not yet completed) per bin: least, most and
    time-weighted mean (the count steps as :func:`depth_steps` says)."""
    import numpy as np

    t, depth, lift = depth_steps(issue_t, done_t)
    # A step for the count before the first event, at the first edge.
    t = np.concatenate([[min(float(edges[0]), float(t[0]) if len(t) else 0.0)], t])
    depth = np.concatenate([[lift], depth])
    bins = len(edges) - 1
    k = np.searchsorted(t, edges, side="right") - 1
    entering = np.where(k >= 0, depth[k.clip(0)], lift)[:-1]
    lo, hi = entering.copy(), entering.copy()
    inside = (t >= edges[0]) & (t < edges[-1])
    inside[0] = False  # the count before the first event is no event
    idx = (np.searchsorted(edges, t[inside], side="right") - 1).clip(0, bins - 1)
    np.minimum.at(lo, idx, depth[inside])
    np.maximum.at(hi, idx, depth[inside])
    area = np.concatenate([[0.0], np.cumsum(depth[:-1] * np.diff(t))])
    mean = np.diff(_at_edges(t, area, depth, edges)) / np.diff(edges)
    return {"lo": lo, "hi": hi, "mean": mean}


def seek_flags(sector: np.ndarray, nr_sectors: np.ndarray) -> np.ndarray:
    """True for each request (in issue order) that does not start where the
    previous one ended; the first is not a seek."""
    import numpy as np

    out = np.zeros(len(sector), dtype=bool)
    if len(sector) > 1:
        out[1:] = sector[1:] != (sector[:-1] + nr_sectors[:-1])
    return out


def pair_by_sector(first_sector: np.ndarray, first_t: np.ndarray, then_sector: np.ndarray) -> np.ndarray:
    """For each event of the second list, the time of its partner in the
    first (NaN if none): the k-th event at a sector in one list pairs with
    the k-th at that sector in the other (an issue with its completion)."""
    import numpy as np

    first_sector, then_sector = np.asarray(first_sector), np.asarray(then_sector)
    order = np.argsort(first_sector, kind="stable")
    fs, ft = first_sector[order], np.asarray(first_t, dtype=np.float64)[order]
    # The k-th event at a sector of the first list sits k places after the
    # sector's first in the sorted list (a stable sort keeps their order).
    lo = np.searchsorted(fs, then_sector, side="left")
    hi = np.searchsorted(fs, then_sector, side="right")
    pos = lo + occurrence(then_sector)
    out = np.full(len(then_sector), np.nan)
    ok = pos < hi
    out[ok] = ft[pos[ok]]
    return out


def occurrence(values: np.ndarray) -> np.ndarray:
    """For each value, how many equal values come before it."""
    import numpy as np

    order = np.argsort(values, kind="stable")
    v = values[order]
    idx = np.arange(len(v))
    first = np.maximum.accumulate(np.where(np.r_[True, v[1:] != v[:-1]] if len(v) else np.zeros(0, bool), idx, 0))
    out = np.empty(len(v), dtype=np.int64)
    out[order] = idx - first
    return out


def starts_of(ev: Any, on_dev: Any, actions: Any, action: str, issued: Any) -> tuple:
    """(sectors, times in µs) where the pieces that complete begin: the
    issued requests; on a bio-based device (md, dm), the bios queued and
    each split's remainder ('X' at its sector / the remainder's), since
    every piece of a split completes on its own."""
    import numpy as np

    sector = issued["sector"].to_numpy()
    t = issued["time_ns"].to_numpy(dtype=np.float64) / 1e3
    if action == "Q":
        splits = ev[on_dev & (actions == "X")]
        order = np.argsort(np.concatenate([t, splits["time_ns"].to_numpy(dtype=np.float64) / 1e3]), kind="stable")
        sector = np.concatenate([sector, splits["arg"].to_numpy()])[order]
        t = np.concatenate([t, splits["time_ns"].to_numpy(dtype=np.float64) / 1e3])[order]
    return sector, t


def completion_starts(ev: Any, on_dev: Any, actions: Any, action: str, issued: Any, done: Any) -> tuple:
    """(start times, each completion's start): the times pieces begin (see
    :func:`starts_of`), and for each completion ('C') the start it pairs
    with, in µs; a completion whose start the trace lacks starts when it
    completes (its bytes count at that instant)."""
    import numpy as np

    start_sector, start_t = starts_of(ev, on_dev, actions, action, issued)
    done_t = done["time_ns"].to_numpy(dtype=np.float64) / 1e3
    began = pair_by_sector(start_sector, start_t, done["sector"].to_numpy())
    return start_t, np.where(np.isnan(began), done_t, began)
