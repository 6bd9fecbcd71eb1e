//! What every elevator shares (block/elevator.c, blk-mq-sched.c): the
//! request hash by end sector (`elv_rqhash_*`), `elv_merge`'s lookup of a
//! merge candidate, `blk_mq_sched_try_merge` and the insert merge
//! (`elv_attempt_insert_merge`). A scheduler that uses them (mq-deadline)
//! calls them from its own operations; one that does not (kyber, whose
//! merges walk its per-context lists) never touches the hash.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::bio::{req, BioId};
use crate::merge::{self, BioMerge, ElvMerge};
use crate::mq::{trace_rq, wake_tag_waiters, RequestQueue, Rqs};
use crate::trace::Action;
use crate::stats::analysis::SectorHasher;
use crate::submit::BlockCore;

/// `elv_rqhash`: mergeable requests by end sector, newest first. Keyed
/// through the multiplicative sector hash, not SipHash: every request a
/// scheduler inserts, merges and dispatches is hashed by its end sector two
/// or three times, and SipHash cost each several hundred instructions
/// (the map is only ever looked up by key, so the order of its buckets is
/// seen nowhere).
#[derive(Default)]
pub struct RqHash {
    map: HashMap<u64, Chain, BuildHasherDefault<SectorHasher>>,
}

/// One hash chain, newest first. A chain of one request (nearly every
/// chain) is held in place: a vector per chain cost every request hashed
/// an allocation and its free.
enum Chain {
    One(u32),
    Many(Vec<u32>),
}

impl RqHash {
    /// `elv_rqhash_add`.
    pub fn add(&mut self, rqs: &Rqs, id: u32) {
        let r = rqs.get(id);
        match self.map.entry(r.end()) {
            Entry::Vacant(e) => {
                e.insert(Chain::One(id));
            }
            Entry::Occupied(mut e) => {
                let c = e.get_mut();
                match c {
                    Chain::One(old) => {
                        let old = *old;
                        *c = Chain::Many(vec![id, old]);
                    }
                    Chain::Many(v) => v.insert(0, id),
                }
            }
        }
    }

    /// `elv_rqhash_del`, given the end sector the request was hashed at.
    pub fn del(&mut self, end: u64, id: u32) {
        let Entry::Occupied(mut e) = self.map.entry(end) else { return };
        let empty = match e.get_mut() {
            Chain::One(x) => *x == id,
            Chain::Many(v) => {
                v.retain(|&x| x != id);
                v.is_empty()
            }
        };
        if empty {
            e.remove();
        }
    }

    /// `elv_rqhash_find`: a request ending at `sector`; unmergeable ones met
    /// on the way are dropped from the hash.
    pub fn find(&mut self, rqs: &Rqs, sector: u64) -> Option<u32> {
        let Entry::Occupied(mut e) = self.map.entry(sector) else { return None };
        let found = match e.get_mut() {
            Chain::One(x) => Some(*x).filter(|&id| merge::rq_mergeable(rqs.get(id))),
            Chain::Many(v) => {
                v.retain(|&id| merge::rq_mergeable(rqs.get(id)));
                v.first().copied()
            }
        };
        if found.is_none() {
            e.remove();
        }
        found
    }

    /// `elv_rqhash_reposition`: a request whose end changed (or that
    /// merged) moves to the head of its new chain.
    pub fn reposition(&mut self, rqs: &Rqs, id: u32, old_end: u64) {
        self.del(old_end, id);
        if merge::rq_mergeable(rqs.get(id)) {
            self.add(rqs, id);
        }
    }
}

/// `elv_merge`: the one-hit cache, the end-sector hash (back merge), then
/// the scheduler's `request_merge` (a front merge candidate).
#[inline(always)]
pub fn elv_merge(q: &mut RequestQueue, core: &BlockCore, bio: BioId) -> (ElvMerge, u32) {
    let b = core.bio(bio);
    if let Some(lm) = q.last_merge {
        let r = q.rqs.get(lm);
        if merge::blk_rq_merge_ok(r, b) {
            let t = merge::blk_try_merge(r, b, &q.lim);
            if t != ElvMerge::None && q.sched.as_ref().is_some_and(|e| e.allow_merge(core, lm, b)) {
                return (t, lm);
            }
        }
    }
    if q.attrs.nomerges == 1 {
        return (ElvMerge::None, 0);
    }
    let e = q.sched.as_mut().expect("elevator");
    if let Some(id) = e.hash.find(&q.rqs, b.iter.sector) {
        if merge::blk_rq_merge_ok(q.rqs.get(id), b) && e.allow_merge(core, id, b) {
            let t = if merge::blk_discard_mergable(q.rqs.get(id), &q.lim) { ElvMerge::Discard } else { ElvMerge::Back };
            return (t, id);
        }
    }
    if let Some(id) = e.request_merge(core, b) {
        if merge::blk_rq_merge_ok(q.rqs.get(id), b) {
            let t = if merge::blk_discard_mergable(q.rqs.get(id), &q.lim) { ElvMerge::Discard } else { ElvMerge::Front };
            return (t, id);
        }
    }
    (ElvMerge::None, 0)
}

/// `blk_mq_sched_try_merge`: merge the bio into `elv_merge`'s candidate,
/// then try to merge the grown request with its neighbour in sector order.
#[inline(always)]
pub fn blk_mq_sched_try_merge(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    let (kind, id) = elv_merge(q, core, bio);
    let (old_sector, old_end) = match kind {
        ElvMerge::None => return false,
        _ => (q.rqs.get(id).sector, q.rqs.get(id).end()),
    };
    let status = match kind {
        ElvMerge::Back => merge::bio_attempt_back_merge(core, q.rqs.get_mut(id), bio, nsegs, &q.lim),
        ElvMerge::Front => merge::bio_attempt_front_merge(core, q.rqs.get_mut(id), bio, nsegs, &q.lim),
        ElvMerge::Discard => return merge::bio_attempt_discard_merge(core, q.rqs.get_mut(id), bio, &q.lim) == BioMerge::Ok,
        ElvMerge::None => unreachable!(),
    };
    if status != BioMerge::Ok {
        if q.last_merge == Some(id) && q.rqs.get(id).flags & req::NOMERGE != 0 {
            q.last_merge = None;
        }
        return false;
    }
    let e = q.sched.as_mut().expect("elevator");
    // elv_merged_request: the request moved in the hash (back) or the
    // scheduler's order (front) either way.
    e.hash.reposition(&q.rqs, id, old_end);
    e.request_merged(&q.rqs, id, old_sector, core.now);
    let merged = match kind {
        // attempt_back_merge: the next request in sector order.
        ElvMerge::Back => e.next_request(&q.rqs, id).is_some_and(|next| attempt_req_merge(q, core, id, next)),
        // attempt_front_merge: into the previous one.
        _ => e.former_request(&q.rqs, id).is_some_and(|prev| attempt_req_merge(q, core, prev, id)),
    };
    if !merged {
        q.last_merge = Some(id);
    }
    true
}

/// `blk_attempt_req_merge` / `attempt_merge` inside the elevator: merge
/// request `next` into `rq`, then drop `next` from the scheduler and free it.
pub fn attempt_req_merge(q: &mut RequestQueue, core: &mut BlockCore, rq: u32, next: u32) -> bool {
    let old_end = q.rqs.get(rq).end();
    let (r, n) = q.rqs.get2_mut(rq, next);
    if !merge::attempt_merge(core, r, n, &q.lim) {
        return false;
    }
    let discard = merge::blk_discard_mergable(q.rqs.get(rq), &q.lim);
    if let Some(e) = q.sched.as_mut() {
        if !discard {
            // elv_merge_requests.
            e.requests_merged(&mut q.rqs, rq, next, core.now);
            e.hash.reposition(&q.rqs, rq, old_end);
        } else {
            e.remove_request(&mut q.rqs, next, core.now);
        }
    }
    if q.last_merge == Some(next) || !discard {
        q.last_merge = Some(rq);
    }
    let gone = q.rqs.take(next);
    q.put_tags(&gone);
    crate::rq_qos::rq_qos_done(q, core, next, &gone);
    wake_tag_waiters(q, core);
    true
}

/// The start of an elevator's insert (`dd_insert_request`,
/// `bfq_insert_request`): an insert merge (true: nothing more to do), or
/// the request is counted and traced as inserted ('I').
pub fn insert_merge_or_trace(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) -> bool {
    if elv_attempt_insert_merge(q, core, id) {
        return true;
    }
    core.stats[q.dev as usize].inserts += 1;
    trace_rq(core, Action::Insert, q.rqs.get(id), task);
    false
}

/// `elv_attempt_insert_merge`: into `last_merge`, then repeatedly into a
/// request ending where this one starts.
pub fn elv_attempt_insert_merge(q: &mut RequestQueue, core: &mut BlockCore, id: u32) -> bool {
    if q.attrs.nomerges == 2 {
        return false;
    }
    if let Some(lm) = q.last_merge {
        if lm != id && attempt_req_merge(q, core, lm, id) {
            return true;
        }
    }
    if q.attrs.nomerges == 1 {
        return false;
    }
    let mut rq = id;
    let mut merged = false;
    loop {
        let pos = q.rqs.get(rq).sector;
        let Some(target) = q.sched.as_mut().expect("elevator").hash.find(&q.rqs, pos) else { break };
        if target == rq || !attempt_req_merge(q, core, target, rq) {
            break;
        }
        merged = true;
        rq = target;
    }
    merged
}
