//! What holds bios or requests back on their way to a disk: blk-cgroup's
//! throttling of bios ([`throttle`], io.max) and the rq-qos chain.
//!
//! The rq-qos chain (block/blk-rq-qos.c, blk-rq-qos.h): policies a request
//! queue runs at fixed points of a request's life — `rq_qos_throttle` before
//! a request is allocated for a bio (the submitter may sleep there),
//! `rq_qos_track` once it is, `rq_qos_issue` when the driver takes it,
//! `rq_qos_done` when it ends or is freed after a merge, and `rq_qos_cleanup`
//! when a throttled bio gets no request after all.
//!
//! The kernel links the policies of a queue in a list (`q->rq_qos`) and
//! every hook is an inline test of that pointer before the walk; here
//! `RequestQueue::rq_qos` is `None` for a queue with no policy, and each
//! hook is one test of it on the paths every bio takes.
//!
//! Also here: `struct rq_depth` and its scaling (`rq_depth_calc_max_depth`,
//! `rq_depth_scale_up`, `rq_depth_scale_down`), and `struct rq_wait` with
//! `rq_qos_wait`'s queueing rule.

pub mod stat;
pub mod throttle;
pub mod wbt;

use std::collections::VecDeque;

use crate::bio::BioId;
use crate::mq::{Request, RequestQueue, Waiter};
use crate::submit::BlockCore;

/// The policies attached to a queue (`q->rq_qos`). Writeback throttling is
/// the only one modelled.
pub struct RqQos {
    pub wbt: wbt::RqWb,
}

/// `struct rq_depth`: the depth a policy allows, scaled in steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RqDepth {
    pub max_depth: u32,
    pub scale_step: i32,
    /// The last scale up reached the ceiling: the next one does nothing.
    pub scaled_max: bool,
    /// `blk_queue_depth` when the policy was set up.
    pub queue_depth: u32,
    pub default_depth: u32,
}

impl RqDepth {
    /// `rq_depth_calc_max_depth`: `max_depth` for the current step; true
    /// when scaling up cannot raise it further.
    pub fn rq_depth_calc_max_depth(&mut self) -> bool {
        if self.queue_depth == 1 {
            // A QD=1 device keeps one request ready behind the one in
            // flight (depth 2) unless scaled down.
            self.max_depth = if self.scale_step > 0 { 1 } else { 2 };
            return self.scale_step <= 0;
        }
        let mut depth = self.default_depth.min(self.queue_depth);
        let mut at_max = false;
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> (self.scale_step as u32).min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            depth = 1u32.saturating_add((depth - 1).checked_shl((-self.scale_step) as u32).unwrap_or(u32::MAX));
            if depth > maxd {
                depth = maxd;
                at_max = true;
            }
        }
        self.max_depth = depth;
        at_max
    }

    /// `rq_depth_scale_up`: one step towards more depth; false when the
    /// previous step reached the ceiling.
    pub fn rq_depth_scale_up(&mut self) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        self.scaled_max = self.rq_depth_calc_max_depth();
        true
    }

    /// `rq_depth_scale_down`: one step towards less depth (a latency
    /// violation from a negative step goes straight to step 0); false at
    /// depth 1.
    pub fn rq_depth_scale_down(&mut self, hard_throttle: bool) -> bool {
        if self.max_depth == 1 {
            return false;
        }
        if self.scale_step < 0 && hard_throttle {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.rq_depth_calc_max_depth();
        true
    }
}

/// `struct rq_wait`: requests in flight under one limit, and the
/// submitters sleeping for a slot, oldest first.
#[derive(Clone, Debug, Default)]
pub struct RqWait {
    pub inflight: u32,
    pub waiters: VecDeque<Waiter>,
}

impl RqWait {
    /// `rq_wait_inc_below`.
    pub fn rq_wait_inc_below(&mut self, limit: u32) -> bool {
        if self.inflight >= limit {
            return false;
        }
        self.inflight += 1;
        true
    }

    /// `rq_qos_wait`: a slot at once when nobody sleeps and one is free
    /// (true); otherwise the submitter queues behind the sleepers.
    pub fn rq_qos_wait(&mut self, limit: u32, w: Waiter) -> bool {
        if self.waiters.is_empty() && self.rq_wait_inc_below(limit) {
            return true;
        }
        self.waiters.push_back(w);
        false
    }

    /// `wake_up_all` through `rq_qos_wake_function`: sleepers in order each
    /// take a slot under their own limit; the first that cannot stops the
    /// walk. Woken submitters go to `woken`, holding their slot.
    pub fn wake_all(&mut self, qi: u32, woken: &mut Vec<(u32, Waiter, Option<(bool, bool)>)>, limit: impl Fn(&Waiter) -> u32) {
        while let Some(&w) = self.waiters.front() {
            if !self.rq_wait_inc_below(limit(&w)) {
                return;
            }
            woken.push((qi, w, None));
            self.waiters.pop_front();
        }
    }
}

/// The policies a request queue starts the run with: writeback throttling
/// unless its latency target is 0 (`wbt_init`: its depth is
/// `blk_queue_depth`, taken as the queue's `nr_requests`).
pub fn rq_qos_init(attrs: &crate::limits::QueueAttrs, reclaim: crate::profile::WbtReclaim) -> Option<Box<RqQos>> {
    (attrs.wbt_lat_nsec != 0).then(|| Box::new(RqQos { wbt: wbt::wbt_init(attrs.nr_requests, attrs.wbt_lat_nsec, attrs.write_cache, reclaim) }))
}

// ---- the hooks -------------------------------------------------------------

/// `rq_qos_throttle`: false when the submitter must sleep (it is queued
/// and resumes through the engine's woken list).
#[inline(always)]
pub fn rq_qos_throttle(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    match q.rq_qos.as_deref_mut() {
        None => true,
        Some(qos) => wbt::wbt_wait(&mut qos.wbt, core, q.index, bio, nsegs),
    }
}

/// `rq_qos_cleanup`: a throttled bio that got no request gives its slot
/// back. (Request allocation never fails in the model once a tag is
/// waited for, so only a policy's own callers reach this.)
pub fn rq_qos_cleanup(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId) {
    if let Some(qos) = q.rq_qos.as_deref_mut() {
        wbt::wbt_cleanup(&mut qos.wbt, core, q.index, bio);
    }
}

/// `rq_qos_track`: the new request remembers what the policy counted.
#[inline(always)]
pub fn rq_qos_track(q: &RequestQueue, rq: &mut Request, core: &BlockCore, bio: BioId) {
    if let Some(qos) = q.rq_qos.as_deref() {
        let b = core.bio(bio);
        rq.wbt_flags = wbt::bio_to_wbt_flags(&qos.wbt, b.op, b.flags);
    }
}

/// `blk_mq_start_request` with `QUEUE_FLAG_STATS` set (a policy keeps
/// statistics): the issue time is stamped and `rq_qos_issue` called.
#[inline(always)]
pub fn rq_qos_issue(q: &mut RequestQueue, id: u32, now: u64) {
    if let Some(qos) = q.rq_qos.as_deref_mut() {
        let rq = q.rqs.get_mut(id);
        rq.io_start_time_ns = now;
        wbt::wbt_issue(&mut qos.wbt, id, rq.wbt_flags, now);
    }
}

/// A request ends (`__blk_mq_end_request`): `blk_stat_add` with its
/// latency, then `rq_qos_done`.
#[inline(always)]
pub fn rq_qos_completed(q: &mut RequestQueue, core: &mut BlockCore, id: u32, rq: &Request) {
    if let Some(qos) = q.rq_qos.as_deref_mut() {
        wbt::wbt_completed(&mut qos.wbt, core, q.index, id, rq);
    }
}

/// `rq_qos_done` for a request freed without completing (merged into
/// another: `blk_mq_free_request`).
#[inline(always)]
pub fn rq_qos_done(q: &mut RequestQueue, core: &mut BlockCore, id: u32, rq: &Request) {
    if let Some(qos) = q.rq_qos.as_deref_mut() {
        wbt::wbt_done(&mut qos.wbt, core, q.index, id, rq.wbt_flags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(queue_depth: u32, step: i32) -> RqDepth {
        let mut d = RqDepth { max_depth: 0, scale_step: step, scaled_max: false, queue_depth, default_depth: 16 };
        d.rq_depth_calc_max_depth();
        d
    }

    #[test]
    fn max_depth_per_step() {
        // min(16, 64) = 16; step 1: 1 + (15 >> 1) = 8; step 2: 1 + (15 >> 2)
        // = 4; step 4: 1 + 0 = 1; step -1: 1 + (15 << 1) = 31 (below 3*64/4
        // = 48); step -2: 1 + 60 = 61, capped at 48.
        let got: Vec<u32> = [0, 1, 2, 4, -1, -2].iter().map(|&s| depth(64, s).max_depth).collect();
        assert_eq!(got, [16, 8, 4, 1, 31, 48]);
        // A queue of depth 4: min(16, 4) = 4; step 1: 1 + (3 >> 1) = 2.
        assert_eq!((depth(4, 0).max_depth, depth(4, 1).max_depth), (4, 2));
        // QD=1: 2 unless scaled down, then 1.
        assert_eq!((depth(1, 0).max_depth, depth(1, 1).max_depth), (2, 1));
    }

    #[test]
    fn scaling_stops_at_the_ends() {
        // Depth 64: up from 0 gives 31 (step -1), then 48 capped (step -2,
        // scaled_max), then no further step.
        let mut d = depth(64, 0);
        assert!(d.rq_depth_scale_up() && d.max_depth == 31 && !d.scaled_max);
        assert!(d.rq_depth_scale_up() && d.max_depth == 48 && d.scaled_max);
        assert!(!d.rq_depth_scale_up() && d.scale_step == -2);
        // A hard throttle from a negative step goes to step 0 (16), then
        // 8, 4, 2, 1 and no further.
        assert!(d.rq_depth_scale_down(true) && (d.scale_step, d.max_depth) == (0, 16));
        let steps: Vec<u32> = (0..4).map(|_| {
            d.rq_depth_scale_down(true);
            d.max_depth
        }).collect();
        assert_eq!(steps, [8, 4, 2, 1]);
        assert!(!d.rq_depth_scale_down(true) && d.scale_step == 4);
    }

    #[test]
    fn waiters_queue_behind_sleepers_and_wake_in_order() {
        let w = |task| Waiter { task, bio: task, nsegs: 1 };
        let mut rqw = RqWait::default();
        assert!(rqw.rq_qos_wait(2, w(1)) && rqw.rq_qos_wait(2, w(2)));
        assert!(!rqw.rq_qos_wait(2, w(3)));
        // Limit 2 and two in flight: one completes, and 4 cannot pass 3.
        rqw.inflight -= 1;
        assert!(!rqw.rq_qos_wait(4, w(4)));
        let mut woken = Vec::new();
        rqw.wake_all(0, &mut woken, |_| 2);
        assert_eq!(woken.iter().map(|x| x.1.task).collect::<Vec<_>>(), [3]);
        assert_eq!((rqw.inflight, rqw.waiters.len()), (2, 1));
    }
}
