//! The `[disks.NAME.null_blk]` table of a `kind = "null_blk"` disk: its
//! module parameters, by their `modprobe null_blk` names
//! (docs/scenario.md, "null_blk"). Values null_blk would refuse are errors;
//! ones it clamps with a warning are clamped the same way.

use crate::nullb::{IrqMode, NullBlkParams};

use super::tree::{Obj, ScenarioError};

const NULL_BLK_KEYS: &[&str] = &[
    "bs",
    "max_sectors",
    "virt_boundary",
    "hw_queue_depth",
    "submit_queues",
    "poll_queues",
    "no_sched",
    "irqmode",
    "completion_nsec",
    "zoned",
    "zone_size",
    "zone_nr_conv",
    "queue_mode",
];

/// Parameters that change I/O in ways the model does not reproduce.
const NOT_MODELLED: &[&str] =
    &["memory_backed", "discard", "cache_size", "mbps", "blocking", "shared_tags", "shared_tag_bitmap", "zone_capacity", "zone_max_open", "zone_max_active", "use_per_node_hctx", "home_node"];

/// A u32 parameter in `lo..=hi`.
fn int(t: &Obj, key: &str, lo: u64, hi: u64) -> Result<Option<u32>, ScenarioError> {
    let Some((v, n)) = t.opt_u64(key)? else { return Ok(None) };
    if v < lo || v > hi {
        return Err(t.err(key, &n.at, format!("{v} is not between {lo} and {hi}")));
    }
    Ok(Some(v as u32))
}

/// Read the table (absent: every default). `cpus` clamps `submit_queues`.
pub(crate) fn read_null_blk(d: &Obj, cpus: Option<u32>) -> Result<NullBlkParams, ScenarioError> {
    let mut p = NullBlkParams::default();
    let Some(t) = d.table("null_blk")? else {
        p.clamp_submit_queues(cpus);
        return Ok(p);
    };
    for key in NOT_MODELLED {
        if let Some(n) = t.node(key) {
            return Err(t.err(key, &n.at, "this null_blk parameter is not modelled"));
        }
    }
    if let Some(v) = int(&t, "queue_mode", 0, 2)? {
        if v != 2 {
            let n = t.node("queue_mode").expect("read");
            return Err(t.err("queue_mode", &n.at, "only queue_mode = 2 (blk-mq, the default) is modelled"));
        }
    }
    if let Some((v, n)) = t.opt_u64("bs")? {
        // null_validate_conf: a power of two from 512 to 4096.
        if !(512..=4096).contains(&v) || !v.is_power_of_two() {
            return Err(t.err("bs", &n.at, format!("{v} is not a power of two from 512 to 4096")));
        }
        p.bs = v as u32;
    }
    if let Some(v) = int(&t, "max_sectors", 0, u32::MAX as u64)? {
        p.max_sectors = v;
    }
    p.hw_queue_depth = int(&t, "hw_queue_depth", 1, 65536)?.unwrap_or(p.hw_queue_depth);
    p.submit_queues = int(&t, "submit_queues", 0, 65536)?.unwrap_or(p.submit_queues);
    p.poll_queues = int(&t, "poll_queues", 0, 65536)?.unwrap_or(p.poll_queues);
    p.clamp_submit_queues(cpus);
    if let Some(v) = int(&t, "irqmode", 0, 2)? {
        p.irqmode = [IrqMode::None, IrqMode::Softirq, IrqMode::Timer][v as usize];
    }
    if let Some((v, _)) = t.opt_u64("completion_nsec")? {
        p.completion_nsec = v;
    }
    for (key, field) in [("virt_boundary", &mut p.virt_boundary), ("no_sched", &mut p.no_sched), ("zoned", &mut p.zoned)] {
        if let Some((v, _)) = t.opt_bool(key)? {
            *field = v;
        }
    }
    if let Some((v, n)) = t.opt_u64("zone_size")? {
        if v == 0 || !v.is_power_of_two() {
            return Err(t.err("zone_size", &n.at, format!("{v} MiB is not a power of two (null_blk: \"zone_size must be power-of-two\")")));
        }
        p.zone_size_mb = v;
    }
    p.zone_nr_conv = int(&t, "zone_nr_conv", 0, u32::MAX as u64)?.unwrap_or(0);
    if !p.zoned {
        for key in ["zone_size", "zone_nr_conv"] {
            if let Some(n) = t.node(key) {
                return Err(t.err(key, &n.at, "only with zoned = true"));
            }
        }
    }
    t.finish(NULL_BLK_KEYS)?;
    Ok(p)
}

/// `null_init_zoned_dev`: at least one sequential zone; more conventional
/// zones than that are cut to `nr_zones - 1` (with a warning).
pub(crate) fn clamp_conv_zones(p: &mut NullBlkParams, nr_sectors: u64) {
    if !p.zoned {
        return;
    }
    let zone = p.zone_size_mb << 11;
    let nr_zones = nr_sectors.div_ceil(zone);
    p.zone_nr_conv = (p.zone_nr_conv as u64).min(nr_zones.saturating_sub(1)) as u32;
}
