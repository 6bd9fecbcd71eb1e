//! The simulation: a stack of devices, the jobs that submit to it, and the
//! event loop that advances simulated time from one completion to the next.

use std::rc::Rc;
use std::time::Instant;

use crate::bio::{Bio, BioId, BvecIter};
use crate::disk::{DiskModel, ServiceModel};
use crate::genhd::{DevId, DiskKind, Driver, Queue, Topology};
use crate::mq::{blk_mq_complete_request, blk_mq_submit_bio, RequestQueue};
use crate::profile::Behaviour;
use crate::source::{IoUnit, Source};
use crate::submit::{submit_bio, BioDriver, BlockCore, SimEvent, Stack};

/// A submitter: one task running a [`Source`].
pub struct Job {
    pub task: u32,
    pub source: Box<dyn Source>,
    /// Units allowed in flight (1 = synchronous).
    pub iodepth: u32,
    /// Root bios still outstanding per in-flight unit slot.
    slots: Vec<u32>,
    free_slots: Vec<u32>,
    in_flight: u32,
    finished: bool,
    pub units_done: u64,
    pub errors: u64,
}

/// Builds the device stack before a run.
pub struct EngineBuilder {
    topo: Topology,
    beh: Behaviour,
    queues: Vec<(DevId, ServiceModel)>,
    drivers: Vec<Option<Box<dyn BioDriver>>>,
}

impl EngineBuilder {
    pub fn new(beh: Behaviour) -> Self {
        EngineBuilder { topo: Topology::default(), beh, queues: Vec::new(), drivers: Vec::new() }
    }

    pub fn topo(&self) -> &Topology {
        &self.topo
    }

    /// A request-based disk.
    pub fn add_disk(&mut self, name: &str, kind: DiskKind, nr_sectors: u64, queue: Queue, model: ServiceModel) -> DevId {
        let driver = Driver::Mq(self.queues.len());
        let id = self.topo.add_disk(name, kind, nr_sectors, queue, driver);
        self.queues.push((id, model));
        id
    }

    /// A bio-based device (md, dm, a test driver).
    pub fn add_bio_device(&mut self, name: &str, kind: DiskKind, nr_sectors: u64, queue: Queue, driver: Box<dyn BioDriver>) -> DevId {
        let d = Driver::BioBased(self.drivers.len());
        self.drivers.push(Some(driver));
        self.topo.add_disk(name, kind, nr_sectors, queue, d)
    }

    pub fn add_partition(&mut self, disk: DevId, name: &str, index: u32, start: u64, nr_sectors: u64) -> DevId {
        self.topo.add_partition(disk, name, index, start, nr_sectors)
    }

    pub fn build(self) -> Engine {
        let queues = self
            .queues
            .into_iter()
            .enumerate()
            .map(|(i, (dev, model))| RequestQueue::new(i as u32, dev, DiskModel::new(model)))
            .collect();
        Engine { core: BlockCore::new(self.topo, self.beh), queues, drivers: self.drivers, jobs: Vec::new() }
    }
}

pub struct Engine {
    pub core: BlockCore,
    pub queues: Vec<RequestQueue>,
    drivers: Vec<Option<Box<dyn BioDriver>>>,
    pub jobs: Vec<Job>,
}

impl Stack for Engine {
    fn core(&mut self) -> &mut BlockCore {
        &mut self.core
    }

    /// `__submit_bio`: a driver's `->submit_bio`, or `blk_mq_submit_bio`.
    fn __submit_bio(&mut self, bio: BioId) {
        let dev = self.core.bio(bio).dev;
        match self.core.topo.dev(dev).driver {
            Driver::Mq(q) => blk_mq_submit_bio(&mut self.queues[q], &mut self.core, bio),
            Driver::BioBased(d) => {
                // Only one ->submit_bio runs at a time per task, so the
                // driver can be taken out while it runs.
                let mut drv = self.drivers[d].take().expect("driver not re-entered");
                drv.submit_bio(&mut self.core, bio);
                self.drivers[d] = Some(drv);
            }
        }
    }
}

/// The outcome of [`Engine::run`].
#[derive(Clone, Debug)]
pub struct RunStats {
    pub sim_time_ns: u64,
    pub wall_time_s: f64,
    pub bios: u64,
    pub peak_live_bios: usize,
    pub units: u64,
    pub errors: u64,
}

impl Engine {
    pub fn add_job(&mut self, pid: u32, comm: &str, source: Box<dyn Source>, iodepth: u32) -> usize {
        let task = self.core.add_task(pid, comm);
        self.jobs.push(Job {
            task,
            source,
            iodepth: iodepth.max(1),
            slots: Vec::new(),
            free_slots: Vec::new(),
            in_flight: 0,
            finished: false,
            units_done: 0,
            errors: 0,
        });
        self.jobs.len() - 1
    }

    /// Submit one bio from task `task` now, outside any job (tests, tools).
    pub fn submit_root(&mut self, task: u32, spec: crate::source::BioSpec, owner: u32, cookie: u32) -> BioId {
        let bio = Bio {
            dev: spec.dev,
            op: spec.op,
            flags: spec.flags,
            iter: BvecIter { sector: spec.sector, size: spec.size, idx: 0, bvec_done: 0 },
            bvecs: Rc::from(spec.bvecs),
            traced: false,
            remapped: false,
            parent: None,
            remaining: 1,
            in_request: false,
            owner,
            cookie,
        };
        let id = self.core.alloc_bio(bio);
        self.core.current = task;
        submit_bio(self, id);
        id
    }

    /// Issue units for job `j` while it has room and work.
    fn fill_job(&mut self, j: usize) {
        loop {
            let job = &mut self.jobs[j];
            if job.finished || job.in_flight >= job.iodepth {
                return;
            }
            let Some(unit) = job.source.next_unit() else {
                job.finished = true;
                return;
            };
            self.issue_unit(j, unit);
        }
    }

    fn issue_unit(&mut self, j: usize, unit: IoUnit) {
        let job = &mut self.jobs[j];
        let slot = match job.free_slots.pop() {
            Some(s) => s,
            None => {
                job.slots.push(0);
                (job.slots.len() - 1) as u32
            }
        };
        // Count the bios first: a bio may complete (fail) during submission.
        job.slots[slot as usize] = unit.bios.len() as u32 + 1;
        job.in_flight += 1;
        let task = job.task;
        for spec in unit.bios {
            self.submit_root(task, spec, j as u32, slot);
        }
        self.unit_bio_done(j, slot);
    }

    fn unit_bio_done(&mut self, j: usize, slot: u32) {
        let job = &mut self.jobs[j];
        let left = &mut job.slots[slot as usize];
        *left -= 1;
        if *left == 0 {
            job.free_slots.push(slot);
            job.in_flight -= 1;
            job.units_done += 1;
        }
    }

    /// Report finished root bios to their jobs and let the jobs go on.
    fn reap(&mut self) {
        while !self.core.done_roots.is_empty() {
            let done = std::mem::take(&mut self.core.done_roots);
            let mut woken = Vec::new();
            for d in done {
                let j = d.owner as usize;
                if j >= self.jobs.len() {
                    continue;
                }
                if d.status != 0 {
                    self.jobs[j].errors += 1;
                }
                self.unit_bio_done(j, d.cookie);
                if !woken.contains(&j) {
                    woken.push(j);
                }
            }
            for j in woken {
                self.fill_job(j);
            }
        }
    }

    /// Handle one timed event.
    fn handle(&mut self, ev: SimEvent) {
        match ev {
            SimEvent::RqComplete { queue, rq } => {
                blk_mq_complete_request(&mut self.queues[queue as usize], &mut self.core, rq);
            }
            SimEvent::JobWake { job } => self.fill_job(job as usize),
        }
    }

    /// Run every job to completion.
    pub fn run(&mut self) -> RunStats {
        let wall = Instant::now();
        for j in 0..self.jobs.len() {
            self.fill_job(j);
        }
        self.reap();
        while let Some(ev) = self.core.pop_event() {
            self.handle(ev);
            self.reap();
        }
        RunStats {
            sim_time_ns: self.core.now,
            wall_time_s: wall.elapsed().as_secs_f64(),
            bios: self.core.bios_allocated,
            peak_live_bios: self.core.bios_live_peak,
            units: self.jobs.iter().map(|j| j.units_done).sum(),
            errors: self.jobs.iter().map(|j| j.errors).sum(),
        }
    }

    /// Run timed events until nothing is pending (for bios submitted with
    /// [`Engine::submit_root`]).
    pub fn run_until_idle(&mut self) {
        self.reap();
        while let Some(ev) = self.core.pop_event() {
            self.handle(ev);
            self.reap();
        }
    }
}
