//! The loop driver (drivers/block/loop.c) over a file on another device.
//!
//! The file is one extent of its backing device, starting `offset` bytes
//! in (a file on a freshly made filesystem usually is; `losetup` on the
//! device itself is offset 0). A loop device is request-based: its requests
//! are issued ('D') to the driver, whose worker (`loop_process_work`, a
//! kworker of the `loopN` workqueue) turns each into file I/O. With
//! `direct_io` (`LO_FLAGS_DIRECT_IO`) a read or write becomes one
//! asynchronous O_DIRECT kiocb over the request's own bvecs (`lo_rw_aio`),
//! which the filesystem's direct I/O submits as one bio of those pages on
//! the backing device (`bio_iov_bvec_set`: a bvec iterator needs no page
//! pinning, so nothing caps the bio); the request completes when that bio
//! does (`lo_rw_aio_complete`). A flush is `vfs_fsync` of the file: an
//! empty `REQ_PREFLUSH` write to the backing device. Discard and write
//! zeroes are `fallocate` punching or zeroing a range of the file, which
//! the filesystem does in its metadata: nothing reaches the backing device
//! (ext4 without `-o discard`), and the request completes at once.

use crate::bio::{req, Bvec, Op, SECTOR_SHIFT};
use crate::genhd::DevId;
use crate::limits::DriverLimits;
use crate::mq::Request;
use crate::source::BioSpec;
use crate::submit::BlockCore;

/// Where a loop device's file is: a scenario device and the sector of it
/// where the file's data starts.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopBacking {
    pub dev: DevId,
    pub start: u64,
}

/// `loop_update_limits` (6.12; 6.1's `loop_configure`): with direct I/O
/// the backing device's logical block size (`loop_default_blocksize`),
/// else 512, as logical and physical block and `io_min`; rotational if the
/// backing device is. Discard and write-zeroes caps are rounded down to
/// the block size.
pub fn loop_update_limits(d: &mut DriverLimits, direct_io: bool, backing_lbs: u32, backing_rotational: bool) {
    let bsize = if direct_io { backing_lbs } else { 512 };
    d.logical_block_size = bsize;
    d.physical_block_size = bsize;
    d.io_min = bsize;
    d.rotational = backing_rotational;
    let lbs_sectors = bsize >> SECTOR_SHIFT;
    d.max_hw_discard_sectors -= d.max_hw_discard_sectors % lbs_sectors;
    d.max_write_zeroes_sectors -= d.max_write_zeroes_sectors % lbs_sectors;
}

/// What the worker does with a request (`do_req_filebacked`).
pub enum LoopCmd {
    /// Submit this bio on the backing device; the request ends with it.
    Submit(BioSpec),
    /// Done without I/O below (discard, write zeroes).
    Complete,
}

/// `do_req_filebacked` for request `rq` of a loop device backed at `b`.
pub fn do_req_filebacked(core: &BlockCore, b: &LoopBacking, rq: &Request) -> LoopCmd {
    let sector = b.start + rq.sector;
    match rq.op {
        Op::Discard | Op::WriteZeroes | Op::SecureErase => LoopCmd::Complete,
        // lo_req_flush → vfs_fsync → blkdev_issue_flush.
        Op::Flush => {
            LoopCmd::Submit(BioSpec { dev: b.dev, op: Op::Write, flags: req::PREFLUSH | req::SYNC, sector: 0, bvecs: Vec::new(), size: 0 })
        }
        op => {
            // rq_for_each_bvec: the bvecs of every bio of the request, in order.
            let mut bvecs: Vec<Bvec> = Vec::new();
            let mut next = Some(rq.bio);
            while let Some(bio) = next {
                let bio = core.bio(bio);
                bio.for_each_bvec(|v| {
                    bvecs.push(v);
                    true
                });
                next = bio.bi_next;
            }
            // The direct I/O write of a kiocb without IOCB_DSYNC:
            // REQ_SYNC (| REQ_IDLE, which blktrace does not show); a read
            // is a plain read.
            let flags = if op.is_write() { req::SYNC } else { 0 };
            LoopCmd::Submit(BioSpec { dev: b.dev, op, flags, sector, bvecs, size: rq.bytes() })
        }
    }
}
