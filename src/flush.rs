//! The flush state machine (block/blk-flush.c): how a request with
//! `REQ_PREFLUSH` or `REQ_FUA` reaches a disk with a volatile write cache.
//!
//! `blk_insert_flush` works out the request's *policy*, the steps it needs
//! (`REQ_FSEQ_*`): `PREFLUSH` (a cache flush before the data, for
//! `REQ_PREFLUSH`), `DATA` (it carries data) and `POSTFLUSH` (a flush after
//! the data, for `REQ_FUA` on a disk without FUA). The request loses
//! `REQ_PREFLUSH` (and `REQ_FUA` without FUA support) and gains `REQ_SYNC`,
//! so a FUA write on virtio-blk is issued as `WS`.
//!
//! Flushes are not issued per request: requests waiting for one sit on the
//! pending list, and `blk_kick_flush` issues one flush request (`FF`, the
//! queue's `flush_rq`) for all of them when none is in flight (C1) — but
//! not while data of a flush sequence is in flight and the oldest pending
//! request has waited less than `FLUSH_PENDING_TIMEOUT` (5 s, C2), so one
//! flush covers the data writes that complete meanwhile. When the flush
//! completes, every request it served moves to its next step; a request
//! whose steps are done ends (`block_rq_complete` with 0 bytes, its data
//! having completed before).
//!
//! Which path the data takes changed in 6.5 ([`FlushDataPath`]): up to
//! 6.4 a flush write with nothing to flush (FUA on a FUA disk) is inserted
//! straight into `hctx->dispatch`, and the data of a sequence goes through
//! the requeue list, which kblockd moves to `hctx->dispatch` (the model
//! runs that work at once: kblockd's high-priority kworker preempts the
//! submitter); from 6.5 both take the normal submission path (plug,
//! scheduler, direct issue), a post-flush request counting as data in
//! flight. The flush request goes to the tail of `hctx->dispatch` up to
//! 6.4, to its head from 6.5.
//!
//! Simplified: one flush queue per disk (the kernel has one per hardware
//! queue); a sequence's data step goes to the head of `hctx->dispatch` in
//! every version (6.12 inserts it at the head of the scheduler's or
//! software queue, which dispatches it as soon); completions of a flush
//! sequence never fail.

use crate::bio::{req, Op};
use crate::mq::{blk_mq_end_request_done, blk_mq_run_hw_queue, trace_rq, wake_tag_waiters, Request, RequestQueue};
use crate::profile::{FlushDataPath, HZ};
use crate::stats::diskstats::{jiffies, FLUSH};
use crate::submit::{BlockCore, KWORKER};
use crate::trace::Action;

/// `REQ_FSEQ_PREFLUSH`, `_DATA`, `_POSTFLUSH`, `_DONE`: the steps of a
/// sequence, in order.
pub const FSEQ_PREFLUSH: u8 = 1 << 0;
pub const FSEQ_DATA: u8 = 1 << 1;
pub const FSEQ_POSTFLUSH: u8 = 1 << 2;
pub const FSEQ_DONE: u8 = 1 << 3;
const FSEQ_ACTIONS: u8 = FSEQ_PREFLUSH | FSEQ_DATA | FSEQ_POSTFLUSH;

/// `FLUSH_PENDING_TIMEOUT`, in jiffies.
const FLUSH_PENDING_TIMEOUT: u64 = 5 * HZ;

/// A disk's `struct blk_flush_queue`.
#[derive(Clone, Debug, Default)]
pub struct FlushQueue {
    /// Requests in a flush sequence and the steps they have done
    /// (`rq->flush.seq`).
    seq: Vec<(u32, u8)>,
    /// `flush_queue[flush_pending_idx]`: waiting for the next flush.
    pending: Vec<u32>,
    /// `flush_queue[flush_running_idx]`: what the flush in flight serves.
    running: Vec<u32>,
    /// The flush request in flight (`flush_pending_idx != flush_running_idx`).
    flush_rq: Option<u32>,
    /// `flush_pending_since`, in jiffies.
    pending_since: u64,
    /// `flush_data_in_flight`.
    data_in_flight: u32,
}

impl FlushQueue {
    fn steps(&mut self, id: u32) -> &mut u8 {
        &mut self.seq.iter_mut().find(|(r, _)| *r == id).expect("request in a flush sequence").1
    }
}

/// `blk_flush_policy`: the steps `rq` needs on `q`.
pub fn blk_flush_policy(q: &RequestQueue, rq: &Request) -> u8 {
    let mut policy = 0;
    if rq.nr_sectors > 0 {
        policy |= FSEQ_DATA;
    }
    if q.attrs.write_cache {
        if rq.flags & req::PREFLUSH != 0 {
            policy |= FSEQ_PREFLUSH;
        }
        if rq.flags & req::FUA != 0 && !q.attrs.fua {
            policy |= FSEQ_POSTFLUSH;
        }
    }
    policy
}

/// The first step not done yet (`blk_flush_cur_seq`).
fn cur_seq(done: u8) -> u8 {
    1 << (!done).trailing_zeros().min(3)
}

/// `blk_insert_flush` for request `id` of queue `qi`, just allocated from
/// a bio with `REQ_PREFLUSH` or `REQ_FUA`. True when the flush machinery
/// took it; false when it goes on down the normal path.
pub fn blk_insert_flush(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, id: u32) -> bool {
    let q = &mut qs[qi];
    let policy = blk_flush_policy(q, q.rqs.get(id));
    let rq = q.rqs.get_mut(id);
    rq.flags &= !req::PREFLUSH;
    if !q.attrs.fua {
        rq.flags &= !req::FUA;
    }
    // "REQ_PREFLUSH|REQ_FUA implies REQ_SYNC".
    rq.flags |= req::SYNC;
    let normal = core.beh.flush_data_path == FlushDataPath::Normal;
    if policy == 0 {
        // An empty flush on a disk without a volatile cache.
        end_request(qs, core, qi, id);
        return true;
    }
    if policy == FSEQ_DATA {
        if normal {
            return false;
        }
        // blk_mq_request_bypass_insert(rq, false, true).
        q.dispatch_list.push_back(id);
        blk_mq_run_hw_queue(qs, core, qi, false);
        return true;
    }
    // Unmergeable from here on, as RQF_FLUSH_SEQ makes it.
    rq.flags |= req::NOMERGE;
    rq.flush_seq = true;
    if normal && policy == FSEQ_DATA | FSEQ_POSTFLUSH {
        // 615939a2ae73: sent as a normal request, the post-flush to follow.
        q.flush.seq.push((id, FSEQ_PREFLUSH));
        q.flush.data_in_flight += 1;
        return false;
    }
    q.flush.seq.push((id, 0));
    blk_flush_complete_seq(qs, core, qi, id, FSEQ_ACTIONS & !policy);
    true
}

/// `blk_flush_complete_seq`: `rq` finished the steps `done`; start its
/// next one, then consider issuing a flush.
fn blk_flush_complete_seq(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, id: u32, done: u8) {
    let fq = &mut qs[qi].flush;
    let steps = fq.steps(id);
    *steps |= done;
    match cur_seq(*steps) {
        FSEQ_PREFLUSH | FSEQ_POSTFLUSH => {
            if fq.pending.is_empty() {
                fq.pending_since = jiffies(core.now);
            }
            fq.pending.push(id);
        }
        FSEQ_DATA => {
            // Through the requeue list, which kblockd moves to the head of
            // hctx->dispatch.
            fq.data_in_flight += 1;
            qs[qi].dispatch_list.push_front(id);
            blk_mq_run_hw_queue(qs, core, qi, true);
        }
        _ => {
            fq.seq.retain(|&(r, _)| r != id);
            qs[qi].rqs.get_mut(id).flush_seq = false;
            end_request(qs, core, qi, id);
        }
    }
    blk_kick_flush(qs, core, qi);
}

/// `blk_kick_flush`: issue one flush for the pending requests, unless one
/// is in flight (C1) or data of a sequence is in flight and the oldest
/// pending request is younger than `FLUSH_PENDING_TIMEOUT` (C2).
fn blk_kick_flush(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize) {
    let q = &mut qs[qi];
    let fq = &mut q.flush;
    if fq.flush_rq.is_some() || fq.pending.is_empty() {
        return;
    }
    if fq.data_in_flight > 0 && jiffies(core.now) < fq.pending_since + FLUSH_PENDING_TIMEOUT {
        return;
    }
    fq.running = std::mem::take(&mut fq.pending);
    // Without a scheduler the flush borrows the first request's driver
    // tag; with one it takes a driver tag of its own at dispatch.
    // The flush request is set up from the first pending one (its context
    // and tag); it carries no data and ends no bios.
    let mut flush = q.rqs.get(fq.running[0]).clone();
    flush.op = Op::Flush;
    flush.flags = req::PREFLUSH;
    (flush.sector, flush.nr_sectors, flush.nr_phys_segments) = (0, 0, 0);
    (flush.start_time_ns, flush.task) = (core.now, KWORKER);
    (flush.sched_tag, flush.driver_tag, flush.in_elevator, flush.flush_seq) = (false, q.sched.is_none(), false, true);
    let fid = q.rqs.alloc(flush);
    q.flush.flush_rq = Some(fid);
    match core.beh.flush_data_path {
        FlushDataPath::Requeue => q.dispatch_list.push_back(fid),
        FlushDataPath::Normal => q.dispatch_list.push_front(fid),
    }
    blk_mq_run_hw_queue(qs, core, qi, true);
}

/// The device completed request `id`, marked `flush_seq`: the
/// flush request (`flush_end_io`) or a sequence's data
/// (`mq_flush_data_end_io`).
pub fn rq_completed(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, id: u32) {
    let q = &mut qs[qi];
    let dev = q.dev as usize;
    let elevator = q.sched.is_some();
    if q.flush.flush_rq == Some(id) {
        // flush_end_io: accounted as a flush (blk_account_io_flush), the
        // served requests move on.
        let rq = q.rqs.take(id);
        trace_rq(core, Action::Complete, &rq, 0);
        let s = &mut core.stats[dev];
        s.completed += 1;
        s.disk.in_driver -= 1;
        s.disk.ios[FLUSH] += 1;
        s.disk.nsecs[FLUSH] += core.now - rq.start_time_ns;
        if elevator {
            q.put_tags(&rq);
        }
        q.flush.flush_rq = None;
        let running = std::mem::take(&mut q.flush.running);
        for r in running {
            let step = cur_seq(*qs[qi].flush.steps(r));
            blk_flush_complete_seq(qs, core, qi, r, step);
        }
    } else {
        // blk_update_request traces the data's completion and accounts
        // its sectors; the request stays (its bios are ended with it).
        let rq = q.rqs.get(id);
        trace_rq(core, Action::Complete, rq, 0);
        let (op, flags, sectors) = (rq.op, rq.flags, rq.nr_sectors as u64);
        let s = &mut core.stats[dev];
        s.completed += 1;
        s.disk.in_driver -= 1;
        s.disk.account_sectors(op, flags, sectors);
        let rq = q.rqs.get_mut(id);
        rq.nr_sectors = 0;
        if elevator && rq.driver_tag {
            // mq_flush_data_end_io gives the driver tag back.
            rq.driver_tag = false;
            q.driver_tags -= 1;
        }
        q.flush.data_in_flight -= 1;
        blk_flush_complete_seq(qs, core, qi, id, FSEQ_DATA);
    }
    wake_tag_waiters(&mut qs[qi], core);
    blk_mq_run_hw_queue(qs, core, qi, true);
}

/// `blk_mq_end_request` of a request whose sequence is done (or that
/// needed none): `block_rq_complete` with what is left of it (nothing, once
/// its data completed), accounted as an I/O of its op, its bios ended.
fn end_request(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, id: u32) {
    let q = &mut qs[qi];
    let rq = q.rqs.take(id);
    blk_mq_end_request_done(q, core, rq, id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_run_in_order() {
        // Nothing done: the pre-flush first; then the data, the post-flush,
        // and done once all three are.
        assert_eq!(cur_seq(0), FSEQ_PREFLUSH);
        assert_eq!(cur_seq(FSEQ_PREFLUSH), FSEQ_DATA);
        assert_eq!(cur_seq(FSEQ_PREFLUSH | FSEQ_DATA), FSEQ_POSTFLUSH);
        assert_eq!(cur_seq(FSEQ_ACTIONS), FSEQ_DONE);
        // A FUA write without FUA support: policy DATA | POSTFLUSH, so the
        // pre-flush counts as done and the data comes first.
        assert_eq!(cur_seq(FSEQ_ACTIONS & !(FSEQ_DATA | FSEQ_POSTFLUSH)), FSEQ_DATA);
    }
}
