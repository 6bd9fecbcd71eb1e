"""A self-contained HTML report of one or more runs (or traces).

One file that opens offline: inline CSS, the timeline's script inline
(report_view.js, no library) with its data as a JSON block, and a
Content-Security-Policy that allows only that script (by its hash) and
forbids every other source, so nothing is fetched. Sections: a summary
with each md/dm array and its members together first, the interactive
timeline (a device picker; zoom and pan on time; hovering shows a
request), then per run the full ``iostat -x`` columns, queue limits, btt's
stage latencies and merge information and the size and seek histograms;
with several runs a comparison table; the scenario text.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence

from blkstack import plots as P

# The timeline's script may run (by hash, added per page); nothing else.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
VIEW_JS = Path(__file__).with_name("report_view.js")

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 80em; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }
th { background: #f0f0f0; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.array td { font-weight: bold; background: #f7f7ff; }
.wide { overflow-x: auto; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { width: 32em; max-width: 100%; border: 1px solid #eee; }
figure.chart { display: block; margin: 0.2em 0 0.8em; }
figure.chart svg { cursor: grab; user-select: none; display: block; }
figcaption { font-size: 0.8em; color: #555; max-width: 60em; }
.note { color: #555; font-size: 0.9em; }
nav a { margin-right: 1em; }
.toolbar { position: sticky; top: 0; background: #fff; padding: 0.4em 0; border-bottom: 1px solid #eee; z-index: 1; }
.toolbar select, .toolbar button { font-size: 0.95em; margin-right: 0.4em; }
#range { font-variant-numeric: tabular-nums; margin-left: 0.6em; }
#tip { position: absolute; display: none; background: #fffbe6; border: 1px solid #bba; padding: 0.3em 0.5em;
       font: 0.8em monospace; white-space: pre; pointer-events: none; z-index: 2; }
text.tick { font-size: 11px; fill: #444; } text.axis { font-size: 12px; fill: #222; }
text.legend { font-size: 11px; fill: #222; }
"""

# The queue limits shown per device (all are in the JSON summary).
LIMIT_KEYS = ("logical_block_size", "physical_block_size", "max_sectors_kb", "max_hw_sectors_kb",
              "max_segments", "max_segment_size", "chunk_sectors", "discard_granularity",
              "discard_max_bytes", "nr_requests", "scheduler", "rotational")
# sysstat's iostat -x columns, in its order.
IOSTAT_KEYS = ("r/s", "rkB/s", "rrqm/s", "%rrqm", "r_await", "rareq-sz", "w/s", "wkB/s", "wrqm/s", "%wrqm",
               "w_await", "wareq-sz", "d/s", "dkB/s", "drqm/s", "%drqm", "d_await", "dareq-sz", "f/s", "f_await",
               "aqu-sz", "%util")
STAGES = ("Q2Q", "Q2G", "G2I", "Q2M", "I2D", "D2C", "Q2C")


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return f"<td>{esc('-' if value is None else str(value).lower())}</td>"
    if isinstance(value, float):
        return f'<td class="n">{value:,.2f}</td>'
    if isinstance(value, int):
        return f'<td class="n">{value:,}</td>'
    return f"<td>{esc(value)}</td>"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], row_class: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    classes = list(row_class)
    body = "".join((f'<tr class="{classes[i]}">' if i < len(classes) and classes[i] else "<tr>")
                   + "".join(_cell(v) for v in row) + "</tr>" for i, row in enumerate(rows))
    return f'<div class="wide"><table><tr>{head}</tr>{body}</table></div>'


def _disks(summary: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Devices that are not partitions (partitions count on their disk)."""
    return {n: d for n, d in (summary.get("devices") or {}).items() if not d.get("partition_of")}


def run_order(result: Any) -> List[tuple]:
    """(device, role) of a run's disks: each array followed by its members,
    then the devices in no array."""
    from blkstack.report_data import array_order, run_groups

    return array_order(run_groups(result), list(_disks(result.summary)))


def summary_table(summary: Dict[str, Any], order: List[tuple]) -> str:
    """One row per device, arrays first with their members under them."""
    rows, classes = [], []
    for name, role in order:
        d = _disks(summary)[name]
        sectors = d.get("sectors") or d.get("sectors_issued") or {}
        io = d.get("iostat")  # absent when a trace has no completions for the device
        rows.append([name, role or "-", d.get("kind", "-"), f"{d.get('major')}:{d.get('minor')}",
                     d.get("bios_queued", "-"), d.get("splits", "-"), d.get("requests", 0),
                     sectors.get("read", 0) * 512 / 1e6, sectors.get("write", 0) * 512 / 1e6,
                     sectors.get("discard", 0) * 512 / 1e6, *(float(io.get(k, 0.0)) if io else None
                                                              for k in ("aqu-sz", "%util"))])
        classes.append("array" if role == "array" else "")
    return table(["device", "role", "kind", "maj:min", "bios queued", "splits", "requests", "MB read",
                  "MB written", "MB discarded", "aqu-sz", "%util"], rows, classes)


def limits_table(summary: Dict[str, Any], order: List[tuple]) -> str:
    devs = {n: _disks(summary)[n]["limits"] for n, _ in order if _disks(summary)[n].get("limits")}
    if not devs:
        return ""
    return table(["limit", *devs], [[k, *(lim.get(k, "-") for lim in devs.values())] for k in LIMIT_KEYS])


def iostat_table(summary: Dict[str, Any], order: List[tuple]) -> str:
    """``iostat -x``'s every column (sysstat's order), arrays first."""
    disks = _disks(summary)
    rows = [[n, *(float(disks[n]["iostat"].get(k, 0.0)) for k in IOSTAT_KEYS)]
            for n, _ in order if disks[n].get("iostat")]
    return table(["Device", *IOSTAT_KEYS], rows) if rows else ""


def btt_table(summary: Dict[str, Any], order: List[tuple]) -> str:
    rows = []
    disks = _disks(summary)
    for n, _ in order:
        for stage in STAGES:
            s = (disks[n].get("btt") or {}).get(stage)
            if s:
                rows.append([n, stage, s["min_s"] * 1e6, s["avg_s"] * 1e6, s["max_s"] * 1e6, int(s["n"])])
    return table(["device", "stage", "min (µs)", "avg (µs)", "max (µs)", "n"], rows) if rows else ""


def merge_table(summary: Dict[str, Any], order: List[tuple]) -> str:
    disks = _disks(summary)
    rows = [[n, m["q"], m["d"], float(m["ratio"]), m["blkmin"], m["blkavg"], m["blkmax"], m["total"]]
            for n, _ in order for m in [disks[n].get("merge_info")] if m and m.get("d")]
    return table(["device", "#Q", "#D", "ratio", "blk min", "blk avg", "blk max", "total (sectors)"],
                 rows) if rows else ""


def histogram_table(summary: Dict[str, Any], order: List[tuple], key: str) -> str:
    """A log2 histogram of the summary (request sizes or seek distances),
    a column per device."""
    from blkstack.plots import _kib_label

    disks = _disks(summary)
    cols: Dict[str, Dict[int, int]] = {}
    for n, _ in order:
        buckets = (disks[n].get(key) or {}).get("buckets") or []
        if any(int(b["count"]) for b in buckets):
            cols[n] = {int(b["from_kb"]): int(b["count"]) for b in buckets}
    if not cols:
        return ""
    keys = sorted({k for c in cols.values() for k in c if c[k]})
    return table(["KiB from", *cols], [[_kib_label(k), *(c.get(k, 0) for c in cols.values())] for k in keys])


def figure_html(plot: P.Plot, fmt: str) -> str:
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    data = base64.b64encode(P.render(plot.figure, fmt)).decode("ascii")
    return (f'<figure><img alt="{esc(plot.title)}" src="data:{mime};base64,{data}">'
            f"<figcaption>{esc(plot.title)}</figcaption></figure>")


def _figures(plots: Sequence[P.Plot], fmt: str) -> str:
    out = "\n".join(figure_html(p, fmt) for p in plots)
    P.close(plots)
    return out


def run_note(result: Any) -> str:
    s = result.summary
    if "trace" in s:
        bad = len(s.get("bad_lines") or [])
        return (f'<p class="note">Trace {esc(s["trace"])} ({esc(s.get("format"))}): '
                f'{s.get("events", 0):,} events over {s.get("duration_ns", 0) / 1e6:,.3f} ms; '
                f'{bad:,} bad lines skipped.</p>')
    return (f'<p class="note">Profile {esc(s.get("profile"))} (kernel {esc(s.get("kernel"))}), '
            f'simulated {s.get("sim_time_ns", 0) / 1e6:,.3f} ms, {s.get("bios", 0):,} bios.</p>')


def summary_section(runs: Sequence[Any]) -> str:
    parts = ['<h2 id="summary">Summary</h2>']
    for r in runs:
        parts.append(f"<h3>{esc(r.label)}: {esc(P.describe(r.result))}</h3>{run_note(r.result)}")
        parts.append(summary_table(r.result.summary, run_order(r.result)))
        for w in r.result.summary.get("warnings") or []:
            parts.append(f'<p class="note">warning: {esc(w)}</p>')
    return "\n".join(parts)


def timeline_section(runs: Sequence[Any]) -> tuple:
    """The interactive timeline: (HTML, script). The data goes in a JSON
    block the script reads; '</' is escaped so it cannot end the block."""
    from blkstack.report_data import timeline

    data = json.dumps(timeline(runs), separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    body = ('<h2 id="timeline">Timeline</h2>\n'
            '<div class="toolbar"><label>view <select id="view"></select></label>'
            '<button id="zoom-in" type="button">zoom in</button><button id="zoom-out" type="button">zoom out'
            '</button><button id="zoom-reset" type="button">whole run</button><span id="range"></span></div>\n'
            '<p class="note">Wheel over a chart zooms time around the pointer, dragging pans, a double click shows '
            'the whole run; hover a point for its request, a line for its values.</p>\n'
            '<p id="view-note" class="note"></p><div id="charts"></div><div id="tip"></div>\n'
            f'<script type="application/json" id="blkstack-data">{data}</script>')
    return body, VIEW_JS.read_text(encoding="utf-8")


def details_section(anchor: str, r: Any) -> str:
    s, order = r.result.summary, run_order(r.result)
    parts = [f'<h2 id="{esc(anchor)}">{esc(r.label)}: {esc(P.describe(r.result))}</h2>']
    for title, block in (("iostat -x", iostat_table(s, order)), ("Queue limits", limits_table(s, order)),
                         ("btt stage latencies", btt_table(s, order)),
                         ("Device merge information", merge_table(s, order)),
                         ("Request sizes (issued requests per log2 bucket)", histogram_table(s, order, "size_histogram")),
                         ("Seek distances (per log2 bucket)", histogram_table(s, order, "seek_histogram"))):
        if block:
            parts.append(f"<h3>{esc(title)}</h3>{block}")
    return "\n".join(parts)


def compare_section(runs: Sequence[Any]) -> str:
    rows = []
    for r in runs:
        s = r.result.summary
        for n, _ in run_order(r.result):
            d = _disks(s)[n]
            io = d.get("iostat") or {}
            reqs = d.get("requests", 0)
            sectors = sum((d.get("sectors_issued") or {}).values())
            rows.append([r.label, n, reqs, (sectors / 2 / reqs) if reqs else 0.0,
                         float(io.get("r/s", 0.0)), float(io.get("w/s", 0.0)),
                         float(io.get("rkB/s", 0.0)) + float(io.get("wkB/s", 0.0)), float(io.get("aqu-sz", 0.0)),
                         float(io.get("%util", 0.0))])
    return "\n".join(['<h2 id="compare">Comparison</h2>',
                      table(["run", "device", "requests", "mean request (KiB)", "r/s", "w/s", "kB/s", "aqu-sz",
                             "%util"], rows),
                      '<p class="note">The timeline\'s "all runs" views overlay each device\'s runs.</p>'])


def build(runs: Sequence[Any]) -> str:
    """The report of *runs* (``blkstack.cli.inputs.Run``) as one HTML page."""
    title = "blkstack report: " + ", ".join(dict.fromkeys(P.describe(r.result).split(",")[0] for r in runs))
    nav = ['<a href="#summary">summary</a>', '<a href="#timeline">timeline</a>']
    nav += ['<a href="#%s">%s</a>' % (f"run-{i}", esc(r.label)) for i, r in enumerate(runs)]
    if len(runs) > 1:
        nav.append('<a href="#compare">comparison</a>')
    nav.append('<a href="#sources">scenario</a>')
    body: List[str] = [f"<h1>{esc(title)}</h1>", "<nav>" + "".join(nav) + "</nav>", summary_section(runs)]
    timeline_html, script = timeline_section(runs)
    body.append(timeline_html)
    if len(runs) > 1:
        body.append(compare_section(runs))
    for i, r in enumerate(runs):
        body.append(details_section(f"run-{i}", r))
    body.append('<h2 id="sources">Scenario</h2>')
    shown = set()
    for r in runs:
        if r.path in shown:
            continue
        shown.add(r.path)
        if r.source:
            body.append(f"<h3>{esc(r.path)}</h3><pre>{esc(r.source)}</pre>")
        else:
            body.append(f'<p class="note">{esc(r.path)} is a trace: no scenario.</p>')
    return page(title, body, script)


def script_hash(script: str) -> str:
    """The CSP source that lets exactly this inline script run."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


def page(title: str, body: Sequence[str], script: str = "") -> str:
    csp = CSP + (f"; script-src {script_hash(script)}" if script else "")
    tail = f"\n<script>{script}</script>" if script else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + tail + "\n</body>\n</html>\n")


# ---------------------------------------------------------------------------
# A sweep table (blkstack sweep)

# Devices and axis pairs drawn at most, so a wide sweep stays readable.
SWEEP_DEVICES = 4
SWEEP_HEAT_MAPS = 3


def _cell_value(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and value != value else value


def sweep_section(frame: Any, path: str, fmt: str, figure: str) -> str:
    """Figure-against-axis lines (one line per kernel when it is an axis),
    heat maps over pairs of axes, the best point per group, the failures."""
    from itertools import combinations

    from blkstack import sweep_plots as SP

    axes = SP.axis_columns(frame)
    failed = frame[frame["error"].notna()]
    points = frame["point"].nunique()
    parts = [f'<h2 id="sweep">Sweep {esc(path)}</h2>',
             f'<p class="note">{points:,} points, {failed["point"].nunique():,} failed; '
             f'{len(frame):,} rows. Plotted: {esc(figure)} ({"lower" if SP.lower_is_better(figure) else "higher"} '
             "is better); points that differ in axes not drawn are averaged.</p>",
             table(["axis", "values"], [[a, ", ".join(str(v) for v in SP._order(frame[a]))] for a in axes])]
    devices = SP._order(frame["device"].dropna())[:SWEEP_DEVICES]
    hue = "kernel" if "kernel" in axes else None
    for dev in devices:
        plots = [SP.line_plot(frame, a, figure, hue if a != hue else None, device=dev) for a in axes]
        pairs = [(x, y) for x, y in combinations(axes, 2)
                 if frame[x].nunique() > 1 and frame[y].nunique() > 1][:SWEEP_HEAT_MAPS]
        plots += [SP.heat_map(frame, x, y, figure, dev) for x, y in pairs]
        parts.append(f"<h3>{esc(dev)}</h3>" + _figures(plots, fmt))
        group = [hue] if hue else []
        best = SP.best_points(frame[frame["device"] == dev], figure, group or ["device"])
        cols = ["point", *axes, figure]
        parts.append(f"<p>Best point{' per ' + hue if hue else ''} on {esc(dev)}:</p>" +
                     table(cols, [[_cell_value(r[c]) for c in cols] for _, r in best.iterrows()]))
    if len(failed):
        cols = ["point", *axes, "error"]
        parts.append("<h3>Failed points</h3>" + table(
            cols, [[_cell_value(r[c]) for c in cols] for _, r in failed.head(50).iterrows()]))
    return "\n".join(parts)


def build_sweep(frame: Any, path: str, fmt: str = "svg", figure: str = "throughput_mb_s") -> str:
    """The report of a sweep table as one HTML page."""
    title = f"blkstack sweep report: {path}"
    return page(title, [f"<h1>{esc(title)}</h1>", sweep_section(frame, path, fmt, figure)])
