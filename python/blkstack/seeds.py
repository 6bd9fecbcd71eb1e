"""The five seed scenarios: each kernel change blkstack started from, run
before and after, with the seed's own measurements beside blkstack's.

A seed is a built-in scenario file (``scenarios/NAME.toml``, whose
``[compare]`` table gives the before and after sides), optional variants
of it (``--set`` overrides, e.g. the same device written instead of read),
and the figures to show: each with the seed's before and after values (from
``../shared/seeds``' reports, as published) and a function that reads
blkstack's value from a run summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from blkstack.comparison import device_figures, zone_errors_text, zone_order_text

Summary = Dict[str, Any]
Runs = Dict[str, Summary]  # variant name ("" = the scenario itself) -> summary


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    seed_before: Optional[float]
    seed_after: Optional[float]
    read: Callable[[Runs], Optional[float]]


@dataclass(frozen=True)
class ScenarioVariant:
    """A variant that is a built-in scenario of its own (another stack for
    the same change), run with its own ``[compare]`` sides."""
    scenario: str
    # Read this from its blkparse trace into summary["trace"].
    from_trace: Optional[Callable[[str], Any]] = None


@dataclass(frozen=True)
class Seed:
    name: str
    number: str
    title: str
    figures: Tuple[Figure, ...]
    variants: Dict[str, List[str]] = field(default_factory=dict)
    # Variants on a scenario file of their own, by variant name.
    scenario_variants: Dict[str, ScenarioVariant] = field(default_factory=dict)
    # Extra evidence printed after the table: (before runs, after runs) -> lines.
    extra: Optional[Callable[[Runs, Runs], List[str]]] = None
    # Read this from the blkparse trace of the main run into summary["trace"].
    from_trace: Optional[Callable[[str], Any]] = None
    # The figure `blkstack demo` shows, and --set overrides that make the
    # seed quick enough for it (the variants are skipped there).
    headline: str = ""
    quick: Tuple[str, ...] = ()


# --------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------


def _dev(runs: Runs, name: str, variant: str = "") -> Dict[str, Any]:
    return runs[variant]["devices"][name]


def optional(read: Callable[[Runs], float], variant: str) -> Callable[[Runs], Optional[float]]:
    """A figure of a variant run, None when the variant was not run."""
    return lambda runs: read(runs) if variant in runs else None


def iostat(dev: str, col: str, variant: str = "") -> Callable[[Runs], float]:
    return lambda runs: float(_dev(runs, dev, variant)["iostat"][col])


def mb_per_s_iostat(dev: str, col: str) -> Callable[[Runs], float]:
    """iostat -m: kB/s → MB/s (both binary, as iostat prints them)."""
    return lambda runs: float(_dev(runs, dev)["iostat"][col]) / 1024.0


def figure_of(dev: str, key: str, variant: str = "") -> Callable[[Runs], float]:
    return lambda runs: float(device_figures(_dev(runs, dev, variant))[key])


def elapsed_s(variant: str = "") -> Callable[[Runs], float]:
    return lambda runs: runs[variant]["sim_time_ns"] / 1e9


def dd_mb_per_s(dev: str, variant: str = "") -> Callable[[Runs], float]:
    """What dd prints: bytes moved over the elapsed time, in 10^6 bytes/s."""
    def read(runs: Runs) -> float:
        d = _dev(runs, dev, variant)
        sectors = sum((d.get("sectors") or {}).values())
        return sectors * 512 / 1e6 / (runs[variant]["sim_time_ns"] / 1e9)
    return read


# /proc/diskstats' twelfth field: discards completed (bios on md, requests below).
DISKSTATS_DISCARDS = 11


def md_bios(dev: str) -> Callable[[Runs], float]:
    """Discard bios the md driver accounted (mkfs.xfs's log writes left out)."""
    return lambda runs: float(_dev(runs, dev)["diskstats"][DISKSTATS_DISCARDS])


def member_requests(members: Sequence[str]) -> Callable[[Runs], float]:
    """Discard requests the members completed."""
    return lambda runs: float(sum(_dev(runs, m)["diskstats"][DISKSTATS_DISCARDS] for m in members))


def limit(dev: str, key: str) -> Callable[[Runs], float]:
    return lambda runs: float(_dev(runs, dev)["limits"][key])


def fio_write_mib_s(runs: Runs) -> float:
    return sum(job["write"]["bw_bytes"] for job in runs[""]["fio"]["jobs"]) / 2**20


def fio_read_mb_s(variant: str) -> Callable[[Runs], float]:
    """fio's aggregate read bandwidth of a variant run, in 10^6 bytes/s."""
    return lambda runs: sum(job["read"]["bw_bytes"] for job in runs[variant]["fio"]["jobs"]) / 1e6


def plug_merges(dev: str, failed: bool) -> Callable[[Runs], float]:
    """blk_attempt_plug_merge's return values, as the seed counted them."""
    def read(runs: Runs) -> float:
        plug = _dev(runs, dev)["plug"]
        return float(plug["merge_attempts"] - plug["merges"] if failed else plug["merges"])
    return read


# --------------------------------------------------------------------------
# Extra evidence
# --------------------------------------------------------------------------


def first_events(trace_text: str, dev: str, action: str, count: int) -> List[Tuple[int, int]]:
    """(sector, sectors) of the first *count* *action* events ('G', 'D', ...)
    of device MAJ,MIN *dev* in blkparse text."""
    out = []
    for line in trace_text.splitlines():
        f = line.split()
        if len(f) >= 10 and f[0] == dev and f[5] == action and f[8] == "+":
            out.append((int(f[7]), int(f[9])))
            if len(out) == count:
                break
    return out


def member_order(trace_text: str) -> Dict[str, List[Tuple[int, int]]]:
    """Seed 000's evidence: the first requests allocated (G) and issued (D)
    on the first member."""
    return {a: first_events(trace_text, "8,0", a, 16) for a in ("G", "D")}


def monotonic(events: Sequence[Tuple[int, int]]) -> bool:
    return all(b[0] >= a[0] for a, b in zip(events, events[1:]))


def seek_histogram_text(summary: Summary, dev: str) -> List[str]:
    """The device's seek histogram block of the histograms report."""
    text = (summary.get("reports") or {}).get("histograms") or ""
    lines = text.splitlines()
    try:
        start = lines.index(f"{dev}:")
    except ValueError:
        return []
    block = []
    for line in lines[start + 1:]:
        if line.startswith("Read|Write request size") or (line and not line.startswith(" ") and line.endswith(":")):
            break
        block.append(line)
    while block and not block[-1].strip():
        block.pop()
    return block


ZONE_SECTORS = 8192  # zoned-split-order.toml: 4 MiB zones


def zone_order(trace_text: str) -> Dict[str, Any]:
    """The zoned variant's evidence: the first writes issued (D) to sda,
    and per zone whether its writes were issued in ascending order. (The
    order they were *submitted* in is the run's own ``zones_out_of_order``:
    with zone write plugging the refused writes never reach the device.)"""
    issued: Dict[int, List[Tuple[int, int]]] = {}
    for line in trace_text.splitlines():
        f = line.split()
        if len(f) >= 10 and f[0] == "8,0" and f[5] == "D" and f[8] == "+":
            sector, n = int(f[7]), int(f[9])
            issued.setdefault(sector // ZONE_SECTORS, []).append((sector, n))
    return {"D": first_events(trace_text, "8,0", "D", 8),
            "zones": len(issued),
            "zones_out_of_order": sum(not monotonic(ev) for ev in issued.values())}


def zone_write_errors(dev: str, variant: str) -> Callable[[Runs], float]:
    return lambda runs: float(_dev(runs, dev, variant).get("zone_write_errors") or 0)


def zones_out_of_order(dev: str, variant: str) -> Callable[[Runs], float]:
    """Zones whose write bios came to the disk (after splitting) out of
    sector order, whether or not the disk saw them."""
    return lambda runs: float(_dev(runs, dev, variant).get("zones_out_of_order") or 0)


def failed_writes(variant: str) -> Callable[[Runs], float]:
    """Submitted bios that ended with an error (what dd would report)."""
    return lambda runs: float(runs[variant]["errors"])


def _zoned_extra(before: Runs, after: Runs) -> List[str]:
    if "zoned" not in before:
        return []
    lines = ["zoned variant (zoned-split-order: blk-crypto fallback + 512 KiB limit, 4 MiB zones, as blktests zbd/014):"]
    for side, runs in (("before", before), ("after", after)):
        order = runs["zoned"].get("trace") or {}
        bad, zones = order.get("zones_out_of_order", 0), order.get("zones", 0)
        issued = f"issued (D) in order in all {zones}" if bad == 0 else f"issued (D) out of order in {bad} of {zones}"
        dev = _dev(runs, "sda", "zoned")
        lines.append(f"  sda, {side}: {zone_order_text(dev)}; {issued}")
        lines.append(f"    {zone_errors_text(dev)}")
        events = order.get("D") or []
        lines.append("    first D: " + "  ".join(f"{s}+{n}" for s, n in events))
    return lines


def _raid5_extra(before: Runs, after: Runs) -> List[str]:
    lines = []
    for action in ("G", "D"):
        for side, runs in (("before", before), ("after", after)):
            events = (runs[""].get("trace") or {}).get(action) or []
            order = "in order" if monotonic(events) else "out of order"
            lines.append(f"first sda {action} events, {side}: {order}")
            lines += ["  " + "  ".join(f"{s}+{n}" for s, n in events[i:i + 4]) for i in range(0, len(events), 4)]
    for side, runs in (("before", before), ("after", after)):
        lines.append(f"sda seek histogram (blkparse D events), {side}:")
        lines += ["  " + l for l in seek_histogram_text(runs[""], "sda")]
    return lines + _zoned_extra(before, after)


def _virt_boundary_extra(before: Runs, after: Runs) -> List[str]:
    """Why the wall-time figure is left alone, and a second measurement."""
    shrink = elapsed_s()(before) / elapsed_s()(after)
    return [
        "the seed's after run was CPU-bound (user + sys 6.435 s of 6.657 s; 0.686 s of 9.406 s before);",
        "blkstack models the time spent waiting for I/O, so compare the I/O wait row.",
        "a second measurement: 5a8d75a1b8c9's message says the fix merged upstream (729204ef49ec",
        f"\"block: relax check on sg gap\") cut mkfs.ntfs's running time to ~1/10; blkstack: 1/{shrink:.0f}.",
    ]


# --------------------------------------------------------------------------
# The seeds
# --------------------------------------------------------------------------

RAID10_MEMBERS = ("nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1")

# A fresh 3.5 TiB XFS: four allocation groups of 231,917,056 blocks, each
# free but for its first MiB of headers; the internal log (521,728 blocks)
# sits at the start of the middle AG. Extents in sectors of md0.
XFS_FREE_EXTENTS = [[2048, 1855334400], [1855338496, 1855334400],
                    [3714848768, 1851160576], [5566011392, 1855334400]]

SEEDS: Tuple[Seed, ...] = (
    Seed(
        "raid5-recursive-split", "000", "block: fix disordered IO in the case recursive split (md raid5)",
        (
            Figure("md0_r_s", "md0 r/s", "", 52430.00, 87965.00, iostat("md0", "r/s")),
            Figure("md0_rmb_s", "md0 rMB/s", "MB/s", 3276.87, 5271.88, mb_per_s_iostat("md0", "rkB/s")),
            Figure("md0_rareq_sz", "md0 rareq-sz", "KiB", 64.00, 61.37, iostat("md0", "rareq-sz")),
            Figure("md0_r_await", "md0 r_await", "ms", 0.62, 0.16, iostat("md0", "r_await")),
            Figure("sd_r_s", "sda r/s", "", 4487.00, 6020.00, iostat("sda", "r/s")),
            Figure("sd_rmb_s", "sda rMB/s", "MB/s", 409.00, 658.44, mb_per_s_iostat("sda", "rkB/s")),
            Figure("sd_rrqm_pct", "sda %rrqm", "%", 31.40, 45.95, iostat("sda", "%rrqm")),
            Figure("sd_rareq_sz", "sda rareq-sz", "KiB", 93.34, 112.00, iostat("sda", "rareq-sz")),
            Figure("sd_r_await", "sda r_await", "ms", 0.82, 0.44, iostat("sda", "r_await")),
            Figure("sd_aqu_sz", "sda aqu-sz", "", 3.68, 2.68, iostat("sda", "aqu-sz")),
            Figure("zero_seek_pct", "sda zero-seek share", "%", 45.5, 75.0, figure_of("sda", "zero_seek_pct")),
            # The zoned variant: zbd/014's dd fails (write errors); no counts published.
            Figure("zoned_write_errors", "zoned: zone write errors", "", None, None,
                   optional(zone_write_errors("sda", "zoned"), "zoned")),
            Figure("zoned_failed_writes", "zoned: failed 2 MiB writes", "", None, None,
                   optional(failed_writes("zoned"), "zoned")),
            Figure("zoned_zones_out_of_order", "zoned: zones written out of order", "", None, None,
                   optional(zones_out_of_order("sda", "zoned"), "zoned")),
        ),
        scenario_variants={"zoned": ScenarioVariant("zoned-split-order", from_trace=zone_order)},
        extra=_raid5_extra,
        from_trace=member_order,
        headline="sd_rareq_sz",
    ),
    Seed(
        "plug-order", "001", "revert of \"block: don't reorder requests in blk_add_rq_to_plug\"",
        (
            Figure("fio_bw_mib_s", "fio write bandwidth", "MiB/s", 362, 660, fio_write_mib_s),
            Figure("wareq_sz", "nvme1n1 wareq-sz", "KiB", 2, 4, iostat("nvme1n1", "wareq-sz")),
            Figure("w_s", "nvme1n1 w/s", "", None, None, iostat("nvme1n1", "w/s")),
            Figure("plug_merge_ok", "blk_attempt_plug_merge = 1", "", 5618, 146686, plug_merges("nvme1n1", False)),
            Figure("plug_merge_failed", "blk_attempt_plug_merge = 0", "", 176578, 146684,
                   plug_merges("nvme1n1", True)),
        ),
        headline="fio_bw_mib_s",
    ),
    Seed(
        "raid10-discard", "002", "raid10: block discard is very slow, causing severe delays for mkfs and fstrim",
        (
            Figure("mkfs_s", "mkfs.xfs time", "s", 674.735, 4.226, elapsed_s()),
            Figure("fstrim_s", "fstrim time", "s", 697.643, 1.991, optional(elapsed_s("fstrim"), "fstrim")),
            Figure("md_bios", "md0 discard bios (mkfs)", "", None, None, md_bios("md0")),
            Figure("member_requests", "member discard requests (mkfs)", "", None, None,
                   member_requests(RAID10_MEMBERS)),
            Figure("discard_max_bytes", "md0 discard_max_bytes", "", 524288, 2199023255040,
                   limit("md0", "discard_max_bytes")),
        ),
        variants={"fstrim": ['workload={type = "fstrim", device = "/dev/md0", extents = %s}'
                             % json.dumps(XFS_FREE_EXTENTS)]},
        headline="mkfs_s",
        # Members of 1/64 the size (29.7 GB): times scale with it.
        quick=tuple(f"disks.{m}.size=29687496704" for m in RAID10_MEMBERS),
    ),
    Seed(
        "bio-align", "003", "block: limit the extract size to align queue limit",
        (
            Figure("read_mb_s", "sequential read", "MB/s", 3033.7, 3520.9, dd_mb_per_s("sda")),
            Figure("write_mb_s", "sequential write", "MB/s", 2225.4, 2800.3, optional(dd_mb_per_s("sda", "write"), "write")),
            Figure("bios", "bios queued (read)", "", None, None, figure_of("sda", "bios_queued")),
            Figure("splits", "splits (read)", "", None, None, figure_of("sda", "splits")),
            Figure("requests", "requests (read)", "", None, None, figure_of("sda", "requests")),
            Figure("mean_request_kib", "mean request size (read)", "KiB", None, None,
                   figure_of("sda", "mean_request_kib")),
            # Ming Lei's objection: a null ublk disk, CPU-bound (host CPU model).
            Figure("ublk_read_mb_s", "ublk null: fio 64k randread", "MB/s", 20000, 3709,
                   optional(fio_read_mb_s("ublk"), "ublk")),
            Figure("ublk_requests", "ublk null: requests", "", None, None,
                   optional(figure_of("ublkb0", "requests", "ublk"), "ublk")),
        ),
        scenario_variants={"ublk": ScenarioVariant("ublk-null-cpu")},
        variants={"write": ["workload.if=/dev/zero", "workload.of=/dev/sda", "workload.iflag=fullblock",
                            "workload.oflag=direct"]},
        headline="read_mb_s",
    ),
    Seed(
        "virt-boundary", "004", "block: fix bio merge checks when virt_boundary is set (RFC)",
        (
            Figure("time_s", "mkfs.ntfs -Q time", "s", 9.406, 6.657, elapsed_s()),
            # The seed's wall time less its CPU time (user + sys: 0.686 s
            # before, 6.435 s after): the time mkfs.ntfs waited for I/O,
            # which is what blkstack's elapsed time models.
            Figure("io_wait_s", "I/O wait (real - user - sys)", "s", 8.720, 0.222, elapsed_s()),
            Figure("requests", "requests issued", "", None, None, figure_of("sdc", "requests")),
            Figure("mean_request_kib", "mean request size", "KiB", None, None, figure_of("sdc", "mean_request_kib")),
            Figure("merges", "merges", "", None, None, figure_of("sdc", "merges")),
        ),
        extra=_virt_boundary_extra,
        headline="io_wait_s",
    ),
)


def seed(name: str) -> Seed:
    for s in SEEDS:
        if s.name == name or s.number == name:
            return s
    raise KeyError(name)


def ratio(before: Optional[float], after: Optional[float]) -> Optional[float]:
    if before is None or after is None or before == 0:
        return None
    return after / before

