//! mq-deadline (block/mq-deadline.c), one priority level.
//!
//! Requests wait in a sector-sorted tree and an arrival FIFO per direction.
//! Dispatch continues a batch upward from the last dispatched request
//! (`fifo_batch` requests), otherwise picks reads unless writes have been
//! starved `writes_starved` times, taking the FIFO head when its deadline
//! passed or nothing lies ahead. A hash by end sector and the sorted tree
//! find back and front merge candidates (`elv_merge`, `dd_request_merge`).
//!
//! What "ahead" means changed in 6.5 ([`DdNext`]): up to 6.4 the request
//! after the last dispatched one in sector order at the time it was
//! dispatched (`next_rq`, none before the first dispatch of a direction);
//! from 6.5 the lowest request at or above the last dispatched sector.

use std::collections::{BTreeSet, VecDeque};

use super::elevator::{self, RqHash};
use super::ElevatorData;
use crate::bio::{req, BioId, Op};
use crate::mq::{Request, RequestQueue, Rqs};
use crate::profile::{DdNext, HZ};
use crate::stats::diskstats::jiffies;
use crate::submit::BlockCore;

/// `enum dd_data_dir`: reads, and everything `op_is_write`.
pub fn data_dir(rq: &Request) -> usize {
    rq.op.is_write() as usize
}

pub struct MqDeadline {
    sort: [BTreeSet<(u64, u32)>; 2],
    fifo: [VecDeque<u32>; 2],
    latest_pos: [u64; 2],
    /// `per_prio->next_rq[]` (up to 6.4).
    next_rq: [Option<u32>; 2],
    last_dir: usize,
    batching: u32,
    starved: u32,
    pub fifo_batch: u32,
    pub writes_starved: u32,
    pub front_merges: bool,
    /// Read and write expiry, in jiffies.
    pub fifo_expire: [u64; 2],
}

impl Default for MqDeadline {
    fn default() -> Self {
        MqDeadline {
            sort: Default::default(),
            fifo: Default::default(),
            latest_pos: [0; 2],
            next_rq: [None; 2],
            last_dir: 0,
            batching: 0,
            starved: 0,
            fifo_batch: 16,
            writes_starved: 2,
            front_merges: true,
            fifo_expire: [HZ / 2, 5 * HZ],
        }
    }
}

impl MqDeadline {
    /// `dd_has_work`.
    pub fn has_work(&self) -> bool {
        !self.fifo[0].is_empty() || !self.fifo[1].is_empty()
    }

    pub fn queued(&self) -> usize {
        self.fifo[0].len() + self.fifo[1].len()
    }

    /// `dd_request_merge`'s lookup: a request of `dir` starting at `sector`.
    pub fn front_candidate(&self, dir: usize, sector: u64) -> Option<u32> {
        if !self.front_merges {
            return None;
        }
        self.sort[dir].range((sector, 0)..=(sector, u32::MAX)).next().map(|&(_, id)| id)
    }

    /// `elv_rb_latter_request` / `elv_rb_former_request`.
    pub fn latter(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        let r = rqs.get(id);
        self.sort[data_dir(r)].range((r.sector, id + 1)..).next().map(|&(_, x)| x)
    }

    pub fn former(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        let r = rqs.get(id);
        self.sort[data_dir(r)].range(..(r.sector, id)).next_back().map(|&(_, x)| x)
    }

    /// The rest of `dd_insert_request` once no insert merge happened: sort
    /// tree, hash, FIFO with its deadline.
    pub fn insert(&mut self, hash: &mut RqHash, rqs: &mut Rqs, id: u32, now_ns: u64) {
        let dir = data_dir(rqs.get(id));
        let r = rqs.get_mut(id);
        r.fifo_time = jiffies(now_ns) + self.fifo_expire[dir];
        r.in_elevator = true;
        self.sort[dir].insert((r.sector, id));
        if crate::merge::rq_mergeable(r) {
            hash.add(rqs, id);
        }
        self.fifo[dir].push_back(id);
    }

    /// `deadline_remove_request`: off the tree, FIFO and hash (and, up to
    /// 6.4, `next_rq` moves past it). Tolerates a request that was never
    /// inserted (an insert merge).
    pub fn remove(&mut self, hash: &mut RqHash, rqs: &mut Rqs, id: u32) {
        if !rqs.get(id).in_elevator {
            return;
        }
        let dir = data_dir(rqs.get(id));
        if self.next_rq[dir] == Some(id) {
            self.next_rq[dir] = self.latter(rqs, id);
        }
        let r = rqs.get_mut(id);
        r.in_elevator = false;
        let (sector, end) = (r.sector, r.sector + r.nr_sectors as u64);
        self.sort[dir].remove(&(sector, id));
        self.fifo[dir].retain(|&x| x != id);
        hash.del(end, id);
    }

    /// `dd_request_merged` after a front merge: the start moved.
    pub fn reposition(&mut self, rqs: &Rqs, id: u32, old_sector: u64) {
        let r = rqs.get(id);
        let dir = data_dir(r);
        if self.sort[dir].remove(&(old_sector, id)) {
            self.sort[dir].insert((r.sector, id));
        }
    }

    /// `dd_merged_requests`: `next` was merged into `rq`; `rq` inherits the
    /// earlier deadline and `next`'s FIFO place.
    pub fn merged_requests(&mut self, hash: &mut RqHash, rqs: &mut Rqs, rq: u32, next: u32) {
        let (rq_in, next_in) = (rqs.get(rq).in_elevator, rqs.get(next).in_elevator);
        if rq_in && next_in && rqs.get(next).fifo_time < rqs.get(rq).fifo_time {
            let dir = data_dir(rqs.get(rq));
            let f = &mut self.fifo[dir];
            f.retain(|&x| x != rq);
            let at = f.iter().position(|&x| x == next).expect("next in fifo");
            f.insert(at, rq);
            let t = rqs.get(next).fifo_time;
            rqs.get_mut(rq).fifo_time = t;
        }
        self.remove(hash, rqs, next);
    }

    /// `deadline_next_request`: `next_rq` (up to 6.4), or
    /// `deadline_from_pos`, the lowest request at or above `latest_pos`.
    fn next_request(&self, dir: usize, rule: DdNext) -> Option<u32> {
        match rule {
            DdNext::NextRq => self.next_rq[dir],
            DdNext::LatestPos => self.sort[dir].range((self.latest_pos[dir], 0)..).next().map(|&(_, id)| id),
        }
    }

    /// `__dd_dispatch_request`.
    pub fn dispatch(&mut self, hash: &mut RqHash, rqs: &mut Rqs, now_ns: u64, rule: DdNext) -> Option<u32> {
        let mut chosen = self.next_request(self.last_dir, rule).filter(|_| self.batching < self.fifo_batch);
        if chosen.is_none() {
            // Reads first, unless writes waited through `writes_starved`
            // read batches (the kernel's `starved++` only runs when writes wait).
            let dir = if !self.fifo[0].is_empty() {
                let writes_wait = !self.fifo[1].is_empty();
                if writes_wait && self.starved >= self.writes_starved {
                    self.starved = 0;
                    1
                } else {
                    self.starved += writes_wait as u32;
                    0
                }
            } else if !self.fifo[1].is_empty() {
                self.starved = 0;
                1
            } else {
                return None;
            };
            let head = *self.fifo[dir].front().expect("non-empty");
            let expired = rqs.get(head).fifo_time <= jiffies(now_ns);
            chosen = match self.next_request(dir, rule) {
                Some(n) if !expired => Some(n),
                _ => Some(head),
            };
            self.last_dir = dir;
            self.batching = 0;
        }
        let id = chosen?;
        self.batching += 1;
        let (dir, pos) = (data_dir(rqs.get(id)), rqs.get(id).sector);
        // deadline_move_request: next_rq is the request after this one.
        self.next_rq[dir] = self.latter(rqs, id);
        self.remove(hash, rqs, id);
        self.latest_pos[dir] = pos;
        Some(id)
    }
}

/// `dd_limit_depth`: synchronous reads may use every scheduler tag; other
/// allocations only `async_depth`, 3/4 of `nr_requests` (at least 1).
#[inline(always)]
pub fn dd_limit_depth(op: Op, flags: u32, nr_requests: u32) -> u32 {
    let sync_read = !op.is_write() && (op == Op::Read || flags & req::SYNC != 0);
    if sync_read {
        nr_requests
    } else {
        (3 * nr_requests / 4).max(1)
    }
}

/// `dd_bio_merge` → `blk_mq_sched_try_merge`.
#[inline(always)]
pub fn dd_bio_merge(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    elevator::blk_mq_sched_try_merge(q, core, bio, nsegs)
}

/// `dd_insert_request`: an insert merge, or into the tree and FIFO ('I').
pub fn dd_insert_request(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    if elevator::insert_merge_or_trace(q, core, id, task) {
        return;
    }
    let e = q.sched.as_mut().expect("elevator");
    let ElevatorData::MqDeadline(dd) = &mut e.data else { unreachable!("mq-deadline's insert") };
    dd.insert(&mut e.hash, &mut q.rqs, id, core.now);
    if q.last_merge.is_none() && crate::merge::rq_mergeable(q.rqs.get(id)) {
        q.last_merge = Some(id);
    }
}
