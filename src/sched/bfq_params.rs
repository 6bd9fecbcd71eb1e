//! bfq's sysfs knobs (`/sys/block/X/queue/iosched/`, bfq_init_queue and
//! the BFQ_ATTR table in block/bfq-iosched.c) and its fixed constants.

use crate::profile::HZ;

/// `bfq_stats_min_budgets`: budgets assigned before the estimated maximum
/// budget replaces the default.
pub const BFQ_STATS_MIN_BUDGETS: i64 = 194;
/// `bfq_default_max_budget`, sectors.
pub const BFQ_DEFAULT_MAX_BUDGET: i64 = 16 * 1024;
/// `bfq_async_charge_factor`.
pub const BFQ_ASYNC_CHARGE_FACTOR: i64 = 3;
/// `BFQ_MIN_TT`, ns.
pub const BFQ_MIN_TT: u64 = 2_000_000;
/// `BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`.
pub const BFQ_HW_QUEUE_THRESHOLD: u32 = 3;
pub const BFQ_HW_QUEUE_SAMPLES: u32 = 32;
/// `bfqd->bfq_wr_coeff`, `BFQ_SOFTRT_WEIGHT_FACTOR`.
pub const BFQ_WR_COEFF: u64 = 30;
pub const BFQ_SOFTRT_WEIGHT_FACTOR: u64 = 100;
/// `max_service_from_wr`, sectors.
pub const MAX_SERVICE_FROM_WR: i64 = 120_000;
/// `bfq_wr_max_softrt_rate`, sectors per second.
pub const BFQ_WR_MAX_SOFTRT_RATE: i64 = 7000;

/// `msecs_to_jiffies`.
pub const fn ms_to_jiffies(ms: u64) -> i64 {
    (ms * HZ).div_ceil(1000) as i64
}

/// `jiffies_to_msecs`.
pub const fn jiffies_to_ms(j: i64) -> i64 {
    j * 1000 / HZ as i64
}

/// The iosched attributes, in their sysfs units converted to what bfq keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BfqParams {
    /// `slice_idle` (ms) / `slice_idle_us`, kept in ns; 0 disables idling.
    pub slice_idle_ns: u64,
    pub low_latency: bool,
    /// `back_seek_max`, KiB.
    pub back_seek_max: u64,
    pub back_seek_penalty: u64,
    /// `fifo_expire_sync`, `fifo_expire_async` (ms), kept in ns.
    pub fifo_expire_ns: [u64; 2],
    /// `timeout_sync` (ms), kept in jiffies (`bfq_timeout`).
    pub timeout: i64,
    /// `max_budget`, sectors; 0 = automatic.
    pub max_budget: i64,
    pub strict_guarantees: bool,
}

impl Default for BfqParams {
    fn default() -> Self {
        BfqParams {
            slice_idle_ns: 1_000_000_000 / 125,
            low_latency: true,
            back_seek_max: 16 * 1024,
            back_seek_penalty: 2,
            fifo_expire_ns: [1_000_000_000 / 4, 1_000_000_000 / 8],
            timeout: HZ as i64 / 8,
            max_budget: 0,
            strict_guarantees: false,
        }
    }
}

impl BfqParams {
    /// A write to `/sys/block/X/queue/iosched/KEY`, as bfq's store
    /// functions take it (`__FUNC(__VAR, MIN, MAX, __CONV)`): clamped to the
    /// attribute's range. `None` for a key bfq does not have.
    pub fn set(&mut self, key: &str, v: u64) -> Option<()> {
        // Every store takes at most INT_MAX.
        let v = v.min(i32::MAX as u64);
        match key {
            "slice_idle" => self.slice_idle_ns = v * 1_000_000,
            "slice_idle_us" => self.slice_idle_ns = v * 1000,
            "low_latency" => self.low_latency = v != 0,
            "back_seek_max" => self.back_seek_max = v,
            "back_seek_penalty" => self.back_seek_penalty = v.clamp(1, i32::MAX as u64),
            "fifo_expire_sync" => self.fifo_expire_ns[1] = v.max(1) * 1_000_000,
            "fifo_expire_async" => self.fifo_expire_ns[0] = v.max(1) * 1_000_000,
            "timeout_sync" => self.timeout = ms_to_jiffies(v.max(1)),
            "max_budget" => self.max_budget = v as i64,
            "strict_guarantees" => self.strict_guarantees = v != 0,
            _ => return None,
        }
        Some(())
    }

    /// The sysfs value of KEY, as `cat` shows it.
    pub fn get(&self, key: &str) -> Option<u64> {
        Some(match key {
            "slice_idle" => self.slice_idle_ns / 1_000_000,
            "slice_idle_us" => self.slice_idle_ns / 1000,
            "low_latency" => self.low_latency as u64,
            "back_seek_max" => self.back_seek_max,
            "back_seek_penalty" => self.back_seek_penalty,
            "fifo_expire_sync" => self.fifo_expire_ns[1] / 1_000_000,
            "fifo_expire_async" => self.fifo_expire_ns[0] / 1_000_000,
            "timeout_sync" => jiffies_to_ms(self.timeout) as u64,
            "max_budget" => self.max_budget as u64,
            "strict_guarantees" => self.strict_guarantees as u64,
            _ => return None,
        })
    }
}

/// Every iosched key bfq has, in sysfs order.
pub const BFQ_KEYS: [&str; 10] = [
    "fifo_expire_sync",
    "fifo_expire_async",
    "back_seek_max",
    "back_seek_penalty",
    "slice_idle",
    "slice_idle_us",
    "max_budget",
    "timeout_sync",
    "strict_guarantees",
    "low_latency",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_as_sysfs_shows_them() {
        // HZ 250: bfq_timeout = 250/8 = 31 jiffies = 124 ms; slice_idle
        // 10⁹/125 ns = 8 ms.
        let p = BfqParams::default();
        assert_eq!(p.get("timeout_sync"), Some(124));
        assert_eq!(p.get("slice_idle"), Some(8));
        assert_eq!(p.get("slice_idle_us"), Some(8000));
        assert_eq!(p.get("fifo_expire_sync"), Some(125));
        assert_eq!(p.get("fifo_expire_async"), Some(250));
        assert_eq!(p.get("back_seek_max"), Some(16384));
        assert_eq!(p.get("low_latency"), Some(1));
    }

    #[test]
    fn writes() {
        let mut p = BfqParams::default();
        p.set("slice_idle", 0).unwrap();
        assert_eq!(p.slice_idle_ns, 0);
        p.set("timeout_sync", 200).unwrap();
        assert_eq!(p.timeout, 50);
        assert!(p.set("quantum", 1).is_none());
        // Values past INT_MAX are stored as INT_MAX (2147483647 ms).
        p.set("slice_idle", u64::MAX).unwrap();
        assert_eq!(p.slice_idle_ns, 2_147_483_647 * 1_000_000);
    }
}
