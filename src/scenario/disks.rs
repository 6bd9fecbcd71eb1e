//! The `[disks.NAME]` tables: kind, size, queue limits (driver values and
//! sysfs writes), the service model and partitions.

use crate::sched::bfq_params::{BfqParams, BFQ_KEYS};
use crate::disk::ServiceModel;
use crate::genhd::{DiskKind, Queue};
use crate::limits::{resolve, DriverLimits, Elevator, LimitError, SysfsWrites, Zoned};
use crate::profile::Behaviour;
use crate::bio::SECTOR_SHIFT;

use super::loopdev::{read_loop_file, LoopFile, LOOP_KEYS};
use super::nullb::{clamp_conv_zones, read_null_blk};
use super::tree::{Node, Obj, Origin, ScenarioError, Value};

const DISK_KEYS: &[&str] = &["kind", "size", "queue", "partitions", "model", "null_blk", "backing", "offset", "direct_io", "multipath"];
const PART_KEYS: &[&str] = &["start", "size"];
/// Keys of `[disks.NAME.queue]`: sysfs names, plus driver values sysfs
/// does not show but a scenario may need (`queue_depth` lives in
/// `device/`, `seg_boundary_mask` and `nr_hw_queues` have no file).
pub const QUEUE_KEYS: &[&str] = &[
    "logical_block_size",
    "physical_block_size",
    "minimum_io_size",
    "optimal_io_size",
    "max_sectors_kb",
    "max_hw_sectors_kb",
    "max_segments",
    "max_segment_size",
    "virt_boundary_mask",
    "seg_boundary_mask",
    "dma_alignment",
    "chunk_sectors",
    "discard_granularity",
    "discard_max_bytes",
    "discard_max_hw_bytes",
    "max_discard_segments",
    "write_zeroes_max_bytes",
    "nr_requests",
    "queue_depth",
    "nr_hw_queues",
    "scheduler",
    "nomerges",
    "rotational",
    "write_cache",
    "wbt_lat_usec",
    "fua",
    "zoned",
    "conventional_zones",
    "iosched",
];
/// Keys of `[disks.NAME.queue.iosched]`, as in sysfs `queue/iosched/`, and
/// the scheduler each belongs to (the directory holds the files of the
/// elevator in force only).
const IOSCHED_KEYS: &[(&str, Elevator)] = &[
    ("read_lat_nsec", Elevator::Kyber),
    ("write_lat_nsec", Elevator::Kyber),
    ("fifo_expire_sync", Elevator::Bfq),
    ("fifo_expire_async", Elevator::Bfq),
    ("back_seek_max", Elevator::Bfq),
    ("back_seek_penalty", Elevator::Bfq),
    ("slice_idle", Elevator::Bfq),
    ("slice_idle_us", Elevator::Bfq),
    ("max_budget", Elevator::Bfq),
    ("timeout_sync", Elevator::Bfq),
    ("strict_guarantees", Elevator::Bfq),
    ("low_latency", Elevator::Bfq),
];

/// A partition of a disk.
#[derive(Clone, Debug, PartialEq)]
pub struct PartSpec {
    pub name: String,
    pub start: u64,
    pub nr_sectors: u64,
}

/// A disk with its resolved limits.
#[derive(Clone, Debug)]
pub struct DiskSpec {
    pub name: String,
    pub kind: DiskKind,
    pub nr_sectors: u64,
    pub queue: Queue,
    pub model: ServiceModel,
    pub partitions: Vec<PartSpec>,
    /// A loop device's file.
    pub loop_file: Option<LoopFile>,
    /// An nvme namespace with several paths: this disk is its head.
    pub multipath: Option<super::multipath::MultipathSpec>,
}

fn limit_err(q: &Obj, disk: &Obj, e: LimitError) -> ScenarioError {
    // Point at the key if the scenario set it, else at the disk.
    match q.node(e.key) {
        Some(n) => q.err(e.key, &n.at, e.msg),
        None => disk.err("kind", &disk.at, format!("the preset's {} does not fit: {}", e.key, e.msg)),
    }
}

/// The `[disks]` tables; `cpus` is the scenario's CPU count, if given.
/// `fixed`: the service model every disk starts from instead of its
/// kind's preset (`[validate] disk_latency_ms`).
pub(crate) fn read_disks(o: &Obj, beh: &Behaviour, cpus: Option<u32>, fixed: Option<&ServiceModel>) -> Result<Vec<DiskSpec>, ScenarioError> {
    let Some(t) = o.table("disks")? else { return Ok(Vec::new()) };
    // Loop devices last: their files are on the other disks.
    let names = t.keys();
    let is_loop = |n: &String| t.table(n).ok().flatten().and_then(|d| d.opt_str("kind").ok().flatten()).is_some_and(|(k, _)| k == "loop");
    let mut order: Vec<usize> = (0..names.len()).filter(|&i| !is_loop(&names[i])).collect();
    order.extend((0..names.len()).filter(|&i| is_loop(&names[i])));
    let mut read: Vec<(usize, DiskSpec)> = Vec::new();
    for i in order {
        let d = t.table(&names[i])?.expect("key listed");
        let so_far: Vec<DiskSpec> = read.iter().map(|x| x.1.clone()).collect();
        read.push((i, read_disk(&names[i], &d, beh, cpus, &so_far, fixed)?));
    }
    read.sort_by_key(|x| x.0);
    let disks: Vec<DiskSpec> = read.into_iter().map(|x| x.1).collect();
    t.finish(&[])?;
    let mut seen: Vec<&str> = Vec::new();
    for d in &disks {
        for p in &d.partitions {
            if disks.iter().any(|x| x.name == p.name) || seen.contains(&p.name.as_str()) {
                return Err(o.doc.error(&Origin::File(0), &format!("disks.{}.partitions.{}", d.name, p.name), "a device of this name already exists"));
            }
            seen.push(&p.name);
        }
    }
    Ok(disks)
}

fn read_disk(name: &str, d: &Obj, beh: &Behaviour, cpus: Option<u32>, disks: &[DiskSpec], fixed: Option<&ServiceModel>) -> Result<DiskSpec, ScenarioError> {
    let (kind_s, kind_n) = d.opt_str("kind")?.ok_or_else(|| d.err("kind", &d.at, format!("missing (one of {})", DiskKind::DISK_NAMES.join(", "))))?;
    let kind = DiskKind::from_name(&kind_s)
        .ok_or_else(|| d.err("kind", &kind_n.at, format!("unknown kind '{kind_s}' (one of {})", DiskKind::DISK_NAMES.join(", "))))?;
    check_kind_keys(d, kind)?;
    let mut null_blk = if kind == DiskKind::NullBlk { Some(read_null_blk(d, cpus)?) } else { None };
    let mut drv = kind.driver_limits(beh);
    if let Some(n) = cpus.and_then(|c| kind.nr_hw_queues_for_cpus(c)) {
        drv.nr_hw_queues = n;
    }
    let given = d.opt_size("size")?;
    let mut loop_file = None;
    let (size, size_n) = match (given, &null_blk) {
        (g, _) if kind == DiskKind::Loop => {
            let (f, size) = read_loop_file(d, disks, &mut drv, g.map(|x| x.0))?;
            loop_file = Some(f);
            (size, g.map(|x| x.1))
        }
        (Some((v, n)), _) => (v, Some(n)),
        // null_blk's gb=250.
        (None, Some(_)) => (crate::nullb::DEFAULT_SIZE, None),
        (None, None) => return Err(d.err("size", &d.at, "missing (e.g. size = \"1TiB\")")),
    };
    if let Some(p) = null_blk.as_mut() {
        clamp_conv_zones(p, size >> SECTOR_SHIFT);
        p.apply(&mut drv, beh.null_blk_no_sched);
    }
    let mut writes = SysfsWrites::default();
    let q = d.table("queue")?.unwrap_or_else(|| d.empty("queue"));
    read_queue(&q, &mut drv, &mut writes)?;
    kind.derive_driver_limits(&mut drv, beh, |k| q.has(k));
    refuse_moved_iosched_keys(&q)?;
    q.finish(QUEUE_KEYS)?;
    let (limits, attrs) = resolve(&drv, &writes, beh.limits_model, beh.def_max_sectors_cap).map_err(|e| limit_err(&q, d, e))?;
    check_iosched(&q, attrs.scheduler)?;
    if size == 0 || size % limits.logical_block_size as u64 != 0 {
        let at = size_n.map_or(d.at.clone(), |n| n.at.clone());
        return Err(d.err("size", &at, format!("{size} bytes is not a positive multiple of the logical block size ({})", limits.logical_block_size)));
    }
    let nr_sectors = size >> SECTOR_SHIFT;
    let base = match (&null_blk, fixed) {
        (Some(p), _) => p.service_model(),
        (None, Some(m)) => m.clone(),
        (None, None) => ServiceModel::for_kind(kind),
    };
    let model = super::model::read_model(d, base)?;
    let partitions = read_partitions(d, nr_sectors, limits.lbs_sectors())?;
    let multipath = super::multipath::read_multipath(d, kind, beh)?;
    d.finish(DISK_KEYS)?;
    Ok(DiskSpec { name: name.to_string(), kind, nr_sectors, queue: Queue { limits, attrs }, model, partitions, loop_file, multipath })
}

/// Keys that belong to one kind only: null_blk's parameters, a loop
/// device's file; and what a loop device does not have (a service model,
/// partitions: `max_part` 0).
fn check_kind_keys(d: &Obj, kind: DiskKind) -> Result<(), ScenarioError> {
    let refuse = |key: &str, msg: &str| match d.node(key) {
        Some(n) => Err(d.err(key, &n.at, msg)),
        None => Ok(()),
    };
    if kind != DiskKind::NullBlk {
        refuse("null_blk", "module parameters are for kind = \"null_blk\" only")?;
    }
    if kind == DiskKind::Loop {
        refuse("model", "a loop device has no service model: its requests complete with their I/O on the backing device")?;
        refuse("partitions", "loop devices have no partitions (max_part = 0)")?;
    } else {
        for key in LOOP_KEYS {
            refuse(key, "only for kind = \"loop\"")?;
        }
    }
    Ok(())
}

/// `queue/iosched/` writes: the files of the scheduler in force only (the
/// directory holds those of the elevator set, no others).
fn read_iosched(q: &Obj, w: &mut SysfsWrites) -> Result<(), ScenarioError> {
    let Some(t) = q.table("iosched")? else { return Ok(()) };
    w.iosched.read_lat_nsec = t.opt_u64("read_lat_nsec")?.map(|x| x.0);
    w.iosched.write_lat_nsec = t.opt_u64("write_lat_nsec")?.map(|x| x.0);
    read_bfq_keys(&t, w)?;
    let known: Vec<&str> = IOSCHED_KEYS.iter().map(|(k, _)| *k).collect();
    t.finish(&known)
}

/// bfq's files written as `[disks.NAME.queue]` keys (their place before
/// they moved to `queue.iosched`, where sysfs has them): an error that
/// names the new place.
fn refuse_moved_iosched_keys(q: &Obj) -> Result<(), ScenarioError> {
    for key in BFQ_KEYS {
        if let Some(n) = q.node(key) {
            let msg = format!("{key} is a file of bfq's queue/iosched/ directory: write it under [{}.iosched]", q.path);
            return Err(q.err(key, &n.at, msg));
        }
    }
    Ok(())
}

fn check_iosched(q: &Obj, scheduler: Elevator) -> Result<(), ScenarioError> {
    let Some(t) = q.table("iosched")? else { return Ok(()) };
    for &(key, owner) in IOSCHED_KEYS {
        if let (Some(n), true) = (t.node(key), owner != scheduler) {
            return Err(t.err(key, &n.at, format!("a file of {}'s iosched/ directory; this queue's scheduler is {}", owner.name(), scheduler.name())));
        }
    }
    Ok(())
}

fn u32_of(q: &Obj, key: &str, v: u64, n: &Node) -> Result<u32, ScenarioError> {
    u32::try_from(v).map_err(|_| q.err(key, &n.at, format!("{v} is too large")))
}

/// Scenario values for the driver's limits, and the sysfs writes.
fn read_queue(q: &Obj, drv: &mut DriverLimits, w: &mut SysfsWrites) -> Result<(), ScenarioError> {
    macro_rules! int {
        ($key:literal, $field:expr, $conv:expr) => {
            if let Some((v, n)) = q.opt_u64($key)? {
                let conv: fn(u64) -> Option<u64> = $conv;
                let v = conv(v).ok_or_else(|| q.err($key, &n.at, format!("{v} is not a whole number of sectors")))?;
                $field = u32_of(q, $key, v, n)?;
            }
        };
    }
    let bytes_to_sectors: fn(u64) -> Option<u64> = |b| (b % 512 == 0).then_some(b >> 9);
    int!("logical_block_size", drv.logical_block_size, Some);
    int!("physical_block_size", drv.physical_block_size, Some);
    int!("minimum_io_size", drv.io_min, Some);
    int!("optimal_io_size", drv.io_opt, Some);
    int!("max_hw_sectors_kb", drv.max_hw_sectors, |kb| Some(kb * 2));
    int!("max_segments", drv.max_segments, Some);
    int!("max_segment_size", drv.max_segment_size, Some);
    int!("dma_alignment", drv.dma_alignment, Some);
    int!("chunk_sectors", drv.chunk_sectors, Some);
    int!("discard_granularity", drv.discard_granularity, Some);
    int!("discard_max_hw_bytes", drv.max_hw_discard_sectors, bytes_to_sectors);
    int!("max_discard_segments", drv.max_discard_segments, Some);
    int!("write_zeroes_max_bytes", drv.max_write_zeroes_sectors, bytes_to_sectors);
    int!("queue_depth", drv.queue_depth, Some);
    int!("nr_hw_queues", drv.nr_hw_queues, Some);
    int!("conventional_zones", drv.nr_conv_zones, Some);
    if let Some((v, _)) = q.opt_u64("virt_boundary_mask")? {
        drv.virt_boundary_mask = v;
    }
    if let Some((v, _)) = q.opt_u64("seg_boundary_mask")? {
        drv.seg_boundary_mask = v;
    }
    if let Some((s, n)) = q.opt_str("zoned")? {
        drv.zoned = match s.as_str() {
            "none" => Zoned::None,
            "host-aware" => Zoned::HostAware,
            "host-managed" => Zoned::HostManaged,
            _ => return Err(q.err("zoned", &n.at, format!("'{s}' is not none, host-aware or host-managed"))),
        };
    }
    w.max_sectors_kb = q.opt_u64("max_sectors_kb")?.map(|x| x.0);
    if let Some((v, n)) = q.opt_u64("discard_max_bytes")? {
        if drv.max_hw_discard_sectors == 0 && !q.has("discard_max_hw_bytes") && v != 0 {
            return Err(q.err("discard_max_bytes", &n.at, "this kind has no discard support by default; set discard_max_hw_bytes (the driver's limit) too"));
        }
        w.discard_max_bytes = Some(v);
    }
    if let Some((s, n)) = q.opt_str("scheduler")? {
        w.scheduler = Some(match s.trim_matches(|c| c == '[' || c == ']') {
            "none" => Elevator::None,
            "mq-deadline" => Elevator::MqDeadline,
            "kyber" => Elevator::Kyber,
            "bfq" => Elevator::Bfq,
            _ => return Err(q.err("scheduler", &n.at, format!("unknown scheduler '{s}' (none, mq-deadline, kyber or bfq)"))),
        });
    }
    read_iosched(q, w)?;
    w.nr_requests = q.opt_u64("nr_requests")?.map(|x| x.0);
    if let Some((v, n)) = q.opt_u64("nomerges")? {
        if v > 2 {
            return Err(q.err("nomerges", &n.at, format!("{v} is not 0, 1 or 2")));
        }
        w.nomerges = Some(v as u8);
    }
    w.rotational = q.opt_bool("rotational")?.map(|x| x.0);
    if let Some((v, _)) = q.opt_bool("fua")? {
        drv.fua = v;
    }
    if let Some(n) = q.node("wbt_lat_usec") {
        w.wbt_lat_usec = Some(match &n.value {
            Value::Int(v) if *v >= -1 => *v,
            _ => return Err(q.err("wbt_lat_usec", &n.at, "expected microseconds, 0 (off) or -1 (the kernel's default)")),
        });
    }
    if let Some(n) = q.node("write_cache") {
        w.write_cache = Some(match &n.value {
            Value::Bool(b) => *b,
            Value::Str(s) if s == "write back" => true,
            Value::Str(s) if s == "write through" => false,
            _ => return Err(q.err("write_cache", &n.at, "expected \"write back\" or \"write through\" (or true/false)")),
        });
    }
    Ok(())
}

/// bfq's `queue/iosched/` files (`check_iosched` refuses them under any
/// other scheduler); `slice_idle` or `slice_idle_us`.
fn read_bfq_keys(q: &Obj, w: &mut SysfsWrites) -> Result<(), ScenarioError> {
    let mut p = BfqParams::default();
    let mut any = false;
    for key in BFQ_KEYS {
        let Some((v, n)) = q.opt_u64(key)? else { continue };
        if key == "slice_idle_us" && q.has("slice_idle") {
            return Err(q.err(key, &n.at, "give slice_idle or slice_idle_us, not both"));
        }
        p.set(key, v).expect("a bfq key");
        any = true;
    }
    w.bfq = any.then_some(p);
    Ok(())
}

fn read_partitions(d: &Obj, disk_sectors: u64, lbs: u32) -> Result<Vec<PartSpec>, ScenarioError> {
    let Some(t) = d.table("partitions")? else { return Ok(Vec::new()) };
    let mut parts: Vec<PartSpec> = Vec::new();
    for name in t.keys() {
        let p = t.table(&name)?.expect("key listed");
        let (start, sn) = p.opt_u64("start")?.ok_or_else(|| p.err("start", &p.at, "missing (first sector, as /sys/block/DISK/PART/start)"))?;
        let (size, zn) = p.opt_size("size")?.ok_or_else(|| p.err("size", &p.at, "missing"))?;
        if start % lbs as u64 != 0 {
            return Err(p.err("start", &sn.at, format!("sector {start} is not aligned to the logical block size ({lbs} sectors)")));
        }
        if size == 0 || size % (lbs as u64 * 512) != 0 {
            return Err(p.err("size", &zn.at, "is not a positive multiple of the logical block size"));
        }
        let nr = size >> SECTOR_SHIFT;
        if start + nr > disk_sectors {
            return Err(p.err("size", &zn.at, format!("the partition ends at sector {} beyond the disk's {disk_sectors}", start + nr)));
        }
        if let Some(other) = parts.iter().find(|o| start < o.start + o.nr_sectors && o.start < start + nr) {
            return Err(p.err("start", &sn.at, format!("overlaps partition {}", other.name)));
        }
        p.finish(PART_KEYS)?;
        parts.push(PartSpec { name, start, nr_sectors: nr });
    }
    t.finish(&[])?;
    Ok(parts)
}

/// A device the workload may address: its size, block size and alignment.
pub(crate) struct DevInfo {
    pub nr_sectors: u64,
    pub lbs: u32,
    pub dma_alignment: u32,
}

pub(crate) fn find_dev(disks: &[DiskSpec], name: &str) -> Option<DevInfo> {
    for d in disks {
        let info = |nr| DevInfo { nr_sectors: nr, lbs: d.queue.limits.logical_block_size, dma_alignment: d.queue.limits.dma_alignment };
        if d.name == name {
            return Some(info(d.nr_sectors));
        }
        if let Some(p) = d.partitions.iter().find(|p| p.name == name) {
            return Some(info(p.nr_sectors));
        }
    }
    None
}

pub(crate) fn dev_names(disks: &[DiskSpec]) -> String {
    let mut v = Vec::new();
    for d in disks {
        v.push(d.name.clone());
        v.extend(d.partitions.iter().map(|p| p.name.clone()));
    }
    if v.is_empty() {
        "none defined".into()
    } else {
        v.join(", ")
    }
}

