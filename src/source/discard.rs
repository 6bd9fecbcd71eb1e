//! Discard issuing, as pure functions: how `__blkdev_issue_discard`
//! (block/blk-lib.c) cuts one range into bios in each kernel era, the
//! BLKDISCARD calls mkfs.xfs makes, and the bdev block size chosen on
//! first open (`set_init_blocksize`, block/bdev.c), which decides the size
//! of buffered-write bios (spec stack-and-sources §8.3–8.4).
//!
//! Every bio `__blkdev_issue_discard` builds is chained and the previous one
//! submitted (`blk_next_bio` / `bio_chain_and_submit`), so the list returned
//! here is also the submission order; `blkdev_issue_discard` wraps it in one
//! plug. Splitting each bio to `max_discard_sectors` happens later, in
//! `bio_split_to_limits`, at every queue the bio passes.

use crate::bio::PAGE_SIZE;

const UINT_MAX: u32 = u32::MAX;
const SECTOR_SHIFT: u32 = 9;

/// How `__blkdev_issue_discard` sizes its bios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardChopping {
    /// 4.9–4.18 (read as in 4.9.227/4.15): pieces of min(nr,
    /// max_discard_sectors, UINT_MAX >> 9); when more follows and a piece
    /// would end off the granularity + alignment grid, its end is pulled
    /// back to the previous grid point.
    MaxDiscardAligned,
    /// 4.19–5.9 (Ming Lei, 744889b7cbb5 "block: don't deal with discard
    /// limit in blkdev_issue_discard()" and 1adfc5e4136f): pieces of
    /// `bio_allowed_max_sectors` = round_down(UINT_MAX, lbs) >> 9, whatever
    /// max_discard is; the queue's discard split cuts them later.
    AllowedMaxSectors,
    /// 5.10–6.0 (Coly Li, "block: improve discard bio alignment in
    /// __blkdev_issue_discard()"): a start off the granularity grid
    /// (partition start included) gets a first piece up to the next grid
    /// point; aligned pieces are round_down(UINT_MAX, granularity) >> 9.
    GranularityAligned,
    /// 6.1, 6.12, 7.x `bio_discard_limit`: the same pieces as
    /// [`DiscardChopping::GranularityAligned`], computed per bio.
    BioDiscardLimit,
}

/// The queue and device values `__blkdev_issue_discard` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscardLimits {
    /// Bytes.
    pub logical_block_size: u32,
    /// Bytes.
    pub discard_granularity: u32,
    /// Bytes: `bdev_discard_alignment` of the device (4.x only uses it).
    pub discard_alignment: u32,
    pub max_discard_sectors: u32,
    /// `bd_start_sect` of a partition, 0 for a whole disk.
    pub start_sect: u64,
}

/// Why the kernel would issue no discard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscardError {
    /// -EOPNOTSUPP: the queue has no discard (`max_discard_sectors` 0).
    NotSupported,
    /// -EOPNOTSUPP: discard_granularity below one sector (5.10+ refuse 0 with
    /// "discard_granularity is 0"; before, 0 meant one sector).
    NoGranularity,
    /// -EINVAL: start or length not a multiple of the logical block size,
    /// or (4.19+) an empty range.
    Invalid(String),
    /// A piece of 0 (or, 4.x, negative) sectors at `sector`: in 4.x the end
    /// pull-back with max_discard below the granularity, in 5.10+ a
    /// granularity that is not a power of two with round_down(UINT_MAX,
    /// granularity) < 512. 6.1 would loop issuing empty bios, 6.12 stops
    /// there, leaving the rest undiscarded.
    NoProgress { sector: u64 },
}

/// One discard bio: (sector on the device it was issued to, sectors).
pub type DiscardBio = (u64, u32);

/// `__blkdev_issue_discard(bdev, sector, nr_sects)`: the bios, in order.
pub fn blkdev_issue_discard(chop: DiscardChopping, lim: &DiscardLimits, sector: u64, nr_sects: u64) -> Result<Vec<DiscardBio>, DiscardError> {
    check_discard(chop, lim, sector, nr_sects)?;
    match chop {
        DiscardChopping::MaxDiscardAligned => chop_max_discard_aligned(lim, sector, nr_sects),
        DiscardChopping::AllowedMaxSectors => Ok(chop_allowed_max_sectors(lim, sector, nr_sects)),
        DiscardChopping::GranularityAligned | DiscardChopping::BioDiscardLimit => chop_granularity(lim, sector, nr_sects),
    }
}

/// The one bio `__blkdev_issue_discard(bdev, sector, nr_sects)` builds when
/// the range fits in a single bio, without building a list: `Some` exactly
/// when [`blkdev_issue_discard`] would return `Ok` with that one bio.
/// `None` when it would build several or none, or refuse: ask it then.
/// (md submits one discard per member range; nearly all fit in one bio.)
pub fn blkdev_issue_discard_one(chop: DiscardChopping, lim: &DiscardLimits, sector: u64, nr_sects: u64) -> Option<DiscardBio> {
    if nr_sects == 0 || check_discard(chop, lim, sector, nr_sects).is_err() {
        return None;
    }
    // A range no longer than the first piece is that piece (4.x pulls back
    // only a piece shorter than what is left).
    (nr_sects <= max_piece(chop, lim, sector)).then_some((sector, nr_sects as u32))
}

/// The longest bio each era's loop cuts at `sector`, before 4.x's pull-back
/// to the alignment.
fn max_piece(chop: DiscardChopping, lim: &DiscardLimits, sector: u64) -> u64 {
    match chop {
        DiscardChopping::MaxDiscardAligned => (lim.max_discard_sectors as u64).min((UINT_MAX >> SECTOR_SHIFT) as u64),
        DiscardChopping::AllowedMaxSectors => bio_allowed_max_sectors(lim.logical_block_size) as u64,
        DiscardChopping::GranularityAligned | DiscardChopping::BioDiscardLimit => bio_discard_limit(lim, sector),
    }
}

fn check_discard(chop: DiscardChopping, lim: &DiscardLimits, sector: u64, nr: u64) -> Result<(), DiscardError> {
    if lim.max_discard_sectors == 0 {
        return Err(DiscardError::NotSupported);
    }
    if lim.logical_block_size < 512 || !lim.logical_block_size.is_power_of_two() {
        return Err(DiscardError::Invalid(format!("logical block size {} is not a power of two from 512", lim.logical_block_size)));
    }
    let by_granularity = matches!(chop, DiscardChopping::GranularityAligned | DiscardChopping::BioDiscardLimit);
    if by_granularity && lim.discard_granularity >> SECTOR_SHIFT == 0 {
        return Err(DiscardError::NoGranularity);
    }
    let bs_mask = (lim.logical_block_size >> SECTOR_SHIFT) as u64 - 1;
    if (sector | nr) & bs_mask != 0 {
        return Err(DiscardError::Invalid(format!("{sector} + {nr} is not aligned to the {}-byte logical block", lim.logical_block_size)));
    }
    if nr == 0 && chop != DiscardChopping::MaxDiscardAligned {
        return Err(DiscardError::Invalid("empty range".to_string()));
    }
    // A real range ends inside the device; sector_t arithmetic would wrap.
    if sector.checked_add(nr).and_then(|e| e.checked_add(lim.start_sect)).is_none() {
        return Err(DiscardError::Invalid(format!("{sector} + {nr} ends beyond 2^64 sectors")));
    }
    Ok(())
}

/// 4.9–4.18.
fn chop_max_discard_aligned(lim: &DiscardLimits, mut sector: u64, mut nr: u64) -> Result<Vec<DiscardBio>, DiscardError> {
    // Zero-sector (unknown) and one-sector granularities are the same.
    let gran = (lim.discard_granularity >> SECTOR_SHIFT).max(1) as u64;
    let align = (lim.discard_alignment >> SECTOR_SHIFT) as u64 % gran;
    let mut bios = Vec::new();
    while nr > 0 {
        let mut req = nr.min(max_piece(DiscardChopping::MaxDiscardAligned, lim, sector));
        let end = sector + req;
        if req < nr && end % gran != align {
            // Stop at the previous aligned sector (end - align may wrap in C).
            let pulled = end.checked_sub(align).map(|e| e / gran * gran + align);
            req = match pulled {
                Some(e) if e > sector => e - sector,
                _ => return Err(DiscardError::NoProgress { sector }),
            };
        }
        bios.push((sector, req as u32));
        sector += req;
        nr -= req;
    }
    Ok(bios)
}

/// `bio_allowed_max_sectors`: round_down(UINT_MAX, lbs) >> 9.
pub fn bio_allowed_max_sectors(logical_block_size: u32) -> u32 {
    round_down_u32(UINT_MAX, logical_block_size) >> SECTOR_SHIFT
}

/// 4.19–5.9.
fn chop_allowed_max_sectors(lim: &DiscardLimits, mut sector: u64, mut nr: u64) -> Vec<DiscardBio> {
    let max = max_piece(DiscardChopping::AllowedMaxSectors, lim, sector);
    let mut bios = Vec::new();
    while nr > 0 {
        let req = nr.min(max);
        bios.push((sector, req as u32));
        sector += req;
        nr -= req;
    }
    bios
}

/// `bio_discard_limit(bdev, sector)` (6.1+; the same sum inline in 5.10).
pub fn bio_discard_limit(lim: &DiscardLimits, sector: u64) -> u64 {
    let sector = sector.wrapping_add(lim.start_sect); // sector_t arithmetic
    let aligned = round_up_u64(sector, (lim.discard_granularity >> SECTOR_SHIFT) as u64);
    if aligned != sector {
        return aligned.wrapping_sub(sector);
    }
    (round_down_u32(UINT_MAX, lim.discard_granularity) >> SECTOR_SHIFT) as u64
}

/// 5.10+.
fn chop_granularity(lim: &DiscardLimits, mut sector: u64, mut nr: u64) -> Result<Vec<DiscardBio>, DiscardError> {
    let mut bios = Vec::new();
    while nr > 0 {
        let req = nr.min(max_piece(DiscardChopping::BioDiscardLimit, lim, sector));
        if req == 0 {
            return Err(DiscardError::NoProgress { sector });
        }
        bios.push((sector, req as u32));
        sector += req;
        nr -= req;
    }
    Ok(bios)
}

/// The kernel's `round_up(x, y)` (include/linux/math.h): `((x - 1) | (y - 1)) + 1`,
/// exact for a power of two y and reproduced as is otherwise.
fn round_up_u64(x: u64, y: u64) -> u64 {
    (x.wrapping_sub(1) | y.wrapping_sub(1)).wrapping_add(1)
}

/// `round_down(x, y)`: `x & ~(y - 1)`.
fn round_down_u32(x: u32, y: u32) -> u32 {
    x & !y.wrapping_sub(1)
}

/// BLKDISCARD (`blk_ioctl_discard`): a byte range that must be whole
/// logical blocks inside a device of `dev_bytes`, then
/// `blkdev_issue_discard(start >> 9, len >> 9)`.
pub fn blkdiscard(chop: DiscardChopping, lim: &DiscardLimits, start: u64, len: u64, dev_bytes: u64) -> Result<Vec<DiscardBio>, DiscardError> {
    blk_ioctl_discard_range(lim, start, len, dev_bytes)?;
    blkdev_issue_discard(chop, lim, start >> SECTOR_SHIFT, len >> SECTOR_SHIFT)
}

/// Would [`blkdiscard`] succeed? Without building its bios when the range
/// is one bio (every 2 GiB step of mkfs.xfs on a 5.10+ kernel: a scenario
/// checks each of a whole-device discard's calls before the run).
pub fn blkdiscard_ok(chop: DiscardChopping, lim: &DiscardLimits, start: u64, len: u64, dev_bytes: u64) -> Result<(), DiscardError> {
    if blkdiscard_one(chop, lim, start, len, dev_bytes).is_some() {
        return Ok(());
    }
    blkdiscard(chop, lim, start, len, dev_bytes).map(drop)
}

/// The one bio of [`blkdiscard`] when the call makes exactly one, without
/// building a list (`None`: several, or refused; ask [`blkdiscard`] then).
pub fn blkdiscard_one(chop: DiscardChopping, lim: &DiscardLimits, start: u64, len: u64, dev_bytes: u64) -> Option<DiscardBio> {
    blk_ioctl_discard_range(lim, start, len, dev_bytes).ok()?;
    blkdev_issue_discard_one(chop, lim, start >> SECTOR_SHIFT, len >> SECTOR_SHIFT)
}

/// `blk_ioctl_discard`'s own checks of the byte range: whole logical
/// blocks, inside the device.
fn blk_ioctl_discard_range(lim: &DiscardLimits, start: u64, len: u64, dev_bytes: u64) -> Result<(), DiscardError> {
    let lbs = lim.logical_block_size.max(1) as u64;
    if start % lbs != 0 || len % lbs != 0 {
        return Err(DiscardError::Invalid(format!("BLKDISCARD {start} + {len} bytes is not aligned to {lbs}")));
    }
    match start.checked_add(len) {
        Some(end) if end <= dev_bytes => Ok(()),
        _ => Err(DiscardError::Invalid(format!("BLKDISCARD {start} + {len} bytes is beyond the {dev_bytes}-byte device"))),
    }
}

/// The BLKDISCARD calls mkfs.xfs makes before writing (`discard_blocks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MkfsDiscard {
    /// xfsprogs ≥ ~5.5 (Pavel Reichl, 2020): 2 GiB steps from offset 0, so
    /// the run can be interrupted and show progress.
    Xfs2GiBSteps,
    /// Older xfsprogs: one BLKDISCARD of the whole device.
    XfsWholeDevice,
}

const XFS_DISCARD_STEP: u64 = 2 << 30;

/// (offset, length) in bytes of each BLKDISCARD, in order, for a device of
/// `dev_bytes` (one entry per 2 GiB step).
pub fn mkfs_discard_steps(kind: MkfsDiscard, dev_bytes: u64) -> Vec<(u64, u64)> {
    match kind {
        MkfsDiscard::XfsWholeDevice if dev_bytes > 0 => vec![(0, dev_bytes)],
        MkfsDiscard::XfsWholeDevice => Vec::new(),
        MkfsDiscard::Xfs2GiBSteps => {
            let steps = dev_bytes.div_ceil(XFS_DISCARD_STEP);
            (0..steps).map(|i| (i * XFS_DISCARD_STEP, XFS_DISCARD_STEP.min(dev_bytes - i * XFS_DISCARD_STEP))).collect()
        }
    }
}

/// `set_init_blocksize`: the bdev inode's block size on first open — start
/// at the logical block size and double while below PAGE_SIZE and the
/// device size has no bit set at the current size, i.e. the largest power
/// of two ≤ 4096 that divides the size. `logical_block_size` is a power of
/// two from 512 (the queue limits guarantee it; smaller values count as 512).
pub fn set_init_blocksize(logical_block_size: u32, dev_bytes: u64) -> u32 {
    let mut bsize = logical_block_size.max(512);
    while (bsize as u64) < PAGE_SIZE {
        if dev_bytes & bsize as u64 != 0 {
            break;
        }
        bsize <<= 1;
    }
    bsize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(gran: u32, max: u32, start: u64) -> DiscardLimits {
        DiscardLimits { logical_block_size: 512, discard_granularity: gran, discard_alignment: 0, max_discard_sectors: max, start_sect: start }
    }

    const NVME_MAX: u32 = u32::MAX; // discard_max_hw_bytes 2199023255040 = UINT_MAX sectors

    #[test]
    fn bio_discard_limit_pieces_for_4k_granularity() {
        // round_down(UINT_MAX, 4096) = 4,294,963,200 bytes = 8,388,600 sectors.
        // 8 GiB = 16,777,216 sectors = 2 × 8,388,600 + 16.
        let l = lim(4096, NVME_MAX, 0);
        let want = vec![(0, 8_388_600), (8_388_600, 8_388_600), (16_777_200, 16)];
        assert_eq!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 0, 1 << 24), Ok(want.clone()));
        assert_eq!(blkdev_issue_discard(DiscardChopping::GranularityAligned, &l, 0, 1 << 24), Ok(want));
    }

    #[test]
    fn unaligned_partition_start_gets_a_short_first_piece() {
        // Partition at sector 2047, 4 KiB (8-sector) granularity: absolute
        // sector 2047 rounds up to 2048, so the first bio is 1 sector; the
        // rest starts on the grid and fits in one 8,388,600-sector piece.
        let l = lim(4096, NVME_MAX, 2047);
        assert_eq!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 0, 100_000), Ok(vec![(0, 1), (1, 99_999)]));
        // Whole-disk sector 13 with 64 KiB (128-sector) granularity: up to 128 first.
        let l = lim(65536, NVME_MAX, 0);
        assert_eq!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 13, 1000), Ok(vec![(13, 115), (128, 885)]));
    }

    #[test]
    fn one_bio_only_when_the_range_fits_the_first_piece() {
        use DiscardChopping::*;
        // 4 KiB granularity: the first piece is 8,388,600 sectors (above).
        let l = lim(4096, NVME_MAX, 0);
        assert_eq!(blkdev_issue_discard_one(BioDiscardLimit, &l, 0, 8_388_600), Some((0, 8_388_600)));
        assert_eq!(blkdev_issue_discard_one(BioDiscardLimit, &l, 0, 8_388_601), None); // two bios
        assert_eq!(blkdev_issue_discard_one(BioDiscardLimit, &l, 0, 0), None); // refused: empty
        // 3..11 crosses the 8-sector grid point 8: a 5-sector head, then 3.
        assert_eq!(blkdev_issue_discard_one(BioDiscardLimit, &l, 3, 8), None);
        // Partition at 2047: the first piece ends at the grid point 2048.
        let p = lim(4096, NVME_MAX, 2047);
        assert_eq!(blkdev_issue_discard_one(BioDiscardLimit, &p, 0, 1), Some((0, 1)));
        assert_eq!(blkdev_issue_discard_one(BioDiscardLimit, &p, 0, 2), None);
        // 4.19-5.9 pieces are 8,388,607 sectors whatever max_discard (1024 here).
        let m = lim(4096, 1024, 0);
        assert_eq!(blkdev_issue_discard_one(AllowedMaxSectors, &m, 0, 8_388_607), Some((0, 8_388_607)));
        // 4.x: max_discard_sectors (1024) bounds the first piece.
        assert_eq!(blkdev_issue_discard_one(MaxDiscardAligned, &m, 0, 1024), Some((0, 1024)));
        assert_eq!(blkdev_issue_discard_one(MaxDiscardAligned, &m, 0, 1025), None);
        // No discard at all.
        assert_eq!(blkdev_issue_discard_one(BioDiscardLimit, &lim(4096, 0, 0), 0, 8), None);
        // Wherever it answers, it is the list's one bio.
        for chop in [MaxDiscardAligned, AllowedMaxSectors, GranularityAligned, BioDiscardLimit] {
            for (l, sector, nr) in [(&l, 0, 8), (&l, 13, 1000), (&p, 0, 1), (&p, 1, 100_000), (&m, 0, 1024), (&m, 8, 2048)] {
                if let Some(one) = blkdev_issue_discard_one(chop, l, sector, nr) {
                    assert_eq!(blkdev_issue_discard(chop, l, sector, nr), Ok(vec![one]), "{chop:?} {sector}+{nr}");
                }
            }
        }
    }

    #[test]
    fn allowed_max_sectors_ignores_max_discard() {
        // round_down(4,294,967,295, 512) = 4,294,966,784 bytes = 8,388,607 sectors;
        // 16,777,216 = 2 × 8,388,607 + 2.
        let l = lim(4096, 1024, 0);
        let got = blkdev_issue_discard(DiscardChopping::AllowedMaxSectors, &l, 0, 1 << 24).unwrap();
        assert_eq!(got, vec![(0, 8_388_607), (8_388_607, 8_388_607), (16_777_214, 2)]);
        assert_eq!(bio_allowed_max_sectors(4096), 8_388_600);
    }

    #[test]
    fn old_kernels_pull_piece_ends_back_to_the_grid() {
        // max_discard 1023, granularity 8: 0+1023 = 1023 is off the grid,
        // pulled back to 1016; 1016+1023 = 2039 → 2032; the last 968 fit.
        let l = lim(4096, 1023, 0);
        let got = blkdev_issue_discard(DiscardChopping::MaxDiscardAligned, &l, 0, 3000).unwrap();
        assert_eq!(got, vec![(0, 1016), (1016, 1016), (2032, 968)]);
        // With discard_alignment 1536 bytes (3 sectors) the grid is 8k + 3:
        // 3+100 = 103 → 99; 99+100 = 199 → 195; 195+58 is the end.
        let l = DiscardLimits { discard_alignment: 1536, ..lim(4096, 100, 0) };
        let got = blkdev_issue_discard(DiscardChopping::MaxDiscardAligned, &l, 3, 250).unwrap();
        assert_eq!(got, vec![(3, 96), (99, 96), (195, 58)]);
        // max_discard below the granularity: 0+4 pulls back to 0.
        let l = lim(4096, 4, 0);
        assert_eq!(blkdev_issue_discard(DiscardChopping::MaxDiscardAligned, &l, 0, 100), Err(DiscardError::NoProgress { sector: 0 }));
        // UINT_MAX >> 9 = 8,388,607 caps a huge max_discard.
        let got = blkdev_issue_discard(DiscardChopping::MaxDiscardAligned, &lim(512, NVME_MAX, 0), 0, 8_388_608).unwrap();
        assert_eq!(got, vec![(0, 8_388_607), (8_388_607, 1)]);
    }

    #[test]
    fn refusals() {
        let l = lim(4096, 0, 0);
        assert_eq!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 0, 8), Err(DiscardError::NotSupported));
        let l = lim(0, 1024, 0);
        assert_eq!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 0, 8), Err(DiscardError::NoGranularity));
        assert!(matches!(blkdev_issue_discard(DiscardChopping::AllowedMaxSectors, &l, u64::MAX - 7, 8), Err(DiscardError::Invalid(_))));
        // Granularity 0xFFFFFE00 (not a power of two): round_down(UINT_MAX, g)
        // = 0xFFFFFFFF & !0xFFFFFDFF = 0x200 → 1 sector per piece; 0xFFFFFFFF → 0.
        let l = lim(0xFFFF_FE00, NVME_MAX, 0);
        assert_eq!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 0, 2), Ok(vec![(0, 1), (1, 1)]));
        let l = lim(u32::MAX, NVME_MAX, 0);
        assert_eq!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 0, 2), Err(DiscardError::NoProgress { sector: 0 }));
        // 4.x: granularity 0 is one sector.
        assert_eq!(blkdev_issue_discard(DiscardChopping::MaxDiscardAligned, &l, 0, 8), Ok(vec![(0, 8)]));
        let l = DiscardLimits { logical_block_size: 4096, ..lim(4096, 1024, 0) };
        assert!(matches!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 4, 8), Err(DiscardError::Invalid(_))));
        assert!(matches!(blkdev_issue_discard(DiscardChopping::BioDiscardLimit, &l, 0, 0), Err(DiscardError::Invalid(_))));
        assert_eq!(blkdev_issue_discard(DiscardChopping::MaxDiscardAligned, &l, 0, 0), Ok(vec![]));
        assert!(blkdiscard(DiscardChopping::BioDiscardLimit, &l, 0, 8192, 4096).is_err());
        assert!(blkdiscard(DiscardChopping::BioDiscardLimit, &l, 512, 4096, 1 << 20).is_err());
        assert_eq!(blkdiscard(DiscardChopping::BioDiscardLimit, &l, 4096, 8192, 1 << 20), Ok(vec![(8, 16)]));
    }

    #[test]
    fn blkdiscard_ok_answers_as_blkdiscard() {
        use DiscardChopping::*;
        // One bio (2 GiB on 4 KiB granularity), several (8 GiB: three 6.1
        // pieces), refusals (off the block, past the end, no discard, no
        // progress with granularity 0xFFFFFFFF): ok exactly when blkdiscard is.
        let g = 1u64 << 30;
        let cases = [(lim(4096, NVME_MAX, 0), 0, 2 * g), (lim(4096, NVME_MAX, 0), 0, 8 * g), (lim(4096, 1024, 0), 0, 8 * g),
            (lim(4096, NVME_MAX, 0), 512, 4096), (lim(4096, NVME_MAX, 0), 0, 64 * g), (lim(4096, 0, 0), 0, 4096),
            (lim(u32::MAX, NVME_MAX, 0), 0, 1024), (lim(4096, 1023, 0), 0, 3000 * 512)];
        for chop in [MaxDiscardAligned, AllowedMaxSectors, GranularityAligned, BioDiscardLimit] {
            for (l, start, len) in &cases {
                let full = blkdiscard(chop, l, *start, *len, 16 * g);
                if let Some(one) = blkdiscard_one(chop, l, *start, *len, 16 * g) {
                    assert_eq!(full, Ok(vec![one]), "{chop:?} {start}+{len}");
                }
                assert_eq!(blkdiscard_ok(chop, l, *start, *len, 16 * g), full.map(drop), "{chop:?} {start}+{len}");
            }
        }
    }

    #[test]
    fn mkfs_xfs_steps() {
        // 5 GiB: 2 GiB, 2 GiB, 1 GiB from offset 0.
        let g = 1u64 << 30;
        assert_eq!(mkfs_discard_steps(MkfsDiscard::Xfs2GiBSteps, 5 * g), vec![(0, 2 * g), (2 * g, 2 * g), (4 * g, g)]);
        assert_eq!(mkfs_discard_steps(MkfsDiscard::XfsWholeDevice, 5 * g), vec![(0, 5 * g)]);
        assert_eq!(mkfs_discard_steps(MkfsDiscard::Xfs2GiBSteps, 0), vec![]);
        // Each 2 GiB step = 4,194,304 sectors: one 6.1 bio with 4 KiB granularity.
        let l = lim(4096, NVME_MAX, 0);
        assert_eq!(blkdiscard(DiscardChopping::BioDiscardLimit, &l, 2 * g, 2 * g, 5 * g), Ok(vec![(4_194_304, 4_194_304)]));
    }

    #[test]
    fn init_blocksize() {
        // 6144 = 3 × 2048: an odd multiple of 2048 bytes → 2 KiB blocks.
        assert_eq!(set_init_blocksize(512, 6144), 2048);
        // 1,900,000,000,000 bytes = 2^11 × 927,734,375 (odd): 2 KiB.
        assert_eq!(set_init_blocksize(512, 1_900_000_000_000), 2048);
        // 1 TiB: divisible by 4096 → the loop stops at PAGE_SIZE.
        assert_eq!(set_init_blocksize(512, 1 << 40), 4096);
        // 1536 = 3 × 512 → 512; 5120 = 5 × 1024 → 1024.
        assert_eq!(set_init_blocksize(512, 1536), 512);
        assert_eq!(set_init_blocksize(512, 5120), 1024);
        // A 4 KiB-sector disk starts at 4096.
        assert_eq!(set_init_blocksize(4096, 6144), 4096);
    }
}
