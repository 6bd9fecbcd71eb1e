//! Scenario files: one TOML file describing the stack (disks, their queue
//! limits by sysfs name, partitions), the kernel profile and the workload.
//! See docs/scenario.md for the format.
//!
//! [`load`] reads and validates everything up front — every error names the
//! file, the line and the key — and [`Scenario::build`] turns the result
//! into an [`Engine`] ready to run. Each part of the file has its reader:
//! [`disks`] and [`workload`].

pub mod cgroups;
pub mod compare;
pub mod disks;
pub mod geometry;
pub mod host;
pub mod jobs;
pub mod multipath;
pub mod model;
pub mod loopdev;
pub mod nullb;
pub mod stack;
pub mod steps;
pub mod tree;
pub mod validate;
pub mod workload;
pub mod workload_discard;
pub mod workload_fio;
pub mod workload_replay;

use crate::engine::{Engine, EngineBuilder};
use crate::genhd::DevId;
use crate::submit::SimEvent;
use crate::profile::{self, Behaviour, Profile, SWITCHES};
use crate::source::bios::{syscall_flags, BioList, WritePlug};
use crate::source::BioSpec;

pub use disks::{DiskSpec, PartSpec};
pub use stack::{StackBody, StackSpec};
pub use tree::ScenarioError;
use tree::{apply_set, Doc, Obj, Value};
pub use workload::{BioEntry, DdSpec, DdTarget, Workload, WorkloadKind};

const ROOT_KEYS: &[&str] = &["name", "description", "kernel", "seed", "cpus", "host", "behaviour", "disks", "md", "dm", "workload", "steps", "compare", "cgroups", "validate"];

#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub profile: Profile,
    pub beh: Behaviour,
    pub seed: u64,
    pub disks: Vec<DiskSpec>,
    /// md arrays and dm devices, each after the devices it is built on.
    pub stacked: Vec<StackSpec>,
    /// The `[workload]` (none when the scenario has steps).
    pub workload: Workload,
    /// `[[steps]]`: workloads run one after the other on the same stack.
    pub steps: Vec<steps::Step>,
    /// The `[compare]` table's two sides, when given.
    pub compare: Option<compare::Compare>,
    /// `[cgroups.NAME]`: the groups jobs run in (index + 1 is a job's group).
    pub cgroups: Vec<cgroups::CgroupSpec>,
    /// `[host]`: the host CPU model, and `cpus`.
    pub host: host::HostSpec,
}

/// Read and validate `text` (the contents of `file`), with `--kernel` and
/// `--set` overrides applied.
pub fn load(file: &str, text: &str, kernel: Option<&str>, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let doc = Doc { file: file.to_string(), text: text.to_string() };
    let mut root = doc.parse()?;
    for s in sets {
        apply_set(&doc, &mut root, s)?;
    }
    let o = Obj::root(&doc, &root);
    let name = o.opt_str("name")?.map(|x| x.0);
    let description = o.opt_str("description")?.map(|x| x.0);
    let seed = o.opt_u64("seed")?.map(|x| x.0).unwrap_or(1);
    let profile = read_profile(&o, kernel)?;
    let beh = read_behaviour(&o, &profile)?;
    let cpus = read_cpus(&o)?;
    let host = host::read_host(&o, cpus)?;
    let fixed = validate::read_validate(&o)?.disk_model();
    let disks = disks::read_disks(&o, &beh, cpus, fixed.as_ref())?;
    let stacked = stack::read_stack(&o, &disks, &beh, cpus)?;
    // Stacked devices are workload targets too.
    let targets: Vec<DiskSpec> = disks.iter().cloned().chain(stacked.iter().map(StackSpec::as_target)).collect();
    let cgroups = cgroups::read_cgroups(&o, &targets, &beh)?;
    let ctx = workload::WorkloadCtx { targets: &targets, nr_disks: disks.len(), stacked: &stacked, seed, beh: &beh, cgroups: &cgroups };
    let steps = steps::read_steps(&o, &ctx)?;
    let mut workload = workload::read_workload(&o, &ctx)?;
    // The steps' warnings are the run's.
    workload.warnings.extend(steps.iter().flat_map(|s| s.workload.warnings.iter().cloned()));
    let compare = compare::read_compare(&o)?;
    o.finish(ROOT_KEYS)?;
    Ok(Scenario { file: file.to_string(), name, description, profile, beh, seed, disks, stacked, workload, steps, compare, cgroups, host })
}

/// `cpus`: the machine's CPU count (`nr_cpu_ids`), which drivers size
/// their hardware queues by; absent, each kind keeps its preset's queues.
fn read_cpus(o: &Obj) -> Result<Option<u32>, ScenarioError> {
    match o.opt_u64("cpus")? {
        None => Ok(None),
        Some((c @ 1..=8192, _)) => Ok(Some(c as u32)),
        Some((c, n)) => Err(o.err("cpus", &n.at, format!("{c} is not a CPU count from 1 to 8192 (NR_CPUS)"))),
    }
}

fn profile_names() -> String {
    profile::profiles().iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

fn read_profile(o: &Obj, kernel: Option<&str>) -> Result<Profile, ScenarioError> {
    let in_file = o.node("kernel");
    if let Some(k) = kernel {
        return profile::profile(k).ok_or_else(|| ScenarioError {
            file: "--kernel".into(),
            line: None,
            key: String::new(),
            msg: format!("unknown kernel profile '{k}' (known: {})", profile_names()),
            from_set: false,
        });
    }
    match in_file {
        None => Ok(profile::profile(profile::DEFAULT_PROFILE).expect("default profile exists")),
        Some(n) => {
            let k = match (&n.value, &n.raw) {
                (Value::Str(s), _) => s.clone(),
                (_, Some(raw)) => raw.clone(),
                (v, None) => return Err(o.err("kernel", &n.at, format!("expected a string such as \"6.12\", found {}", tree::describe(v)))),
            };
            profile::profile(&k).ok_or_else(|| o.err("kernel", &n.at, format!("unknown kernel profile '{k}' (known: {})", profile_names())))
        }
    }
}

fn read_behaviour(o: &Obj, p: &Profile) -> Result<Behaviour, ScenarioError> {
    let mut beh = p.behaviour.clone();
    let Some(t) = o.table("behaviour")? else { return Ok(beh) };
    for key in t.keys() {
        let Some(sw) = profile::switch(&key) else { continue };
        let n = t.node(&key).expect("key listed");
        let v = match (&n.value, &n.raw) {
            (Value::Str(s), _) => s.clone(),
            (Value::Int(i), _) => i.to_string(),
            (_, Some(raw)) => raw.clone(),
            (v, None) => return Err(t.err(&key, &n.at, format!("expected one of {}, found {}", sw.values, tree::describe(v)))),
        };
        (sw.set)(&mut beh, &v).map_err(|m| t.err(&key, &n.at, m))?;
    }
    let known: Vec<&str> = SWITCHES.iter().map(|s| s.name).collect();
    t.finish(&known)?;
    Ok(beh)
}

impl Scenario {
    /// Build the engine: devices in file order (each disk, then its
    /// partitions), then the workload's job.
    pub fn build(&self) -> Engine {
        let mut b = EngineBuilder::new(self.beh.clone());
        for d in &self.disks {
            let id = match &d.multipath {
                None => b.add_disk(&d.name, d.kind, d.nr_sectors, d.queue.clone(), d.model.clone()),
                Some(m) => add_multipath(&mut b, d, m, &self.beh),
            };
            for (i, p) in d.partitions.iter().enumerate() {
                b.add_partition(id, &p.name, i as u32 + 1, p.start, p.nr_sectors);
            }
        }
        for d in &self.disks {
            if let Some(f) = &d.loop_file {
                let (dev, backing) = (b.topo().by_name(&d.name), b.topo().by_name(&f.backing));
                let backing = crate::loopdev::LoopBacking { dev: backing.expect("validated"), start: f.offset };
                b.set_loop_backing(dev.expect("built"), backing);
            }
        }
        for s in &self.stacked {
            let driver = s.driver(b.topo(), &self.beh);
            b.add_bio_device(&s.name, s.kind, s.nr_sectors, s.queue.clone(), driver);
        }
        let mut engine = b.build();
        engine.core.cpu = crate::host_cpu::HostCpu::new(self.host.costs, self.host.cpus);
        for s in &self.stacked {
            let dev = engine.core.topo.by_name(&s.name).expect("built");
            let layout = s.layout(&engine.core.topo);
            engine.core.check.set_layout(dev, layout);
        }
        self.enable_throttle(&mut engine);
        self.enable_failover(&mut engine);
        add_workload(&mut engine, &self.workload, &self.beh, self.seed);
        // Steps: the first now, each later one once the stack is idle.
        for (i, step) in self.steps.iter().enumerate() {
            let (step, beh, seed) = (step.clone(), self.beh.clone(), self.seed);
            let setup = move |e: &mut Engine| {
                e.core.tracer.pause(!step.trace);
                add_workload(e, &step.workload, &beh, seed);
            };
            if i == 0 {
                setup(&mut engine);
            } else {
                engine.phases.push_back(Box::new(setup));
            }
        }
        engine
    }
}

impl Scenario {
    /// blk-throttle with the groups' io.max limits, when any group has some.
    fn enable_throttle(&self, engine: &mut Engine) {
        let mut limits = Vec::new();
        for (i, g) in self.cgroups.iter().enumerate() {
            for m in &g.io_max {
                let dev = engine.core.topo.by_name(&m.device).expect("validated device");
                limits.push((dev, i as u16 + 1, m.bps, m.iops));
            }
        }
        if !limits.is_empty() {
            engine.enable_throttle(&limits);
        }
    }
}

/// An nvme namespace with several paths: every path's disk, then the head
/// (`nvme_mpath_set_live`), each path a disk with the namespace's queue and
/// model, the head bio-based with the same limits. In the head's list the
/// paths come in the reverse of their numbers: in the 6.1 and 6.12 guests
/// the namespace that joined the head first got its disk last. A policy
/// other than the default was written after the head went live. Returns
/// the head.
fn add_multipath(b: &mut EngineBuilder, d: &DiskSpec, m: &multipath::MultipathSpec, beh: &Behaviour) -> DevId {
    use crate::nvme_multipath::{IoPolicy, NsHead, NsPath};
    let names = multipath::path_names(&d.name, m.ana.len());
    let mut paths: Vec<NsPath> = names.iter().zip(&m.ana).map(|(name, &ana)| NsPath::new(b.add_disk(name, d.kind, d.nr_sectors, d.queue.clone(), d.model.clone()), ana)).collect();
    paths.reverse();
    let mut head_queue = d.queue.clone();
    // Bio-based: no scheduler, BLKDEV_DEFAULT_RQ in nr_requests (6.1's sysfs shows 128).
    (head_queue.attrs.scheduler, head_queue.attrs.nr_requests) = (crate::limits::Elevator::None, 128);
    let cleared = beh.nvme_iopolicy_clears_path && m.iopolicy != IoPolicy::Numa;
    let mut head = NsHead::new(paths, m.iopolicy, cleared);
    for &(path, at) in &m.fails {
        // Path Y sits at m.ana.len() - 1 - Y in the reversed list.
        head.fail_path_at(m.ana.len() - 1 - path, at);
    }
    b.add_bio_device(&d.name, d.kind, d.nr_sectors, head_queue, Box::new(head))
}

impl Scenario {
    /// nvme multipath failover, when a path is failed: every path disk
    /// with its head, and the head's work due at each failure.
    fn enable_failover(&self, engine: &mut Engine) {
        let mut f = crate::nvme_multipath::Failover::default();
        for d in self.disks.iter().filter(|d| d.multipath.as_ref().is_some_and(|m| !m.fails.is_empty())) {
            let m = d.multipath.as_ref().expect("filtered");
            let head = engine.core.topo.by_name(&d.name).expect("built");
            for name in multipath::path_names(&d.name, m.ana.len()) {
                f.head_of.push((engine.core.topo.by_name(&name).expect("built"), head));
            }
            for &(_, at) in &m.fails {
                engine.core.schedule(at, SimEvent::DriverWork { dev: head });
            }
        }
        if !f.head_of.is_empty() {
            engine.core.mpath = Some(Box::new(f));
        }
    }
}

/// Add a workload's jobs to the engine.
fn add_workload(engine: &mut Engine, w: &Workload, beh: &Behaviour, seed: u64) {
    let dev = |e: &Engine, name: &str| -> DevId { e.core.topo.by_name(name).expect("validated device") };
    match &w.kind {
        WorkloadKind::None => {}
        WorkloadKind::Dd(dd) => {
            let job = jobs::JobSpec { cgroup: w.cgroup, ..dd.job(seed, w.pid, &w.comm) };
            jobs::add_jobs(engine, &[job], beh);
        }
        WorkloadKind::Bios { bios, iodepth, batch, plug } => {
            let specs = bios
                .iter()
                .map(|e| {
                    let flags = e.flags | if e.syscall { syscall_flags(e.op, e.flags, e.size, *iodepth, beh) } else { 0 };
                    let spec = BioSpec { dev: dev(engine, &e.device), op: e.op, flags, sector: e.sector, bvecs: e.bvecs.clone(), size: e.size };
                    (spec, e.repeat, e.stride)
                })
                .collect();
            // A data write is the O_DIRECT pwritev2 (iodepth 1) or AIO
            // iocb it stands for: in blkdev_write_iter's plug up to 6.4.
            let write_plug = match (beh.blkdev_write_plug, *iodepth) {
                (false, _) => WritePlug::None,
                (true, 1) => WritePlug::Sleeps,
                (true, _) => WritePlug::Finished,
            };
            let source = BioList::new(specs, *plug).with_write_plug(write_plug);
            let j = engine.add_job(w.pid, &w.comm, Box::new(source), *iodepth, *batch);
            engine.set_job_cgroup(j, w.cgroup);
        }
        WorkloadKind::Jobs(jobs) => jobs::add_jobs(engine, jobs, beh),
    }
}
