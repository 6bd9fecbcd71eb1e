//! I/O schedulers behind the elevator interface (block/elevator.h,
//! `struct elevator_mq_ops`). `none` has no elevator: its software-queue
//! merge and dispatch live in [`crate::mq`]. [`mq_deadline`] is the
//! elevator most single-queue disks get by default; [`kyber`] the
//! token-based one for fast devices. bfq is split by
//! concept: [`bfq_wf2q`] (B-WF2Q+ service trees), [`bfq_queue`] (per-process
//! queues), [`bfq_ioprio`] (ioprio to weight), [`bfq_params`] (iosched
//! knobs), [`bfq_merge`] (its merge rules), [`bfq_coop`] (merging of queues
//! started together) and [`bfq_iosched`] (queue
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

pub mod bfq_coop;
pub mod bfq_depth;
pub mod bfq_elv;
pub mod bfq_ioprio;
pub mod bfq_iosched;
pub mod bfq_merge;
pub mod bfq_params;
pub mod bfq_queue;
pub mod bfq_wf2q;
pub mod elevator;
pub mod kyber;
pub mod mq_deadline;

use crate::bio::{req, Bio, BioId, Op};
use crate::limits::{Elevator, QueueAttrs};
use crate::mq::{Request, RequestQueue, Rqs};
use crate::profile::Behaviour;
use crate::submit::BlockCore;
use bfq_elv::BfqElv;
use elevator::RqHash;
use kyber::Kyber;
use mq_deadline::MqDeadline;

/// `elevator_queue->elevator_data`: the scheduler in force.
pub enum ElevatorData {
    MqDeadline(MqDeadline),
    Kyber(Box<Kyber>),
    Bfq(Box<BfqElv>),
}

/// `op_is_sync`: reads, and anything flagged `REQ_SYNC`, `REQ_FUA` or
/// `REQ_PREFLUSH`.
pub fn op_is_sync(op: Op, flags: u32) -> bool {
    op == Op::Read || flags & (req::SYNC | req::FUA | req::PREFLUSH) != 0
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
    pub fn init(attrs: &QueueAttrs, beh: &Behaviour) -> Option<ElevatorQueue> {
        let e = attrs.scheduler;
        let data = match e {
            Elevator::None => return None,
            Elevator::MqDeadline => ElevatorData::MqDeadline(MqDeadline::default()),
            Elevator::Kyber => {
                let io = &attrs.iosched;
                ElevatorData::Kyber(Box::new(Kyber::new(attrs.nr_requests, beh.kyber_async_depth, io.read_lat_nsec, io.write_lat_nsec)))
            }
            Elevator::Bfq => ElevatorData::Bfq(Box::new(BfqElv::new(attrs))),
        };
        Some(ElevatorQueue { hash: RqHash::default(), data })
    }

    /// `->has_work`.
    pub fn has_work(&self) -> bool {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.has_work(),
            ElevatorData::Kyber(ky) => ky.has_work(),
            ElevatorData::Bfq(b) => b.bfq.has_work(),
        }
    }

    /// Requests the scheduler holds.
    pub fn queued(&self) -> usize {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.queued(),
            ElevatorData::Kyber(ky) => ky.queued(),
            ElevatorData::Bfq(b) => b.bfq.queued(),
        }
    }

    /// `->limit_depth`: how many scheduler tags an allocation for bio `b`
    /// of `task` may see in use (`data->shallow_depth`; `nr_requests` when
    /// unlimited).
    #[inline(always)]
    pub fn limit_depth(&self, core: &BlockCore, task: u32, b: BioId, nr_requests: u32) -> u32 {
        let (op, flags) = (core.bio(b).op, core.bio(b).flags);
        match &self.data {
            ElevatorData::MqDeadline(_) => mq_deadline::dd_limit_depth(op, flags, nr_requests),
            // kyber_limit_depth: async requests to async_depth.
            ElevatorData::Kyber(ky) => {
                if op_is_sync(op, flags) {
                    nr_requests
                } else {
                    ky.async_depth
                }
            }
            ElevatorData::Bfq(e) => e.limit_depth(core, task, core.bio(b), nr_requests),
        }
    }

    /// `->allow_merge` (`elv_bio_merge_ok`'s scheduler part): whether bio
    /// `b` may merge into request `id`.
    #[inline(always)]
    pub fn allow_merge(&self, core: &BlockCore, id: u32, b: &Bio) -> bool {
        match &self.data {
            ElevatorData::MqDeadline(_) | ElevatorData::Kyber(_) => true,
            ElevatorData::Bfq(e) => e.allow_merge(core, id, b),
        }
    }

    /// `->request_merge`'s lookup: a request the bio's end meets (a front
    /// merge candidate).
    #[inline(always)]
    pub fn request_merge(&self, core: &BlockCore, b: &Bio) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.front_candidate(b.op.is_write() as usize, b.end_sector()),
            ElevatorData::Kyber(_) => None,
            ElevatorData::Bfq(e) => e.request_merge(core, b),
        }
    }

    /// `->request_merged`: request `id` grew (its start was `old_sector`).
    pub fn request_merged(&mut self, rqs: &Rqs, id: u32, old_sector: u64, now: u64) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.reposition(rqs, id, old_sector),
            ElevatorData::Kyber(_) => {}
            ElevatorData::Bfq(e) => e.bfq.request_merged(id, rqs.get(id).sector, rqs.get(id).nr_sectors, now),
        }
    }

    /// `->requests_merged`: `next` was merged into `rq` and leaves.
    pub fn requests_merged(&mut self, rqs: &mut Rqs, rq: u32, next: u32, now: u64) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.merged_requests(&mut self.hash, rqs, rq, next),
            ElevatorData::Kyber(_) => {}
            ElevatorData::Bfq(e) => {
                e.bfq.request_merged(rq, rqs.get(rq).sector, rqs.get(rq).nr_sectors, now);
                e.bfq.requests_merged(rq, next, now);
                self.hash.del(rqs.get(next).end(), next);
            }
        }
    }

    /// A request merged away as a discard range leaves the scheduler.
    pub fn remove_request(&mut self, rqs: &mut Rqs, id: u32, now: u64) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.remove(&mut self.hash, rqs, id),
            ElevatorData::Kyber(_) => {}
            ElevatorData::Bfq(e) => {
                e.bfq.remove(id, now);
                self.hash.del(rqs.get(id).end(), id);
            }
        }
    }

    /// `->next_request` (`elv_latter_request`): the request after `id` in
    /// the scheduler's sector order.
    pub fn next_request(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.latter(rqs, id),
            ElevatorData::Kyber(_) => None,
            ElevatorData::Bfq(e) => e.bfq.latter(id),
        }
    }

    /// `->former_request` (`elv_former_request`).
    pub fn former_request(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.former(rqs, id),
            ElevatorData::Kyber(_) => None,
            ElevatorData::Bfq(e) => e.bfq.former(id),
        }
    }

    /// kyber's `->completed_request` then `->finish_request`, as
    /// `__blk_mq_end_request` and `blk_mq_free_request` call them, for
    /// request `id` ending at `now_ns` (bfq's `finish_request` is
    /// [`finish_request`], which may run its queue).
    #[inline(always)]
    pub fn completed_request(&mut self, rq: &Request, id: u32, now_ns: u64) {
        if let ElevatorData::Kyber(ky) = &mut self.data {
            ky.kyber_completed_request(rq, id, now_ns);
            ky.kyber_finish_request(rq.op, id);
        }
    }
}

/// `->bio_merge` (`blk_mq_sched_bio_merge` with an elevator).
#[inline(always)]
pub fn bio_merge(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    match q.sched.as_ref().map(|e| &e.data) {
        Some(ElevatorData::MqDeadline(_)) => mq_deadline::dd_bio_merge(q, core, bio, nsegs),
        Some(ElevatorData::Kyber(_)) => kyber::kyber_bio_merge(q, core, bio, nsegs),
        Some(ElevatorData::Bfq(_)) => elevator::blk_mq_sched_try_merge(q, core, bio, nsegs),
        None => false,
    }
}

/// `->insert_requests` for one request.
pub fn insert_requests(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    match q.sched.as_ref().map(|e| &e.data) {
        Some(ElevatorData::MqDeadline(_)) => mq_deadline::dd_insert_request(q, core, id, task),
        Some(ElevatorData::Kyber(_)) => kyber::kyber_insert_requests(q, core, id, task),
        Some(ElevatorData::Bfq(_)) => bfq_insert_request(q, core, id, task),
        None => unreachable!("insert into a queue without an elevator"),
    }
}

/// `->dispatch_request`: the next request for the driver, if the
/// scheduler gives one now.
pub fn dispatch_request(q: &mut RequestQueue, core: &mut BlockCore) -> Option<u32> {
    let e = q.sched.as_mut()?;
    match &mut e.data {
        ElevatorData::MqDeadline(dd) => dd.dispatch(&mut e.hash, &mut q.rqs, core.now, core.beh.dd_next),
        ElevatorData::Kyber(ky) => ky.kyber_dispatch_request(core.now),
        ElevatorData::Bfq(b) => {
            let id = b.bfq.dispatch(core.now)?;
            e.hash.del(q.rqs.get(id).end(), id);
            Some(id)
        }
    }
}

/// `->finish_request`: a request the scheduler dispatched has ended.
#[inline(always)]
pub fn finish_request(q: &mut RequestQueue, core: &mut BlockCore, id: u32) {
    if let Some(ElevatorData::Bfq(b)) = q.sched.as_mut().map(|e| &mut e.data) {
        b.finish_request(core, q.index, id);
    }
}

/// The scheduler's timer (bfq's idle slice timer) expired: true when the
/// queue should be run.
pub fn elevator_timer(q: &mut RequestQueue, core: &mut BlockCore) -> bool {
    match q.sched.as_mut().map(|e| &mut e.data) {
        Some(ElevatorData::Bfq(b)) => b.timer(core, q.index),
        _ => false,
    }
}

/// `bfq_insert_request`: an insert merge, or into bfq ('I'), the hash and
/// the one-hit merge cache.
fn bfq_insert_request(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    if elevator::insert_merge_or_trace(q, core, id, task) {
        return;
    }
    let e = q.sched.as_mut().expect("elevator");
    let ElevatorData::Bfq(b) = &mut e.data else { unreachable!("bfq's insert") };
    b.insert(core, q.rqs.get(id), id);
    if crate::merge::rq_mergeable(q.rqs.get(id)) {
        e.hash.add(&q.rqs, id);
        if q.last_merge.is_none() {
            q.last_merge = Some(id);
        }
    }
}
