"""Predicting fio jobs by running them through blkstack itself: each job
as ``blkstack fio`` would run it, on a one-disk scenario whose disk has
the fitted model. Unlike the fit's analytical steady state this goes
through the whole modelled block path (splitting, the scheduler, tags)."""

from __future__ import annotations

import os
import tempfile
from typing import List, Sequence

from blkstack.calibrate.fiojson import FioJob
from blkstack.calibrate.fit import Prediction

# Simulated time per job: long enough for thousands of commands at the
# depths and sizes of the job set, short enough to run it in seconds.
RUNTIME = "200ms"


def scenario_text(model_toml: str, disk: str, kind: str) -> str:
    return f'[disks.{disk}]\nkind = "{kind}"\nsize = "64GiB"\n{model_toml}'


def fio_args(job: FioJob, disk: str) -> List[str]:
    rw = ("rand" if job.random else "") + job.direction
    return [f"--name={job.name}", f"--rw={rw}", f"--bs={job.bs}", f"--iodepth={job.iodepth}",
            "--ioengine=libaio", "--direct=1", "--time_based", f"--runtime={RUNTIME}", f"--filename=/dev/{disk}"]


def predict_simulated(model_toml: str, jobs: Sequence[FioJob], disk: str, kind: str) -> List[Prediction]:
    """Each job's bandwidth and mean completion latency in blkstack."""
    from blkstack.cli import common
    from blkstack.cli.fio import fio_workload
    with tempfile.TemporaryDirectory(prefix="blkstack-calibrate-") as tmp:
        path = os.path.join(tmp, "calibrated.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(scenario_text(model_toml, disk, kind))
        out = []
        for job in jobs:
            summary = common.simulate(path, None, [fio_workload(fio_args(job, disk))], None, None, progress=False)
            side = summary["fio"]["jobs"][0][job.direction]
            out.append(Prediction(float(side["bw_bytes"]), float(side["clat_ns"]["mean"])))
        return out
