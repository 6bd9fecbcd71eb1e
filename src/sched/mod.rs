//! I/O schedulers behind the elevator interface (block/elevator.h,
//! `struct elevator_mq_ops`). `none` has no elevator: its software-queue
//! merge and dispatch live in [`crate::mq`]. [`mq_deadline`] is the
//! elevator most single-queue disks get by default. bfq is split by
//! concept: [`bfq_wf2q`] (B-WF2Q+ service trees), [`bfq_queue`] (per-process
//! queues), [`bfq_ioprio`] (ioprio to weight), [`bfq_params`] (iosched
//! knobs), [`bfq_merge`] (its merge rules) and [`bfq_iosched`] (queue
//! selection, budgets, idling, weight raising); [`bfq_elv`] plugs it in.
//!
//! [`ElevatorQueue`] is `struct elevator_queue`: the request hash every
//! elevator may use ([`elevator::RqHash`]) and the scheduler's own data.
//! The block layer calls the scheduler only through the operations below,
//! which carry the names of `elevator_mq_ops` (`bio_merge`,
//! `request_merge`, `request_merged`, `requests_merged`,
//! `insert_requests`, `dispatch_request`, `has_work`, `limit_depth`,
//! `next_request`, `former_request`); each dispatches on the scheduler in
//! force, so the queue pays one test of its kind, not an indirect call.

pub mod bfq_elv;
pub mod bfq_ioprio;
pub mod bfq_iosched;
pub mod bfq_merge;
pub mod bfq_params;
pub mod bfq_queue;
pub mod bfq_wf2q;
pub mod elevator;
pub mod mq_deadline;

use crate::bio::{BioId, Op};
use crate::limits::Elevator;
use crate::mq::{RequestQueue, Rqs};
use crate::submit::BlockCore;
use elevator::RqHash;
use mq_deadline::MqDeadline;

/// `elevator_queue->elevator_data`: the scheduler in force.
pub enum ElevatorData {
    MqDeadline(MqDeadline),
}

/// `struct elevator_queue`.
pub struct ElevatorQueue {
    /// `elevator_queue->hash`.
    pub hash: RqHash,
    pub data: ElevatorData,
}

impl ElevatorQueue {
    /// `elevator_init_mq` → `->init_sched`: the elevator for a queue's
    /// scheduler, none for `none`. A scheduler the scenario reader refuses
    /// (not modelled) never gets here.
    pub fn init(e: Elevator) -> Option<ElevatorQueue> {
        let data = match e {
            Elevator::None => return None,
            Elevator::MqDeadline => ElevatorData::MqDeadline(MqDeadline::default()),
            Elevator::Kyber | Elevator::Bfq => unreachable!("{} is refused by the scenario reader", e.name()),
        };
        Some(ElevatorQueue { hash: RqHash::default(), data })
    }

    /// `->has_work`.
    pub fn has_work(&self) -> bool {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.has_work(),
        }
    }

    /// Requests the scheduler holds.
    pub fn queued(&self) -> usize {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.queued(),
        }
    }

    /// `->limit_depth`: how many scheduler tags an allocation for `op` may
    /// see in use (`data->shallow_depth`; `nr_requests` when unlimited).
    #[inline(always)]
    pub fn limit_depth(&self, op: Op, flags: u32, nr_requests: u32) -> u32 {
        match &self.data {
            ElevatorData::MqDeadline(_) => mq_deadline::dd_limit_depth(op, flags, nr_requests),
        }
    }

    /// `->request_merge`'s lookup: a request of direction `dir` starting
    /// at `sector` (a front merge candidate).
    #[inline(always)]
    pub fn request_merge(&self, dir: usize, sector: u64) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.front_candidate(dir, sector),
        }
    }

    /// `->request_merged`: request `id` grew (its start was `old_sector`).
    pub fn request_merged(&mut self, rqs: &Rqs, id: u32, old_sector: u64) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.reposition(rqs, id, old_sector),
        }
    }

    /// `->requests_merged`: `next` was merged into `rq` and leaves.
    pub fn requests_merged(&mut self, rqs: &mut Rqs, rq: u32, next: u32) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.merged_requests(&mut self.hash, rqs, rq, next),
        }
    }

    /// A request merged away as a discard range leaves the scheduler.
    pub fn remove_request(&mut self, rqs: &mut Rqs, id: u32) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.remove(&mut self.hash, rqs, id),
        }
    }

    /// `->next_request` (`elv_latter_request`): the request after `id` in
    /// the scheduler's sector order.
    pub fn next_request(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.latter(rqs, id),
        }
    }

    /// `->former_request` (`elv_former_request`).
    pub fn former_request(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.former(rqs, id),
        }
    }
}

/// `->bio_merge` (`blk_mq_sched_bio_merge` with an elevator).
#[inline(always)]
pub fn bio_merge(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    match q.sched.as_ref().map(|e| &e.data) {
        Some(ElevatorData::MqDeadline(_)) => mq_deadline::dd_bio_merge(q, core, bio, nsegs),
        None => false,
    }
}

/// `->insert_requests` for one request.
pub fn insert_requests(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    match q.sched.as_ref().map(|e| &e.data) {
        Some(ElevatorData::MqDeadline(_)) => mq_deadline::dd_insert_request(q, core, id, task),
        None => unreachable!("insert into a queue without an elevator"),
    }
}

/// `->dispatch_request`: the next request for the driver, if the
/// scheduler gives one now.
pub fn dispatch_request(q: &mut RequestQueue, core: &mut BlockCore) -> Option<u32> {
    let e = q.sched.as_mut()?;
    match &mut e.data {
        ElevatorData::MqDeadline(dd) => dd.dispatch(&mut e.hash, &mut q.rqs, core.now, core.beh.dd_next),
    }
}
