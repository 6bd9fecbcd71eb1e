//! `[workload]` of the discard tools: `type = "blkdiscard"`, `"mkfs.xfs"`
//! and `"fstrim"` (docs/scenario.md). Every call the tool will make is
//! worked out and checked here, against the same limits and chopping the
//! run uses, so a call the kernel would refuse is an error naming the key.

use std::rc::Rc;

use crate::bio::SECTOR_SHIFT;
use crate::profile::Behaviour;
use crate::source::discard::{mkfs_discard_steps, DiscardError, MkfsDiscard};
use crate::source::discard_tool::{blkdiscard_calls, DiscardCall, DiscardTarget, DiscardTool};
use crate::source::extents::{parse_extents, parse_sectors, Extent};
use crate::source::rng::Rng;

use super::disks::DiskSpec;
use super::jobs::{device_key, read_named_file, JobSpec, Target};
use super::tree::{Obj, ScenarioError, Value};

pub const BLKDISCARD_KEYS: &[&str] = &["type", "device", "offset", "length", "step", "secure", "pid", "comm"];
pub const MKFS_KEYS: &[&str] = &["type", "device", "xfsprogs", "pid", "comm"];
pub const FSTRIM_KEYS: &[&str] = &["type", "device", "extents", "extents_file", "free_space", "minlen", "pid", "comm"];
const FREE_SPACE_KEYS: &[&str] = &["extents", "min", "max"];

/// Read a discard tool's workload; `ty` is its type.
pub fn read(w: &Obj, ty: &str, disks: &[DiskSpec], beh: &Behaviour, seed: u64, pid: u32, comm: &str) -> Result<Vec<JobSpec>, ScenarioError> {
    let t = device_key(w, "device", disks)?;
    let calls = match ty {
        "blkdiscard" => blkdiscard(w, &t)?,
        "mkfs.xfs" => mkfs_xfs(w, &t)?,
        _ => fstrim(w, &t, seed)?,
    };
    let target = t.discard_target(beh);
    for c in &calls {
        check_call(w, &target, *c)?;
    }
    let name = t.name.clone();
    let make = Rc::new(move |topo: &crate::genhd::Topology, beh: &Behaviour, _: &mut crate::source::pagecache::SharedCaches| {
        let dev = topo.by_name(&name).expect("a validated device");
        Box::new(DiscardTool::new(DiscardTarget::new(topo, dev, beh), calls.clone())) as Box<dyn crate::source::Source>
    });
    Ok(vec![JobSpec { pid, comm: comm.to_string(), iodepth: 1, batch: 1, complete_min: 1, ioprio: Default::default(), cgroup: 0, stonewall: false, async_io: false, make }])
}

fn check_call(w: &Obj, t: &DiscardTarget, call: DiscardCall) -> Result<(), ScenarioError> {
    let key = match call {
        DiscardCall::Sectors(..) if w.has("extents_file") => "extents_file",
        DiscardCall::Sectors(..) if w.has("extents") => "extents",
        DiscardCall::Sectors(..) => "free_space",
        _ => "device",
    };
    // The key's place is looked up for an error only: a whole-device
    // discard checks one call per 2 GiB.
    call.check(t).map_err(|e| {
        let at = w.node(key).map(|n| n.at.clone()).unwrap_or_else(|| w.at.clone());
        w.err(key, &at, describe_call(call, &e))
    })
}

pub(crate) fn describe_call(call: DiscardCall, e: &DiscardError) -> String {
    let what = match call {
        DiscardCall::Bytes(s, l) => format!("BLKDISCARD of {l} bytes at {s}"),
        DiscardCall::Secure(s, l) => format!("BLKSECDISCARD of {l} bytes at {s}"),
        DiscardCall::Sectors(s, n) => format!("discard of {n} sectors at sector {s}"),
        DiscardCall::ZeroRange(s, l) => format!("zeroing of {l} bytes at {s} (the log)"),
    };
    let why = match e {
        DiscardError::NotSupported => "the device does not support it (EOPNOTSUPP: discard_max_bytes is 0)".to_string(),
        DiscardError::NoGranularity => "discard_granularity is 0 (EOPNOTSUPP)".to_string(),
        DiscardError::Invalid(m) => format!("EINVAL: {m}"),
        DiscardError::NoProgress { sector } => format!("the kernel would make no progress at sector {sector}"),
    };
    format!("{what}: {why}")
}

/// `blkdiscard [-s] [-o offset] [-l length] [-p step] DEVICE`.
fn blkdiscard(w: &Obj, t: &Target) -> Result<Vec<DiscardCall>, ScenarioError> {
    let size = t.bytes();
    let offset = w.opt_size("offset")?.map(|x| x.0).unwrap_or(0);
    if offset > size {
        return Err(w.err("offset", &w.node("offset").expect("read").at, format!("{offset} is beyond the end of {} ({size} bytes)", t.name)));
    }
    let length = match w.opt_size("length")? {
        Some((l, n)) if offset + l > size => return Err(w.err("length", &n.at, format!("{offset} + {l} passes the end of {} ({size} bytes)", t.name))),
        Some((l, _)) => l,
        None => size - offset,
    };
    let step = w.opt_size("step")?.map(|x| x.0);
    let secure = w.opt_bool("secure")?.map(|x| x.0).unwrap_or(false);
    Ok(blkdiscard_calls(offset, length, step, secure))
}

/// mkfs.xfs's discard pass (`discard_devices`): 2 GiB steps from xfsprogs
/// 5.5, one whole-device BLKDISCARD before; then the log zeroed
/// (`prepare_devices` → `libxfs_log_clear` → `libxfs_device_zero`, which
/// tries `fallocate(FALLOC_FL_ZERO_RANGE)` first), see [`mkfs_xfs_log`].
fn mkfs_xfs(w: &Obj, t: &Target) -> Result<Vec<DiscardCall>, ScenarioError> {
    let kind = match w.opt_str("xfsprogs")? {
        None => MkfsDiscard::Xfs2GiBSteps,
        Some((v, n)) => {
            let at_least_5_5 = version_at_least(&v, (5, 5)).ok_or_else(|| w.err("xfsprogs", &n.at, format!("'{v}' is not a version such as \"6.1.0\"")))?;
            if at_least_5_5 {
                MkfsDiscard::Xfs2GiBSteps
            } else {
                MkfsDiscard::XfsWholeDevice
            }
        }
    };
    let mut calls: Vec<DiscardCall> = mkfs_discard_steps(kind, t.bytes()).into_iter().map(|(s, l)| DiscardCall::Bytes(s, l)).collect();
    calls.extend(mkfs_xfs_log(t.bytes()).map(|(s, l)| DiscardCall::ZeroRange(s, l)));
    Ok(calls)
}

/// Where mkfs.xfs puts its internal log and how long it is, in bytes, for a
/// device of `dev_bytes` with 4 KiB blocks (xfsprogs 5.x
/// `calculate_log_size`): 1/2048 of the file system, at least 64 MiB
/// (`XFS_MIN_REALISTIC_LOG_BLOCKS`), at most `XFS_MAX_LOG_BYTES` (2 GiB less
/// `XFS_MIN_LOG_BYTES`' 10 MiB). It sits at the start of the middle
/// allocation group (`logagno = agcount / 2`), taken here as the middle of
/// the device on a 1 MiB boundary; where it is changes no cost on a
/// device without seeks. File systems under 300 MiB get the computed
/// minimum log instead, which this does not work out: `None`.
pub fn mkfs_xfs_log(dev_bytes: u64) -> Option<(u64, u64)> {
    const MIB: u64 = 1 << 20;
    if dev_bytes < 300 * MIB {
        return None;
    }
    let blocks = dev_bytes / 4096;
    let log = (blocks * 4096 / 2048 / 4096 * 4096).max(64 * MIB).min((2048 - 10) * MIB);
    let start = (dev_bytes / 2) / MIB * MIB;
    Some((start, log.min(dev_bytes - start)))
}

/// Whether version `v` ("MAJOR.MINOR[.PATCH]") is at least `min`.
fn version_at_least(v: &str, min: (u32, u32)) -> Option<bool> {
    let mut parts = v.trim().split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next().unwrap_or("0").parse().ok()?;
    Some((major, minor) >= min)
}

/// fstrim: one discard per free extent, in the list's order, skipping
/// extents shorter than `minlen` raised to the discard granularity
/// (ext4_trim_fs).
fn fstrim(w: &Obj, t: &Target, seed: u64) -> Result<Vec<DiscardCall>, ScenarioError> {
    let given = ["extents", "extents_file", "free_space"].iter().filter(|k| w.has(k)).count();
    if given != 1 {
        return Err(w.err("extents", &w.at, "give the free extents one way: extents = [[start, length], ...], extents_file = \"FILE\" or free_space = { extents = N, min = SIZE, max = SIZE }"));
    }
    let extents = if let Some((file, text)) = read_named_file(w, "extents_file")? {
        let at = w.node("extents_file").expect("read").at.clone();
        parse_extents(&file, &text).map_err(|e| w.err("extents_file", &at, e.to_string()))?
    } else if w.has("extents") {
        inline_extents(w)?
    } else {
        free_space(w, t, seed)?
    };
    let minlen = w.opt_size("minlen")?.map(|x| x.0).unwrap_or(0).max(t.limits().discard_granularity as u64);
    Ok(extents.iter().filter(|e| e.len << SECTOR_SHIFT >= minlen).map(|e| DiscardCall::Sectors(e.start, e.len)).collect())
}

/// `extents = [[start, length], ...]`: numbers are sectors, strings may
/// carry a unit (the extents-file format).
fn inline_extents(w: &Obj) -> Result<Vec<Extent>, ScenarioError> {
    let (items, an) = w.opt_array("extents")?.expect("checked");
    let mut lines = String::new();
    for (i, item) in items.iter().enumerate() {
        let pair = match &item.value {
            Value::Array(p) if p.len() == 2 => [&p[0].value, &p[1].value],
            _ => return Err(w.err("extents", &item.at, format!("entry {} is not [start, length]", i + 1))),
        };
        let mut fields = Vec::new();
        for v in pair {
            let text = match v {
                Value::Int(n) if *n >= 0 => n.to_string(),
                Value::Str(s) => s.clone(),
                _ => return Err(w.err("extents", &item.at, format!("entry {}: start and length are sectors or sizes such as \"1MiB\"", i + 1))),
            };
            parse_sectors(&text).map_err(|m| w.err("extents", &item.at, format!("entry {}: {m}", i + 1)))?;
            fields.push(text);
        }
        lines.push_str(&format!("{} {}\n", fields[0], fields[1]));
    }
    parse_extents("extents", &lines).map_err(|e| {
        let at = items.get(e.line.saturating_sub(1)).map(|n| n.at.clone()).unwrap_or_else(|| an.at.clone());
        w.err("extents", &at, format!("entry {}: {}", e.line, e.msg))
    })
}

/// A generated free-space map: `extents` extents, one in each of as many
/// equal slices of the device, each of a random length between `min` and
/// `max` (4 KiB filesystem blocks) at a random block inside its slice.
fn free_space(w: &Obj, t: &Target, seed: u64) -> Result<Vec<Extent>, ScenarioError> {
    let f = w.table("free_space")?.expect("checked");
    let (count, cn) = f.opt_u64("extents")?.ok_or_else(|| f.err("extents", &f.at, "missing: how many free extents"))?;
    let block = 4096u64;
    let min = f.opt_size("min")?.map(|x| x.0).unwrap_or(block);
    let (max, maxn) = f.opt_size("max")?.unwrap_or((1 << 20, cn));
    f.finish(FREE_SPACE_KEYS)?;
    if min == 0 || min % block != 0 || max % block != 0 || max < min {
        return Err(f.err("max", &maxn.at, "min and max must be whole 4 KiB blocks, 0 < min <= max"));
    }
    let slice = t.bytes().checked_div(count).map_or(0, |per| per / block * block);
    if count > 0 && slice < max {
        return Err(f.err("extents", &cn.at, format!("{count} extents of up to {max} bytes do not fit in {} ({} bytes)", t.name, t.bytes())));
    }
    let mut rng = Rng::new(seed ^ 0xf7ee_5bac_e000);
    let out = (0..count)
        .map(|i| {
            let len = min + rng.next_u64() % ((max - min) / block + 1) * block;
            let start = i * slice + rng.next_u64() % ((slice - len) / block + 1) * block;
            Extent { start: start >> SECTOR_SHIFT, len: len >> SECTOR_SHIFT, line: i as usize + 1 }
        })
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xfsprogs_versions() {
        assert_eq!(version_at_least("5.5.0", (5, 5)), Some(true));
        assert_eq!(version_at_least("5.4", (5, 5)), Some(false));
        assert_eq!(version_at_least("6", (5, 5)), Some(true));
        assert_eq!(version_at_least("x", (5, 5)), None);
    }
}
