//! Workloads made of one or more jobs whose sources are built once the
//! devices exist (fio, the discard tools, trace replay): the pieces every
//! such reader shares — finding the target device, resolving a file named
//! relative to the scenario, and adding the jobs to the engine.

use std::path::Path;
use std::rc::Rc;

use crate::bio::SECTOR_SHIFT;
use crate::engine::Engine;
use crate::genhd::Topology;
use crate::limits::QueueLimits;
use crate::profile::Behaviour;
use crate::sched::bfq_ioprio::Ioprio;
use crate::source::discard_tool::DiscardTarget;
use crate::source::pagecache::SharedCaches;
use crate::source::Source;

use super::disks::{dev_names, DiskSpec};
use super::tree::{Obj, ScenarioError};

/// Builds a job's source from the built devices and what the run's jobs
/// share (page caches).
pub type MakeSource = Rc<dyn Fn(&Topology, &Behaviour, &mut SharedCaches) -> Box<dyn Source>>;

/// One job of a workload: the task that runs it and its queue depth.
#[derive(Clone)]
pub struct JobSpec {
    pub pid: u32,
    pub comm: String,
    pub iodepth: u32,
    /// Units per submission.
    pub batch: u32,
    /// fio's `iodepth_batch_complete_min`.
    pub complete_min: u32,
    /// The task's I/O priority (`ioprio_set`; bfq weighs its queues by it).
    pub ioprio: Ioprio,
    /// The cgroup the task runs in: 1 + its index in the scenario's
    /// `[cgroups]`, 0 for the root group.
    pub cgroup: u16,
    /// Starts only once everything before it has finished (fio's
    /// `stonewall`): the jobs from here on run as a later engine phase.
    pub stonewall: bool,
    /// fio's engine submits asynchronously (libaio, io_uring): its report
    /// shows slat and counts clat from the submission's return.
    pub async_io: bool,
    pub make: MakeSource,
}

impl std::fmt::Debug for JobSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JobSpec {{ pid: {}, comm: {:?}, iodepth: {}, batch: {} }}", self.pid, self.comm, self.iodepth, self.batch)
    }
}

/// Add `jobs` to `engine`, in order (engine job i is `jobs[i]` when the
/// engine had none before).
pub fn add_jobs(engine: &mut Engine, jobs: &[JobSpec], beh: &Behaviour) {
    // A stonewall splits the jobs: those from it on start once the engine
    // is idle (every job before finished), before any later step.
    let split = jobs.iter().skip(1).position(|s| s.stonewall).map(|i| i + 1);
    let (now, later) = jobs.split_at(split.unwrap_or(jobs.len()));
    if !later.is_empty() {
        let (later, beh) = (later.to_vec(), beh.clone());
        engine.phases.push_front(Box::new(move |e: &mut Engine| add_jobs(e, &later, &beh)));
    }
    // The run's page caches: shared by its jobs, kept across steps.
    let mut shared = std::mem::take(&mut engine.caches);
    for s in now {
        let source = (s.make)(&engine.core.topo, beh, &mut shared);
        let j = engine.add_job(s.pid, &s.comm, source, s.iodepth, s.batch);
        engine.jobs[j].complete_min = s.complete_min.max(1);
        engine.jobs[j].stats.fio.async_engine = s.async_io;
        let task = engine.jobs[j].task as usize;
        engine.core.ioprio[task] = s.ioprio;
        engine.set_job_cgroup(j, s.cgroup);
    }
    engine.caches = shared;
}

/// A scenario device as a workload sees it before the stack is built.
#[derive(Clone, Debug)]
pub struct Target<'d> {
    pub name: String,
    /// The whole disk (or stacked device) whose queue serves it.
    pub disk: &'d DiskSpec,
    /// Partition start (0 for a whole device).
    pub start_sect: u64,
    pub nr_sectors: u64,
}

impl Target<'_> {
    pub fn limits(&self) -> &QueueLimits {
        &self.disk.queue.limits
    }

    pub fn bytes(&self) -> u64 {
        self.nr_sectors << SECTOR_SHIFT
    }

    /// The device as `blkdev_issue_discard` will see it (device id 0: for
    /// checking calls before the stack exists).
    pub fn discard_target(&self, beh: &Behaviour) -> DiscardTarget {
        DiscardTarget::with_limits(0, self.limits(), self.start_sect, self.bytes(), beh)
    }
}

/// The device called `name` (`/dev/` optional).
pub fn find_target<'d>(disks: &'d [DiskSpec], name: &str) -> Option<Target<'d>> {
    let name = name.strip_prefix("/dev/").unwrap_or(name);
    for d in disks {
        if d.name == name {
            return Some(Target { name: name.to_string(), disk: d, start_sect: 0, nr_sectors: d.nr_sectors });
        }
        if let Some(p) = d.partitions.iter().find(|p| p.name == name) {
            return Some(Target { name: name.to_string(), disk: d, start_sect: p.start, nr_sectors: p.nr_sectors });
        }
    }
    None
}

/// The device named by `key` (required).
pub fn device_key<'d>(w: &Obj, key: &str, disks: &'d [DiskSpec]) -> Result<Target<'d>, ScenarioError> {
    let (name, n) = w.opt_str(key)?.ok_or_else(|| w.err(key, &w.at, format!("missing: the device to use ({})", dev_names(disks))))?;
    find_target(disks, &name).ok_or_else(|| w.err(key, &n.at, format!("'{name}' is not a scenario device ({})", dev_names(disks))))
}

/// The device at the top of the stack: the last md/dm device when there
/// are any (they are built after what they use), else the only disk when
/// there is one disk and no partition.
pub fn top_device(disks: &[DiskSpec], nr_disks: usize) -> Option<&DiskSpec> {
    if disks.len() > nr_disks {
        return disks.last();
    }
    match disks {
        [d] if d.partitions.is_empty() => Some(d),
        _ => None,
    }
}

/// A file named by the scenario: relative to the scenario's directory.
pub fn scenario_relative(scenario: &str, path: &str) -> String {
    let p = Path::new(path);
    if p.is_absolute() {
        return path.to_string();
    }
    match Path::new(scenario).parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir.join(p).to_string_lossy().into_owned(),
        None => path.to_string(),
    }
}

/// Read a file the scenario names under `key`.
pub fn read_named_file(w: &Obj, key: &str) -> Result<Option<(String, String)>, ScenarioError> {
    let Some((path, n)) = w.opt_str(key)? else { return Ok(None) };
    let full = scenario_relative(&w.doc.file, &path);
    let text = std::fs::read(&full).map_err(|e| w.err(key, &n.at, format!("{full}: {e}")))?;
    let text = String::from_utf8(text).map_err(|_| w.err(key, &n.at, format!("{full}: not UTF-8 text")))?;
    Ok(Some((full, text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_relative_to_the_scenario() {
        assert_eq!(scenario_relative("dir/s.toml", "x.fio"), "dir/x.fio");
        assert_eq!(scenario_relative("s.toml", "x.fio"), "x.fio");
        assert_eq!(scenario_relative("dir/s.toml", "/abs/x.fio"), "/abs/x.fio");
    }
}
