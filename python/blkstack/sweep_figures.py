"""The figures a sweep keeps of each point: one row per device.

They are the figures ``blkstack compare`` shows (:func:`blkstack.comparison.device_figures`:
requests, mean size, merges, splits, zero-seek share, throughput, the iostat -x
columns), btt's D2C and Q2C latencies (mean, maximum, and the 50th, 90th, 99th
and 99.9th percentiles as fio computes them), and the run's
simulated and wall time. Worker processes call :func:`point_rows`; it needs
neither pandas nor pyarrow.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from blkstack.comparison import FIGURES, IOSTAT_COLUMNS, _compared_devices, device_figures

PERCENTILES = ("p50", "p90", "p99", "p99.9")
LATENCY_FIGURES = tuple(f"{stage}_{figure}_ms" for stage in ("d2c", "q2c") for figure in ("avg", "max") + PERCENTILES)
TIME_FIGURES = ("sim_time_s", "wall_s")
FIGURE_NAMES = tuple(k for k, _l, _u in FIGURES) + IOSTAT_COLUMNS + LATENCY_FIGURES + TIME_FIGURES

# Not a result of the model but a measurement of this run: left out when two
# sweeps are compared for equality.
MEASURED = ("wall_s",)


def latency_figures(dev: Dict[str, Any]) -> Dict[str, float]:
    btt = dev.get("btt") or {}
    percentiles = dev.get("latency_percentiles") or {}
    out = {}
    for stage in ("D2C", "Q2C"):
        vals = btt.get(stage) or {}
        out[f"{stage.lower()}_avg_ms"] = float(vals.get("avg_s", 0.0)) * 1e3
        out[f"{stage.lower()}_max_ms"] = float(vals.get("max_s", 0.0)) * 1e3
        tail = percentiles.get(stage) or {}
        for p in PERCENTILES:
            out[f"{stage.lower()}_{p}_ms"] = float(tail.get(f"{p}_s", 0.0)) * 1e3
    return out


def summary_rows(summary: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One dict per device with a queue of its own: ``device``, ``kind``,
    ``profile`` and every figure of :data:`FIGURE_NAMES`."""
    rows = []
    sim_s = float(summary.get("sim_time_ns", 0)) / 1e9
    for name in _compared_devices(summary):
        dev = summary["devices"][name]
        row: Dict[str, Any] = {"device": name, "kind": str(dev.get("kind", "")),
                               "profile": str(summary.get("profile", summary.get("kernel", "")))}
        row.update(device_figures(dev))
        row.update(latency_figures(dev))
        row["sim_time_s"] = sim_s
        row["wall_s"] = float(summary.get("wall_time_s", 0.0))
        rows.append(row)
    return rows


def point_rows(scenario: str, kernel: Optional[str], sets: Sequence[str]) -> Dict[str, Any]:
    """Run one point; ``{"rows": [...]}`` or ``{"error": message}`` (a bad
    combination is a result, not an exception)."""
    from blkstack import _core

    try:
        text = _core.run(scenario, kernel, list(sets), None, None, None, False, None)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # ScenarioError, CheckError, OSError, a panic
        return {"error": f"{type(exc).__name__}: {exc}".replace("\n", " ")}
    return {"rows": summary_rows(json.loads(text))}
