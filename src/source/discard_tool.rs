//! Discard tools as workloads: util-linux `blkdiscard`, the discard pass
//! of `mkfs.xfs`, and `fstrim` over a list of free extents.
//!
//! Each BLKDISCARD ioctl (`blk_ioctl_discard`), BLKSECDISCARD
//! (`blk_ioctl_secure_erase`) or per-extent discard of FITRIM is one
//! synchronous [`IoUnit`]: `blkdev_issue_discard` cuts the range into
//! chained bios the way the kernel version does ([`DiscardChopping`], the
//! `discard_chopping` switch), all inside one plug, and waits with
//! `submit_bio_wait` on the last bio — which sets `REQ_SYNC` on it, so
//! blkparse shows `DS` for the last bio of each call and `D` for the others.
//! Secure erase (`blkdev_issue_secure_erase`) cuts at
//! `max_secure_erase_sectors` instead.

use std::collections::VecDeque;

use crate::bio::{req, Bvec, Op, BIO_MAX_VECS, PAGE_SIZE, SECTOR_SHIFT};
use crate::genhd::{DevId, Topology};
use crate::limits::QueueLimits;
use crate::profile::Behaviour;

use super::discard::{blkdev_issue_discard, blkdev_issue_discard_one, blkdiscard, blkdiscard_ok, blkdiscard_one, DiscardChopping, DiscardError, DiscardLimits};
use super::{BioSpec, IoUnit, Source, UnitKind};

/// A device as `blkdev_issue_discard` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscardTarget {
    pub dev: DevId,
    pub limits: DiscardLimits,
    pub chop: DiscardChopping,
    pub dev_bytes: u64,
    pub max_secure_erase_sectors: u32,
    /// `write_zeroes_max_bytes` in sectors: 0 makes `blkdev_issue_zeroout`
    /// write zero pages instead.
    pub max_write_zeroes_sectors: u32,
}

impl DiscardTarget {
    /// The limits of `dev` (its whole disk's queue, its partition start).
    pub fn new(topo: &Topology, dev: DevId, beh: &Behaviour) -> Self {
        let d = topo.dev(dev);
        Self::with_limits(dev, topo.limits(dev), d.start_sect, d.nr_sectors << SECTOR_SHIFT, beh)
    }

    /// Device `dev` of `dev_bytes` starting at `start_sect` of a queue
    /// with limits `l`.
    pub fn with_limits(dev: DevId, l: &QueueLimits, start_sect: u64, dev_bytes: u64, beh: &Behaviour) -> Self {
        let limits = DiscardLimits {
            logical_block_size: l.logical_block_size,
            discard_granularity: l.discard_granularity,
            discard_alignment: l.discard_alignment,
            max_discard_sectors: l.max_discard_sectors,
            start_sect,
        };
        DiscardTarget {
            dev,
            limits,
            chop: beh.discard_chopping,
            dev_bytes,
            max_secure_erase_sectors: l.max_secure_erase_sectors,
            max_write_zeroes_sectors: l.max_write_zeroes_sectors,
        }
    }

    /// One BLKDISCARD of bytes [start, start + len).
    pub fn blkdiscard(&self, start: u64, len: u64) -> Result<IoUnit, DiscardError> {
        self.blkdiscard_in(start, len, Vec::new())
    }

    /// [`Self::blkdiscard`] with its bios in `specs` (emptied first: a
    /// finished unit's list, reused). A call of one bio (each 2 GiB step
    /// of mkfs.xfs) builds no list of pieces.
    fn blkdiscard_in(&self, start: u64, len: u64, specs: Vec<BioSpec>) -> Result<IoUnit, DiscardError> {
        if let Some(one) = blkdiscard_one(self.chop, &self.limits, start, len, self.dev_bytes) {
            return Ok(self.unit_in(Op::Discard, &[one], specs));
        }
        let bios = blkdiscard(self.chop, &self.limits, start, len, self.dev_bytes)?;
        Ok(self.unit_in(Op::Discard, &bios, specs))
    }

    /// One FITRIM extent: `blkdev_issue_discard(sector, nr_sects)`, its
    /// bios in `specs` as [`Self::blkdiscard_in`].
    fn discard_sectors_in(&self, sector: u64, nr: u64, specs: Vec<BioSpec>) -> Result<IoUnit, DiscardError> {
        if (sector + nr) << SECTOR_SHIFT > self.dev_bytes {
            return Err(DiscardError::Invalid(format!("sectors {sector} + {nr} pass the device's end")));
        }
        if let Some(one) = blkdev_issue_discard_one(self.chop, &self.limits, sector, nr) {
            return Ok(self.unit_in(Op::Discard, &[one], specs));
        }
        let bios = blkdev_issue_discard(self.chop, &self.limits, sector, nr)?;
        Ok(self.unit_in(Op::Discard, &bios, specs))
    }

    /// One BLKSECDISCARD: pieces of `max_secure_erase_sectors` (capped at
    /// UINT_MAX >> 9 and rounded down to the logical block size).
    pub fn blksecdiscard(&self, start: u64, len: u64) -> Result<IoUnit, DiscardError> {
        let lbs = self.limits.logical_block_size as u64;
        if start % lbs != 0 || len % lbs != 0 || start + len > self.dev_bytes || len == 0 {
            return Err(DiscardError::Invalid(format!("BLKSECDISCARD {start} + {len} bytes is not whole blocks inside the {}-byte device", self.dev_bytes)));
        }
        let bs_mask = (lbs >> SECTOR_SHIFT) as u32 - 1;
        let max = self.max_secure_erase_sectors.min(u32::MAX >> SECTOR_SHIFT) & !bs_mask;
        if max == 0 {
            return Err(DiscardError::NotSupported);
        }
        let (mut sector, mut nr) = (start >> SECTOR_SHIFT, len >> SECTOR_SHIFT);
        let mut bios = Vec::new();
        while nr > 0 {
            let piece = nr.min(max as u64);
            bios.push((sector, piece as u32));
            sector += piece;
            nr -= piece;
        }
        Ok(self.unit(Op::SecureErase, &bios))
    }

    /// One `fallocate(FALLOC_FL_ZERO_RANGE)` of bytes [start, start + len)
    /// on the block device (`blkdev_fallocate` → `blkdev_issue_zeroout`):
    /// WRITE ZEROES bios of at most `max_write_zeroes_sectors` when the
    /// queue takes them, else `__blkdev_issue_zero_pages`: writes of the
    /// zero page, one bvec per page (the same page is never contiguous with
    /// itself), at most `BIO_MAX_VECS` pages a bio. Chained in one plug and
    /// waited on, like a discard.
    pub fn zero_range(&self, start: u64, len: u64) -> Result<IoUnit, DiscardError> {
        let lbs = self.limits.logical_block_size as u64;
        if start % lbs != 0 || len % lbs != 0 || start + len > self.dev_bytes {
            return Err(DiscardError::Invalid(format!("zeroing {start} + {len} bytes is not whole blocks inside the {}-byte device", self.dev_bytes)));
        }
        let (mut sector, mut nr) = (start >> SECTOR_SHIFT, len >> SECTOR_SHIFT);
        if self.max_write_zeroes_sectors > 0 {
            let max = self.max_write_zeroes_sectors.min((u32::MAX >> SECTOR_SHIFT) & !((lbs >> SECTOR_SHIFT) as u32 - 1)) as u64;
            let mut bios = Vec::new();
            while nr > 0 {
                let piece = nr.min(max);
                bios.push((sector, piece as u32));
                (sector, nr) = (sector + piece, nr - piece);
            }
            return Ok(self.unit(Op::WriteZeroes, &bios));
        }
        let page_sectors = PAGE_SIZE >> SECTOR_SHIFT;
        let mut specs = Vec::new();
        while nr > 0 {
            let sectors = nr.min(BIO_MAX_VECS as u64 * page_sectors);
            let bvecs: Vec<Bvec> = (0..sectors.div_ceil(page_sectors))
                .map(|i| Bvec { phys: ZERO_PAGE_PHYS, len: ((sectors - i * page_sectors).min(page_sectors) << SECTOR_SHIFT) as u32 })
                .collect();
            specs.push(BioSpec { dev: self.dev, op: Op::Write, flags: 0, sector, bvecs, size: (sectors << SECTOR_SHIFT) as u32 });
            (sector, nr) = (sector + sectors, nr - sectors);
        }
        Ok(plugged_sync_unit(specs, UnitKind::Other))
    }

    /// The call's bios in a plug, the last one `REQ_SYNC` (`submit_bio_wait`).
    fn unit(&self, op: Op, bios: &[(u64, u32)]) -> IoUnit {
        self.unit_in(op, bios, Vec::new())
    }

    /// [`Self::unit`] with its bios in `specs` (emptied first).
    fn unit_in(&self, op: Op, bios: &[(u64, u32)], mut specs: Vec<BioSpec>) -> IoUnit {
        specs.clear();
        specs.extend(bios.iter().map(|&(sector, nr)| BioSpec { dev: self.dev, op, flags: 0, sector, bvecs: Vec::new(), size: nr << SECTOR_SHIFT }));
        let kind = if op == Op::WriteZeroes { UnitKind::Other } else { UnitKind::Trim };
        plugged_sync_unit(specs, kind)
    }
}

/// The zero page's physical address (any fixed page: what matters is that
/// it never continues itself).
const ZERO_PAGE_PHYS: u64 = 0x1000 * PAGE_SIZE;

/// `bios` chained in one plug and waited on with `submit_bio_wait`, which
/// sets `REQ_SYNC` on the last: blkparse shows `DS` for it, `D` for the rest.
fn plugged_sync_unit(mut bios: Vec<BioSpec>, kind: UnitKind) -> IoUnit {
    if let Some(last) = bios.last_mut() {
        last.flags |= req::SYNC;
    }
    let bytes = bios.iter().map(|b| b.size as u64).sum();
    IoUnit { bios, plug: true, sync: true, kind, bytes, ..IoUnit::default() }
}

/// What one call of a discard tool discards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardCall {
    /// BLKDISCARD of (offset, length) in bytes.
    Bytes(u64, u64),
    /// BLKSECDISCARD of (offset, length) in bytes.
    Secure(u64, u64),
    /// A FITRIM extent (sector, sectors).
    Sectors(u64, u64),
    /// `fallocate(FALLOC_FL_ZERO_RANGE)` of (offset, length) in bytes.
    ZeroRange(u64, u64),
}

impl DiscardCall {
    /// Would the call be refused ([`Self::unit`]'s error)? A discard's
    /// bios are cut but not built into a unit: a scenario checks every
    /// call of a whole-device discard before the run.
    pub fn check(self, t: &DiscardTarget) -> Result<(), DiscardError> {
        match self {
            DiscardCall::Bytes(s, l) => blkdiscard_ok(t.chop, &t.limits, s, l, t.dev_bytes),
            _ => self.unit(t).map(drop),
        }
    }

    pub fn unit(self, t: &DiscardTarget) -> Result<IoUnit, DiscardError> {
        self.unit_in(t, Vec::new())
    }

    /// [`Self::unit`], a discard's bios in `specs` (a finished unit's
    /// list: the tool's calls then allocate nothing once the first ran).
    pub fn unit_in(self, t: &DiscardTarget, specs: Vec<BioSpec>) -> Result<IoUnit, DiscardError> {
        match self {
            DiscardCall::Bytes(s, l) => t.blkdiscard_in(s, l, specs),
            DiscardCall::Secure(s, l) => t.blksecdiscard(s, l),
            DiscardCall::Sectors(s, n) => t.discard_sectors_in(s, n, specs),
            DiscardCall::ZeroRange(s, l) => t.zero_range(s, l),
        }
    }
}

/// `blkdiscard [-s] -o OFFSET -l LENGTH [-p STEP]`: one call per step
/// (util-linux's loop `range[1] = min(step, end - range[0])`), or one call
/// for the whole range without a step.
pub fn blkdiscard_calls(offset: u64, length: u64, step: Option<u64>, secure: bool) -> Vec<DiscardCall> {
    let step = step.filter(|&s| s > 0).unwrap_or(length.max(1));
    let end = offset + length;
    let mut calls = Vec::new();
    let mut at = offset;
    while at < end {
        let len = step.min(end - at);
        calls.push(if secure { DiscardCall::Secure(at, len) } else { DiscardCall::Bytes(at, len) });
        at += len;
    }
    calls
}

/// A discard tool: its calls, one synchronous unit each.
pub struct DiscardTool {
    target: DiscardTarget,
    calls: VecDeque<DiscardCall>,
    total: usize,
    /// The last finished unit's bio list, for the next call's bios.
    spare: Vec<BioSpec>,
}

impl DiscardTool {
    pub fn new(target: DiscardTarget, calls: Vec<DiscardCall>) -> Self {
        DiscardTool { target, total: calls.len(), calls: calls.into(), spare: Vec::new() }
    }
}

impl Source for DiscardTool {
    fn next_unit(&mut self) -> Option<IoUnit> {
        let call = self.calls.pop_front()?;
        // The scenario reader checked every call against the same limits;
        // should one still fail, the ioctl returns an error and submits nothing.
        Some(call.unit_in(&self.target, std::mem::take(&mut self.spare)).unwrap_or_default())
    }

    fn unit_done(&mut self, bios: Vec<BioSpec>) {
        self.spare = bios;
    }

    fn progress(&self, _now: u64) -> Option<f64> {
        Some(super::fraction((self.total - self.calls.len()) as u64, self.total as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(chop: DiscardChopping, max_discard: u32) -> DiscardTarget {
        let limits = DiscardLimits { logical_block_size: 512, discard_granularity: 4096, discard_alignment: 0, max_discard_sectors: max_discard, start_sect: 0 };
        DiscardTarget { dev: 0, limits, chop, dev_bytes: 8 << 30, max_secure_erase_sectors: 1024, max_write_zeroes_sectors: 0 }
    }

    #[test]
    fn blkdiscard_is_one_plugged_unit_with_a_sync_last_bio() {
        // 8 GiB whole device, 6.1+ chopping with 4 KiB granularity: pieces of
        // 8,388,600 sectors (round_down(UINT_MAX, 4096) bytes): 16,777,216 =
        // 2 × 8,388,600 + 16.
        let u = target(DiscardChopping::BioDiscardLimit, u32::MAX).blkdiscard(0, 8 << 30).unwrap();
        let got: Vec<(u64, u32, u32)> = u.bios.iter().map(|b| (b.sector, b.size >> 9, b.flags)).collect();
        assert_eq!(got, [(0, 8_388_600, 0), (8_388_600, 8_388_600, 0), (16_777_200, 16, req::SYNC)]);
        assert!(u.plug && u.sync && u.kind == UnitKind::Trim && u.bytes == 8 << 30);
        // 4.19-5.9 chopping ignores max_discard: pieces of 8,388,607 sectors.
        let u = target(DiscardChopping::AllowedMaxSectors, 1024).blkdiscard(0, 8 << 30).unwrap();
        assert_eq!(u.bios[0].size >> 9, 8_388_607);
    }

    #[test]
    fn a_tool_reuses_finished_lists_for_the_same_units() {
        // 2 GiB steps of a 5 GiB device (one 6.1 bio each: 4,194,304
        // sectors < 8,388,600) and an 8 GiB call (three bios): each unit
        // built in the list the last one handed back is the unit built
        // afresh.
        let t = target(DiscardChopping::BioDiscardLimit, u32::MAX);
        let g = 1u64 << 30;
        let calls = vec![DiscardCall::Bytes(0, 2 * g), DiscardCall::Bytes(2 * g, 2 * g), DiscardCall::Bytes(0, 8 * g), DiscardCall::Sectors(8, 16)];
        let mut tool = DiscardTool::new(t, calls.clone());
        for call in calls {
            let u = tool.next_unit().expect("a unit");
            let fresh = call.unit(&t).unwrap();
            let key = |u: &IoUnit| u.bios.iter().map(|b| (b.op, b.sector, b.size, b.flags)).collect::<Vec<_>>();
            assert_eq!((key(&u), u.bytes, u.kind), (key(&fresh), fresh.bytes, fresh.kind));
            tool.unit_done(u.bios);
        }
        assert!(tool.next_unit().is_none());
    }

    #[test]
    fn steps_and_secure_erase() {
        // 10 MiB from 1 MiB in 4 MiB steps: 4, 4, 2 MiB.
        let m = 1 << 20;
        assert_eq!(blkdiscard_calls(m, 10 * m, Some(4 * m), false), [DiscardCall::Bytes(m, 4 * m), DiscardCall::Bytes(5 * m, 4 * m), DiscardCall::Bytes(9 * m, 2 * m)]);
        assert_eq!(blkdiscard_calls(0, m, None, true), [DiscardCall::Secure(0, m)]);
        // 1 MiB secure erase with max_secure_erase_sectors 1024: two bios of 1024.
        let u = target(DiscardChopping::BioDiscardLimit, 1024).blksecdiscard(0, m).unwrap();
        assert_eq!(u.bios.iter().map(|b| (b.op, b.sector, b.size >> 9)).collect::<Vec<_>>(), [(Op::SecureErase, 0, 1024), (Op::SecureErase, 1024, 1024)]);
        assert!(target(DiscardChopping::BioDiscardLimit, 1024).blksecdiscard(0, 100).is_err());
        assert!(target(DiscardChopping::BioDiscardLimit, 0).blkdiscard(0, m).is_err(), "no discard support");
    }
}
