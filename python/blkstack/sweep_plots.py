"""Plots of a sweep table (matplotlib, Agg): a figure against an axis, and
heat maps of a figure over two axes.

Points that share the plotted axes but differ in others are averaged (the
subtitle says over how many). The best point of each line (highest, or
lowest for latencies and times) is marked with a star; the best cell of a
heat map is outlined.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Sequence

from blkstack.plots import RUN_COLOURS, Plot, _figure, _finish

# Figures where less is better; for every other, more is.
LOWER_IS_BETTER = ("await", "_ms", "time_s", "wall_s", "splits", "aqu-sz", "%util", "zone")


def lower_is_better(figure: str) -> bool:
    return any(k in figure for k in LOWER_IS_BETTER)


def axis_columns(table: Any) -> List[str]:
    """The sweep's axes: the columns between ``point`` and ``device``."""
    cols = list(table.columns)
    return cols[cols.index("point") + 1:cols.index("device")] if "device" in cols else []


def _ok(table: Any, device: Optional[str]) -> Any:
    ok = table[table["error"].isna()]
    return ok[ok["device"] == device] if device is not None else ok


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def _size_key(value: Any) -> Optional[Any]:
    """A sort key: a number; a version ("6.12") as its parts; a size as
    scenarios write one ("64KiB", "4480k", "1M") in KiB."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (float(value),)
    text = str(value)
    if re.fullmatch(r"\d+(\.\d+)+", text):
        return tuple(int(p) for p in text.split("."))
    m = _SIZE.match(text)
    if not m:
        return None
    unit = m.group(2).lower()
    return (float(m.group(1)) * (1024.0 ** "kmgt".index(unit) if unit else 1 / 1024),)


def _order(values: Sequence[Any]) -> List[Any]:
    """Distinct values in order: by number, version or size when all are one."""
    distinct = list(dict.fromkeys(values))
    keys = [_size_key(v) for v in distinct]
    if all(k is not None for k in keys):
        try:
            return [v for _k, v in sorted(zip(keys, distinct), key=lambda kv: kv[0])]
        except TypeError:
            pass
    return sorted(distinct, key=str)


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def line_plot(table: Any, x: str, y: str, hue: Optional[str] = None, facet_value: Any = None,
              facet: Optional[str] = None, device: Optional[str] = None) -> Plot:
    """*y* against *x*, one line per *hue* value, averaged over the rest."""
    rows = _ok(table, device)
    if facet is not None:
        rows = rows[rows[facet] == facet_value]
    groups = [(None, rows)] if hue is None else [(h, rows[rows[hue] == h]) for h in _order(rows[hue])]
    fig, ax = _figure()
    xs = _order(rows[x])
    numeric = _numeric(xs)
    low = lower_is_better(y)
    for i, (h, g) in enumerate(groups):
        mean = g.groupby(x)[y].mean()
        vals = [mean.get(v) for v in xs]
        pos = [float(v) for v in xs] if numeric else list(range(len(xs)))
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        ax.plot(pos, vals, marker="o", color=colour, label=None if h is None else f"{hue} = {h}")
        present = [(p, v) for p, v in zip(pos, vals) if v is not None and v == v]
        if present:
            bp, bv = (min if low else max)(present, key=lambda pv: pv[1])
            ax.plot([bp], [bv], marker="*", markersize=16, color=colour, markeredgecolor="black")
    if not numeric:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(v) for v in xs], rotation=30)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if hue is not None:
        ax.legend(fontsize=8)
    averaged = max(1, len(rows) // max(1, len(xs) * len(groups)))
    where = " ".join(s for s in (f"device {device}" if device else "",
                                 f"{facet} = {facet_value}" if facet else "") if s)
    subtitle = f"{where}; " if where else ""
    subtitle += f"mean of {averaged} points each; star: best ({'lowest' if low else 'highest'})"
    name = "sweep-" + "-".join(str(s) for s in (y, "vs", x, hue and f"by-{hue}", facet and f"{facet}-{facet_value}",
                                                 device) if s)
    return Plot(name, f"{y} against {x}", _finish(fig, ax, f"{y} against {x}", subtitle))


def heat_map(table: Any, x: str, y_axis: str, figure: str, device: Optional[str] = None) -> Plot:
    """*figure* over two axes (mean over the others), best cell outlined."""
    import numpy as np

    rows = _ok(table, device)
    xs, ys = _order(rows[x]), _order(rows[y_axis])
    mean = rows.groupby([y_axis, x])[figure].mean()
    grid = np.full((len(ys), len(xs)), np.nan)
    for i, yv in enumerate(ys):
        for j, xv in enumerate(xs):
            grid[i, j] = mean.get((yv, xv), np.nan)
    fig, ax = _figure()
    image = ax.imshow(grid, aspect="auto", origin="lower", cmap="viridis")
    fig.colorbar(image, ax=ax, label=figure)
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([str(v) for v in xs], rotation=30)
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([str(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y_axis)
    if np.isfinite(grid).any():
        flat = np.nanargmin(grid) if lower_is_better(figure) else np.nanargmax(grid)
        bi, bj = divmod(int(flat), len(xs))
        from matplotlib.patches import Rectangle
        ax.add_patch(Rectangle((bj - 0.5, bi - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5))
    name = f"sweep-heat-{figure}-{y_axis}-{x}" + (f"-{device}" if device else "")
    subtitle = (f"device {device}; " if device else "") + "outlined: best cell"
    fig = _finish(fig, ax, f"{figure} over {x} and {y_axis}", subtitle)
    ax.grid(False)
    return Plot(name, f"{figure} over {x} and {y_axis}", fig)


def sweep_plots(table: Any, x: str, y: str, hue: Optional[str] = None, facet: Optional[str] = None,
                device: Optional[str] = None) -> List[Plot]:
    """``blkstack plot``'s figures of a sweep: one per device (or *device*),
    and per *facet* value."""
    devices = [device] if device else _order(table["device"].dropna())
    facets = _order(table[facet]) if facet else [None]
    return [line_plot(table, x, y, hue, f, facet, d) for d in devices for f in facets]


def best_points(table: Any, figure: str, group: Sequence[str]) -> Any:
    """The best row (by *figure*) of each group of rows."""
    rows = table[table["error"].isna()]
    if rows.empty:
        return rows
    pick = rows.groupby(list(group))[figure].idxmin if lower_is_better(figure) else \
        rows.groupby(list(group))[figure].idxmax
    return rows.loc[pick()]
