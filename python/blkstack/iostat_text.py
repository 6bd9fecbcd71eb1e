"""``iostat -x`` around blkstack's report blocks as sysstat's iostat prints
them (sysstat 12.6, C locale): the ``Linux RELEASE (HOST)`` banner with the
date, the machine and its CPUs, a blank line, then each report -- with
``-t`` the time of the report on a line before it -- followed by a blank
line. The report blocks themselves (``Device`` header and rows) come from
the engine, byte for byte sysstat's."""

from __future__ import annotations

import os
import re
import time
from typing import List, Optional, Sequence


def wall_clock() -> float:
    """Seconds since the epoch: ``SOURCE_DATE_EPOCH`` when set (a report
    that can be reproduced), else now."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return float(fixed) if fixed.isdigit() else time.time()


def banner(release: str, host: str, when: float, cpus: int) -> str:
    """``print_gal_header``: ``Linux 6.12.117 (blkstack) \\t11/25/26 \\t_x86_64_\\t(2 CPU)``."""
    date = time.strftime("%m/%d/%y", time.gmtime(when))
    return f"Linux {release} ({host}) \t{date} \t_x86_64_\t({cpus} CPU)"


def timestamp(when: float) -> str:
    """``-t``: the report's time, ``%x %X`` in the C locale."""
    return time.strftime("%m/%d/%y %H:%M:%S", time.gmtime(when))


def blocks(report: str) -> List[str]:
    """The engine's report split into its ``Device`` blocks."""
    return [b.strip("\n") for b in re.split(r"(?m)^(?=Device )", report) if b.strip()]


def sysstat_text(report: str, *, release: str, host: str, cpus: int, start: float,
                 ends_s: Sequence[float], timestamps: bool) -> str:
    """The whole of ``iostat -d -x [-t]``'s output for the report blocks,
    the i-th block's report taken ``ends_s[i]`` seconds after ``start``."""
    out = [banner(release, host, start, cpus), ""]
    for i, block in enumerate(blocks(report)):
        if timestamps:
            end = ends_s[i] if i < len(ends_s) else (ends_s[-1] if ends_s else 0.0)
            out.append(timestamp(start + end))
        out += [block, "", ""]
    return "\n".join(out)


def for_summary(summary: dict, *, host: str, timestamps: bool, release: Optional[str] = None) -> str:
    """The iostat output of a run's or a trace's JSON summary: the kernel
    profile's release, one CPU per job unless the scenario says, each block
    timed at its interval's end (or the run's end)."""
    report = (summary.get("reports") or {}).get("iostat") or ""
    intervals = summary.get("iostat_intervals") or []
    end_ns = summary.get("sim_time_ns") or summary.get("duration_ns") or 0
    ends = [float(i.get("time_s") or 0.0) for i in intervals] or [end_ns / 1e9]
    cpus = int(summary.get("cpus") or 1)
    rel = release or str(summary.get("kernel") or "unknown")
    return sysstat_text(report, release=rel, host=host, cpus=cpus, start=wall_clock(), ends_s=ends,
                        timestamps=timestamps)
