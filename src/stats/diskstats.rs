//! /proc/diskstats accounting (block/blk-core.c `update_io_ticks`,
//! block/blk-mq.c `blk_account_io_start`/`blk_account_io_done`,
//! `bio_start_io_acct`/`bio_end_io_acct` for bio-based devices).
//!
//! Groups are the kernel's `op_stat_group`: read, write, discard, flush.
//! `io_ticks` works in jiffies (HZ 250) exactly as the kernel's does, so
//! `%util` of short runs shows the same granularity a real iostat shows.

use crate::bio::{req, Op};
use crate::profile::{IoTicks, HZ};

pub const READ: usize = 0;
pub const WRITE: usize = 1;
pub const DISCARD: usize = 2;
pub const FLUSH: usize = 3;
pub const GROUPS: [&str; 4] = ["read", "write", "discard", "flush"];

/// `op_stat_group`.
pub fn op_stat_group(op: Op, flags: u32) -> usize {
    if op.is_discard() {
        DISCARD
    } else if op == Op::Flush || (op == Op::Write && flags & req::PREFLUSH != 0) {
        FLUSH
    } else if op.is_write() {
        WRITE
    } else {
        READ
    }
}

/// `ns` in whole jiffies: ns · HZ / 10⁹, computed as ns / (10⁹ / HZ),
/// which is the same floor because HZ divides 10⁹ (a 64-bit division by a
/// constant instead of a 128-bit one, twice per request).
pub fn jiffies(ns: u64) -> u64 {
    const _: () = assert!(1_000_000_000 % HZ == 0);
    ns / (1_000_000_000 / HZ)
}

/// One device's `struct disk_stats` plus its in-flight counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    pub ios: [u64; 4],
    pub merges: [u64; 4],
    pub sectors: [u64; 4],
    pub nsecs: [u64; 4],
    /// Jiffies during which the device had I/O in flight.
    pub io_ticks: u64,
    /// `bd_stamp`, in jiffies.
    pub stamp: u64,
    /// Accounted in-flight I/O, reads and writes (`in_flight[rw]`).
    pub in_flight: [u64; 2],
    /// Requests in the driver (6.1's field 9 for request-based disks).
    pub in_driver: u64,
}

impl DiskStats {
    pub fn inflight(&self) -> u64 {
        self.in_flight[0] + self.in_flight[1]
    }

    /// `update_io_ticks`.
    pub fn update_io_ticks(&mut self, now_ns: u64, end: bool, rule: IoTicks) {
        let now = jiffies(now_ns);
        if now <= self.stamp {
            return;
        }
        let old = self.stamp;
        self.stamp = now;
        match rule {
            IoTicks::Precise if end || self.inflight() > 0 => self.io_ticks += now - old,
            IoTicks::Precise => {}
            IoTicks::Legacy => self.io_ticks += if end { now - old } else { 1 },
        }
    }

    /// `blk_account_io_start` (request-based, at request allocation) and
    /// `bio_start_io_acct` (bio-based).
    pub fn io_start(&mut self, now_ns: u64, op: Op, rule: IoTicks) {
        self.update_io_ticks(now_ns, false, rule);
        self.in_flight[op.is_write() as usize] += 1;
    }

    /// `blk_account_io_done` / `bio_end_io_acct`: one I/O of `op` that
    /// started at `start_ns` finished now.
    pub fn io_done(&mut self, now_ns: u64, op: Op, flags: u32, start_ns: u64, rule: IoTicks) {
        let g = op_stat_group(op, flags);
        self.update_io_ticks(now_ns, true, rule);
        self.ios[g] += 1;
        self.nsecs[g] += now_ns.saturating_sub(start_ns);
        let dir = op.is_write() as usize;
        self.in_flight[dir] = self.in_flight[dir].saturating_sub(1);
    }

    /// Count one I/O of `sectors` (a bio-based device at start or end).
    pub fn count_io(&mut self, op: Op, flags: u32, sectors: u64) {
        let g = op_stat_group(op, flags);
        self.ios[g] += 1;
        self.sectors[g] += sectors;
    }

    /// `bio_end_io_acct`: ticks, the count if it is done at the end, and the
    /// latency in whole jiffies.
    #[allow(clippy::too_many_arguments)]
    pub fn bio_done(&mut self, now_ns: u64, op: Op, flags: u32, start_ns: u64, sectors: u64, rule: IoTicks, count: bool) {
        self.update_io_ticks(now_ns, true, rule);
        if count {
            self.count_io(op, flags, sectors);
        }
        let g = op_stat_group(op, flags);
        self.nsecs[g] += (jiffies(now_ns) - jiffies(start_ns)) * (1_000_000_000 / HZ);
        let dir = op.is_write() as usize;
        self.in_flight[dir] = self.in_flight[dir].saturating_sub(1);
    }

    /// `blk_account_io_merge_bio`.
    pub fn account_merge(&mut self, op: Op) {
        self.merges[op_stat_group(op, 0)] += 1;
    }

    /// `blk_account_io_merge_request`: the absorbed request leaves in-flight.
    pub fn account_request_merge(&mut self, op: Op) {
        self.merges[op_stat_group(op, 0)] += 1;
        let dir = op.is_write() as usize;
        self.in_flight[dir] = self.in_flight[dir].saturating_sub(1);
    }

    /// Sectors completed (`blk_account_io_completion`).
    pub fn account_sectors(&mut self, op: Op, flags: u32, sectors: u64) {
        self.sectors[op_stat_group(op, flags)] += sectors;
    }

    /// Field 11, `time_in_queue`: the sum of all groups' latencies, in ms.
    pub fn time_in_queue_ms(&self) -> u64 {
        self.nsecs.iter().sum::<u64>() / 1_000_000
    }

    /// The /proc/diskstats fields after the name, 1..=17.
    pub fn fields(&self, in_flight: u64) -> [u64; 17] {
        let ms = |n: u64| n / 1_000_000;
        [
            self.ios[READ],
            self.merges[READ],
            self.sectors[READ],
            ms(self.nsecs[READ]),
            self.ios[WRITE],
            self.merges[WRITE],
            self.sectors[WRITE],
            ms(self.nsecs[WRITE]),
            in_flight,
            self.io_ticks * 1000 / HZ,
            self.time_in_queue_ms(),
            self.ios[DISCARD],
            self.merges[DISCARD],
            self.sectors[DISCARD],
            ms(self.nsecs[DISCARD]),
            self.ios[FLUSH],
            ms(self.nsecs[FLUSH]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const J: u64 = 4_000_000; // one jiffy at HZ 250, in ns

    #[test]
    fn precise_io_ticks_count_busy_jiffies_only() {
        // I/O from jiffy 10 to 12, idle until 20, I/O from 20 to 21:
        // busy 2 + 1 = 3 jiffies.
        let mut s = DiskStats::default();
        s.io_start(10 * J, Op::Read, IoTicks::Precise);
        s.io_done(12 * J, Op::Read, 0, 10 * J, IoTicks::Precise);
        s.io_start(20 * J, Op::Read, IoTicks::Precise);
        s.io_done(21 * J, Op::Read, 0, 20 * J, IoTicks::Precise);
        assert_eq!(s.io_ticks, 3);
        assert_eq!(s.fields(0)[9], 12, "3 jiffies = 12 ms");
        assert_eq!(s.ios[READ], 2);
        assert_eq!(s.nsecs[READ], 3 * J);
    }

    #[test]
    fn legacy_io_ticks_add_a_jiffy_per_idle_start() {
        // The first start moves the stamp from 0 to 10 and adds 1; the end
        // adds 12 - 10; the second start adds 1 (stamp 12 → 20); its end 1.
        let mut s = DiskStats::default();
        s.io_start(10 * J, Op::Read, IoTicks::Legacy);
        s.io_done(12 * J, Op::Read, 0, 10 * J, IoTicks::Legacy);
        s.io_start(20 * J, Op::Read, IoTicks::Legacy);
        s.io_done(21 * J, Op::Read, 0, 20 * J, IoTicks::Legacy);
        assert_eq!(s.io_ticks, 1 + 2 + 1 + 1);
    }
}
