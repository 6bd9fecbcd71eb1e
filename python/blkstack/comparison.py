"""Side-by-side comparison of two runs of one scenario.

A run's JSON summary (``_core.run``) has, per device, the iostat -x figures,
the diskstats counters and the seek histogram. :func:`device_figures` turns
one device of it into the figures a comparison shows; :func:`compare_runs`
pairs two summaries device by device; :func:`format_comparison` prints
them as a table with the changes marked.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing would cost every command's start
    from typing import Any, Dict, List, Optional, Sequence, Tuple

# diskstats fields (Documentation/admin-guide/iostats.rst): merges of reads,
# writes and discards.
_MERGE_FIELDS = (1, 5, 12)

# iostat -x columns shown when either side has a non-zero value.
IOSTAT_COLUMNS = ("r/s", "rMB/s", "rrqm/s", "%rrqm", "r_await", "rareq-sz",
                  "w/s", "wMB/s", "wrqm/s", "%wrqm", "w_await", "wareq-sz",
                  "d/s", "dMB/s", "d_await", "dareq-sz", "f/s", "aqu-sz", "%util")

# Figures of every compared device, in table order: key, label, unit.
FIGURES: Tuple[Tuple[str, str, str], ...] = (
    ("requests", "requests issued", ""),
    ("mean_request_kib", "mean request size", "KiB"),
    ("merges", "merges", ""),
    ("bios_queued", "bios queued", ""),
    ("splits", "splits", ""),
    ("zone_write_errors", "zone write errors", ""),
    ("zone_wplug_errors", "  failed by zone write plugging", ""),
    ("zones_out_of_order", "zones written out of order", ""),
    ("zero_seek_pct", "zero-seek share", "%"),
    ("throughput_mb_s", "throughput", "MB/s"),
)

# A change smaller than this (relative) is not marked.
_NOISE = 0.005


def _mb(kb: float) -> float:
    """iostat's -m: kB/s (1024 bytes) to MB/s (1024 kB)."""
    return kb / 1024.0


def device_figures(dev: Dict[str, Any]) -> Dict[str, float]:
    """The compared figures of one device of a run summary."""
    requests = int(dev.get("requests") or 0)
    sectors = sum((dev.get("sectors_issued") or {}).values())
    stats = dev.get("diskstats") or []
    seeks = dev.get("seek_histogram") or {}
    io = dev.get("iostat") or {}
    figures: Dict[str, float] = {
        "requests": requests,
        "mean_request_kib": sectors / 2.0 / requests if requests else 0.0,
        "merges": sum(stats[i] for i in _MERGE_FIELDS if i < len(stats)),
        "bios_queued": int(dev.get("bios_queued") or 0),
        "splits": int(dev.get("splits") or 0),
        # Host-managed zoned disks only: writes failed for their zone (by
        # zone write plugging before the disk, or by the disk), and zones
        # whose writes were submitted out of sector order.
        "zone_write_errors": int(dev.get("zone_write_errors") or 0),
        "zone_wplug_errors": int(dev.get("zone_wplug_errors") or 0),
        "zones_out_of_order": int(dev.get("zones_out_of_order") or 0),
        "zero_seek_pct": 100.0 * seeks.get("zero", 0) / seeks["count"] if seeks.get("count") else 0.0,
        # Bytes moved per second as iostat counts them (md and dm devices
        # issue no requests of their own but account their bios).
        "throughput_mb_s": sum(float(io.get(c, 0.0)) for c in ("rkB/s", "wkB/s", "dkB/s")) * 1024 / 1e6,
    }
    for col in IOSTAT_COLUMNS:
        if col.endswith("MB/s"):
            figures[col] = _mb(float(io.get(col[0] + "kB/s", 0.0)))
        else:
            figures[col] = float(io.get(col, 0.0))
    return figures


def zone_errors_text(dev: Dict[str, Any]) -> str:
    """'48 zone write errors (48 failed by zone write plugging)' for a zoned
    disk of a run summary: where they failed, before the disk or in it."""
    errors = int(dev.get("zone_write_errors") or 0)
    plug = int(dev.get("zone_wplug_errors") or 0)
    parts = [f"{n:,} {where}" for n, where in ((plug, "failed by zone write plugging"),
                                               (errors - plug, "refused by the disk")) if n]
    return f"{errors:,} zone write errors" + (f" ({', '.join(parts)})" if parts else "")


def zone_order_text(dev: Dict[str, Any]) -> str:
    """'writes submitted out of order in 8 of 8 zones written' for a zoned
    disk of a run summary: the order its write bios came in (after
    splitting), which with zone write plugging the issued requests no
    longer show."""
    bad, zones = int(dev.get("zones_out_of_order") or 0), int(dev.get("zones_written") or 0)
    if bad:
        return f"writes submitted out of order in {bad} of {zones} zones written"
    return f"writes submitted in order in all {zones} zones written" if zones else "no sequential zone written"


def _compared_devices(summary: Dict[str, Any]) -> List[str]:
    """Devices with a queue of their own (partitions count on their disk)."""
    return [name for name, dev in (summary.get("devices") or {}).items() if "iostat" in dev]


def compare_runs(before: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
    """Pair two run summaries of one scenario, device by device."""
    t_before = before.get("sim_time_ns", 0) / 1e9
    t_after = after.get("sim_time_ns", 0) / 1e9
    devices = {}
    for name in _compared_devices(before):
        if name not in (after.get("devices") or {}):
            continue
        devices[name] = {
            "before": device_figures(before["devices"][name]),
            "after": device_figures(after["devices"][name]),
        }
    return {
        "elapsed_s": {"before": t_before, "after": t_after},
        "devices": devices,
    }


def change(before: float, after: float) -> Optional[float]:
    """Relative change from *before* to *after* (None when before is 0)."""
    if before == 0:
        return None if after == 0 else float("inf")
    return (after - before) / abs(before)


def fmt_figure(value: Optional[float], unit: str = "") -> str:
    """A figure for a table: thousands separated, '-' when unknown."""
    if value is None:
        return "-"
    if float(value).is_integer():
        text = f"{int(value):,}"
    elif abs(value) >= 100:
        text = f"{value:,.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}".rstrip()


def _fmt_change(before: float, after: float) -> Tuple[str, bool]:
    """The change column, and whether the row is marked as changed."""
    rel = change(before, after)
    if rel is None:
        return "", False
    if rel == float("inf"):
        return "new", True
    if abs(rel) < _NOISE:
        return "=", False
    return f"{rel * 100:+.1f}%", True


def _rows(pair: Dict[str, Dict[str, float]]) -> List[Tuple[str, str, str, str, bool]]:
    b, a = pair["before"], pair["after"]
    rows = []
    for key, label, unit in FIGURES:
        if b[key] == 0 and a[key] == 0:
            continue
        text, marked = _fmt_change(b[key], a[key])
        rows.append((label, fmt_figure(b[key], unit), fmt_figure(a[key], unit), text, marked))
    for col in IOSTAT_COLUMNS:
        if b[col] == 0 and a[col] == 0:
            continue
        text, marked = _fmt_change(b[col], a[col])
        rows.append((f"iostat {col}", fmt_figure(b[col]), fmt_figure(a[col]), text, marked))
    return rows


def format_comparison(result: Dict[str, Any], labels: Sequence[str], devices: Optional[Sequence[str]] = None) -> str:
    """The side-by-side table; rows that changed start with '*'."""
    before_label, after_label = labels
    lines: List[str] = []
    table: List[Tuple[str, str, str, str, bool]] = []
    t = result["elapsed_s"]
    text, marked = _fmt_change(t["before"], t["after"])
    table.append(("elapsed (simulated)", fmt_figure(t["before"], "s"), fmt_figure(t["after"], "s"), text, marked))
    names = list(devices) if devices else list(result["devices"])
    sections = [(name, _rows(result["devices"][name])) for name in names if name in result["devices"]]
    w0 = max([len(r[0]) for _, rows in sections for r in rows] + [len(table[0][0]), 8]) + 2
    w1 = max([len(r[1]) for _, rows in sections for r in rows] + [len(table[0][1]), len(before_label)])
    w2 = max([len(r[2]) for _, rows in sections for r in rows] + [len(table[0][2]), len(after_label)])

    def line(row: Tuple[str, str, str, str, bool]) -> str:
        mark = "*" if row[4] else " "
        return f"{mark} {row[0]:<{w0}}{row[1]:>{w1}}  {row[2]:>{w2}}  {row[3]}".rstrip()

    lines.append(f"  {'':<{w0}}{before_label:>{w1}}  {after_label:>{w2}}  change")
    lines.append(line(table[0]))
    for name, rows in sections:
        lines.append("")
        lines.append(f"  {name}")
        lines += [line(("  " + r[0],) + r[1:]) for r in rows]  # type: ignore[arg-type]
    lines.append("")
    lines.append("  '*' marks a figure that changed by 0.5% or more; MB/s are 10^6 bytes for throughput, "
                 "iostat's MiB/s for its columns.")
    return "\n".join(lines)
