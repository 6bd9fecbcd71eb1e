//! bfq's side of request merging (bfq_bio_merge, bfq_request_merge,
//! bfq_allow_bio_merge, bfq_request_merged, bfq_requests_merged).
//!
//! A bio only merges into a request of its own queue (`bfq_allow_bio_merge`:
//! the queue of the submitting task and the bio's sync-ness): the back
//! merge candidate is a request of that queue ending where the bio starts
//! (the elevator hash, filtered by `elv_bio_merge_ok`), the front one a
//! request of that queue starting where the bio ends (`bfq_find_rq_fmerge`
//! in the queue's sector tree). Requests merge with their neighbours in
//! the queue's sector order (`elv_rb_former_request`/`_latter_request`).

use super::bfq_ioprio::Ioprio;
use super::bfq_iosched::{Bfq, QueueKey};

impl Bfq {
    pub(super) fn bio_queue(&self, task: u32, sync: bool, ioprio: Ioprio, group: u32) -> Option<usize> {
        self.by_key.get(&QueueKey::of(task, sync, ioprio, group)).copied()
    }

    /// `bfq_allow_bio_merge`: the request belongs to the bio's queue.
    pub fn allow_merge(&self, id: u32, task: u32, sync: bool, ioprio: Ioprio, group: u32) -> bool {
        let q = self.bio_queue(task, sync, ioprio, group);
        q.is_some() && self.rqs.get(&id).map(|r| r.queue) == q
    }

    /// Back merge candidate: the bio's queue's request ending at `sector`.
    pub fn back_candidate(&self, task: u32, sync: bool, ioprio: Ioprio, group: u32, sector: u64) -> Option<u32> {
        let q = self.bio_queue(task, sync, ioprio, group)?;
        self.queues[q].sort.iter().map(|&(_, id)| id).find(|id| {
            let r = &self.rqs[id];
            r.sector + r.sectors as u64 == sector
        })
    }

    /// `bfq_find_rq_fmerge`: the bio's queue's request starting at `end`.
    pub fn front_candidate(&self, task: u32, sync: bool, ioprio: Ioprio, group: u32, end: u64) -> Option<u32> {
        let q = self.bio_queue(task, sync, ioprio, group)?;
        self.queues[q].sort.range((end, 0)..=(end, u32::MAX)).next().map(|&(_, id)| id)
    }

    /// `elv_rb_latter_request` in the request's queue.
    pub fn latter(&self, id: u32) -> Option<u32> {
        let r = self.rqs.get(&id)?;
        self.queues[r.queue].sort.range((r.sector, id + 1)..).next().map(|&(_, x)| x)
    }

    /// `elv_rb_former_request` in the request's queue.
    pub fn former(&self, id: u32) -> Option<u32> {
        let r = self.rqs.get(&id)?;
        self.queues[r.queue].sort.range(..(r.sector, id)).next_back().map(|&(_, x)| x)
    }

    /// A queued request grew (`bfq_request_merged`): a front merge moves it
    /// in the queue's sector order and it may become the queue's next
    /// request (`bfq_choose_req` against the current one).
    pub fn request_merged(&mut self, id: u32, sector: u64, sectors: u32, now_ns: u64) {
        let Some(r) = self.rqs.get_mut(&id) else { return };
        let (q, old) = (r.queue, r.sector);
        r.sector = sector;
        r.sectors = sectors;
        if old == sector {
            return;
        }
        let bq = &mut self.queues[q];
        bq.sort.remove(&(old, id));
        bq.sort.insert((sector, id));
        let prev = bq.next_rq;
        let next = self.choose(prev, Some(id), self.last_position);
        self.queues[q].next_rq = next;
        if prev != next {
            self.updated_next_req(q, now_ns);
        }
    }

    /// `bfq_requests_merged`: `next` was merged into `rq`; `rq` takes
    /// `next`'s FIFO place when `next` was older, and `next` leaves.
    pub fn requests_merged(&mut self, rq: u32, next: u32, now_ns: u64) {
        let (Some(a), Some(b)) = (self.rqs.get(&rq).copied(), self.rqs.get(&next).copied()) else { return };
        if a.queue == b.queue && b.fifo_time < a.fifo_time {
            let f = &mut self.queues[a.queue].fifo;
            f.retain(|&x| x != rq);
            if let Some(at) = f.iter().position(|&x| x == next) {
                f[at] = rq;
            }
            self.rqs.get_mut(&rq).expect("queued").fifo_time = b.fifo_time;
        }
        if self.queues[a.queue].next_rq == Some(next) {
            self.queues[a.queue].next_rq = Some(rq);
        }
        self.remove(next, now_ns);
    }

    /// A queued request leaves without being dispatched (merged away).
    pub fn remove(&mut self, id: u32, now_ns: u64) {
        if self.rqs.contains_key(&id) && !self.in_driver.contains_key(&id) {
            self.remove_request(id, now_ns);
            self.rqs.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::bfq_params::BfqParams;
    use super::super::bfq_queue::BfqRq;
    use super::*;

    fn rq(sector: u64, sectors: u32) -> BfqRq {
        BfqRq { sector, sectors, sync: true, meta: false, fifo_time: 0, queue: 0 }
    }

    #[test]
    fn bios_merge_only_within_their_queue() {
        // Task 1 queued [100, 108) and [200, 208); task 2 [108, 116).
        // A bio of task 1 at 108 back merges into 1's request ending at 108;
        // one ending at 200 front merges into 1's request at 200; task 2's
        // request is no candidate for task 1 and vice versa.
        let io = Ioprio::default();
        let mut b = Bfq::new(BfqParams::default(), true, 1);
        b.insert(1, 1, io, 0, rq(100, 8), 0);
        b.insert(2, 1, io, 0, rq(200, 8), 0);
        b.insert(3, 2, io, 0, rq(108, 8), 0);
        assert_eq!(b.back_candidate(1, true, io, 0, 108), Some(1));
        assert_eq!(b.front_candidate(1, true, io, 0, 200), Some(2));
        assert_eq!(b.back_candidate(2, true, io, 0, 108), None);
        assert!(!b.allow_merge(3, 1, true, io, 0));
        assert!(b.allow_merge(1, 1, true, io, 0));
        assert_eq!((b.latter(1), b.former(2)), (Some(2), Some(1)));
    }

    #[test]
    fn merged_requests_leave_the_queue() {
        // Request 2 [108, 116) merged into 1 [100, 108): 1 grows to 16
        // sectors, 2 is gone, the queue holds one request.
        let io = Ioprio::default();
        let mut b = Bfq::new(BfqParams::default(), true, 1);
        b.insert(1, 1, io, 0, rq(100, 8), 0);
        b.insert(2, 1, io, 0, rq(108, 8), 0);
        b.request_merged(1, 100, 16, 0);
        b.requests_merged(1, 2, 0);
        assert_eq!(b.queued(), 1);
        assert_eq!(b.dispatch(0), Some(1));
    }
}
