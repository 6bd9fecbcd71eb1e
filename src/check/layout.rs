//! Reference layouts: where a range of a device's sectors must end up on
//! the request-based disks below, worked out from the pure mapping
//! arithmetic ([`crate::md`], [`crate::dm`]) sector range by sector range,
//! independently of the drivers' bio handling (splits, remainders, clones,
//! chaining, discard decomposition). The checks compare what the drivers
//! issued against these.
//!
//! A device's layout is composed through the stack: a partition adds its
//! start, an md array or dm device maps to its members, which map further
//! down, so a range of the top device becomes [`Run`]s on leaf disks, each
//! with the top-device sector it holds and how often it must be hit.

use crate::bio::Op;
use crate::dm::DmTarget;
use crate::genhd::{DevId, Driver, Topology};
use crate::md::personality::{MdMember, Personality};
use crate::md::raid10::R10Conf;
use crate::md::raid5::{R5Conf, STRIPE_SECTORS};

/// How a device maps its sectors onto the devices below.
#[derive(Clone, Debug)]
pub enum Layout {
    /// A request-based whole disk: the end of the stack. Whether its queue
    /// takes discards and secure erases (md and dm send it none of those
    /// otherwise), read from its limits once.
    Disk { discard: bool, secure_erase: bool },
    /// A partition: its disk, from `start`.
    Partition { whole: DevId, start: u64 },
    /// An md array: personality and members.
    Md { pers: Personality, members: Vec<MdMember> },
    /// A dm device: its table and each target's devices.
    Dm { targets: Vec<DmTarget>, devs: Vec<Vec<DevId>> },
    /// A bio-based device the checks know nothing about (a test driver):
    /// bios submitted to it are not checked.
    Unknown,
}

/// How many times a leaf range may be hit: `min..=max` (`max` 0 = no bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub min: u32,
    pub max: u32,
}

impl Bounds {
    /// Every copy of every sector: exactly once.
    pub const EXACT: Bounds = Bounds { min: 1, max: 1 };
    /// raid4/5/6 write units (md may split inside a stripe unit, and the
    /// unit is written for each part): at least once.
    pub const AT_LEAST_ONCE: Bounds = Bounds { min: 1, max: 0 };
    /// raid4/5/6 discards of whole stripe rows (md's own discard split may
    /// leave a row partial): at most once.
    pub const AT_MOST_ONCE: Bounds = Bounds { min: 0, max: 1 };
    /// Pre-reads of raid4/5/6 writes: any number.
    pub const ANY: Bounds = Bounds { min: 0, max: 0 };

    /// The looser of two bounds (a raid5 below a mirror, ...).
    fn loosest(self, o: Bounds) -> Bounds {
        let max = if self.max == 0 || o.max == 0 { 0 } else { self.max.max(o.max) };
        Bounds { min: self.min.min(o.min), max }
    }

    pub fn allows(self, n: u32) -> bool {
        n >= self.min && (self.max == 0 || n <= self.max)
    }
}

/// A piece of a leaf disk a range maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub leaf: DevId,
    /// Whole-disk sector.
    pub phys: u64,
    pub len: u64,
    /// Top-device sector the run's first sector holds (data runs only).
    pub logical: u64,
    /// A read the op may do (raid4/5/6 pre-reads) rather than the op itself.
    pub read: bool,
    pub bounds: Bounds,
}

/// The runs of one mapping, each extended in place when the next piece
/// continues it on the same leaf (and, for `logical` mappings, with the
/// next top sectors), so sequential layouts stay a handful of runs.
#[derive(Default)]
pub struct Runs {
    pub runs: Vec<Run>,
    logical: bool,
    /// Index of the last run per leaf, by device id (a mapping pushes a
    /// run per chunk copy: finding the leaf's last run is one index).
    last: Vec<Option<usize>>,
}

impl Runs {
    pub fn new(logical: bool) -> Runs {
        Runs { runs: Vec::new(), logical, last: Vec::new() }
    }

    /// Empty again, keeping the allocations (a scratch buffer reused per
    /// bio) and the per-leaf index's length (so the next mapping's first
    /// run on each leaf does not grow it again).
    pub fn clear(&mut self, logical: bool) {
        self.runs.clear();
        self.last.fill(None);
        self.logical = logical;
    }

    fn push(&mut self, r: Run) {
        let leaf = r.leaf as usize;
        if self.last.len() <= leaf {
            self.last.resize(leaf + 1, None);
        }
        if let Some(i) = self.last[leaf] {
            let p = &mut self.runs[i];
            let joins = p.phys + p.len == r.phys && p.read == r.read && p.bounds == r.bounds && (!self.logical || p.logical + p.len == r.logical);
            if joins {
                p.len += r.len;
                return;
            }
        }
        self.last[leaf] = Some(self.runs.len());
        self.runs.push(r);
    }
}

/// Maps ranges through the layouts of a topology for one op.
pub struct Mapper<'a> {
    pub layouts: &'a [Layout],
    /// Per device, a raid10 array's period in closed form ([`raid10_tiles`]).
    pub tiles: &'a [Option<R10Tiles>],
    pub op: Op,
}

/// One period of a raid10 layout in closed form, worked out once per array
/// from `raid10_find_phys` ([`raid10_tiles`]): the period's chunks (`span`
/// array sectors) put their copies on the members as runs of consecutive
/// chunks, `delta` sectors each, from `tiles` (member slot, sector before
/// the data offset: a near layout's one per member, a far layout's one
/// per member and far copy), and period `p` is period 0 moved `p * delta`
/// further on the same members. A range of whole periods is then one run
/// per tile, found in as many steps as there are tiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct R10Tiles {
    pub span: u64,
    pub delta: u64,
    pub tiles: Vec<(u32, u64)>,
}

/// The [`R10Tiles`] of each device that is a raid10 array whose members'
/// copies tile (`None` for every other device, and for a raid10 layout
/// whose copies do not: its ranges go chunk by chunk).
pub fn raid10_tiles(layouts: &[Layout]) -> Vec<Option<R10Tiles>> {
    layouts
        .iter()
        .map(|l| match l {
            Layout::Md { pers: Personality::Raid10(conf), .. } => period_tiles(conf),
            _ => None,
        })
        .collect()
}

/// The copies of period 0's chunks, worked out chunk by chunk: on each
/// member they must form runs of `delta` sectors (then the next period's
/// copies, on the same members `delta` further: [`raid10_period`],
/// continue each run).
fn period_tiles(conf: &R10Conf) -> Option<R10Tiles> {
    let (period, delta) = raid10_period(conf);
    let chunk = conf.geo.chunk_sectors as u64;
    let mut copies: Vec<(u32, u64)> = Vec::new();
    for k in 0..period {
        conf.geo.raid10_find_phys(k * chunk, |c| copies.push((c.devnum, c.addr)));
    }
    copies.sort_unstable();
    let mut tiles = Vec::new();
    for run in copies.chunk_by(|a, b| a.0 == b.0 && b.1 == a.1 + chunk) {
        if run.len() as u64 * chunk != delta {
            return None;
        }
        tiles.push(run[0]);
    }
    Some(R10Tiles { span: period * chunk, delta, tiles })
}

impl Mapper<'_> {
    /// Where [start, start+len) of `dev` (top sector `logical`) must go.
    /// Inline: a disk, where every mapping ends, costs its caller's loop
    /// (md's chunk by chunk) no call.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn map(&self, dev: DevId, start: u64, len: u64, logical: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        if len == 0 {
            return;
        }
        match &self.layouts[dev as usize] {
            &Layout::Disk { discard, secure_erase } => {
                if read || self.takes_op(discard, secure_erase) {
                    out.push(Run { leaf: dev, phys: start, len, logical, read, bounds });
                }
            }
            layout => self.map_stacked(dev, layout, start, len, logical, bounds, read, out),
        }
    }

    /// [`Self::map`] on a device that is not a disk.
    #[allow(clippy::too_many_arguments)]
    fn map_stacked(&self, dev: DevId, layout: &Layout, start: u64, len: u64, logical: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        match layout {
            Layout::Disk { .. } => unreachable!("disks are mapped inline"),
            Layout::Partition { whole, start: s } => self.map(*whole, start + s, len, logical, bounds, read, out),
            Layout::Md { pers: Personality::Raid10(conf), members } => {
                let tiles = self.tiles.get(dev as usize).and_then(Option::as_ref);
                self.map_raid10(conf, members, tiles, start, len, logical, bounds, read, out)
            }
            Layout::Md { pers, members } => self.map_md(pers, members, start, len, logical, bounds, read, out),
            Layout::Dm { targets, devs } => self.map_dm(targets, devs, start, len, logical, bounds, read, out),
            Layout::Unknown => {}
        }
    }

    /// Does a disk that takes discards and secure erases as said take the
    /// op? A discard-like op drops runs on disks without it (md and dm send
    /// them nothing).
    fn takes_op(&self, discard: bool, secure_erase: bool) -> bool {
        match self.op {
            Op::Discard => discard,
            Op::SecureErase => secure_erase,
            _ => true,
        }
    }

    /// Does leaf disk `dev` take the op?
    pub fn leaf_takes_op(&self, dev: DevId) -> bool {
        match self.layouts[dev as usize] {
            Layout::Disk { discard, secure_erase } => self.takes_op(discard, secure_erase),
            _ => unreachable!("a leaf is a disk"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn map_md(&self, pers: &Personality, members: &[MdMember], start: u64, len: u64, logical: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        let end = start + len;
        match pers {
            Personality::Raid1 { .. } => {
                // A read may come from any mirror: each is a possible source.
                for m in members {
                    self.map(m.dev, start + m.data_offset, len, logical, bounds, read, out);
                }
            }
            Personality::Raid0(conf) => {
                let chunk = conf.chunk_sectors as u64;
                for (s, n) in pieces(start, end, chunk) {
                    let Some(m) = conf.map_sector(s) else { return };
                    self.map(members[m.disk as usize].dev, m.sector, n, logical + (s - start), bounds, read, out);
                }
            }
            Personality::Raid10(_) => unreachable!("raid10 is mapped with its tiles"),
            Personality::Raid456 { conf, .. } => self.map_raid5(conf, members, start, len, logical, bounds, read, out),
        }
    }

    /// raid10: every copy of each chunk (`raid10_find_phys`); whole
    /// periods of the layout at once from its [`R10Tiles`] when its copies
    /// tile, so a discard of a whole array costs one run per member, not
    /// every chunk. Runs with top sectors (a read's copies) go chunk by
    /// chunk: a member's chunks do not hold consecutive top sectors.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn map_raid10(&self, conf: &R10Conf, members: &[MdMember], tiles: Option<&R10Tiles>, start: u64, len: u64, logical: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        let end = start + len;
        let Some(t) = tiles.filter(|_| !out.logical) else {
            return self.map_raid10_chunks(conf, members, start, len, logical, bounds, read, out);
        };
        let first = start.div_ceil(t.span) * t.span;
        let periods = end.saturating_sub(first) / t.span;
        if periods < 2 {
            return self.map_raid10_chunks(conf, members, start, len, logical, bounds, read, out);
        }
        let last = first + periods * t.span;
        if first > start {
            self.map_raid10_chunks(conf, members, start, first - start, logical, bounds, read, out);
        }
        let moved = first / t.span * t.delta;
        for &(devnum, addr) in &t.tiles {
            let at = addr + moved + conf.data_offset[devnum as usize];
            self.map(members[devnum as usize].dev, at, periods * t.delta, 0, bounds, read, out);
        }
        if end > last {
            self.map_raid10_chunks(conf, members, last, end - last, logical + (last - start), bounds, read, out);
        }
    }

    /// Every copy of each chunk, one chunk after another.
    #[allow(clippy::too_many_arguments)]
    fn map_raid10_chunks(&self, conf: &R10Conf, members: &[MdMember], start: u64, len: u64, logical: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        for (s, n) in pieces(start, start + len, conf.geo.chunk_sectors as u64) {
            conf.geo.raid10_find_phys(s, |c| {
                let at = c.addr + conf.data_offset[c.devnum as usize];
                self.map(members[c.devnum as usize].dev, at, n, logical + (s - start), bounds, read, out);
            });
        }
    }

    /// raid4/5/6: a read (or the data view) goes to the data member; a
    /// write touches whole 4 KiB units — data and parity at least once,
    /// pre-reads anywhere in the stripe_head; a discard whole stripe rows
    /// at most once.
    #[allow(clippy::too_many_arguments)]
    fn map_raid5(&self, conf: &R5Conf, members: &[MdMember], start: u64, len: u64, logical: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        let end = start + len;
        let chunk = conf.chunk_sectors as u64;
        match self.op {
            Op::Read => {
                for (s, n) in pieces(start, end, chunk) {
                    let m = conf.raid5_compute_sector(s);
                    let d = members[m.dd_idx as usize];
                    self.map(d.dev, m.sector + d.data_offset, n, logical + (s - start), bounds, read, out);
                }
            }
            Op::Discard | Op::SecureErase => {
                let stripe = chunk * conf.data_disks() as u64;
                let b = bounds.loosest(Bounds::AT_MOST_ONCE);
                for row in start.div_ceil(stripe)..end / stripe {
                    for d in members {
                        self.map(d.dev, row * chunk + d.data_offset, chunk, 0, b, read, out);
                    }
                }
            }
            _ => self.map_raid5_write(conf, members, start, end, bounds, read, out),
        }
    }

    /// A write: each touched 4 KiB unit on its data member; each touched
    /// stripe_head's parity once; pre-reads anywhere in those stripe_heads.
    #[allow(clippy::too_many_arguments)]
    fn map_raid5_write(&self, conf: &R5Conf, members: &[MdMember], start: u64, end: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        let b = bounds.loosest(Bounds::AT_LEAST_ONCE);
        let mut heads = Vec::new();
        let mut u = start - start % STRIPE_SECTORS;
        while u < end {
            let m = conf.raid5_compute_sector(u);
            let d = members[m.dd_idx as usize];
            self.map(d.dev, m.sector + d.data_offset, STRIPE_SECTORS, 0, b, read, out);
            heads.push((m.sector, m.pd_idx, m.qd_idx));
            u += STRIPE_SECTORS;
        }
        heads.sort_unstable();
        heads.dedup();
        for (sh, pd, qd) in heads {
            for disk in std::iter::once(pd).chain(qd) {
                let p = members[disk as usize];
                self.map(p.dev, sh + p.data_offset, STRIPE_SECTORS, 0, b, read, out);
            }
            for d in members {
                self.map(d.dev, sh + d.data_offset, STRIPE_SECTORS, 0, Bounds::ANY, true, out);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn map_dm(&self, targets: &[DmTarget], devs: &[Vec<DevId>], start: u64, len: u64, logical: u64, bounds: Bounds, read: bool, out: &mut Runs) {
        let end = start + len;
        let mut s = start;
        while s < end {
            let Some(t) = targets.iter().position(|t| s >= t.begin && s - t.begin < t.len) else { return };
            let ti = &targets[t];
            // max_io_len with no queue cap: to the target end or next chunk.
            let n = ti.max_io_len(s, u32::MAX).expect("inside").min(end - s);
            let m = ti.map_sector(s).expect("inside");
            self.map(devs[t][m.dev as usize], m.sector, n, logical + (s - start), bounds, read, out);
            s += n;
        }
    }
}

/// [start, end) cut at multiples of `chunk`: (sector, length) pieces.
/// raid10's period: after `chunks` chunks (lcm(raid_disks, near_copies) /
/// near_copies) `raid10_find_phys`'s copy index has advanced by a multiple
/// of raid_disks, so the next chunk's copies are on the same members as
/// the period's first chunk's, `delta` sectors further (the rows passed,
/// times far_copies in a far-offset layout).
fn raid10_period(conf: &R10Conf) -> (u64, u64) {
    let g = &conf.geo;
    let (disks, near) = (g.raid_disks as u64, g.near_copies as u64);
    let lcm = disks / gcd(disks, near) * near;
    let rows = lcm / disks * if g.far_offset { g.far_copies as u64 } else { 1 };
    (lcm / near, rows * g.chunk_sectors as u64)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn pieces(start: u64, end: u64, chunk: u64) -> impl Iterator<Item = (u64, u64)> {
    let mut s = start;
    std::iter::from_fn(move || {
        if s >= end {
            return None;
        }
        let n = (chunk - crate::split::rem_sectors(s, chunk)).min(end - s);
        let p = (s, n);
        s += n;
        Some(p)
    })
}

/// A device that is a request-based disk or a partition of one: (the disk,
/// the partition's start). Such a device has one home per sector, so
/// checks of its roots need no mapping.
pub fn plain_disk(layouts: &[Layout], dev: DevId) -> Option<(DevId, u64)> {
    match &layouts[dev as usize] {
        Layout::Disk { .. } => Some((dev, 0)),
        Layout::Partition { whole, start } => matches!(layouts[*whole as usize], Layout::Disk { .. }).then_some((*whole, *start)),
        _ => None,
    }
}

/// The layout a device has by itself (disks and partitions), from the
/// topology: stacked devices get theirs from the scenario.
pub fn default_layout(topo: &Topology, dev: DevId) -> Layout {
    let d = topo.dev(dev);
    match d.driver {
        _ if d.whole != dev => Layout::Partition { whole: d.whole, start: d.start_sect },
        Driver::Mq(_) => {
            let lim = topo.limits(dev);
            Layout::Disk { discard: lim.max_discard_sectors != 0, secure_erase: lim.max_secure_erase_sectors != 0 }
        }
        Driver::BioBased(_) => Layout::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_at_chunk_boundaries() {
        // [1000, 2100) with chunk 1024: 24 to 1024, a whole chunk, then 52.
        assert_eq!(pieces(1000, 2100, 1024).collect::<Vec<_>>(), vec![(1000, 24), (1024, 1024), (2048, 52)]);
    }

    /// Each leaf's sectors in the runs, as merged intervals.
    fn covered(runs: &[Run]) -> Vec<(DevId, u64, u64)> {
        let mut v: Vec<(DevId, u64, u64)> = runs.iter().map(|r| (r.leaf, r.phys, r.phys + r.len)).collect();
        v.sort_unstable();
        let mut out: Vec<(DevId, u64, u64)> = Vec::new();
        for (leaf, s, e) in v {
            match out.last_mut() {
                Some(p) if p.0 == leaf && p.2 == s => p.2 = e,
                _ => out.push((leaf, s, e)),
            }
        }
        out
    }

    #[test]
    fn raid10_whole_periods_cover_what_chunk_by_chunk_does() {
        // near 2 of 4 and of 3, near 3 of 5, far 2, offset 2, near 2 x far 2
        // of 5 (mdadm's layout: near copies in bits 0-7, far in 8-15,
        // offset in bit 16); 8-sector chunks; a range starting and ending
        // inside chunks, over several periods; the members' data offsets
        // differ.
        for (layout, disks) in [(0x102, 4), (0x102, 3), (0x103, 5), (0x201, 4), (0x10201, 4), (0x202, 5)] {
            let offsets: Vec<u64> = (0..disks as u64).map(|i| 2048 + 8 * i).collect();
            let conf = crate::md::raid10::setup_conf(layout, 8, disks, 1 << 20, offsets).unwrap();
            let members: Vec<MdMember> = (0..disks).map(|d| MdMember { dev: d, data_offset: 0 }).collect();
            let mut layouts: Vec<Layout> = (0..disks).map(|_| Layout::Disk { discard: true, secure_erase: false }).collect();
            layouts.push(Layout::Md { pers: Personality::Raid10(conf.clone()), members: members.clone() });
            let tiles = raid10_tiles(&layouts);
            // Every one of these layouts has whole periods in closed form.
            assert!(tiles[disks as usize].is_some(), "layout {layout:#x} on {disks}");
            let mapper = Mapper { layouts: &layouts, tiles: &tiles, op: Op::Discard };
            let (start, len) = (13, 8 * 200 + 5);
            let mut ranges = Runs::new(false);
            mapper.map(disks, start, len, start, Bounds::EXACT, false, &mut ranges);
            let mut chunks = Runs::new(false);
            mapper.map_raid10_chunks(&conf, &members, start, len, start, Bounds::EXACT, false, &mut chunks);
            assert_eq!(covered(&ranges.runs), covered(&chunks.runs), "layout {layout:#x} on {disks}");
            // Every copy once: the sectors add up to copies x the range.
            let copies = (layout & 0xff) * ((layout >> 8) & 0xff);
            assert_eq!(ranges.runs.iter().map(|r| r.len).sum::<u64>(), copies as u64 * len, "layout {layout:#x}");
        }
    }

    #[test]
    fn bounds_combine_to_the_loosest() {
        assert_eq!(Bounds::EXACT.loosest(Bounds::AT_LEAST_ONCE), Bounds::AT_LEAST_ONCE);
        assert_eq!(Bounds::AT_MOST_ONCE.loosest(Bounds::AT_LEAST_ONCE), Bounds::ANY);
        assert!(Bounds::EXACT.allows(1) && !Bounds::EXACT.allows(2) && !Bounds::EXACT.allows(0));
        assert!(Bounds::AT_LEAST_ONCE.allows(3) && Bounds::AT_MOST_ONCE.allows(0));
    }
}
