//! bfq behind the elevator interface (bfq's `elevator_mq_ops` in
//! block/bfq-iosched.c): blk-mq's requests go in as bfq sees them, its
//! choices come out, and its idle slice timer becomes an engine event.

use crate::bio::{req, Bio, Op};
use crate::mq::Request;
use crate::submit::{BlockCore, SimEvent};

use super::bfq_ioprio::Ioprio;
use super::bfq_iosched::Bfq;
use super::bfq_queue::BfqRq;
use crate::limits::QueueAttrs;

/// `elevator_data` of a bfq queue.
pub struct BfqElv {
    pub bfq: Bfq,
    /// The idle timer expiry an engine event is scheduled for.
    timer_at: Option<u64>,
}

/// `op_is_sync`: reads, and writes with `REQ_SYNC`, `REQ_FUA` or
/// `REQ_PREFLUSH`.
pub fn op_is_sync(op: Op, flags: u32) -> bool {
    op == Op::Read || flags & (req::SYNC | req::FUA | req::PREFLUSH) != 0
}

fn bfq_rq(rq: &Request) -> BfqRq {
    BfqRq {
        sector: rq.sector,
        sectors: rq.nr_sectors,
        sync: op_is_sync(rq.op, rq.flags),
        meta: rq.flags & req::META != 0,
        fifo_time: 0,
        queue: 0,
    }
}

impl BfqElv {
    /// `bfq_init_queue`.
    pub fn new(attrs: &QueueAttrs) -> Self {
        BfqElv { bfq: Bfq::new(attrs.bfq, attrs.rotational, 1), timer_at: None }
    }

    /// The bio's queue key parts: the submitting task, its ioprio, its cgroup.
    fn bio_owner(core: &BlockCore, b: &Bio) -> (u32, bool, Ioprio, u32) {
        let task = core.current;
        (task, op_is_sync(b.op, b.flags), core.ioprio[task as usize], b.blkcg as u32)
    }

    /// `bfq_allow_bio_merge`.
    pub fn allow_merge(&self, core: &BlockCore, id: u32, b: &Bio) -> bool {
        let (task, sync, io, g) = Self::bio_owner(core, b);
        self.bfq.allow_merge(id, task, sync, io, g)
    }

    /// `bfq_request_merge`: the bio's queue's request starting at its end.
    pub fn request_merge(&self, core: &BlockCore, b: &Bio) -> Option<u32> {
        let (task, sync, io, g) = Self::bio_owner(core, b);
        self.bfq.front_candidate(task, sync, io, g, b.end_sector())
    }

    /// `__bfq_insert_request` for a request that found no insert merge.
    pub fn insert(&mut self, core: &BlockCore, rq: &Request, id: u32) {
        self.bfq.groups_asymmetric_above = core.beh.bfq_groups_asymmetric_above;
        self.bfq.stable_merge = core.beh.bfq_stable_merge;
        let first = core.bio(rq.bio);
        let ioprio = core.ioprio[rq.task as usize];
        self.bfq.insert(id, rq.task, ioprio, first.blkcg as u32, bfq_rq(rq), core.now);
    }

    /// `bfq_limit_depth` (`bfq_update_depths`): sync reads may use every
    /// scheduler tag; async I/O half of them and sync writes 3/4, or 3/16
    /// and 6/16 while any queue is weight raised. (6.1 applies the same
    /// shares to each sbitmap word, which comes to the same total.) A
    /// queue holding its weight's share already gets 1
    /// ([`Bfq::request_over_limit`], switch `bfq_tag_share`).
    pub fn limit_depth(&self, core: &BlockCore, task: u32, b: &Bio, nr_requests: u32) -> u32 {
        let sync = op_is_sync(b.op, b.flags);
        let d = if sync && !b.op.is_write() {
            nr_requests
        } else {
            let raised = self.bfq.wr_busy_queues() > 0;
            let d = match (raised, sync) {
                (false, false) => nr_requests >> 1,
                (false, true) => (nr_requests * 3) >> 2,
                (true, false) => (nr_requests * 3) >> 4,
                (true, true) => (nr_requests * 6) >> 4,
            };
            d.max(1)
        };
        let over = || self.bfq.request_over_limit(task, sync, core.ioprio[task as usize], b.blkcg as u32, d);
        if core.beh.bfq_tag_share && over() {
            1
        } else {
            d
        }
    }

    /// Schedule the engine event of a newly armed idle timer.
    fn arm_timer(&mut self, core: &mut BlockCore, queue: u32) {
        if let Some(t) = self.bfq.idle_timer {
            if self.timer_at != Some(t) {
                self.timer_at = Some(t);
                core.schedule(t, SimEvent::ElvTimer { queue });
            }
        }
    }

    /// `bfq_finish_requeue_request` → `bfq_completed_request`.
    pub fn finish_request(&mut self, core: &mut BlockCore, queue: u32, id: u32) {
        self.bfq.completed(id, core.now);
        self.arm_timer(core, queue);
    }

    /// `bfq_idle_slice_timer`: true when it fired (the queue is run after,
    /// `bfq_schedule_dispatch`); an event of a timer cancelled or re-armed
    /// since does nothing.
    pub fn timer(&mut self, core: &mut BlockCore, queue: u32) -> bool {
        if self.bfq.idle_timer != Some(core.now) {
            return false;
        }
        self.timer_at = None;
        self.bfq.idle_timer_fired(core.now);
        self.arm_timer(core, queue);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_ops() {
        assert!(op_is_sync(Op::Read, 0));
        assert!(!op_is_sync(Op::Write, 0));
        assert!(op_is_sync(Op::Write, req::SYNC));
        assert!(op_is_sync(Op::Write, req::FUA));
        assert!(!op_is_sync(Op::Discard, 0));
    }
}
