//! Events as columns: one little-endian array per field, plus the tables
//! that name devices, tasks, actions and rwbs codes. The Python API wraps
//! them as DataFrame columns without touching events one by one.

use std::collections::HashMap;

use super::{rwbs, Event, Task};
use crate::genhd::Topology;

/// The columns of an event list.
#[derive(Default)]
pub struct EventColumns {
    pub time_ns: Vec<u8>,
    pub dev: Vec<u8>,
    pub action: Vec<u8>,
    pub rwbs: Vec<u8>,
    pub sector: Vec<u8>,
    pub bytes: Vec<u8>,
    pub task: Vec<u8>,
    pub error: Vec<u8>,
    pub arg: Vec<u8>,
    pub from_dev: Vec<u8>,
    /// Distinct rwbs strings; the `rwbs` column holds indexes (u16).
    pub rwbs_names: Vec<String>,
    pub n: usize,
}

impl EventColumns {
    pub fn build(events: &[Event]) -> Self {
        let mut c = EventColumns { n: events.len(), ..Default::default() };
        let mut codes: HashMap<String, u16> = HashMap::new();
        for e in events {
            c.time_ns.extend_from_slice(&e.time.to_le_bytes());
            c.dev.extend_from_slice(&e.dev.to_le_bytes());
            c.action.push(e.action as u8);
            let s = rwbs(e.op, e.flags, e.bytes);
            let next = codes.len() as u16;
            let code = *codes.entry(s.clone()).or_insert_with(|| {
                c.rwbs_names.push(s);
                next
            });
            c.rwbs.extend_from_slice(&code.to_le_bytes());
            c.sector.extend_from_slice(&e.sector.to_le_bytes());
            c.bytes.extend_from_slice(&e.bytes.to_le_bytes());
            c.task.extend_from_slice(&e.task.to_le_bytes());
            c.error.extend_from_slice(&e.error.to_le_bytes());
            c.arg.extend_from_slice(&e.arg.to_le_bytes());
            c.from_dev.extend_from_slice(&e.from_dev.to_le_bytes());
        }
        c
    }
}

/// (name, major, minor) of each device, by id.
pub fn device_table(topo: &Topology) -> Vec<(String, u32, u32)> {
    topo.devs.iter().map(|d| (d.name.clone(), d.major, d.minor)).collect()
}

/// (pid, comm) of each task, by id.
pub fn task_table(tasks: &[Task]) -> Vec<(u32, String)> {
    tasks.iter().map(|t| (t.pid, t.comm.clone())).collect()
}
