//! bfq's queue merging of processes started together ("stable merging",
//! block/bfq-iosched.c): `bfq_do_or_sched_stable_merge` when a sync queue
//! is created, `bfq_setup_cooperator`'s stable branch when a request is
//! inserted, `bfq_setup_merge` and `bfq_merge_bfqqs`.
//!
//! A sync queue created within `bfq_burst_interval` (180 ms) of the last
//! one created in its group, with the same ioprio, is marked to merge with
//! it. On a non-rotational disk with command queueing (`nonrot_with_queueing`,
//! which holds until `hw_tag` is measured false) the two merge at once;
//! otherwise the merge waits until both queues are 600 ms old
//! (`bfq_late_stable_merging`) and is made at the first request the later
//! queue's process inserts then, unless idling would boost that queue's
//! throughput (`idling_boosts_thr_without_issues`, false while any queue is
//! weight raised). From then on the process's requests go to the shared
//! queue, which takes over the weight raising and I/O-bound flag of the
//! merged one; the merged queue keeps what it holds and serves it out, with
//! no process left to idle for. Stably merged queues are never split again.
//!
//! Not modelled: merging of queues whose requests are close in sector
//! (`bfq_find_close_cooperator` and the in-service queue's position; rare
//! between processes reading different regions) and with it splitting.

use super::bfq_iosched::{Bfq, QueueKey};
use super::bfq_params::ms_to_jiffies;

/// `bfq_activation_stable_merging`, `bfq_late_stable_merging`, ms.
pub const BFQ_ACTIVATION_STABLE_MERGING_MS: u64 = 600;
pub const BFQ_LATE_STABLE_MERGING_MS: u64 = 600;
/// `bfq_burst_interval` (`bfqd->bfq_burst_interval`), ms.
pub const BFQ_BURST_INTERVAL_MS: u64 = 180;

impl Bfq {
    /// `nonrot_with_queueing`: non-rotational, and `hw_tag` not measured
    /// false (it starts at -1, which counts as true).
    pub(super) fn nonrot_with_queueing(&self) -> bool {
        !self.rotational && self.hw_tag != 0
    }

    /// `bfq_do_or_sched_stable_merge` for sync queue `q` just created by
    /// `task`: the queue the task's requests go to.
    pub(super) fn do_or_sched_stable_merge(&mut self, q: usize, task: u32) -> usize {
        let (group, born, ioprio) = (self.queues[q].group, self.queues[q].creation_time, self.queues[q].ioprio);
        let last = self.last_bfqq_created.get(&group).copied().filter(|&l| {
            let lq = &self.queues[l];
            lq.creation_time + ms_to_jiffies(BFQ_ACTIVATION_STABLE_MERGING_MS) >= born && lq.ioprio == ioprio
        });
        let Some(last) = last else {
            self.last_bfqq_created.insert(group, q);
            return q;
        };
        if self.queues[last].creation_time + ms_to_jiffies(BFQ_BURST_INTERVAL_MS) < born {
            return q;
        }
        if !self.nonrot_with_queueing() {
            self.queues[q].stable_merge = Some(last);
            return q;
        }
        // bfq_do_early_stable_merge.
        match self.setup_merge(q, last) {
            Some(shared) => self.merge_bfqqs(task, q, shared),
            None => q,
        }
    }

    /// `bfq_setup_cooperator`, its stable-merge branch: the queue `task`'s
    /// request on queue `q` goes to instead, if a merge is set up.
    pub(super) fn setup_cooperator(&mut self, q: usize, now_j: i64) -> Option<usize> {
        if let Some(mut n) = self.queues[q].new_bfqq {
            while let Some(m) = self.queues[n].new_bfqq {
                n = m;
            }
            return Some(n);
        }
        if self.nonrot_with_queueing() {
            return None;
        }
        let late = ms_to_jiffies(BFQ_LATE_STABLE_MERGING_MS);
        let bq = &self.queues[q];
        let due = bq.sync && !bq.just_created && bq.split_time + late < now_j && bq.creation_time + late < now_j;
        let target = bq.stable_merge.filter(|_| due)?;
        // bfq_setup_stable_merge: tried once.
        self.queues[q].stable_merge = None;
        if self.idling_boosts_thr_without_issues(q) {
            return None;
        }
        self.setup_merge(q, target)
    }

    /// `bfq_setup_merge`: `q` is to merge into the end of `new`'s chain,
    /// unless that chain leads back to `q`, either has no process left, or
    /// they are in different groups.
    fn setup_merge(&mut self, q: usize, mut new: usize) -> Option<usize> {
        if self.queues[new].merged_away {
            return None;
        }
        while let Some(n) = self.queues[new].new_bfqq {
            if n == q {
                return None;
            }
            new = n;
        }
        if self.queues[q].merged_away || self.queues[new].merged_away || self.queues[q].group != self.queues[new].group {
            return None;
        }
        self.queues[q].new_bfqq = Some(new);
        Some(new)
    }

    /// `bfq_merge_bfqqs`: `task`'s sync requests go to `shared` from now
    /// on; `shared` takes `q`'s weight raising if it has none and its
    /// I/O-bound flag, and `q` loses both and its process.
    pub(super) fn merge_bfqqs(&mut self, task: u32, q: usize, shared: usize) -> usize {
        if self.queues[q].io_bound {
            self.queues[shared].io_bound = true;
        }
        self.queues[q].io_bound = false;
        let (wr, max_time, start_finish, srt) = {
            let b = &self.queues[q];
            (b.wr_coeff, b.wr_cur_max_time, b.last_wr_start_finish, b.wr_start_at_switch_to_srt)
        };
        if self.queues[shared].wr_coeff == 1 && wr > 1 {
            self.set_wr_coeff(shared, wr);
            let s = &mut self.queues[shared];
            (s.wr_cur_max_time, s.last_wr_start_finish, s.wr_start_at_switch_to_srt) = (max_time, start_finish, srt);
            if s.busy {
                self.wr_busy_queues += 1;
            }
            self.wf2q.ents[shared].prio_changed = true;
        }
        if wr > 1 {
            self.set_wr_coeff(q, 1);
            self.wf2q.ents[q].prio_changed = true;
            if self.queues[q].busy {
                self.wr_busy_queues -= 1;
            }
        }
        self.by_key.insert(QueueKey::Sync(task), shared);
        self.queues[shared].coop = true;
        // bfq_reassign_last_bfqq.
        for last in self.last_bfqq_created.values_mut().filter(|l| **l == q) {
            *last = shared;
        }
        // bfq_release_process_ref: nobody submits to q any more.
        self.queues[q].merged_away = true;
        shared
    }

    /// `__bfq_insert_request`'s merge: the queue a request of `task` that
    /// was meant for `q` joins.
    pub(super) fn queue_after_merge(&mut self, task: u32, q: usize, now_j: i64) -> usize {
        let Some(shared) = self.setup_cooperator(q, now_j) else { return q };
        let mut cur = q;
        if self.by_key.get(&QueueKey::Sync(task)) == Some(&q) {
            while cur != shared {
                let next = self.queues[cur].new_bfqq.expect("a merge chain");
                cur = self.merge_bfqqs(task, cur, next);
            }
        }
        self.queues[q].just_created = false;
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::super::bfq_ioprio::{Ioprio, IoprioClass};
    use super::super::bfq_params::BfqParams;
    use super::super::bfq_queue::BfqRq;
    use super::*;

    const MS: u64 = 1_000_000;
    const BE4: Ioprio = Ioprio { class: IoprioClass::Be, level: 4 };

    fn bfq(rotational: bool, low_latency: bool) -> Bfq {
        let p = BfqParams { low_latency, ..BfqParams::default() };
        Bfq::new(p, rotational, 1)
    }

    /// Task `task` inserts a 4 KiB read `id` at `sector` at `ms`; the queue
    /// it went to.
    fn read(b: &mut Bfq, id: u32, task: u32, sector: u64, ms: u64) -> usize {
        let r = BfqRq { sector, sectors: 8, sync: true, meta: false, fifo_time: 0, queue: 0 };
        b.insert(id, task, BE4, 0, r, ms * MS);
        b.rq(id).unwrap().queue
    }

    #[test]
    fn queues_created_together_merge_once_600_ms_old() {
        // Rotational, low_latency: task 1's queue (0) is created at 0, task
        // 2's (1) at 100 ms = 25 jiffies, within the 180 ms burst interval
        // (45 jiffies) of it: a stable merge into 0 is scheduled. Both are
        // new, hence weight raised, so idling boosts nothing
        // (wr_busy_queues > 0). At 500 ms (125 jiffies) queue 1 is not yet
        // 600 ms (150 jiffies) old: 25 + 150 = 175 is not before 125; at
        // 800 ms (200 jiffies) it is: the read goes to queue 0, and so do
        // task 2's later ones.
        let mut b = bfq(true, true);
        assert_eq!(read(&mut b, 1, 1, 32768, 0), 0);
        assert_eq!(read(&mut b, 2, 2, 524288, 100), 1);
        assert_eq!(b.queues[1].stable_merge, Some(0));
        assert_eq!(read(&mut b, 3, 2, 524296, 500), 1);
        assert_eq!(read(&mut b, 4, 2, 524304, 800), 0);
        assert_eq!(read(&mut b, 5, 2, 524312, 900), 0);
        assert!(b.queues[0].coop && b.queues[1].merged_away);
        // The merged queue keeps its two reads, has no process to idle for
        // and gave up its weight raising (the shared queue had its own).
        assert_eq!(b.queues[1].queued[1], 2);
        assert!(!b.better_to_idle(1));
        assert_eq!((b.queues[0].wr_coeff, b.queues[1].wr_coeff), (30, 1));
    }

    #[test]
    fn a_queue_created_after_the_burst_interval_stays_apart() {
        // Task 2's queue at 200 ms = 50 jiffies, past 0 + 45: no merge, ever.
        let mut b = bfq(true, true);
        read(&mut b, 1, 1, 32768, 0);
        assert_eq!(read(&mut b, 2, 2, 524288, 200), 1);
        assert_eq!(b.queues[1].stable_merge, None);
        assert_eq!(read(&mut b, 3, 2, 524296, 2000), 1);
    }

    #[test]
    fn idling_that_boosts_throughput_cancels_the_merge() {
        // low_latency off: nothing is weight raised. At 800 ms queue 1 is
        // sequential (one seek bit of 32), I/O bound and has a short think
        // time on a rotational disk, so idling boosts its throughput
        // (idling_boosts_thr_without_issues): the merge is dropped for good.
        let mut b = bfq(true, false);
        read(&mut b, 1, 1, 32768, 0);
        read(&mut b, 2, 2, 524288, 100);
        assert_eq!(read(&mut b, 3, 2, 524296, 800), 1);
        assert_eq!(b.queues[1].stable_merge, None);
        assert_eq!(read(&mut b, 4, 2, 524304, 1600), 1);
    }

    #[test]
    fn before_5_13_queues_stay_apart() {
        // The switch off (5.10's bfq has no stable merging): the same
        // start as the first test, and task 2's reads stay in queue 1.
        let mut b = bfq(true, true);
        b.stable_merge = false;
        read(&mut b, 1, 1, 32768, 0);
        assert_eq!(read(&mut b, 2, 2, 524288, 100), 1);
        assert_eq!(read(&mut b, 3, 2, 524296, 800), 1);
    }

    #[test]
    fn non_rotational_queues_merge_at_creation() {
        // Non-rotational with hw_tag not yet measured (-1): nonrot_with_queueing,
        // so task 2's queue merges into task 1's as it is created
        // (bfq_do_early_stable_merge): its first read already goes to queue 0.
        let mut b = bfq(false, true);
        read(&mut b, 1, 1, 32768, 0);
        assert_eq!(read(&mut b, 2, 2, 524288, 50), 0);
        assert!(b.queues[1].merged_away && b.queues[0].coop);
    }
}
