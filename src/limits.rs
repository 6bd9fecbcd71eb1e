//! Queue limits (block/blk-settings.c, block/blk-sysfs.c).
//!
//! [`QueueLimits`] holds the kernel's `struct queue_limits` fields in the
//! kernel's units. A device's limits are built in two steps, as on a real
//! machine: the driver fills its values ([`DriverLimits`], a preset per device
//! kind that the scenario may override), then sysfs writes are applied
//! (`max_sectors_kb`, `discard_max_bytes`, `scheduler`, `nr_requests`, ...).
//! How `max_sectors` is derived differs between 6.1 (`blk_queue_max_hw_sectors`
//! and a direct sysfs store) and 6.12+ (`blk_validate_limits` with
//! `max_user_sectors`); [`LimitsModel`] selects the rule.

use crate::sched::bfq_params::BfqParams;
use crate::bio::{PAGE_SIZE, SECTOR_SHIFT};

/// `BLK_MAX_SEGMENTS`.
pub const BLK_MAX_SEGMENTS: u32 = 128;
/// `BLK_MAX_SEGMENT_SIZE`.
pub const BLK_MAX_SEGMENT_SIZE: u32 = 65536;
/// `BLK_SEG_BOUNDARY_MASK`.
pub const BLK_SEG_BOUNDARY_MASK: u64 = 0xFFFF_FFFF;
/// `BLK_SAFE_MAX_SECTORS`: a driver that sets no `max_hw_sectors` gets this.
pub const BLK_SAFE_MAX_SECTORS: u32 = 255;
/// `BLKDEV_MIN_RQ`: the smallest `nr_requests` a sysfs write leaves.
pub const BLKDEV_MIN_RQ: u32 = 4;
/// `MAX_SCHED_RQ` (16 × `BLKDEV_DEFAULT_RQ`): the most scheduler tags
/// `blk_mq_tag_update_depth` grows to.
pub const MAX_SCHED_RQ: u32 = 16 * 128;
const PAGE_SECTORS: u32 = (PAGE_SIZE >> SECTOR_SHIFT) as u32;

/// Which kernel code derives `max_sectors` and validates limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitsModel {
    /// 6.1: `blk_queue_max_hw_sectors` caps `max_sectors` once; a
    /// `max_sectors_kb` store above `max_hw_sectors_kb` is refused.
    Legacy,
    /// 6.12+: `blk_validate_limits` recomputes `max_sectors` from
    /// `max_user_sectors`, `io_opt`/`io_min` and the default cap on every commit.
    Validate,
}

/// I/O scheduler of a request queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elevator {
    None,
    MqDeadline,
    Kyber,
    Bfq,
}

impl Elevator {
    pub fn name(self) -> &'static str {
        match self {
            Elevator::None => "none",
            Elevator::MqDeadline => "mq-deadline",
            Elevator::Kyber => "kyber",
            Elevator::Bfq => "bfq",
        }
    }
}

/// What a driver's tag set says about the I/O scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElevatorPolicy {
    /// `elevator_get_default`: mq-deadline for a single hardware queue,
    /// none otherwise (the same rule in 6.1, 6.12 and 7.x).
    Default,
    /// `BLK_MQ_F_NO_SCHED_BY_DEFAULT` (loop): none unless one is written.
    NoneByDefault,
    /// `BLK_MQ_F_NO_SCHED` (null_blk's `no_sched`): none, and no scheduler
    /// can be set (`elv_support_iosched`).
    NoSched,
    /// Up to 6.9, a host-managed sd or null_blk disk requires
    /// `ELEVATOR_F_ZBD_SEQ_WRITE` (`elevator_get_by_features`):
    /// mq-deadline however many queues.
    ZonedDeadline,
}

/// Zoned model (`/sys/block/X/queue/zoned`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zoned {
    None,
    HostAware,
    HostManaged,
}

impl Zoned {
    pub fn name(self) -> &'static str {
        match self {
            Zoned::None => "none",
            Zoned::HostAware => "host-aware",
            Zoned::HostManaged => "host-managed",
        }
    }
}

/// `struct queue_limits` (the fields that shape I/O).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueLimits {
    pub logical_block_size: u32,
    pub physical_block_size: u32,
    pub io_min: u32,
    pub io_opt: u32,
    pub max_hw_sectors: u32,
    pub max_dev_sectors: u32,
    pub max_user_sectors: u32,
    pub max_sectors: u32,
    pub chunk_sectors: u32,
    pub max_segments: u32,
    pub max_segment_size: u32,
    pub seg_boundary_mask: u64,
    pub virt_boundary_mask: u64,
    pub dma_alignment: u32,
    pub max_hw_discard_sectors: u32,
    pub max_user_discard_sectors: u32,
    pub max_discard_sectors: u32,
    pub discard_granularity: u32,
    pub discard_alignment: u32,
    pub max_discard_segments: u32,
    pub max_secure_erase_sectors: u32,
    pub max_write_zeroes_sectors: u32,
    pub zoned: Zoned,
}

impl QueueLimits {
    /// `lbs` in sectors.
    pub fn lbs_sectors(&self) -> u32 {
        self.logical_block_size >> SECTOR_SHIFT
    }

    /// `pbs` in sectors.
    pub fn pbs_sectors(&self) -> u32 {
        self.physical_block_size >> SECTOR_SHIFT
    }

    /// `blk_set_stacking_limits`: the neutral start of a stacked (md/dm) queue.
    pub fn stacking() -> QueueLimits {
        QueueLimits {
            logical_block_size: 512,
            physical_block_size: 512,
            io_min: 512,
            io_opt: 0,
            max_hw_sectors: u32::MAX,
            max_dev_sectors: u32::MAX,
            max_user_sectors: 0,
            max_sectors: u32::MAX,
            chunk_sectors: 0,
            max_segments: u16::MAX as u32,
            max_segment_size: u32::MAX,
            seg_boundary_mask: BLK_SEG_BOUNDARY_MASK,
            virt_boundary_mask: 0,
            dma_alignment: 511,
            max_hw_discard_sectors: 0,
            max_user_discard_sectors: u32::MAX,
            max_discard_sectors: 0,
            discard_granularity: 512,
            discard_alignment: 0,
            max_discard_segments: u16::MAX as u32,
            max_secure_erase_sectors: 0,
            max_write_zeroes_sectors: u32::MAX,
            zoned: Zoned::None,
        }
    }

    /// The `/sys/block/X/queue/*` view, by sysfs file name.
    pub fn sysfs(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("logical_block_size", self.logical_block_size as u64),
            ("physical_block_size", self.physical_block_size as u64),
            ("minimum_io_size", self.io_min as u64),
            ("optimal_io_size", self.io_opt as u64),
            ("max_sectors_kb", (self.max_sectors / 2) as u64),
            ("max_hw_sectors_kb", (self.max_hw_sectors / 2) as u64),
            ("max_segments", self.max_segments as u64),
            ("max_segment_size", self.max_segment_size as u64),
            ("virt_boundary_mask", self.virt_boundary_mask),
            ("chunk_sectors", self.chunk_sectors as u64),
            ("discard_granularity", self.discard_granularity as u64),
            ("discard_max_bytes", (self.max_discard_sectors as u64) << SECTOR_SHIFT),
            ("discard_max_hw_bytes", (self.max_hw_discard_sectors as u64) << SECTOR_SHIFT),
            ("max_discard_segments", self.max_discard_segments as u64),
            ("write_zeroes_max_bytes", (self.max_write_zeroes_sectors as u64) << SECTOR_SHIFT),
            ("dma_alignment", self.dma_alignment as u64),
        ]
    }
}

/// What a driver puts in its queue limits and tag set before any sysfs write:
/// the per-kind preset, possibly overridden field by field by the scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverLimits {
    pub logical_block_size: u32,
    pub physical_block_size: u32,
    pub io_min: u32,
    pub io_opt: u32,
    /// `max_hw_sectors` (sysfs `max_hw_sectors_kb` × 2).
    pub max_hw_sectors: u32,
    /// SCSI's extra cap (`max_dev_sectors`); 0 = none.
    pub max_dev_sectors: u32,
    pub max_segments: u32,
    /// 0 = the kernel default (64 KiB, or `UINT_MAX` with a virt boundary).
    pub max_segment_size: u32,
    pub seg_boundary_mask: u64,
    pub virt_boundary_mask: u64,
    pub dma_alignment: u32,
    pub chunk_sectors: u32,
    pub max_hw_discard_sectors: u32,
    pub discard_granularity: u32,
    pub max_discard_segments: u32,
    pub max_secure_erase_sectors: u32,
    pub max_write_zeroes_sectors: u32,
    pub zoned: Zoned,
    /// Tag-set depth per hardware queue (`/sys/block/X/device/queue_depth`).
    pub queue_depth: u32,
    pub nr_hw_queues: u32,
    pub rotational: bool,
    /// A volatile write cache (`write_cache` "write back").
    pub write_cache: bool,
    /// Writes with `REQ_FUA` are passed to the device (`fua` 1); otherwise
    /// the flush machinery follows each with a flush.
    pub fua: bool,
    /// Zones at the start of a zoned disk without a write pointer
    /// (null_blk's `zone_nr_conv`); sysfs shows no such file.
    pub nr_conv_zones: u32,
    /// The tag set's scheduler flags.
    pub elevator: ElevatorPolicy,
}

/// Sysfs writes the scenario makes after the driver set its limits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SysfsWrites {
    pub max_sectors_kb: Option<u64>,
    pub discard_max_bytes: Option<u64>,
    pub scheduler: Option<Elevator>,
    pub nr_requests: Option<u64>,
    pub nomerges: Option<u8>,
    pub rotational: Option<bool>,
    pub write_cache: Option<bool>,
    /// `wbt_lat_usec`: microseconds, 0 (off) or -1 (the default again).
    pub wbt_lat_usec: Option<i64>,
    /// Writes to the elevator's own files (`queue/iosched/`): kyber's.
    pub iosched: IoschedWrites,
    /// bfq's `iosched/` writes, with the scheduler written as bfq.
    pub bfq: Option<BfqParams>,
}

/// Writes to `queue/iosched/` files (kyber's latency targets).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IoschedWrites {
    pub read_lat_nsec: Option<u64>,
    pub write_lat_nsec: Option<u64>,
}

/// The elevator's tunables (`queue/iosched/`), with the kernel's defaults
/// for those not written.
#[derive(Clone, Debug, PartialEq)]
pub struct Iosched {
    /// kyber's read latency target (`kyber_latency_targets[KYBER_READ]`, 2 ms).
    pub read_lat_nsec: u64,
    /// kyber's write latency target (10 ms).
    pub write_lat_nsec: u64,
}

impl Default for Iosched {
    fn default() -> Self {
        Iosched { read_lat_nsec: 2_000_000, write_lat_nsec: 10_000_000 }
    }
}

/// Request-queue attributes that are not `queue_limits`.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueAttrs {
    pub scheduler: Elevator,
    pub nr_requests: u32,
    pub queue_depth: u32,
    pub nr_hw_queues: u32,
    pub nomerges: u8,
    pub rotational: bool,
    pub write_cache: bool,
    /// `fua` (read-only in sysfs): the driver passes `REQ_FUA` on.
    pub fua: bool,
    /// Conventional zones at the start of a zoned disk (see `DriverLimits`).
    pub nr_conv_zones: u32,
    /// Writeback throttling's latency target (`min_lat_nsec`); 0: off.
    pub wbt_lat_nsec: u64,
    pub iosched: Iosched,
    /// bfq's tunables (`iosched/`), used when bfq is the scheduler.
    pub bfq: BfqParams,
}

/// A limit the kernel would refuse: which sysfs key and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitError {
    pub key: &'static str,
    pub msg: String,
}

fn err<T>(key: &'static str, msg: impl Into<String>) -> Result<T, LimitError> {
    Err(LimitError { key, msg: msg.into() })
}

/// A write of `v` to `nr_requests` (`queue_requests_store`): above
/// UINT_MAX `queue_var_store` refuses it (EINVAL); below `BLKDEV_MIN_RQ` it
/// is raised to it; then `blk_mq_update_nr_requests` →
/// `blk_mq_tag_update_depth` refuses (EINVAL) more tags than the driver
/// tag set has without a scheduler, and more than `MAX_SCHED_RQ` with one
/// (scheduler tags may grow past the `sched_tags` the queue started with,
/// `sched_nr`, up to that cap).
fn queue_requests_store(v: u64, scheduler: Elevator, queue_depth: u32, sched_nr: u32) -> Result<u32, LimitError> {
    if v > u32::MAX as u64 {
        return err("nr_requests", format!("{v}: invalid argument (EINVAL: above UINT_MAX)"));
    }
    let n = (v as u32).max(BLKDEV_MIN_RQ);
    let max = match scheduler {
        Elevator::None => queue_depth,
        _ => MAX_SCHED_RQ.max(sched_nr),
    };
    if n > max {
        let why = match scheduler {
            Elevator::None => format!("the tag set depth ({queue_depth}) without a scheduler"),
            _ => format!("MAX_SCHED_RQ ({MAX_SCHED_RQ}) with a scheduler"),
        };
        return err("nr_requests", format!("{n}: invalid argument (EINVAL: above {why})"));
    }
    Ok(n)
}

/// `min_not_zero`.
pub fn min_nz(a: u32, b: u32) -> u32 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (x, y) => x.min(y),
    }
}

fn is_mask(m: u64) -> bool {
    m.wrapping_add(1) & m == 0
}

fn round_down(x: u32, to: u32) -> u32 {
    x - x % to
}

/// Derive the live limits and queue attributes from a driver's values plus
/// sysfs writes, refusing what the kernel refuses.
/// `cap` is `BLK_DEF_MAX_SECTORS(_CAP)` in sectors.
pub fn resolve(
    drv: &DriverLimits,
    writes: &SysfsWrites,
    model: LimitsModel,
    cap: u32,
) -> Result<(QueueLimits, QueueAttrs), LimitError> {
    let lim = validate_driver(drv, model, cap)?;
    let lim = store_max_sectors_kb(lim, writes.max_sectors_kb, model, cap)?;
    let lim = store_discard_max_bytes(lim, writes.discard_max_bytes)?;
    let attrs = queue_attrs(drv, writes)?;
    Ok((lim, attrs))
}

/// Driver-side checks and defaults (`blk_validate_limits`, and the 6.1
/// `blk_queue_*` setters, which agree on these).
fn validate_driver(d: &DriverLimits, model: LimitsModel, cap: u32) -> Result<QueueLimits, LimitError> {
    let lbs = d.logical_block_size;
    // blk_validate_block_size: 512..=PAGE_SIZE, power of two.
    if lbs < 512 || lbs as u64 > PAGE_SIZE || !lbs.is_power_of_two() {
        return err("logical_block_size", format!("{lbs} is not a power of two between 512 and {PAGE_SIZE}"));
    }
    // A physical block smaller than the logical one is raised to it
    // (blk_validate_limits; 6.1's blk_queue_logical_block_size does the same).
    let pbs = d.physical_block_size.max(lbs);
    if !pbs.is_power_of_two() {
        return err("physical_block_size", format!("{} is not a power of two", d.physical_block_size));
    }
    let io_min = d.io_min.max(pbs);
    let io_opt = round_down(d.io_opt, pbs);
    let lbs_sectors = lbs >> SECTOR_SHIFT;
    let mut max_hw = if d.max_hw_sectors == 0 { BLK_SAFE_MAX_SECTORS } else { d.max_hw_sectors };
    if max_hw < PAGE_SECTORS {
        return err("max_hw_sectors_kb", format!("{} KiB is below one page ({} KiB)", max_hw / 2, PAGE_SIZE / 1024));
    }
    max_hw = round_down(max_hw, lbs_sectors);
    if d.max_segments == 0 {
        return err("max_segments", "must be at least 1");
    }
    if d.virt_boundary_mask != 0 && !is_mask(d.virt_boundary_mask) {
        return err("virt_boundary_mask", format!("{:#x} is not of the form 2^n - 1", d.virt_boundary_mask));
    }
    if !is_mask(d.seg_boundary_mask) || d.seg_boundary_mask < PAGE_SIZE - 1 {
        return err("seg_boundary_mask", format!("{:#x} is not 2^n - 1 of at least one page", d.seg_boundary_mask));
    }
    // A driver with a virt boundary gets unlimited segment size
    // (blk_queue_virt_boundary in 6.1, blk_validate_limits in 6.12+).
    let max_segment_size = match d.max_segment_size {
        0 if d.virt_boundary_mask != 0 => u32::MAX,
        0 => BLK_MAX_SEGMENT_SIZE,
        n => n,
    };
    if (max_segment_size as u64) < PAGE_SIZE {
        return err("max_segment_size", format!("{max_segment_size} is below one page ({PAGE_SIZE})"));
    }
    if d.chunk_sectors % lbs_sectors != 0 {
        return err("chunk_sectors", format!("{} is not a multiple of the logical block size ({lbs_sectors} sectors)", d.chunk_sectors));
    }
    if d.max_write_zeroes_sectors % lbs_sectors != 0 {
        return err("write_zeroes_max_bytes", "is not a multiple of logical_block_size");
    }
    if d.zoned != Zoned::None && d.chunk_sectors == 0 {
        return err("chunk_sectors", "a zoned device needs chunk_sectors (the zone size)");
    }
    // Discard granularity: at least the block size when discard is supported
    // (6.12+ uses the physical block size), 0 otherwise.
    let discard_granularity = if d.max_hw_discard_sectors == 0 {
        0
    } else {
        let floor = if model == LimitsModel::Validate { pbs } else { lbs };
        d.discard_granularity.max(floor)
    };
    if discard_granularity % lbs != 0 {
        return err("discard_granularity", format!("{} is not a multiple of logical_block_size ({lbs})", d.discard_granularity));
    }
    let hw = min_nz(max_hw, d.max_dev_sectors);
    let max_sectors = round_down(default_max_sectors(hw, io_opt, io_min, model, cap), lbs_sectors);
    Ok(QueueLimits {
        logical_block_size: lbs,
        physical_block_size: pbs,
        io_min,
        io_opt,
        max_hw_sectors: max_hw,
        max_dev_sectors: d.max_dev_sectors,
        max_user_sectors: 0,
        max_sectors,
        chunk_sectors: d.chunk_sectors,
        max_segments: d.max_segments,
        max_segment_size,
        seg_boundary_mask: d.seg_boundary_mask,
        virt_boundary_mask: d.virt_boundary_mask,
        dma_alignment: d.dma_alignment,
        max_hw_discard_sectors: d.max_hw_discard_sectors,
        max_user_discard_sectors: u32::MAX,
        max_discard_sectors: d.max_hw_discard_sectors,
        discard_granularity,
        discard_alignment: 0,
        max_discard_segments: d.max_discard_segments.max(1),
        max_secure_erase_sectors: d.max_secure_erase_sectors,
        max_write_zeroes_sectors: d.max_write_zeroes_sectors,
        zoned: d.zoned,
    })
}

/// `max_sectors` when nobody wrote `max_sectors_kb`. 6.12+ lets a large
/// `io_opt` (else `io_min`) raise it above the cap.
fn default_max_sectors(hw: u32, io_opt: u32, io_min: u32, model: LimitsModel, cap: u32) -> u32 {
    let cap_bytes = cap as u64 * 512;
    match model {
        LimitsModel::Legacy => hw.min(cap),
        LimitsModel::Validate if io_opt as u64 > cap_bytes => hw.min(io_opt >> SECTOR_SHIFT),
        LimitsModel::Validate if io_min as u64 > cap_bytes => hw.min(io_min >> SECTOR_SHIFT),
        LimitsModel::Validate => hw.min(cap),
    }
}

/// A write to `max_sectors_kb` (`queue_max_sectors_store`).
fn store_max_sectors_kb(
    mut lim: QueueLimits,
    kb: Option<u64>,
    model: LimitsModel,
    cap: u32,
) -> Result<QueueLimits, LimitError> {
    let Some(kb) = kb else { return Ok(lim) };
    let page_kb = PAGE_SIZE / 1024;
    let lbs_kb = (lim.logical_block_size as u64).div_ceil(1024);
    if kb < page_kb.max(lbs_kb) {
        return err(
            "max_sectors_kb",
            format!("{kb} is below the logical block size ({} bytes) or one page ({page_kb} KiB)", lim.logical_block_size),
        );
    }
    let hw = min_nz(lim.max_hw_sectors, lim.max_dev_sectors);
    let sectors = u32::try_from(kb * 2).unwrap_or(u32::MAX);
    match model {
        LimitsModel::Legacy => {
            if sectors > hw {
                return err("max_sectors_kb", format!("{kb} exceeds max_hw_sectors_kb ({}); 6.1 refuses the write", hw / 2));
            }
            lim.max_sectors = sectors;
        }
        LimitsModel::Validate => {
            // 0 means "back to the default"; anything above hw is clamped.
            lim.max_user_sectors = sectors;
            lim.max_sectors = if sectors == 0 {
                default_max_sectors(hw, lim.io_opt, lim.io_min, model, cap)
            } else {
                hw.min(sectors)
            };
            lim.max_sectors = round_down(lim.max_sectors, lim.lbs_sectors());
        }
    }
    Ok(lim)
}

/// The `max_sectors_kb` and `discard_max_bytes` writes on a queue that is
/// already set up (a stacked md/dm device after it stacked its members),
/// exactly as `queue_max_sectors_store` / `queue_discard_max_store` apply them.
pub fn store_queue_writes(lim: QueueLimits, writes: &SysfsWrites, model: LimitsModel, cap: u32) -> Result<QueueLimits, LimitError> {
    let lim = store_max_sectors_kb(lim, writes.max_sectors_kb, model, cap)?;
    store_discard_max_bytes(lim, writes.discard_max_bytes)
}

/// A write to `discard_max_bytes` (`queue_discard_max_store`).
fn store_discard_max_bytes(mut lim: QueueLimits, bytes: Option<u64>) -> Result<QueueLimits, LimitError> {
    let Some(bytes) = bytes else { return Ok(lim) };
    if lim.max_hw_discard_sectors == 0 && bytes != 0 {
        return err("discard_max_bytes", "the device does not support discard (discard_max_hw_bytes is 0)");
    }
    if lim.discard_granularity != 0 && bytes % lim.discard_granularity as u64 != 0 {
        return err("discard_max_bytes", format!("{bytes} is not a multiple of discard_granularity ({})", lim.discard_granularity));
    }
    let sectors = bytes >> SECTOR_SHIFT;
    if sectors > u32::MAX as u64 {
        return err("discard_max_bytes", format!("{bytes} exceeds UINT_MAX sectors"));
    }
    lim.max_user_discard_sectors = sectors as u32;
    lim.max_discard_sectors = lim.max_hw_discard_sectors.min(sectors as u32);
    Ok(lim)
}

fn queue_attrs(d: &DriverLimits, w: &SysfsWrites) -> Result<QueueAttrs, LimitError> {
    if d.queue_depth == 0 {
        return err("queue_depth", "must be at least 1");
    }
    if d.nr_hw_queues == 0 {
        return err("nr_hw_queues", "must be at least 1");
    }
    if d.elevator == ElevatorPolicy::NoSched && w.scheduler.is_some_and(|s| s != Elevator::None) {
        return err("scheduler", "the driver's tag set has BLK_MQ_F_NO_SCHED (null_blk no_sched): only none");
    }
    let scheduler = w.scheduler.unwrap_or_else(|| elevator_default(d));
    // blk_mq_init_sched: 2 * min(queue_depth, BLKDEV_DEFAULT_RQ=128) with a scheduler.
    let default_nr = match scheduler {
        Elevator::None => d.queue_depth,
        _ => 2 * d.queue_depth.min(128),
    };
    let nr_requests = match w.nr_requests {
        None => default_nr,
        Some(n) => queue_requests_store(n, scheduler, d.queue_depth, default_nr)?,
    };
    let nomerges = w.nomerges.unwrap_or(0);
    if nomerges > 2 {
        return err("nomerges", format!("{nomerges} is not 0, 1 or 2"));
    }
    let rotational = w.rotational.unwrap_or(d.rotational);
    Ok(QueueAttrs {
        scheduler,
        nr_requests,
        queue_depth: d.queue_depth,
        nr_hw_queues: d.nr_hw_queues,
        nomerges,
        rotational,
        wbt_lat_nsec: wbt_lat_nsec(w.wbt_lat_usec, scheduler, d.rotational, rotational)?,
        write_cache: w.write_cache.unwrap_or(d.write_cache),
        fua: d.fua,
        nr_conv_zones: d.nr_conv_zones,
        iosched: Iosched {
            read_lat_nsec: w.iosched.read_lat_nsec.unwrap_or(Iosched::default().read_lat_nsec),
            write_lat_nsec: w.iosched.write_lat_nsec.unwrap_or(Iosched::default().write_lat_nsec),
        },
        bfq: w.bfq.unwrap_or_default(),
    })
}

/// Writeback throttling's latency target after registration and the
/// scenario's sysfs writes (the scheduler is written first):
/// `wbt_enable_default` at registration sets the default for the driver's
/// `rotational` (`wbt_default_latency_nsec`), bfq turns a default wbt off
/// (`wbt_disable_default`), and a write to `wbt_lat_usec`
/// (`queue_wb_lat_store`) sets it, bfq or not: 0 off, -1 the default for
/// the queue's `rotational` then, anything below -1 refused (EINVAL).
fn wbt_lat_nsec(written: Option<i64>, scheduler: Elevator, driver_rotational: bool, rotational: bool) -> Result<u64, LimitError> {
    use crate::rq_qos::wbt::{elevator_disables_wbt, wbt_default_latency_nsec};
    match written {
        None if elevator_disables_wbt(scheduler.name()) => Ok(0),
        None => Ok(wbt_default_latency_nsec(driver_rotational)),
        Some(-1) => Ok(wbt_default_latency_nsec(rotational)),
        Some(v) if v < -1 => err("wbt_lat_usec", format!("{v}: invalid argument (EINVAL: below -1)")),
        Some(v) => Ok(v as u64 * 1000),
    }
}

/// The scheduler a queue starts with (`elevator_init_mq`).
fn elevator_default(d: &DriverLimits) -> Elevator {
    match d.elevator {
        ElevatorPolicy::Default if d.nr_hw_queues == 1 => Elevator::MqDeadline,
        ElevatorPolicy::ZonedDeadline => Elevator::MqDeadline,
        _ => Elevator::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genhd::DiskKind;

    fn sata() -> DriverLimits {
        DiskKind::Sata.driver_limits(&crate::profile::profile("6.12").unwrap().behaviour)
    }

    #[test]
    fn max_sectors_defaults_to_the_cap() {
        // sd/libata: max_hw_sectors 65535 sectors; 6.1 caps at 2560 (1280 KiB).
        let (l, _) = resolve(&sata(), &SysfsWrites::default(), LimitsModel::Legacy, 2560).unwrap();
        assert_eq!(l.max_sectors, 2560);
    }

    #[test]
    fn io_opt_raises_max_sectors_only_in_validate_model() {
        let mut d = sata();
        d.io_opt = 4 << 20; // 4 MiB > 1280 KiB cap
        let (l61, _) = resolve(&d, &SysfsWrites::default(), LimitsModel::Legacy, 2560).unwrap();
        let (l612, _) = resolve(&d, &SysfsWrites::default(), LimitsModel::Validate, 2560).unwrap();
        assert_eq!(l61.max_sectors, 2560);
        assert_eq!(l612.max_sectors, 8192);
    }

    #[test]
    fn max_sectors_kb_above_hw_refused_in_61_clamped_in_612() {
        let mut d = sata();
        d.max_hw_sectors = 256; // 128 KiB
        let w = SysfsWrites { max_sectors_kb: Some(512), ..Default::default() };
        assert_eq!(resolve(&d, &w, LimitsModel::Legacy, 2560).unwrap_err().key, "max_sectors_kb");
        let (l, _) = resolve(&d, &w, LimitsModel::Validate, 2560).unwrap();
        assert_eq!(l.max_sectors, 256);
    }

    #[test]
    fn virt_boundary_makes_segment_size_unlimited() {
        let mut d = sata();
        d.virt_boundary_mask = 4095;
        d.max_segment_size = 0;
        let (l, _) = resolve(&d, &SysfsWrites::default(), LimitsModel::Validate, 2560).unwrap();
        assert_eq!(l.max_segment_size, u32::MAX);
    }

    #[test]
    fn nr_requests_default_depends_on_scheduler() {
        let d = sata(); // queue_depth 32, one hw queue → mq-deadline, 2 * 32
        let (_, a) = resolve(&d, &SysfsWrites::default(), LimitsModel::Legacy, 2560).unwrap();
        assert_eq!((a.scheduler, a.nr_requests), (Elevator::MqDeadline, 64));
        let w = SysfsWrites { scheduler: Some(Elevator::None), ..Default::default() };
        let (_, a) = resolve(&d, &w, LimitsModel::Legacy, 2560).unwrap();
        assert_eq!(a.nr_requests, 32);
    }

    #[test]
    fn nr_requests_writes_follow_queue_requests_store() {
        // sata: queue_depth 32, mq-deadline. Scheduler tags grow to
        // MAX_SCHED_RQ = 16 * 128 = 2048 and no further; without a
        // scheduler the driver's 32 tags are the limit; 1 is raised to
        // BLKDEV_MIN_RQ = 4; 2^32 is above UINT_MAX.
        let d = sata();
        let nr = |v: u64, sched: Option<Elevator>| {
            let w = SysfsWrites { nr_requests: Some(v), scheduler: sched, ..Default::default() };
            resolve(&d, &w, LimitsModel::Legacy, 2560).map(|(_, a)| a.nr_requests).map_err(|e| (e.key, e.msg))
        };
        assert_eq!(nr(2048, None), Ok(2048));
        assert_eq!(nr(1, None), Ok(4));
        assert_eq!(nr(2049, None).unwrap_err().0, "nr_requests");
        assert!(nr(2049, None).unwrap_err().1.contains("EINVAL"));
        assert_eq!(nr(1 << 32, None).unwrap_err().0, "nr_requests");
        assert_eq!(nr(32, Some(Elevator::None)), Ok(32));
        assert_eq!(nr(33, Some(Elevator::None)).unwrap_err().0, "nr_requests");
    }
}

// ---------------------------------------------------------------------------
// Stacked devices: blk_stack_limits and the limits md and dm set up.
//
// A stacked queue (md, dm) starts from `blk_set_stacking_limits`, the driver
// sets its own fields, then every member is folded in with
// `blk_stack_limits(top, member, member start)`. 6.1 does this on the live
// queue through the `blk_queue_*` setters and never validates; 6.12+ builds
// a `queue_limits`, stacks, and commits it through `blk_validate_limits`,
// which recomputes `max_sectors` from the stacked hardware caps. Which of
// the two runs is `legacy` (= `LimitsModel::Legacy`) below.

/// `RAID5_MAX_REQ_STRIPES << RAID5_STRIPE_SHIFT`: raid456's `max_hw_sectors`
/// (256 stripes of one 4 KiB unit, 1 MiB).
pub const RAID5_MAX_HW_SECTORS: u32 = 256 * 8;

/// `gcd` (lib/math/gcd.c): `gcd(0, b) = b`, which is how the first member
/// with a `chunk_sectors` sets a stacked device's.
pub fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `lcm_not_zero`: the lcm, or the non-zero one if either is 0. The kernel
/// computes in `unsigned long` and stores into `unsigned int`; the
/// truncation is kept.
pub fn lcm_nz(a: u32, b: u32) -> u32 {
    if a == 0 || b == 0 {
        return a.max(b);
    }
    (a as u64 / gcd(a, b) as u64 * b as u64) as u32
}

/// `blk_round_down_sectors`: round a sector limit down to the logical block
/// size, but never below one page.
fn blk_round_down_sectors(sectors: u32, lbs: u32) -> u32 {
    round_down(sectors, (lbs >> SECTOR_SHIFT).max(1)).max(PAGE_SECTORS)
}

/// A queue's limits plus the alignment state `struct queue_limits` keeps
/// and [`QueueLimits`] does not.
#[derive(Clone, Debug, PartialEq)]
pub struct StackedLimits {
    pub lim: QueueLimits,
    /// `alignment_offset`, bytes (sysfs `alignment_offset`).
    pub alignment_offset: u32,
    /// 6.1 `misaligned` / 6.12 `BLK_FLAG_MISALIGNED` (`blockdev --getalignoff` says -1).
    pub misaligned: bool,
    /// 6.1 `discard_misaligned` (gone in 6.12).
    pub discard_misaligned: bool,
}

impl From<QueueLimits> for StackedLimits {
    fn from(lim: QueueLimits) -> StackedLimits {
        StackedLimits { lim, alignment_offset: 0, misaligned: false, discard_misaligned: false }
    }
}

/// One member of a stacked device: its limits and the sector of its whole
/// disk where the stacked device's data starts (partition start + md data
/// offset, or + dm target offset).
#[derive(Clone, Debug, PartialEq)]
pub struct StackMember {
    pub limits: StackedLimits,
    pub start: u64,
}

/// `blk_set_stacking_limits`. 6.12+ clears everything and sets
/// `discard_granularity` 512 (= [`QueueLimits::stacking`]); 6.1 starts from
/// `blk_set_default_limits`, where discard granularity is 0.
pub fn blk_set_stacking_limits(legacy: bool) -> StackedLimits {
    let mut lim = QueueLimits::stacking();
    if legacy {
        lim.discard_granularity = 0;
    }
    lim.into()
}

/// `queue_limit_alignment_offset`: how far a member's first naturally
/// aligned block is from `sector` (bytes, modulo max(pbs, io_min)).
fn queue_limit_alignment_offset(b: &StackedLimits, sector: u64) -> u32 {
    let gran = alignment_granularity(&b.lim);
    let into = ((sector % (gran >> SECTOR_SHIFT) as u64) as u32) << SECTOR_SHIFT;
    (gran + b.alignment_offset - into) % gran
}

/// max(pbs, io_min): the unit alignment is measured in (never below a
/// sector, so hand-built limits with zero block sizes cannot divide by 0).
fn alignment_granularity(l: &QueueLimits) -> u32 {
    l.physical_block_size.max(l.io_min).max(512)
}

/// `queue_limit_discard_alignment`: the same for discard granularity.
fn queue_limit_discard_alignment(lim: &QueueLimits, sector: u64) -> u32 {
    let gran = lim.discard_granularity >> SECTOR_SHIFT;
    if lim.max_discard_sectors == 0 || gran == 0 {
        return 0;
    }
    let into = (sector % gran as u64) as u32;
    ((gran + (lim.discard_alignment >> SECTOR_SHIFT) - into) % gran) << SECTOR_SHIFT
}

/// `blk_stack_limits`: fold member `b`, whose data starts at `start`, into
/// `t`. Returns false where the kernel returns -1 (a misalignment, only
/// warned about). `legacy` selects 6.1's differences: no
/// `max_user_sectors`, and the `discard_misaligned` check.
pub fn blk_stack_limits(t: &mut StackedLimits, b: &StackedLimits, start: u64, legacy: bool) -> bool {
    stack_caps(&mut t.lim, &b.lim, legacy);
    t.misaligned |= b.misaligned;
    let mut ok = stack_alignment(t, b, start);
    ok &= stack_block_sizes(t, b);
    let lbs = t.lim.logical_block_size;
    t.lim.max_sectors = blk_round_down_sectors(t.lim.max_sectors, lbs);
    t.lim.max_hw_sectors = blk_round_down_sectors(t.lim.max_hw_sectors, lbs);
    t.lim.max_dev_sectors = blk_round_down_sectors(t.lim.max_dev_sectors, lbs);
    if b.lim.discard_granularity != 0 {
        stack_discard(t, &b.lim, start, legacy);
    }
    t.lim.max_secure_erase_sectors = min_nz(t.lim.max_secure_erase_sectors, b.lim.max_secure_erase_sectors);
    t.lim.zoned = zoned_max(t.lim.zoned, b.lim.zoned);
    ok
}

/// The size caps: the smallest non-zero of each (write zeroes: the
/// smallest, so one member without it disables it).
fn stack_caps(t: &mut QueueLimits, b: &QueueLimits, legacy: bool) {
    t.max_sectors = min_nz(t.max_sectors, b.max_sectors);
    if !legacy {
        t.max_user_sectors = min_nz(t.max_user_sectors, b.max_user_sectors);
    }
    t.max_hw_sectors = min_nz(t.max_hw_sectors, b.max_hw_sectors);
    t.max_dev_sectors = min_nz(t.max_dev_sectors, b.max_dev_sectors);
    t.max_write_zeroes_sectors = t.max_write_zeroes_sectors.min(b.max_write_zeroes_sectors);
    t.seg_boundary_mask = min_nz_u64(t.seg_boundary_mask, b.seg_boundary_mask);
    t.virt_boundary_mask = min_nz_u64(t.virt_boundary_mask, b.virt_boundary_mask);
    t.max_segments = min_nz(t.max_segments, b.max_segments);
    t.max_discard_segments = min_nz(t.max_discard_segments, b.max_discard_segments);
    t.max_segment_size = min_nz(t.max_segment_size, b.max_segment_size);
}

fn min_nz_u64(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (x, y) => x.min(y),
    }
}

/// Does the member's alignment at `start` line up with the top's so far?
/// (Checked before the block sizes are merged, as the kernel does.)
fn stack_alignment(t: &mut StackedLimits, b: &StackedLimits, start: u64) -> bool {
    let alignment = queue_limit_alignment_offset(b, start);
    let mut ok = true;
    if t.alignment_offset != alignment {
        let top = alignment_granularity(&t.lim) + t.alignment_offset;
        let bottom = alignment_granularity(&b.lim) + alignment;
        if top.max(bottom) % top.min(bottom) != 0 {
            t.misaligned = true;
            ok = false;
        }
    }
    // Remembered for after the block sizes merge (the lcm needs the new granularity).
    t.alignment_offset = lcm_nz(t.alignment_offset, alignment);
    ok
}

/// Block sizes, I/O hints and chunk: the largest block sizes, the lcm of
/// `io_opt`, the gcd of `chunk_sectors`; anything that no longer fits the
/// physical block size is reset and flagged.
fn stack_block_sizes(t: &mut StackedLimits, b: &StackedLimits) -> bool {
    let (tl, bl) = (&mut t.lim, &b.lim);
    tl.logical_block_size = tl.logical_block_size.max(bl.logical_block_size);
    tl.physical_block_size = tl.physical_block_size.max(bl.physical_block_size);
    tl.io_min = tl.io_min.max(bl.io_min);
    tl.io_opt = lcm_nz(tl.io_opt, bl.io_opt);
    tl.dma_alignment = tl.dma_alignment.max(bl.dma_alignment);
    if bl.chunk_sectors != 0 {
        tl.chunk_sectors = gcd(tl.chunk_sectors, bl.chunk_sectors);
    }
    let mut ok = true;
    if tl.physical_block_size % tl.logical_block_size != 0 {
        tl.physical_block_size = tl.logical_block_size;
        ok = false;
    }
    if tl.io_min % tl.physical_block_size != 0 {
        tl.io_min = tl.physical_block_size;
        ok = false;
    }
    if tl.io_opt % tl.physical_block_size != 0 {
        tl.io_opt = 0;
        ok = false;
    }
    if tl.chunk_sectors % tl.pbs_sectors() != 0 {
        tl.chunk_sectors = 0;
        ok = false;
    }
    // The lowest common alignment, taken modulo the merged granularity.
    t.alignment_offset %= tl.physical_block_size.max(tl.io_min);
    if t.alignment_offset % tl.logical_block_size != 0 {
        ok = false;
    }
    t.misaligned |= !ok;
    ok
}

/// Discard limits of a member that supports discard.
fn stack_discard(t: &mut StackedLimits, b: &QueueLimits, start: u64, legacy: bool) {
    let alignment = queue_limit_discard_alignment(b, start);
    let tl = &mut t.lim;
    // 6.1 only: flag (without failing) a discard alignment that does not line up.
    if legacy && tl.discard_granularity != 0 && tl.discard_alignment != alignment {
        let top = tl.discard_granularity + tl.discard_alignment;
        let bottom = b.discard_granularity + alignment;
        t.discard_misaligned |= top.max(bottom) % top.min(bottom) != 0;
    }
    tl.max_discard_sectors = min_nz(tl.max_discard_sectors, b.max_discard_sectors);
    tl.max_hw_discard_sectors = min_nz(tl.max_hw_discard_sectors, b.max_hw_discard_sectors);
    tl.discard_granularity = tl.discard_granularity.max(b.discard_granularity);
    tl.discard_alignment = lcm_nz(tl.discard_alignment, alignment) % tl.discard_granularity;
}

/// 6.1 keeps the "most zoned" model of the members; 6.12 inherits
/// `BLK_FEAT_ZONED` from any member, which comes to the same.
fn zoned_max(a: Zoned, b: Zoned) -> Zoned {
    let rank = |z: Zoned| match z {
        Zoned::None => 0,
        Zoned::HostAware => 1,
        Zoned::HostManaged => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// `blk_validate_limits` (6.12+) on a stacked device's limits when they are
/// committed: defaults for unset fields, `max_sectors` recomputed from the
/// hardware caps, `max_discard_sectors` = min(hw, user), discard
/// granularity 0 without discard. A non-zero `alignment_offset` is reduced
/// modulo the physical block and *clears* the misaligned flag (6.12.117).
pub fn blk_validate_limits(s: &mut StackedLimits, cap: u32) -> Result<(), LimitError> {
    let l = &mut s.lim;
    if l.logical_block_size == 0 {
        l.logical_block_size = 512;
    } else if l.logical_block_size < 512 || l.logical_block_size as u64 > PAGE_SIZE || !l.logical_block_size.is_power_of_two() {
        return err("logical_block_size", format!("{} is not a power of two between 512 and {PAGE_SIZE}", l.logical_block_size));
    }
    l.physical_block_size = l.physical_block_size.max(l.logical_block_size);
    l.io_min = l.io_min.max(l.physical_block_size);
    l.io_opt = round_down(l.io_opt, l.physical_block_size);
    validate_max_sectors(l, cap)?;
    if l.max_segments == 0 {
        l.max_segments = BLK_MAX_SEGMENTS;
    }
    l.max_discard_sectors = l.max_hw_discard_sectors.min(l.max_user_discard_sectors);
    l.discard_granularity = if l.max_discard_sectors != 0 { l.discard_granularity.max(l.physical_block_size) } else { 0 };
    l.max_discard_segments = l.max_discard_segments.max(1);
    validate_segments(l)?;
    if s.alignment_offset != 0 {
        s.alignment_offset &= s.lim.physical_block_size - 1;
        s.misaligned = false;
    }
    Ok(())
}

/// The `max_hw_sectors`/`max_sectors` part of `blk_validate_limits`.
fn validate_max_sectors(l: &mut QueueLimits, cap: u32) -> Result<(), LimitError> {
    if l.max_hw_sectors == 0 {
        l.max_hw_sectors = BLK_SAFE_MAX_SECTORS;
    }
    let lbs_sectors = l.lbs_sectors();
    if l.max_hw_sectors < PAGE_SECTORS || l.max_hw_sectors < lbs_sectors {
        return err("max_hw_sectors_kb", format!("{} KiB is below one page or one logical block", l.max_hw_sectors / 2));
    }
    l.max_hw_sectors = round_down(l.max_hw_sectors, lbs_sectors);
    let hw = min_nz(l.max_hw_sectors, l.max_dev_sectors);
    l.max_sectors = if l.max_user_sectors != 0 {
        if l.max_user_sectors < PAGE_SECTORS {
            return err("max_sectors_kb", format!("{} KiB is below one page", l.max_user_sectors / 2));
        }
        hw.min(l.max_user_sectors)
    } else {
        default_max_sectors(hw, l.io_opt, l.io_min, LimitsModel::Validate, cap)
    };
    l.max_sectors = round_down(l.max_sectors, lbs_sectors);
    Ok(())
}

/// Segment-shape defaults and checks of `blk_validate_limits`.
fn validate_segments(l: &mut QueueLimits) -> Result<(), LimitError> {
    if l.seg_boundary_mask == 0 {
        l.seg_boundary_mask = BLK_SEG_BOUNDARY_MASK;
    }
    if l.seg_boundary_mask < PAGE_SIZE - 1 {
        return err("seg_boundary_mask", format!("{:#x} is below one page", l.seg_boundary_mask));
    }
    if l.max_segment_size == 0 {
        l.max_segment_size = if l.virt_boundary_mask != 0 { u32::MAX } else { BLK_MAX_SEGMENT_SIZE };
    }
    if l.virt_boundary_mask == 0 && (l.max_segment_size as u64) < PAGE_SIZE {
        return err("max_segment_size", format!("{} is below one page", l.max_segment_size));
    }
    if l.dma_alignment == 0 {
        l.dma_alignment = 511;
    }
    if l.dma_alignment as u64 > PAGE_SIZE {
        return err("dma_alignment", format!("{} is above one page", l.dma_alignment));
    }
    Ok(())
}

/// 6.1's `blk_queue_max_hw_sectors` on a queue: sets `max_hw_sectors` (at
/// least a page) and derives `max_sectors` capped at `cap` right away.
fn blk_queue_max_hw_sectors(l: &mut QueueLimits, sectors: u32, cap: u32) {
    let lbs_sectors = l.lbs_sectors();
    l.max_hw_sectors = round_down(sectors.max(PAGE_SECTORS), lbs_sectors);
    l.max_sectors = round_down(min_nz(l.max_hw_sectors, l.max_dev_sectors).min(cap), lbs_sectors);
}

/// 6.1's `blk_queue_io_min`/`blk_limits_io_min`: at least the block sizes.
fn blk_queue_io_min(l: &mut QueueLimits, bytes: u32) {
    l.io_min = bytes.max(l.logical_block_size).max(l.physical_block_size);
}

/// 6.1's `blk_queue_max_discard_sectors`: sets hardware and current cap alike.
fn blk_queue_max_discard_sectors(l: &mut QueueLimits, sectors: u32) {
    l.max_hw_discard_sectors = sectors;
    l.max_discard_sectors = sectors;
}

/// How md raid10 limits discards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raid10DiscardLimit {
    /// ≤5.12: `raid10_run` caps discards at one chunk (both discard files
    /// show the chunk), so every discard takes the write path per chunk.
    Chunk,
    /// 5.13+ (with the whole-range discard): no cap of its own; the members'.
    Members,
}

/// raid456's `max_hw_sectors`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raid5MaxHwSectors {
    /// Up to 5.19 (`raid5_run`: `blk_queue_max_hw_sectors(q, UINT_MAX)`):
    /// no cap of its own, so `max_sectors` is `BLK_DEF_MAX_SECTORS` and
    /// `max_segments` stays the members' stacked value.
    Unlimited,
    /// 6.1/6.12: 256 stripe units (1 MiB), set after stacking.
    Fixed,
    /// 7.x: at least the full stripe width (`io_opt`), once the request
    /// bitmap became dynamically sized (spec §2.2; not read in source).
    AtLeastIoOpt,
}

/// The version-dependent choices of the md and dm limit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackingBehaviour {
    /// 6.1 setters on the live queue vs 6.12+ `queue_limits_set` + `blk_validate_limits`.
    pub model: LimitsModel,
    /// `BLK_DEF_MAX_SECTORS(_CAP)`, sectors.
    pub def_max_sectors_cap: u32,
    /// md raid0 sets `chunk_sectors` = chunk (newest only).
    pub raid0_chunk_sectors: bool,
    pub raid10_discard: Raid10DiscardLimit,
    /// md raid10 sets `chunk_sectors` = chunk (6.12+).
    pub raid10_chunk_sectors: bool,
    pub raid5_max_hw: Raid5MaxHwSectors,
    /// md raid5 sets `chunk_sectors` = full stripe width (7.x, Yu Kuai 2026).
    pub raid5_chunk_sectors: bool,
    /// dm-stripe sets `chunk_sectors` = chunk (6.12.y via stable; not 6.1).
    pub dm_stripe_chunk_sectors: bool,
    /// dm-stripe's discard limit is its devices' times the stripes (7.x).
    pub dm_stripe_discard_stripes: bool,
    /// md raid1 sets `chunk_sectors` to its barrier unit (7.x).
    pub raid1_chunk_sectors: bool,
    /// md raid456 advertises discard (`max_hw_discard_sectors` `UINT_MAX`)
    /// even when it is unsafe, and fails the bios instead (7.x).
    pub raid5_discard_always: bool,
}

impl StackingBehaviour {
    /// ≤5.12 (5.4, 5.8, 5.10): 6.1's setters, raid10 discards capped at a
    /// chunk, raid5 without its 1 MiB cap.
    pub fn v5_10() -> StackingBehaviour {
        StackingBehaviour {
            raid10_discard: Raid10DiscardLimit::Chunk,
            raid5_max_hw: Raid5MaxHwSectors::Unlimited,
            ..StackingBehaviour::v6_1()
        }
    }

    pub fn v6_1() -> StackingBehaviour {
        StackingBehaviour {
            model: LimitsModel::Legacy,
            def_max_sectors_cap: 2560,
            raid0_chunk_sectors: false,
            raid10_discard: Raid10DiscardLimit::Members,
            raid10_chunk_sectors: false,
            raid5_max_hw: Raid5MaxHwSectors::Fixed,
            raid5_chunk_sectors: false,
            dm_stripe_chunk_sectors: false,
            dm_stripe_discard_stripes: false,
            raid1_chunk_sectors: false,
            raid5_discard_always: false,
        }
    }

    pub fn v6_12() -> StackingBehaviour {
        StackingBehaviour { model: LimitsModel::Validate, raid10_chunk_sectors: true, dm_stripe_chunk_sectors: true, ..StackingBehaviour::v6_1() }
    }

    /// 7.2/7.3: 4 MiB default cap, raid0/raid5 chunk_sectors, raid5 max_hw ≥ io_opt.
    pub fn v7_2() -> StackingBehaviour {
        StackingBehaviour {
            def_max_sectors_cap: 8192,
            raid0_chunk_sectors: true,
            raid5_max_hw: Raid5MaxHwSectors::AtLeastIoOpt,
            raid5_chunk_sectors: true,
            raid5_discard_always: true,
            dm_stripe_discard_stripes: true,
            raid1_chunk_sectors: true,
            ..StackingBehaviour::v6_12()
        }
    }

    fn legacy(&self) -> bool {
        self.model == LimitsModel::Legacy
    }
}

/// Stack every member into `t`; false if any was misaligned (a warning).
fn stack_members(t: &mut StackedLimits, members: &[StackMember], legacy: bool) -> bool {
    members.iter().fold(true, |ok, m| blk_stack_limits(t, &m.limits, m.start, legacy) & ok)
}

/// Commit: 6.12+ validates, 6.1 keeps the queue as the setters left it.
fn commit(mut t: StackedLimits, beh: &StackingBehaviour) -> Result<StackedLimits, LimitError> {
    if !beh.legacy() {
        blk_validate_limits(&mut t, beh.def_max_sectors_cap)?;
    }
    Ok(t)
}

/// md raid0's limits (`raid0_run` in 6.1, `raid0_set_limits` in 6.12+):
/// `max_hw_sectors` and write zeroes capped at a chunk, io_min a chunk,
/// io_opt a chunk per member; discards as the members allow.
pub fn raid0_limits(chunk: u32, raid_disks: u32, members: &[StackMember], beh: &StackingBehaviour) -> Result<StackedLimits, LimitError> {
    let mut t = blk_set_stacking_limits(beh.legacy());
    let chunk_bytes = chunk << SECTOR_SHIFT;
    if beh.legacy() {
        blk_queue_max_hw_sectors(&mut t.lim, chunk, beh.def_max_sectors_cap);
        blk_queue_io_min(&mut t.lim, chunk_bytes);
    } else {
        t.lim.max_hw_sectors = chunk;
        t.lim.io_min = chunk_bytes;
    }
    t.lim.max_write_zeroes_sectors = chunk;
    t.lim.io_opt = chunk_bytes.wrapping_mul(raid_disks);
    if beh.raid0_chunk_sectors {
        t.lim.chunk_sectors = chunk;
    }
    stack_members(&mut t, members, beh.legacy());
    commit(t, beh)
}

/// md raid10's limits (`raid10_run` in 6.1 and ≤5.12, `raid10_set_queue_limits`
/// in 6.12+): no write zeroes, io_min a chunk, io_opt a chunk per
/// `raid10_nr_stripes`; ≤5.12 caps discards at a chunk.
pub fn raid10_limits(chunk: u32, nr_stripes: u32, members: &[StackMember], beh: &StackingBehaviour) -> Result<StackedLimits, LimitError> {
    let mut t = blk_set_stacking_limits(beh.legacy());
    let chunk_bytes = chunk << SECTOR_SHIFT;
    if beh.raid10_discard == Raid10DiscardLimit::Chunk {
        blk_queue_max_discard_sectors(&mut t.lim, chunk);
    }
    t.lim.max_write_zeroes_sectors = 0;
    if beh.legacy() {
        blk_queue_io_min(&mut t.lim, chunk_bytes);
    } else {
        t.lim.io_min = chunk_bytes;
    }
    t.lim.io_opt = chunk_bytes.wrapping_mul(nr_stripes);
    if beh.raid10_chunk_sectors {
        t.lim.chunk_sectors = chunk;
    }
    stack_members(&mut t, members, beh.legacy());
    commit(t, beh)
}

/// md raid456's limits (`raid5_run` in 6.1, `raid5_set_limits` in 6.12+):
/// io_min a chunk, io_opt a data stripe, discard granularity the data
/// stripe rounded up to a power of two, and discard only with the
/// `devices_handle_discard_safely` parameter and members that take a whole
/// stripe; then, after stacking, `max_hw_sectors` set by raid5 itself.
/// (The kernel stacks each member twice, at its data offset and its new
/// data offset; without a reshape these are equal and the second pass
/// changes nothing.)
pub fn raid5_limits(
    chunk: u32,
    data_disks: u32,
    members: &[StackMember],
    devices_handle_discard_safely: bool,
    beh: &StackingBehaviour,
) -> Result<StackedLimits, LimitError> {
    raid5_set_limits(chunk, data_disks, members, devices_handle_discard_safely, beh).map(|(t, _)| t)
}

/// [`raid5_limits`], and whether discard is unsupported on the array
/// (`conf->raid5_discard_unsupported`: 7.x fails discard bios then).
pub fn raid5_set_limits(
    chunk: u32,
    data_disks: u32,
    members: &[StackMember],
    devices_handle_discard_safely: bool,
    beh: &StackingBehaviour,
) -> Result<(StackedLimits, bool), LimitError> {
    let mut t = blk_set_stacking_limits(beh.legacy());
    let chunk_bytes = chunk << SECTOR_SHIFT;
    let stripe = raid5_discard_stripe(chunk_bytes, data_disks);
    if beh.legacy() {
        blk_queue_io_min(&mut t.lim, chunk_bytes);
    } else {
        t.lim.io_min = chunk_bytes;
    }
    t.lim.io_opt = chunk_bytes.wrapping_mul(data_disks);
    if beh.raid5_chunk_sectors {
        t.lim.chunk_sectors = t.lim.io_opt >> SECTOR_SHIFT;
    }
    t.lim.discard_granularity = stripe;
    t.lim.max_write_zeroes_sectors = 0;
    stack_members(&mut t, members, beh.legacy());
    let unsafe_discard = raid5_discard_unsupported(&t.lim, stripe, devices_handle_discard_safely);
    if beh.raid5_discard_always {
        // 7.x: every array shows discard; make_discard_request fails the
        // bios of one where it is unsafe (raid5_discard_limits).
        t.lim.max_hw_discard_sectors = u32::MAX;
    } else if unsafe_discard {
        t.lim.max_hw_discard_sectors = 0;
        if beh.legacy() {
            t.lim.max_discard_sectors = 0;
        }
    }
    let max_hw = match beh.raid5_max_hw {
        Raid5MaxHwSectors::Unlimited => u32::MAX,
        Raid5MaxHwSectors::Fixed => RAID5_MAX_HW_SECTORS,
        Raid5MaxHwSectors::AtLeastIoOpt => RAID5_MAX_HW_SECTORS.max(t.lim.io_opt >> SECTOR_SHIFT),
    };
    if beh.legacy() {
        blk_queue_max_hw_sectors(&mut t.lim, max_hw, beh.def_max_sectors_cap);
    } else {
        t.lim.max_hw_sectors = max_hw;
    }
    if beh.raid5_max_hw != Raid5MaxHwSectors::Unlimited {
        // "No restrictions on the number of segments" came with the cap.
        t.lim.max_segments = u16::MAX as u32;
    }
    commit(t, beh).map(|t| (t, unsafe_discard))
}

/// `raid5_set_limits`' test (`conf->raid5_discard_unsupported` in 7.x):
/// discard is unsafe without `devices_handle_discard_safely`, or when the
/// stacked members cannot discard a whole `stripe` (bytes) at once.
pub fn raid5_discard_unsupported(stacked: &QueueLimits, stripe: u32, devices_handle_discard_safely: bool) -> bool {
    let whole_stripes = stacked.max_discard_sectors >= stripe >> SECTOR_SHIFT && stacked.discard_granularity >= stripe;
    !devices_handle_discard_safely || !whole_stripes
}

/// raid5's discard unit: the data stripe in bytes, rounded up to a power of
/// two (saturating where the kernel's `unsigned int` would overflow).
fn raid5_discard_stripe(chunk_bytes: u32, data_disks: u32) -> u32 {
    let stripe = (chunk_bytes as u64 * data_disks as u64).next_power_of_two();
    stripe.min(1 << 31) as u32
}

/// `stripe_io_hints`: io_min a chunk, io_opt a chunk per stripe. 6.1 uses
/// `blk_limits_io_min` (at least the block sizes) and lets the byte
/// products wrap; 6.12 skips the hints if they would overflow and sets
/// `chunk_sectors` to the chunk.
pub fn dm_stripe_io_hints(l: &mut QueueLimits, chunk: u32, stripes: u32, beh: &StackingBehaviour) {
    if beh.dm_stripe_chunk_sectors {
        l.chunk_sectors = chunk;
    }
    if beh.dm_stripe_discard_stripes {
        stripe_discard_limit(l, chunk, stripes);
    }
    if beh.legacy() {
        let chunk_bytes = chunk.wrapping_shl(SECTOR_SHIFT);
        blk_queue_io_min(l, chunk_bytes);
        l.io_opt = chunk_bytes.wrapping_mul(stripes);
        return;
    }
    let io_min = chunk.checked_mul(512);
    if let Some((io_min, io_opt)) = io_min.and_then(|m| m.checked_mul(stripes).map(|o| (m, o))) {
        l.io_min = io_min;
        l.io_opt = io_opt;
    }
}

/// 7.x `stripe_io_hints`: a device limit of at least a chunk is multiplied
/// by the stripes and rounded down to whole stripe rows (`UINT_MAX >> 9`
/// if the product overflows), since the target cuts a discard into one
/// per stripe.
fn stripe_discard_limit(l: &mut QueueLimits, chunk: u32, stripes: u32) {
    if l.max_hw_discard_sectors < chunk {
        return;
    }
    l.max_hw_discard_sectors = match l.max_hw_discard_sectors.checked_mul(stripes) {
        Some(s) => s / (chunk * stripes) * (chunk * stripes),
        None => u32::MAX >> SECTOR_SHIFT,
    };
}

/// One dm target for [`dm_calculate_queue_limits`]: its devices (each with
/// the whole-disk sector where the target's data starts) and, for
/// dm-stripe, `(chunk, stripes)`.
#[derive(Clone, Debug, PartialEq)]
pub struct DmTargetLimits {
    pub devices: Vec<StackMember>,
    pub stripe: Option<(u32, u32)>,
    /// dm-crypt: its `crypt_io_hints` and what it takes.
    pub crypt: Option<DmCryptHints>,
}

/// What a dm-crypt target does to the table's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmCryptHints {
    /// `cc->sector_size` in bytes.
    pub sector_size: u32,
    /// `max_segment_size` one page (up to 6.4).
    pub page_segments: bool,
    /// `allow_discards` (`num_discard_bios = 1`).
    pub allow_discards: bool,
}

/// `dm_calculate_queue_limits` + `dm_table_set_restrictions` for linear and
/// striped targets: each target stacks its devices, applies its I/O hints,
/// and is stacked into the table at 0; discard is turned off unless every
/// device supports it; 6.12+ validates on commit.
pub fn dm_calculate_queue_limits(targets: &[DmTargetLimits], beh: &StackingBehaviour) -> Result<StackedLimits, LimitError> {
    let legacy = beh.legacy();
    let mut limits = blk_set_stacking_limits(legacy);
    for ti in targets {
        let mut ti_limits = blk_set_stacking_limits(legacy);
        stack_members(&mut ti_limits, &ti.devices, legacy);
        if let Some((chunk, stripes)) = ti.stripe {
            dm_stripe_io_hints(&mut ti_limits.lim, chunk, stripes, beh);
        }
        if let Some(c) = ti.crypt {
            crate::dm::crypt::crypt_io_hints(&mut ti_limits.lim, c.sector_size, c.page_segments);
        }
        blk_stack_limits(&mut limits, &ti_limits, 0, legacy);
    }
    // dm_table_supports_discards: every target asks for discard clones
    // (dm-crypt only with allow_discards) and every device takes them.
    let targets_discard = targets.iter().all(|t| t.crypt.is_none_or(|c| c.allow_discards));
    let discards = targets_discard && targets.iter().flat_map(|t| &t.devices).all(|d| d.limits.lim.max_discard_sectors != 0);
    // dm-crypt asks for no write-zeroes or secure-erase clones
    // (num_write_zeroes_bios, num_secure_erase_bios 0): the table takes neither.
    if targets.iter().any(|t| t.crypt.is_some()) {
        limits.lim.max_write_zeroes_sectors = 0;
        limits.lim.max_secure_erase_sectors = 0;
    }
    if !discards {
        let l = &mut limits.lim;
        (l.max_hw_discard_sectors, l.discard_granularity, l.discard_alignment) = (0, 0, 0);
        if legacy {
            l.max_discard_sectors = 0;
            limits.discard_misaligned = false;
        }
    }
    commit(limits, beh)
}

#[cfg(test)]
mod stacking_tests {
    use super::*;

    /// A member queue as a driver leaves it: 512-byte blocks, 128 segments
    /// of 64 KiB, the given hardware cap (6.1's max_sectors = min(hw, 2560)),
    /// discard of `discard` sectors with 512-byte granularity if non-zero.
    fn member(max_hw: u32, discard: u32) -> StackedLimits {
        let mut l = QueueLimits::stacking();
        (l.max_hw_sectors, l.max_dev_sectors, l.max_sectors) = (max_hw, 0, max_hw.min(2560));
        (l.max_segments, l.max_segment_size, l.max_discard_segments) = (128, 65536, 1);
        (l.max_write_zeroes_sectors, l.max_user_discard_sectors) = (0, u32::MAX);
        (l.max_hw_discard_sectors, l.max_discard_sectors) = (discard, discard);
        l.discard_granularity = if discard == 0 { 0 } else { 512 };
        l.into()
    }

    fn members(n: usize, m: StackedLimits) -> Vec<StackMember> {
        vec![StackMember { limits: m, start: 2048 }; n]
    }

    #[test]
    fn gcd_and_lcm_not_zero() {
        assert_eq!((gcd(0, 256), gcd(256, 384), gcd(7, 0)), (256, 128, 7));
        assert_eq!((lcm_nz(0, 4096), lcm_nz(4096, 0), lcm_nz(4096, 6144)), (4096, 4096, 12288));
    }

    #[test]
    fn stacking_takes_min_max_lcm_gcd() {
        let mut t = blk_set_stacking_limits(false);
        let mut a = member(2048, 0);
        (a.lim.physical_block_size, a.lim.io_min, a.lim.io_opt, a.lim.chunk_sectors) = (4096, 4096, 4096 * 3, 256);
        let mut b = member(256, 0);
        (b.lim.io_opt, b.lim.chunk_sectors, b.lim.max_segments) = (8192, 384, 64);
        assert!(blk_stack_limits(&mut t, &a, 2048, false));
        assert!(blk_stack_limits(&mut t, &b, 2048, false));
        let l = &t.lim;
        // min_nz(2048, 256); max pbs; lcm(12288, 8192) = 24576; gcd(gcd(0, 256), 384) = 128; min segments.
        assert_eq!((l.max_hw_sectors, l.physical_block_size, l.io_min), (256, 4096, 4096));
        assert_eq!((l.io_opt, l.chunk_sectors, l.max_segments), (24_576, 128, 64));
        // Neither member supports discard: the 6.12 start values stay.
        assert_eq!((l.max_discard_sectors, l.discard_granularity), (0, 512));
    }

    #[test]
    fn chunk_not_a_multiple_of_pbs_is_dropped() {
        // Member A: pbs 4096 (8 sectors), chunk 12 → gcd(0, 12) = 12, 12 mod 8 ≠ 0 → chunk 0, misaligned.
        let mut t = blk_set_stacking_limits(false);
        let mut a = member(2048, 0);
        (a.lim.physical_block_size, a.lim.io_min, a.lim.chunk_sectors) = (4096, 4096, 12);
        assert!(!blk_stack_limits(&mut t, &a, 0, false));
        assert_eq!((t.lim.chunk_sectors, t.misaligned), (0, true));
    }

    #[test]
    fn alignment_offsets_from_member_starts() {
        // pbs 4096 members. First at sector 63: 63 mod 8 = 7 → (4096 − 3584) mod 4096 = 512 bytes.
        // Top so far 0 ≠ 512: top 512 + 0, bottom 4096 + 512 = 4608, 4608 mod 512 = 0 → consistent.
        // Then lcm_nz(0, 512) mod 4096 = 512.
        let mut m = member(2048, 0);
        (m.lim.physical_block_size, m.lim.io_min) = (4096, 4096);
        let mut t = blk_set_stacking_limits(true);
        assert!(blk_stack_limits(&mut t, &m, 63, true));
        assert_eq!((t.alignment_offset, t.misaligned), (512, false));
        // Second member aligned (start 2048 → 0): top 4096 + 512 = 4608, bottom 4096; 4608 mod 4096 ≠ 0.
        assert!(!blk_stack_limits(&mut t, &m, 2048, true));
        assert_eq!((t.alignment_offset, t.misaligned), (512, true));
        // 6.12 commits through blk_validate_limits, which keeps 512 & 4095 = 512 and clears the flag.
        blk_validate_limits(&mut t, 2560).unwrap();
        assert_eq!((t.alignment_offset, t.misaligned), (512, false));
    }

    #[test]
    fn discard_stacks_only_from_members_that_have_it() {
        // 6.12 start: granularity 512, no discard. Member with 4096-byte granularity and 65536-sector cap.
        let mut t = blk_set_stacking_limits(false);
        let mut d = member(2048, 65_536);
        d.lim.discard_granularity = 4096;
        blk_stack_limits(&mut t, &d, 2048, false);
        assert_eq!((t.lim.max_discard_sectors, t.lim.max_hw_discard_sectors, t.lim.discard_granularity), (65_536, 65_536, 4096));
        // A member without discard (granularity 0) leaves them alone when stacked.
        blk_stack_limits(&mut t, &member(2048, 0), 0, false);
        assert_eq!(t.lim.max_discard_sectors, 65_536);
    }

    #[test]
    fn raid10_discard_limit_old_and_new() {
        // 4 NVMe members with discard_max_bytes 2199023255040 (0xFFFFFFFF sectors); chunk 512 KiB = 1024.
        // ≤5.12: raid10_run caps both discard fields at the chunk, stacking keeps min_nz(1024, 0xFFFFFFFF)
        // → 1024·512 = 524288 bytes in discard_max_bytes and discard_max_hw_bytes.
        // 6.12: no cap of its own → 0xFFFFFFFF·512 = 2199023255040.
        let m = members(4, member(1024, u32::MAX));
        let old = raid10_limits(1024, 2, &m, &StackingBehaviour::v5_10()).unwrap();
        let new = raid10_limits(1024, 2, &m, &StackingBehaviour::v6_12()).unwrap();
        let bytes = |l: &StackedLimits| (l.lim.max_discard_sectors as u64 * 512, l.lim.max_hw_discard_sectors as u64 * 512);
        assert_eq!(bytes(&old), (524_288, 524_288));
        assert_eq!(bytes(&new), (2_199_023_255_040, 2_199_023_255_040));
        // io_min a chunk, io_opt chunk · 4/2 = 1 MiB; chunk_sectors only in 6.12+.
        assert_eq!((new.lim.io_min, new.lim.io_opt, new.lim.chunk_sectors, old.lim.chunk_sectors), (524_288, 1_048_576, 1024, 0));
        assert_eq!(new.lim.max_write_zeroes_sectors, 0);
    }

    #[test]
    fn raid0_max_sectors_6_1_vs_6_12() {
        // 4 SATA-like members (max_hw 65535, 6.1 max_sectors 2560), chunk 4 MiB = 8192 sectors.
        // 6.1: blk_queue_max_hw_sectors(8192) → max_hw 8192, max_sectors min(8192, 2560) = 2560;
        //      stacked with the members' 2560 → 2560 (max_sectors_kb 1280).
        // 6.12: max_hw min_nz(8192, 65535) = 8192; validate: io_opt 4 MiB·4 = 16 MiB > 1280 KiB
        //      → max_sectors min(8192, 32768) = 8192 (max_sectors_kb 4096).
        let m = members(4, member(65_535, 0));
        let l61 = raid0_limits(8192, 4, &m, &StackingBehaviour::v6_1()).unwrap();
        let l612 = raid0_limits(8192, 4, &m, &StackingBehaviour::v6_12()).unwrap();
        assert_eq!((l61.lim.max_hw_sectors, l61.lim.max_sectors), (8192, 2560));
        assert_eq!((l612.lim.max_hw_sectors, l612.lim.max_sectors), (8192, 8192));
        assert_eq!((l612.lim.io_min, l612.lim.io_opt), (4 << 20, 16 << 20));
        // Members without write zeroes disable it (min(8192, 0)); chunk_sectors only in the newest.
        assert_eq!(l612.lim.max_write_zeroes_sectors, 0);
        let l72 = raid0_limits(8192, 4, &m, &StackingBehaviour::v7_2()).unwrap();
        assert_eq!((l612.lim.chunk_sectors, l72.lim.chunk_sectors), (0, 8192));
    }

    #[test]
    fn raid5_limits_by_version() {
        // 8 members, 64 KiB chunks (128 sectors), 7 data disks: io_opt 7·65536 = 458752.
        // 6.1: max_hw set after stacking to 2048, max_sectors min(2048, 2560) = 2048 (seed 000's 1 MiB).
        let m = members(8, member(65_535, u32::MAX));
        let l61 = raid5_limits(128, 7, &m, false, &StackingBehaviour::v6_1()).unwrap();
        assert_eq!((l61.lim.max_hw_sectors, l61.lim.max_sectors, l61.lim.io_opt), (2048, 2048, 458_752));
        // Discard off without devices_handle_discard_safely; granularity roundup_pow2(458752) = 524288 stays in 6.1.
        assert_eq!((l61.lim.max_discard_sectors, l61.lim.discard_granularity), (0, 524_288));
        assert_eq!(l61.lim.max_segments, 65_535);
        // 7.2: chunk_sectors = 458752/512 = 896; max_hw max(2048, 896) = 2048.
        let l72 = raid5_limits(128, 7, &m, false, &StackingBehaviour::v7_2()).unwrap();
        assert_eq!((l72.lim.chunk_sectors, l72.lim.max_hw_sectors, l72.lim.max_sectors), (896, 2048, 2048));
        // 6.12 validate: no discard → granularity 0.
        let l612 = raid5_limits(128, 7, &m, false, &StackingBehaviour::v6_12()).unwrap();
        assert_eq!((l612.lim.max_discard_sectors, l612.lim.discard_granularity, l612.lim.chunk_sectors), (0, 0, 0));
    }

    #[test]
    fn raid5_wide_stripe_and_safe_discard() {
        // 24 members (23 data), 64 KiB chunk: io_opt 23·64 KiB = 1507328 → 2944 sectors.
        // 7.2: max_hw max(2048, 2944) = 2944, chunk_sectors 2944; validate: io_opt not above 4 MiB →
        // max_sectors min(2944, 8192) = 2944. 6.12 stays at 2048.
        let m = members(24, member(65_535, u32::MAX));
        let l72 = raid5_limits(128, 23, &m, false, &StackingBehaviour::v7_2()).unwrap();
        assert_eq!((l72.lim.max_hw_sectors, l72.lim.max_sectors, l72.lim.chunk_sectors), (2944, 2944, 2944));
        let l612 = raid5_limits(128, 23, &m, false, &StackingBehaviour::v6_12()).unwrap();
        assert_eq!(l612.lim.max_sectors, 2048);
        // With devices_handle_discard_safely: stripe roundup_pow2(1507328) = 2 MiB = 4096 sectors ≤ members'
        // 0xFFFFFFFF and granularity 2 MiB ≥ stripe → discard stays: 0xFFFFFFFF, granularity 2097152.
        let safe = raid5_limits(128, 23, &m, true, &StackingBehaviour::v6_12()).unwrap();
        assert_eq!((safe.lim.max_discard_sectors, safe.lim.discard_granularity), (u32::MAX, 2_097_152));
        // Members capped at 2048 sectors cannot take a 4096-sector stripe → off.
        let small = members(24, member(65_535, 2048));
        assert_eq!(raid5_limits(128, 23, &small, true, &StackingBehaviour::v6_12()).unwrap().lim.max_discard_sectors, 0);
    }

    #[test]
    fn dm_stripe_over_three_devices() {
        // 3 members with pbs 4096, striped chunk 128 (64 KiB): io_min 65536, io_opt 3·65536 = 196608.
        let mut d = member(2048, u32::MAX);
        (d.lim.physical_block_size, d.lim.io_min) = (4096, 4096);
        let t = DmTargetLimits { devices: members(3, d.clone()), stripe: Some((128, 3)), crypt: None };
        let l612 = dm_calculate_queue_limits(std::slice::from_ref(&t), &StackingBehaviour::v6_12()).unwrap();
        assert_eq!((l612.lim.io_min, l612.lim.io_opt, l612.lim.chunk_sectors), (65_536, 196_608, 128));
        // 6.12 recomputes max_sectors from max_hw 2048 and the 1280 KiB cap → 2048; discard from the members.
        assert_eq!((l612.lim.max_sectors, l612.lim.max_discard_sectors), (2048, u32::MAX));
        let l61 = dm_calculate_queue_limits(std::slice::from_ref(&t), &StackingBehaviour::v6_1()).unwrap();
        assert_eq!((l61.lim.io_min, l61.lim.io_opt, l61.lim.chunk_sectors), (65_536, 196_608, 0));
        // One device without discard turns it off for the table.
        let mut no_discard = t.clone();
        no_discard.devices[1].limits = member(2048, 0);
        let l = dm_calculate_queue_limits(&[no_discard], &StackingBehaviour::v6_12()).unwrap();
        assert_eq!((l.lim.max_discard_sectors, l.lim.discard_granularity), (0, 0));
    }

    #[test]
    fn dm_stripe_hints_overflow() {
        // 6.12: chunk 2^23 sectors · 512 = 2^32 overflows → hints left as stacked; 6.1 wraps to 0 and
        // blk_limits_io_min raises that to the block size (512).
        let mut l = QueueLimits::stacking();
        dm_stripe_io_hints(&mut l, 1 << 23, 2, &StackingBehaviour::v6_12());
        assert_eq!((l.io_min, l.io_opt, l.chunk_sectors), (512, 0, 1 << 23));
        let mut l = QueueLimits::stacking();
        dm_stripe_io_hints(&mut l, 1 << 23, 2, &StackingBehaviour::v6_1());
        assert_eq!((l.io_min, l.io_opt), (512, 0));
    }

    #[test]
    fn dm_stripe_discard_limit_per_version() {
        // virtio members discarding 4194303 sectors (discard_max_bytes
        // 2147483136), 3 stripes of 128 sectors. 7.2: 3 × 4194303 =
        // 12582909, rounded down to rows of 384: 32767 × 384 = 12582528
        // sectors (the guest's 6442254336 bytes). Up to 6.x: the members'.
        for (beh, want) in [(StackingBehaviour::v7_2(), 12_582_528), (StackingBehaviour::v6_12(), 4_194_303)] {
            let mut l = QueueLimits::stacking();
            l.max_hw_discard_sectors = 4_194_303;
            dm_stripe_io_hints(&mut l, 128, 3, &beh);
            assert_eq!(l.max_hw_discard_sectors, want);
        }
        // Below a chunk: left alone; an overflowing product: UINT_MAX >> 9.
        let mut l = QueueLimits::stacking();
        l.max_hw_discard_sectors = 64;
        dm_stripe_io_hints(&mut l, 128, 3, &StackingBehaviour::v7_2());
        assert_eq!(l.max_hw_discard_sectors, 64);
        l.max_hw_discard_sectors = u32::MAX;
        dm_stripe_io_hints(&mut l, 128, 3, &StackingBehaviour::v7_2());
        assert_eq!(l.max_hw_discard_sectors, u32::MAX >> 9);
    }
}
