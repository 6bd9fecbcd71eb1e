//! The tables that name a run's devices and tasks, which the Python API
//! hands out beside the event columns.

use super::Task;
use crate::genhd::Topology;

/// (name, major, minor) of each device, by id.
pub fn device_table(topo: &Topology) -> Vec<(String, u32, u32)> {
    topo.devs.iter().map(|d| (d.name.clone(), d.major, d.minor)).collect()
}

/// (pid, comm) of each task, by id.
pub fn task_table(tasks: &[Task]) -> Vec<(u32, String)> {
    tasks.iter().map(|t| (t.pid, t.comm.clone())).collect()
}
