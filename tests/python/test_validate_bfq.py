"""The validation guest's side of bfq: its iosched keys written after the
switch to bfq, and a device admitting few commands per second (the model's
``iops``) throttled in qemu so that requests wait in the scheduler."""

from __future__ import annotations

import json
import textwrap

from blkstack import _core
from blkstack.validate.plan import build_plan

SCENARIO = """
    [disks.vda]
    kind = "virtio"
    size = "1GiB"
    [disks.vda.queue]
    scheduler = "bfq"
    [disks.vda.queue.iosched]
    slice_idle = 0
    low_latency = 0
    [disks.vda.model]
    iops = 20
    [workload]
    type = "dd"
    if = "/dev/vda"
    of = "/dev/null"
    bs = "4k"
    count = 4
    iflag = "direct"
"""


def test_bfq_keys_and_iops_reach_the_guest(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(SCENARIO))
    resolved = json.loads(_core.check(str(p), "6.12", []))
    plan = build_plan(str(p), "6.12", str(tmp_path), resolved)
    job = plan.job
    # bfq is loaded with the disk driver, the queue switched to it, then
    # its own files written.
    assert "for m in virtio_blk bfq; do load $m; done" in job
    assert job.index("load $m") < job.index("/queue/scheduler")
    sched = job.index("/queue/scheduler")
    assert sched < job.index("/queue/iosched/slice_idle") and sched < job.index("/queue/iosched/low_latency")
    assert "echo 0 > /sys/block/$n/queue/iosched/slice_idle" in job
    assert any("throttling.iops-total=20" in a for a in plan.qemu_args)
    assert not plan.warnings
