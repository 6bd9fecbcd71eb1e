//! The `[md.NAME]` and `[dm.NAME]` tables: md arrays and device-mapper
//! devices built on disks, partitions and each other (docs/scenario.md,
//! "Stacked devices").
//!
//! Each stacked device is read once everything it is built on is known
//! (file order otherwise), so an array may sit on a dm device defined after
//! it. For md, the member layout comes from mdadm's rules
//! ([`crate::md::superblock`]), the geometry from the personality's
//! `setup_conf`, and the queue limits from the personality's limit code
//! stacked over the members ([`crate::limits`]); for dm, from the table
//! ([`crate::dm::parse_table`]) and `dm_calculate_queue_limits`. Sysfs
//! writes in `[….queue]` are applied afterwards. Anything mdadm, dmsetup or
//! the kernel would refuse is an error naming file, line and key.

use std::collections::HashMap;

use crate::bio::SECTOR_SHIFT;
use crate::disk::ServiceModel;
use crate::dm::crypt::CryptPages;
use crate::dm::crypt_io::CryptCpu;
use crate::dm::{parse_table, DmTarget, TargetKind};
use crate::genhd::{DiskKind, Queue, Topology};
use crate::limits::{
    dm_calculate_queue_limits, raid0_limits, raid10_limits, raid5_set_limits, store_queue_writes, DmCryptHints, DmTargetLimits, Elevator, LimitError, QueueAttrs,
    QueueLimits, StackMember, StackedLimits, SysfsWrites,
};
use crate::check::layout::Layout;
use crate::dm::target::MappedDevice;
use crate::md::personality::{MdMember, Mddev, Personality};
use crate::submit::BioDriver;
use crate::md::raid0::create_strip_zones;
use crate::md::raid0::Raid0Member;
use crate::md::raid1_io::raid1_limits;
use crate::md::raid10::{setup_conf as raid10_setup_conf, Raid10Error};
use crate::md::raid5::{setup_conf as raid5_setup_conf, Raid5Error, RmwLevel};
use crate::md::superblock::{member_layout, DataOffsetRounding, Metadata};
use crate::profile::Behaviour;

use super::disks::DiskSpec;
use super::tree::{describe, Node, Obj, Origin, ScenarioError, Value};

const MD_KEYS: &[&str] =
    &["level", "members", "chunk", "layout", "metadata", "data_offset", "size", "devices_handle_discard_safely", "rmw_level", "queue"];
const DM_KEYS: &[&str] = &["table", "queue", "crypt_cpus", "crypt_encrypt_mib_s", "crypt_decrypt_mib_s"];
/// Sysfs files of a stacked device's queue a scenario may write.
const STACK_QUEUE_KEYS: &[&str] = &["max_sectors_kb", "discard_max_bytes"];
/// mdadm's default chunk: 512 KiB.
const DEFAULT_CHUNK_SECTORS: u32 = 1024;

/// A stacked device, resolved: its size and queue, and what it is built on.
#[derive(Clone, Debug)]
pub struct StackSpec {
    pub name: String,
    /// `DiskKind::Md` or `DiskKind::Dm`.
    pub kind: DiskKind,
    pub nr_sectors: u64,
    pub queue: Queue,
    pub body: StackBody,
}

#[derive(Clone, Debug)]
pub enum StackBody {
    /// The personality with its geometry, and the members in slot order
    /// (device name, data offset in sectors).
    Md { pers: Personality, members: Vec<(String, u64)> },
    /// The table and, per target, the devices it maps to (in table order).
    /// `cpu`: the CPU side of its dm-crypt targets.
    Dm { targets: Vec<DmTarget>, devs: Vec<Vec<String>>, cpu: CryptCpu },
}

impl StackSpec {
    /// The device as a workload target (the workload readers take disks).
    pub(crate) fn as_target(&self) -> DiskSpec {
        DiskSpec {
            name: self.name.clone(),
            kind: self.kind,
            nr_sectors: self.nr_sectors,
            queue: self.queue.clone(),
            model: ServiceModel::for_kind(self.kind),
            partitions: Vec::new(),
            loop_file: None,
            multipath: None,
        }
    }

    /// The driver: md's `Mddev` or dm's `MappedDevice`, over the devices of
    /// `topo` (built before this one).
    pub fn driver(&self, topo: &Topology, beh: &crate::profile::Behaviour) -> Box<dyn BioDriver> {
        let id = |name: &str| topo.by_name(name).expect("built on a device built before it");
        match &self.body {
            StackBody::Md { pers, members } => {
                let members = members.iter().map(|(n, off)| MdMember { dev: id(n), data_offset: *off }).collect();
                Box::new(Mddev::new(pers.clone(), members).with_plug_writes(beh.md_plug_writes))
            }
            StackBody::Dm { targets, devs, cpu } => {
                let devs = devs.iter().map(|t| t.iter().map(|n| id(n)).collect()).collect();
                Box::new(MappedDevice::new(targets.clone(), devs, *cpu))
            }
        }
    }

    /// The reference layout the checks compare the driver with.
    pub fn layout(&self, topo: &Topology) -> Layout {
        let id = |name: &str| topo.by_name(name).expect("built");
        match &self.body {
            StackBody::Md { pers, members } => {
                let members = members.iter().map(|(n, off)| MdMember { dev: id(n), data_offset: *off }).collect();
                Layout::Md { pers: pers.clone(), members }
            }
            StackBody::Dm { targets, devs, .. } => {
                let devs = devs.iter().map(|t| t.iter().map(|n| id(n)).collect()).collect();
                Layout::Dm { targets: targets.clone(), devs }
            }
        }
    }

    /// Names of the devices this one is built on.
    pub fn lower_devices(&self) -> Vec<String> {
        match &self.body {
            StackBody::Md { members, .. } => members.iter().map(|m| m.0.clone()).collect(),
            StackBody::Dm { devs, .. } => devs.iter().flatten().cloned().collect(),
        }
    }
}

/// What a stacked device needs of a device below it.
struct Lower {
    nr_sectors: u64,
    limits: QueueLimits,
    rotational: bool,
    write_cache: bool,
    fua: bool,
    /// Partition start on its disk (0 for a whole device).
    start: u64,
    /// The disk of a partition, for claim conflicts.
    whole: String,
}

/// Devices known so far: disks, their partitions, and stacked devices read.
struct Known<'a> {
    disks: &'a [DiskSpec],
    stacked: Vec<StackSpec>,
    /// md claims its members exclusively (`bd_claim` with the array as
    /// holder); dm devices share theirs among themselves.
    claims: HashMap<String, String>,
    /// "MAJ:MIN" of disks and partitions (as the build will number them).
    numbers: HashMap<String, String>,
}

impl<'a> Known<'a> {
    fn new(disks: &'a [DiskSpec]) -> Known<'a> {
        Known { disks, stacked: Vec::new(), claims: HashMap::new(), numbers: device_numbers(disks) }
    }

    fn lower(&self, name: &str) -> Option<Lower> {
        for d in self.disks {
            let mk = |nr_sectors, start| Lower {
                nr_sectors,
                limits: d.queue.limits.clone(),
                rotational: d.queue.attrs.rotational,
                write_cache: d.queue.attrs.write_cache,
                fua: d.queue.attrs.fua,
                start,
                whole: d.name.clone(),
            };
            if d.name == name {
                return Some(mk(d.nr_sectors, 0));
            }
            if let Some(p) = d.partitions.iter().find(|p| p.name == name) {
                return Some(mk(p.nr_sectors, p.start));
            }
        }
        let s = self.stacked.iter().find(|s| s.name == name)?;
        let q = &s.queue;
        Some(Lower { nr_sectors: s.nr_sectors, limits: q.limits.clone(), rotational: q.attrs.rotational, write_cache: q.attrs.write_cache, fua: q.attrs.fua, start: 0, whole: s.name.clone() })
    }

    /// A table's or member list's device reference: `/dev/NAME`, `NAME`,
    /// `/dev/mapper/NAME`, `/dev/md/NAME` or `MAJ:MIN` of a disk or partition.
    fn resolve(&self, s: &str) -> String {
        let name = ["/dev/mapper/", "/dev/md/", "/dev/"].iter().find_map(|p| s.strip_prefix(p)).unwrap_or(s);
        self.numbers.get(name).cloned().unwrap_or_else(|| name.to_string())
    }

    /// Claim `name` for `holder`; refuse a device (or its disk, or one of its
    /// partitions) another holder has.
    fn claim(&mut self, name: &str, whole: &str, holder: &str) -> Result<(), String> {
        let clash = self.claims.iter().find(|(dev, h)| {
            let same = dev.as_str() == name || dev.as_str() == whole || self.whole_of(dev).as_deref() == Some(name);
            same && (h.as_str() != holder || holder != "dm")
        });
        if let Some((dev, h)) = clash {
            let who = if h == "dm" { "a dm device".to_string() } else { h.clone() };
            return Err(if dev == name { format!("{name} is already used by {who}") } else { format!("{name} overlaps {dev}, which {who} already uses") });
        }
        self.claims.insert(name.to_string(), holder.to_string());
        Ok(())
    }

    fn whole_of(&self, name: &str) -> Option<String> {
        self.lower(name).map(|l| l.whole)
    }

    fn exists(&self, name: &str) -> bool {
        self.lower(name).is_some()
    }
}

/// `MAJ:MIN` → name for every disk and partition, numbered as the build
/// will number them.
pub(crate) fn device_numbers(disks: &[DiskSpec]) -> HashMap<String, String> {
    let mut topo = Topology::default();
    let mut out = HashMap::new();
    for d in disks {
        let q = d.queue.clone();
        let id = topo.add_disk(&d.name, d.kind, d.nr_sectors, q, crate::genhd::Driver::Mq(0));
        for (i, p) in d.partitions.iter().enumerate() {
            topo.add_partition(id, &p.name, i as u32 + 1, p.start, p.nr_sectors);
        }
    }
    for dev in &topo.devs {
        out.insert(format!("{}:{}", dev.major, dev.minor), dev.name.clone());
    }
    out
}

/// One `[md.X]` or `[dm.X]` table waiting for its lower devices.
struct Pending<'a> {
    name: String,
    md: bool,
    obj: Obj<'a>,
    /// Lower devices, each with where it was named.
    deps: Vec<(String, Origin, String)>,
    /// dm only: the parsed table.
    targets: Vec<DmTarget>,
}

pub(crate) fn read_stack(o: &Obj, disks: &[DiskSpec], beh: &Behaviour, cpus: Option<u32>) -> Result<Vec<StackSpec>, ScenarioError> {
    let mut known = Known::new(disks);
    let mut pending = Vec::new();
    if let Some(t) = o.table("md")? {
        for name in t.keys() {
            let a = t.table(&name)?.expect("key listed");
            pending.push(pending_md(name, a, &known)?);
        }
        t.finish(&[])?;
    }
    if let Some(t) = o.table("dm")? {
        for name in t.keys() {
            let a = t.table(&name)?.expect("key listed");
            pending.push(pending_dm(name, a, &known)?);
        }
        t.finish(&[])?;
    }
    // File order across [md.*] and [dm.*] (--set additions last).
    pending.sort_by_key(|p| match p.obj.at {
        Origin::File(at) => at,
        Origin::Set => usize::MAX,
    });
    check_names(o, disks, &pending)?;
    while !pending.is_empty() {
        let i = next_ready(&pending, &known)?;
        let p = pending.remove(i);
        let spec = if p.md { read_md(&p, &mut known, beh)? } else { read_dm(&p, &mut known, beh, cpus)? };
        known.stacked.push(spec);
    }
    Ok(known.stacked)
}

/// Stacked device names must be new, and md arrays are named mdN.
fn check_names(o: &Obj, disks: &[DiskSpec], pending: &[Pending]) -> Result<(), ScenarioError> {
    let mut seen: Vec<&str> = disks.iter().flat_map(|d| std::iter::once(d.name.as_str()).chain(d.partitions.iter().map(|p| p.name.as_str()))).collect();
    for p in pending {
        let kind = if p.md { "md" } else { "dm" };
        if seen.contains(&p.name.as_str()) {
            return Err(o.doc.error(&p.obj.at, &format!("{kind}.{}", p.name), "a device of this name already exists"));
        }
        if p.md && md_minor(&p.name).is_none() {
            return Err(o.doc.error(&p.obj.at, &format!("md.{}", p.name), "md arrays are named mdN (md0, md1, ...): the name gives the device number 9:N"));
        }
        seen.push(&p.name);
    }
    Ok(())
}

fn md_minor(name: &str) -> Option<u32> {
    let n = name.strip_prefix("md")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| n.parse().ok()).flatten()
}

/// The first pending device whose lower devices are all known; an unknown
/// device or a cycle is an error at the first pending device.
fn next_ready(pending: &[Pending], known: &Known) -> Result<usize, ScenarioError> {
    if let Some(i) = pending.iter().position(|p| p.deps.iter().all(|d| known.exists(&d.0))) {
        return Ok(i);
    }
    let p = &pending[0];
    let (dep, at, key) = p.deps.iter().find(|d| !known.exists(&d.0)).expect("not ready");
    let msg = if pending.iter().any(|q| &q.name == dep) {
        format!("'{dep}' cannot be built before {}: stacked devices may not form a cycle", p.name)
    } else {
        format!("'{dep}' is not a scenario device (a disk, partition, md array or dm device)")
    };
    Err(p.obj.err(key, at, msg))
}

fn pending_md<'a>(name: String, a: Obj<'a>, known: &Known) -> Result<Pending<'a>, ScenarioError> {
    let (items, an) = a.opt_array("members")?.ok_or_else(|| a.err("members", &a.at, "missing: the member devices, e.g. [\"sda\", \"sdb\"]"))?;
    let mut deps = Vec::new();
    for item in items {
        let Value::Str(s) = &item.value else {
            return Err(a.err("members", &an.at, format!("expected device names, found {}", describe(&item.value))));
        };
        deps.push((known.resolve(s), item.at.clone(), "members".to_string()));
    }
    if deps.is_empty() {
        return Err(a.err("members", &an.at, "an array needs at least one member"));
    }
    Ok(Pending { name, md: true, obj: a, deps, targets: Vec::new() })
}

fn pending_dm<'a>(name: String, a: Obj<'a>, known: &Known) -> Result<Pending<'a>, ScenarioError> {
    let (text, tn) = a.opt_str("table")?.ok_or_else(|| a.err("table", &a.at, "missing: the table as dmsetup prints it, e.g. \"0 2097152 linear /dev/sdb 2048\""))?;
    let targets = parse_table(&text).map_err(|e| table_err(&a, tn, e.line, format!("{}: {}", e.field, e.msg)))?;
    if targets.is_empty() {
        return Err(a.err("table", &tn.at, "the table has no targets"));
    }
    let mut deps = Vec::new();
    for (ti, line) in targets.iter().zip(table_lines(&text)) {
        for dev in target_devices(ti) {
            deps.push((known.resolve(&dev), table_line_origin(&a, tn, line), "table".to_string()));
        }
    }
    Ok(Pending { name, md: false, obj: a, deps, targets })
}

/// The devices a target names, in table order.
fn target_devices(ti: &DmTarget) -> Vec<String> {
    match &ti.kind {
        TargetKind::Linear(lc) => vec![lc.dev.clone()],
        TargetKind::Crypt(cc) => vec![cc.dev.clone()],
        TargetKind::Striped(sc) => sc.stripe.iter().map(|s| s.dev.clone()).collect(),
    }
}

/// 1-based numbers of the table's target lines (what parse_table skips is
/// blank or a comment).
fn table_lines(text: &str) -> Vec<usize> {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.trim().starts_with('#')).map(|(i, _)| i + 1).collect()
}

/// Where line `line` of the table string is in the file: TOML drops a
/// newline right after an opening `"""`/`'''`.
fn table_line_origin(a: &Obj, tn: &Node, line: usize) -> Origin {
    let Origin::File(off) = tn.at else { return Origin::Set };
    let text = &a.doc.text;
    let rest = &text[off.min(text.len())..];
    let skip = rest.starts_with("\"\"\"\n") || rest.starts_with("'''\n") || rest.starts_with("\"\"\"\r\n") || rest.starts_with("'''\r\n");
    let mut pos = off;
    for _ in 0..(line - 1 + skip as usize) {
        match text[pos..].find('\n') {
            Some(n) => pos += n + 1,
            None => break,
        }
    }
    Origin::File(pos)
}

fn table_err(a: &Obj, tn: &Node, line: usize, msg: String) -> ScenarioError {
    a.err("table", &table_line_origin(a, tn, line), format!("line {line} of the table: {msg}"))
}

// ---- md ------------------------------------------------------------------

/// The array-wide settings of an `[md.X]` table.
struct MdParams {
    level: u32,
    chunk: u32,
    layout: u32,
    metadata: Metadata,
    data_offset: Option<u64>,
    size: Option<u64>,
}

fn read_md(p: &Pending, known: &mut Known, beh: &Behaviour) -> Result<StackSpec, ScenarioError> {
    let a = &p.obj;
    let prm = read_md_params(a)?;
    let mut lowers = Vec::new();
    for (dev, at, _) in &p.deps {
        let l = known.lower(dev).expect("ready");
        known.claim(dev, &l.whole, &p.name).map_err(|m| a.err("members", at, m))?;
        lowers.push((dev.clone(), at.clone(), l));
    }
    let offsets = member_offsets(a, &prm, &lowers)?;
    let (pers, nr_sectors) = md_geometry(a, &prm, &lowers, &offsets)?;
    let members: Vec<StackMember> =
        lowers.iter().zip(&offsets).map(|((_, _, l), o)| StackMember { limits: StackedLimits::from(l.limits.clone()), start: l.start + o.0 }).collect();
    let safe = a.opt_bool("devices_handle_discard_safely")?.map(|x| x.0).unwrap_or(false);
    let sb = beh.stacking();
    let mut pers = pers;
    let stacked = match &mut pers {
        Personality::Raid0(c) => raid0_limits(c.chunk_sectors, members.len() as u32, &members, &sb),
        Personality::Raid1 { .. } => raid1_limits(&members, &sb),
        Personality::Raid10(c) => raid10_limits(c.geo.chunk_sectors, c.geo.raid10_nr_stripes(), &members, &sb),
        Personality::Raid456 { conf, fail_discards, .. } => raid5_set_limits(conf.chunk_sectors, conf.data_disks(), &members, safe, &sb).map(|(l, unsupported)| {
            *fail_discards = unsupported && sb.raid5_discard_always;
            l
        }),
    };
    let limits = stacked.map_err(|e| a.err("members", &a.at, format!("the stacked limits are invalid: {}: {}", e.key, e.msg)))?;
    let queue = stacked_queue(a, limits.lim, lowers.iter().map(|x| &x.2), true, beh)?;
    a.finish(MD_KEYS)?;
    let members = p.deps.iter().map(|d| d.0.clone()).zip(offsets.iter().map(|o| o.0)).collect();
    Ok(StackSpec { name: p.name.clone(), kind: DiskKind::Md, nr_sectors, queue, body: StackBody::Md { pers, members } })
}

fn read_md_params(a: &Obj) -> Result<MdParams, ScenarioError> {
    let (level, _) = read_level(a)?;
    let chunk = read_chunk(a, level)?;
    let layout = read_md_layout(a, level)?;
    let metadata = match a.opt_str("metadata")? {
        None => Metadata::V1_2,
        Some((s, n)) => Metadata::from_name(&s).ok_or_else(|| a.err("metadata", &n.at, format!("unknown metadata '{s}' (0.90, 1.0, 1.1 or 1.2)")))?,
    };
    let data_offset = read_sectors(a, "data_offset")?;
    let size = read_sectors(a, "size")?;
    if level != 5 && level != 4 && level != 6 {
        for key in ["devices_handle_discard_safely", "rmw_level"] {
            if let Some(n) = a.node(key) {
                return Err(a.err(key, &n.at, format!("only for raid4/5/6 (this array is raid{level})")));
            }
        }
    }
    Ok(MdParams { level, chunk, layout, metadata, data_offset, size })
}

fn read_level<'a>(a: &Obj<'a>) -> Result<(u32, &'a Node), ScenarioError> {
    let n = a.node("level").ok_or_else(|| a.err("level", &a.at, "missing (0, 1, 4, 5, 6 or 10)"))?;
    let v = match &n.value {
        Value::Int(i) => Some(*i),
        Value::Str(s) => s.trim_start_matches("raid").parse().ok(),
        _ => None,
    };
    match v {
        Some(l @ (0 | 1 | 4 | 5 | 6 | 10)) => Ok((l as u32, n)),
        _ => Err(a.err("level", &n.at, "not a modelled level (0, 1, 4, 5, 6 or 10)")),
    }
}

/// The chunk in sectors: mdadm's 512 KiB by default; raid1 has none.
fn read_chunk(a: &Obj, level: u32) -> Result<u32, ScenarioError> {
    let Some((bytes, n)) = a.opt_size("chunk")? else {
        return Ok(if level == 1 { 0 } else { DEFAULT_CHUNK_SECTORS });
    };
    if level == 1 {
        return Err(a.err("chunk", &n.at, "raid1 has no chunk (mdadm: \"specifying chunk size is forbidden for this level\")"));
    }
    if bytes == 0 || bytes % 4096 != 0 || bytes >> SECTOR_SHIFT > u32::MAX as u64 {
        return Err(a.err("chunk", &n.at, format!("{bytes} bytes is not a positive multiple of 4 KiB")));
    }
    Ok((bytes >> SECTOR_SHIFT) as u32)
}

/// A sector count: an integer (sectors) or a size with a unit.
fn read_sectors(a: &Obj, key: &str) -> Result<Option<u64>, ScenarioError> {
    let Some(n) = a.node(key) else { return Ok(None) };
    if let Value::Int(i) = n.value {
        return u64::try_from(i).map(Some).map_err(|_| a.err(key, &n.at, format!("{i} is negative")));
    }
    let (bytes, n) = a.opt_size(key)?.expect("present");
    if bytes % 512 != 0 {
        return Err(a.err(key, &n.at, format!("{bytes} bytes is not a whole number of sectors")));
    }
    Ok(Some(bytes >> SECTOR_SHIFT))
}

/// The md `layout` word for the level, from mdadm's names or a number.
fn read_md_layout(a: &Obj, level: u32) -> Result<u32, ScenarioError> {
    let Some(n) = a.node("layout") else {
        return Ok(match level {
            10 => 0x102,
            5 | 6 => 2,
            4 => 5,
            _ => 0,
        });
    };
    let parsed = match &n.value {
        Value::Int(i) => u32::try_from(*i).ok(),
        Value::Str(s) if s.parse::<u32>().is_ok() => s.parse().ok(),
        Value::Str(s) => match level {
            0 => raid0_layout_name(s),
            10 => raid10_layout_name(s),
            4..=6 => raid5_layout_name(s),
            _ => None,
        },
        _ => None,
    };
    let hint = match level {
        0 => "original or alternate (1 or 2)",
        10 => "n2, f2, o2, n2f2, ... or the layout number",
        4..=6 => "left-symmetric, left-asymmetric, right-symmetric, right-asymmetric, parity-first, parity-last, ddf-*, *-6, or the number",
        _ => "raid1 has no layout",
    };
    parsed.filter(|_| level != 1).ok_or_else(|| a.err("layout", &n.at, format!("'{}' is not a raid{level} layout ({hint})", node_text(n))))
}

fn node_text(n: &Node) -> String {
    match &n.value {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        v => describe(v).to_string(),
    }
}

fn raid0_layout_name(s: &str) -> Option<u32> {
    match s {
        "original" | "orig" => Some(1),
        "alternate" | "alt" => Some(2),
        _ => None,
    }
}

/// mdadm's raid10 layout names: `n`, `f`, `o` with a copy count, and
/// combinations such as `n2f2`.
fn raid10_layout_name(s: &str) -> Option<u32> {
    let (mut near, mut far, mut offset) = (1u32, 1u32, false);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let digits = rest[1..].find(|ch: char| !ch.is_ascii_digit()).map_or(rest.len(), |i| i + 1);
        let count: u32 = rest[1..digits].parse().ok().filter(|&v| (1..=255).contains(&v))?;
        match c {
            'n' => near = count,
            'f' => far = count,
            'o' => (far, offset) = (count, true),
            _ => return None,
        }
        rest = &rest[digits..];
    }
    Some(raid10_layout_word(near, far, offset))
}

/// The raid10 layout word (`layout` in the superblock): near copies, far
/// copies << 8, and bit 16 for offset (`setup_geo` reads it back).
pub(crate) fn raid10_layout_word(near: u32, far: u32, offset: bool) -> u32 {
    near | far << 8 | (offset as u32) << 16
}

/// mdadm's r5layout names (maps.c `r5layout`, `r6layout`) and their
/// layout numbers; the first name of a number is the one mdadm prints.
pub(crate) const RAID5_LAYOUTS: &[(&str, u32)] = &[
    ("left-asymmetric", 0),
    ("right-asymmetric", 1),
    ("left-symmetric", 2),
    ("right-symmetric", 3),
    ("parity-first", 4),
    ("parity-last", 5),
    ("ddf-zero-restart", 8),
    ("ddf-N-restart", 9),
    ("ddf-N-continue", 10),
    ("left-asymmetric-6", 16),
    ("right-asymmetric-6", 17),
    ("left-symmetric-6", 18),
    ("right-symmetric-6", 19),
    ("parity-first-6", 20),
    ("la", 0),
    ("ra", 1),
    ("ls", 2),
    ("default", 2),
    ("rs", 3),
];

/// mdadm's r5layout names.
fn raid5_layout_name(s: &str) -> Option<u32> {
    RAID5_LAYOUTS.iter().find(|(n, _)| *n == s).map(|x| x.1)
}

/// Per member: (data offset, sectors available for data), mdadm's rule
/// for the metadata version, or the `data_offset` given.
fn member_offsets(a: &Obj, prm: &MdParams, lowers: &[(String, Origin, Lower)]) -> Result<Vec<(u64, u64)>, ScenarioError> {
    let chunk_kib = prm.chunk / 2;
    let mut out = Vec::new();
    for (name, at, l) in lowers {
        let layout = member_layout(prm.metadata, l.nr_sectors, chunk_kib, DataOffsetRounding::Up)
            .map_err(|e| a.err("members", at, format!("{name}: {e}")))?;
        let offset = prm.data_offset.unwrap_or(layout.data_offset);
        let room = layout.avail_sectors + layout.data_offset;
        if offset >= room {
            let at = a.node("data_offset").map_or(at.clone(), |n| n.at.clone());
            return Err(a.err("data_offset", &at, format!("sector {offset} leaves no room for data on {name} ({} sectors)", l.nr_sectors)));
        }
        out.push((offset, room - offset));
    }
    Ok(out)
}

/// mdadm's component size: the smallest member's room, rounded down to
/// the chunk (raid1: to 64 KiB), or `size` if given (which must fit).
fn component_size(a: &Obj, prm: &MdParams, offsets: &[(u64, u64)]) -> Result<u64, ScenarioError> {
    let round = if prm.level == 1 { 128 } else { prm.chunk as u64 };
    let room = offsets.iter().map(|o| o.1).min().expect("members") / round * round;
    match prm.size {
        None if room == 0 => Err(a.err("members", &a.at, "the members leave no whole chunk for data")),
        None => Ok(room),
        Some(s) => {
            let at = a.node("size").map(|n| n.at.clone()).expect("given");
            let s = s / round * round;
            if s == 0 || s > room {
                return Err(a.err("size", &at, format!("{s} sectors does not fit: the members allow 1 to {room} (whole chunks)")));
            }
            Ok(s)
        }
    }
}

/// The personality's geometry (`setup_conf`/`create_strip_zones`) and the
/// array size in sectors.
fn md_geometry(a: &Obj, prm: &MdParams, lowers: &[(String, Origin, Lower)], offsets: &[(u64, u64)]) -> Result<(Personality, u64), ScenarioError> {
    let n = lowers.len() as u32;
    let data_offsets: Vec<u64> = offsets.iter().map(|o| o.0).collect();
    let layout_at = a.node("layout").map_or(a.at.clone(), |x| x.at.clone());
    let chunk_at = a.node("chunk").map_or(a.at.clone(), |x| x.at.clone());
    match prm.level {
        0 => {
            let m: Vec<Raid0Member> = offsets.iter().map(|&(data_offset, sectors)| Raid0Member { sectors, data_offset }).collect();
            let conf = create_strip_zones(&m, prm.chunk, prm.layout, 0).map_err(|e| a.err("layout", &layout_at, e.to_string()))?;
            let size = conf.raid0_size();
            Ok((Personality::Raid0(conf), size))
        }
        1 => {
            let sectors = component_size(a, prm, offsets)?;
            Ok((Personality::Raid1 { sectors }, sectors))
        }
        10 => {
            let dev = component_size(a, prm, offsets)?;
            let conf = raid10_setup_conf(prm.layout, prm.chunk, n, dev, data_offsets).map_err(|e| match e {
                Raid10Error::Chunk(_) => a.err("chunk", &chunk_at, e.to_string()),
                _ => a.err("layout", &layout_at, e.to_string()),
            })?;
            let size = conf.raid10_size();
            Ok((Personality::Raid10(conf), size))
        }
        _ => {
            let dev = component_size(a, prm, offsets)?;
            let conf = raid5_setup_conf(prm.level, n, prm.chunk, prm.layout, data_offsets).map_err(|e| match e {
                Raid5Error::Chunk(_) => a.err("chunk", &chunk_at, e.to_string()),
                Raid5Error::TooFewDisks { .. } => a.err("members", &a.at, e.to_string()),
                _ => a.err("layout", &layout_at, e.to_string()),
            })?;
            let size = dev / prm.chunk as u64 * prm.chunk as u64 * conf.data_disks() as u64;
            let rmw_level = read_rmw_level(a)?;
            Ok((Personality::Raid456 { conf, rmw_level, fail_discards: false }, size))
        }
    }
}

/// `/sys/block/mdX/md/rmw_level`: 0 disable, 1 enable (default), 2 prefer.
fn read_rmw_level(a: &Obj) -> Result<RmwLevel, ScenarioError> {
    match a.opt_u64("rmw_level")? {
        None | Some((1, _)) => Ok(RmwLevel::Enable),
        Some((0, _)) => Ok(RmwLevel::Disable),
        Some((2, _)) => Ok(RmwLevel::PreferRmw),
        Some((v, n)) => Err(a.err("rmw_level", &n.at, format!("{v} is not 0 (disable), 1 (enable) or 2 (prefer rmw)"))),
    }
}

// ---- dm ------------------------------------------------------------------

fn read_dm(p: &Pending, known: &mut Known, beh: &Behaviour, cpus: Option<u32>) -> Result<StackSpec, ScenarioError> {
    let a = &p.obj;
    let tn = a.node("table").expect("read");
    let mut devs = Vec::new();
    let mut tl = Vec::new();
    let mut lowers = Vec::new();
    let mut deps = p.deps.iter();
    for (ti, line) in p.targets.iter().zip(table_lines(match &tn.value {
        Value::Str(s) => s,
        _ => "",
    })) {
        let mut names = Vec::new();
        let mut members = Vec::new();
        for offset in target_offsets(ti) {
            let (dev, at, _) = deps.next().expect("one per device");
            let l = known.lower(dev).expect("ready");
            check_device_area(ti, offset, &l, dev).map_err(|m| table_err(a, tn, line, m))?;
            known.claim(dev, &l.whole, "dm").map_err(|m| a.err("table", at, m))?;
            members.push(StackMember { limits: StackedLimits::from(l.limits.clone()), start: l.start + offset });
            names.push(dev.clone());
            lowers.push(l);
        }
        let stripe = match &ti.kind {
            TargetKind::Striped(sc) => Some((sc.chunk_size, sc.stripes)),
            TargetKind::Linear(_) | TargetKind::Crypt(_) => None,
        };
        let crypt = match &ti.kind {
            TargetKind::Crypt(cc) => Some(DmCryptHints { sector_size: cc.sector_size, page_segments: beh.crypt_pages == CryptPages::Pages, allow_discards: cc.flags.allow_discards }),
            _ => None,
        };
        tl.push(DmTargetLimits { devices: members, stripe, crypt });
        devs.push(names);
    }
    let limits = dm_calculate_queue_limits(&tl, &beh.stacking()).map_err(|e| a.err("table", &tn.at, format!("the table's limits are invalid: {}: {}", e.key, e.msg)))?;
    let nr_sectors = p.targets.last().map_or(0, |t| t.begin + t.len);
    let queue = stacked_queue(a, limits.lim, lowers.iter(), false, beh)?;
    let cpu = read_crypt_cpu(a, &p.targets, cpus)?;
    a.finish(DM_KEYS)?;
    Ok(StackSpec { name: p.name.clone(), kind: DiskKind::Dm, nr_sectors, queue, body: StackBody::Dm { targets: p.targets.clone(), devs, cpu } })
}

/// `crypt_cpus`, `crypt_encrypt_mib_s`, `crypt_decrypt_mib_s`: the CPU
/// side of a table's dm-crypt target ([`CryptCpu`]; defaults: the
/// scenario's `cpus` (`num_online_cpus()`, else one) at `cryptsetup
/// benchmark`'s aes-xts 512-bit figures). Only for a table with a crypt
/// target.
fn read_crypt_cpu(a: &Obj, targets: &[DmTarget], cpus: Option<u32>) -> Result<CryptCpu, ScenarioError> {
    let mut cpu = CryptCpu { cpus: cpus.unwrap_or(1), ..CryptCpu::default() };
    let has_crypt = targets.iter().any(|t| matches!(t.kind, TargetKind::Crypt(_)));
    for key in ["crypt_cpus", "crypt_encrypt_mib_s", "crypt_decrypt_mib_s"] {
        if let (Some(n), false) = (a.node(key), has_crypt) {
            return Err(a.err(key, &n.at, "only a table with a crypt target has a crypt CPU"));
        }
    }
    if let Some((n, node)) = a.opt_u64("crypt_cpus")? {
        if n == 0 || n > 4096 {
            return Err(a.err("crypt_cpus", &node.at, format!("{n}: kcryptd needs 1 to 4096 CPUs")));
        }
        cpu.cpus = n as u32;
    }
    for (key, slot) in [("crypt_encrypt_mib_s", &mut cpu.encrypt_bps), ("crypt_decrypt_mib_s", &mut cpu.decrypt_bps)] {
        if let Some((v, node)) = a.opt_f64(key)? {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(a.err(key, &node.at, format!("{v}: a throughput in MiB/s per CPU (0: no cost)")));
            }
            *slot = v * 1_048_576.0;
        }
    }
    Ok(cpu)
}

/// Where on each of its devices a target's data starts.
fn target_offsets(ti: &DmTarget) -> Vec<u64> {
    match &ti.kind {
        TargetKind::Linear(lc) => vec![lc.start],
        TargetKind::Crypt(cc) => vec![cc.start],
        TargetKind::Striped(sc) => sc.stripe.iter().map(|s| s.physical_start).collect(),
    }
}

/// `device_area_is_invalid`: the area a target uses must lie inside the
/// device and be aligned to its logical block size.
fn check_device_area(ti: &DmTarget, start: u64, l: &Lower, name: &str) -> Result<(), String> {
    let len = match &ti.kind {
        TargetKind::Linear(_) | TargetKind::Crypt(_) => ti.len,
        TargetKind::Striped(sc) => sc.stripe_width,
    };
    if start.checked_add(len).map_or(true, |e| e > l.nr_sectors) {
        return Err(format!("{name} too small for target: start={start}, len={len}, dev_size={}", l.nr_sectors));
    }
    let lbs = l.limits.lbs_sectors() as u64;
    if start % lbs != 0 || len % lbs != 0 || ti.begin % lbs != 0 {
        return Err(format!("{name}: start={start}, len={len} is not aligned to its logical block size ({} bytes)", l.limits.logical_block_size));
    }
    Ok(())
}

// ---- shared ----------------------------------------------------------------

/// The stacked device's queue: the limits, the sysfs writes of
/// `[….queue]`, and attributes (bio-based: no scheduler; rotational if any
/// lower device is; md always has a volatile write cache and FUA
/// (`blk_queue_write_cache(q, true, true)` in 6.1, `md_init_stacking_limits`
/// in 6.12), dm each if any lower device has it).
fn stacked_queue<'l>(a: &Obj, lim: QueueLimits, lowers: impl Iterator<Item = &'l Lower>, md: bool, beh: &Behaviour) -> Result<Queue, ScenarioError> {
    let q = a.table("queue")?.unwrap_or_else(|| a.empty("queue"));
    let writes = SysfsWrites {
        max_sectors_kb: q.opt_u64("max_sectors_kb")?.map(|x| x.0),
        discard_max_bytes: q.opt_u64("discard_max_bytes")?.map(|x| x.0),
        ..Default::default()
    };
    q.finish(STACK_QUEUE_KEYS)?;
    let limits = store_queue_writes(lim, &writes, beh.limits_model, beh.def_max_sectors_cap).map_err(|e: LimitError| match q.node(e.key) {
        Some(n) => q.err(e.key, &n.at, e.msg),
        None => a.err("queue", &a.at, e.msg),
    })?;
    let (mut rotational, mut write_cache, mut fua) = (false, md, md);
    for l in lowers {
        rotational |= l.rotational;
        write_cache |= l.write_cache;
        fua |= l.fua;
    }
    let attrs = QueueAttrs { scheduler: Elevator::None, nr_requests: 128, queue_depth: 128, nr_hw_queues: 1, nomerges: 0, rotational, write_cache, fua, nr_conv_zones: 0, wbt_lat_nsec: 0, iosched: Default::default(), bfq: Default::default() };
    Ok(Queue { limits, attrs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raid10_layout_names() {
        // near copies bits 0-7, far 8-15, offset bit 16.
        assert_eq!(raid10_layout_name("n2"), Some(0x102));
        assert_eq!(raid10_layout_name("f2"), Some(0x201));
        assert_eq!(raid10_layout_name("o2"), Some(0x1_0201));
        assert_eq!(raid10_layout_name("n2f2"), Some(0x202));
        assert_eq!(raid10_layout_name("x2"), None);
        assert_eq!(raid10_layout_name("n"), None);
        assert_eq!(raid10_layout_name("n300"), None);
    }

    #[test]
    fn md_names_give_the_minor() {
        assert_eq!(md_minor("md0"), Some(0));
        assert_eq!(md_minor("md127"), Some(127));
        assert_eq!(md_minor("md"), None);
        assert_eq!(md_minor("mdx"), None);
    }
}
