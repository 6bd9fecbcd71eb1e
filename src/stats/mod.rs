//! Per-device counters (what the JSON summary reports). The diskstats and
//! iostat model builds on the same event points.

use crate::bio::Op;

/// Ops in [`Op`] order, for per-op arrays.
pub const NR_OPS: usize = 7;
pub const OPS: [Op; NR_OPS] = [Op::Read, Op::Write, Op::Flush, Op::Discard, Op::SecureErase, Op::ZoneAppend, Op::WriteZeroes];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevStats {
    /// 'Q': bio objects queued on this device.
    pub queued: u64,
    /// 'X': splits of bios on this device's queue.
    pub splits: u64,
    /// 'A': bios remapped onto this device.
    pub remaps: u64,
    /// 'G': requests allocated.
    pub getrq: u64,
    /// 'I': requests inserted into a scheduler or software queue.
    pub inserts: u64,
    /// 'D': requests issued to the driver.
    pub issued: u64,
    /// 'C' of requests.
    pub completed: u64,
    /// 'C' of bios on bio-based devices.
    pub bio_completions: u64,
    /// Bios failed (end of device, unsupported op, impossible split).
    pub errors: u64,
    /// Sectors of queued bios, per op.
    pub sectors_queued: [u64; NR_OPS],
    /// Sectors of issued requests, per op.
    pub sectors_issued: [u64; NR_OPS],
}
