//! `dd` with O_DIRECT: one synchronous `pread`/`pwrite` of `bs` bytes per
//! block, through [`super::dio::blkdev_direct_io`]. A device-to-device copy
//! alternates a read and a write per block, as dd does.

use crate::bio::{req, Op};
use crate::genhd::DevId;

use super::dio::{blkdev_direct_io, UserBuffer};
use super::{IoUnit, Source};

/// One side of the copy on a scenario device.
#[derive(Clone, Debug)]
pub struct DdSide {
    pub dev: DevId,
    /// Byte offset of the first block (`skip`/`seek` × `bs`).
    pub start: u64,
    pub lbs: u32,
    /// Extra `REQ_*` flags for this side's bios.
    pub flags: u32,
}

pub struct Dd {
    pub input: Option<DdSide>,
    pub output: Option<DdSide>,
    pub bs: u64,
    /// Bytes to move in total (the last block may be short).
    pub total: u64,
    buffer: UserBuffer,
    done: u64,
    /// The read half of the current block was issued (copy between devices).
    read_issued: bool,
}

impl Dd {
    pub fn new(input: Option<DdSide>, output: Option<DdSide>, bs: u64, total: u64, buffer: UserBuffer) -> Self {
        Dd { input, output, bs, total, buffer, done: 0, read_issued: false }
    }
}

impl Source for Dd {
    fn next_unit(&mut self) -> Option<IoUnit> {
        if self.done >= self.total {
            return None;
        }
        let len = self.bs.min(self.total - self.done);
        let (side, op) = match (&self.input, &self.output) {
            (Some(i), Some(_)) if !self.read_issued => (i, Op::Read),
            (Some(_), Some(o)) => (o, Op::Write),
            (Some(i), None) => (i, Op::Read),
            (None, Some(o)) => (o, Op::Write),
            (None, None) => return None,
        };
        // dio_bio_write_op: O_DIRECT writes are REQ_SYNC (| REQ_IDLE, which
        // traces do not show); reads carry no flag, hence "R" in blkparse.
        let flags = side.flags | if op == Op::Read { 0 } else { req::SYNC };
        let (bios, plug) = blkdev_direct_io(side.dev, op, flags, side.start + self.done, len, &self.buffer, side.lbs, true);
        let copy = self.input.is_some() && self.output.is_some();
        if copy && op == Op::Read {
            self.read_issued = true;
        } else {
            self.read_issued = false;
            self.done += len;
        }
        Some(IoUnit { bios, plug })
    }
}
