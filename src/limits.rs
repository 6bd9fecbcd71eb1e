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
}

impl Elevator {
    pub fn name(self) -> &'static str {
        match self {
            Elevator::None => "none",
            Elevator::MqDeadline => "mq-deadline",
        }
    }
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
    pub write_cache: bool,
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
    let lim = store_max_sectors_kb(lim, drv, writes.max_sectors_kb, model, cap)?;
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
    drv: &DriverLimits,
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
    let _ = drv;
    Ok(lim)
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
    // elevator_get_default: mq-deadline for a single hardware queue, none otherwise.
    let scheduler = w.scheduler.unwrap_or(if d.nr_hw_queues <= 1 { Elevator::MqDeadline } else { Elevator::None });
    // blk_mq_init_sched: 2 * min(queue_depth, BLKDEV_DEFAULT_RQ=128) with a scheduler.
    let default_nr = match scheduler {
        Elevator::None => d.queue_depth,
        Elevator::MqDeadline => 2 * d.queue_depth.min(128),
    };
    let nr_requests = match w.nr_requests {
        None => default_nr,
        Some(n) => {
            let n = (n.min(u32::MAX as u64) as u32).max(BLKDEV_MIN_RQ);
            if scheduler == Elevator::None && n > d.queue_depth {
                return err("nr_requests", format!("{n} exceeds the tag set depth ({}) without a scheduler", d.queue_depth));
            }
            n
        }
    };
    let nomerges = w.nomerges.unwrap_or(0);
    if nomerges > 2 {
        return err("nomerges", format!("{nomerges} is not 0, 1 or 2"));
    }
    Ok(QueueAttrs {
        scheduler,
        nr_requests,
        queue_depth: d.queue_depth,
        nr_hw_queues: d.nr_hw_queues,
        nomerges,
        rotational: w.rotational.unwrap_or(d.rotational),
        write_cache: w.write_cache.unwrap_or(d.write_cache),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genhd::DiskKind;

    fn sata() -> DriverLimits {
        DiskKind::Sata.driver_limits(false)
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
}
