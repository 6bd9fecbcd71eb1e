"""Fitting the device service model (src/disk/mod.rs) to fio jobs, and
predicting a job from the fitted parameters.

The model, per command: it waits for one of `parallelism` slots, waits its
access time A (`read_latency`, `seq_read_latency` for a read that continues
a stream, `write_latency`), then holds the one transfer path for
X = overhead + bs / bandwidth. In the steady state of a fio job at queue
depth q that gives

    commands/s = min(min(q, parallelism) / (A + X), 1 / X)

(slots bound small random I/O, the transfer path large I/O), and a mean
completion latency of q / (commands/s) (Little's law; A + X at q = 1).
A device that posts its completions in batches (`batch_completions`: a
virtual disk whose host thread drains the queue, then interrupts once)
holds the q commands of a fio job together: they wait A at once, take
the path one after another and complete with the last, so

    commands/s = q / (A + q X)      (q up to `parallelism`)

a ramp with depth instead of a knee. The fit tries both and keeps the
one whose log error over the jobs is smaller.
Each parameter comes from the family of jobs that isolates it
(docs/devices.md, "Calibrating from fio"):

* transfer-bound jobs (q >= 8, bs >= 64 KiB): bs / bw = overhead + bs / bandwidth,
  a straight line in 1/bw against 1/bs fitted by least squares: slope
  `command_overhead`, intercept 1 / `bandwidth`;
* the smallest random read at q = 1: A = 1 / IOPS - X(bs) is `read_latency`
  (the time per command, submission included: fio's clat leaves it out);
* the smallest sequential read at q = 1: `seq_read_latency` the same way
  (one stream, when it is shorter than the random read's);
* random reads at q > 1: the commands in flight needed for the IOPS seen,
  IOPS x (A + X), at most `parallelism`; its largest value is the fit
  (batched: the deepest job's depth, every command of a batch in service);
* write jobs, when present, the same three for writes."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from blkstack.calibrate.fiojson import FioJob, fmt_size


class FitError(ValueError):
    """The jobs do not determine a parameter."""


# --completions: whether the device batches its completions (None: the
# jobs decide).
COMPLETIONS = {"auto": None, "batched": True, "each": False}

# Jobs the transfer path bounds: deep enough queues, large enough blocks.
LINE_MIN_DEPTH = 8
LINE_MIN_BS = 64 << 10


@dataclass
class Fit:
    """Fitted parameters, in seconds and bytes per second."""
    read_latency: float
    seq_read_latency: float
    streams: int
    overhead: float
    bandwidth: float
    parallelism: int
    write_latency: Optional[float] = None
    write_overhead: Optional[float] = None
    write_bandwidth: Optional[float] = None
    batched: bool = False
    notes: List[str] = field(default_factory=list)


def line_fit(points: Sequence[Tuple[float, float]]) -> Tuple[float, float]:
    """Least-squares slope and intercept of y on x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0, my
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return slope, my - slope * mx


def fit_transfer(jobs: Sequence[FioJob], what: str, notes: List[str]) -> Tuple[float, float]:
    """Per-command overhead (s) and bandwidth (B/s) from the jobs the
    transfer path bounds: bs / bw = overhead + bs / bandwidth."""
    line = [j for j in jobs if j.iodepth >= LINE_MIN_DEPTH and j.bs >= LINE_MIN_BS]
    if not line:
        line = [j for j in jobs if j.iodepth >= LINE_MIN_DEPTH]
        if not line:
            raise FitError(f"no {what} job at iodepth >= {LINE_MIN_DEPTH}: the {what} bandwidth cannot be "
                           f"fitted (the job set's qd32 and qd8 jobs)")
        notes.append(f"no {what} job at iodepth >= {LINE_MIN_DEPTH} with bs >= 64k: "
                     f"bandwidth fitted from smaller blocks")
    points = [(1.0 / j.bs, 1.0 / j.bw_bytes) for j in line]
    overhead, inverse_bw = line_fit(points)
    if len({j.bs for j in line}) < 2 or overhead < 0:
        # One block size, or larger blocks slower per byte: no overhead seen.
        notes.append(f"{what}: no per-command overhead seen over block sizes "
                     f"{', '.join(sorted({fmt_size(j.bs) for j in line}))}: overhead 0")
        return 0.0, max(j.bw_bytes for j in line)
    if inverse_bw <= 0:
        # The line passes below the origin: the largest block's rate bounds it.
        bandwidth = max(j.bw_bytes for j in line)
        overhead = max(0.0, min(j.bs / j.bw_bytes - j.bs / bandwidth for j in line))
        notes.append(f"{what}: the 1/bw line's intercept is not positive: bandwidth is the largest measured")
        return overhead, bandwidth
    return overhead, 1.0 / inverse_bw


def access_time(job: FioJob, overhead: float, bandwidth: float) -> float:
    """A = 1 / IOPS - X: the access time a QD1 job shows, never negative.
    The time per command comes from the IOPS, not from fio's clat: clat
    leaves out the submission (slat: io_submit, in a guest the
    notification's exit to the host; 9-17 us of 22-36 us per 4k-16k read
    on this machine's idle virtio disk), and the job's bandwidth pays for
    it all the same. blkstack's fio spends no time submitting (without a
    host CPU model), so the device carries it."""
    return max(0.0, job.iodepth / job.iops - (overhead + job.bs / bandwidth))


def smallest_qd1(jobs: Sequence[FioJob], random: bool) -> Optional[FioJob]:
    qd1 = [j for j in jobs if j.iodepth == 1 and j.random == random]
    return min(qd1, key=lambda j: j.bs) if qd1 else None


def fit(reads: Sequence[FioJob], writes: Sequence[FioJob], batched: Optional[bool] = None) -> Fit:
    """Every parameter the jobs determine. ``batched``: whether the device
    posts completions in batches, when known (a Firecracker virtio-block
    disk does); ``None`` lets the jobs decide."""
    if not reads:
        raise FitError("no read job: the read job set (read.fio) is needed; writes alone do not fit the model")
    rand1 = smallest_qd1(reads, True)
    if rand1 is None:
        raise FitError("no random read at iodepth 1: read_latency cannot be fitted (the job set's rand-4k-qd1)")
    notes: List[str] = []
    start = fit_transfer(reads, "read", notes)
    result = min((search(start, reads, lambda o, b, batched=batched: read_fit(reads, rand1, o, b, notes, batched))
                  for batched in ((False, True) if batched is None else (batched,))),
                 key=lambda f: log_error(f, reads))
    if result.batched:
        notes.append("completions posted in batches (the depth ramp fits better than a knee)")
    if writes:
        fit_writes(result, writes)
    else:
        notes.append("no write job: write parameters are the preset's")
    return result


def read_fit(reads: Sequence[FioJob], rand1: FioJob, overhead: float, bandwidth: float, notes: List[str],
             batched: bool = False) -> Fit:
    """The read parameters that follow from an overhead and a bandwidth."""
    read_latency = access_time(rand1, overhead, bandwidth)
    seq1 = smallest_qd1(reads, False)
    seq_latency, streams = read_latency, 0
    if seq1 is not None and access_time(seq1, overhead, bandwidth) < read_latency:
        seq_latency, streams = access_time(seq1, overhead, bandwidth), 1
    if batched:
        parallelism = max(j.iodepth for j in reads)
    else:
        parallelism = fit_parallelism(reads, read_latency, overhead, bandwidth)
    return Fit(read_latency, seq_latency, streams, overhead, bandwidth, parallelism, batched=batched, notes=notes)


def log_error(f: Fit, jobs: Sequence[FioJob]) -> float:
    """Sum of squared log ratios of predicted to measured bandwidth."""
    return sum(math.log(predict(f, j).bw_bytes / j.bw_bytes) ** 2 for j in jobs)


# Grid of the least-squares search: points per axis, and passes (each
# pass narrows the grid around the previous best).
GRID = 24
PASSES = 3


def search(start: Tuple[float, float], jobs: Sequence[FioJob], build: Callable[[float, float], Fit]) -> Fit:
    """Overhead and bandwidth minimising the log error over every job,
    the other parameters derived from them. The 1/bw line alone (``start``)
    sees only large blocks; a per-command overhead also bounds small
    blocks' IOPS at 1 / overhead, which the line cannot know."""
    top = max(j.bw_bytes for j in jobs)
    o_lo, o_hi = 0.0, max(2 * start[0], min(j.clat_ns for j in jobs) * 1e-9)
    b_lo, b_hi = top / 2, max(4 * top, 2 * start[1])
    best = build(*start)
    best_err = log_error(best, jobs)
    for _ in range(PASSES):
        for i in range(GRID + 1):
            overhead = o_lo + (o_hi - o_lo) * i / GRID
            for k in range(GRID + 1):
                candidate = build(overhead, b_lo * (b_hi / b_lo) ** (k / GRID))
                err = log_error(candidate, jobs)
                if err < best_err:
                    best, best_err = candidate, err
        o_step, b_ratio = (o_hi - o_lo) / GRID, (b_hi / b_lo) ** (1 / GRID)
        o_lo, o_hi = max(0.0, best.overhead - 2 * o_step), best.overhead + 2 * o_step
        b_lo, b_hi = best.bandwidth / b_ratio ** 2, best.bandwidth * b_ratio ** 2
    return best


def fit_parallelism(reads: Sequence[FioJob], latency: float, overhead: float, bandwidth: float) -> int:
    """Commands in flight the IOPS of random reads at q > 1 need:
    IOPS x (A + X) by Little's law."""
    deep = [j for j in reads if j.random and j.iodepth > 1]
    if not deep:
        return 1
    return max(1, max(round(j.iops * (latency + overhead + j.bs / bandwidth)) for j in deep))


def fit_writes(result: Fit, writes: Sequence[FioJob]) -> None:
    first = smallest_qd1(writes, True) or smallest_qd1(writes, False)
    if first is None:
        result.notes.append("no write at iodepth 1: write parameters are the preset's")
        return
    if any(j.iodepth >= LINE_MIN_DEPTH for j in writes):
        start = fit_transfer(writes, "write", result.notes)
    else:
        result.notes.append("no write job at iodepth >= 8: write bandwidth starts from the read one")
        start = (result.overhead, result.bandwidth)

    def build(overhead: float, bandwidth: float) -> Fit:
        f = copy.copy(result)
        f.write_overhead, f.write_bandwidth = overhead, bandwidth
        f.write_latency = access_time(first, overhead, bandwidth)
        return f

    best = search(start, writes, build)
    result.write_latency, result.write_overhead = best.write_latency, best.write_overhead
    result.write_bandwidth = best.write_bandwidth


@dataclass(frozen=True)
class Prediction:
    bw_bytes: float
    clat_ns: float


def predict(f: Fit, job: FioJob) -> Prediction:
    """The model's steady state for a fio job (see the module's comment)."""
    if job.is_write and f.write_bandwidth is not None:
        access = f.write_latency if f.write_latency is not None else 0.0
        xfer = (f.write_overhead or 0.0) + job.bs / f.write_bandwidth
    else:
        if job.is_write:
            access = 0.0
        elif not job.random and f.streams:
            access = f.seq_read_latency
        else:
            access = f.read_latency
        xfer = f.overhead + job.bs / f.bandwidth
    rate = command_rate(f, job.iodepth, access, xfer)
    return Prediction(rate * job.bs, job.iodepth / rate * 1e9)


def command_rate(f: Fit, depth: int, access: float, xfer: float) -> float:
    """Commands per second at a queue depth: slots or the transfer path
    bound them, or (batched) each batch of commands pays its access once."""
    busy = min(depth, f.parallelism)
    if f.batched:
        return busy / (access + busy * xfer)
    return min(busy / (access + xfer), 1.0 / xfer)


def error_pct(model: float, measured: float) -> float:
    return (model - measured) / measured * 100.0


def quality(jobs: Sequence[FioJob], predictions: Sequence[Prediction]) -> List[Dict[str, float]]:
    """Per job: measured and predicted bandwidth and latency, % errors."""
    rows = []
    for j, p in zip(jobs, predictions):
        rows.append({"bw": j.bw_bytes, "bw_model": p.bw_bytes, "bw_err": error_pct(p.bw_bytes, j.bw_bytes),
                     "clat": j.clat_ns, "clat_model": p.clat_ns, "clat_err": error_pct(p.clat_ns, j.clat_ns)})
    return rows
