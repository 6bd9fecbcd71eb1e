//! null_blk (drivers/block/null_blk): a disk set up from its module
//! parameters, that completes every request without moving data.
//!
//! [`NullBlkParams`] holds the parameters that shape I/O, with the module's
//! defaults; [`NullBlkParams::apply`] sets the queue limits and tag set as
//! `null_add_dev` does, and [`NullBlkParams::service_model`] gives the
//! completion timing of `null_handle_cmd` → `end_cmd` in the device service
//! model: at once for `irqmode` 0 (inline in `->queue_rq`) and 1 (softirq),
//! `completion_nsec` after issue for 2 (a per-command hrtimer,
//! `null_cmd_end_timer`). There is no bandwidth or IOPS limit (`mbps` is
//! not modelled) and every command runs at once.

use crate::disk::ServiceModel;
use crate::limits::{DriverLimits, ElevatorPolicy, Zoned};
use crate::profile::NullBlkNoSched;

/// `NULL_IRQ_NONE`, `NULL_IRQ_SOFTIRQ`, `NULL_IRQ_TIMER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqMode {
    None,
    Softirq,
    Timer,
}

/// The module parameters blkstack models, with the module's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct NullBlkParams {
    /// `bs`: logical and physical block size (512).
    pub bs: u32,
    /// `max_sectors`: `max_hw_sectors` (0: the block layer's 255).
    pub max_sectors: u32,
    /// `virt_boundary`: a `PAGE_SIZE - 1` virt boundary (false).
    pub virt_boundary: bool,
    /// `hw_queue_depth`: tags per hardware queue (64).
    pub hw_queue_depth: u32,
    /// `submit_queues` (1) and `poll_queues` (1): the tag set has both.
    pub submit_queues: u32,
    pub poll_queues: u32,
    /// `no_sched` (false): `BLK_MQ_F_NO_SCHED`, or 7.x's
    /// `BLK_MQ_F_NO_SCHED_BY_DEFAULT` (switch `null_blk_no_sched`).
    pub no_sched: bool,
    /// `irqmode` (1, softirq) and `completion_nsec` (10,000 ns, timer mode).
    pub irqmode: IrqMode,
    pub completion_nsec: u64,
    /// `zoned` (false), `zone_size` in MiB (256), `zone_nr_conv` (0).
    pub zoned: bool,
    pub zone_size_mb: u64,
    pub zone_nr_conv: u32,
}

impl Default for NullBlkParams {
    fn default() -> Self {
        NullBlkParams {
            bs: 512,
            max_sectors: 0,
            virt_boundary: false,
            hw_queue_depth: 64,
            submit_queues: 1,
            poll_queues: 1,
            no_sched: false,
            irqmode: IrqMode::Softirq,
            completion_nsec: 10_000,
            zoned: false,
            zone_size_mb: 256,
            zone_nr_conv: 0,
        }
    }
}

/// `g_gb`: the size when none is given, 250 GiB.
pub const DEFAULT_SIZE: u64 = 250 << 30;

impl NullBlkParams {
    /// `null_validate_conf`'s clamp of `submit_queues` to `nr_cpu_ids`
    /// (0 becomes 1), when the CPU count is known.
    pub fn clamp_submit_queues(&mut self, cpus: Option<u32>) {
        self.submit_queues = self.submit_queues.max(1);
        if let Some(c) = cpus {
            self.submit_queues = self.submit_queues.min(c);
        }
    }

    /// `null_add_dev`: block sizes, `max_hw_sectors`, the virt boundary,
    /// zones (`null_init_zoned_dev`: `chunk_sectors` the zone size), and the
    /// tag set (`null_setup_tagset`: `submit_queues + poll_queues` hardware
    /// queues of `hw_queue_depth` tags). Non-rotational, no write cache.
    pub fn apply(&self, d: &mut DriverLimits, no_sched: NullBlkNoSched) {
        d.logical_block_size = self.bs;
        d.physical_block_size = self.bs;
        d.max_hw_sectors = self.max_sectors;
        d.virt_boundary_mask = if self.virt_boundary { 4095 } else { 0 };
        d.queue_depth = self.hw_queue_depth;
        d.nr_hw_queues = self.submit_queues + self.poll_queues;
        d.rotational = false;
        d.write_cache = false;
        d.fua = false;
        if self.no_sched {
            d.elevator = match no_sched {
                NullBlkNoSched::NoSched => ElevatorPolicy::NoSched,
                NullBlkNoSched::NoneByDefault => ElevatorPolicy::NoneByDefault,
            };
        }
        if self.zoned {
            d.zoned = Zoned::HostManaged;
            d.chunk_sectors = (self.zone_size_mb << 11).min(u32::MAX as u64) as u32;
            d.nr_conv_zones = self.zone_nr_conv;
        }
    }

    /// The completion timing: every command completes `completion_nsec`
    /// after issue in timer mode, at once otherwise; all run in parallel.
    pub fn service_model(&self) -> ServiceModel {
        let t = if self.irqmode == IrqMode::Timer { self.completion_nsec } else { 0 };
        let slots = (self.hw_queue_depth as u64 * self.submit_queues as u64).clamp(1, 65536) as u32;
        ServiceModel {
            read_latency_ns: t,
            write_latency_ns: t,
            bandwidth: u64::MAX,
            write_bandwidth: u64::MAX,
            iops: 0,
            parallelism: slots,
            discard_latency_ns: t,
            discard_ns_per_gib: 0,
            discard_parallelism: slots,
            flush_latency_ns: t,
            command_overhead_ns: 0,
            write_command_overhead_ns: 0,
            // No read-ahead (a continuing read costs what any read does)
            // and no write cache: null_blk completes on its timer alone.
            streams: 0,
            seq_read_latency_ns: t,
            write_cache_bytes: 0,
            media_write_bandwidth: u64::MAX,
            rotation: None,
            batch_completions: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bio::Op;
    use crate::disk::DiskModel;

    #[test]
    fn timer_mode_completes_each_command_after_completion_nsec() {
        // irqmode=2 completion_nsec=50000: a 1 MiB write issued at 1 µs
        // completes at 51 µs whatever its size (no bandwidth), and 64 commands
        // issued at once all complete together (64 tags, one queue).
        let p = NullBlkParams { irqmode: IrqMode::Timer, completion_nsec: 50_000, ..Default::default() };
        let mut d = DiskModel::new(p.service_model(), 1 << 30);
        assert_eq!(d.service(1_000, Op::Write, 0, 1 << 20, false), 51_000);
        for i in 0..63 {
            assert_eq!(d.service(1_000, Op::Read, 8 * i, 4096, false), 51_000);
        }
    }

    #[test]
    fn softirq_mode_completes_at_issue() {
        let mut d = DiskModel::new(NullBlkParams::default().service_model(), 1 << 30);
        assert_eq!(d.service(7_000, Op::Read, 0, 65536, false), 7_000);
    }
}
