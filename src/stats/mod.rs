//! Per-device counters: trace-event counts for the JSON summary, and the
//! kernel's /proc/diskstats accounting ([`diskstats`]) from which iostat
//! figures are derived.

pub mod analysis;
pub mod analysis_thread;
pub mod btt;
pub mod clat;
pub mod dev_names;
pub mod diskstats;
pub mod fio;
pub mod fio_json;
pub mod fio_stats;
pub mod iostat;
pub mod report;
pub mod trace;
pub mod wall_clock;

use crate::bio::Op;
use diskstats::DiskStats;

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
    /// Bios failed (end of device, unsupported op, impossible split, a
    /// failed request).
    pub errors: u64,
    /// Writes a zoned disk failed for their zone ([`crate::zoned`]): requests
    /// the device refused (not at the zone's write pointer, or crossing the
    /// zone end), and bios zone write plugging failed before the device.
    pub zone_write_errors: u64,
    /// Of those, the bios zone write plugging failed (never requests, so
    /// never in diskstats).
    pub zone_wplug_errors: u64,
    /// Sequential zones that write bios were submitted to, and those of
    /// them whose write bios came (after splitting, as `blk_mq_submit_bio`
    /// received them) at a lower sector than an earlier one.
    pub zones_written: u64,
    pub zones_out_of_order: u64,
    /// 'P' and 'U'/'UT'.
    pub plugs: u64,
    pub unplugs: u64,
    /// Calls of `blk_attempt_plug_merge` and how many merged.
    pub plug_merge_attempts: u64,
    pub plug_merges: u64,
    /// Sectors of queued bios, per op.
    pub sectors_queued: [u64; NR_OPS],
    /// Sectors of issued requests, per op.
    pub sectors_issued: [u64; NR_OPS],
    pub disk: DiskStats,
}

impl DevStats {
    pub fn account_merge(&mut self, op: Op) {
        self.disk.account_merge(op);
    }

    pub fn account_request_merge(&mut self, op: Op) {
        self.disk.account_request_merge(op);
    }
}
