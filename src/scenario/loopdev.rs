//! A `kind = "loop"` disk's file: `backing` (the device the file is on),
//! `offset` (where its data starts there) and `direct_io`
//! (docs/scenario.md, "loop").

use crate::bio::SECTOR_SHIFT;
use crate::genhd::DiskKind;
use crate::limits::DriverLimits;
use crate::loopdev::loop_update_limits;

use super::disks::{find_dev, DiskSpec};
use super::tree::{Obj, ScenarioError};

pub(crate) const LOOP_KEYS: &[&str] = &["backing", "offset", "direct_io"];

/// Where a loop device's file is, as the scenario names it.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopFile {
    /// A disk or partition of the scenario.
    pub backing: String,
    /// The sector of `backing` where the file's data starts.
    pub offset: u64,
    pub direct_io: bool,
}

/// Read the file's keys (a loop disk only), set the limits that follow the
/// backing device, and return the file and the loop device's size: `size`,
/// or the rest of the backing device after `offset`.
pub(crate) fn read_loop_file(d: &Obj, disks: &[DiskSpec], drv: &mut DriverLimits, size: Option<u64>) -> Result<(LoopFile, u64), ScenarioError> {
    let (backing, bn) = d.opt_str("backing")?.ok_or_else(|| d.err("backing", &d.at, "missing: the disk or partition the file is on, e.g. \"sdb1\""))?;
    let name = backing.strip_prefix("/dev/").unwrap_or(&backing).to_string();
    let info = find_dev(disks, &name).ok_or_else(|| d.err("backing", &bn.at, format!("'{name}' is not a disk or partition of the scenario (defined before this loop device)")))?;
    let lower = disks.iter().find(|x| x.name == name || x.partitions.iter().any(|p| p.name == name)).expect("found");
    if lower.kind == DiskKind::Loop {
        return Err(d.err("backing", &bn.at, "a loop device on a loop device is not modelled"));
    }
    let direct_io = d.opt_bool("direct_io")?.map(|x| x.0).unwrap_or(false);
    if !direct_io {
        let at = d.node("direct_io").map_or(d.at.clone(), |n| n.at.clone());
        return Err(d.err("direct_io", &at, "buffered loop I/O (the file's page cache) is not modelled: set direct_io = true (losetup --direct-io=on)"));
    }
    let lbs = info.lbs as u64;
    let offset = match d.opt_size("offset")? {
        None => 0,
        Some((o, n)) if o % lbs != 0 => {
            return Err(d.err("offset", &n.at, format!("{o} is not a multiple of {name}'s logical block size ({lbs}): loop would fall back to buffered I/O")))
        }
        Some((o, _)) => o,
    };
    let room = (info.nr_sectors << SECTOR_SHIFT).saturating_sub(offset);
    let size = size.unwrap_or(room);
    if size > room || room == 0 {
        let at = d.node("size").or(d.node("offset")).map_or(d.at.clone(), |n| n.at.clone());
        return Err(d.err("size", &at, format!("the file ({size} bytes at offset {offset}) does not fit on {name} ({} bytes)", info.nr_sectors << SECTOR_SHIFT)));
    }
    loop_update_limits(drv, direct_io, info.lbs, lower.queue.attrs.rotational);
    Ok((LoopFile { backing: name, offset: offset >> SECTOR_SHIFT, direct_io }, size))
}
