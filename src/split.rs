//! Splitting bios to queue limits (block/blk-merge.c: `__bio_split_to_limits`,
//! `get_max_io_size`, `bio_split_rw`, `bvec_split_segs`, `bio_split_discard`,
//! `bio_split_write_zeroes`).
//!
//! These functions only decide *where* to split; [`crate::submit`] performs
//! the split (`bio_split` + `bio_chain` + resubmission of the remainder).

use crate::bio::{req, Bio, BioVecs, Bvec, Op, PAGE_SIZE, SECTOR_SHIFT};
use crate::submit::{EAGAIN, EINVAL};
use crate::limits::QueueLimits;
use crate::profile::{Behaviour, SecureEraseLimit, WriteZeroesSplit};

/// Outcome of `__bio_split_to_limits` for one bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitDecision {
    /// Fits; `nsegs` physical segments (becomes `rq->nr_phys_segments`).
    Fits { nsegs: u32 },
    /// Split off a front of `sectors`; the front has `nsegs` segments.
    At { sectors: u32, nsegs: u32 },
    /// The bio needs a split it may not have and is failed with this
    /// status: `REQ_ATOMIC`, zone append or a zero-byte front (-EINVAL),
    /// `REQ_NOWAIT` (`BLK_STS_AGAIN`, -EAGAIN).
    Fail(i32),
}

/// `bio_allowed_max_sectors`: `UINT_MAX` bytes rounded down to the block
/// size. The block size is a power of two and `round_down` masks: of
/// `UINT_MAX` that leaves every bit above the offset in a block.
pub fn bio_allowed_max_sectors(lim: &QueueLimits) -> u32 {
    !(lim.logical_block_size - 1) >> SECTOR_SHIFT
}

/// `x % m`, masked when `m` is a power of two as the kernel's helpers do
/// for chunks and granularities (these run for every bio; a division costs
/// tens of cycles).
pub fn rem_sectors(x: u64, m: u64) -> u64 {
    if m.is_power_of_two() {
        x & (m - 1)
    } else {
        x % m
    }
}

/// Sectors to the next `chunk` boundary (`blk_chunk_sectors_left`; any
/// chunk size, not only powers of two).
pub fn chunk_sectors_left(sector: u64, chunk: u32) -> u32 {
    chunk - rem_sectors(sector, chunk as u64) as u32
}

/// `get_max_io_size`: how many sectors may go from the bio's start, ending on
/// a physical-block boundary when possible.
pub fn get_max_io_size(lim: &QueueLimits, bio: &Bio, beh: &Behaviour) -> u32 {
    let mut max = if bio.op == Op::WriteZeroes && beh.write_zeroes_split == WriteZeroesSplit::MaxIoSize {
        lim.max_write_zeroes_sectors
    } else {
        lim.max_sectors
    };
    if lim.chunk_sectors != 0 {
        max = max.min(chunk_sectors_left(bio.iter.sector, lim.chunk_sectors));
    }
    // Block sizes are powers of two: the kernel masks.
    let pbs = lim.pbs_sectors().max(1);
    let lbs = lim.lbs_sectors().max(1);
    let start = (bio.iter.sector & (pbs as u64 - 1)) as u32;
    let end = (start + max) & !(pbs - 1);
    if end > start {
        end - start
    } else {
        max & !(lbs - 1)
    }
}

/// `get_max_segment_size`: a segment may not cross `seg_boundary_mask` nor
/// exceed `max_segment_size`.
fn max_segment_size_at(lim: &QueueLimits, phys: u64) -> u64 {
    let mask = lim.seg_boundary_mask;
    let to_boundary = mask - (phys & mask) + 1;
    to_boundary.min(lim.max_segment_size as u64)
}

/// `bvec_gap_to_prev` inside one bio: with a virt boundary, a bvec may only
/// follow one that ends on the boundary, and must start on it.
pub fn bvec_gap_to_prev(lim: &QueueLimits, prev: &Bvec, next_offset: u32) -> bool {
    virt_gap(lim.virt_boundary_mask, prev.offset() as u64 + prev.len as u64, next_offset as u64)
}

/// The rule of [`bvec_gap_to_prev`] on offsets in the page: where the
/// previous bvec ends and where the next starts.
#[inline(always)]
fn virt_gap(mask: u64, prev_end: u64, next_offset: u64) -> bool {
    mask != 0 && ((next_offset & mask) != 0 || (prev_end & mask) != 0)
}

/// `bvec_split_segs`: count the segments of one bvec that fit in
/// `max_bytes - bytes`; returns the new segment and byte counts and whether
/// the bio must be split here. (Out of line: the walk below stays tight.)
#[inline(never)]
fn bvec_split_segs(lim: &QueueLimits, bv: &Bvec, mut nsegs: u32, bytes: u64, max_bytes: u64) -> (u32, u64, bool) {
    let max_len = max_bytes - bytes;
    let mut len = (bv.len as u64).min(max_len);
    let mut total = 0u64;
    while len > 0 && nsegs < lim.max_segments {
        let seg = max_segment_size_at(lim, bv.phys + total).min(len);
        nsegs += 1;
        total += seg;
        len -= seg;
        if (bv.offset() as u64 + total) & lim.virt_boundary_mask != 0 {
            break;
        }
    }
    (nsegs, bytes + total, len > 0 || bv.len as u64 > max_len)
}

/// `bio_split_rw` (6.1/6.12; `bio_split_io_at` in 7.x): walk the multipage
/// bvecs counting segments until a limit or a virt-boundary gap is hit.
/// The counts are locals and the rare cases out of line: mkfs's zero-page
/// writes are 256 bvecs a MiB, each its own segment.
pub fn bio_split_rw_at(lim: &QueueLimits, bio: &Bio, max_bytes: u64) -> SplitDecision {
    let (mask, max_segments) = (lim.virt_boundary_mask, lim.max_segments);
    let (mut nsegs, mut bytes, mut split) = (0u32, 0u64, false);
    // Where the previous bvec ended in its page (none before the first).
    let mut prev_end: Option<u64> = None;
    bio.for_each_bvec(|bv| {
        let offset = bv.offset() as u64;
        if prev_end.is_some_and(|end| virt_gap(mask, end, offset)) {
            split = true;
            return false;
        }
        // The page-local fast case: one segment. A bvec that fits in its
        // page can never cross a segment boundary (masks are ≥ one page).
        if nsegs < max_segments && bytes + bv.len as u64 <= max_bytes && offset + bv.len as u64 <= PAGE_SIZE {
            nsegs += 1;
            bytes += bv.len as u64;
        } else {
            let cut;
            (nsegs, bytes, cut) = bvec_split_segs(lim, &bv, nsegs, bytes, max_bytes);
            if cut {
                split = true;
                return false;
            }
        }
        prev_end = Some(offset + bv.len as u64);
        true
    });
    if !split {
        return SplitDecision::Fits { nsegs };
    }
    if bio.flags & req::ATOMIC != 0 {
        return SplitDecision::Fail(EINVAL);
    }
    if bio.flags & req::NOWAIT != 0 {
        return SplitDecision::Fail(EAGAIN);
    }
    let bytes = bytes - bytes % lim.logical_block_size as u64;
    if bytes == 0 {
        return SplitDecision::Fail(EINVAL);
    }
    SplitDecision::At { sectors: (bytes >> SECTOR_SHIFT) as u32, nsegs }
}

/// The walk of [`bio_split_rw_at`] decided by one compare: a bio whose one
/// (inline) bvec holds all its bytes inside a page, within `max_bytes`, is
/// one segment that fits (what nearly every 4 KiB bio is). The walk would
/// find the same: no gap before a first bvec, and the page-local case.
#[inline(always)]
fn one_page_fits(lim: &QueueLimits, bio: &Bio, max_bytes: u64) -> bool {
    let BioVecs::Inline(bv) = &bio.bvecs else { return false };
    let (size, done) = (bio.iter.size as u64, bio.iter.bvec_done as u64);
    bio.iter.idx == 0 && size != 0 && done + size <= bv.len as u64 && (bv.phys + done) % PAGE_SIZE + size <= PAGE_SIZE && size <= max_bytes && lim.max_segments != 0
}

/// A read or write of at most a page fits whatever its start, so
/// [`one_page_fits`] needs no [`get_max_io_size`] (the kernel's
/// `bio_may_need_split` is the same shortcut on validated limits): with no
/// chunk boundary the cap is `max_sectors`, and the physical block
/// alignment takes less than a block off it (`end` is at least
/// `start + max - (pbs - 1)`, above `start`): with at least two pages of
/// `max_sectors` and blocks of at most a page, at least 9 sectors are left.
/// A decision per queue, in three compares of its limits.
#[inline(always)]
fn page_fits_anywhere(lim: &QueueLimits) -> bool {
    lim.chunk_sectors == 0 && lim.physical_block_size as u64 <= PAGE_SIZE && lim.max_sectors as u64 >= 2 * PAGE_SIZE >> SECTOR_SHIFT
}

/// `bio_split_discard`: cap at `max_discard_sectors` (a multiple of the
/// granularity) and pull the end back so the next piece starts aligned.
pub fn bio_split_discard(lim: &QueueLimits, bio: &Bio, beh: &Behaviour) -> SplitDecision {
    let max = if bio.op == Op::SecureErase && beh.secure_erase_limit == SecureEraseLimit::Own {
        lim.max_secure_erase_sectors
    } else {
        lim.max_discard_sectors
    };
    let gran = (lim.discard_granularity >> SECTOR_SHIFT).max(1) as u64;
    let mut max = max.min(bio_allowed_max_sectors(lim));
    max -= rem_sectors(max as u64, gran) as u32;
    if max == 0 || bio.sectors() <= max {
        return SplitDecision::Fits { nsegs: 1 };
    }
    let mut n = max;
    let align = rem_sectors((lim.discard_alignment >> SECTOR_SHIFT) as u64, gran);
    let r = rem_sectors(bio.iter.sector + n as u64 - align, gran) as u32;
    if n > r {
        n -= r;
    }
    SplitDecision::At { sectors: n, nsegs: 1 }
}

/// `bio_split_write_zeroes`: 6.1 cuts at exactly `max_write_zeroes_sectors`;
/// 6.12+ at `get_max_io_size` (chunk boundaries and pbs alignment apply).
pub fn bio_split_write_zeroes(lim: &QueueLimits, bio: &Bio, beh: &Behaviour) -> SplitDecision {
    let max = match beh.write_zeroes_split {
        WriteZeroesSplit::Exact => lim.max_write_zeroes_sectors,
        WriteZeroesSplit::MaxIoSize => get_max_io_size(lim, bio, beh),
    };
    if lim.max_write_zeroes_sectors == 0 || max == 0 || bio.sectors() <= max {
        return SplitDecision::Fits { nsegs: 0 };
    }
    SplitDecision::At { sectors: max, nsegs: 0 }
}

/// `__bio_split_to_limits`: dispatch by op.
#[inline(always)]
pub fn split_decision(lim: &QueueLimits, bio: &Bio, beh: &Behaviour) -> SplitDecision {
    match bio.op {
        Op::Read | Op::Write => {
            if !bio.op.has_data() || bio.bvecs.is_empty() {
                return SplitDecision::Fits { nsegs: 0 };
            }
            // What nearly every bio of a disk is needs no get_max_io_size.
            if page_fits_anywhere(lim) && one_page_fits(lim, bio, PAGE_SIZE) {
                return SplitDecision::Fits { nsegs: 1 };
            }
            let max_bytes = (get_max_io_size(lim, bio, beh) as u64) << SECTOR_SHIFT;
            if one_page_fits(lim, bio, max_bytes) {
                return SplitDecision::Fits { nsegs: 1 };
            }
            bio_split_rw_at(lim, bio, max_bytes)
        }
        Op::ZoneAppend => match bio_split_rw_at(lim, bio, (lim.max_sectors as u64) << SECTOR_SHIFT) {
            SplitDecision::At { .. } => SplitDecision::Fail(EINVAL),
            d => d,
        },
        Op::Discard | Op::SecureErase => bio_split_discard(lim, bio, beh),
        Op::WriteZeroes => bio_split_write_zeroes(lim, bio, beh),
        Op::Flush => SplitDecision::Fits { nsegs: 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write of `pages` zero pages (the same 4 KiB page each time, as
    /// `__blkdev_issue_zero_pages` builds it), `skip` bytes into the first.
    fn zero_pages(pages: usize, skip: u32) -> Bio {
        let bvecs = vec![Bvec { phys: 0x1000 * PAGE_SIZE, len: PAGE_SIZE as u32 }; pages];
        let mut bio = Bio::new(0, Op::Write, 0, 0, pages as u32 * PAGE_SIZE as u32, BioVecs::new(&bvecs));
        crate::bio::bvec_iter_advance(&bio.bvecs, &mut bio.iter, skip);
        bio
    }

    #[test]
    fn page_bvecs_fit_or_split_at_segments_and_bytes() {
        let lim = QueueLimits { max_segments: 256, ..QueueLimits::stacking() };
        // 1 MiB = 256 pages: 256 segments, all allowed.
        assert_eq!(bio_split_rw_at(&lim, &zero_pages(256, 0), 1 << 20), SplitDecision::Fits { nsegs: 256 });
        // 512 KiB allowed: the 128th page ends it; 1024 sectors in 128 segments.
        assert_eq!(bio_split_rw_at(&lim, &zero_pages(256, 0), 512 << 10), SplitDecision::At { sectors: 1024, nsegs: 128 });
        // 128 segments allowed: the same cut, by segments.
        let lim128 = QueueLimits { max_segments: 128, ..lim.clone() };
        assert_eq!(bio_split_rw_at(&lim128, &zero_pages(256, 0), 1 << 20), SplitDecision::At { sectors: 1024, nsegs: 128 });
        // 512 bytes into the first page: 255.875 pages left, still 256 segments.
        assert_eq!(bio_split_rw_at(&lim, &zero_pages(256, 512), 1 << 20), SplitDecision::Fits { nsegs: 256 });
        // A 4 KiB virt boundary: the first page, 512 bytes in, still ends on
        // the boundary and the next starts on it: no gap, 4 segments.
        let virt = QueueLimits { virt_boundary_mask: 4095, ..lim.clone() };
        assert_eq!(bio_split_rw_at(&virt, &zero_pages(4, 512), 1 << 20), SplitDecision::Fits { nsegs: 4 });
        // A half page then a page: the first ends off the boundary, a gap:
        // the front is its 2 KiB (4 sectors, 1 segment); without a virt
        // boundary both go, 2 segments.
        let halves = [Bvec { phys: 0x10_0000, len: 2048 }, Bvec { phys: 0x20_0000, len: 4096 }];
        let gap = Bio::new(0, Op::Write, 0, 0, 6144, BioVecs::new(&halves));
        assert_eq!(bio_split_rw_at(&virt, &gap, 1 << 20), SplitDecision::At { sectors: 4, nsegs: 1 });
        assert_eq!(bio_split_rw_at(&lim, &gap, 1 << 20), SplitDecision::Fits { nsegs: 2 });
        // One 8 KiB bvec over two contiguous pages: one segment (no
        // boundary within 4 GiB, no segment size limit).
        let two = Bio::new(0, Op::Write, 0, 0, 8192, BioVecs::new(&[Bvec { phys: 0x10_0000, len: 8192 }]));
        assert_eq!(bio_split_rw_at(&lim, &two, 1 << 20), SplitDecision::Fits { nsegs: 1 });
        // A 64 KiB segment size limit: 128 KiB of it are two.
        let seg = QueueLimits { max_segment_size: 65536, ..lim.clone() };
        let big = Bio::new(0, Op::Write, 0, 0, 131072, BioVecs::new(&[Bvec { phys: 0x10_0000, len: 131072 }]));
        assert_eq!(bio_split_rw_at(&seg, &big, 1 << 20), SplitDecision::Fits { nsegs: 2 });
    }

    #[test]
    fn page_fits_anywhere_only_where_get_max_io_size_leaves_a_page() {
        let beh = crate::profile::profile("6.12").expect("profile").behaviour;
        for pbs in [512, 1024, 2048, 4096, 8192] {
            for max_sectors in [8, 15, 16, 17, 24, 255, 256, u32::MAX >> 1] {
                for chunk_sectors in [0, 8, 128] {
                    let lim = QueueLimits { physical_block_size: pbs, max_sectors, chunk_sectors, ..QueueLimits::stacking() };
                    let anywhere = (0..64).all(|sector| {
                        let bio = Bio::new(0, Op::Write, 0, sector, 4096, BioVecs::new(&[Bvec { phys: 0x10_0000, len: 4096 }]));
                        get_max_io_size(&lim, &bio, &beh) as u64 >= PAGE_SIZE >> SECTOR_SHIFT
                    });
                    // The shortcut is taken only where every start leaves a page.
                    assert!(!page_fits_anywhere(&lim) || anywhere, "pbs {pbs} max {max_sectors} chunk {chunk_sectors}");
                }
            }
        }
        assert!(page_fits_anywhere(&QueueLimits { physical_block_size: 4096, max_sectors: 16, ..QueueLimits::stacking() }));
        assert!(!page_fits_anywhere(&QueueLimits { max_sectors: 8, ..QueueLimits::stacking() }));
    }

    #[test]
    fn one_page_bios_fit_at_a_compare_and_others_still_walk() {
        let beh = crate::profile::profile("6.12").expect("profile").behaviour;
        let lim = QueueLimits { max_segments: 128, max_sectors: 8, ..QueueLimits::stacking() };
        let write = |phys: u64, len: u32| Bio::new(0, Op::Write, 0, 0, len, BioVecs::new(&[Bvec { phys, len }]));
        // 4 KiB in one page, 8 sectors allowed: one segment, no split.
        assert!(one_page_fits(&lim, &write(0x10_0000, 4096), 4096));
        assert_eq!(split_decision(&lim, &write(0x10_0000, 4096), &beh), SplitDecision::Fits { nsegs: 1 });
        // The same 4 KiB 2 KiB into its page crosses into the next: not
        // the one-page case; the walk still makes it one segment (no
        // boundary or size limit within it).
        assert!(!one_page_fits(&lim, &write(0x10_0800, 4096), 4096));
        assert_eq!(split_decision(&lim, &write(0x10_0800, 4096), &beh), SplitDecision::Fits { nsegs: 1 });
        // 2 KiB with 1 KiB allowed (2 sectors): past max_bytes, the walk
        // cuts it after 1 KiB, 2 sectors in 1 segment.
        let small = QueueLimits { max_sectors: 2, ..lim.clone() };
        assert!(!one_page_fits(&small, &write(0x10_0000, 2048), 1024));
        assert_eq!(split_decision(&small, &write(0x10_0000, 2048), &beh), SplitDecision::At { sectors: 2, nsegs: 1 });
        // A split front's remainder, 1 KiB into its one bvec: 3 KiB left
        // in the page, one segment.
        let mut rest = write(0x10_0000, 4096);
        crate::bio::bvec_iter_advance(&rest.bvecs.clone(), &mut rest.iter, 1024);
        assert!(one_page_fits(&lim, &rest, 4096));
        assert_eq!(split_decision(&lim, &rest, &beh), SplitDecision::Fits { nsegs: 1 });
    }
}
