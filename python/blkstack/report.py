"""A self-contained HTML report of one or more runs (or traces).

One file: inline CSS, plots inlined as ``data:`` images (SVG or PNG), no
scripts and nothing fetched -- a Content-Security-Policy forbids any other
source, so a browser renders it offline exactly as written. Sections: the
summary per device, queue limits, ``iostat -x``, btt's stage latencies and
merge information, the plots of each device, with several runs a
comparison table and before/after overlays, and the scenario text.
"""

from __future__ import annotations

import base64
import html
from typing import Any, Dict, Iterable, List, Sequence

from blkstack import plots as P

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }
th { background: #f0f0f0; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { width: 32em; max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.8em; color: #555; max-width: 45em; }
.note { color: #555; font-size: 0.9em; }
nav a { margin-right: 1em; }
"""

# The queue limits shown per device (all are in the JSON summary).
LIMIT_KEYS = ("logical_block_size", "physical_block_size", "max_sectors_kb", "max_hw_sectors_kb",
              "max_segments", "max_segment_size", "chunk_sectors", "discard_granularity",
              "discard_max_bytes", "nr_requests", "scheduler", "rotational")
IOSTAT_KEYS = ("r/s", "rkB/s", "rrqm/s", "r_await", "rareq-sz", "w/s", "wkB/s", "wrqm/s", "w_await",
               "wareq-sz", "d/s", "dkB/s", "d_await", "f/s", "f_await", "aqu-sz", "%util")
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


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _disks(summary: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Devices that are not partitions (partitions count on their disk)."""
    return {n: d for n, d in (summary.get("devices") or {}).items() if not d.get("partition_of")}


def summary_table(summary: Dict[str, Any]) -> str:
    rows = []
    for name, d in _disks(summary).items():
        sectors = d.get("sectors") or d.get("sectors_issued") or {}
        rows.append([name, d.get("kind", "-"), f"{d.get('major')}:{d.get('minor')}", d.get("bios_queued", "-"),
                     d.get("splits", "-"), d.get("requests", 0), sectors.get("read", 0), sectors.get("write", 0),
                     sectors.get("discard", 0)])
    return table(["device", "kind", "maj:min", "bios queued", "splits", "requests", "sectors read",
                  "sectors written", "sectors discarded"], rows)


def limits_table(summary: Dict[str, Any]) -> str:
    devs = {n: d["limits"] for n, d in _disks(summary).items() if d.get("limits")}
    if not devs:
        return ""
    return table(["limit", *devs], [[k, *(lim.get(k, "-") for lim in devs.values())] for k in LIMIT_KEYS])


def iostat_table(summary: Dict[str, Any]) -> str:
    rows = [[n, *(float(d["iostat"].get(k, 0.0)) for k in IOSTAT_KEYS)]
            for n, d in _disks(summary).items() if d.get("iostat")]
    return table(["device", *IOSTAT_KEYS], rows) if rows else ""


def btt_table(summary: Dict[str, Any]) -> str:
    rows = []
    for n, d in _disks(summary).items():
        for stage in STAGES:
            s = (d.get("btt") or {}).get(stage)
            if s:
                rows.append([n, stage, s["min_s"] * 1e6, s["avg_s"] * 1e6, s["max_s"] * 1e6, int(s["n"])])
    return table(["device", "stage", "min (µs)", "avg (µs)", "max (µs)", "n"], rows) if rows else ""


def merge_table(summary: Dict[str, Any]) -> str:
    rows = [[n, m["q"], m["d"], float(m["ratio"]), m["blkmin"], m["blkavg"], m["blkmax"], m["total"]]
            for n, d in _disks(summary).items() for m in [d.get("merge_info")] if m and m.get("d")]
    return table(["device", "#Q", "#D", "ratio", "blk min", "blk avg", "blk max", "total (sectors)"],
                 rows) if rows else ""


def figure_html(plot: P.Plot, fmt: str) -> str:
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    data = base64.b64encode(P.render(plot.figure, fmt)).decode("ascii")
    return (f'<figure><img alt="{esc(plot.title)}" src="data:{mime};base64,{data}">'
            f"<figcaption>{esc(plot.title)}</figcaption></figure>")


def _figures(plots: Sequence[P.Plot], fmt: str) -> str:
    out = "\n".join(figure_html(p, fmt) for p in plots)
    P.close(plots)
    return out


def run_section(anchor: str, label: str, result, source: str, fmt: str) -> str:
    s = result.summary
    parts = [f'<h2 id="{esc(anchor)}">{esc(label)}: {esc(P.describe(result))}</h2>']
    if "trace" in s:
        bad = len(s.get("bad_lines") or [])
        parts.append(f'<p class="note">Trace {esc(s["trace"])} ({esc(s.get("format"))} text): '
                     f'{s.get("events", 0):,} events over {s.get("duration_ns", 0) / 1e6:,.3f} ms; '
                     f'{bad:,} bad lines skipped.</p>')
    else:
        parts.append(f'<p class="note">Profile {esc(s.get("profile"))} (kernel {esc(s.get("kernel"))}), '
                     f'simulated {s.get("sim_time_ns", 0) / 1e6:,.3f} ms, {s.get("bios", 0):,} bios.</p>')
    parts.append("<h3>Devices</h3>" + summary_table(s))
    for title, block in (("Queue limits", limits_table(s)), ("iostat -x", iostat_table(s)),
                         ("btt stage latencies", btt_table(s)), ("Device merge information", merge_table(s))):
        if block:
            parts.append(f"<h3>{esc(title)}</h3>{block}")
    figures = _figures(P.run_plots(result), fmt)
    if figures:
        parts.append("<h3>Plots</h3>" + figures)
    return "\n".join(parts)


def compare_section(runs: Sequence[Any], fmt: str) -> str:
    rows = []
    for r in runs:
        s = r.result.summary
        for n, d in _disks(s).items():
            io = d.get("iostat") or {}
            reqs = d.get("requests", 0)
            sectors = sum((d.get("sectors_issued") or {}).values())
            rows.append([r.label, n, reqs, (sectors / 2 / reqs) if reqs else 0.0,
                         float(io.get("r/s", 0.0)), float(io.get("w/s", 0.0)),
                         float(io.get("rkB/s", 0.0)) + float(io.get("wkB/s", 0.0)), float(io.get("aqu-sz", 0.0)),
                         float(io.get("%util", 0.0))])
    parts = ['<h2 id="compare">Comparison</h2>',
             table(["run", "device", "requests", "mean request (KiB)", "r/s", "w/s", "kB/s", "aqu-sz", "%util"],
                   rows)]
    figures = _figures(P.compare_plots([(r.label, r.result) for r in runs]), fmt)
    if figures:
        parts.append("<h3>Overlays</h3>" + figures)
    return "\n".join(parts)


def build(runs: Sequence[Any], fmt: str = "svg") -> str:
    """The report of *runs* (``blkstack.cli.inputs.Run``) as one HTML page."""
    title = "blkstack report: " + ", ".join(dict.fromkeys(P.describe(r.result).split(",")[0] for r in runs))
    nav = ['<a href="#%s">%s</a>' % (f"run-{i}", esc(r.label)) for i, r in enumerate(runs)]
    body: List[str] = [f"<h1>{esc(title)}</h1>"]
    if len(runs) > 1:
        nav.append('<a href="#compare">comparison</a>')
    nav.append('<a href="#sources">scenario</a>')
    body.append("<nav>" + "".join(nav) + "</nav>")
    if len(runs) > 1:
        body.append(compare_section(runs, fmt))
    for i, r in enumerate(runs):
        body.append(run_section(f"run-{i}", r.label, r.result, r.source, fmt))
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
    return page(title, body)


def page(title: str, body: Sequence[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


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
