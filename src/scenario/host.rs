//! `[host]`: the host CPU model ([`crate::host_cpu`]).

use crate::host_cpu::{CpuCosts, CLASSES};

use super::tree::Obj;
use super::ScenarioError;

/// The scenario's host: the CPU costs (`None`: no CPU time) and `cpus`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostSpec {
    pub costs: Option<CpuCosts>,
    pub cpus: Option<u32>,
}

/// Every per-operation key of `[host]`, with the field it sets.
type Field = fn(&mut CpuCosts) -> &mut u32;
const COST_KEYS: &[(&str, Field)] = &[
    ("syscall_ns", |c| &mut c.syscall),
    ("unit_ns", |c| &mut c.unit),
    ("bio_alloc_ns", |c| &mut c.bio_alloc),
    ("page_ns", |c| &mut c.page),
    ("submit_bio_ns", |c| &mut c.submit_bio),
    ("split_ns", |c| &mut c.split),
    ("merge_attempt_ns", |c| &mut c.merge_attempt),
    ("get_tag_ns", |c| &mut c.get_tag),
    ("queue_rq_ns", |c| &mut c.queue_rq),
    ("flush_plug_ns", |c| &mut c.flush_plug),
    ("irq_ns", |c| &mut c.irq),
    ("complete_rq_ns", |c| &mut c.complete_rq),
    ("bio_endio_ns", |c| &mut c.bio_endio),
    ("unit_complete_ns", |c| &mut c.unit_complete),
];

/// `[host]`: `cpu = "none" | "server" | "vm" | "tcg"`, then any cost overridden in
/// nanoseconds (`irq_ns = 500`); a cost key needs a class to start from.
pub fn read_host(o: &Obj, cpus: Option<u32>) -> Result<HostSpec, ScenarioError> {
    let Some(t) = o.table("host")? else { return Ok(HostSpec { costs: None, cpus }) };
    let mut costs = match t.opt_str("cpu")? {
        None => None,
        Some((name, n)) => match (name.as_str(), CpuCosts::class(&name)) {
            ("none", _) => None,
            (_, Some(c)) => Some(c),
            (_, None) => return Err(t.err("cpu", &n.at, format!("unknown CPU class {name:?}; expected one of {}", CLASSES.join(", ")))),
        },
    };
    for &(key, field) in COST_KEYS {
        let Some((v, n)) = t.opt_u64(key)? else { continue };
        let Some(c) = costs.as_mut() else {
            return Err(t.err(key, &n.at, "a cost needs `cpu` set to a CPU class (server, vm, tcg) to start from"));
        };
        *field(c) = u32::try_from(v).map_err(|_| t.err(key, &n.at, format!("{v} ns is more than a CPU cost can be")))?;
    }
    let mut known = vec!["cpu"];
    known.extend(COST_KEYS.iter().map(|k| k.0));
    t.finish(&known)?;
    Ok(HostSpec { costs, cpus })
}
