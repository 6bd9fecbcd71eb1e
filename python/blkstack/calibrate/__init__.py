"""Fitting a device's service model from fio measurements (``blkstack
calibrate``): the job set (``jobs/*.fio``), reading fio's JSON, the fit,
and its output as a ``[disks.NAME.model]`` section."""

from __future__ import annotations

import os
from typing import List, Optional, Sequence

from blkstack.calibrate.fiojson import FioJob
from blkstack.calibrate.fit import Fit, Prediction, command_rate, quality

JOBS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs")


def job_file(name: str) -> str:
    """Path of a shipped job file: ``read`` or ``write``."""
    return os.path.join(JOBS_DIR, f"{name}.fio")


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}"


def model_toml(f: Fit, disk: str, sources: Sequence[str], preset: Optional[str]) -> str:
    """The fitted parameters as a ``[disks.NAME.model]`` section."""
    lines = [f"# Fitted by blkstack calibrate from {', '.join(os.path.basename(s) for s in sources)}.",
             f"[disks.{disk}.model]"]
    if preset:
        lines.append(f'preset = "{preset}"')
    lines += [f"read_latency_us = {_us(f.read_latency)}",
              f"seq_read_latency_us = {_us(f.seq_read_latency)}",
              f"streams = {f.streams}",
              f"command_overhead_us = {_us(f.overhead)}",
              f"bandwidth = {round(f.bandwidth)}",
              f"parallelism = {f.parallelism}",
              "iops = 0"]
    if f.batched:
        lines.append("batch_completions = true")
    if f.write_bandwidth is not None:
        lines += [f"write_command_overhead_us = {_us(f.write_overhead or 0.0)}",
                  f"write_bandwidth = {round(f.write_bandwidth)}",
                  "write_cache_size = 0"]
        if f.write_latency is not None:
            lines.append(f"write_latency_us = {_us(f.write_latency)}")
    return "\n".join(lines) + "\n"


def _median(values: List[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def quality_report(jobs: Sequence[FioJob], predictions: Sequence[Prediction], how: str) -> List[str]:
    """Per job: measured against the model's prediction, and the summary."""
    from blkstack.cli.common import table
    rows, errors = [], []
    for j, q in zip(jobs, quality(jobs, predictions)):
        errors.append(abs(q["bw_err"]))
        rows.append([j.name, j.label(), f"{q['bw'] / 1e6:,.1f}", f"{q['bw_model'] / 1e6:,.1f}",
                     f"{q['bw_err']:+.1f}%", f"{q['clat'] / 1e3:,.1f}", f"{q['clat_model'] / 1e3:,.1f}",
                     f"{q['clat_err']:+.1f}%"])
    headers = ["JOB", "PATTERN", "MB/s", "MODEL MB/s", "ERROR", "CLAT us", "MODEL us", "ERROR"]
    lines = table(headers, rows, [False, False] + [True] * 6)
    lines.append(f"bandwidth error over {len(jobs)} jobs: median {_median(errors):.1f}%, worst {max(errors):.1f}% "
                 f"(model: {how})")
    return lines


def parameter_summary(f: Fit) -> List[str]:
    x4k = f.overhead + 4096 / f.bandwidth
    top = command_rate(f, f.parallelism, f.read_latency, x4k)
    lines = [f"read: access {_us(f.read_latency)} us, read-ahead access {_us(f.seq_read_latency)} us "
             f"({f.streams} stream{'s' if f.streams != 1 else ''}), overhead {_us(f.overhead)} us/command, "
             f"bandwidth {f.bandwidth / 1e6:,.1f} MB/s, parallelism {f.parallelism} "
             f"(4k random reads: at most {top:,.0f} IOPS"
             f"{'; completions posted in batches' if f.batched else ''})"]
    if f.write_bandwidth is not None:
        lat = "preset's" if f.write_latency is None else f"{_us(f.write_latency)} us"
        lines.append(f"write: access {lat}, overhead {_us(f.write_overhead or 0.0)} us/command, "
                     f"bandwidth {f.write_bandwidth / 1e6:,.1f} MB/s")
    return lines + [f"note: {n}" for n in f.notes]
