//! `struct bfq_queue` (block/bfq-iosched.h): one per process and direction
//! class (sync queues per task, async queues shared per ioprio), its
//! requests in sector order and arrival order, the next request it would
//! dispatch (`bfq_choose_req`: nearest ahead of the head, backward seeks
//! within `back_seek_max` costing `back_seek_penalty` times their length),
//! and the history bfq's heuristics read: seeks and think time.

use std::collections::{BTreeSet, VecDeque};

use super::bfq_ioprio::Ioprio;

/// `BFQQ_SEEK_THR`: a request farther than this from the previous one's
/// end is a seek (sectors).
pub const BFQQ_SEEK_THR: u64 = 8 * 100;
/// `BFQQ_SECT_THR_NONROT`: on non-rotational devices only small requests
/// count as seeks.
pub const BFQQ_SECT_THR_NONROT: u32 = 2 * 32;

/// `jiffies - MAX_JIFFY_OFFSET`: a time long past (`bfq_smallest_from_now`).
pub const LONG_AGO: i64 = i64::MIN / 4;

/// A request as bfq sees it.
#[derive(Clone, Copy, Debug)]
pub struct BfqRq {
    pub sector: u64,
    pub sectors: u32,
    pub sync: bool,
    pub meta: bool,
    /// `fifo_time`, ns.
    pub fifo_time: u64,
    pub queue: usize,
}

/// `struct bfq_ttime`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ttime {
    pub last_end_request: u64,
    pub samples: u64,
    pub total: u64,
    pub mean: u64,
}

#[derive(Clone, Debug)]
pub struct BfqQueue {
    pub task: u32,
    pub sync: bool,
    pub ioprio: Ioprio,
    /// The task's cgroup (0: the root group).
    pub group: u32,
    pub sort: BTreeSet<(u64, u32)>,
    pub fifo: VecDeque<u32>,
    pub next_rq: Option<u32>,
    /// Queued requests, async [0] and sync [1].
    pub queued: [u32; 2],
    pub dispatched: u32,
    pub max_budget: i64,
    /// Jiffies.
    pub budget_timeout: i64,
    // Flags (BFQ_BFQQ_FNS).
    pub busy: bool,
    pub wait_request: bool,
    pub non_blocking_wait_rq: bool,
    pub fifo_expire: bool,
    pub has_short_ttime: bool,
    pub io_bound: bool,
    pub just_created: bool,
    pub softrt_update: bool,
    // Weight raising.
    pub wr_coeff: u64,
    pub wr_cur_max_time: i64,
    pub last_wr_start_finish: i64,
    pub wr_start_at_switch_to_srt: i64,
    pub service_from_wr: i64,
    pub service_from_backlogged: i64,
    pub last_idle_bklogged: i64,
    pub soft_rt_next_start: i64,
    pub split_time: i64,
    // History.
    pub seek_history: u32,
    pub last_request_pos: u64,
    pub ttime: Ttime,
    pub io_start_time: u64,
    pub tot_idle_time: u64,
    /// Counted in `queue_weights_tree` (`bfqq->weight_counter`).
    pub in_weights_tree: bool,
    // Queue merging ([`super::bfq_coop`]).
    /// Jiffies.
    pub creation_time: i64,
    /// The queue this one merges into (`bfqq->new_bfqq`).
    pub new_bfqq: Option<usize>,
    /// The process's `stable_merge_bfqq`.
    pub stable_merge: Option<usize>,
    /// Shared by merged processes (`BFQQF_coop`).
    pub coop: bool,
    /// Merged into another: no process submits to it any more
    /// (`bfqq_process_refs` 0).
    pub merged_away: bool,
}

impl BfqQueue {
    /// `bfq_init_bfqq`.
    pub fn new(task: u32, sync: bool, ioprio: Ioprio, now_ns: u64, now_j: i64, max_budget: i64) -> Self {
        BfqQueue {
            task,
            sync,
            ioprio,
            group: 0,
            sort: BTreeSet::new(),
            fifo: VecDeque::new(),
            next_rq: None,
            queued: [0; 2],
            dispatched: 0,
            max_budget: 2 * max_budget / 3,
            budget_timeout: LONG_AGO,
            busy: false,
            wait_request: false,
            non_blocking_wait_rq: false,
            fifo_expire: false,
            has_short_ttime: sync && ioprio.class != super::bfq_ioprio::IoprioClass::Idle,
            io_bound: true,
            just_created: sync,
            softrt_update: false,
            wr_coeff: 1,
            wr_cur_max_time: 0,
            last_wr_start_finish: now_j,
            wr_start_at_switch_to_srt: LONG_AGO,
            service_from_wr: 0,
            service_from_backlogged: 0,
            last_idle_bklogged: 0,
            soft_rt_next_start: now_j,
            split_time: LONG_AGO,
            seek_history: 1,
            last_request_pos: 0,
            ttime: Ttime { last_end_request: now_ns + 1, ..Default::default() },
            io_start_time: now_ns,
            tot_idle_time: 0,
            in_weights_tree: false,
            creation_time: now_j,
            new_bfqq: None,
            stable_merge: None,
            coop: false,
            merged_away: false,
        }
    }

    /// `BFQQ_SEEKY`: more than 19 of the last 32 requests were seeks.
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }

    /// `BFQQ_TOTALLY_SEEKY`.
    pub fn totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }

    /// `bfq_update_io_seektime`: shift in whether `rq` is a seek from the
    /// end of the previous request (`BFQ_RQ_SEEKY`, `get_sdist`).
    pub fn update_io_seektime(&mut self, rq: &BfqRq, rotational: bool) {
        let dist = if self.last_request_pos != 0 { rq.sector.abs_diff(self.last_request_pos) } else { 0 };
        let seek = dist > BFQQ_SEEK_THR && (rotational || rq.sectors < BFQQ_SECT_THR_NONROT);
        self.seek_history = (self.seek_history << 1) | seek as u32;
    }

    /// `bfq_update_io_thinktime`: decaying mean of the time from the last
    /// completion to this arrival (capped at 2 · slice_idle), sampled only
    /// when the queue had nothing queued or in flight.
    pub fn update_io_thinktime(&mut self, now_ns: u64, slice_idle_ns: u64) {
        if self.dispatched > 0 || self.busy {
            return;
        }
        let elapsed = now_ns.saturating_sub(self.ttime.last_end_request).min(2 * slice_idle_ns);
        let t = &mut self.ttime;
        t.samples = (7 * t.samples + 256) / 8;
        t.total = (7 * t.total + 256 * elapsed) / 8;
        t.mean = (t.total + 128) / t.samples;
    }

    /// `bfq_update_io_intensity`: I/O bound unless idle for more than a
    /// fifth of the observed time (the window halves past 200 ms).
    pub fn update_io_intensity(&mut self, now_ns: u64) {
        let tot_io_time = now_ns - self.io_start_time;
        if self.sort.is_empty() && self.dispatched == 0 {
            self.tot_idle_time += now_ns.saturating_sub(self.ttime.last_end_request);
        }
        if self.just_created {
            return;
        }
        self.io_bound = self.tot_idle_time * 5 <= tot_io_time;
        if tot_io_time > 200_000_000 {
            self.io_start_time = now_ns - (tot_io_time >> 1);
            self.tot_idle_time >>= 1;
        }
    }
}

/// The sysfs knobs `bfq_choose_req` reads.
#[derive(Clone, Copy, Debug)]
pub struct SeekCost {
    /// `back_seek_max` in sectors (the KiB value · 2).
    pub back_max: u64,
    pub back_penalty: u64,
}

/// `bfq_choose_req`: of two requests, the better one to serve after
/// `last`: sync before async, meta before not, then the smaller seek
/// distance (a backward seek within `back_max` counts `back_penalty`
/// times); requests behind the head beyond `back_max` "wrap" and lose.
pub fn bfq_choose_req(rq1: Option<(u32, BfqRq)>, rq2: Option<(u32, BfqRq)>, last: u64, cost: SeekCost) -> Option<u32> {
    let (Some((id1, r1)), Some((id2, r2))) = (rq1, rq2) else {
        return rq1.or(rq2).map(|x| x.0);
    };
    if id1 == id2 {
        return Some(id2);
    }
    if r1.sync != r2.sync {
        return Some(if r1.sync { id1 } else { id2 });
    }
    if r1.meta != r2.meta {
        return Some(if r1.meta { id1 } else { id2 });
    }
    let dist = |s: u64| -> Option<u64> {
        if s >= last {
            Some(s - last)
        } else if s + cost.back_max >= last {
            Some((last - s) * cost.back_penalty)
        } else {
            None
        }
    };
    let (s1, s2) = (r1.sector, r2.sector);
    Some(match (dist(s1), dist(s2)) {
        (Some(d1), Some(d2)) if d1 != d2 => {
            if d1 < d2 {
                id1
            } else {
                id2
            }
        }
        (Some(_), Some(_)) => {
            if s1 >= s2 {
                id1
            } else {
                id2
            }
        }
        (Some(_), None) => id1,
        (None, Some(_)) => id2,
        (None, None) => {
            if s1 <= s2 {
                id1
            } else {
                id2
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rq(sector: u64) -> BfqRq {
        BfqRq { sector, sectors: 8, sync: true, meta: false, fifo_time: 0, queue: 0 }
    }

    const COST: SeekCost = SeekCost { back_max: 32768, back_penalty: 2 };

    #[test]
    fn choose_nearest_ahead() {
        // Head at 1000: 1100 is 100 ahead; 960 is 40 behind, costing 80.
        assert_eq!(bfq_choose_req(Some((1, rq(1100))), Some((2, rq(960))), 1000, COST), Some(2));
        // 940 behind costs 120 > 100: the one ahead wins.
        assert_eq!(bfq_choose_req(Some((1, rq(1100))), Some((2, rq(940))), 1000, COST), Some(1));
    }

    #[test]
    fn choose_wrapped_loses() {
        // 100000 − 40000 = 60000 behind > back_max 32768: wraps.
        assert_eq!(bfq_choose_req(Some((1, rq(40000))), Some((2, rq(900000))), 100000, COST), Some(2));
        // Both wrap: the lower sector.
        assert_eq!(bfq_choose_req(Some((1, rq(40000))), Some((2, rq(30000))), 100000, COST), Some(2));
    }

    #[test]
    fn choose_sync_first_and_equal_distance() {
        let mut a = rq(5000);
        a.sync = false;
        assert_eq!(bfq_choose_req(Some((1, a)), Some((2, rq(900000))), 1000, COST), Some(2));
        // 1100 ahead by 100, 950 behind by 50·2 = 100: tie → higher sector.
        assert_eq!(bfq_choose_req(Some((1, rq(950))), Some((2, rq(1100))), 1000, COST), Some(2));
    }

    #[test]
    fn seek_history() {
        // From end 1008: 1008 is no seek, 1008 + 801 is one (> 800) on a
        // rotational disk; on a non-rotational one only requests under 64
        // sectors count.
        let mut q = BfqQueue::new(1, true, Ioprio::default(), 0, 0, 16384);
        assert_eq!(q.max_budget, 10922); // 2·16384/3
        q.last_request_pos = 1008;
        q.update_io_seektime(&rq(1008), true);
        q.update_io_seektime(&rq(1809), true);
        let mut big = rq(1809);
        big.sectors = 64;
        q.update_io_seektime(&big, false);
        assert_eq!(q.seek_history, 0b1010);
    }

    #[test]
    fn thinktime_mean() {
        // First sample: samples = 256/8 = 32, total = 256·1_000_000/8 =
        // 32_000_000, mean = (32_000_000 + 128)/32 = 1_000_004.
        let mut q = BfqQueue::new(1, true, Ioprio::default(), 0, 0, 16384);
        q.ttime.last_end_request = 0;
        q.update_io_thinktime(1_000_000, 8_000_000);
        assert_eq!((q.ttime.samples, q.ttime.total, q.ttime.mean), (32, 32_000_000, 1_000_004));
    }
}
