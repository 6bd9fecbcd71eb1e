//! The simulation: a stack of devices, the jobs that submit to it, and the
//! event loop that advances simulated time from one completion to the next.
//!
//! A job is one task running a [`Source`]: it keeps up to `iodepth` I/O
//! units in flight and submits `batch` units per submission (one system call
//! for psync, an `io_submit` for libaio), inside a plug when the kernel
//! would have one. A task that sleeps for a tag in the middle of a
//! submission is suspended — its `current->bio_list` and the rest of its
//! submission kept — and resumes when a completion hands it a tag.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::time::Instant;

use crate::bio::{req, BioId, Op, PAGE_SIZE};
use crate::disk::{DiskModel, ServiceModel};
use crate::genhd::{DevId, DiskKind, Driver, Queue, Topology};
use crate::loopdev::{do_req_filebacked, LoopBacking, LoopCmd};
use crate::mq::{self, blk_mq_complete_request, blk_mq_submit_bio, RequestQueue, Submit};
use crate::profile::{Behaviour, CryptoFallback};
use crate::source::{BioSpec, IoUnit, Source, UnitKind};
use crate::stats::clat::LatStat;
use crate::submit::{resume_submit, submit_bio_from_thread, submit_bio_nocheck_from_thread, BioDriver, BlockCore, RootDone, SimEvent, Stack, Suspended};

/// A submitter: one task running a [`Source`].
pub struct Job {
    pub task: u32,
    pub source: Box<dyn Source>,
    /// Units allowed in flight (1 = synchronous).
    pub iodepth: u32,
    /// Units per submission (fio's `iodepth_batch_submit`).
    pub batch: u32,
    /// The units in flight, by slot.
    slots: Vec<UnitSlot>,
    free_slots: Vec<u32>,
    in_flight: u32,
    finished: bool,
    /// The submission under way, in order: its `queued` units first, of
    /// which `walked` are submitted (a `Vec`: `run_job_here` walks it, the
    /// ring's pops cost more), and beside them their bio lists. The lists
    /// stay when the walk is done, refilled in place by the next
    /// submissions' units ([`Source::next_unit_into`],
    /// [`Source::next_units_like`]).
    current: Vec<Submitting>,
    lists: Vec<Vec<BioSpec>>,
    queued: u32,
    walked: u32,
    /// The submission installed a plug it must finish.
    plugged: bool,
    /// The task sleeps for the submission's I/O before it finishes that
    /// plug, so the scheduler flushes it first (`from_schedule`).
    plug_sleeps: bool,
    pub units_done: u64,
    pub errors: u64,
    /// fio's `iodepth_batch_complete_min`: once the queue is full, the job
    /// waits for this many completions before it submits again (1: refill
    /// as soon as a slot frees).
    pub complete_min: u32,
    /// Per-kind completion statistics of the units (fio's clat, io_bytes).
    pub stats: JobStats,
    /// A unit fetched from the source but held back (its time has not come,
    /// or it must wait for the job's I/O to drain).
    pending: Option<IoUnit>,
    /// The slot of a synchronous unit the task is waiting on.
    sync_slot: Option<u32>,
    /// Completions still to wait for before submitting (`complete_min`).
    reaping: u32,
    /// A `JobWake` is scheduled at this time.
    wake_at: Option<u64>,
    /// Units completed since the job's last submission: the events its
    /// next `io_getevents` reaps ([`crate::host_cpu`]).
    unreaped: u32,
    /// Units requeued by short completions, submitted before new ones.
    requeued: VecDeque<IoUnit>,
}

/// What a job's units did, per [`UnitKind`] index (read, write, trim, sync).
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    /// Completion latency (submission to completion) of each unit.
    pub clat: [LatStat; 4],
    pub bytes: [u64; 4],
    /// When the job submitted its first unit and completed its last.
    pub first_submit_ns: Option<u64>,
    pub last_complete_ns: u64,
    /// The rest of what fio counts ([`crate::stats::fio_stats`]).
    pub fio: crate::stats::fio_stats::FioStats,
}

/// A unit in flight: what its completion needs, in one place (one lookup
/// per bio that ends).
#[derive(Default)]
struct UnitSlot {
    /// Root bios still outstanding, and one for the submission while it
    /// is under way.
    left: u32,
    /// What the unit counts as.
    kind: UnitKind,
    /// When the unit started, its bytes, and when its submission returned
    /// (fio's issue time).
    start: u64,
    bytes: u64,
    issued: u64,
    /// The unit to submit for the rest of a short one when it completes
    /// ([`IoUnit::requeue`]).
    requeue: Option<Box<IoUnit>>,
}

impl Job {
    /// Take a unit in flight: a slot, and place `n` of the submission under
    /// way, whose bio list holds the unit's bios. The unit is read in
    /// place, not moved in (one per unit, a copy as costly as the rest).
    #[inline(always)]
    fn queue_unit(&mut self, n: usize, unit: &mut IoUnit, now: u64) {
        self.in_flight += 1;
        let slot = self.take_slot(n, unit, now);
        // A free slot has no unit to requeue (`unit_complete` took it).
        if unit.requeue.is_some() {
            self.slots[slot as usize].requeue = unit.requeue.take();
        }
        if unit.sync {
            self.sync_slot = Some(slot);
        }
    }

    /// Take units `places` of the submission in flight, each like `unit`
    /// (taken by [`Self::queue_unit`]) in all but its bios, which are in
    /// their lists already, and with no unit to requeue.
    #[inline(always)]
    fn queue_units_like(&mut self, places: std::ops::Range<usize>, unit: &IoUnit, now: u64) {
        self.in_flight += places.len() as u32;
        for n in places {
            self.take_slot(n, unit, now);
        }
    }

    /// A slot for the unit `unit` stands for, in place `n` of the
    /// submission: its references and what its completion counts.
    #[inline(always)]
    fn take_slot(&mut self, n: usize, unit: &IoUnit, now: u64) -> u32 {
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.slots.push(UnitSlot::default());
            (self.slots.len() - 1) as u32
        });
        let s = &mut self.slots[slot as usize];
        self.current[n] = Submitting { next: 0, slot };
        // One reference per bio, and one for the submission itself.
        s.left = self.lists[n].len() as u32 + 1;
        (s.kind, s.start, s.bytes, s.issued) = (unit.kind, unit.started_ns.unwrap_or(now).min(now), unit.bytes, now);
        if let Some(k) = unit.kind.index() {
            self.stats.fio.issued(k);
        }
        slot
    }
}

impl Job {
    /// One reference on the unit in `slot` dropped (a bio of it ended, or
    /// its submission finished), at `now`: inline, as most drops leave the
    /// unit in flight. A method of the job, so callers that already hold
    /// it look it up once.
    #[inline(always)]
    fn unit_bio_done(&mut self, slot: u32, now: u64) {
        let left = &mut self.slots[slot as usize].left;
        *left -= 1;
        if *left == 0 {
            self.unit_complete(slot, now);
        }
    }

    /// The submission of the unit in `slot` returned at `now` (fio's issue
    /// time) and drops its own reference: one lookup of the slot for both.
    #[inline(always)]
    fn unit_issued(&mut self, slot: u32, now: u64) {
        let s = &mut self.slots[slot as usize];
        s.issued = now;
        s.left -= 1;
        if s.left == 0 {
            self.unit_complete(slot, now);
        }
    }

    /// The unit in `slot` completed at `now`: its slot is free, and what
    /// the tool counts of it is counted.
    fn unit_complete(&mut self, slot: u32, now: u64) {
        self.free_slots.push(slot);
        self.in_flight -= 1;
        self.units_done += 1;
        self.unreaped += 1;
        self.reaping = self.reaping.saturating_sub(1);
        // What the slot says of the unit, read in one lookup.
        let s = &self.slots[slot as usize];
        let (requeue, counted) = (s.requeue.is_some(), s.kind.index());
        if requeue {
            self.requeue(slot);
        }
        if self.sync_slot == Some(slot) {
            self.sync_slot = None;
        }
        if let Some(k) = counted {
            self.count_completion(k, slot, now);
        }
        self.stats.last_complete_ns = now;
    }

    /// The rest of the short unit in `slot` goes ahead of new ones.
    #[cold]
    #[inline(never)]
    fn requeue(&mut self, slot: u32) {
        if let Some(rest) = self.slots[slot as usize].requeue.take() {
            self.requeued.push_back(*rest);
        }
    }

    /// What the tool counts of the completed unit in `slot`, of kind index
    /// `k`: its latency and bytes. Out of line, so the path of uncounted
    /// units (dd, explicit bios) stays short.
    #[inline(never)]
    fn count_completion(&mut self, k: usize, slot: u32, now: u64) {
        let s = &self.slots[slot as usize];
        let (start, bytes, issued) = (s.start, s.bytes, s.issued);
        let clat = self.stats.fio.completed(k, start, issued, now, bytes);
        self.stats.clat[k].add(clat);
        self.stats.bytes[k] += bytes;
    }
}

/// The source's next unit, its bios built in place `n` of the submission;
/// marks the job finished when there is none.
fn next_from_source(job: &mut Job, n: usize, now: u64) -> Option<IoUnit> {
    if job.finished {
        return None;
    }
    let u = job.source.next_unit_into(now, &mut job.lists[n]);
    job.finished = u.is_none();
    u
}

/// A unit of the submission under way, in its slot: its bios from `next`
/// on are still to be submitted.
#[derive(Clone, Copy, Default)]
struct Submitting {
    next: u32,
    slot: u32,
}

/// What a task was doing when it went to sleep.
#[derive(Default)]
struct TaskState {
    suspended: Option<Suspended>,
    /// The sleep happened inside a per-`__submit_bio` plug (6.12).
    own_plug: bool,
    blocked: bool,
    job: Option<usize>,
    /// A driver's thread (md's raid5d): the driver's index, and whether the
    /// thread holds the plug it runs in.
    thread: Option<usize>,
    thread_plug: bool,
    /// A loop device's worker: the loop queue's index.
    loop_worker: Option<u32>,
    /// The task's cgroup (0: the root group): its bios' `bi_blkg`.
    blkcg: u16,
    /// The kworker running blk-throttle's dispatch work.
    throtl_worker: bool,
    /// A driver's thread already ran at one of this submission's plug
    /// ends ([`Engine::thread_runs_at_unplug`]).
    woke_thread: bool,
}

/// Builds the device stack before a run.
pub struct EngineBuilder {
    topo: Topology,
    beh: Behaviour,
    queues: Vec<(DevId, ServiceModel)>,
    drivers: Vec<Option<Box<dyn BioDriver>>>,
    /// Loop devices and their files.
    loops: Vec<(DevId, LoopBacking)>,
}

impl EngineBuilder {
    pub fn new(beh: Behaviour) -> Self {
        EngineBuilder { topo: Topology::default(), beh, queues: Vec::new(), drivers: Vec::new(), loops: Vec::new() }
    }

    /// Make request-based disk `dev` a loop device over `backing`.
    pub fn set_loop_backing(&mut self, dev: DevId, backing: LoopBacking) {
        self.loops.push((dev, backing));
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
        let mut queues: Vec<RequestQueue> = self
            .queues
            .into_iter()
            .enumerate()
            .map(|(i, (dev, model))| {
                let d = self.topo.dev(dev);
                let q = self.topo.queue(dev);
                let mut rq = RequestQueue::new(i as u32, dev, d.kind, q.limits.clone(), q.attrs.clone(), DiskModel::new(model, d.nr_sectors), &self.beh);
                rq.rq_qos = crate::rq_qos::rq_qos_init(&q.attrs, self.beh.wbt_reclaim);
                rq
            })
            .collect();
        let mut loop_queues = Vec::new();
        for (dev, backing) in self.loops {
            let q = queues.iter_mut().find(|q| q.dev == dev).expect("a loop device is request-based");
            q.backing = Some(backing);
            loop_queues.push(q.index);
        }
        // Drivers' threads, named after their device (`md0_raid5`).
        let threads: Vec<(usize, String)> = (0..self.drivers.len())
            .filter_map(|d| {
                let dev = self.topo.devs.iter().find(|x| x.driver == Driver::BioBased(d))?;
                Some((d, self.drivers[d].as_ref()?.thread_comm(&dev.name)?))
            })
            .collect();
        // Workqueue workers of drivers with timed work (dm-crypt's kcryptd).
        let workers: Vec<(usize, String)> = (0..self.drivers.len()).filter_map(|d| Some((d, self.drivers[d].as_ref()?.worker_name()?))).collect();
        let core = BlockCore::new(self.topo, self.beh);
        let tasks = (0..core.tasks.len()).map(|_| TaskState::default()).collect();
        let mut e = Engine { core, queues, drivers: self.drivers, jobs: Vec::new(), tasks, threads: Vec::new(), sample_every: None, samples: Vec::new(), reaped: Reaped::default(), crypt_pending: Vec::new(), submissions: 0, tick_due: false, phases: VecDeque::new(), caches: Default::default() };
        for (i, (d, comm)) in threads.into_iter().enumerate() {
            let t = e.add_task(THREAD_PID + i as u32, &comm);
            e.tasks[t as usize].thread = Some(d);
            e.threads.push(t);
        }
        for (i, (d, comm)) in workers.into_iter().enumerate() {
            let t = e.add_task(WORKER_PID + i as u32, &comm);
            e.drivers[d].as_mut().expect("built").set_worker(t);
        }
        // loop_process_work runs in a kworker of the unbound `loopN` workqueue.
        for (i, qi) in loop_queues.into_iter().enumerate() {
            let t = e.add_task(LOOP_WORKER_PID + i as u32, &format!("kworker/u8:{}", i + 2));
            e.tasks[t as usize].loop_worker = Some(qi);
        }
        e
    }
}

pub struct Engine {
    pub core: BlockCore,
    pub queues: Vec<RequestQueue>,
    drivers: Vec<Option<Box<dyn BioDriver>>>,
    pub jobs: Vec<Job>,
    tasks: Vec<TaskState>,
    /// The tasks of drivers' threads.
    threads: Vec<u32>,
    /// Take a diskstats snapshot this often (ns), for interval reports.
    pub sample_every: Option<u64>,
    /// (time, diskstats of every device) at each sample.
    pub samples: Vec<(u64, Vec<[u64; 17]>)>,
    /// [`Engine::reap`]'s buffers, kept between calls so reaping allocates nothing.
    reaped: Reaped,
    /// (task, bounce bio) of writes encrypted above the block layer whose
    /// task fell asleep before submitting them all: each task's go on, in
    /// order, when it wakes ([`Engine::blk_crypto_submit_bio`]).
    crypt_pending: Vec<(u32, BioId)>,
    /// Submissions started while handling the current event; a job whose
    /// units take no simulated time (buffered writes the page cache absorbs)
    /// would otherwise keep the event loop from ever ticking.
    submissions: u64,
    /// [`TICK_EVENTS`] submissions happened: the event loop ticks now.
    tick_due: bool,
    /// Work for after the jobs so far are done and the stack is idle
    /// (a scenario's later steps), in order: each adds jobs.
    pub phases: VecDeque<Phase>,
    /// The page caches of the run's jobs, kept from one phase to the next.
    pub caches: crate::source::pagecache::SharedCaches,
}

/// A later phase of a run: sets up the engine (jobs, tracing) for it.
pub type Phase = Box<dyn FnOnce(&mut Engine)>;

/// What one round of [`Engine::reap`] handles: woken tasks, finished roots,
/// and the jobs that may go on.
#[derive(Default)]
struct Reaped {
    woken: Vec<(u32, mq::Waiter, Option<(bool, bool)>)>,
    done: Vec<RootDone>,
    ready: Vec<usize>,
}

impl Stack for Engine {
    fn core(&mut self) -> &mut BlockCore {
        &mut self.core
    }

    /// `__submit_bio`: a driver's `->submit_bio`, or `blk_mq_submit_bio`;
    /// in 6.12 bracketed by a plug of its own when the task has none.
    fn __submit_bio(&mut self, mut bio: BioId) -> Submit {
        // blk_crypto_bio_prep comes first, before the plug and the driver.
        let b = self.core.bio(bio);
        let (flags, mut dev) = (b.flags, b.dev);
        if flags & req::CRYPT_CTX != 0 {
            bio = self.core.blk_crypto_bio_prep(bio);
            dev = self.core.bio(bio).dev;
        }
        let task = self.core.current;
        let own_plug = self.core.beh.submit_bio_plug && mq::blk_start_plug(&mut self.core, task);
        let status = match self.core.topo.dev(dev).driver {
            Driver::Mq(qi) => blk_mq_submit_bio(&mut self.queues, &mut self.core, qi, bio),
            Driver::BioBased(d) => {
                // Only one ->submit_bio runs at a time per task, so the
                // driver can be taken out while it runs.
                let mut drv = self.drivers[d].take().expect("driver not re-entered");
                drv.submit_bio(&mut self.core, bio);
                self.drivers[d] = Some(drv);
                Submit::Done
            }
        };
        match (own_plug, status) {
            (true, Submit::Done) => {
                mq::blk_finish_plug(&mut self.queues, &mut self.core, task);
                self.thread_runs_at_unplug(task, dev);
            }
            (true, Submit::Blocked) => self.tasks[task as usize].own_plug = true,
            _ => {}
        }
        status
    }
}

/// The pid of the first driver thread.
const THREAD_PID: u32 = 180;
/// The pid of the first loop worker.
const LOOP_WORKER_PID: u32 = 210;
/// The pid of the kworker of the `kthrotld` workqueue.
const THROTL_WORKER_PID: u32 = 230;
/// The pid of the first driver workqueue worker.
const WORKER_PID: u32 = 240;
/// Root bios a loop worker submits are owned by `LOOP_OWNER - queue`.
const LOOP_OWNER: u32 = u32::MAX;

/// How often (in timed events) a run reports progress.
pub const TICK_EVENTS: u64 = 1 << 16;

/// Progress of a run, for progress displays and interruption.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub sim_time_ns: u64,
    pub bios: u64,
    pub wall_s: f64,
    /// The share of the workload handed out, when its sources know it.
    pub done: Option<f64>,
}

/// The outcome of [`Engine::run`].
#[derive(Clone, Debug)]
pub struct RunStats {
    pub sim_time_ns: u64,
    pub wall_time_s: f64,
    /// The engine thread's processor time (its analysis and check threads
    /// not counted), where the host tells it.
    pub engine_cpu_s: Option<f64>,
    pub bios: u64,
    pub peak_live_bios: usize,
    pub units: u64,
    pub errors: u64,
}

impl Engine {
    /// A task outside any job (tests, tools submitting bios by hand).
    pub fn add_task(&mut self, pid: u32, comm: &str) -> u32 {
        self.tasks.push(TaskState::default());
        self.core.add_task(pid, comm)
    }

    /// Move job `j`'s task into cgroup `cgroup` (1 + its index in the
    /// scenario's `[cgroups]`; 0 the root group).
    pub fn set_job_cgroup(&mut self, j: usize, cgroup: u16) {
        let t = self.jobs[j].task as usize;
        self.tasks[t].blkcg = cgroup;
    }

    /// Turn blk-throttle on with `limits`: (disk, cgroup, bytes/s and I/Os
    /// per second by direction), and add the kworker of its dispatch work.
    pub fn enable_throttle(&mut self, limits: &[(DevId, u16, [u64; 2], [u32; 2])]) {
        let mut t = crate::rq_qos::throttle::Throtl::new(&self.core.beh, self.core.topo.devs.len());
        for &(dev, blkcg, bps, iops) in limits {
            t.set_limit(dev, blkcg, bps, iops);
        }
        self.core.throtl = Some(Box::new(t));
        // kthrotld is a bound (per-CPU) workqueue: a kworker of CPU 0
        // (kworker/0:0 in the guests' traces).
        let w = self.add_task(THROTL_WORKER_PID, "kworker/0:0");
        self.tasks[w as usize].throtl_worker = true;
    }

    pub fn add_job(&mut self, pid: u32, comm: &str, source: Box<dyn Source>, iodepth: u32, batch: u32) -> usize {
        let task = self.add_task(pid, comm);
        self.tasks[task as usize].job = Some(self.jobs.len());
        // The job's CPU ([`crate::host_cpu`]): its events are recorded there.
        self.core.tasks[task as usize].cpu = self.core.cpu.cpu_of_job(self.jobs.len()) as u32;
        self.jobs.push(Job {
            task,
            source,
            iodepth: iodepth.max(1),
            batch: batch.max(1),
            slots: Vec::new(),
            free_slots: Vec::new(),
            in_flight: 0,
            finished: false,
            current: Vec::new(),
            lists: Vec::new(),
            queued: 0,
            walked: 0,
            plugged: false,
            plug_sleeps: false,
            units_done: 0,
            errors: 0,
            complete_min: 1,
            stats: JobStats::default(),
            pending: None,
            sync_slot: None,
            reaping: 0,
            wake_at: None,
            unreaped: 0,
            requeued: VecDeque::new(),
        });
        self.jobs.len() - 1
    }

    /// Submit one bio from `task` now. Returns false if the task went to
    /// sleep (it resumes by itself when a tag frees). The bio copies what
    /// it needs from `spec`.
    pub fn submit_root(&mut self, task: u32, spec: impl Borrow<BioSpec>, owner: u32, cookie: u32) -> bool {
        let spec = spec.borrow();
        // bio_associate_blkg: the bio belongs to its submitter's cgroup.
        let blkcg = self.tasks[task as usize].blkcg;
        self.tasks[task as usize].woke_thread = false;
        let id = self.core.alloc_root_bio(spec.dev, spec.op, spec.flags, spec.sector, spec.size, &spec.bvecs, owner, cookie, blkcg);
        self.core.current = task;
        // submit_bio: the checks follow the submitter's bio (also one the
        // 7.x crypto fallback never submits itself).
        self.core.check_root(id);
        if spec.flags & req::CRYPT_CTX != 0 {
            if let Some(awake) = self.blk_crypto_submit_bio(task, id) {
                return awake;
            }
        }
        match submit_bio_from_thread(self, id) {
            None => true,
            Some(s) => self.sleeps(task, s),
        }
    }

    /// The plug of one `__submit_bio` ended (6.12, `submit_bio_plug`): md's
    /// plug callback (`raid5_unplug`) released the stripe_heads this piece
    /// of the bio attached and woke raid5d. raid5d preempts the submitter
    /// at the first such wake-up of a submission and runs until it waits
    /// for its pre-reads; at the later ones it runs when the submitter
    /// sleeps. That is the guests' most frequent outcome (18 of 29 runs):
    /// `check_preempt_wakeup_fair` preempts when `pick_eevdf` picks the
    /// woken thread, which follows the lag it kept from its earlier runs
    /// (`place_entity`; `DELAY_DEQUEUE`), i.e. the tasks' CPU history,
    /// which the model does not have (docs/validation.md, R).
    fn thread_runs_at_unplug(&mut self, task: u32, dev: DevId) {
        let Some(d) = self.bio_driver_index(dev) else { return };
        if let Some(drv) = self.drivers[d].as_mut() {
            drv.plug_callback();
        }
        let ts = &self.tasks[task as usize];
        if ts.woke_thread || ts.thread.is_some() || !self.drivers[d].as_ref().is_some_and(|drv| drv.unplug_wakes_thread()) {
            return;
        }
        let Some(&t) = self.threads.iter().find(|&&t| self.tasks[t as usize].thread == Some(d)) else { return };
        if self.tasks[t as usize].blocked {
            return;
        }
        self.tasks[task as usize].woke_thread = true;
        self.run_thread(d, t);
    }

    /// The task went to sleep inside a submission: it resumes by itself.
    fn sleeps(&mut self, task: u32, s: Suspended) -> bool {
        let t = &mut self.tasks[task as usize];
        t.suspended = Some(s);
        t.blocked = true;
        false
    }

    /// `blk_crypto_submit_bio` (7.x, [`crate::crypto`]) for a bio with a
    /// crypt context, when the profile has the fallback above the block
    /// layer (`None` otherwise: `__submit_bio` takes it). A write is
    /// encrypted before the block layer sees it, and its bounce bios are
    /// submitted one after the other; a read loses its context and is
    /// submitted as it is. `Some(false)` if the task went to sleep; the
    /// bounce bios not submitted yet wait for it to wake.
    #[cold]
    #[inline(never)]
    fn blk_crypto_submit_bio(&mut self, task: u32, id: BioId) -> Option<bool> {
        if self.core.beh.crypto_fallback != CryptoFallback::AboveBlockLayer {
            return None;
        }
        let b = self.core.bio(id);
        if b.op != Op::Write || b.iter.size == 0 {
            self.core.bio_mut(id).flags &= !req::CRYPT_CTX;
            return None;
        }
        // The plaintext bio's sectors reach the disks in its bounce bios.
        let enc = self.core.blk_crypto_fallback_encrypt_bios(id);
        self.crypt_pending.extend(enc.into_iter().map(|b| (task, b)));
        Some(self.submit_crypt_pending(task))
    }

    /// Submit the task's pending bounce bios in order, each with a plain
    /// `submit_bio` (at once, or when the task wakes); false if it went to
    /// sleep in one of them, the rest waiting for it to wake.
    #[cold]
    #[inline(never)]
    fn submit_crypt_pending(&mut self, task: u32) -> bool {
        while let Some(i) = self.crypt_pending.iter().position(|&(t, _)| t == task) {
            let (_, bio) = self.crypt_pending.remove(i);
            self.core.current = task;
            if let Some(s) = submit_bio_from_thread(self, bio) {
                return self.sleeps(task, s);
            }
        }
        true
    }

    /// `blk_start_plug` / `blk_finish_plug` for a task driven by hand.
    pub fn start_plug(&mut self, task: u32) -> bool {
        mq::blk_start_plug(&mut self.core, task)
    }

    pub fn finish_plug(&mut self, task: u32) {
        self.core.current = task;
        mq::blk_finish_plug(&mut self.queues, &mut self.core, task);
    }

    /// Let job `j` submit, on its CPU ([`crate::host_cpu`]).
    fn run_job(&mut self, j: usize) {
        if !self.core.cpu.on() {
            return self.run_job_here(j);
        }
        let prev = self.core.cpu.enter(self.core.cpu.cpu_of_job(j), self.core.now);
        let before = self.core.cpu.skew;
        self.run_job_here(j);
        // The kernel time the job's task spent (fio's `cpu` line).
        self.jobs[j].stats.fio.ran(self.core.cpu.skew.saturating_sub(before));
        self.core.cpu.leave(prev, self.core.now);
    }

    /// Let job `j` submit: finish the submission under way, then start new
    /// ones while it has room and work.
    fn run_job_here(&mut self, j: usize) {
        loop {
            let task = self.jobs[j].task;
            if self.tasks[task as usize].blocked {
                return;
            }
            // The submission's units are walked out of the job, so the next
            // one is a step of an iterator, not a lookup of the job (nothing
            // called from here runs this job again). They stay in the list,
            // their bio lists kept for the next submissions' units.
            let job = &mut self.jobs[j];
            let (mut units, lists) = (std::mem::take(&mut job.current), std::mem::take(&mut job.lists));
            let (walked, queued) = (job.walked as usize, job.queued as usize);
            let mut asleep = None;
            'walk: for (i, (u, bios)) in units[walked..queued].iter_mut().zip(&lists[walked..queued]).enumerate() {
                while let Some(spec) = bios.get(u.next as usize) {
                    // bio_alloc_bioset and bio_iov_iter_get_pages: the bio
                    // and its user pages pinned.
                    self.core.cpu_charge(|c| c.bio_alloc as u64 + c.page as u64 * (spec.size as u64).div_ceil(PAGE_SIZE));
                    let awake = self.submit_root(task, spec, j as u32, u.slot);
                    u.next += 1;
                    if !awake {
                        // Asleep inside this bio's submission: the rest waits.
                        asleep = Some(walked + i);
                        break 'walk;
                    }
                }
            }
            // The units whose bios were all submitted drop the submission's
            // own reference, so each completes with its last bio. Once the
            // walk is over, in order, through one lookup of the job: nothing
            // in the walk reads the job's units, nothing reaps their bios
            // before it returns, and the clock stands still meanwhile.
            let (now, job) = (self.core.now, &mut self.jobs[j]);
            for u in &units[walked..asleep.unwrap_or(queued)] {
                job.unit_issued(u.slot, now);
            }
            (job.current, job.lists) = (units, lists);
            if let Some(at) = asleep {
                // The driver threads the sleeping submission woke run.
                job.walked = at as u32;
                self.run_threads();
                return;
            }
            job.walked = queued as u32;
            if std::mem::take(&mut self.jobs[j].plugged) {
                if std::mem::take(&mut self.jobs[j].plug_sleeps) {
                    mq::blk_flush_plug(&mut self.queues, &mut self.core, task, true);
                }
                self.finish_plug(task);
            }
            // The submission is done (the task returns or sleeps): the
            // driver threads it woke run.
            self.run_threads();
            if !self.start_submission(j) {
                return;
            }
            if self.yield_for_tick(j) {
                return;
            }
        }
    }

    /// After [`TICK_EVENTS`] submissions in the handling of one event, the
    /// job goes on from a wake-up at the same instant, so the event loop
    /// gets to report progress and to be stopped (Ctrl-C) in between; true
    /// if it yielded.
    fn yield_for_tick(&mut self, j: usize) -> bool {
        self.submissions += 1;
        if self.submissions < TICK_EVENTS {
            return false;
        }
        self.submissions = 0;
        self.tick_due = true;
        self.core.schedule(self.core.now, SimEvent::JobWake { job: j as u32 });
        true
    }

    /// Gather the next submission: up to `batch` units (within `iodepth`),
    /// in a plug if a unit needs one or the batch is larger than two
    /// (`AIO_PLUG_THRESHOLD`, io_uring's rule). A synchronous or draining
    /// unit goes alone; a unit whose time has not come wakes the job later.
    fn start_submission(&mut self, j: usize) -> bool {
        let now = self.core.now;
        let job = &mut self.jobs[j];
        if job.sync_slot.is_some() || job.reaping > 0 || job.in_flight >= job.iodepth {
            return false;
        }
        // The job's CPU is still busy (its last submission, completions):
        // it submits when the CPU is free.
        if self.core.cpu.skew > 0 {
            let t = now + self.core.cpu.skew;
            if job.wake_at != Some(t) {
                job.wake_at = Some(t);
                self.core.schedule(t, SimEvent::JobWake { job: j as u32 });
            }
            return false;
        }
        let room = (job.iodepth - job.in_flight).min(job.batch);
        // Units are taken in flight as they are fetched: the `in_flight`
        // rule below only decides for the first unit (any later sync or
        // drain unit is held by `n > 0`), so it sees no unit of this batch.
        let (mut n, mut plug, mut plug_sleeps, mut counted) = (0u32, false, false, 0u32);
        // A place for each unit the submission may take.
        if job.current.len() < room as usize {
            job.current.resize(room as usize, Submitting::default());
            job.lists.resize_with(room as usize, Vec::new);
        }
        while n < room {
            let i = n as usize;
            // A new unit's bios are built in place `i`; a requeued or held
            // one brings its own, swapped in (its list goes back with it if
            // it is held again).
            let fresh = job.requeued.is_empty() && job.pending.is_none();
            let mut next = if fresh { next_from_source(job, i, now) } else { job.requeued.pop_front().or_else(|| job.pending.take()) };
            // The unit is read where the source left it: moved out of its
            // Option, all of it was copied once more for every unit.
            let Some(u) = next.as_mut() else { break };
            if !fresh {
                std::mem::swap(&mut job.lists[i], &mut u.bios);
            }
            let held = u.not_before > now || (u.drain && job.in_flight > 0) || ((u.sync || u.drain) && n > 0);
            if held {
                std::mem::swap(&mut job.lists[i], &mut u.bios);
                job.pending = next;
                break;
            }
            let alone = u.sync || u.drain;
            plug |= u.plug;
            plug_sleeps |= u.sleeps_in_plug;
            let c = u.kind.index().is_some() as u32;
            counted += c;
            let likable = fresh && u.requeue.is_none();
            job.queue_unit(i, u, now);
            n += 1;
            if alone {
                break;
            }
            // The units that follow like this one: none is held or alone,
            // and each is taken in flight as this one was (its bios in its
            // list already).
            if likable && n < room {
                let like = job.source.next_units_like(now, &mut job.lists[n as usize..room as usize]) as u32;
                job.queue_units_like(n as usize..(n + like) as usize, u, now);
                (n, counted) = (n + like, counted + c * like);
            }
        }
        (job.queued, job.walked) = (n, 0);
        if n > 0 {
            // The submission's first unit was taken in flight now.
            job.stats.first_submit_ns.get_or_insert(now);
        }
        if n == 0 {
            // A unit due while the job still has I/O in flight waits until
            // completions due at the same instant were seen (1 ns later), as
            // a task resubmitting from its completion would.
            let busy = (job.in_flight > 0) as u64;
            let wake = job.pending.as_ref().map(|u| u.not_before).filter(|&t| t > now).map(|t| t + busy);
            if let Some(t) = wake.filter(|&t| job.wake_at != Some(t)) {
                job.wake_at = Some(t);
                self.core.schedule(t, SimEvent::JobWake { job: j as u32 });
            }
            return false;
        }
        let plug = plug || n > 2;
        // The system calls (io_submit and the io_getevents that reaps; one
        // pread or pwrite at depth 1), the units set up, and the events
        // reaped since the last submission.
        let (calls, reaped) = (1 + (job.iodepth > 1) as u64, std::mem::take(&mut job.unreaped) as u64);
        job.stats.fio.submitted(counted, job.in_flight, reaped as u32, now);
        self.core.cpu_charge(|c| c.syscall as u64 * calls + c.unit as u64 * n as u64 + c.unit_complete as u64 * reaped);
        let job = &mut self.jobs[j];
        if job.in_flight >= job.iodepth && job.complete_min > 1 {
            job.reaping = job.complete_min.min(job.in_flight);
        }
        let task = job.task;
        if plug {
            self.jobs[j].plugged = mq::blk_start_plug(&mut self.core, task);
            self.jobs[j].plug_sleeps = plug_sleeps;
        }
        true
    }

    /// A task that got a tag back finishes its allocation, then its loop,
    /// then its job's submission.
    fn resume_task(&mut self, qi: u32, w: mq::Waiter, tags: Option<(bool, bool)>) {
        if !self.core.cpu.on() {
            return self.resume_task_here(qi, w, tags);
        }
        let cpu = self.cpu_of_task(w.task);
        let prev = self.core.cpu.enter(cpu, self.core.now);
        self.resume_task_here(qi, w, tags);
        self.core.cpu.leave(prev, self.core.now);
    }

    /// The CPU task `t` runs on: its job's, CPU 0 for other tasks.
    fn cpu_of_task(&self, t: u32) -> usize {
        self.tasks.get(t as usize).and_then(|ts| ts.job).map_or(0, |j| self.core.cpu.cpu_of_job(j))
    }

    /// [`Engine::resume_task`] on the task's CPU.
    fn resume_task_here(&mut self, qi: u32, w: mq::Waiter, tags: Option<(bool, bool)>) {
        let t = w.task as usize;
        self.core.current = w.task;
        if mq::blk_mq_resume_alloc(&mut self.queues, &mut self.core, qi as usize, w, tags) == Submit::Blocked {
            // Past the rq-qos policy, it sleeps again for a tag.
            return;
        }
        let ts = &mut self.tasks[t];
        let (own_plug, suspended, job, thread, throtl_worker) = (std::mem::take(&mut ts.own_plug), ts.suspended.take(), ts.job, ts.thread, ts.throtl_worker);
        ts.blocked = false;
        if own_plug {
            mq::blk_finish_plug(&mut self.queues, &mut self.core, w.task);
        }
        if let Some(s) = suspended {
            if let Some(again) = resume_submit(self, s) {
                let ts = &mut self.tasks[t];
                (ts.suspended, ts.blocked) = (Some(again), true);
                return;
            }
        }
        if !self.crypt_pending.is_empty() && !self.submit_crypt_pending(w.task) {
            return;
        }
        if let Some(j) = job {
            self.run_job(j);
        } else if let Some(d) = thread {
            self.run_thread(d, w.task);
        } else if throtl_worker {
            self.run_throtl_worker(w.task);
        }
    }

    /// Let every driver thread that is not asleep do its work.
    fn run_threads(&mut self) {
        for i in 0..self.threads.len() {
            let t = self.threads[i];
            if let (Some(d), false) = (self.tasks[t as usize].thread, self.tasks[t as usize].blocked) {
                self.run_thread(d, t);
            }
        }
    }

    /// Driver `d`'s thread, task `t`, submits its bios inside a plug of its
    /// own (raid5d's `blk_start_plug`), until it has none left or sleeps.
    fn run_thread(&mut self, d: usize, t: u32) {
        loop {
            self.run_kernel_thread(t, submit_bio_from_thread, |e| {
                let mut drv = e.drivers[d].take().expect("driver not re-entered");
                let next = drv.thread_next(&mut e.core);
                e.drivers[d] = Some(drv);
                next
            });
            if self.tasks[t as usize].blocked || !self.drivers[d].as_ref().is_some_and(|drv| drv.thread_runs_again()) {
                return;
            }
        }
    }

    /// blk-throttle's dispatch work (`blk_throtl_dispatch_work_fn`) in its
    /// kworker, task `t`: the released bios, in order, inside a plug, each
    /// through `submit_bio_noacct_nocheck`.
    fn run_throtl_worker(&mut self, t: u32) {
        if !self.tasks[t as usize].blocked {
            self.run_kernel_thread(t, submit_bio_nocheck_from_thread, |e| e.core.throtl.as_mut()?.ready.pop_front());
        }
    }

    /// Task `t`, a kernel thread, submits the bios `next` gives with
    /// `submit` inside a plug of its own, until it has none left or sleeps.
    fn run_kernel_thread(&mut self, t: u32, submit: fn(&mut Engine, BioId) -> Option<Suspended>, mut next: impl FnMut(&mut Engine) -> Option<BioId>) {
        let saved = self.core.current;
        loop {
            self.core.current = t;
            let Some(bio) = next(self) else { break };
            if !self.tasks[t as usize].thread_plug {
                self.tasks[t as usize].thread_plug = mq::blk_start_plug(&mut self.core, t);
            }
            if let Some(s) = submit(self, bio) {
                let ts = &mut self.tasks[t as usize];
                (ts.suspended, ts.blocked) = (Some(s), true);
                self.core.current = saved;
                return;
            }
        }
        if std::mem::take(&mut self.tasks[t as usize].thread_plug) {
            mq::blk_finish_plug(&mut self.queues, &mut self.core, t);
        }
        self.core.current = saved;
    }

    /// The bio-based driver of `dev` (taken out while it runs).
    fn bio_driver_index(&self, dev: DevId) -> Option<usize> {
        match self.core.topo.dev(dev).driver {
            Driver::BioBased(d) => Some(d),
            Driver::Mq(_) => None,
        }
    }

    /// A driver's timed work is due: it runs, what it hands out is
    /// submitted by the tasks it names (each in order, a sleeping task's
    /// when it wakes), and the driver threads it woke run.
    #[cold]
    #[inline(never)]
    fn driver_work(&mut self, dev: DevId) {
        let Some(d) = self.bio_driver_index(dev) else { return };
        let mut out = Vec::new();
        let mut drv = self.drivers[d].take().expect("driver not re-entered");
        drv.work_due(&mut self.core, &mut out);
        self.drivers[d] = Some(drv);
        let saved = self.core.current;
        for s in &out {
            self.core.current = s.task;
            self.core.trace_bio_remap(s.bio, s.from_dev, s.from_sector);
            self.crypt_pending.push((s.task, s.bio));
        }
        self.core.current = saved;
        let mut tasks: Vec<u32> = out.iter().map(|s| s.task).collect();
        tasks.dedup();
        for t in tasks {
            if !self.tasks[t as usize].blocked {
                self.submit_crypt_pending(t);
            }
        }
        self.core.current = saved;
        self.run_threads();
    }

    /// Hand bios whose end their driver decides to it ([`req::DEFER_END`]).
    #[cold]
    #[inline(never)]
    fn deferred_ends(&mut self) {
        let mut woken = Vec::new();
        for (bio, status) in std::mem::take(&mut self.core.deferred_ends) {
            let Some(d) = self.bio_driver_index(self.core.bio(bio).dev) else { continue };
            let mut drv = self.drivers[d].take().expect("driver not re-entered");
            drv.bio_deferred_end(&mut self.core, bio, status);
            self.drivers[d] = Some(drv);
            if !woken.contains(&d) {
                woken.push(d);
            }
        }
        // A driver's thread may have work now (md's raid5d: stripe_heads
        // whose pre-reads completed).
        for i in 0..self.threads.len() {
            let t = self.threads[i];
            let ts = &self.tasks[t as usize];
            if let (Some(d), false) = (ts.thread, ts.blocked) {
                if woken.contains(&d) {
                    self.run_thread(d, t);
                }
            }
        }
    }

    /// Report finished root bios to their jobs, wake tasks that got tags,
    /// and let the jobs go on.
    fn reap(&mut self) {
        while !(self.core.woken.is_empty() && self.core.done_roots.is_empty() && self.core.deferred_ends.is_empty()) || self.loop_work_ready() {
            if !self.core.deferred_ends.is_empty() {
                self.deferred_ends();
            }
            // This round's lists are swapped out of the core, which collects
            // the next round's in the emptied buffers. (Nothing called from
            // here reaps, so `self.reaped` stays put while it is walked.)
            std::mem::swap(&mut self.reaped.woken, &mut self.core.woken);
            std::mem::swap(&mut self.reaped.done, &mut self.core.done_roots);
            for i in 0..self.reaped.woken.len() {
                let (qi, w, tags) = self.reaped.woken[i];
                self.resume_task(qi, w, tags);
            }
            self.reaped.woken.clear();
            // Walked out of `self`, as a slice: no bounds check per root.
            let mut done = std::mem::take(&mut self.reaped.done);
            for &d in &done {
                let j = d.owner as usize;
                if j >= self.jobs.len() {
                    self.lo_rw_aio_complete(d);
                    continue;
                }
                let job = &mut self.jobs[j];
                job.errors += (d.status != 0) as u64;
                job.unit_bio_done(d.cookie, self.core.now);
                // Roots in a row mostly belong to one job: the last entry
                // answers before a scan.
                if self.reaped.ready.last() != Some(&j) && !self.reaped.ready.contains(&j) {
                    self.reaped.ready.push(j);
                }
            }
            done.clear();
            self.reaped.done = done;
            for i in 0..self.reaped.ready.len() {
                let j = self.reaped.ready[i];
                self.run_job(j);
            }
            self.reaped.ready.clear();
            if !self.core.loop_work.is_empty() {
                self.run_loop_workers();
            }
        }
    }

    /// A loop worker that is awake has a request to take.
    fn loop_work_ready(&self) -> bool {
        self.core.loop_work.iter().any(|&(qi, _)| !self.tasks[self.loop_worker_task(qi) as usize].blocked)
    }

    fn loop_worker_task(&self, qi: u32) -> u32 {
        self.tasks.iter().position(|t| t.loop_worker == Some(qi)).expect("a loop queue has a worker") as u32
    }

    /// Each loop worker that is awake handles its requests in order
    /// (`loop_process_work` → `loop_handle_cmd` → `do_req_filebacked`);
    /// one that falls asleep for a tag on the backing device keeps the rest.
    #[cold]
    #[inline(never)]
    fn run_loop_workers(&mut self) {
        let mut i = 0;
        while i < self.core.loop_work.len() {
            let (qi, rq) = self.core.loop_work[i];
            let task = self.loop_worker_task(qi);
            if self.tasks[task as usize].blocked {
                i += 1;
                continue;
            }
            self.core.loop_work.remove(i);
            let q = &self.queues[qi as usize];
            let backing = q.backing.as_ref().expect("a loop queue");
            match do_req_filebacked(&self.core, backing, q.rqs.get(rq)) {
                LoopCmd::Complete => self.core.schedule(self.core.now, SimEvent::RqComplete { queue: qi, rq }),
                LoopCmd::Submit(spec) => {
                    self.submit_root(task, spec, LOOP_OWNER - qi, rq);
                }
            }
        }
    }

    /// The backing bio of a loop request ended: the request completes with
    /// its status (`lo_rw_aio_complete` → `blk_mq_complete_request`).
    fn lo_rw_aio_complete(&mut self, d: RootDone) {
        let qi = LOOP_OWNER - d.owner;
        if self.queues.get(qi as usize).is_none_or(|q| q.backing.is_none()) {
            return;
        }
        self.queues[qi as usize].rqs.get_mut(d.cookie).error = d.status;
        blk_mq_complete_request(&mut self.queues, &mut self.core, qi as usize, d.cookie);
    }

    /// Handle one timed event.
    fn handle(&mut self, ev: SimEvent) {
        if let SimEvent::RqComplete { queue, .. } = ev {
            // A device that posts completions in batches holds this one
            // until it has served every command it has (disk/batch.rs).
            if let Some(at) = self.queues[queue as usize].disk.batch_posted_at(self.core.now) {
                return self.core.schedule(at, ev);
            }
        }
        match ev {
            SimEvent::RqComplete { queue, rq } if self.core.cpu.on() => self.completion_irq(queue, rq),
            SimEvent::RqComplete { queue, rq } => {
                blk_mq_complete_request(&mut self.queues, &mut self.core, queue as usize, rq);
            }
            SimEvent::RqIrqDone { queue, rq } => {
                let prev = self.core.cpu.enter(self.completion_cpu(queue, rq), self.core.now);
                blk_mq_complete_request(&mut self.queues, &mut self.core, queue as usize, rq);
                self.core.cpu.leave(prev, self.core.now);
            }
            SimEvent::ZoneWplugWork { queue } => {
                crate::zoned::blk_zone_wplug_bio_work(&mut self.queues, &mut self.core, queue as usize);
            }
            SimEvent::WbtTimer { queue } => {
                crate::rq_qos::wbt::wb_timer_event(&mut self.queues[queue as usize], &mut self.core);
            }
            SimEvent::ElvTimer { queue } => {
                crate::mq::blk_mq_elevator_timer(&mut self.queues, &mut self.core, queue as usize);
            }
            SimEvent::DriverWork { dev } => self.driver_work(dev),
            SimEvent::JobWake { job } => {
                self.jobs[job as usize].wake_at = None;
                self.run_job(job as usize);
            }
            SimEvent::ThrotlTimer { dev } => {
                if crate::rq_qos::throttle::throtl_pending_timer_fn(&mut self.core, dev) {
                    let w = self.tasks.iter().position(|t| t.throtl_worker).expect("a throttle worker") as u32;
                    self.run_throtl_worker(w);
                }
            }
            SimEvent::Sample => {
                // Due after the last activity with nothing else pending: the
                // run is over and its last sample comes at its end instead.
                if self.core.pending_events() == 0 && self.core.now > self.core.last_activity {
                    return;
                }
                self.take_sample();
                // Keep sampling while anything else is pending.
                if let (Some(every), true) = (self.sample_every, self.core.pending_events() > 0) {
                    self.core.schedule(self.core.now + every, SimEvent::Sample);
                }
            }
        }
    }

    /// The CPU that completes a request: its submitter's
    /// (`blk_mq_complete_need_ipi`: the irq, or an IPI to that CPU).
    fn completion_cpu(&self, queue: u32, rq: u32) -> usize {
        self.cpu_of_task(self.queues[queue as usize].rqs.get(rq).task)
    }

    /// A request the device finished: its CPU handles the interrupt when
    /// free, and its bios end after that work ([`crate::host_cpu`]).
    #[cold]
    #[inline(never)]
    fn completion_irq(&mut self, queue: u32, rq: u32) {
        let cpu = self.completion_cpu(queue, rq);
        let mut bios = 0u32;
        let mut next = Some(self.queues[queue as usize].rqs.get(rq).bio);
        while let Some(b) = next {
            bios += 1;
            next = self.core.bio(b).bi_next;
        }
        let done = self.core.cpu.completion_done(cpu, self.core.now, bios);
        // A CPU's clock never goes back, so its completions come in time
        // order: a FIFO stream per CPU, after the devices' two each.
        let stream = self.queues.len() * 2 + cpu;
        self.core.schedule_stream(stream, done, SimEvent::RqIrqDone { queue, rq });
    }

    /// Snapshot every device's diskstats.
    pub fn take_sample(&mut self) {
        let all = (0..self.core.topo.devs.len() as DevId).map(|d| self.core.diskstats(d)).collect();
        self.samples.push((self.core.now, all));
    }

    /// Run every job to completion.
    pub fn run(&mut self) -> RunStats {
        self.run_with(&mut |_| true).expect("never stopped")
    }

    /// Run every job to completion, calling `tick` every
    /// [`TICK_EVENTS`] events with the progress so far; `tick` returning
    /// false stops the run (Ctrl-C) and `None` is returned.
    pub fn run_with(&mut self, tick: &mut dyn FnMut(&Progress) -> bool) -> Option<RunStats> {
        let wall = Instant::now();
        let cpu = crate::critical_path::thread_cpu_s();
        // A long run's checks may go to a thread of their own meanwhile;
        // they are back, every hook taken, however the run ends.
        self.core.allow_check_thread(true);
        let finished = self.run_phases(wall, tick);
        self.core.allow_check_thread(false);
        if !finished {
            return None;
        }
        // A trailing sample must not stretch the run.
        self.core.now = self.core.now.min(self.core.last_activity.max(self.samples.last().map_or(0, |s| s.0)));
        if self.samples.last().map(|s| s.0) != Some(self.core.now) {
            self.take_sample();
        }
        Some(RunStats {
            sim_time_ns: self.core.now,
            wall_time_s: wall.elapsed().as_secs_f64(),
            engine_cpu_s: cpu.zip(crate::critical_path::thread_cpu_s()).map(|(start, end)| end - start),
            bios: self.core.bios_allocated,
            peak_live_bios: self.core.bios_live_peak,
            units: self.jobs.iter().map(|j| j.units_done).sum(),
            errors: self.jobs.iter().map(|j| j.errors).sum(),
        })
    }

    /// [`Self::run_with`]'s jobs and phases; `false` when `tick` stopped it.
    fn run_phases(&mut self, wall: Instant, tick: &mut dyn FnMut(&Progress) -> bool) -> bool {
        self.take_sample();
        if let Some(every) = self.sample_every {
            self.core.schedule(every, SimEvent::Sample);
        }
        for j in 0..self.jobs.len() {
            self.run_job(j);
        }
        if !self.drain(wall, tick) {
            return false;
        }
        // Later phases start once everything before them is done (and may
        // change the stack, which the checks' thread holds a copy of).
        while let Some(phase) = self.phases.pop_front() {
            self.core.allow_check_thread(false);
            let first = self.jobs.len();
            phase(self);
            self.core.allow_check_thread(true);
            for j in first..self.jobs.len() {
                self.run_job(j);
            }
            if !self.drain(wall, tick) {
                return false;
            }
        }
        true
    }

    /// Run timed events until nothing is pending.
    pub fn run_until_idle(&mut self) {
        self.drain(Instant::now(), &mut |_| true);
    }

    /// The event loop: handle timed events until none is pending, calling
    /// `tick` every [`TICK_EVENTS`] events; false if `tick` stopped it.
    fn drain(&mut self, wall: Instant, tick: &mut dyn FnMut(&Progress) -> bool) -> bool {
        self.reap();
        let mut events = 0u64;
        while let Some(ev) = self.core.pop_event() {
            self.submissions = 0;
            self.core.cpu.idle();
            self.handle(ev);
            self.reap();
            events += 1;
            if events % TICK_EVENTS == 0 || std::mem::take(&mut self.tick_due) {
                let done = crate::source::overall_progress(self.jobs.iter().map(|j| &*j.source), self.core.now);
                let p = Progress { sim_time_ns: self.core.now, bios: self.core.bios_allocated, wall_s: wall.elapsed().as_secs_f64(), done };
                if !tick(&p) {
                    return false;
                }
            }
        }
        true
    }
}
