//! md raid0 (drivers/md/raid0.c): strip zones, sector mapping, the chunk
//! split and the discard decomposition.
//!
//! Members of unequal size are cut into *strip zones* (`create_strip_zones`):
//! zone 0 stripes over every member up to the smallest member's size, zone 1
//! over the members larger than that up to the next size, and so on. Inside
//! a zone, chunks go round-robin over the zone's members.
//!
//! Which chunk of a zone lands on which member depends on the *layout*. The
//! original code (before 3.14, `RAID0_ORIG_LAYOUT`) chose the member from the
//! array sector; 3.14 accidentally switched to the offset inside the zone
//! (kept as `RAID0_ALT_MULTIZONE_LAYOUT`). Both agree on zone 0, so only
//! arrays with a second zone of two or more members need to know; since 5.4
//! the kernel refuses to assemble them unless the superblock or the
//! `raid0.default_layout` parameter says which.

use std::fmt;

use super::{Edge, MemberRange, SectorRange};

/// `RAID0_ORIG_LAYOUT`: the superblock/parameter value of the pre-3.14 layout.
pub const RAID0_ORIG_LAYOUT: u32 = 1;
/// `RAID0_ALT_MULTIZONE_LAYOUT`: the 3.14–5.3 layout.
pub const RAID0_ALT_MULTIZONE_LAYOUT: u32 = 2;

/// How chunks are placed in zones after the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raid0Layout {
    /// The member index comes from the array sector.
    Orig,
    /// The member index comes from the offset inside the zone.
    AltMultizone,
}

impl Raid0Layout {
    /// The layout a superblock `layout` field or `raid0.default_layout`
    /// value names, if any (only 1 and 2 are layouts; 0 means "unset").
    pub fn from_value(v: u32) -> Option<Raid0Layout> {
        match v {
            RAID0_ORIG_LAYOUT => Some(Raid0Layout::Orig),
            RAID0_ALT_MULTIZONE_LAYOUT => Some(Raid0Layout::AltMultizone),
            _ => None,
        }
    }
}

/// Which arithmetic `raid0_handle_discard` uses for the ORIG layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raid0DiscardMode {
    /// 4.12–6.4: the ALT formula for every layout (discards the wrong
    /// chunks of ORIG arrays in zones ≥ 1; data corruption).
    Unshifted,
    /// 6.5+ and stable (e836007089 "md/raid0: add discard support for the
    /// 'original' layout", in 6.1.192): ORIG zones compare members through
    /// `map_disk_shift`.
    DiskShift,
}

/// One member as raid0 sees it: usable sectors (`rdev->sectors`, i.e. the
/// superblock's data size) and where the data starts on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid0Member {
    pub sectors: u64,
    pub data_offset: u64,
}

/// `struct strip_zone`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripZone {
    /// Array sector one past the zone.
    pub zone_end: u64,
    /// Member sector (before the data offset) where the zone starts on each of its members.
    pub dev_start: u64,
    pub nb_dev: u32,
    /// ORIG layout only: member index (within `devs`) of the zone's first chunk.
    pub disk_shift: u32,
    /// The zone's members (slots), in slot order: the zone's row of `conf->devlist`.
    pub devs: Vec<u32>,
}

/// `struct r0conf` plus what raid0 keeps in the rdevs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct R0Conf {
    pub chunk_sectors: u32,
    pub layout: Raid0Layout,
    pub zones: Vec<StripZone>,
    /// Each member's size rounded down to a whole chunk (`rdev->sectors`
    /// after `create_strip_zones`).
    pub member_sectors: Vec<u64>,
    pub data_offset: Vec<u64>,
}

/// Why `create_strip_zones`/`raid0_run` refuse an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Raid0Error {
    /// "chunk size must be set" (`raid0_run`).
    NoChunk,
    NoMembers,
    /// "cannot assemble multi-zone RAID0 with default_layout setting":
    /// neither the superblock nor `raid0.default_layout` names a layout.
    NoLayout { zones: usize },
}

impl fmt::Display for Raid0Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Raid0Error::NoChunk => write!(f, "raid0 needs a chunk size"),
            Raid0Error::NoMembers => write!(f, "raid0 needs at least one member"),
            Raid0Error::NoLayout { zones } => write!(
                f,
                "a raid0 array with {zones} zones needs a layout: set the array's layout to 1 (original) \
                 or 2 (alternate), or raid0.default_layout"
            ),
        }
    }
}

impl std::error::Error for Raid0Error {}

/// Where one array sector lives: member slot and member sector (zone start
/// and data offset included), as `raid0_map_submit_bio` remaps a bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid0Map {
    pub disk: u32,
    pub sector: u64,
}

/// What `raid0_handle_discard` did with one discard bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid0Discard {
    /// The part handled now (the bio, cut at its zone's end).
    pub handled: SectorRange,
    /// The part past the zone end, resubmitted to md (`submit_bio_noacct`).
    pub remainder: Option<SectorRange>,
}

/// `create_strip_zones` (with `raid0_run`'s chunk check): round each member
/// down to whole chunks, build the zones, and decide the layout from the
/// superblock's `layout` field (`array_layout`, 0 if none) and the
/// `raid0.default_layout` module parameter.
pub fn create_strip_zones(
    members: &[Raid0Member],
    chunk_sectors: u32,
    array_layout: u32,
    default_layout: u32,
) -> Result<R0Conf, Raid0Error> {
    if chunk_sectors == 0 {
        return Err(Raid0Error::NoChunk);
    }
    if members.is_empty() {
        return Err(Raid0Error::NoMembers);
    }
    let chunk = chunk_sectors as u64;
    let member_sectors: Vec<u64> = members.iter().map(|m| m.sectors / chunk * chunk).collect();
    let mut zones = build_zones(&member_sectors);
    let layout = choose_layout(&zones, array_layout, default_layout)?;
    if layout == Raid0Layout::Orig {
        set_disk_shift(&mut zones, chunk);
    }
    Ok(R0Conf {
        chunk_sectors,
        layout,
        zones,
        member_sectors,
        data_offset: members.iter().map(|m| m.data_offset).collect(),
    })
}

/// The zone loop of `create_strip_zones`: each zone takes the members
/// strictly larger than the previous zone's smallest member, and is as deep
/// as the smallest of them. There is one zone per distinct member size.
fn build_zones(sizes: &[u64]) -> Vec<StripZone> {
    let mut zones = Vec::new();
    let mut dev_start = 0;
    let mut zone_end = 0;
    loop {
        let devs: Vec<u32> = (0..sizes.len() as u32).filter(|&i| zones.is_empty() || sizes[i as usize] > dev_start).collect();
        let Some(smallest) = devs.iter().map(|&i| sizes[i as usize]).min() else { break };
        zone_end += (smallest - dev_start) * devs.len() as u64;
        zones.push(StripZone { zone_end, dev_start, nb_dev: devs.len() as u32, disk_shift: 0, devs });
        dev_start = smallest;
    }
    zones
}

/// The layout choice at the end of `create_strip_zones`: a single zone, or a
/// second zone with one member, maps the same either way and is called ORIG.
fn choose_layout(zones: &[StripZone], array_layout: u32, default_layout: u32) -> Result<Raid0Layout, Raid0Error> {
    if zones.len() == 1 || zones[1].nb_dev == 1 {
        return Ok(Raid0Layout::Orig);
    }
    Raid0Layout::from_value(array_layout)
        .or_else(|| Raid0Layout::from_value(default_layout))
        .ok_or(Raid0Error::NoLayout { zones: zones.len() })
}

/// ORIG layout: a zone's first chunk sits on the member the array-wide chunk
/// number picks, `(zone start / chunk) mod nb_dev` (`disk_shift`).
fn set_disk_shift(zones: &mut [StripZone], chunk: u64) {
    for i in 1..zones.len() {
        let first_chunk = zones[i - 1].zone_end / chunk;
        zones[i].disk_shift = (first_chunk % zones[i].nb_dev as u64) as u32;
    }
}

/// `map_disk_shift`: a member's position in the order the zone's stripe
/// visits members (the member holding the zone's first chunk is position 0).
fn map_disk_shift(disk_index: u32, num_disks: u32, disk_shift: u32) -> u32 {
    (disk_index + num_disks - disk_shift) % num_disks
}

impl R0Conf {
    /// `raid0_size`: the array size. The kernel masks each (already rounded)
    /// member size with `~(chunk - 1)`, which only equals the sum of the
    /// rounded sizes for a power-of-two chunk; a non-power-of-two chunk
    /// gives a smaller array, and so does this function.
    pub fn raid0_size(&self) -> u64 {
        let mask = !(self.chunk_sectors as u64 - 1);
        self.member_sectors.iter().map(|&s| s & mask).sum()
    }

    /// `find_zone`: the zone holding `sector` and the offset inside it;
    /// `None` past the last zone (the kernel would BUG).
    pub fn find_zone(&self, sector: u64) -> Option<(usize, u64)> {
        let z = self.zones.iter().position(|z| sector < z.zone_end)?;
        Some((z, sector - self.zone_start(z)))
    }

    /// Array sector where zone `z` starts.
    fn zone_start(&self, z: usize) -> u64 {
        if z == 0 {
            0
        } else {
            self.zones[z - 1].zone_end
        }
    }

    /// `find_zone` + `map_sector` + the remap in `raid0_map_submit_bio`:
    /// the member and member sector (zone start and data offset added) of
    /// one array sector. `None` past the end of the array.
    pub fn map_sector(&self, sector: u64) -> Option<Raid0Map> {
        let (z, zone_off) = self.find_zone(sector)?;
        let zone = &self.zones[z];
        let chunk = self.chunk_sectors as u64;
        let nb = zone.nb_dev as u64;
        // ORIG picks the member from the array sector, ALT from the zone offset.
        let key = match self.layout {
            Raid0Layout::Orig => sector,
            Raid0Layout::AltMultizone => zone_off,
        };
        let disk = zone.devs[((key / chunk) % nb) as usize];
        let chunk_on_dev = zone_off / (chunk * nb);
        let on_dev = chunk_on_dev * chunk + key % chunk;
        Some(Raid0Map { disk, sector: on_dev + zone.dev_start + self.data_offset[disk as usize] })
    }

    /// The split in `raid0_make_request`: a read/write that crosses a chunk
    /// boundary is cut at it; returns the front's size, `None` if it fits.
    /// (Any chunk size: the power-of-two and general paths agree.)
    pub fn raid0_make_request_split(&self, sector: u64, sectors: u32) -> Option<u32> {
        let chunk = self.chunk_sectors as u64;
        let front = (chunk - sector % chunk) as u32;
        (front < sectors).then_some(front)
    }

    /// `raid0_handle_discard`: cut the discard at its zone's end, then give
    /// each member of the zone one contiguous range (appended to `out` in
    /// slot order, data offset included). Members whose range is empty get
    /// nothing. `None` if `start` is past the end of the array.
    pub fn raid0_handle_discard(
        &self,
        start: u64,
        sectors: u64,
        mode: Raid0DiscardMode,
        out: &mut Vec<MemberRange>,
    ) -> Option<Raid0Discard> {
        let (z, zstart) = self.find_zone(start)?;
        let zone = &self.zones[z];
        let bio_end = start.saturating_add(sectors);
        let end = bio_end.min(zone.zone_end);
        let remainder = (bio_end > zone.zone_end).then(|| SectorRange { start: zone.zone_end, sectors: bio_end - zone.zone_end });
        let zend = end - self.zone_start(z);
        let (s, e) = (self.discard_edge(z, start, zstart, mode), self.discard_edge(z, end, zend, mode));
        for d in 0..zone.nb_dev {
            let pos = match mode {
                Raid0DiscardMode::DiskShift => map_disk_shift(d, zone.nb_dev, zone.disk_shift),
                Raid0DiscardMode::Unshifted => d,
            };
            let dev_start = s.member_bound(pos);
            let dev_end = e.member_bound(pos);
            if dev_end > dev_start {
                let disk = zone.devs[d as usize];
                let at = dev_start + zone.dev_start + self.data_offset[disk as usize];
                out.push(MemberRange { disk, start: at, sectors: dev_end - dev_start });
            }
        }
        Some(Raid0Discard { handled: SectorRange { start, sectors: end - start }, remainder })
    }

    /// One end of a discard inside zone `z` (array sector `abs`, zone offset
    /// `off`): its stripe row, the stripe position of the member it falls
    /// on, and the member offset there.
    fn discard_edge(&self, z: usize, abs: u64, off: u64, mode: Raid0DiscardMode) -> Edge {
        let zone = &self.zones[z];
        let chunk = self.chunk_sectors as u64;
        let stripe = zone.nb_dev as u64 * chunk;
        let row = off / stripe;
        let in_row = off - row * stripe;
        // Zone 0 and the ALT layout count positions from the zone offset;
        // fixed kernels take ORIG positions from the array sector, shifted.
        let pos = if mode == Raid0DiscardMode::DiskShift && self.layout == Raid0Layout::Orig && z > 0 {
            map_disk_shift(((abs / chunk) % zone.nb_dev as u64) as u32, zone.nb_dev, zone.disk_shift)
        } else {
            (in_row / chunk) as u32
        };
        Edge { row, pos, offset: in_row % chunk + row * chunk, chunk }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: u32 = 128;

    fn members(sizes: &[u64], data_offset: u64) -> Vec<Raid0Member> {
        sizes.iter().map(|&sectors| Raid0Member { sectors, data_offset }).collect()
    }

    /// Three members of 3, 6 and 9 chunks (plus slack that rounding drops):
    /// 434 → 384, 773 → 768, 1279 → 1152 sectors with 128-sector chunks.
    fn three_zones(layout: u32) -> R0Conf {
        create_strip_zones(&members(&[434, 773, 1279], 0), CHUNK, layout, 0).unwrap()
    }

    #[test]
    fn unequal_members_make_one_zone_per_size() {
        // zone 0: all 3 members to 384 → end 3·384 = 1152, dev_start 0.
        // zone 1: members larger than 384 (1, 2) to 768 → end 1152 + 2·(768−384) = 1920, dev_start 384;
        //         ORIG disk_shift = (1152/128 = 9) mod 2 = 1.
        // zone 2: member 2 to 1152 → end 1920 + 1·(1152−768) = 2304, dev_start 768; shift 15 mod 1 = 0.
        let c = three_zones(RAID0_ORIG_LAYOUT);
        assert_eq!(c.member_sectors, vec![384, 768, 1152]);
        let got: Vec<_> = c.zones.iter().map(|z| (z.zone_end, z.dev_start, z.nb_dev, z.disk_shift, z.devs.clone())).collect();
        assert_eq!(got, vec![(1152, 0, 3, 0, vec![0, 1, 2]), (1920, 384, 2, 1, vec![1, 2]), (2304, 768, 1, 0, vec![2])]);
        // 384 + 768 + 1152
        assert_eq!(c.raid0_size(), 2304);
        // ALT keeps disk_shift at 0.
        assert!(three_zones(RAID0_ALT_MULTIZONE_LAYOUT).zones.iter().all(|z| z.disk_shift == 0));
    }

    #[test]
    fn multizone_array_needs_a_layout() {
        let m = members(&[434, 773, 1279], 0);
        assert_eq!(create_strip_zones(&m, CHUNK, 0, 0).unwrap_err(), Raid0Error::NoLayout { zones: 3 });
        // raid0.default_layout=2 stands in for a missing superblock layout.
        assert_eq!(create_strip_zones(&m, CHUNK, 0, 2).unwrap().layout, Raid0Layout::AltMultizone);
        // The superblock wins over the parameter.
        assert_eq!(create_strip_zones(&m, CHUNK, 1, 2).unwrap().layout, Raid0Layout::Orig);
        // 2 and 4 chunks: zone 1 has one member, both layouts agree → ORIG without asking.
        assert_eq!(create_strip_zones(&members(&[256, 512], 0), CHUNK, 0, 0).unwrap().layout, Raid0Layout::Orig);
        assert_eq!(create_strip_zones(&members(&[256], 0), 0, 0, 0).unwrap_err(), Raid0Error::NoChunk);
        assert_eq!(create_strip_zones(&[], CHUNK, 0, 0).unwrap_err(), Raid0Error::NoMembers);
    }

    #[test]
    fn non_power_of_two_chunk_size_is_masked_like_the_kernel() {
        // chunk 384 (192 KiB): 3840 sectors = 10 chunks stays 3840 after rounding, but
        // raid0_size masks with ~383 = ~0b1_0111_1111, clearing bit 8 of 0b1111_0000_0000 → 3584.
        let c = create_strip_zones(&members(&[3840, 3840], 0), 384, 0, 0).unwrap();
        assert_eq!(c.member_sectors, vec![3840, 3840]);
        assert_eq!(c.raid0_size(), 2 * 3584);
    }

    #[test]
    fn single_zone_maps_round_robin() {
        // 4 equal members, chunk 128, data offset 2048. Sector 1000 is in chunk 7 (896..1023):
        // member 7 mod 4 = 3, member sector (1000 / 512)·128 + 1000 mod 128 = 128 + 104 = 232, +2048.
        let c = create_strip_zones(&members(&[4096; 4], 2048), CHUNK, 0, 0).unwrap();
        assert_eq!(c.map_sector(1000), Some(Raid0Map { disk: 3, sector: 2280 }));
        // Last sector 16383: chunk 127 → member 3, row 31 → 31·128 + 127 = 4095, +2048.
        assert_eq!(c.map_sector(16383), Some(Raid0Map { disk: 3, sector: 6143 }));
        assert_eq!(c.map_sector(16384), None);
    }

    #[test]
    fn every_sector_has_its_own_place() {
        // Exhaustive on a small unequal array, both layouts: no two array sectors share a member sector,
        // and every member sector used is inside the member's rounded size.
        for layout in [RAID0_ORIG_LAYOUT, RAID0_ALT_MULTIZONE_LAYOUT] {
            let c = create_strip_zones(&members(&[24, 48, 40, 56], 0), 8, layout, 0).unwrap();
            let mut seen = std::collections::HashSet::new();
            for s in 0..c.raid0_size() {
                let m = c.map_sector(s).unwrap();
                assert!(m.sector < c.member_sectors[m.disk as usize]);
                assert!(seen.insert((m.disk, m.sector)), "sector {s} collides");
            }
        }
    }

    #[test]
    fn orig_and_alt_differ_in_zone_one() {
        let orig = three_zones(RAID0_ORIG_LAYOUT);
        let alt = three_zones(RAID0_ALT_MULTIZONE_LAYOUT);
        // Sector 1152 starts zone 1 (offset 0). ORIG: array chunk 9, 9 mod 2 = 1 → devs[1] = member 2;
        // ALT: zone chunk 0 → member 1. Both at dev_start 384.
        assert_eq!(orig.map_sector(1152), Some(Raid0Map { disk: 2, sector: 384 }));
        assert_eq!(alt.map_sector(1152), Some(Raid0Map { disk: 1, sector: 384 }));
        // Sector 1285 (zone offset 133). ORIG: 1285/128 = 10 → 10 mod 2 = 0 → member 1;
        // ALT: 133/128 = 1 → member 2. Row 133/256 = 0, in chunk 5 → 384 + 5 = 389 on either.
        assert_eq!(orig.map_sector(1285), Some(Raid0Map { disk: 1, sector: 389 }));
        assert_eq!(alt.map_sector(1285), Some(Raid0Map { disk: 2, sector: 389 }));
        // Sector 2000 in zone 2 (offset 80, one member): 80 + dev_start 768 = 848.
        assert_eq!(orig.map_sector(2000), Some(Raid0Map { disk: 2, sector: 848 }));
        assert_eq!(orig.map_sector(2304), None);
    }

    #[test]
    fn chunk_split_cuts_at_the_chunk_end() {
        let c = create_strip_zones(&members(&[4096; 4], 0), CHUNK, 0, 0).unwrap();
        // 1000 mod 128 = 104: 24 sectors to the boundary, less than 64 → split at 24.
        assert_eq!(c.raid0_make_request_split(1000, 64), Some(24));
        assert_eq!(c.raid0_make_request_split(1000, 24), None);
        assert_eq!(c.raid0_make_request_split(1024, 128), None);
    }

    #[test]
    fn discard_gives_each_member_one_range() {
        // 4 members, chunk 128, stripe 512; discard [100, 1600).
        // start: row 0, position 100/128 = 0, offset 100. end 1600: row 3 (1536), 64 into the row →
        // position 0, offset 64 + 3·128 = 448.
        // member 0: [100, 448); members 1-3 (after both edges): [0, 3·128 = 384).
        // By hand from the mapping: member 0 holds chunks 0 (from 100), 4, 8 and 64 sectors of 12 →
        // 28 + 128 + 128 + 64 = 348 = 448 − 100; members 1..3 hold chunks 1,5,9 / 2,6,10 / 3,7,11.
        let c = create_strip_zones(&members(&[4096; 4], 0), CHUNK, 0, 0).unwrap();
        let mut out = Vec::new();
        let d = c.raid0_handle_discard(100, 1500, Raid0DiscardMode::DiskShift, &mut out).unwrap();
        assert_eq!(d, Raid0Discard { handled: SectorRange { start: 100, sectors: 1500 }, remainder: None });
        let want = [(0, 100, 348), (1, 0, 384), (2, 0, 384), (3, 0, 384)];
        assert_eq!(out, want.map(|(disk, start, sectors)| MemberRange { disk, start, sectors }));
    }

    #[test]
    fn discard_is_cut_at_the_zone_end() {
        // Discard [1000, 1300) on the three-zone array: zone 0 ends at 1152, the rest is resubmitted.
        // Zone 0: stripe 3·128 = 384. start 1000: row 2 (768), 232 in → position 1, offset 104 + 256 = 360.
        // end 1152: row 3, position 0, offset 384. member 0: [384, 384) empty; member 1: [360, 384);
        // member 2: [256, 384). (Chunk 7 = 896..1023 is member 1's row 2, chunk 8 member 2's.)
        let c = three_zones(RAID0_ORIG_LAYOUT);
        let mut out = Vec::new();
        let d = c.raid0_handle_discard(1000, 300, Raid0DiscardMode::DiskShift, &mut out).unwrap();
        assert_eq!(d.handled, SectorRange { start: 1000, sectors: 152 });
        assert_eq!(d.remainder, Some(SectorRange { start: 1152, sectors: 148 }));
        assert_eq!(out, vec![MemberRange { disk: 1, start: 360, sectors: 24 }, MemberRange { disk: 2, start: 256, sectors: 128 }]);
    }

    #[test]
    fn orig_layout_discard_needs_the_disk_shift() {
        // Zone 1 of the three-zone ORIG array (members 1, 2; shift 1; dev_start 384); discard [1152, 1536),
        // array chunks 9, 10, 11. Mapping: chunk 9 → 9 mod 2 = 1 → member 2 row 0; chunk 10 → member 1 row 0;
        // chunk 11 → member 2 row 1. So member 1 must lose [384, 512) and member 2 [384, 640).
        let c = three_zones(RAID0_ORIG_LAYOUT);
        let mut out = Vec::new();
        c.raid0_handle_discard(1152, 384, Raid0DiscardMode::DiskShift, &mut out).unwrap();
        assert_eq!(out, vec![MemberRange { disk: 1, start: 384, sectors: 128 }, MemberRange { disk: 2, start: 384, sectors: 256 }]);
        // Before the fix the ALT formula ran: start position 0 and end position (384−256)/128 = 1 with
        // members compared unshifted, so member 1 got [384, 640) — its row 1 holds array chunk 12, live
        // data outside the discard — and member 2 only [384, 512).
        out.clear();
        c.raid0_handle_discard(1152, 384, Raid0DiscardMode::Unshifted, &mut out).unwrap();
        assert_eq!(out, vec![MemberRange { disk: 1, start: 384, sectors: 256 }, MemberRange { disk: 2, start: 384, sectors: 128 }]);
        // Cross-check the fixed ranges against map_sector, sector by sector.
        let mut by_map: Vec<(u32, u64)> = (1152..1536).map(|s| c.map_sector(s).unwrap()).map(|m| (m.disk, m.sector)).collect();
        by_map.sort();
        let fixed: Vec<(u32, u64)> = [(1u32, 384u64, 128u64), (2, 384, 256)].iter().flat_map(|&(d, s, n)| (s..s + n).map(move |x| (d, x))).collect();
        assert_eq!(by_map, fixed);
    }

    #[test]
    fn fixed_discard_covers_exactly_the_mapped_sectors() {
        // Cross-check against map_sector on an unequal array (zones of 4, 3, 2 and 1 members with
        // chunk 8), both layouts: the ranges of the handled part are exactly where its sectors live.
        for layout in [RAID0_ORIG_LAYOUT, RAID0_ALT_MULTIZONE_LAYOUT] {
            let c = create_strip_zones(&members(&[24, 48, 40, 56], 0), 8, layout, 0).unwrap();
            for (start, sectors) in [(0, 96), (5, 80), (99, 30), (100, 44), (130, 38), (150, 18), (3, 160)] {
                let mut out = Vec::new();
                let d = c.raid0_handle_discard(start, sectors, Raid0DiscardMode::DiskShift, &mut out).unwrap();
                let mut got: Vec<(u32, u64)> = out.iter().flat_map(|r| (r.start..r.start + r.sectors).map(move |x| (r.disk, x))).collect();
                let mut want: Vec<(u32, u64)> = (d.handled.start..d.handled.end()).map(|s| c.map_sector(s).unwrap()).map(|m| (m.disk, m.sector)).collect();
                got.sort();
                want.sort();
                assert_eq!(got, want, "layout {layout}, discard {start}+{sectors}");
            }
        }
    }

    #[test]
    fn discard_past_the_end_maps_nothing() {
        let c = three_zones(RAID0_ORIG_LAYOUT);
        assert_eq!(c.raid0_handle_discard(2304, 8, Raid0DiscardMode::DiskShift, &mut Vec::new()), None);
    }
}
