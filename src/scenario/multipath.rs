//! `[disks.NAME.multipath]`: an NVMe namespace reached through several
//! controllers of one subsystem, with native multipath on
//! (`nvme_core.multipath=Y`, the default): the disk NAME becomes the
//! bio-based head ([`crate::nvme_multipath`]) and each controller's path a
//! request-based disk of its own, `nvmeXcYnZ` (hidden in the kernel).

use crate::genhd::DiskKind;
use crate::nvme_multipath::{AnaState, IoPolicy};
use crate::profile::Behaviour;

use super::tree::{describe, Obj, ScenarioError, Value};

const MULTIPATH_KEYS: &[&str] = &["paths", "iopolicy", "ana", "fail"];
const FAIL_KEYS: &[&str] = &["path", "at_us"];

/// The namespace's paths and the subsystem's policy.
#[derive(Clone, Debug, PartialEq)]
pub struct MultipathSpec {
    pub iopolicy: IoPolicy,
    /// Per path (controller), its ANA state.
    pub ana: Vec<AnaState>,
    /// (path number, time ns) of each controller taken down during the run.
    pub fails: Vec<(usize, u64)>,
}

/// `[disks.NAME.multipath]`: `paths` (default 2), `iopolicy` (default
/// `numa`, the module's default), `ana` (one state per path; default all
/// optimized). Only for `kind = "nvme"`.
pub(crate) fn read_multipath(d: &Obj, kind: DiskKind, beh: &Behaviour) -> Result<Option<MultipathSpec>, ScenarioError> {
    let Some(m) = d.table("multipath")? else { return Ok(None) };
    if kind != DiskKind::Nvme {
        return Err(d.err("multipath", &m.at, "only an nvme disk has multipath"));
    }
    let paths = match m.opt_u64("paths")? {
        None => 2,
        Some((n @ 1..=16, _)) => n as usize,
        Some((n, node)) => return Err(m.err("paths", &node.at, format!("{n}: a namespace has 1 to 16 paths here"))),
    };
    let iopolicy = match m.opt_str("iopolicy")? {
        None => IoPolicy::Numa,
        Some((s, node)) => IoPolicy::parse(&s, beh.nvme_iopolicy_queue_depth).map_err(|e| m.err("iopolicy", &node.at, e))?,
    };
    let mut ana = vec![AnaState::Optimized; paths];
    if let Some((items, node)) = m.opt_array("ana")? {
        if items.len() != paths {
            return Err(m.err("ana", &node.at, format!("{} state(s) for {paths} path(s)", items.len())));
        }
        for (slot, item) in ana.iter_mut().zip(items) {
            let Value::Str(s) = &item.value else {
                return Err(m.err("ana", &item.at, format!("expected an ANA state, found {}", describe(&item.value))));
            };
            *slot = AnaState::parse(s).ok_or_else(|| m.err("ana", &item.at, format!("'{s}' is not optimized, non-optimized, inaccessible, persistent-loss or change")))?;
        }
    }
    let fails = read_fails(&m, paths)?;
    m.finish(MULTIPATH_KEYS)?;
    Ok(Some(MultipathSpec { iopolicy, ana, fails }))
}

/// `fail = [{ path = 1, at_us = 20000 }, …]`: path Y (`nvmeXcYnZ`) loses its
/// controller at that time of the run.
fn read_fails(m: &Obj, paths: usize) -> Result<Vec<(usize, u64)>, ScenarioError> {
    let Some((items, _)) = m.opt_array("fail")? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Table(t) = &item.value else {
            return Err(m.err("fail", &item.at, format!("expected a table {{ path = N, at_us = T }}, found {}", describe(&item.value))));
        };
        let f = Obj::child(m.doc, format!("{}.fail[{i}]", m.path), item.at.clone(), t);
        let need = |key: &str| f.opt_u64(key)?.ok_or_else(|| f.err(key, &item.at, "missing"));
        let (path, node) = need("path")?;
        if path as usize >= paths {
            return Err(f.err("path", &node.at, format!("path {path} of {paths} (paths are numbered from 0)")));
        }
        let (at_us, _) = need("at_us")?;
        f.finish(FAIL_KEYS)?;
        out.push((path as usize, at_us * 1000));
    }
    Ok(out)
}

/// The path disks' names: `nvme0n1` → `nvme0c0n1`, `nvme0c1n1`, … (the
/// kernel's `nvme%dc%dn%d`); any other name gets `c<i>` appended.
pub fn path_names(head: &str, paths: usize) -> Vec<String> {
    let split = head.strip_prefix("nvme").and_then(|rest| rest.find('n').map(|i| (4 + i, &head[4 + i..])));
    (0..paths)
        .map(|i| match split {
            Some((at, ns)) => format!("{}c{i}{ns}", &head[..at]),
            None => format!("{head}c{i}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_names_follow_the_kernel() {
        assert_eq!(path_names("nvme0n1", 2), ["nvme0c0n1", "nvme0c1n1"]);
        assert_eq!(path_names("nvme12n3", 1), ["nvme12c0n3"]);
        assert_eq!(path_names("fast", 2), ["fastc0", "fastc1"]);
    }
}
