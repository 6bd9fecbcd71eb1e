//! The page cache of a raw block device opened without O_DIRECT, reduced
//! to what decides the bios: which buffers of which pages are uptodate and
//! dirty (CONFIG_BUFFER_HEAD block devices, block/fops.c `def_blk_aops`).
//!
//! * Buffer heads are the bdev's soft block size — `set_init_blocksize`
//!   on first open ([`super::discard::set_init_blocksize`]), or what
//!   `blockdev --setbsz` set — so a page has `PAGE_SIZE / blocksize` of them.
//! * A buffered write (`generic_perform_write` → `block_write_begin` →
//!   `__block_write_begin_int`) dirties the buffers it touches; a buffer it
//!   only partly covers that is not uptodate is read first (`bh_read_nowait`,
//!   one read bio per buffer) and the write waits for it. A page wholly
//!   written needs no read.
//! * Writeback (`blkdev_writepages`: a plug around `write_cache_pages`, then
//!   `__block_write_full_folio` per page) submits one bio per dirty buffer,
//!   pages in index order — [`super::writeback::write_cache_pages`] gives
//!   the order. WB_SYNC_ALL writeback (fsync, O_SYNC) is `REQ_SYNC`.
//! * fsync/fdatasync (`blkdev_fsync`): write back and wait, then
//!   `blkdev_issue_flush`, an empty `REQ_PREFLUSH` write that
//!   `submit_bio_wait` makes `REQ_SYNC`; the block layer drops it on a
//!   device without a volatile write cache.
//! * Background writeback, simplified: once dirty pages exceed
//!   `dirty_background_bytes`, every dirty page is written back in one plug,
//!   cyclically from where the previous pass stopped (`writeback_index`),
//!   submitted from the writer's task (the kernel's flusher is a kworker,
//!   and `balance_dirty_pages` throttles the writer meanwhile).
//!
//! * Closing the device for the last time (`blkdev_release` →
//!   `blkdev_flush_mapping` → `sync_blockdev`) writes back every dirty page
//!   and waits, without a flush.
//!
//! The page cache belongs to the device (its bdev inode), so every job
//! writing to a device shares one ([`SharedCaches`]). Reads through the
//! page cache are not modelled.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use crate::bio::{req, Bvec, Op, PAGE_SIZE, SECTOR_SHIFT};
use crate::genhd::{DevId, Topology};

use super::discard::set_init_blocksize;

use super::writeback::{write_cache_pages, WritebackControl};
use super::{BioSpec, IoUnit, UnitKind};

/// Where page-cache pages sit in memory: 4 GiB plus the byte offset on the
/// device, so consecutive pages are physically adjacent.
const PAGE_CACHE_PHYS: u64 = 0x1_0000_0000;

/// Pages per chunk of the uptodate bitmap.
const CHUNK_PAGES: u64 = 4096;

/// Which buffers of which pages are uptodate: a bitmap of wholly uptodate
/// pages in chunks (the common case, one bit per page), and a
/// buffer mask for pages only partly uptodate. Bit i of a mask is buffer i.
#[derive(Clone, Debug, Default)]
struct Uptodate {
    full: HashMap<u64, Box<[u64; (CHUNK_PAGES / 64) as usize]>>,
    partial: HashMap<u64, u8>,
}

impl Uptodate {
    fn get(&self, page: u64, all: u8) -> u8 {
        let bit = page % CHUNK_PAGES;
        match self.full.get(&(page / CHUNK_PAGES)) {
            Some(c) if c[(bit / 64) as usize] >> (bit % 64) & 1 == 1 => all,
            _ => self.partial.get(&page).copied().unwrap_or(0),
        }
    }

    fn set(&mut self, page: u64, bits: u8, all: u8) {
        let now = self.get(page, all) | bits;
        if now != all {
            self.partial.insert(page, now);
            return;
        }
        self.partial.remove(&page);
        let bit = page % CHUNK_PAGES;
        let c = self.full.entry(page / CHUNK_PAGES).or_insert_with(|| Box::new([0; (CHUNK_PAGES / 64) as usize]));
        c[(bit / 64) as usize] |= 1 << (bit % 64);
    }
}

/// Which dirty pages a writeback covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbRange {
    /// Every dirty page (fsync, end_fsync): WB_SYNC_ALL.
    All,
    /// Pages overlapping bytes [start, end) (O_SYNC `vfs_fsync_range`): WB_SYNC_ALL.
    Bytes(u64, u64),
    /// Background writeback: every dirty page, cyclic, WB_SYNC_NONE.
    Background,
}

#[derive(Clone, Debug)]
pub struct PageCache {
    pub dev: DevId,
    pub blocksize: u32,
    /// `dirty_background_bytes`; `None`: no background writeback.
    pub background_bytes: Option<u64>,
    uptodate: Uptodate,
    /// Dirty buffers of each dirty page, in page order.
    dirty: BTreeMap<u64, u8>,
    writeback_index: u64,
    /// Open file descriptions of the device (`bd_openers`).
    openers: u32,
}

/// A device's page cache, shared by the jobs that open the device.
pub type SharedCache = Rc<RefCell<PageCache>>;

/// The page caches of one run, by device.
#[derive(Default)]
pub struct SharedCaches {
    caches: HashMap<DevId, SharedCache>,
}

impl SharedCaches {
    /// The page cache of `dev`, created on first use with `blocksize`
    /// (`None`: `set_init_blocksize` from the device size), opened once more.
    pub fn open(&mut self, topo: &Topology, dev: DevId, blocksize: Option<u32>, background_bytes: Option<u64>) -> Result<SharedCache, String> {
        if let Some(c) = self.caches.get(&dev) {
            c.borrow_mut().openers += 1;
            return Ok(c.clone());
        }
        let lbs = topo.limits(dev).logical_block_size;
        let bs = blocksize.unwrap_or_else(|| set_init_blocksize(lbs, topo.dev(dev).nr_sectors << SECTOR_SHIFT));
        if bs < lbs {
            return Err(format!("block size {bs} is below the logical block size {lbs}"));
        }
        let mut pc = PageCache::new(dev, bs, background_bytes)?;
        pc.openers = 1;
        let c = Rc::new(RefCell::new(pc));
        self.caches.insert(dev, c.clone());
        Ok(c)
    }
}

impl PageCache {
    /// `blocksize` must be a power of two from 512 to PAGE_SIZE (`set_blocksize`).
    pub fn new(dev: DevId, blocksize: u32, background_bytes: Option<u64>) -> Result<Self, String> {
        if !(512..=PAGE_SIZE as u32).contains(&blocksize) || !blocksize.is_power_of_two() {
            return Err(format!("block size {blocksize} is not a power of two from 512 to {PAGE_SIZE}"));
        }
        Ok(PageCache { dev, blocksize, background_bytes, uptodate: Uptodate::default(), dirty: BTreeMap::new(), writeback_index: 0, openers: 0 })
    }

    fn per_page(&self) -> u64 {
        PAGE_SIZE / self.blocksize as u64
    }

    /// The mask of all of a page's buffers.
    fn all(&self) -> u8 {
        ((1u16 << self.per_page()) - 1) as u8
    }

    pub fn dirty_bytes(&self) -> u64 {
        self.dirty.len() as u64 * PAGE_SIZE
    }

    /// Dirty pages exceed `dirty_background_bytes`.
    pub fn over_background(&self) -> bool {
        self.background_bytes.is_some_and(|b| self.dirty_bytes() > b)
    }

    /// A buffered write of bytes [pos, pos + len): marks the buffers dirty
    /// and returns the reads of partly covered buffers that must come first.
    pub fn write(&mut self, pos: u64, len: u64) -> Vec<BioSpec> {
        let bs = self.blocksize as u64;
        let mut reads = Vec::new();
        let (first, end) = (pos / bs, (pos + len).div_ceil(bs));
        for block in first..end {
            let (page, bit) = (block / self.per_page(), 1u8 << (block % self.per_page()));
            let whole = block * bs >= pos && (block + 1) * bs <= pos + len;
            if !whole && self.uptodate.get(page, self.all()) & bit == 0 {
                reads.push(self.buffer_bio(Op::Read, block, 0));
            }
            self.uptodate.set(page, bit, self.all());
            *self.dirty.entry(page).or_default() |= bit;
        }
        reads
    }

    /// One bio for buffer `block` (sector = block × blocksize / 512).
    fn buffer_bio(&self, op: Op, block: u64, flags: u32) -> BioSpec {
        let bytes = block * self.blocksize as u64;
        BioSpec { dev: self.dev, op, flags, sector: bytes >> 9, bvecs: vec![Bvec { phys: PAGE_CACHE_PHYS + bytes, len: self.blocksize }], size: self.blocksize }
    }

    /// The writeback bios of `range`, in submission order; their buffers
    /// become clean.
    pub fn writeback(&mut self, range: WbRange) -> Vec<BioSpec> {
        let (lo, hi) = match range {
            WbRange::Bytes(s, e) => (s / PAGE_SIZE, e.div_ceil(PAGE_SIZE)),
            _ => (0, u64::MAX),
        };
        let dirty: Vec<u64> = self.dirty.range(lo..hi).map(|(p, _)| *p).collect();
        let order = match range {
            WbRange::Background => self.cyclic(&dirty),
            _ => write_cache_pages(&dirty, self.blocksize, &WritebackControl::default()).map(|w| w.bios).unwrap_or_default(),
        };
        // wbc_to_write_flags: WB_SYNC_ALL is REQ_SYNC, background (and
        // periodic) writeback REQ_BACKGROUND; writeback throttling picks
        // its limit from them (get_limit in blk-wbt.c).
        let flags = if range == WbRange::Background { req::BACKGROUND } else { req::SYNC };
        let mut bios = Vec::with_capacity(order.len());
        for b in order {
            let block = b.sector * 512 / self.blocksize as u64;
            let bit = 1u8 << (block % self.per_page());
            if self.dirty.get(&b.page).is_some_and(|m| m & bit != 0) {
                bios.push(self.buffer_bio(Op::Write, block, flags));
            }
        }
        for p in dirty {
            self.dirty.remove(&p);
        }
        bios
    }

    /// `range_cyclic` background writeback: from `writeback_index` to the
    /// end, then from the start.
    fn cyclic(&mut self, dirty: &[u64]) -> Vec<super::writeback::BufferBio> {
        let from = WritebackControl { range_start: self.writeback_index, nr_to_write: None };
        let Ok(tail) = write_cache_pages(dirty, self.blocksize, &from) else { return Vec::new() };
        let before: Vec<u64> = dirty.iter().copied().filter(|&p| p < self.writeback_index).collect();
        let head = write_cache_pages(&before, self.blocksize, &WritebackControl::default()).map(|w| w.bios).unwrap_or_default();
        self.writeback_index = if head.is_empty() { tail.next_index } else { before.last().map_or(0, |p| p + 1) };
        tail.bios.into_iter().chain(head).collect()
    }

    /// The units of one fsync started at `now`: the writeback of `range`
    /// (after the job's I/O drains, in a plug, waited for), then the flush,
    /// whose latency counts from `now`.
    pub fn fsync_units(&mut self, range: WbRange, now: u64) -> [IoUnit; 2] {
        let bios = self.writeback(range);
        let wb = IoUnit { bios, plug: true, sync: true, drain: true, ..IoUnit::default() };
        let flush = IoUnit { bios: vec![flush_bio(self.dev)], sync: true, kind: UnitKind::Sync, started_ns: Some(now), ..IoUnit::default() };
        [wb, flush]
    }

    /// Close one opener; the last close (`blkdev_flush_mapping`) syncs the
    /// device — every dirty page written back (WB_SYNC_ALL) and waited
    /// for, no flush — and drops its cached pages (`kill_bdev`), so a later
    /// opener reads them again.
    pub fn release(&mut self) -> Option<IoUnit> {
        self.openers = self.openers.saturating_sub(1);
        if self.openers > 0 {
            return None;
        }
        let sync = (!self.dirty.is_empty()).then(|| IoUnit { bios: self.writeback(WbRange::All), plug: true, sync: true, drain: true, ..IoUnit::default() });
        self.uptodate = Uptodate::default();
        sync
    }

    /// The background writeback unit, when dirty pages exceed the threshold.
    pub fn background_unit(&mut self) -> Option<IoUnit> {
        if !self.over_background() {
            return None;
        }
        Some(IoUnit { bios: self.writeback(WbRange::Background), plug: true, ..IoUnit::default() })
    }
}

/// `blkdev_issue_flush`: an empty `REQ_PREFLUSH` write, `REQ_SYNC` from
/// `submit_bio_wait`.
pub fn flush_bio(dev: DevId) -> BioSpec {
    BioSpec { dev, op: Op::Write, flags: req::PREFLUSH | req::SYNC, sector: 0, bvecs: Vec::new(), size: 0 }
}

/// fsync (or O_SYNC's `vfs_fsync_range`) of `dev` at `now`: the writeback
/// of `range` when the device has a page cache with dirty pages in it,
/// then the flush. Without writeback the flush itself waits for the job's
/// I/O to drain.
pub fn fsync_units(cache: Option<&SharedCache>, dev: DevId, range: WbRange, now: u64) -> Vec<IoUnit> {
    let [wb, mut flush] = match cache {
        Some(c) => c.borrow_mut().fsync_units(range, now),
        None => [IoUnit::default(), IoUnit { bios: vec![flush_bio(dev)], sync: true, kind: UnitKind::Sync, started_ns: Some(now), ..IoUnit::default() }],
    };
    if wb.bios.is_empty() {
        flush.drain = true;
        return vec![flush];
    }
    vec![wb, flush]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sectors(bios: &[BioSpec]) -> Vec<(u64, u32)> {
        bios.iter().map(|b| (b.sector, b.size >> 9)).collect()
    }

    #[test]
    fn whole_pages_need_no_read_and_write_back_per_buffer() {
        // 2 KiB buffers: page 3 (bytes 12288..16384) is buffers 6 and 7,
        // sectors 24 and 28, 4 sectors each.
        let mut pc = PageCache::new(0, 2048, None).unwrap();
        assert!(pc.write(3 * 4096, 4096).is_empty());
        assert_eq!(pc.dirty_bytes(), 4096);
        let wb = pc.writeback(WbRange::All);
        assert_eq!(sectors(&wb), [(24, 4), (28, 4)]);
        assert!(wb.iter().all(|b| b.op == Op::Write && b.flags == req::SYNC));
        assert_eq!(pc.dirty_bytes(), 0);
        assert!(pc.writeback(WbRange::All).is_empty(), "clean after writeback");
    }

    #[test]
    fn partial_buffers_are_read_first_and_only_dirty_buffers_written() {
        // 1 KiB buffers; write bytes 1536..2560: buffer 1 (1024..2048) and
        // buffer 2 (2048..3072) are each half covered → two reads (sectors 2
        // and 4); then both are dirty, buffers 0 and 3 stay clean.
        let mut pc = PageCache::new(0, 1024, None).unwrap();
        let reads = pc.write(1536, 1024);
        assert_eq!(sectors(&reads), [(2, 2), (4, 2)]);
        assert!(reads.iter().all(|b| b.op == Op::Read));
        // Rewriting the same bytes: the buffers are uptodate now, no read.
        assert!(pc.write(1536, 1024).is_empty());
        assert_eq!(sectors(&pc.writeback(WbRange::All)), [(2, 2), (4, 2)]);
    }

    #[test]
    fn background_writeback_is_cyclic_and_o_sync_takes_a_range() {
        // Threshold 2 pages: a third dirty page triggers a pass over all.
        let mut pc = PageCache::new(0, 4096, Some(8192)).unwrap();
        for p in [5, 1, 9] {
            pc.write(p * 4096, 4096);
        }
        let u = pc.background_unit().expect("over the threshold");
        assert_eq!(sectors(&u.bios), [(8, 8), (40, 8), (72, 8)]);
        assert!(u.plug && u.bios.iter().all(|b| b.flags == req::BACKGROUND));
        // The next pass starts after page 9: pages 10, then 2 wrap around.
        for p in [2, 10, 11] {
            pc.write(p * 4096, 4096);
        }
        let u = pc.background_unit().unwrap();
        assert_eq!(sectors(&u.bios), [(80, 8), (88, 8), (16, 8)]);
        // O_SYNC range: only pages overlapping bytes [4096, 8192).
        pc.write(4096, 4096);
        pc.write(7 * 4096, 4096);
        assert_eq!(sectors(&pc.writeback(WbRange::Bytes(4096, 8192))), [(8, 8)]);
        assert_eq!(pc.dirty_bytes(), 4096);
    }

    #[test]
    fn fsync_is_writeback_then_a_flush() {
        let mut pc = PageCache::new(7, 4096, None).unwrap();
        pc.write(0, 8192);
        let [wb, flush] = pc.fsync_units(WbRange::All, 1000);
        assert!(wb.plug && wb.sync && wb.drain && wb.bios.len() == 2);
        assert_eq!((flush.kind, flush.started_ns, flush.bios[0].flags), (UnitKind::Sync, Some(1000), req::PREFLUSH | req::SYNC));
        assert_eq!((flush.bios[0].size, flush.bios[0].dev), (0, 7));
        assert!(PageCache::new(0, 3000, None).is_err());
    }
}
