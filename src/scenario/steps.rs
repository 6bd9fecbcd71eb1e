//! `[[steps]]`: workloads run one after the other on the same stack
//! (docs/scenario.md, "Steps"). Each entry is a workload table, as
//! `[workload]`, plus `trace = true|false`.

use super::tree::{describe, Obj, ScenarioError, Value};
use super::workload::{read_workload_table, Workload, WorkloadCtx};

/// One step: its workload, and whether its events are traced.
#[derive(Clone, Debug)]
pub struct Step {
    pub workload: Workload,
    pub trace: bool,
}

/// The `[[steps]]` entries, in order (none without the key). A scenario
/// has either `[workload]` or `[[steps]]`.
pub(crate) fn read_steps(o: &Obj, ctx: &WorkloadCtx) -> Result<Vec<Step>, ScenarioError> {
    let Some((items, an)) = o.opt_array("steps")? else { return Ok(Vec::new()) };
    if let Some(n) = o.node("workload") {
        return Err(o.err("workload", &n.at, "give either [workload] or [[steps]], not both"));
    }
    if items.is_empty() {
        return Err(o.err("steps", &an.at, "no steps: add [[steps]] tables"));
    }
    let mut steps = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Table(t) = &item.value else {
            return Err(o.err("steps", &an.at, format!("entry {} is {}, expected a table", i + 1, describe(&item.value))));
        };
        let s = Obj::child(o.doc, format!("steps[{i}]"), item.at.clone(), t);
        let trace = s.opt_bool("trace")?.map(|x| x.0).unwrap_or(true);
        let workload = read_workload_table(&s, ctx)?;
        steps.push(Step { workload, trace });
    }
    Ok(steps)
}
