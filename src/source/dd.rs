//! `dd`: one synchronous `read`/`write` of `bs` bytes per block. A side
//! opened with O_DIRECT goes through [`super::dio::blkdev_direct_io_with`];
//! an output opened without it writes into the device's page cache
//! ([`super::pagecache`]), from which writeback builds the bios. A
//! device-to-device copy alternates a read and a write per block, as dd
//! does.
//!
//! * `oflag=sync`/`dsync` (O_SYNC/O_DSYNC): direct writes carry `REQ_FUA`
//!   (`dio_bio_write_op`); every write is followed by `generic_write_sync`
//!   — writeback of the written range (buffered writes), then a flush
//!   (`blkdev_fsync`, even after a FUA write).
//! * `conv=fsync`/`fdatasync`: one fsync before dd exits — writeback of
//!   every dirty page, then a flush (`blkdev_fsync`).
//! * Closing the output syncs its page cache (`sync_blockdev` on the last
//!   close): what is still dirty is written back, without a flush.

use std::collections::VecDeque;

use crate::bio::{req, Op};
use crate::genhd::DevId;

use super::dio::{direct_io_unit, DioRules, UserBuffer, DIO_WRITE_FLAGS};
use super::pagecache::{fsync_units, SharedCache, WbRange};
use super::{IoUnit, Source};

/// One side of the copy on a scenario device.
#[derive(Clone, Debug)]
pub struct DdSide {
    pub dev: DevId,
    /// Byte offset of the first block (`skip`/`seek` × `bs`).
    pub start: u64,
    pub lbs: u32,
    /// Extra `REQ_*` flags for this side's bios (`REQ_FUA` for O_SYNC).
    pub flags: u32,
    /// The kernel's direct I/O bio-building rules for this device.
    pub rules: DioRules,
    /// The device's page cache when this side is not O_DIRECT (writes only).
    pub cache: Option<SharedCache>,
}

pub struct Dd {
    pub input: Option<DdSide>,
    pub output: Option<DdSide>,
    pub bs: u64,
    /// Bytes to move in total (the last block may be short).
    pub total: u64,
    /// `conv=fsync` / `conv=fdatasync`.
    pub conv_fsync: bool,
    buffer: UserBuffer,
    done: u64,
    /// The read half of the current block was issued (copy between devices).
    read_issued: bool,
    /// Units that follow the last one (O_SYNC's writeback and flush,
    /// background writeback, the final fsync and close).
    follow: VecDeque<IoUnit>,
    closed: bool,
    now: u64,
}

impl Dd {
    pub fn new(input: Option<DdSide>, output: Option<DdSide>, bs: u64, total: u64, buffer: UserBuffer) -> Self {
        Dd { input, output, bs, total, conv_fsync: false, buffer, done: 0, read_issued: false, follow: VecDeque::new(), closed: false, now: 0 }
    }

    /// After the last block: conv=fsync's fsync, then the close.
    fn close(&mut self) {
        self.closed = true;
        let Some(out) = &self.output else { return };
        if self.conv_fsync {
            self.follow.extend(fsync_units(out.cache.as_ref(), out.dev, WbRange::All, self.now));
        }
        if let Some(u) = out.cache.as_ref().and_then(|c| c.borrow_mut().release()) {
            self.follow.push_back(u);
        }
    }

    /// A buffered `write()` of `len` bytes at `pos`: reads of partly
    /// written buffers, then what O_SYNC or the dirty threshold start.
    ///
    /// Inside 6.1's `blkdev_write_iter` plug (`write_plug`) the reads, and
    /// O_SYNC's writeback, wait in that plug until the task sleeps for them
    /// (the writeback's own plug is nested); the flush never enters a plug.
    fn buffered_write(&mut self, side: &DdSide, cache: &SharedCache, pos: u64, len: u64) -> IoUnit {
        let reads = cache.borrow_mut().write(pos, len);
        let in_plug = side.rules.write_plug;
        if side.flags & req::FUA != 0 {
            let mut units = fsync_units(Some(cache), side.dev, WbRange::Bytes(pos, pos + len), self.now);
            for u in units.iter_mut().filter(|u| u.plug) {
                u.sleeps_in_plug = in_plug;
            }
            self.follow.extend(units);
        } else if let Some(bg) = cache.borrow_mut().background_unit() {
            self.follow.push_back(bg);
        }
        IoUnit { bios: reads, sync: true, plug: in_plug, sleeps_in_plug: in_plug, ..IoUnit::default() }
    }
}

impl Source for Dd {
    fn next_unit_at(&mut self, now: u64) -> Option<IoUnit> {
        self.now = now;
        self.next_unit()
    }

    fn next_unit(&mut self) -> Option<IoUnit> {
        if let Some(u) = self.follow.pop_front() {
            return Some(u);
        }
        if self.done >= self.total {
            if self.closed {
                return None;
            }
            self.close();
            return self.follow.pop_front();
        }
        let len = self.bs.min(self.total - self.done);
        let (side, op) = match (&self.input, &self.output) {
            (Some(i), Some(_)) if !self.read_issued => (i.clone(), Op::Read),
            (Some(_), Some(o)) => (o.clone(), Op::Write),
            (Some(i), None) => (i.clone(), Op::Read),
            (None, Some(o)) => (o.clone(), Op::Write),
            (None, None) => return None,
        };
        let pos = side.start + self.done;
        let copy = self.input.is_some() && self.output.is_some();
        if copy && op == Op::Read {
            self.read_issued = true;
        } else {
            self.read_issued = false;
            self.done += len;
        }
        if let (Op::Write, Some(cache)) = (op, &side.cache) {
            return Some(self.buffered_write(&side, cache, pos, len));
        }
        // dio_bio_write_op: O_DIRECT writes are REQ_SYNC | REQ_IDLE (traces
        // do not show the latter; wbt leaves such writes alone); reads start
        // with no flag, and dd's pread is synchronous, so blkdev_direct_io
        // adds REQ_SYNC on the simple path.
        let flags = side.flags | if op == Op::Read { 0 } else { DIO_WRITE_FLAGS };
        if op == Op::Write && side.flags & req::FUA != 0 {
            // O_SYNC/O_DSYNC: generic_write_sync after the write, i.e.
            // blkdev_fsync — nothing to write back, then the flush.
            self.follow.extend(fsync_units(None, side.dev, WbRange::Bytes(pos, pos + len), self.now));
        }
        Some(direct_io_unit(side.dev, op, flags, pos, len, &self.buffer, &side.rules, true))
    }

    fn progress(&self, _now: u64) -> Option<f64> {
        Some(super::fraction(self.done, self.total))
    }
}
