//! The `[workload]` table: what submits I/O (`dd`, an explicit bio list,
//! and the job-based types read in their own files: fio, the discard tools,
//! trace replay).

use crate::bio::{req, BvecBuilder, Op, BIO_MAX_VECS, PAGE_SIZE, SECTOR_SHIFT};

use std::rc::Rc;

use crate::genhd::Topology;
use crate::profile::Behaviour;
use crate::source::dd::{Dd, DdSide};
use crate::source::dio::{BufferLayout, BufferSegment, DioRules, UserBuffer};
use crate::source::pagecache::SharedCaches;

use super::disks::{dev_names, find_dev, DiskSpec};
use super::cgroups::{cgroup_index, cgroup_names, CgroupSpec};
use super::jobs::JobSpec;
use super::tree::{self, Obj, ScenarioError, Value};
use super::stack::StackSpec;
use super::workload_discard;
use super::workload_fio::{self, FioDevices};
use super::workload_replay;
use crate::stats::fio::FioMeta;

const DD_KEYS: &[&str] = &[
    "type",
    "if",
    "of",
    "bs",
    "count",
    "skip",
    "seek",
    "iflag",
    "oflag",
    "conv",
    "blocksize",
    "dirty_background_bytes",
    "buffer_offset",
    "buffer_fragmentation",
    "buffer_segments",
    "buffer_hugepages",
    "pid",
    "comm",
];
const BIOS_KEYS: &[&str] = &["type", "device", "iodepth", "batch", "plug", "bio", "pid", "comm"];
const BIO_KEYS: &[&str] = &["device", "op", "sector", "size", "flags", "crypt", "bvecs", "repeat", "stride"];
/// One side of a dd copy on a scenario device.
#[derive(Clone, Debug)]
pub struct DdTarget {
    pub device: String,
    /// Byte offset of the first block (`skip`/`seek` × `bs`).
    pub start: u64,
    pub lbs: u32,
    /// `REQ_*` flags of this side's bios (`oflag=sync` adds FUA).
    pub flags: u32,
}

#[derive(Clone, Debug)]
pub struct DdSpec {
    pub input: Option<DdTarget>,
    pub output: Option<DdTarget>,
    pub bs: u64,
    pub total: u64,
    pub buffer_offset: u32,
    /// The user buffer's physical pages.
    pub layout: BufferLayout,
    /// `buffer_hugepages`: the buffer is in 2 MiB huge pages (folios).
    pub hugepages: bool,
    /// The output is written through the page cache (no `oflag=direct`).
    pub out_buffered: bool,
    /// `conv=fsync` or `conv=fdatasync`.
    pub conv_fsync: bool,
    /// `blocksize`: the output's soft block size (`blockdev --setbsz`).
    pub blocksize: Option<u32>,
    /// `dirty_background_bytes`: background writeback threshold.
    pub dirty_background: Option<u64>,
}

impl DdSpec {
    /// The dd job: its sides resolved on the built devices.
    pub fn job(&self, seed: u64, pid: u32, comm: &str) -> JobSpec {
        let dd = self.clone();
        let make = Rc::new(move |topo: &Topology, beh: &Behaviour, shared: &mut SharedCaches| {
            let side = |s: &Option<DdTarget>, shared: &mut SharedCaches, buffered: bool| {
                s.as_ref().map(|t| {
                    let dev = topo.by_name(&t.device).expect("a validated device");
                    let rules = DioRules::new(beh, t.lbs, topo.limits(dev).max_sectors);
                    let cache = if buffered { shared.open(topo, dev, dd.blocksize, dd.dirty_background).ok() } else { None };
                    DdSide { dev, start: t.start, lbs: t.lbs, flags: t.flags, rules, cache }
                })
            };
            let input = side(&dd.input, shared, false);
            let output = side(&dd.output, shared, dd.out_buffered);
            let mut buffer = UserBuffer::with_layout(dd.bs, dd.buffer_offset, &dd.layout, seed);
            if dd.hugepages {
                buffer.folio_pages = HUGE_PAGE_PAGES;
            }
            let mut source = Dd::new(input, output, dd.bs, dd.total, buffer);
            source.conv_fsync = dd.conv_fsync;
            Box::new(source) as Box<dyn crate::source::Source>
        });
        JobSpec { pid, comm: comm.to_string(), iodepth: 1, batch: 1, complete_min: 1, ioprio: Default::default(), cgroup: 0, stonewall: false, async_io: false, make }
    }
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
    /// The `syscall` flag: the flags of the system call the entry stands
    /// for are added when the profile is known
    /// ([`crate::source::bios::syscall_flags`]).
    pub syscall: bool,
}

/// The flag name of [`BioEntry::syscall`]: not a `REQ_*` flag.
pub const SYSCALL_FLAG: &str = "syscall";

#[derive(Clone, Debug)]
pub enum WorkloadKind {
    None,
    Dd(DdSpec),
    Bios { bios: Vec<BioEntry>, iodepth: u32, batch: u32, plug: bool },
    /// Jobs whose sources are built with the stack (fio, discard tools, replay).
    Jobs(Vec<JobSpec>),
}

#[derive(Clone, Debug)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub pid: u32,
    pub comm: String,
    /// Things the workload ignored (fio's cosmetic options), for the summary.
    pub warnings: Vec<String>,
    /// For fio workloads: what its report needs.
    pub fio: Option<FioMeta>,
    /// `cgroup`: the group its tasks run in (1 + index in `[cgroups]`; 0
    /// the root). A fio job's own `cgroup=` wins.
    pub cgroup: u16,
}

/// What the workload reader needs from the rest of the scenario.
pub(crate) struct WorkloadCtx<'a> {
    /// Disks, then stacked devices (in build order).
    pub targets: &'a [DiskSpec],
    pub nr_disks: usize,
    pub stacked: &'a [StackSpec],
    pub seed: u64,
    pub beh: &'a Behaviour,
    pub cgroups: &'a [CgroupSpec],
}

const TYPES: &str = "dd, bios, fio, blkdiscard, mkfs.xfs, fstrim or replay";

impl Workload {
    /// No workload: nothing runs.
    pub fn none() -> Workload {
        Workload { kind: WorkloadKind::None, pid: 0, comm: String::new(), warnings: Vec::new(), fio: None, cgroup: 0 }
    }
}

/// The `[workload]` table, if any.
pub(crate) fn read_workload(o: &Obj, ctx: &WorkloadCtx) -> Result<Workload, ScenarioError> {
    match o.table("workload")? {
        None => Ok(Workload::none()),
        Some(w) => read_workload_table(&w, ctx),
    }
}

/// One workload table (`[workload]` or a `[[steps]]` entry).
pub(crate) fn read_workload_table(w: &Obj, ctx: &WorkloadCtx) -> Result<Workload, ScenarioError> {
    let disks = ctx.targets;
    let (ty, tn) = w.opt_str("type")?.ok_or_else(|| w.err("type", &w.at, format!("missing ({TYPES})")))?;
    let (default_comm, keys) = match ty.as_str() {
        "dd" => ("dd", DD_KEYS),
        "bios" => ("blkstack", BIOS_KEYS),
        "blkdiscard" => ("blkdiscard", workload_discard::BLKDISCARD_KEYS),
        "mkfs.xfs" => ("mkfs.xfs", workload_discard::MKFS_KEYS),
        "fstrim" => ("fstrim", workload_discard::FSTRIM_KEYS),
        "fio" => ("fio", workload_fio::FIO_KEYS),
        "replay" => ("replay", workload_replay::REPLAY_KEYS),
        _ => return Err(w.err("type", &tn.at, format!("unknown workload type '{ty}' ({TYPES})"))),
    };
    let pid = w.opt_u64("pid")?.map(|x| x.0 as u32).unwrap_or(4242);
    let comm = w.opt_str("comm")?.map(|x| x.0).unwrap_or_else(|| default_comm.to_string());
    let cgroup = read_cgroup(w, ctx.cgroups)?;
    let (mut warnings, mut fio) = (Vec::new(), None);
    let kind = match ty.as_str() {
        "dd" => WorkloadKind::Dd(read_dd(w, disks, ctx.seed)?),
        "bios" => read_bios(w, disks)?,
        "fio" => {
            let devs = FioDevices { targets: disks, nr_disks: ctx.nr_disks, stacked: ctx.stacked, cgroups: ctx.cgroups };
            let f = workload_fio::read(w, &devs, ctx.beh, ctx.seed, pid, &comm)?;
            (warnings, fio) = (f.warnings, Some(f.meta));
            WorkloadKind::Jobs(f.jobs)
        }
        "replay" => WorkloadKind::Jobs(workload_replay::read(w, disks, ctx.nr_disks)?),
        t => WorkloadKind::Jobs(workload_discard::read(w, t, disks, ctx.beh, ctx.seed, pid, &comm)?),
    };
    let mut kind = kind;
    if let WorkloadKind::Jobs(jobs) = &mut kind {
        for j in jobs.iter_mut().filter(|j| j.cgroup == 0) {
            j.cgroup = cgroup;
        }
    }
    w.finish(&[keys, &["cgroup"]].concat())?;
    Ok(Workload { kind, pid, comm, warnings, fio, cgroup })
}

/// `cgroup`: a `[cgroups.NAME]` the workload's tasks run in.
fn read_cgroup(w: &Obj, cgroups: &[CgroupSpec]) -> Result<u16, ScenarioError> {
    let Some((name, n)) = w.opt_str("cgroup")? else { return Ok(0) };
    cgroup_index(cgroups, &name).ok_or_else(|| w.err("cgroup", &n.at, format!("'{name}' is not a [cgroups] group ({})", cgroup_names(cgroups))))
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
    let side = |dev: &Option<String>, blocks: u64, key: &str, flagkey: &str, direct: bool| -> Result<Option<DdTarget>, ScenarioError> {
        let Some(name) = dev else { return Ok(None) };
        let info = find_dev(disks, name).expect("checked");
        if !direct && flagkey == "iflag" {
            return Err(w.err(flagkey, &at(flagkey), "buffered reads through the page cache are not modelled: add iflag=direct"));
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
        Ok(Some(DdTarget { device: name.clone(), start, lbs: info.lbs, flags: 0 }))
    };
    let input = side(&in_dev, skip, "skip", "iflag", idirect)?;
    let output = side(&out_dev, seek, "seek", "oflag", odirect)?;
    for (s, what) in [(&input, "read"), (&output, "write")] {
        let Some(DdTarget { device: name, start, .. }) = s else { continue };
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
    let pages = (buffer_offset as u64 + bs).div_ceil(PAGE_SIZE);
    let layout = buffer_layout(w, pages)?;
    let hugepages = w.opt_bool("buffer_hugepages")?.map(|x| x.0).unwrap_or(false);
    let _ = seed;
    let conv_fsync = dd_conv(w)?;
    let out_buffered = out_dev.is_some() && !odirect;
    let lbs = out_dev.as_ref().map(|d| find_dev(disks, d).expect("checked").lbs);
    let blocksize = soft_blocksize(w, "blocksize", lbs)?;
    let dirty_background = w.opt_size("dirty_background_bytes")?.map(|x| x.0);
    let output = output.map(|t| DdTarget { flags: oflags, ..t });
    Ok(DdSpec { input, output, bs, total, buffer_offset, layout, hugepages, out_buffered, conv_fsync, blocksize, dirty_background })
}

/// `conv=`: `fsync`/`fdatasync` (one fsync before exit); `notrunc` and
/// `noerror` change nothing on a block device.
fn dd_conv(w: &Obj) -> Result<bool, ScenarioError> {
    let Some((s, n)) = w.opt_str("conv")? else { return Ok(false) };
    let mut fsync = false;
    for c in s.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        match c {
            "fsync" | "fdatasync" => fsync = true,
            "notrunc" | "noerror" => {}
            _ => return Err(w.err("conv", &n.at, format!("unsupported conversion '{c}' (fsync, fdatasync, notrunc, noerror)"))),
        }
    }
    Ok(fsync)
}

/// Pages of a 2 MiB huge page (`buffer_hugepages`).
const HUGE_PAGE_PAGES: u64 = 512;

/// The user buffer's layout: `buffer_fragmentation` (a probability) or
/// `buffer_segments`, its physically contiguous pieces — each a number of
/// pages, or `{ pages = N, addr = PHYS }` at a page-aligned physical
/// address — holding at least the `pages` the buffer spans.
pub(crate) fn buffer_layout(w: &Obj, pages: u64) -> Result<BufferLayout, ScenarioError> {
    let frag = w.opt_f64("buffer_fragmentation")?;
    let Some((items, n)) = w.opt_array("buffer_segments")? else {
        return match frag {
            None => Ok(BufferLayout::Fragmented(0.0)),
            Some((p, n)) if !(0.0..=1.0).contains(&p) => Err(w.err("buffer_fragmentation", &n.at, format!("{p} is not a probability between 0 and 1"))),
            Some((p, _)) => Ok(BufferLayout::Fragmented(p)),
        };
    };
    if frag.is_some() {
        return Err(w.err("buffer_segments", &n.at, "give buffer_segments or buffer_fragmentation, not both"));
    }
    let key = |i: usize| format!("buffer_segments[{i}]");
    let mut segs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let seg = match &item.value {
            Value::Int(p) if *p > 0 => BufferSegment { pages: *p as u64, pfn: None },
            Value::Table(t) => {
                let o = Obj::child(w.doc, format!("{}.{}", w.path, key(i)), item.at.clone(), t);
                let seg = buffer_segment(&o)?;
                o.finish(&["pages", "addr"])?;
                seg
            }
            _ => return Err(w.err(&key(i), &item.at, "a piece is a number of pages (> 0) or { pages = N, addr = PHYSICAL_ADDRESS }")),
        };
        segs.push(seg);
    }
    let have: u64 = segs.iter().map(|s| s.pages).sum();
    if have < pages {
        return Err(w.err("buffer_segments", &n.at, format!("the pieces hold {have} pages, the buffer spans {pages}")));
    }
    Ok(BufferLayout::Segments(segs))
}

/// One `{ pages = N, addr = A }` piece of `buffer_segments`.
fn buffer_segment(o: &Obj) -> Result<BufferSegment, ScenarioError> {
    let Some((pages, n)) = o.opt_u64("pages")? else { return Err(o.err("pages", &o.at, "missing: the piece's size in pages")) };
    if pages == 0 {
        return Err(o.err("pages", &n.at, "a piece holds at least one page"));
    }
    let pfn = match o.opt_u64("addr")? {
        None => None,
        Some((a, n)) if a % PAGE_SIZE != 0 => return Err(o.err("addr", &n.at, format!("{a:#x} is not page aligned ({PAGE_SIZE})"))),
        Some((a, n)) if (a / PAGE_SIZE).checked_add(pages).map_or(true, |end| end > u64::MAX / PAGE_SIZE) => return Err(o.err("addr", &n.at, format!("{a:#x} + {pages} pages passes the end of the physical address space"))),
        Some((a, _)) => Some(a / PAGE_SIZE),
    };
    Ok(BufferSegment { pages, pfn })
}

/// A soft block size key (`blockdev --setbsz`): a power of two from the
/// logical block size to 4096 (`set_blocksize`).
pub(crate) fn soft_blocksize(w: &Obj, key: &str, lbs: Option<u32>) -> Result<Option<u32>, ScenarioError> {
    let Some((v, n)) = w.opt_size(key)? else { return Ok(None) };
    let min = lbs.unwrap_or(512).max(512) as u64;
    if v < min || v > PAGE_SIZE || !v.is_power_of_two() {
        return Err(w.err(key, &n.at, format!("{v} is not a power of two from the logical block size ({min}) to the page size (4096): set_blocksize refuses it")));
    }
    Ok(Some(v as u32))
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
    let mut syscall = false;
    if let Some((arr, fnode)) = b.opt_array("flags")? {
        for f in arr {
            let name = match &f.value {
                Value::Str(s) => s.as_str(),
                v => return Err(b.err("flags", &fnode.at, format!("expected flag names, found {}", tree::describe(v)))),
            };
            if name == SYSCALL_FLAG {
                if op == Op::ZoneAppend {
                    return Err(b.err("flags", &f.at, "'syscall': no system call submits a zone append"));
                }
                syscall = true;
                continue;
            }
            let names: Vec<&str> = req::NAMES.iter().map(|x| x.0).chain([SYSCALL_FLAG]).collect();
            flags |= req::from_name(name).ok_or_else(|| b.err("flags", &f.at, format!("unknown flag '{name}' (one of {})", names.join(", "))))?;
        }
    }
    if let Some((true, cn)) = b.opt_bool("crypt")? {
        // An inline-encryption context (fscrypt -o inlinecrypt): every
        // disk lacks the hardware, so the blk-crypto fallback takes it.
        if !op.has_data() {
            return Err(b.err("crypt", &cn.at, format!("a {} bio carries no data to encrypt", op.name())));
        }
        flags |= req::CRYPT_CTX;
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
        return Ok(BioEntry { device, op: Op::Write, flags: flags | req::PREFLUSH, sector, size: 0, bvecs: Vec::new(), repeat, stride, syscall });
    }
    if op.has_data() && bvecs.is_empty() && size > 0 {
        let mut builder = BvecBuilder::new(BIO_MAX_VECS);
        builder.add(DEFAULT_BIO_PHYS + sector * 512, size as u32);
        bvecs = builder.bvecs;
    }
    Ok(BioEntry { device, op, flags, sector, size: size as u32, bvecs, repeat, stride, syscall })
}

