//! I/O schedulers behind the elevator interface (block/elevator.h,
//! `struct elevator_mq_ops`). `none` has no elevator: its software-queue
//! merge and dispatch live in [`crate::mq`]. [`mq_deadline`] is the
//! elevator most single-queue disks get by default; [`kyber`] the
//! token-based one for fast devices.
//!
//! [`ElevatorQueue`] is `struct elevator_queue`: the request hash every
//! elevator may use ([`elevator::RqHash`]) and the scheduler's own data.
//! The block layer calls the scheduler only through the operations below,
//! which carry the names of `elevator_mq_ops` (`bio_merge`,
//! `request_merge`, `request_merged`, `requests_merged`,
//! `insert_requests`, `dispatch_request`, `has_work`, `limit_depth`,
//! `next_request`, `former_request`, `completed_request`,
//! `finish_request`); each dispatches on the scheduler in
//! force, so the queue pays one test of its kind, not an indirect call.

pub mod elevator;
pub mod kyber;
pub mod mq_deadline;

use crate::bio::{req, BioId, Op};
use crate::limits::{Elevator, QueueAttrs};
use crate::mq::{Request, RequestQueue, Rqs};
use crate::profile::Behaviour;
use crate::submit::BlockCore;
use elevator::RqHash;
use kyber::Kyber;
use mq_deadline::MqDeadline;

/// `elevator_queue->elevator_data`: the scheduler in force.
pub enum ElevatorData {
    MqDeadline(MqDeadline),
    Kyber(Box<Kyber>),
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
            Elevator::Bfq => unreachable!("{} is refused by the scenario reader", e.name()),
        };
        Some(ElevatorQueue { hash: RqHash::default(), data })
    }

    /// `->has_work`.
    pub fn has_work(&self) -> bool {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.has_work(),
            ElevatorData::Kyber(ky) => ky.has_work(),
        }
    }

    /// Requests the scheduler holds.
    pub fn queued(&self) -> usize {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.queued(),
            ElevatorData::Kyber(ky) => ky.queued(),
        }
    }

    /// `->limit_depth`: how many scheduler tags an allocation for `op` may
    /// see in use (`data->shallow_depth`; `nr_requests` when unlimited).
    #[inline(always)]
    pub fn limit_depth(&self, op: Op, flags: u32, nr_requests: u32) -> u32 {
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
        }
    }

    /// `->request_merge`'s lookup: a request of direction `dir` starting
    /// at `sector` (a front merge candidate).
    #[inline(always)]
    pub fn request_merge(&self, dir: usize, sector: u64) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.front_candidate(dir, sector),
            ElevatorData::Kyber(_) => None,
        }
    }

    /// `->request_merged`: request `id` grew (its start was `old_sector`).
    pub fn request_merged(&mut self, rqs: &Rqs, id: u32, old_sector: u64) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.reposition(rqs, id, old_sector),
            ElevatorData::Kyber(_) => {}
        }
    }

    /// `->requests_merged`: `next` was merged into `rq` and leaves.
    pub fn requests_merged(&mut self, rqs: &mut Rqs, rq: u32, next: u32) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.merged_requests(&mut self.hash, rqs, rq, next),
            ElevatorData::Kyber(_) => {}
        }
    }

    /// A request merged away as a discard range leaves the scheduler.
    pub fn remove_request(&mut self, rqs: &mut Rqs, id: u32) {
        match &mut self.data {
            ElevatorData::MqDeadline(dd) => dd.remove(&mut self.hash, rqs, id),
            ElevatorData::Kyber(_) => {}
        }
    }

    /// `->next_request` (`elv_latter_request`): the request after `id` in
    /// the scheduler's sector order.
    pub fn next_request(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.latter(rqs, id),
            ElevatorData::Kyber(_) => None,
        }
    }

    /// `->former_request` (`elv_former_request`).
    pub fn former_request(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        match &self.data {
            ElevatorData::MqDeadline(dd) => dd.former(rqs, id),
            ElevatorData::Kyber(_) => None,
        }
    }

    /// `->completed_request` then `->finish_request`, as
    /// `__blk_mq_end_request` and `blk_mq_free_request` call them, for
    /// request `id` ending at `now_ns`.
    #[inline(always)]
    pub fn completed_request(&mut self, rq: &Request, id: u32, now_ns: u64) {
        match &mut self.data {
            ElevatorData::MqDeadline(_) => {}
            ElevatorData::Kyber(ky) => {
                ky.kyber_completed_request(rq, id, now_ns);
                ky.kyber_finish_request(rq.op, id);
            }
        }
    }
}

/// `->bio_merge` (`blk_mq_sched_bio_merge` with an elevator).
#[inline(always)]
pub fn bio_merge(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    match q.sched.as_ref().map(|e| &e.data) {
        Some(ElevatorData::MqDeadline(_)) => mq_deadline::dd_bio_merge(q, core, bio, nsegs),
        Some(ElevatorData::Kyber(_)) => kyber::kyber_bio_merge(q, core, bio, nsegs),
        None => false,
    }
}

/// `->insert_requests` for one request.
pub fn insert_requests(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    match q.sched.as_ref().map(|e| &e.data) {
        Some(ElevatorData::MqDeadline(_)) => mq_deadline::dd_insert_request(q, core, id, task),
        Some(ElevatorData::Kyber(_)) => kyber::kyber_insert_requests(q, core, id, task),
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
    }
}
