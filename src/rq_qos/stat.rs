//! Request latency statistics in windows (block/blk-stat.c): a
//! `blk_stat_callback` collects the issue-to-completion time of the
//! requests that end while its timer is pending, in buckets (wbt's: reads
//! and writes), and hands them to its owner when the timer fires.

use crate::bio::Op;
use crate::profile::HZ;
use crate::stats::diskstats::jiffies;

/// `struct blk_rq_stat`: the figures wbt reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlkRqStat {
    pub min: u64,
    pub max: u64,
    pub nr_samples: u32,
}

impl BlkRqStat {
    /// `blk_rq_stat_add`.
    fn add(&mut self, value: u64) {
        self.min = if self.nr_samples == 0 { value } else { self.min.min(value) };
        self.max = self.max.max(value);
        self.nr_samples += 1;
    }
}

/// wbt's buckets (`wbt_data_dir`).
pub const READ: usize = 0;
pub const WRITE: usize = 1;

/// `struct blk_stat_callback`: the window's buckets and its timer.
#[derive(Clone, Debug, Default)]
pub struct BlkStatCallback {
    pub stat: [BlkRqStat; 2],
    /// When the pending timer fires; `None`: not active.
    pub expires: Option<u64>,
}

/// `wbt_data_dir`: reads, writes (every op with the write bit: discards
/// and write-zeroes too), and nothing else.
pub fn wbt_data_dir(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(READ),
        _ if op.is_write() => Some(WRITE),
        _ => None,
    }
}

/// `nsecs_to_jiffies` (HZ divides a second: a truncating division).
fn nsecs_to_jiffies(ns: u64) -> u64 {
    ns / (1_000_000_000 / HZ)
}

impl BlkStatCallback {
    /// `blk_stat_is_active`: the timer is pending.
    pub fn blk_stat_is_active(&self) -> bool {
        self.expires.is_some()
    }

    /// `blk_stat_add`: counted only while the window is open.
    pub fn blk_stat_add(&mut self, op: Op, latency_ns: u64) {
        if self.expires.is_none() {
            return;
        }
        if let Some(b) = wbt_data_dir(op) {
            self.stat[b].add(latency_ns);
        }
    }

    /// `blk_stat_activate_nsecs` at `now`: `mod_timer(jiffies +
    /// nsecs_to_jiffies(nsecs))`; the timer fires on the tick that reaches
    /// that jiffy. Returns the firing time.
    pub fn blk_stat_activate_nsecs(&mut self, now: u64, nsecs: u64) -> u64 {
        let at = (jiffies(now) + nsecs_to_jiffies(nsecs)) * (1_000_000_000 / HZ);
        self.expires = Some(at);
        at
    }

    /// `blk_stat_timer_fn`: the window closes; its figures are handed over
    /// and the buckets start again.
    pub fn fire(&mut self) -> [BlkRqStat; 2] {
        self.expires = None;
        std::mem::take(&mut self.stat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_counts_only_while_active_and_fires_on_a_tick() {
        let mut cb = BlkStatCallback::default();
        cb.blk_stat_add(Op::Read, 5);
        assert_eq!(cb.stat[READ].nr_samples, 0);
        // At 1 ms (jiffy 0, HZ 250) a 72.7 ms window is 18 jiffies: it
        // fires at jiffy 18, 72 ms.
        assert_eq!(cb.blk_stat_activate_nsecs(1_000_000, 72_727_272), 72_000_000);
        cb.blk_stat_add(Op::Read, 700);
        cb.blk_stat_add(Op::Read, 300);
        cb.blk_stat_add(Op::Discard, 9);
        cb.blk_stat_add(Op::Flush, 1);
        let s = cb.fire();
        assert_eq!((s[READ].min, s[READ].max, s[READ].nr_samples, s[WRITE].nr_samples), (300, 700, 2, 1));
        assert!(!cb.blk_stat_is_active() && cb.stat[READ].nr_samples == 0);
    }
}
