//! md raid10 (drivers/md/raid10.c): geometry, `raid10_find_phys` and the
//! discard decomposition.
//!
//! The `layout` word holds near copies (bits 0–7), far copies (bits 8–15),
//! the "offset" flag (bit 16) and the far-set variant (bits 17–18).
//! *Near* copies of a chunk sit side by side in one stripe row; *far* copies
//! repeat the whole array further down every member (`stride` apart),
//! shifted by `near_copies` members; *offset* copies repeat each row of
//! chunks in the next row, shifted the same way. md(4) draws the layouts.
//!
//! Discards changed twice: until 5.12 they went through the write path one
//! chunk at a time; 5.10-rc1 briefly had a whole-range version with two
//! faults (reverted before 5.10); 5.13 merged the fixed one, which splits
//! off the unaligned head and tail and sends every member one discard per
//! far-copy region ([`R10Conf::raid10_handle_discard`]).

use std::fmt;

use super::{Edge, MemberRange, SectorRange};

/// Smallest raid10 chunk: one page.
const PAGE_SECTORS: u32 = 8;

/// `struct geom`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R10Geo {
    pub raid_disks: u32,
    pub near_copies: u32,
    pub far_copies: u32,
    pub far_offset: bool,
    /// Members over which far copies rotate (`far_set_size`).
    pub far_set_size: u32,
    pub chunk_sectors: u32,
    /// Member sectors between successive far copies; set by [`calc_sectors`].
    pub stride: u64,
}

/// Why `setup_geo`/`setup_conf` refuse a raid10 array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Raid10Error {
    /// Reserved layout bits set, a zero copy count or an unknown far-set variant.
    Layout(u32),
    /// The chunk is not a power of two of at least one page.
    Chunk(u32),
    /// Fewer than 2 copies, or more copies than members.
    Copies { layout: u32, copies: u32, raid_disks: u32 },
    /// One data offset per member is needed.
    DataOffsets { raid_disks: u32, given: usize },
}

impl fmt::Display for Raid10Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Raid10Error::Layout(l) => write!(f, "raid10 layout {l:#x} is not valid (near copies bits 0-7, far copies 8-15, offset bit 16, far-set variant 0-2 in bits 17-18)"),
            Raid10Error::Chunk(c) => write!(f, "raid10 chunk of {c} sectors must be a power of two of at least {PAGE_SECTORS} sectors"),
            Raid10Error::Copies { layout, copies, raid_disks } => {
                write!(f, "raid10 layout {layout:#x} makes {copies} copies; it needs 2 to {raid_disks} (the member count)")
            }
            Raid10Error::DataOffsets { raid_disks, given } => write!(f, "raid10 of {raid_disks} members got {given} data offsets"),
        }
    }
}

impl std::error::Error for Raid10Error {}

/// `setup_geo`: decode the layout word for `raid_disks` members.
pub fn setup_geo(layout: u32, chunk_sectors: u32, raid_disks: u32) -> Result<R10Geo, Raid10Error> {
    if layout >> 19 != 0 {
        return Err(Raid10Error::Layout(layout));
    }
    if chunk_sectors < PAGE_SECTORS || !chunk_sectors.is_power_of_two() {
        return Err(Raid10Error::Chunk(chunk_sectors));
    }
    let nc = layout & 0xff;
    let fc = (layout >> 8) & 0xff;
    if nc == 0 || fc == 0 {
        return Err(Raid10Error::Layout(layout));
    }
    let far_set_size = match layout >> 17 {
        0 => raid_disks,
        // "improved" far sets as first written (buggy, kept for old arrays).
        1 => raid_disks / fc,
        // far sets fixed to match the documentation.
        2 => fc * nc,
        _ => return Err(Raid10Error::Layout(layout)),
    };
    Ok(R10Geo { raid_disks, near_copies: nc, far_copies: fc, far_offset: layout & (1 << 16) != 0, far_set_size, chunk_sectors, stride: 0 })
}

/// `calc_sectors`: how much of each member holds data (`conf->dev_sectors`,
/// returned) for members of `size` sectors, and the far-copy `stride`.
pub fn calc_sectors(geo: &mut R10Geo, size: u64) -> u64 {
    let chunk = geo.chunk_sectors as u64;
    let array_chunks = size / chunk / geo.far_copies as u64 * geo.raid_disks as u64 / geo.near_copies as u64;
    let copies = (geo.near_copies * geo.far_copies) as u64;
    // Chunks used per member, rounded up so the stride covers every copy.
    let used = (array_chunks * copies).div_ceil(geo.raid_disks as u64);
    geo.stride = if geo.far_offset { chunk } else { used / geo.far_copies as u64 * chunk };
    used * chunk
}

impl R10Geo {
    /// `conf->copies`.
    pub fn copies(&self) -> u32 {
        self.near_copies * self.far_copies
    }

    /// `raid10_nr_stripes` (and 6.1's `raid10_set_io_opt`): chunks per
    /// "stripe" for `io_opt` — members divided by near copies when that
    /// divides evenly, otherwise every member.
    pub fn raid10_nr_stripes(&self) -> u32 {
        if self.raid_disks % self.near_copies != 0 {
            self.raid_disks
        } else {
            self.raid_disks / self.near_copies
        }
    }

    /// `__raid10_find_phys`: every copy of array `sector`, in slot order
    /// (near copy 0 and its far copies, then near copy 1 ...), handed to
    /// `copy` (the driver fills `r10bio->devs[]`, the checks' reference
    /// mapping maps each at once). `addr` is the member sector before the
    /// data offset, as in `r10bio->devs[slot].addr`. Inline: both call it
    /// per chunk.
    #[inline(always)]
    pub fn raid10_find_phys(&self, sector: u64, mut copy: impl FnMut(R10Copy)) {
        // The chunk is a power of two: `chunk_shift` and `chunk_mask`.
        let chunk = self.chunk_sectors as u64;
        let shift = self.chunk_sectors.trailing_zeros();
        let disks = self.raid_disks as u64;
        let c = (sector >> shift) * self.near_copies as u64;
        let mut row = c / disks;
        if self.far_offset {
            row *= self.far_copies as u64;
        }
        let mut dev = (c % disks) as u32;
        let mut base = (sector & (chunk - 1)) + (row << shift);
        for _ in 0..self.near_copies {
            let (mut d, mut addr) = (dev, base);
            copy(R10Copy { devnum: d, addr });
            for _ in 1..self.far_copies {
                d = self.next_far_disk(d);
                addr += self.stride;
                copy(R10Copy { devnum: d, addr });
            }
            dev += 1;
            if dev == self.raid_disks {
                dev = 0;
                base += chunk;
            }
        }
    }

    /// The member holding the next far copy after one on `d`: `near_copies`
    /// further on, wrapping inside `d`'s far set; when the members do not
    /// divide into whole sets the last set absorbs the leftover members.
    fn next_far_disk(&self, d: u32) -> u32 {
        let fss = self.far_set_size;
        let last_set_start = (self.raid_disks / fss - 1) * fss;
        let last_set_size = fss + self.raid_disks % fss;
        let set = d / fss;
        let next = d + self.near_copies;
        if self.raid_disks % fss != 0 && next > last_set_start {
            (next - last_set_start) % last_set_size + last_set_start
        } else {
            next % fss + fss * set
        }
    }
}

/// One copy of a sector: member slot and member sector before the data
/// offset (`r10bio->devs[slot]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R10Copy {
    pub devnum: u32,
    pub addr: u64,
}

/// Which `raid10_handle_discard` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raid10DiscardVersion {
    /// 5.10-rc1 (reverted before 5.10 final; shipped in Ubuntu backports,
    /// LP #1907262): stripe = all members × chunk, and only far layouts
    /// trim the head and tail, so near layouts discard from the chunk start
    /// on the second copy. Reproduces the over-discard; for tests.
    V1,
    /// 5.13+ (d30588b2731f, 254c271da071): stripe = data disks × chunk, every
    /// handled bio is trimmed to whole stripes.
    V2,
}

/// What `raid10_handle_discard` did with a discard it handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid10Discard {
    /// Unaligned front split off and resubmitted to md first (it comes back
    /// shorter than two stripes and takes the write path).
    pub head: Option<SectorRange>,
    /// Unaligned end split off and resubmitted to md after the head.
    pub tail: Option<SectorRange>,
    /// The whole-stripe range the member discards cover.
    pub middle: SectorRange,
}

/// `struct r10conf`: geometry plus what the array keeps per member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct R10Conf {
    pub geo: R10Geo,
    /// Sectors of each member that hold data (`conf->dev_sectors`).
    pub dev_sectors: u64,
    /// `rdev->data_offset` per slot.
    pub data_offset: Vec<u64>,
}

/// `setup_conf`: `setup_geo`, the copy-count check, then `calc_sectors` for
/// members of `dev_sectors` (`mddev->dev_sectors`).
pub fn setup_conf(layout: u32, chunk_sectors: u32, raid_disks: u32, dev_sectors: u64, data_offset: Vec<u64>) -> Result<R10Conf, Raid10Error> {
    let mut geo = setup_geo(layout, chunk_sectors, raid_disks)?;
    let copies = geo.copies();
    if copies < 2 || copies > raid_disks {
        return Err(Raid10Error::Copies { layout, copies, raid_disks });
    }
    if data_offset.len() != raid_disks as usize {
        return Err(Raid10Error::DataOffsets { raid_disks, given: data_offset.len() });
    }
    let dev_sectors = calc_sectors(&mut geo, dev_sectors);
    Ok(R10Conf { geo, dev_sectors, data_offset })
}

impl R10Conf {
    /// `raid10_size`: the array size.
    pub fn raid10_size(&self) -> u64 {
        let g = &self.geo;
        let chunk = g.chunk_sectors as u64;
        self.dev_sectors / chunk / g.far_copies as u64 * g.raid_disks as u64 / g.near_copies as u64 * chunk
    }

    /// The split in `raid10_make_request`: a bio crossing a chunk boundary
    /// is cut at it unless every member holds a near copy (then it is a
    /// mirror and any range is contiguous). Returns the front's size.
    pub fn raid10_make_request_split(&self, sector: u64, sectors: u32) -> Option<u32> {
        let chunk = self.geo.chunk_sectors;
        // `sector & chunk_mask`: the chunk is a power of two.
        let in_chunk = (sector & (chunk as u64 - 1)) as u32;
        let crosses = in_chunk as u64 + sectors as u64 > chunk as u64;
        (crosses && self.geo.near_copies < self.geo.raid_disks).then_some(chunk - in_chunk)
    }

    /// `raid10_handle_discard` (`version` picks 5.10-rc1's or 5.13's). `None`
    /// means "not handled": the bio is shorter than two stripes and goes the
    /// write path (chunk split, one discard per copy). Otherwise the member
    /// discards are appended to `out` — for each far-copy region, members in
    /// slot order, data offset included — and the split-off head and tail
    /// are returned. (A running reshape also declines; not modelled.)
    pub fn raid10_handle_discard(&self, start: u64, sectors: u64, version: Raid10DiscardVersion, out: &mut Vec<MemberRange>) -> Option<Raid10Discard> {
        let g = &self.geo;
        let stripe = self.discard_stripe(version);
        if sectors < 2 * stripe {
            return None;
        }
        let trims = version == Raid10DiscardVersion::V2 || g.far_copies > 1;
        let (mut s, mut e) = (start, start.saturating_add(sectors));
        let head = (trims && s % stripe != 0).then(|| SectorRange { start: s, sectors: stripe - s % stripe });
        s += head.map_or(0, |h| h.sectors);
        let tail = (trims && e % stripe != 0).then(|| SectorRange { start: e - e % stripe, sectors: e % stripe });
        e -= tail.map_or(0, |t| t.sectors);
        let (mut first, mut last) = (self.discard_edge(s), self.discard_edge(e));
        let regions = if g.far_offset { 1 } else { g.far_copies };
        for _ in 0..regions {
            self.submit_region(&first, &last, out);
            for edge in [&mut first, &mut last] {
                edge.row += g.stride / g.chunk_sectors as u64;
                edge.offset += g.stride;
            }
        }
        Some(Raid10Discard { head, tail, middle: SectorRange { start: s, sectors: e - s } })
    }

    /// The stripe `raid10_handle_discard` aligns to: V2 counts data disks
    /// (members per near-copy group, plus the leftover), V1 every member.
    fn discard_stripe(&self, version: Raid10DiscardVersion) -> u64 {
        let g = &self.geo;
        let data_disks = match version {
            Raid10DiscardVersion::V2 => g.raid_disks / g.near_copies + g.raid_disks % g.near_copies,
            Raid10DiscardVersion::V1 => g.raid_disks,
        };
        data_disks as u64 * g.chunk_sectors as u64
    }

    /// Stripe row, member and member offset of one end of the discard, as
    /// `raid10_handle_discard` computes `first/last_stripe_index`,
    /// `start/end_disk_index` and `start/end_disk_offset`.
    fn discard_edge(&self, x: u64) -> Edge {
        let g = &self.geo;
        let chunk = g.chunk_sectors as u64;
        let c = x / chunk * g.near_copies as u64;
        let mut row = c / g.raid_disks as u64;
        if g.far_offset {
            row *= g.far_copies as u64;
        }
        Edge { row, pos: (c % g.raid_disks as u64) as u32, offset: x % chunk + row * chunk, chunk }
    }

    /// One far-copy region: every member gets [dev_start, dev_end). The
    /// kernel relies on the two-stripe minimum for dev_end > dev_start;
    /// an empty range is skipped here instead of underflowing.
    fn submit_region(&self, first: &Edge, last: &Edge, out: &mut Vec<MemberRange>) {
        for disk in 0..self.geo.raid_disks {
            let dev_start = first.member_bound(disk);
            let dev_end = last.member_bound(disk);
            if dev_end > dev_start {
                let start = dev_start + self.data_offset[disk as usize];
                out.push(MemberRange { disk, start, sectors: dev_end - dev_start });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N2: u32 = 0x102;
    const F2: u32 = 0x201;
    const O2: u32 = 0x1_0201;

    fn conf(layout: u32, disks: u32, chunk: u32, dev_sectors: u64) -> R10Conf {
        setup_conf(layout, chunk, disks, dev_sectors, vec![0; disks as usize]).unwrap()
    }

    fn ranges(v: &[(u32, u64, u64)]) -> Vec<MemberRange> {
        v.iter().map(|&(disk, start, sectors)| MemberRange { disk, start, sectors }).collect()
    }

    /// `rows` × members table of which array chunk each member chunk holds
    /// (None where unused), built from raid10_find_phys.
    fn table(c: &R10Conf, rows: usize) -> Vec<Vec<Option<u64>>> {
        let chunk = c.geo.chunk_sectors as u64;
        let mut t = vec![vec![None; c.geo.raid_disks as usize]; rows];
        let mut out = Vec::new();
        for k in 0..c.raid10_size() / chunk {
            out.clear();
            c.geo.raid10_find_phys(k * chunk, |cp| out.push(cp));
            for cp in &out {
                let r = (cp.addr / chunk) as usize;
                if r < rows {
                    assert_eq!(t[r][cp.devnum as usize], None, "chunk {k} lands on a used place");
                    t[r][cp.devnum as usize] = Some(k);
                }
            }
        }
        t
    }

    fn row(t: &[Vec<Option<u64>>], r: usize) -> Vec<u64> {
        t[r].iter().map(|x| x.unwrap()).collect()
    }

    #[test]
    fn layout_word_decodes() {
        let g = setup_geo(N2, 1024, 4).unwrap();
        assert_eq!((g.near_copies, g.far_copies, g.far_offset, g.far_set_size), (2, 1, false, 4));
        let g = setup_geo(O2, 1024, 5).unwrap();
        assert_eq!((g.near_copies, g.far_copies, g.far_offset, g.far_set_size), (1, 2, true, 5));
        // Far-set variants: 1 → disks/fc = 6/2 = 3; 2 → fc·nc = 2.
        assert_eq!(setup_geo(F2 | 1 << 17, 1024, 6).unwrap().far_set_size, 3);
        assert_eq!(setup_geo(F2 | 2 << 17, 1024, 6).unwrap().far_set_size, 2);
        assert_eq!(setup_geo(F2 | 3 << 17, 1024, 6).unwrap_err(), Raid10Error::Layout(F2 | 3 << 17));
        assert_eq!(setup_geo(N2 | 1 << 19, 1024, 4).unwrap_err(), Raid10Error::Layout(N2 | 1 << 19));
        assert_eq!(setup_geo(0x100, 1024, 4).unwrap_err(), Raid10Error::Layout(0x100));
        assert_eq!(setup_geo(N2, 4, 4).unwrap_err(), Raid10Error::Chunk(4));
        assert_eq!(setup_geo(N2, 1000, 4).unwrap_err(), Raid10Error::Chunk(1000));
        // n1 is one copy; n3 on 2 members is more copies than members.
        assert!(matches!(setup_conf(0x101, 1024, 4, 1 << 20, vec![0; 4]), Err(Raid10Error::Copies { copies: 1, .. })));
        assert!(matches!(setup_conf(0x103, 1024, 2, 1 << 20, vec![0; 2]), Err(Raid10Error::Copies { copies: 3, .. })));
        assert!(matches!(setup_conf(N2, 1024, 4, 1 << 20, vec![0; 3]), Err(Raid10Error::DataOffsets { given: 3, .. })));
    }

    #[test]
    fn calc_sectors_and_size() {
        // 4 members n2, chunk 1024, members of 2097152 + 500 sectors: 2048 whole chunks;
        // array chunks 2048/1·4/2 = 4096; per member 4096·2/4 = 2048 chunks → 2097152 sectors;
        // stride (no far copies) 2048·1024. Array 4096 chunks = 4194304 sectors.
        let c = conf(N2, 4, 1024, 2_097_152 + 500);
        assert_eq!((c.dev_sectors, c.geo.stride, c.raid10_size()), (2_097_152, 2_097_152, 4_194_304));
        // f2 on 5 members of 10 chunks: array (10/2)·5 = 25 chunks; per member ⌈25·2/5⌉ = 10; stride 10/2 = 5 chunks.
        let c = conf(F2, 5, 1024, 10 * 1024);
        assert_eq!((c.dev_sectors, c.geo.stride, c.raid10_size()), (10 * 1024, 5 * 1024, 25 * 1024));
        // n2 on 3 members of 3 chunks: array 3·3/2 = 4 chunks (integer division); per member ⌈8/3⌉ = 3.
        let c = conf(N2, 3, 1024, 3 * 1024);
        assert_eq!((c.dev_sectors, c.raid10_size()), (3 * 1024, 4 * 1024));
        // o2: stride is one chunk.
        assert_eq!(conf(O2, 4, 1024, 1 << 20).geo.stride, 1024);
    }

    // The tables below are md(4)'s layout examples (mdadm's md.4, "RAID10"): rows are member chunks
    // from the start of the data area, columns Device #1.. (slots 0..), entries array chunk numbers.
    // md(4) labels its last near/far row "0x80"; with the chunk counts shown (256 resp. 320 chunks per
    // copy) that row is the 128th, index 127.

    #[test]
    fn md4_near_2_copies() {
        // 4 devices:      5 devices:
        // 0x00 0 0 1 1    0x00 0 0 1 1 2
        // 0x01 2 2 3 3    0x01 2 3 3 4 4
        // 0x80 254 254 255 255   0x80 317 318 318 319 319
        let t = table(&conf(N2, 4, 8, 128 * 8), 128);
        assert_eq!(row(&t, 0), [0, 0, 1, 1]);
        assert_eq!(row(&t, 1), [2, 2, 3, 3]);
        assert_eq!(row(&t, 127), [254, 254, 255, 255]);
        let t = table(&conf(N2, 5, 8, 128 * 8), 128);
        assert_eq!(row(&t, 0), [0, 0, 1, 1, 2]);
        assert_eq!(row(&t, 1), [2, 3, 3, 4, 4]);
        assert_eq!(row(&t, 127), [317, 318, 318, 319, 319]);
    }

    #[test]
    fn md4_far_2_copies() {
        // 4 devices, 128 chunks each: first copies in rows 0..63, second copies (shifted by one device)
        // from row 64 ("0x41" in md(4)).
        // 0x00 0 1 2 3 / 0x01 4 5 6 7 / .. / 0x40 252 253 254 255 /
        // 0x41 3 0 1 2 / 0x42 7 4 5 6 / .. / 0x80 255 252 253 254
        let t = table(&conf(F2, 4, 8, 128 * 8), 128);
        assert_eq!(row(&t, 0), [0, 1, 2, 3]);
        assert_eq!(row(&t, 1), [4, 5, 6, 7]);
        assert_eq!(row(&t, 63), [252, 253, 254, 255]);
        assert_eq!(row(&t, 64), [3, 0, 1, 2]);
        assert_eq!(row(&t, 65), [7, 4, 5, 6]);
        assert_eq!(row(&t, 127), [255, 252, 253, 254]);
        // 5 devices: 0x00 0 1 2 3 4 / 0x01 5 6 7 8 9 / 0x40 315 316 317 318 319 /
        // 0x41 4 0 1 2 3 / 0x42 9 5 6 7 8 / 0x80 319 315 316 317 318
        let t = table(&conf(F2, 5, 8, 128 * 8), 128);
        assert_eq!(row(&t, 0), [0, 1, 2, 3, 4]);
        assert_eq!(row(&t, 1), [5, 6, 7, 8, 9]);
        assert_eq!(row(&t, 63), [315, 316, 317, 318, 319]);
        assert_eq!(row(&t, 64), [4, 0, 1, 2, 3]);
        assert_eq!(row(&t, 65), [9, 5, 6, 7, 8]);
        assert_eq!(row(&t, 127), [319, 315, 316, 317, 318]);
    }

    #[test]
    fn md4_offset_2_copies() {
        // 4 devices: 0x00 0 1 2 3 (AA) / 0x01 3 0 1 2 (AA~) / 0x02 4 5 6 7 (AB) / 0x03 7 4 5 6 (AB~)
        // 5 devices: 0x00 0 1 2 3 4 / 0x01 4 0 1 2 3 / 0x02 5 6 7 8 9 / 0x03 9 5 6 7 8
        // (md(4)'s closing offset rows, "251 252 253 254" / "314 315 ..", do not start at a multiple of
        // the device count, so no geometry produces them; they are not tested.)
        let t = table(&conf(O2, 4, 8, 128 * 8), 4);
        assert_eq!([row(&t, 0), row(&t, 1), row(&t, 2), row(&t, 3)], [[0, 1, 2, 3], [3, 0, 1, 2], [4, 5, 6, 7], [7, 4, 5, 6]]);
        let t = table(&conf(O2, 5, 8, 128 * 8), 4);
        assert_eq!(
            [row(&t, 0), row(&t, 1), row(&t, 2), row(&t, 3)],
            [[0, 1, 2, 3, 4], [4, 0, 1, 2, 3], [5, 6, 7, 8, 9], [9, 5, 6, 7, 8]]
        );
    }

    #[test]
    fn copies_never_share_a_member() {
        // Every layout above plus n2f2 on 4 and far sets on 5/6 members, over the whole array:
        // table() asserts no two copies land on one place; here, copies of one chunk use distinct members.
        let cases = [(N2, 3), (N2, 4), (N2, 5), (F2, 4), (F2, 5), (O2, 4), (O2, 5), (0x202, 4), (F2 | 2 << 17, 5), (F2 | 2 << 17, 6)];
        for (layout, disks) in cases {
            let c = conf(layout, disks, 8, 64 * 8);
            table(&c, 64);
            let mut out = Vec::new();
            for k in 0..c.raid10_size() / 8 {
                out.clear();
                c.geo.raid10_find_phys(k * 8, |cp| out.push(cp));
                let mut devs: Vec<u32> = out.iter().map(|x| x.devnum).collect();
                devs.sort();
                devs.dedup();
                assert_eq!(devs.len(), c.geo.copies() as usize, "layout {layout:#x} on {disks}: chunk {k}");
            }
        }
    }

    #[test]
    fn find_phys_slot_order_and_far_sets() {
        let mut out = Vec::new();
        // Spec §4.2: n2 on 3 members, chunk 1024, chunk 1 → member 2 at 0, then member 0 one chunk down.
        conf(N2, 3, 1024, 1 << 20).geo.raid10_find_phys(1024 + 5, |cp| out.push(cp));
        assert_eq!(out, vec![R10Copy { devnum: 2, addr: 5 }, R10Copy { devnum: 0, addr: 1029 }]);
        // Far sets of fc·nc = 2 on 5 members: sets {0,1}, {2,3,4} (the last set takes the odd member:
        // last_set_start (5/2−1)·2 = 2, size 2 + 5 mod 2 = 3). Chunk 4 is on member 4 (row 0);
        // its far copy: 4 + 1 = 5 > 2 → (5 − 2) mod 3 + 2 = 2, one stride down.
        let c = conf(F2 | 2 << 17, 5, 8, 64 * 8);
        out.clear();
        c.geo.raid10_find_phys(4 * 8, |cp| out.push(cp));
        assert_eq!(out, vec![R10Copy { devnum: 4, addr: 0 }, R10Copy { devnum: 2, addr: c.geo.stride }]);
        // Chunk 1 (member 1, set 0): 1 + 1 = 2, not past the last set's start → 2 mod 2 + 0 = 0.
        out.clear();
        c.geo.raid10_find_phys(8, |cp| out.push(cp));
        assert_eq!(out[1].devnum, 0);
    }

    #[test]
    fn read_write_split_at_chunk_end_unless_a_mirror() {
        // 1000 + 100 > 1024 → cut at 24. n2 on two members is a mirror: never cut.
        assert_eq!(conf(N2, 4, 1024, 1 << 20).raid10_make_request_split(1000, 100), Some(24));
        assert_eq!(conf(N2, 4, 1024, 1 << 20).raid10_make_request_split(1000, 24), None);
        assert_eq!(conf(N2, 2, 1024, 1 << 20).raid10_make_request_split(1000, 100), None);
    }

    #[test]
    fn discard_of_one_mkfs_step() {
        // Spec §4.5: 4 members n2, chunk 1024: data disks 4/2 = 2, stripe 2048.
        // [0, 4194304): start row 0 member 0; end chunk 4096·2 = 8192 → row 2048, member 0, offset 2048·1024.
        // Every member: [0, 2097152).
        let c = conf(N2, 4, 1024, 1 << 31);
        let mut out = Vec::new();
        let d = c.raid10_handle_discard(0, 4_194_304, Raid10DiscardVersion::V2, &mut out).unwrap();
        assert_eq!(d, Raid10Discard { head: None, tail: None, middle: SectorRange { start: 0, sectors: 4_194_304 } });
        assert_eq!(out, ranges(&[(0, 0, 2_097_152), (1, 0, 2_097_152), (2, 0, 2_097_152), (3, 0, 2_097_152)]));
    }

    #[test]
    fn discard_of_8388600_sector_bios() {
        // Spec §4.5: BLKDISCARD chopped to 8388600-sector md bios, stripe 2048.
        let c = conf(N2, 4, 1024, 1 << 31);
        let mut out = Vec::new();
        // First bio [0, 8388600): 8388600 = 4095·2048 + 2040 → tail [8386560, +2040);
        // middle end: chunk 8190·2 = 16380 → row 4095 → every member [0, 4193280).
        let d = c.raid10_handle_discard(0, 8_388_600, Raid10DiscardVersion::V2, &mut out).unwrap();
        assert_eq!(d.head, None);
        assert_eq!(d.tail, Some(SectorRange { start: 8_386_560, sectors: 2040 }));
        assert_eq!(out, ranges(&[(0, 0, 4_193_280), (1, 0, 4_193_280), (2, 0, 4_193_280), (3, 0, 4_193_280)]));
        // The tail comes back shorter than two stripes → write path, cut at the chunk end: 1024 + 1016.
        assert_eq!(c.raid10_handle_discard(8_386_560, 2040, Raid10DiscardVersion::V2, &mut out), None);
        assert_eq!(c.raid10_make_request_split(8_386_560, 2040), Some(1024));
        // Second bio [8388600, 16777200): head 2048 − 2040 = 8 sectors; 16777200 = 8191·2048 + 2032 → tail 2032;
        // middle [8388608, 16775168): rows 8192·2/4 = 4096 .. 16382·2/4 = 8191 → [4194304, 8387584) each.
        out.clear();
        let d = c.raid10_handle_discard(8_388_600, 8_388_600, Raid10DiscardVersion::V2, &mut out).unwrap();
        assert_eq!(d.head, Some(SectorRange { start: 8_388_600, sectors: 8 }));
        assert_eq!(d.tail, Some(SectorRange { start: 16_775_168, sectors: 2032 }));
        assert_eq!(d.middle, SectorRange { start: 8_388_608, sectors: 8_386_560 });
        assert_eq!(out, ranges(&[(0, 4_194_304, 4_193_280), (1, 4_194_304, 4_193_280), (2, 4_194_304, 4_193_280), (3, 4_194_304, 4_193_280)]));
        // The 8-sector head is write-path: chunk 8191 (1016 in) → 8191·2 = 16382 → row 4095, members 2 and 3,
        // at 4095·1024 + 1016 = 4194296: two member discards of 8.
        let mut copies = Vec::new();
        c.geo.raid10_find_phys(8_388_600, |cp| copies.push(cp));
        assert_eq!(copies, vec![R10Copy { devnum: 2, addr: 4_194_296 }, R10Copy { devnum: 3, addr: 4_194_296 }]);
    }

    #[test]
    fn far_layout_discards_each_copy_region() {
        // f2 on 4 members of 8 chunks (1024): data disks 4, stripe 4096; stride 4 chunks = 4096.
        // [1024, 11264): head [1024, 4096), 11264 mod 4096 = 3072 → tail [8192, 11264), middle [4096, 8192):
        // rows 1..2 → every member [1024, 2048), then the far copies one stride down: [5120, 6144).
        let c = setup_conf(F2, 1024, 4, 8 * 1024, vec![2048; 4]).unwrap();
        let mut out = Vec::new();
        let d = c.raid10_handle_discard(1024, 10_240, Raid10DiscardVersion::V2, &mut out).unwrap();
        assert_eq!((d.head, d.tail), (Some(SectorRange { start: 1024, sectors: 3072 }), Some(SectorRange { start: 8192, sectors: 3072 })));
        // data offset 2048 added.
        let want: Vec<_> = [3072u64, 7168].iter().flat_map(|&s| (0..4).map(move |disk| (disk, s, 1024))).collect();
        assert_eq!(out, ranges(&want));
    }

    #[test]
    fn offset_layout_discards_one_region() {
        // o2 on 4 members, chunk 1024: stripe 4096. [0, 8192): end chunk 8 → row (8/4)·2 = 4 → offset 4096.
        // One region: every member [0, 4096), covering rows 0-3 (chunks 0..7 and their shifted copies).
        let c = conf(O2, 4, 1024, 1 << 20);
        let mut out = Vec::new();
        c.raid10_handle_discard(0, 8192, Raid10DiscardVersion::V2, &mut out).unwrap();
        assert_eq!(out, ranges(&[(0, 0, 4096), (1, 0, 4096), (2, 0, 4096), (3, 0, 4096)]));
    }

    #[test]
    fn short_discards_take_the_write_path() {
        // Stripe 2048 on 4 members n2: under 4096 sectors is not handled.
        let c = conf(N2, 4, 1024, 1 << 31);
        assert_eq!(c.raid10_handle_discard(0, 4095, Raid10DiscardVersion::V2, &mut Vec::new()), None);
    }

    #[test]
    fn v1_over_discards_near_layouts() {
        // Xiao Ni's v2 cover letter: 2 members n2, discard from 70968; chunk 1024 (mdadm's default 512 KiB).
        // V1: stripe 2·1024, handled (8192 ≥ 4096), no trimming for near layouts. Start: 70968 = 69·1024 + 312
        // → 69·2 = 138 → row 69, member 0, offset 70968; member 1 (after member 0) gets the row start
        // 69·1024 = 70656: 312 sectors of live data before the range are discarded on the mirror.
        // End 79160 = 77·1024 + 312 → row 77: member 0 to 79160, member 1 only to 78848.
        let c = conf(N2, 2, 1024, 1 << 20);
        let mut out = Vec::new();
        let d = c.raid10_handle_discard(70_968, 8192, Raid10DiscardVersion::V1, &mut out).unwrap();
        assert_eq!((d.head, d.tail), (None, None));
        assert_eq!(out, ranges(&[(0, 70_968, 8192), (1, 70_656, 8192)]));
        // V2: data disks 2/2 = 1, stripe 1024 → head 1024 − 312 = 712, tail 312, both mirrors [71680, 78848).
        out.clear();
        let d = c.raid10_handle_discard(70_968, 8192, Raid10DiscardVersion::V2, &mut out).unwrap();
        assert_eq!(d.head, Some(SectorRange { start: 70_968, sectors: 712 }));
        assert_eq!(d.tail, Some(SectorRange { start: 78_848, sectors: 312 }));
        assert_eq!(out, ranges(&[(0, 71_680, 7168), (1, 71_680, 7168)]));
    }

    /// Every (member, member sector) that holds a copy of a sector in `range`, by raid10_find_phys.
    fn copies_of(c: &R10Conf, range: SectorRange) -> std::collections::BTreeSet<(u32, u64)> {
        let mut out = Vec::new();
        let mut set = std::collections::BTreeSet::new();
        for s in range.start..range.end() {
            out.clear();
            c.geo.raid10_find_phys(s, |cp| out.push(cp));
            set.extend(out.iter().map(|cp| (cp.devnum, cp.addr)));
        }
        set
    }

    #[test]
    fn v2_discards_exactly_the_copies_of_the_middle() {
        // Cross-check against raid10_find_phys: the member ranges must cover every copy of every sector of
        // the handled middle and nothing else, for near, far, offset and mixed layouts, members that do
        // and do not divide by the copies, and aligned and unaligned ranges.
        let cases = [(N2, 3), (N2, 4), (N2, 5), (0x103, 5), (F2, 4), (F2, 5), (O2, 4), (O2, 5), (0x202, 4)];
        for (layout, disks) in cases {
            let c = conf(layout, disks, 8, 64 * 8);
            // Stripes are at most 5 chunks of 8 = 40 sectors, so every range (≥ 96) is handled.
            for (start, sectors) in [(0, 200), (13, 300), (40, 96), (7, 150)] {
                let mut out = Vec::new();
                let d = c.raid10_handle_discard(start, sectors, Raid10DiscardVersion::V2, &mut out).unwrap();
                let mut got = std::collections::BTreeSet::new();
                for r in &out {
                    for x in r.start..r.start + r.sectors {
                        assert!(got.insert((r.disk, x)), "layout {layout:#x}/{disks}: ({}, {x}) discarded twice", r.disk);
                    }
                }
                assert_eq!(got, copies_of(&c, d.middle), "layout {layout:#x} on {disks}, discard {start}+{sectors}");
            }
        }
    }

    #[test]
    fn v1_stripe_counts_every_member() {
        // 4 members n2: V1's stripe is 4·1024, so a 6144-sector discard (3 V2 stripes) is not handled by V1.
        let c = conf(N2, 4, 1024, 1 << 31);
        assert_eq!(c.raid10_handle_discard(0, 6144, Raid10DiscardVersion::V1, &mut Vec::new()), None);
        assert!(c.raid10_handle_discard(0, 6144, Raid10DiscardVersion::V2, &mut Vec::new()).is_some());
    }
}
