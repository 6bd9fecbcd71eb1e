"""Plots of a run or a trace (matplotlib, drawn off screen with Agg).

For each device that issued requests (or, for md and dm devices, that
queued bios), from a :class:`blkstack.Result` -- a simulated run or a trace
read with :func:`blkstack.load_trace`:

``lba``
    Seekwatcher's picture: each request (bio on md/dm) at its time and
    start sector, with a vertical bar over the sectors it covers, coloured
    by operation (read, write, discard, flush).
``sizes``, ``seeks``
    The request-size and seek-distance histograms of the summary (log2
    buckets in KiB, as ``blkstack run --histograms`` prints them).
``depth``
    Requests in the driver over time: issued ('D') and not yet completed
    ('C'); on md/dm, bios queued and not yet completed.
``throughput``
    MB/s per time bin, by operation, each request's bytes spread evenly
    over its time in the device (issue to completion), so the rate does not
    alias with the bin width (:mod:`blkstack.timebins`).

A device whose trace has no completions (an md or dm trace without bio
``C`` events) has no depth or throughput plot.

:func:`compare_plots` overlays several runs of the same devices (before and
after a kernel change): LBA points, grouped histogram bars, depth and
throughput lines, one colour per run.
"""

from __future__ import annotations

import io
import os
import re
from typing import TYPE_CHECKING, Dict, List, NamedTuple, Sequence, Tuple

if TYPE_CHECKING:  # matplotlib and numpy load when a plot is drawn, not with the CLI
    import numpy as np
    from matplotlib.figure import Figure

PLOT_KINDS = ("lba", "sizes", "seeks", "depth", "throughput")
FORMATS = ("png", "svg")

# Operation colours (colour-blind friendly: Okabe-Ito).
OP_COLOURS = {"read": "#0072B2", "write": "#D55E00", "discard": "#009E73", "flush": "#7f7f7f",
              "other": "#CC79A7"}
OPS = tuple(OP_COLOURS)
RUN_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

# At most this many points per LBA plot (every k-th request beyond it).
MAX_POINTS = 200_000
# Vertical extent bars are drawn up to this many requests.
MAX_BARS = 50_000
# Queue depth steps beyond this many are reduced to the maximum per bin.
MAX_STEPS = 20_000
DEPTH_BINS = 2_000
THROUGHPUT_BINS = 100
# Histograms whose largest bucket is this many times the smallest use a log axis.
LOG_RATIO = 20

FIG_SIZE = (8.0, 4.5)
DPI = 100


class Plot(NamedTuple):
    """One figure: ``name`` is its file name without the extension
    (``lba-sda``), ``title`` a sentence for a report."""

    name: str
    title: str
    figure: Figure


class DeviceSeries(NamedTuple):
    """What the plots of one device need, times in seconds."""

    issue_t: np.ndarray
    issue_sector: np.ndarray
    issue_sectors: np.ndarray
    issue_op: np.ndarray  # index into OPS
    done_t: np.ndarray
    done_bytes: np.ndarray
    done_op: np.ndarray
    issue_action: str  # "D" (requests) or "Q" (bios on md/dm)
    done_start: np.ndarray  # when each completion's piece began (timebins.completion_starts)
    start_t: np.ndarray  # when pieces begin: the issues (and on md/dm each split's remainder)


def op_of(rwbs: str, nr_sectors: int = 1) -> str:
    """The operation an RWBS string stands for (a leading F before the op
    is a preflush; alone, or on an empty write, a flush)."""
    s = rwbs
    if s[:1] == "F" and s[1:2] in ("W", "R", "D", "F", "N"):
        if nr_sectors == 0 or s[1:2] == "F":
            return "flush"
        s = s[1:]
    return {"W": "write", "R": "read", "D": "discard", "F": "flush"}.get(s[:1], "other")


def _op_codes(frame) -> np.ndarray:
    """The OPS index of each row of an events frame (decided once per
    distinct RWBS string, empty or not)."""
    import numpy as np

    col = frame["rwbs"]
    if hasattr(col, "cat"):
        names, codes = [str(c) for c in col.cat.categories], col.cat.codes.to_numpy()
    else:
        uniq, codes = np.unique(col.astype(str).to_numpy(), return_inverse=True)
        names = [str(u) for u in uniq]
    # A missing RWBS (code -1) reads as the text "nan", as str() makes it.
    names.append("nan")
    table = np.array([[OPS.index(op_of(r, 1)), OPS.index(op_of(r, 0))] for r in names], dtype=np.int8)
    empty = (frame["nr_sectors"].to_numpy() == 0).astype(np.int64)
    return table[codes, empty] if len(frame) else np.empty(0, dtype=np.int8)


def device_series(result) -> Dict[str, DeviceSeries]:
    """Per device: its issued requests ('D'), or for a device that issues
    none (md, dm) its queued bios ('Q'), and its completions ('C')."""
    import numpy as np

    from blkstack.timebins import completion_starts

    ev = result.events
    out: Dict[str, DeviceSeries] = {}
    if ev.empty:
        return out
    actions = ev["action"].astype(str)
    for device in ev["device"].cat.categories:
        on_dev = ev["device"] == device
        issue_action = "D" if bool(((actions == "D") & on_dev).any()) else "Q"
        issued = ev[on_dev & (actions == issue_action)]
        if issued.empty:
            continue
        done = ev[on_dev & (actions == "C")]
        start_us, began_us = completion_starts(ev, on_dev, actions, issue_action, issued, done)
        out[str(device)] = DeviceSeries(
            issue_t=issued["time_ns"].to_numpy(dtype=np.float64) / 1e9,
            issue_sector=issued["sector"].to_numpy(),
            issue_sectors=issued["nr_sectors"].to_numpy(),
            issue_op=_op_codes(issued),
            done_t=done["time_ns"].to_numpy(dtype=np.float64) / 1e9,
            done_bytes=done["nr_sectors"].to_numpy(dtype=np.float64) * 512,
            done_op=_op_codes(done),
            issue_action=issue_action,
            done_start=began_us / 1e6,
            start_t=start_us / 1e6,
        )
    return out


# --------------------------------------------------------------------------
# Axes helpers


def _time_unit(end_s: float) -> Tuple[str, float]:
    for unit, scale in (("s", 1.0), ("ms", 1e3), ("µs", 1e6)):
        if end_s * scale >= 1.0 or unit == "µs":
            return unit, scale
    return "s", 1.0  # pragma: no cover


def _matplotlib():
    """matplotlib, drawing with Agg: never a display, whatever MPLBACKEND says."""
    import matplotlib

    matplotlib.use("Agg")
    return matplotlib


def _figure() -> Tuple[Figure, object]:
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIG_SIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _finish(fig: Figure, ax, title: str, subtitle: str) -> Figure:
    ax.set_title(f"{title}\n{subtitle}" if subtitle else title, fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def _kib_label(kib: int) -> str:
    if kib == 0:
        return "<1K"
    for unit, scale in (("G", 1 << 20), ("M", 1 << 10)):
        if kib >= scale:
            return f"{kib // scale}{unit}"
    return f"{kib}K"


def _duration(series: Sequence[DeviceSeries]) -> float:
    ends = [float(s.issue_t.max()) for s in series if len(s.issue_t)]
    ends += [float(s.done_t.max()) for s in series if len(s.done_t)]
    return max(ends) if ends else 0.0


def _thin(n: int) -> int:
    """Keep every k-th point so at most MAX_POINTS remain."""
    return max(1, -(-n // MAX_POINTS))


# --------------------------------------------------------------------------
# The five plots of one device; `runs` is [(label, series)], one or more.


def _lba(ax, runs: Sequence[Tuple[str, DeviceSeries]], scale: float) -> str:
    """Draw LBA points; returns a note on thinning, if any."""
    import numpy as np

    note = ""
    overlay = len(runs) > 1
    for i, (label, s) in enumerate(runs):
        k = _thin(len(s.issue_t))
        if k > 1:
            note = f" (every {k}th shown)"
        t, sec, n, op = (s.issue_t[::k] * scale, s.issue_sector[::k].astype(np.float64),
                         s.issue_sectors[::k].astype(np.float64), s.issue_op[::k])
        if overlay:
            groups = [(label, RUN_COLOURS[i % len(RUN_COLOURS)], np.ones(len(t), dtype=bool))]
        else:
            groups = [(name, OP_COLOURS[name], op == j) for j, name in enumerate(OPS)]
        for name, colour, mask in groups:
            if not mask.any():
                continue
            if mask.sum() <= MAX_BARS:
                ax.vlines(t[mask], sec[mask], sec[mask] + n[mask], colors=colour, linewidth=1.0,
                          alpha=0.6, rasterized=True)
            ax.scatter(t[mask], sec[mask], s=6 if not overlay else 8, color=colour, label=name,
                       marker="o" if i == 0 else "x", linewidths=0.8, alpha=0.8, rasterized=True)
    return note


def _hist_buckets(summary: dict, device: str, key: str) -> Dict[int, int]:
    h = ((summary.get("devices") or {}).get(device) or {}).get(key) or {}
    return {int(b["from_kb"]): int(b["count"]) for b in h.get("buckets", [])}


def _hist(ax, runs: Sequence[Tuple[str, Dict[int, int]]], what: str) -> None:
    import numpy as np

    keys = sorted({k for _, b in runs for k in b})
    # Drop leading and trailing empty buckets shared by every run.
    while keys and all(b.get(keys[-1], 0) == 0 for _, b in runs):
        keys.pop()
    x = np.arange(len(keys))
    width = 0.8 / max(1, len(runs))
    for i, (label, buckets) in enumerate(runs):
        counts = [buckets.get(k, 0) for k in keys]
        offset = (i - (len(runs) - 1) / 2) * width
        colour = RUN_COLOURS[i % len(RUN_COLOURS)] if len(runs) > 1 else "#0072B2"
        ax.bar(x + offset, counts, width=width, color=colour, label=label if len(runs) > 1 else None)
    ax.set_xticks(x)
    ax.set_xticklabels([_kib_label(k) for k in keys], rotation=45 if len(keys) > 12 else 0, fontsize=8)
    ax.set_xlabel(f"{what} (KiB bucket: from this size up to twice it)")
    counts = [c for _, b in runs for c in b.values() if c > 0]
    if counts and max(counts) > LOG_RATIO * min(counts):
        # A few requests beside thousands would not show on a linear axis.
        ax.set_yscale("log")
        ax.set_ylabel("requests (log scale)")
    else:
        ax.set_ylabel("requests")


def _depth_steps(s: DeviceSeries) -> Tuple[np.ndarray, np.ndarray]:
    """Times and in-flight counts after each start (+1) and completion (-1)."""
    from blkstack.timebins import depth_steps

    t, depth, _ = depth_steps(s.start_t, s.done_t)
    return t, depth


def _depth(ax, runs: Sequence[Tuple[str, DeviceSeries]], scale: float) -> None:
    """A step line; beyond MAX_STEPS steps, the mean per bin in a band from
    the least to the most in flight (timebins.depth_bins)."""
    import numpy as np

    from blkstack.timebins import depth_bins

    for i, (label, s) in enumerate(runs):
        t, depth = _depth_steps(s)
        if len(t) == 0:
            continue
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        tag = label if len(runs) > 1 else None
        if len(t) > MAX_STEPS:
            edges = np.linspace(0.0, float(t[-1]), DEPTH_BINS + 1)
            d = depth_bins(s.start_t, s.done_t, edges)
            ax.fill_between(edges * scale, np.append(d["lo"], d["lo"][-1]), np.append(d["hi"], d["hi"][-1]),
                            step="post", color=colour, alpha=0.2, linewidth=0)
            ax.stairs(d["mean"], edges * scale, color=colour, linewidth=1.0, label=tag)
        else:
            ax.step(np.concatenate([[0.0], t * scale]), np.concatenate([[0.0], depth]), where="post",
                    color=colour, linewidth=1.0, label=tag)
    ax.set_ylabel("in flight")
    ax.set_ylim(bottom=0)


def throughput_bins(runs: Sequence[Tuple[str, DeviceSeries]]) -> int:
    """About five completions a bin, from 10 to THROUGHPUT_BINS bins."""
    most = max((len(s.done_t) for _, s in runs), default=0)
    return int(min(THROUGHPUT_BINS, max(10, most // 5)))


def _throughput(ax, runs: Sequence[Tuple[str, DeviceSeries]], end_s: float, scale: float, bins: int) -> None:
    import numpy as np

    from blkstack.timebins import spread_bytes

    edges = np.linspace(0.0, end_s if end_s > 0 else 1e-9, bins + 1)
    width = edges[1] - edges[0]
    styles = ("-", "--", ":", "-.")
    for i, (label, s) in enumerate(runs):
        for j, name in enumerate(OPS):
            mask = s.done_op == j
            if not mask.any() or s.done_bytes[mask].sum() == 0:
                continue
            # Bytes spread over each piece's time in the device: no aliasing.
            mb = spread_bytes(s.done_start[mask], s.done_t[mask], s.done_bytes[mask], edges)
            if len(runs) > 1:  # a colour per run, a line style per operation
                tag, colour, style = f"{name} ({label})", RUN_COLOURS[i % len(RUN_COLOURS)], styles[j % len(styles)]
            else:
                tag, colour, style = name, OP_COLOURS[name], "-"
            ax.stairs(mb / width / 1e6, edges * scale, color=colour, linestyle=style, linewidth=1.2, label=tag)
    ax.set_ylabel("MB/s completed")
    ax.set_ylim(bottom=0)


def _device_plots(device: str, runs: Sequence[Tuple[str, DeviceSeries]],
                  hists: Sequence[Tuple[str, dict]], subtitle: str, prefix: str) -> List[Plot]:
    series = [s for _, s in runs]
    end_s = _duration(series)
    unit, scale = _time_unit(end_s)
    what = "requests" if series[0].issue_action == "D" else "bios queued"
    plots: List[Plot] = []

    fig, ax = _figure()
    note = _lba(ax, runs, scale)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("sector (LBA, 512 B)")
    ax.legend(loc="best", fontsize=8, markerscale=2)
    title = f"{device}: {what} by start sector over time{note}"
    plots.append(Plot(f"{prefix}lba-{device}", title, _finish(fig, ax, title, subtitle)))

    for kind, key, label in (("sizes", "size_histogram", "request size"), ("seeks", "seek_histogram", "seek distance")):
        buckets = [(lbl, _hist_buckets(summary, device, key)) for lbl, summary in hists]
        if not any(sum(b.values()) for _, b in buckets):
            continue
        fig, ax = _figure()
        _hist(ax, buckets, label)
        if len(buckets) > 1:
            ax.legend(fontsize=8)
        title = f"{device}: {label} of issued requests"
        plots.append(Plot(f"{prefix}{kind}-{device}", title, _finish(fig, ax, title, subtitle)))

    if not any(len(s.done_t) for s in series):
        # No completions (an md/dm trace without bio 'C' events): depth
        # would only rise and throughput stay empty; neither is drawn.
        return plots
    fig, ax = _figure()
    _depth(ax, runs, scale)
    ax.set_xlabel(f"time ({unit})")
    if len(runs) > 1:
        ax.legend(fontsize=8)
    title = f"{device}: {'requests in the driver' if what == 'requests' else 'bios in flight'} over time"
    plots.append(Plot(f"{prefix}depth-{device}", title, _finish(fig, ax, title, subtitle)))

    fig, ax = _figure()
    bins = throughput_bins(runs)
    _throughput(ax, runs, end_s, scale, bins)
    ax.set_xlabel(f"time ({unit}), {bins} bins")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    title = f"{device}: throughput completed over time"
    plots.append(Plot(f"{prefix}throughput-{device}", title, _finish(fig, ax, title, subtitle)))
    return plots


def describe(result) -> str:
    """A short label for what a result is: the scenario and kernel, or the trace."""
    s = result.summary
    if "trace" in s:
        return f"trace {os.path.basename(str(s['trace']))}"
    name = s.get("name") or os.path.basename(str(s.get("scenario", "")))
    return f"{name}, kernel {s.get('kernel')}"


def run_plots(result, prefix: str = "") -> List[Plot]:
    """Every plot of one run or trace, device by device."""
    plots: List[Plot] = []
    for device, series in device_series(result).items():
        plots += _device_plots(device, [("", series)], [("", result.summary)], describe(result), prefix)
    return plots


def compare_plots(runs: Sequence[Tuple[str, object]], prefix: str = "compare-") -> List[Plot]:
    """Overlays of several runs (label, result), for the devices they share."""
    per_run = [(label, device_series(r), r.summary) for label, r in runs]
    shared = [d for d in per_run[0][1] if all(d in s for _, s, _ in per_run[1:])] if per_run else []
    subtitle = " vs ".join(label for label, _ in runs)
    plots: List[Plot] = []
    for device in shared:
        plots += _device_plots(device, [(label, s[device]) for label, s, _ in per_run],
                               [(label, summary) for label, _, summary in per_run], subtitle, prefix)
    return plots


def render(fig: Figure, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes (SVG without a date, so files repeat)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown plot format {fmt!r} (png or svg)")
    buf = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": "blkstack (matplotlib)"}
    with _matplotlib().rc_context({"svg.hashsalt": "blkstack", "svg.fonttype": "path"}):
        fig.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue()


_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def file_name(name: str, fmt: str) -> str:
    """A plot's file name: characters outside [A-Za-z0-9._+-] become '_'
    (device names such as ``259,0`` or ``vg/lv``)."""
    return f"{_UNSAFE.sub('_', name)}.{fmt}"


def save_plots(plots: Sequence[Plot], out_dir: str, fmt: str = "png",
               write=None) -> List[str]:
    """Write each plot to OUT_DIR/NAME.FMT (atomically, with *write(path,
    data)*, by default :func:`blkstack.cli.common.write_atomic`); returns
    the paths."""
    if write is None:
        from blkstack.cli.common import write_atomic as write
    paths = []
    for p in plots:
        path = os.path.join(out_dir, file_name(p.name, fmt))
        write(path, render(p.figure, fmt))
        paths.append(path)
    return paths


def label_runs(labels: Sequence[str]) -> List[str]:
    """Labels made unique by a ``-2``, ``-3``... suffix, safe in file names."""
    seen: Dict[str, int] = {}
    out = []
    for label in labels:
        base = _UNSAFE.sub("_", label) or "run"
        n = seen.get(base, 0) + 1
        seen[base] = n
        out.append(base if n == 1 else f"{base}-{n}")
    return out


def close(plots: Sequence[Plot]) -> None:
    """Free the figures' memory (they hold no global state: no pyplot)."""
    for p in plots:
        p.figure.clear()

