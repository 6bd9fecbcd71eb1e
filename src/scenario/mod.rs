//! Scenario files: one TOML file describing the stack (disks, their queue
//! limits by sysfs name, partitions), the kernel profile and the workload.
//! See docs/scenario.md for the format.
//!
//! [`load`] reads and validates everything up front — every error names the
//! file, the line and the key — and [`Scenario::build`] turns the result
//! into an [`Engine`] ready to run.

pub mod tree;

use crate::bio::{req, BvecBuilder, Op, BIO_MAX_VECS, PAGE_SIZE, SECTOR_SHIFT};
use crate::disk::ServiceModel;
use crate::engine::{Engine, EngineBuilder};
use crate::genhd::{DevId, DiskKind, Queue};
use crate::limits::{resolve, DriverLimits, Elevator, LimitError, SysfsWrites, Zoned};
use crate::profile::{self, Behaviour, Profile, SWITCHES};
use crate::source::bios::BioList;
use crate::source::dd::{Dd, DdSide};
use crate::source::dio::UserBuffer;
use crate::source::BioSpec;

pub use tree::ScenarioError;
use tree::{apply_set, Doc, Node, Obj, Origin, Value};

const ROOT_KEYS: &[&str] = &["name", "description", "kernel", "seed", "behaviour", "disks", "workload"];
const DISK_KEYS: &[&str] = &["kind", "size", "queue", "partitions", "model"];
const PART_KEYS: &[&str] = &["start", "size"];
const MODEL_KEYS: &[&str] = &[
    "preset",
    "read_latency_us",
    "write_latency_us",
    "bandwidth",
    "write_bandwidth",
    "iops",
    "parallelism",
    "discard_latency_us",
    "discard_us_per_gib",
    "discard_parallelism",
    "flush_latency_us",
    "rpm",
    "seek_min_us",
    "seek_max_us",
];
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
    "zoned",
];
const DD_KEYS: &[&str] =
    &["type", "if", "of", "bs", "count", "skip", "seek", "iflag", "oflag", "buffer_offset", "buffer_fragmentation", "pid", "comm"];
const BIOS_KEYS: &[&str] = &["type", "device", "iodepth", "batch", "plug", "bio", "pid", "comm"];
const BIO_KEYS: &[&str] = &["device", "op", "sector", "size", "flags", "bvecs", "repeat", "stride"];

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
}

#[derive(Clone, Debug)]
pub struct DdSpec {
    pub input: Option<(String, u64, u32)>,
    pub output: Option<(String, u64, u32)>,
    pub bs: u64,
    pub total: u64,
    pub buffer_offset: u32,
    pub fragmentation: f64,
}

#[derive(Clone, Debug)]
pub struct BioEntry {
    pub device: String,
    pub op: Op,
    pub flags: u32,
    pub sector: u64,
    pub size: u32,
    pub bvecs: Vec<crate::bio::Bvec>,
    /// Submitted this many times, `stride` sectors apart.
    pub repeat: u64,
    pub stride: u64,
}

#[derive(Clone, Debug)]
pub enum WorkloadKind {
    None,
    Dd(DdSpec),
    Bios { bios: Vec<BioEntry>, iodepth: u32, batch: u32, plug: bool },
}

#[derive(Clone, Debug)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub pid: u32,
    pub comm: String,
}

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub profile: Profile,
    pub beh: Behaviour,
    pub seed: u64,
    pub disks: Vec<DiskSpec>,
    pub workload: Workload,
}

/// Read and validate `text` (the contents of `file`), with `--kernel` and
/// `--set` overrides applied.
pub fn load(file: &str, text: &str, kernel: Option<&str>, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let doc = Doc { file: file.to_string(), text: text.to_string() };
    let mut root = doc.parse()?;
    for s in sets {
        apply_set(&doc, &mut root, s)?;
    }
    let o = Obj::root(&doc, &root);
    let name = o.opt_str("name")?.map(|x| x.0);
    let description = o.opt_str("description")?.map(|x| x.0);
    let seed = o.opt_u64("seed")?.map(|x| x.0).unwrap_or(1);
    let profile = read_profile(&o, kernel)?;
    let beh = read_behaviour(&o, &profile)?;
    let disks = read_disks(&o, &beh)?;
    let workload = read_workload(&o, &disks, seed)?;
    o.finish(ROOT_KEYS)?;
    Ok(Scenario { file: file.to_string(), name, description, profile, beh, seed, disks, workload })
}

fn profile_names() -> String {
    profile::profiles().iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

fn read_profile(o: &Obj, kernel: Option<&str>) -> Result<Profile, ScenarioError> {
    let in_file = o.node("kernel");
    if let Some(k) = kernel {
        return profile::profile(k).ok_or_else(|| ScenarioError {
            file: "--kernel".into(),
            line: None,
            key: String::new(),
            msg: format!("unknown kernel profile '{k}' (known: {})", profile_names()),
            from_set: false,
        });
    }
    match in_file {
        None => Ok(profile::profile(profile::DEFAULT_PROFILE).expect("default profile exists")),
        Some(n) => {
            let k = match (&n.value, &n.raw) {
                (Value::Str(s), _) => s.clone(),
                (_, Some(raw)) => raw.clone(),
                (v, None) => return Err(o.err("kernel", &n.at, format!("expected a string such as \"6.12\", found {}", tree::describe(v)))),
            };
            profile::profile(&k).ok_or_else(|| o.err("kernel", &n.at, format!("unknown kernel profile '{k}' (known: {})", profile_names())))
        }
    }
}

fn read_behaviour(o: &Obj, p: &Profile) -> Result<Behaviour, ScenarioError> {
    let mut beh = p.behaviour.clone();
    let Some(t) = o.table("behaviour")? else { return Ok(beh) };
    for key in t.keys() {
        let Some(sw) = profile::switch(&key) else { continue };
        let n = t.node(&key).expect("key listed");
        let v = match (&n.value, &n.raw) {
            (Value::Str(s), _) => s.clone(),
            (Value::Int(i), _) => i.to_string(),
            (_, Some(raw)) => raw.clone(),
            (v, None) => return Err(t.err(&key, &n.at, format!("expected one of {}, found {}", sw.values, tree::describe(v)))),
        };
        (sw.set)(&mut beh, &v).map_err(|m| t.err(&key, &n.at, m))?;
    }
    let known: Vec<&str> = SWITCHES.iter().map(|s| s.name).collect();
    t.finish(&known)?;
    Ok(beh)
}

fn limit_err(q: &Obj, disk: &Obj, e: LimitError) -> ScenarioError {
    // Point at the key if the scenario set it, else at the disk.
    match q.node(e.key) {
        Some(n) => q.err(e.key, &n.at, e.msg),
        None => disk.err("kind", &disk.at, format!("the preset's {} does not fit: {}", e.key, e.msg)),
    }
}

fn read_disks(o: &Obj, beh: &Behaviour) -> Result<Vec<DiskSpec>, ScenarioError> {
    let Some(t) = o.table("disks")? else { return Ok(Vec::new()) };
    let mut disks = Vec::new();
    for name in t.keys() {
        let d = t.table(&name)?.expect("key listed");
        disks.push(read_disk(&name, &d, beh)?);
    }
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

fn read_disk(name: &str, d: &Obj, beh: &Behaviour) -> Result<DiskSpec, ScenarioError> {
    let (kind_s, kind_n) = d.opt_str("kind")?.ok_or_else(|| d.err("kind", &d.at, format!("missing (one of {})", DiskKind::DISK_NAMES.join(", "))))?;
    let kind = DiskKind::from_name(&kind_s)
        .ok_or_else(|| d.err("kind", &kind_n.at, format!("unknown kind '{kind_s}' (one of {})", DiskKind::DISK_NAMES.join(", "))))?;
    let (size, size_n) = d.opt_size("size")?.ok_or_else(|| d.err("size", &d.at, "missing (e.g. size = \"1TiB\")"))?;
    let mut drv = kind.driver_limits(beh.limits_model == crate::limits::LimitsModel::Legacy);
    let mut writes = SysfsWrites::default();
    let q = d.table("queue")?.unwrap_or_else(|| d.empty("queue"));
    read_queue(&q, &mut drv, &mut writes)?;
    q.finish(QUEUE_KEYS)?;
    let (limits, attrs) = resolve(&drv, &writes, beh.limits_model, beh.def_max_sectors_cap).map_err(|e| limit_err(&q, d, e))?;
    if size == 0 || size % limits.logical_block_size as u64 != 0 {
        return Err(d.err("size", &size_n.at, format!("{size} bytes is not a positive multiple of the logical block size ({})", limits.logical_block_size)));
    }
    let nr_sectors = size >> SECTOR_SHIFT;
    let model = read_model(d, kind)?;
    let partitions = read_partitions(d, nr_sectors, limits.lbs_sectors())?;
    d.finish(DISK_KEYS)?;
    Ok(DiskSpec { name: name.to_string(), kind, nr_sectors, queue: Queue { limits, attrs }, model, partitions })
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
            "bfq" | "kyber" => return Err(q.err("scheduler", &n.at, format!("'{s}' is not modelled (use none or mq-deadline)"))),
            _ => return Err(q.err("scheduler", &n.at, format!("unknown scheduler '{s}' (none or mq-deadline)"))),
        });
    }
    w.nr_requests = q.opt_u64("nr_requests")?.map(|x| x.0);
    if let Some((v, n)) = q.opt_u64("nomerges")? {
        if v > 2 {
            return Err(q.err("nomerges", &n.at, format!("{v} is not 0, 1 or 2")));
        }
        w.nomerges = Some(v as u8);
    }
    w.rotational = q.opt_bool("rotational")?.map(|x| x.0);
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

fn read_model(d: &Obj, kind: DiskKind) -> Result<ServiceModel, ScenarioError> {
    let Some(t) = d.table("model")? else { return Ok(ServiceModel::for_kind(kind)) };
    let mut m = match t.opt_str("preset")? {
        None => ServiceModel::for_kind(kind),
        Some((name, n)) => ServiceModel::preset(&name).ok_or_else(|| {
            let names: Vec<&str> = crate::disk::PRESETS.iter().map(|p| p.0).collect();
            t.err("preset", &n.at, format!("unknown preset '{name}' (one of {})", names.join(", ")))
        })?,
    };
    let us = |key: &str, field: &mut u64| -> Result<(), ScenarioError> {
        if let Some((v, n)) = t.opt_f64(key)? {
            if v < 0.0 {
                return Err(t.err(key, &n.at, format!("{v} is negative")));
            }
            *field = (v * 1000.0) as u64;
        }
        Ok(())
    };
    us("read_latency_us", &mut m.read_latency_ns)?;
    us("write_latency_us", &mut m.write_latency_ns)?;
    us("discard_latency_us", &mut m.discard_latency_ns)?;
    us("discard_us_per_gib", &mut m.discard_ns_per_gib)?;
    us("flush_latency_us", &mut m.flush_latency_ns)?;
    let positive = |key: &str| -> Result<Option<u64>, ScenarioError> {
        match t.opt_size(key)? {
            Some((0, n)) => Err(t.err(key, &n.at, "must be positive")),
            v => Ok(v.map(|x| x.0)),
        }
    };
    if let Some(v) = positive("bandwidth")? {
        m.bandwidth = v;
        m.write_bandwidth = v;
    }
    if let Some(v) = positive("write_bandwidth")? {
        m.write_bandwidth = v;
    }
    if let Some((v, _)) = t.opt_u64("iops")? {
        m.iops = v;
    }
    if let Some(v) = positive("parallelism")? {
        m.parallelism = v.min(65536) as u32;
    }
    if let Some(v) = positive("discard_parallelism")? {
        m.discard_parallelism = v.min(65536) as u32;
    }
    if let Some(rpm) = positive("rpm")? {
        let r = m.rotation.get_or_insert(crate::disk::Rotation { rpm: 7200, seek_min_ns: 800_000, seek_max_ns: 16_000_000 });
        r.rpm = rpm.min(100_000) as u32;
    }
    let mut seek = |key: &str, min: bool| -> Result<(), ScenarioError> {
        if let Some((v, n)) = t.opt_f64(key)? {
            let Some(r) = m.rotation.as_mut() else {
                return Err(t.err(key, &n.at, "only for rotating disks: set rpm (or preset = \"hdd-7200\")"));
            };
            let ns = (v.max(0.0) * 1000.0) as u64;
            if min { r.seek_min_ns = ns } else { r.seek_max_ns = ns }
        }
        Ok(())
    };
    seek("seek_min_us", true)?;
    seek("seek_max_us", false)?;
    t.finish(MODEL_KEYS)?;
    Ok(m)
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
struct DevInfo {
    nr_sectors: u64,
    lbs: u32,
    dma_alignment: u32,
}

fn find_dev(disks: &[DiskSpec], name: &str) -> Option<DevInfo> {
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

fn dev_names(disks: &[DiskSpec]) -> String {
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

fn read_workload(o: &Obj, disks: &[DiskSpec], seed: u64) -> Result<Workload, ScenarioError> {
    let Some(w) = o.table("workload")? else {
        return Ok(Workload { kind: WorkloadKind::None, pid: 0, comm: String::new() });
    };
    let (ty, tn) = w.opt_str("type")?.ok_or_else(|| w.err("type", &w.at, "missing (\"dd\" or \"bios\")"))?;
    let (default_comm, keys) = match ty.as_str() {
        "dd" => ("dd", DD_KEYS),
        "bios" => ("blkstack", BIOS_KEYS),
        _ => return Err(w.err("type", &tn.at, format!("unknown workload type '{ty}' (\"dd\" or \"bios\")"))),
    };
    let pid = w.opt_u64("pid")?.map(|x| x.0 as u32).unwrap_or(4242);
    let comm = w.opt_str("comm")?.map(|x| x.0).unwrap_or_else(|| default_comm.to_string());
    let kind = match ty.as_str() {
        "dd" => WorkloadKind::Dd(read_dd(&w, disks, seed)?),
        _ => read_bios(&w, disks)?,
    };
    w.finish(keys)?;
    Ok(Workload { kind, pid, comm })
}

/// A dd operand naming a file: a scenario device or a pseudo device.
enum DdFile {
    Dev(String),
    Zero,
    Null,
}

fn dd_file(w: &Obj, key: &str, disks: &[DiskSpec]) -> Result<Option<DdFile>, ScenarioError> {
    let Some((path, n)) = w.opt_str(key)? else { return Ok(None) };
    let name = path.strip_prefix("/dev/").unwrap_or(&path);
    Ok(Some(match name {
        "zero" => DdFile::Zero,
        "null" => DdFile::Null,
        _ if find_dev(disks, name).is_some() => DdFile::Dev(name.to_string()),
        _ => return Err(w.err(key, &n.at, format!("'{path}' is not a scenario device (devices: {}) nor /dev/zero or /dev/null", dev_names(disks)))),
    }))
}

fn dd_flags(w: &Obj, key: &str) -> Result<(bool, u32), ScenarioError> {
    let Some((s, n)) = w.opt_str(key)? else { return Ok((false, 0)) };
    let (mut direct, mut flags) = (false, 0);
    for f in s.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        match f {
            "direct" => direct = true,
            "sync" | "dsync" if key == "oflag" => flags |= req::FUA,
            "sync" | "dsync" | "fullblock" | "nocache" | "noatime" => {}
            _ => return Err(w.err(key, &n.at, format!("unsupported flag '{f}' (direct, sync, dsync, fullblock)"))),
        }
    }
    Ok((direct, flags))
}

fn read_dd(w: &Obj, disks: &[DiskSpec], seed: u64) -> Result<DdSpec, ScenarioError> {
    let input = dd_file(w, "if", disks)?;
    let output = dd_file(w, "of", disks)?;
    let (bs, bsn) = w.opt_size("bs")?.unwrap_or((512, w.node("type").expect("read")));
    if bs == 0 {
        return Err(w.err("bs", &bsn.at, "must be positive"));
    }
    let count = w.opt_u64("count")?;
    let skip = w.opt_u64("skip")?.map(|x| x.0).unwrap_or(0);
    let seek = w.opt_u64("seek")?.map(|x| x.0).unwrap_or(0);
    let (idirect, _) = dd_flags(w, "iflag")?;
    let (odirect, oflags) = dd_flags(w, "oflag")?;
    let at = |k: &str| w.node(k).map(|n| n.at.clone()).unwrap_or_else(|| w.at.clone());
    let dev_of = |f: &Option<DdFile>| match f {
        Some(DdFile::Dev(d)) => Some(d.clone()),
        _ => None,
    };
    let (in_dev, out_dev) = (dev_of(&input), dev_of(&output));
    if in_dev.is_none() && out_dev.is_none() {
        return Err(w.err("if", &at("if"), "dd moves no data through a scenario device: set if= or of= to one"));
    }
    if matches!(input, None | Some(DdFile::Null)) && out_dev.is_some() {
        return Err(w.err("if", &at("if"), "a write needs an input: if=/dev/zero or a scenario device"));
    }
    // Bytes available from the input side, and room on the output side.
    let mut total = count.map(|(c, _)| c.saturating_mul(bs));
    let side = |dev: &Option<String>, blocks: u64, key: &str, flagkey: &str, direct: bool| -> Result<Option<(String, u64, u32)>, ScenarioError> {
        let Some(name) = dev else { return Ok(None) };
        let info = find_dev(disks, name).expect("checked");
        if !direct {
            return Err(w.err(flagkey, &at(flagkey), format!("buffered I/O through the page cache is not modelled yet: add {flagkey}=direct")));
        }
        let start = blocks.saturating_mul(bs);
        if bs % info.lbs as u64 != 0 {
            return Err(w.err("bs", &bsn.at, format!("{bs} is not a multiple of {name}'s logical block size ({}): O_DIRECT fails with EINVAL", info.lbs)));
        }
        let size = info.nr_sectors << SECTOR_SHIFT;
        if start >= size {
            return Err(w.err(key, &at(key), format!("offset {start} is at or beyond the end of {name} ({size} bytes)")));
        }
        let _ = info.dma_alignment;
        Ok(Some((name.clone(), start, info.lbs)))
    };
    let input = side(&in_dev, skip, "skip", "iflag", idirect)?;
    let output = side(&out_dev, seek, "seek", "oflag", odirect)?;
    for (s, what) in [(&input, "read"), (&output, "write")] {
        let Some((name, start, _)) = s else { continue };
        let size = find_dev(disks, name).expect("checked").nr_sectors << SECTOR_SHIFT;
        match total {
            Some(t) if start + t > size => {
                return Err(w.err(
                    "count",
                    &at("count"),
                    format!("dd would {what} {t} bytes from offset {start} but {name} ends at {size}: I/O beyond the end of the device"),
                ))
            }
            Some(_) => {}
            None => total = Some(size - start),
        }
    }
    let total = total.expect("a device side sets it");
    let buffer_offset = w.opt_u64("buffer_offset")?;
    let buffer_offset = match buffer_offset {
        None => 0,
        Some((v, n)) => {
            let align = [&in_dev, &out_dev].iter().filter_map(|d| d.as_ref()).map(|d| find_dev(disks, d).expect("checked").dma_alignment).max().unwrap_or(511);
            if v >= PAGE_SIZE || v & align as u64 != 0 {
                return Err(w.err("buffer_offset", &n.at, format!("{v} is not below one page and aligned to dma_alignment + 1 ({}): O_DIRECT fails with EINVAL", align + 1)));
            }
            v as u32
        }
    };
    let fragmentation = match w.opt_f64("buffer_fragmentation")? {
        None => 0.0,
        Some((p, n)) if !(0.0..=1.0).contains(&p) => return Err(w.err("buffer_fragmentation", &n.at, format!("{p} is not a probability between 0 and 1"))),
        Some((p, _)) => p,
    };
    let _ = seed;
    Ok(DdSpec { input, output: output.map(|(n, s, l)| (n, s, l | oflags << 16)), bs, total, buffer_offset, fragmentation })
}

fn read_bios(w: &Obj, disks: &[DiskSpec]) -> Result<WorkloadKind, ScenarioError> {
    let default_dev = w.opt_str("device")?;
    let iodepth = w.opt_u64("iodepth")?.map(|x| x.0 as u32);
    let (items, an) = w.opt_array("bio")?.ok_or_else(|| w.err("bio", &w.at, "missing: add [[workload.bio]] entries"))?;
    let mut bios = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Table(t) = &item.value else {
            return Err(w.err("bio", &an.at, format!("entry {} is {}, expected a table", i + 1, tree::describe(&item.value))));
        };
        let b = Obj::child(w.doc, format!("{}.bio[{}]", w.path, i), item.at.clone(), t);
        bios.push(read_bio(&b, default_dev.as_ref().map(|x| x.0.as_str()), disks)?);
        b.finish(BIO_KEYS)?;
    }
    let iodepth = iodepth.unwrap_or(bios.len() as u32).max(1);
    let batch = w.opt_u64("batch")?.map(|x| x.0.clamp(1, u32::MAX as u64) as u32).unwrap_or(1);
    let plug = w.opt_bool("plug")?.map(|x| x.0).unwrap_or(false);
    Ok(WorkloadKind::Bios { bios, iodepth, batch, plug })
}

/// Where an explicit bio's data sits when it gives no bvecs: at 4 GiB plus
/// its byte offset on the device, so bios of adjacent sectors are in
/// adjacent memory, as page-cache pages of consecutive blocks would be.
const DEFAULT_BIO_PHYS: u64 = 0x1_0000_0000;

fn read_bio(b: &Obj, default_dev: Option<&str>, disks: &[DiskSpec]) -> Result<BioEntry, ScenarioError> {
    let device = match b.opt_str("device")? {
        Some((d, _)) => d,
        None => default_dev.map(str::to_string).ok_or_else(|| b.err("device", &b.at, "missing (here or as workload.device)"))?,
    };
    let device = device.strip_prefix("/dev/").unwrap_or(&device).to_string();
    let info = find_dev(disks, &device).ok_or_else(|| b.err("device", &b.at, format!("'{device}' is not a scenario device ({})", dev_names(disks))))?;
    let (op_s, opn) = b.opt_str("op")?.ok_or_else(|| b.err("op", &b.at, format!("missing (one of {})", Op::NAMES.join(", "))))?;
    let op = Op::from_name(&op_s).ok_or_else(|| b.err("op", &opn.at, format!("unknown op '{op_s}' (one of {})", Op::NAMES.join(", "))))?;
    let (sector, secn) = b.opt_u64("sector")?.ok_or_else(|| b.err("sector", &b.at, "missing"))?;
    let mut flags = 0;
    if let Some((arr, fnode)) = b.opt_array("flags")? {
        for f in arr {
            let name = match &f.value {
                Value::Str(s) => s.as_str(),
                v => return Err(b.err("flags", &fnode.at, format!("expected flag names, found {}", tree::describe(v)))),
            };
            let names: Vec<&str> = req::NAMES.iter().map(|x| x.0).collect();
            flags |= req::from_name(name).ok_or_else(|| b.err("flags", &f.at, format!("unknown flag '{name}' (one of {})", names.join(", "))))?;
        }
    }
    let mut bvecs = Vec::new();
    if let Some((arr, vn)) = b.opt_array("bvecs")? {
        if !op.has_data() {
            return Err(b.err("bvecs", &vn.at, format!("a {} bio carries no data pages", op.name())));
        }
        let mut builder = BvecBuilder::new(BIO_MAX_VECS);
        for v in arr {
            let pair = match &v.value {
                Value::Array(p) if p.len() == 2 => (&p[0].value, &p[1].value),
                _ => return Err(b.err("bvecs", &v.at, "each bvec is [physical_address, length_in_bytes]")),
            };
            let (Value::Int(phys), Value::Int(len)) = pair else {
                return Err(b.err("bvecs", &v.at, "each bvec is [physical_address, length_in_bytes] (integers)"));
            };
            if *phys < 0 || *len <= 0 || *len > u32::MAX as i64 {
                return Err(b.err("bvecs", &v.at, "address must be non-negative and length positive"));
            }
            if !builder.add(*phys as u64, *len as u32) {
                return Err(b.err("bvecs", &v.at, format!("the bio is full: more than {BIO_MAX_VECS} bvecs after merging contiguous ones")));
            }
        }
        bvecs = builder.bvecs;
    }
    let size = match (b.opt_size("size")?, bvecs.is_empty()) {
        (Some((s, sn)), false) if s != bvecs.iter().map(|v| v.len as u64).sum::<u64>() => {
            return Err(b.err("size", &sn.at, "does not equal the total length of bvecs"));
        }
        (Some((s, _)), _) => s,
        (None, false) => bvecs.iter().map(|v| v.len as u64).sum(),
        (None, true) if op == Op::Flush => 0,
        (None, true) => return Err(b.err("size", &b.at, "missing")),
    };
    let at_size = b.node("size").map(|n| n.at.clone()).unwrap_or_else(|| b.at.clone());
    if size > u32::MAX as u64 {
        return Err(b.err("size", &at_size, "exceeds UINT_MAX bytes (bi_size is 32-bit)"));
    }
    if size % info.lbs as u64 != 0 || sector % (info.lbs as u64 / 512) != 0 {
        return Err(b.err("size", &at_size, format!("sector {sector} + {size} bytes is not aligned to {device}'s logical block size ({})", info.lbs)));
    }
    let repeat = match b.opt_u64("repeat")? {
        Some((0, n)) => return Err(b.err("repeat", &n.at, "must be at least 1")),
        Some((r, _)) => r,
        None => 1,
    };
    let stride = match b.opt_u64("stride")? {
        Some((st, n)) if st % (info.lbs as u64 / 512) != 0 => {
            return Err(b.err("stride", &n.at, format!("{st} sectors is not aligned to {device}'s logical block size ({})", info.lbs)))
        }
        Some((st, _)) => st,
        None => size >> SECTOR_SHIFT,
    };
    let last_end = (repeat - 1).checked_mul(stride).and_then(|x| x.checked_add(sector + (size >> SECTOR_SHIFT))).unwrap_or(u64::MAX);
    if last_end > info.nr_sectors {
        let at = if repeat > 1 { b.node("repeat").map(|n| n.at.clone()).unwrap_or_else(|| secn.at.clone()) } else { secn.at.clone() };
        let key = if repeat > 1 { "repeat" } else { "sector" };
        return Err(b.err(key, &at, format!("I/O beyond the end of {device}: ends at sector {last_end} of {}", info.nr_sectors)));
    }
    if op == Op::Flush {
        // A flush is an empty REQ_OP_WRITE | REQ_PREFLUSH bio.
        return Ok(BioEntry { device, op: Op::Write, flags: flags | req::PREFLUSH, sector, size: 0, bvecs: Vec::new(), repeat, stride });
    }
    if op.has_data() && bvecs.is_empty() && size > 0 {
        let mut builder = BvecBuilder::new(BIO_MAX_VECS);
        builder.add(DEFAULT_BIO_PHYS + sector * 512, size as u32);
        bvecs = builder.bvecs;
    }
    Ok(BioEntry { device, op, flags, sector, size: size as u32, bvecs, repeat, stride })
}

impl Scenario {
    /// Build the engine: devices in file order (each disk, then its
    /// partitions), then the workload's job.
    pub fn build(&self) -> Engine {
        let mut b = EngineBuilder::new(self.beh.clone());
        for d in &self.disks {
            let id = b.add_disk(&d.name, d.kind, d.nr_sectors, d.queue.clone(), d.model.clone());
            for (i, p) in d.partitions.iter().enumerate() {
                b.add_partition(id, &p.name, i as u32 + 1, p.start, p.nr_sectors);
            }
        }
        let mut engine = b.build();
        let dev = |e: &Engine, name: &str| -> DevId { e.core.topo.by_name(name).expect("validated device") };
        match &self.workload.kind {
            WorkloadKind::None => {}
            WorkloadKind::Dd(dd) => {
                let side = |s: &Option<(String, u64, u32)>| {
                    s.as_ref().map(|(n, start, l)| DdSide { dev: dev(&engine, n), start: *start, lbs: l & 0xFFFF, flags: l >> 16 })
                };
                let buffer = UserBuffer::new(dd.bs, dd.buffer_offset, dd.fragmentation, self.seed);
                let source = Dd::new(side(&dd.input), side(&dd.output), dd.bs, dd.total, buffer);
                engine.add_job(self.workload.pid, &self.workload.comm, Box::new(source), 1, 1);
            }
            WorkloadKind::Bios { bios, iodepth, batch, plug } => {
                let specs = bios
                    .iter()
                    .map(|e| {
                        let spec = BioSpec { dev: dev(&engine, &e.device), op: e.op, flags: e.flags, sector: e.sector, bvecs: e.bvecs.clone(), size: e.size };
                        (spec, e.repeat, e.stride)
                    })
                    .collect();
                engine.add_job(self.workload.pid, &self.workload.comm, Box::new(BioList::new(specs, *plug)), *iodepth, *batch);
            }
        }
        engine
    }
}
