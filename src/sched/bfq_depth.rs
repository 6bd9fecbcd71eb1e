//! bfq's per-queue share of the scheduler tags (`bfqq_request_over_limit`,
//! block/bfq-iosched.c, built with CONFIG_BFQ_GROUP_IOSCHED as Debian's
//! kernels are): at each request allocation (`bfq_limit_depth`), a queue
//! that already holds as many requests as its weight's share of the depth
//! may allocate with a shallow depth of 1 only, so that one queue cannot
//! take the tags another needs.
//!
//! The share is `limit · weight / wsum`, rounded to nearest, where `wsum`
//! sums the weights of the queues on the service trees of the queue's class
//! and of the classes above it (each higher class counting `IOPRIO_BE_NR`
//! times more). Weight raising counts: while one queue is raised (1200) and
//! another is not (40), the second may hold round(64 · 40 / 1240) = 2 of 64
//! tags, and its process sleeps for a tag until the weights change. A queue
//! not on a service tree (no request queued, none in the driver), or one
//! not created yet, is never limited.
//!
//! The model has no group entities: queues of non-root cgroups are not
//! limited (the kernel also checks each parent group's share). A limit of 1
//! lets the allocation through only while no scheduler tag is in use, where
//! the kernel's shallow depth lets it take the first tag of the bitmap (or,
//! on 6.1, of each bitmap word) when that one is free.

use super::bfq_iosched::Bfq;
use super::bfq_ioprio::Ioprio;

/// `IOPRIO_BE_NR`: levels per class, the factor between classes' sums.
const IOPRIO_BE_NR: u64 = 8;

/// `DIV_ROUND_CLOSEST` of unsigned values.
fn div_round_closest(a: u64, b: u64) -> u64 {
    (a + b / 2) / b
}

impl Bfq {
    /// `bfqq_request_over_limit`: whether the queue of `task`'s requests
    /// (sync or not, its ioprio and cgroup) holds at least its share of
    /// `limit` tags.
    pub fn request_over_limit(&self, task: u32, sync: bool, ioprio: Ioprio, group: u32, limit: u32) -> bool {
        let Some(q) = self.bio_queue(task, sync, ioprio, group) else { return false };
        let e = &self.wf2q.ents[q];
        if !e.on_st || self.queues[q].group != 0 {
            return false;
        }
        let class = self.queues[q].ioprio.class.idx();
        let wsum = self.wf2q.st[..=class].iter().fold(0, |w, st| w * IOPRIO_BE_NR + st.wsum);
        if wsum == 0 {
            return false;
        }
        let bq = &self.queues[q];
        let allocated = (bq.queued[0] + bq.queued[1] + bq.dispatched) as u64;
        allocated >= div_round_closest(limit as u64 * e.weight, wsum)
    }
}

#[cfg(test)]
mod tests {
    use super::super::bfq_ioprio::IoprioClass;
    use super::super::bfq_params::BfqParams;
    use super::super::bfq_queue::BfqRq;
    use super::*;

    const MS: u64 = 1_000_000;
    const BE4: Ioprio = Ioprio { class: IoprioClass::Be, level: 4 };

    fn read(b: &mut Bfq, id: u32, task: u32, sector: u64, ms: u64) {
        let r = BfqRq { sector, sectors: 8, sync: true, meta: false, fifo_time: 0, queue: 0 };
        b.insert(id, task, BE4, 0, r, ms * MS);
    }

    #[test]
    fn share_of_the_tags_by_weight() {
        // Rotational, low_latency off (no weight raising), stable merging
        // off: tasks 1 and 2 each insert 3 reads, both queues weigh 40:
        // wsum 80, share round(64 · 40 / 80) = 32: neither is over it.
        // With 4 tags of depth, each share is round(4 · 40 / 80) = 2, and
        // 3 allocated ≥ 2: both are over.
        let mut b = Bfq::new(BfqParams { low_latency: false, ..BfqParams::default() }, true, 1);
        b.stable_merge = false;
        for i in 0..3 {
            read(&mut b, 1 + i, 1, 1000 + 8 * i as u64, 0);
            read(&mut b, 10 + i, 2, 900_000 + 8 * i as u64, 0);
        }
        assert_eq!(b.wf2q.st[IoprioClass::Be.idx()].wsum, 80);
        assert!(!b.request_over_limit(1, true, BE4, 0, 64));
        assert!(b.request_over_limit(2, true, BE4, 0, 4));
        // A task without a queue (or async I/O, which has none here) is
        // never limited.
        assert!(!b.request_over_limit(3, true, BE4, 0, 4));
        assert!(!b.request_over_limit(1, false, BE4, 0, 4));
    }

    #[test]
    fn a_raised_queue_squeezes_the_other() {
        // Task 1's queue weight raised (×30: 1200), task 2's not (40):
        // wsum 1240; task 2's share of 64 is round(2560 / 1240) = 2
        // (2.06), so its 3 requests are over it; task 1's share,
        // round(76800 / 1240) = 62, is far from its 3.
        let mut b = Bfq::new(BfqParams::default(), true, 1);
        b.stable_merge = false;
        for i in 0..3 {
            read(&mut b, 1 + i, 1, 1000 + 8 * i as u64, 0);
            read(&mut b, 10 + i, 2, 900_000 + 8 * i as u64, 0);
        }
        // Both are new, hence raised (wsum 2400); 40 s (10000 jiffies)
        // on, past its 10.5 s of raising, bfq_update_wr_data ends task 2's.
        assert_eq!(b.wf2q.st[IoprioClass::Be.idx()].wsum, 2400);
        let q2 = b.rq(10).unwrap().queue;
        b.update_wr_data(q2, 10_000);
        assert_eq!(b.wf2q.st[IoprioClass::Be.idx()].wsum, 1240);
        assert!(b.request_over_limit(2, true, BE4, 0, 64));
        assert!(!b.request_over_limit(1, true, BE4, 0, 64));
    }
}
