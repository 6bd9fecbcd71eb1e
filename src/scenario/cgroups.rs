//! `[cgroups.NAME]`: cgroup v2 groups under the root, each a table whose
//! keys are the group's control files and whose values are what a user
//! writes to them: `"io.max"` (a line or a list of lines, as written to the
//! file, read by the kernel's `tg_set_limit` rules), `"io.weight"` and
//! `"io.bfq.weight"` (stored for the schedulers). Workloads and fio jobs
//! join a group with `cgroup = "NAME"` (fio's own `cgroup=NAME`).

use crate::profile::Behaviour;

use super::disks::DiskSpec;
use super::stack::device_numbers;
use super::tree::{self, Node, Obj, ScenarioError, Value};

const FILE_KEYS: &[&str] = &["io.max", "io.weight", "io.bfq.weight"];

/// `io.max` of one group on one disk: bytes/s and I/Os per second by
/// direction (read, write); `u64::MAX` / `u32::MAX` for "max".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoMax {
    /// The whole disk (or md/dm device) the limits are on.
    pub device: String,
    pub bps: [u64; 2],
    pub iops: [u32; 2],
}

impl IoMax {
    /// No limit in either direction (a new group's `throtl_pd_alloc` values).
    pub fn unlimited(device: &str) -> IoMax {
        IoMax { device: device.to_string(), bps: [u64::MAX; 2], iops: [u32::MAX; 2] }
    }

    pub fn has_limits(&self) -> bool {
        self.bps.iter().any(|&b| b != u64::MAX) || self.iops.iter().any(|&i| i != u32::MAX)
    }
}

/// A weight file: the group's default and per-device overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weight {
    pub default: u32,
    pub devices: Vec<(String, u32)>,
}

/// One `[cgroups.NAME]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupSpec {
    pub name: String,
    /// Per device with limits, in the order first written.
    pub io_max: Vec<IoMax>,
    /// `io.weight` (blk-iocost; CGROUP_WEIGHT_DFL 100 when absent).
    pub io_weight: Option<Weight>,
    /// `io.bfq.weight` (BFQ_WEIGHT_DEFAULT 100 when absent).
    pub bfq_weight: Option<Weight>,
}

/// Where a cgroup name is looked up: the scenario's groups, 1-based
/// (0 is the root group).
pub fn cgroup_index(cgroups: &[CgroupSpec], name: &str) -> Option<u16> {
    cgroups.iter().position(|c| c.name == name).map(|i| i as u16 + 1)
}

/// The names, for error messages.
pub fn cgroup_names(cgroups: &[CgroupSpec]) -> String {
    if cgroups.is_empty() {
        return "none defined: add a [cgroups.NAME] table".to_string();
    }
    cgroups.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// The `[cgroups]` tables. `targets` are the disks, then the md/dm devices.
pub(crate) fn read_cgroups(o: &Obj, targets: &[DiskSpec], beh: &Behaviour) -> Result<Vec<CgroupSpec>, ScenarioError> {
    let Some(t) = o.table("cgroups")? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for name in t.keys() {
        let g = t.table(&name)?.expect("key listed");
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(t.err(&name, &g.at, "a cgroup name is one path component below the root (no '/')"));
        }
        let io_max = read_io_max(&g, targets, beh)?;
        let io_weight = read_weight(&g, "io.weight", 1, 10000, targets)?;
        let bfq_weight = read_weight(&g, "io.bfq.weight", 1, 1000, targets)?;
        g.finish(FILE_KEYS)?;
        out.push(CgroupSpec { name, io_max, io_weight, bfq_weight });
    }
    t.finish(&[])?;
    Ok(out)
}

/// The lines of a control file: one string or a list of strings.
fn lines<'a>(g: &Obj<'a>, key: &str) -> Result<Vec<(String, &'a Node)>, ScenarioError> {
    let Some(n) = g.node(key) else { return Ok(Vec::new()) };
    match &n.value {
        Value::Str(s) => Ok(vec![(s.clone(), n)]),
        Value::Array(items) => items
            .iter()
            .map(|i| match &i.value {
                Value::Str(s) => Ok((s.clone(), i)),
                v => Err(g.err(key, &i.at, format!("expected a line as written to the file, found {}", tree::describe(v)))),
            })
            .collect(),
        v => Err(g.err(key, &n.at, format!("expected a line or a list of lines as written to the file, found {}", tree::describe(v)))),
    }
}

/// `io.max`: each line applied in turn, as successive writes to the file.
fn read_io_max(g: &Obj, targets: &[DiskSpec], beh: &Behaviour) -> Result<Vec<IoMax>, ScenarioError> {
    let mut out: Vec<IoMax> = Vec::new();
    for (line, n) in lines(g, "io.max")? {
        let (dev, body) = blkg_conf_open_bdev(&line, targets).map_err(|m| g.err("io.max", &n.at, format!("'{line}': {m}")))?;
        let i = match out.iter().position(|m| m.device == dev) {
            Some(i) => i,
            None => {
                out.push(IoMax::unlimited(&dev));
                out.len() - 1
            }
        };
        tg_set_limit(&mut out[i], body, beh.throtl_min_limit as u64).map_err(|m| g.err("io.max", &n.at, format!("'{line}': {m}")))?;
    }
    out.retain(IoMax::has_limits);
    Ok(out)
}

/// `blkg_conf_open_bdev`: the device at the start of a line — `MAJ:MIN`
/// as the kernel reads it, or a scenario device name — which must be a
/// whole disk; returns its name and the rest of the line.
fn blkg_conf_open_bdev<'l>(line: &'l str, targets: &[DiskSpec]) -> Result<(String, &'l str), String> {
    let line = line.trim_start();
    let end = line.find(char::is_whitespace).unwrap_or(line.len());
    let (word, body) = line.split_at(end);
    if word.is_empty() {
        return Err("no device: a line starts with MAJ:MIN or a scenario device name".to_string());
    }
    let numbers = device_numbers(targets);
    let name = match numbers.get(word) {
        Some(name) => name.clone(),
        None if word.contains(':') => return Err(format!("{word} is no scenario device (ENODEV); devices: {}", number_list(&numbers))),
        None => word.strip_prefix("/dev/").unwrap_or(word).to_string(),
    };
    if targets.iter().any(|d| d.name == name) {
        return Ok((name, body));
    }
    if let Some(d) = targets.iter().find(|d| d.partitions.iter().any(|p| p.name == name)) {
        return Err(format!("{name} is a partition: limits are set on the whole disk ({}), ENODEV", d.name));
    }
    Err(format!("'{name}' is not a scenario device ({})", super::disks::dev_names(targets)))
}

fn number_list(numbers: &std::collections::HashMap<String, String>) -> String {
    let mut v: Vec<String> = numbers.iter().map(|(n, name)| format!("{n} {name}")).collect();
    v.sort();
    v.join(", ")
}

/// `tg_set_limit`: `KEY=VALUE` tokens (rbps, wbps, riops, wiops; a number
/// or `max`) update the device's limits; 0 is ERANGE, an unknown key or a
/// value below `min` (2 up to 6.x, 1 from 7.x) EINVAL. Where the kernel's
/// `%llu` would stop at a unit ("10M" read as 10), the line is refused.
pub fn tg_set_limit(m: &mut IoMax, body: &str, min: u64) -> Result<(), String> {
    let mut v = (m.bps, m.iops);
    for tok in body.split_whitespace() {
        let Some((key, val)) = tok.split_once('=') else {
            return Err(format!("'{tok}': expected KEY=VALUE (rbps, wbps, riops or wiops), EINVAL"));
        };
        let val = match val {
            "max" => u64::MAX,
            s => parse_llu(s).ok_or_else(|| format!("'{tok}': the value is a number of bytes/s or I/Os per second, or max (EINVAL)"))?,
        };
        if val == 0 {
            return Err(format!("'{tok}': 0 is out of range (ERANGE): write max for no limit"));
        }
        if val < min {
            return Err(format!("'{tok}': the kernel refuses values below {min} (EINVAL)"));
        }
        let iops = val.min(u32::MAX as u64) as u32;
        match key {
            "rbps" => v.0[0] = val,
            "wbps" => v.0[1] = val,
            "riops" => v.1[0] = iops,
            "wiops" => v.1[1] = iops,
            _ => return Err(format!("'{key}' is not an io.max key (rbps, wbps, riops, wiops), EINVAL")),
        }
    }
    (m.bps, m.iops) = v;
    Ok(())
}

/// A decimal `%llu` that uses the whole token (values past u64 are refused).
fn parse_llu(s: &str) -> Option<u64> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A weight file: an integer (the default weight), or lines as written
/// (`"default 200"`, `"200"`, `"vdb 300"`, `"8:16 300"`).
fn read_weight(g: &Obj, key: &str, min: u32, max: u32, targets: &[DiskSpec]) -> Result<Option<Weight>, ScenarioError> {
    let Some(n) = g.node(key) else { return Ok(None) };
    let range = |v: u64, at: &tree::Origin| -> Result<u32, ScenarioError> {
        if v < min as u64 || v > max as u64 {
            return Err(g.err(key, at, format!("{v} is outside {min}..{max} (ERANGE)")));
        }
        Ok(v as u32)
    };
    if let Value::Int(i) = n.value {
        let w = range(i.max(0) as u64, &n.at)?;
        return Ok(Some(Weight { default: w, devices: Vec::new() }));
    }
    let mut w = Weight { default: 100, devices: Vec::new() };
    for (line, item) in lines(g, key)? {
        let words: Vec<&str> = line.split_whitespace().collect();
        let bad = || g.err(key, &item.at, format!("'{line}': expected WEIGHT, \"default WEIGHT\" or \"DEVICE WEIGHT\""));
        match words[..] {
            [v] | ["default", v] => w.default = range(parse_llu(v).ok_or_else(bad)?, &item.at)?,
            [_, v] => {
                let (dev, _) = blkg_conf_open_bdev(&line, targets).map_err(|m| g.err(key, &item.at, format!("'{line}': {m}")))?;
                let v = range(parse_llu(v).ok_or_else(bad)?, &item.at)?;
                w.devices.retain(|d| d.0 != dev);
                w.devices.push((dev, v));
            }
            _ => return Err(bad()),
        }
    }
    Ok(Some(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tg_set_limit_reads_lines_as_the_kernel_does() {
        let mut m = IoMax::unlimited("vdb");
        tg_set_limit(&mut m, " rbps=10485760 wiops=1000", 2).unwrap();
        assert_eq!((m.bps, m.iops), ([10485760, u64::MAX], [u32::MAX, 1000]));
        // A later write keeps what it does not name; max lifts a limit.
        tg_set_limit(&mut m, "rbps=max riops=99999999999", 2).unwrap();
        assert_eq!((m.bps, m.iops), ([u64::MAX, u64::MAX], [u32::MAX, 1000]));
        assert!(m.has_limits());
        assert!(tg_set_limit(&mut m, "rbps=0", 2).unwrap_err().contains("ERANGE"));
        assert!(tg_set_limit(&mut m, "rbps=1", 2).unwrap_err().contains("below 2"));
        assert!(tg_set_limit(&mut m, "rbps=1", 1).is_ok());
        assert!(tg_set_limit(&mut m, "rbw=5", 2).unwrap_err().contains("not an io.max key"));
        assert!(tg_set_limit(&mut m, "rbps=10M", 2).unwrap_err().contains("EINVAL"));
        assert!(tg_set_limit(&mut m, "rbps", 2).unwrap_err().contains("KEY=VALUE"));
    }
}
