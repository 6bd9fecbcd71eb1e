//! Kyber (block/kyber-iosched.c): requests are sorted into four scheduling
//! domains by op (read, write, discard, other). Each domain has a pool of
//! tokens, an sbitmap of `kyber_depth[]` bits device-wide: a request needs
//! one to be dispatched and gives it back when it finishes. Dispatch takes
//! up to `kyber_batch_size[]` requests from one domain, then moves round
//! robin to the next domain with both work and a token.
//!
//! Completion latencies go into a histogram per domain (total latency from
//! allocation, I/O latency from issue), in buckets of a quarter of the
//! domain's target (`read_lat_nsec`, `write_lat_nsec`). A timer 100 ms after
//! a completion reads the percentiles: when some domain's I/O p90 is past
//! its target the device is congested, and every domain is scaled by its own
//! p99 against its target (a domain already past it gets more tokens, one
//! under it fewer); without congestion only domains past their target grow.
//!
//! Requests wait in the software context's list of their domain (the kcq,
//! where bios merge: `kyber_bio_merge`) until a dispatch with a token
//! flushes that list into the hardware queue's domain list. The model has
//! one software context per queue.
//!
//! The timer runs lazily: every operation that could observe it (a
//! completion, a dispatch) first runs the timer if its expiry has passed,
//! with the jiffies it would have fired at; nothing in between could have
//! seen the difference.

use std::collections::VecDeque;

use crate::bio::{BioId, Op};
use crate::mq::{blk_bio_list_merge, trace_rq, Request, RequestQueue};
use crate::profile::{KyberAsyncDepth, HZ};
use crate::stats::diskstats::jiffies;
use crate::submit::BlockCore;
use crate::trace::Action;

use super::ElevatorData;

pub const KYBER_READ: usize = 0;
pub const KYBER_WRITE: usize = 1;
pub const KYBER_DISCARD: usize = 2;
pub const KYBER_OTHER: usize = 3;
pub const KYBER_NUM_DOMAINS: usize = 4;

/// `kyber_domain_names`.
pub const KYBER_DOMAIN_NAMES: [&str; KYBER_NUM_DOMAINS] = ["READ", "WRITE", "DISCARD", "OTHER"];

/// `KYBER_ASYNC_PERCENT`: asynchronous requests may hold 75% of the
/// scheduler tags, so synchronous ones always find some.
const KYBER_ASYNC_PERCENT: u32 = 75;

/// `kyber_depth[]`: each domain's device-wide token count (the most the
/// timer may give it).
pub const KYBER_DEPTH: [u32; KYBER_NUM_DOMAINS] = [256, 128, 64, 16];

/// `kyber_batch_size[]`: requests dispatched in a row from one domain.
pub const KYBER_BATCH_SIZE: [u32; KYBER_NUM_DOMAINS] = [16, 8, 1, 1];

/// `kyber_latency_targets[]` in ns (read and write are the sysfs
/// `read_lat_nsec` and `write_lat_nsec`; discard has no file).
pub const KYBER_LATENCY_TARGETS: [u64; KYBER_OTHER] = [2_000_000, 10_000_000, 5_000_000_000];

/// `KYBER_LATENCY_SHIFT`: buckets are target / 4 wide.
const KYBER_LATENCY_SHIFT: u32 = 2;
/// `KYBER_GOOD_BUCKETS`: the buckets at or under the target.
const KYBER_GOOD_BUCKETS: usize = 1 << KYBER_LATENCY_SHIFT;
/// `KYBER_LATENCY_BUCKETS`: four good, four bad (the last open-ended).
pub const KYBER_LATENCY_BUCKETS: usize = 2 << KYBER_LATENCY_SHIFT;

/// `KYBER_TOTAL_LATENCY` (from allocation) and `KYBER_IO_LATENCY` (from
/// issue).
pub const KYBER_TOTAL_LATENCY: usize = 0;
pub const KYBER_IO_LATENCY: usize = 1;

/// `kyber_sched_domain`: the domain of an op.
pub fn kyber_sched_domain(op: Op) -> usize {
    match op {
        Op::Read => KYBER_READ,
        Op::Write => KYBER_WRITE,
        Op::Discard => KYBER_DISCARD,
        _ => KYBER_OTHER,
    }
}

/// `sbitmap_calculate_shift`: 64 bits a word, fewer for a small map so
/// that it spreads over at least four words.
pub fn sbitmap_calculate_shift(depth: u32) -> u32 {
    let mut shift = 6;
    if depth >= 4 {
        while (4u32 << shift) > depth {
            shift -= 1;
        }
    }
    shift
}

/// A domain's tokens (`struct sbitmap_queue`): `depth` usable bits in words
/// of `1 << shift`. Shrinking the pool leaves bits above the new depth set
/// until their requests finish; they no longer count against it.
#[derive(Clone, Debug)]
pub struct DomainTokens {
    depth: u32,
    shift: u32,
    busy: Vec<bool>,
    /// The allocation hint (the kernel's is per CPU; the model has one).
    hint: u32,
}

impl DomainTokens {
    pub fn new(depth: u32) -> Self {
        DomainTokens { depth, shift: sbitmap_calculate_shift(depth), busy: vec![false; depth as usize], hint: 0 }
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Tokens held, above the depth included.
    pub fn in_use(&self) -> u32 {
        self.busy.iter().filter(|&&b| b).count() as u32
    }

    /// `__sbitmap_queue_get`: the first free bit of the word the hint is
    /// in, then of the words after it (wrapping); the hint moves past a bit
    /// taken at the hint itself. A hint past the depth (after a resize)
    /// starts at word 0 (the kernel picks a random bit there).
    pub fn get(&mut self) -> Option<u32> {
        let hint = if self.hint >= self.depth { 0 } else { self.hint };
        let bpw = 1u32 << self.shift;
        let map_nr = self.depth.div_ceil(bpw);
        let first = hint >> self.shift;
        let found = (0..map_nr).map(|i| (first + i) % map_nr).find_map(|w| {
            let lo = w * bpw;
            let hi = (lo + bpw).min(self.depth);
            (lo..hi).find(|&b| !self.busy[b as usize])
        });
        match found {
            Some(nr) => {
                self.busy[nr as usize] = true;
                if nr == hint {
                    self.hint = if nr + 1 >= self.depth.saturating_sub(1) { 0 } else { nr + 1 };
                }
            }
            None => self.hint = 0,
        }
        found
    }

    /// `sbitmap_queue_clear`: the bit is free and becomes the hint.
    pub fn clear(&mut self, nr: u32) {
        self.busy[nr as usize] = false;
        if nr < self.depth {
            self.hint = nr;
        }
    }

    /// `sbitmap_queue_resize` (never past the pool's initial size).
    pub fn resize(&mut self, depth: u32) {
        self.depth = depth.min(self.busy.len() as u32);
    }
}

/// What an async allocation may see in use of `nr` scheduler tags
/// (`kyber_depth_updated` + `kyber_limit_depth`, switch
/// `kyber_async_depth`).
pub fn kyber_async_depth(nr: u32, rule: KyberAsyncDepth) -> u32 {
    let shift = sbitmap_calculate_shift(nr);
    let bpw = 1u32 << shift;
    let words = nr.div_ceil(bpw);
    let word_depth = |i: u32| if i + 1 == words { nr - i * bpw } else { bpw };
    match rule {
        // 6.1: 75% of a word's bits, applied to every word.
        KyberAsyncDepth::Word => {
            let per_word = bpw * KYBER_ASYNC_PERCENT / 100;
            (0..words).map(|i| word_depth(i).min(per_word)).sum()
        }
        // 6.12.y / 7.x: 75% of nr_requests, spread over the words in
        // proportion to their size; a word gets one more bit when the
        // division's remainder reaches past its own index.
        KyberAsyncDepth::Queue => {
            let shallow = (nr * KYBER_ASYNC_PERCENT / 100) as u64;
            (0..words)
                .map(|i| {
                    let wd = word_depth(i) as u64;
                    let (q, r) = ((wd * shallow) / nr as u64, (wd * shallow) % nr as u64);
                    (q + (r >= (i as u64 + 1) * wd) as u64) as u32
                })
                .sum()
        }
    }
}

/// `struct kyber_queue_data` and the one `struct kyber_hctx_data`.
#[derive(Clone, Debug)]
pub struct Kyber {
    /// `kqd->domain_tokens`.
    pub tokens: [DomainTokens; KYBER_NUM_DOMAINS],
    /// Scheduler tags an async allocation may see in use.
    pub async_depth: u32,
    /// The software context's lists (`kcq->rq_list`), where bios merge.
    kcq: [VecDeque<u32>; KYBER_NUM_DOMAINS],
    /// `khd->rqs`: flushed from the kcq, waiting for a token.
    rqs: [VecDeque<u32>; KYBER_NUM_DOMAINS],
    pub cur_domain: usize,
    pub batching: u32,
    /// `kqd->latency_targets` (ns).
    pub latency_targets: [u64; KYBER_OTHER],
    /// `kqd->latency_buckets` (the per-CPU ones summed as they come).
    pub latency_buckets: [[[u32; KYBER_LATENCY_BUCKETS]; 2]; KYBER_OTHER],
    /// `kqd->latency_timeout` in jiffies (0: none).
    latency_timeout: [u64; KYBER_OTHER],
    /// `kqd->domain_p99`.
    domain_p99: [i32; KYBER_OTHER],
    /// When the timer fires (jiffies), if armed.
    timer: Option<u64>,
    /// Per request slot: the domain token held (`rq->elv.priv[0]`) and
    /// `io_start_time_ns`.
    priv_: Vec<(Option<u32>, u64)>,
}

impl Kyber {
    /// `kyber_init_sched` + `kyber_init_hctx` (→ `kyber_depth_updated`).
    pub fn new(nr_requests: u32, rule: KyberAsyncDepth, read_lat_nsec: u64, write_lat_nsec: u64) -> Self {
        let mut targets = KYBER_LATENCY_TARGETS;
        targets[KYBER_READ] = read_lat_nsec;
        targets[KYBER_WRITE] = write_lat_nsec;
        Kyber {
            tokens: KYBER_DEPTH.map(DomainTokens::new),
            async_depth: kyber_async_depth(nr_requests, rule),
            kcq: Default::default(),
            rqs: Default::default(),
            cur_domain: 0,
            batching: 0,
            latency_targets: targets,
            latency_buckets: [[[0; KYBER_LATENCY_BUCKETS]; 2]; KYBER_OTHER],
            latency_timeout: [0; KYBER_OTHER],
            domain_p99: [-1; KYBER_OTHER],
            timer: None,
            priv_: Vec::new(),
        }
    }

    /// `kyber_has_work`.
    pub fn has_work(&self) -> bool {
        self.kcq.iter().chain(self.rqs.iter()).any(|l| !l.is_empty())
    }

    pub fn queued(&self) -> usize {
        self.kcq.iter().chain(self.rqs.iter()).map(|l| l.len()).sum()
    }

    /// `kyber_insert_requests` for one request: to the tail of its
    /// domain's kcq list.
    pub fn insert(&mut self, op: Op, id: u32) {
        self.kcq[kyber_sched_domain(op)].push_back(id);
    }

    fn slot(&mut self, id: u32) -> &mut (Option<u32>, u64) {
        let i = id as usize;
        if self.priv_.len() <= i {
            self.priv_.resize(i + 1, (None, 0));
        }
        &mut self.priv_[i]
    }

    /// Run the timer if it should have fired by `now_ns`.
    fn run_timer_if_due(&mut self, now_ns: u64) {
        if let Some(at) = self.timer {
            if jiffies(now_ns) >= at {
                self.timer = None;
                self.kyber_timer_fn(at);
            }
        }
    }

    /// `kyber_dispatch_request`: continue the batch of the current domain,
    /// else start a batch at the next domain (round robin, back to the
    /// current one last) that has a request and a token.
    pub fn kyber_dispatch_request(&mut self, now_ns: u64) -> Option<u32> {
        self.run_timer_if_due(now_ns);
        if self.batching < KYBER_BATCH_SIZE[self.cur_domain] {
            if let Some(id) = self.kyber_dispatch_cur_domain(now_ns) {
                return Some(id);
            }
        }
        self.batching = 0;
        for _ in 0..KYBER_NUM_DOMAINS {
            self.cur_domain = (self.cur_domain + 1) % KYBER_NUM_DOMAINS;
            if let Some(id) = self.kyber_dispatch_cur_domain(now_ns) {
                return Some(id);
            }
        }
        None
    }

    /// `kyber_dispatch_cur_domain`: a flushed request first; otherwise, if
    /// the kcq holds some and a token is free, flush the kcq (its requests
    /// stop being merge candidates) and take its head.
    fn kyber_dispatch_cur_domain(&mut self, now_ns: u64) -> Option<u32> {
        let d = self.cur_domain;
        if self.rqs[d].is_empty() {
            if self.kcq[d].is_empty() {
                return None;
            }
            let nr = self.tokens[d].get()?;
            let flushed = std::mem::take(&mut self.kcq[d]);
            self.rqs[d].extend(flushed);
            return Some(self.take_head(d, nr, now_ns));
        }
        let nr = self.tokens[d].get()?;
        Some(self.take_head(d, nr, now_ns))
    }

    fn take_head(&mut self, d: usize, nr: u32, now_ns: u64) -> u32 {
        let id = self.rqs[d].pop_front().expect("a flushed request");
        self.batching += 1;
        *self.slot(id) = (Some(nr), now_ns);
        id
    }

    /// `kyber_finish_request`: the request's token goes back.
    pub fn kyber_finish_request(&mut self, op: Op, id: u32) {
        if let Some(nr) = self.slot(id).0.take() {
            self.tokens[kyber_sched_domain(op)].clear(nr);
        }
    }

    /// `kyber_completed_request`: a total and an I/O latency sample
    /// (domains but other), and the timer armed 100 ms ahead unless it
    /// fires sooner (`timer_reduce`).
    pub fn kyber_completed_request(&mut self, rq: &Request, id: u32, now_ns: u64) {
        self.run_timer_if_due(now_ns);
        let d = kyber_sched_domain(rq.op);
        if d == KYBER_OTHER {
            return;
        }
        let io_start = self.slot(id).1;
        let target = self.latency_targets[d];
        self.add_latency_sample(d, KYBER_TOTAL_LATENCY, target, now_ns.saturating_sub(rq.start_time_ns));
        self.add_latency_sample(d, KYBER_IO_LATENCY, target, now_ns.saturating_sub(io_start));
        let at = jiffies(now_ns) + HZ / 10;
        self.timer = Some(self.timer.map_or(at, |t| t.min(at)));
    }

    /// `add_latency_sample`: bucket `(latency - 1) / (target / 4)`, the last
    /// one open-ended.
    pub fn add_latency_sample(&mut self, d: usize, kind: usize, target: u64, latency: u64) {
        let bucket = if latency > 0 {
            let divisor = (target >> KYBER_LATENCY_SHIFT).max(1);
            (((latency - 1) / divisor) as usize).min(KYBER_LATENCY_BUCKETS - 1)
        } else {
            0
        };
        self.latency_buckets[d][kind][bucket] += 1;
    }

    /// `calculate_percentile`: the bucket holding the given percentile,
    /// once 500 samples or a second since the first attempt are there; the
    /// histogram then starts over. None (-1) before.
    pub fn calculate_percentile(&mut self, d: usize, kind: usize, percentile: u32, now_j: u64) -> Option<usize> {
        let buckets = &mut self.latency_buckets[d][kind];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return None;
        }
        if self.latency_timeout[d] == 0 {
            self.latency_timeout[d] = (now_j + HZ).max(1);
        }
        if samples < 500 && self.latency_timeout[d] > now_j {
            return None;
        }
        self.latency_timeout[d] = 0;
        let mut rank = (samples * percentile).div_ceil(100);
        let mut bucket = 0;
        while bucket < KYBER_LATENCY_BUCKETS - 1 && buckets[bucket] < rank {
            rank -= buckets[bucket];
            bucket += 1;
        }
        *buckets = [0; KYBER_LATENCY_BUCKETS];
        Some(bucket)
    }

    /// `kyber_resize_domain`: between 1 and the domain's `kyber_depth`.
    fn kyber_resize_domain(&mut self, d: usize, depth: u32) {
        self.tokens[d].resize(depth.clamp(1, KYBER_DEPTH[d]));
    }

    /// `kyber_timer_fn` at jiffies `now_j`: congestion when some domain's
    /// I/O p90 is past its target; then each domain with a (current or
    /// remembered) total p99 is scaled by `(p99 bucket + 1) / 4` if
    /// congested or past its own target.
    pub fn kyber_timer_fn(&mut self, now_j: u64) {
        let mut bad = false;
        for d in 0..KYBER_OTHER {
            if self.calculate_percentile(d, KYBER_IO_LATENCY, 90, now_j).is_some_and(|b| b >= KYBER_GOOD_BUCKETS) {
                bad = true;
            }
        }
        for d in 0..KYBER_OTHER {
            let mut p99 = self.calculate_percentile(d, KYBER_TOTAL_LATENCY, 99, now_j).map_or(-1, |b| b as i32);
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 as usize >= KYBER_GOOD_BUCKETS {
                let orig = self.tokens[d].depth();
                self.kyber_resize_domain(d, (orig * (p99 as u32 + 1)) >> KYBER_LATENCY_SHIFT);
            }
        }
    }
}

/// `kyber_bio_merge`: the bio's domain list of the software context,
/// newest first (`blk_bio_list_merge`).
#[inline(always)]
pub fn kyber_bio_merge(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    let d = kyber_sched_domain(core.bio(bio).op);
    let RequestQueue { sched, rqs, lim, .. } = q;
    let Some(ElevatorData::Kyber(ky)) = sched.as_mut().map(|e| &mut e.data) else { return false };
    blk_bio_list_merge(&ky.kcq[d], rqs, lim, core, bio, nsegs)
}

/// `kyber_insert_requests` for one request ('I').
pub fn kyber_insert_requests(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    core.stats[q.dev as usize].inserts += 1;
    let rq = q.rqs.get(id);
    trace_rq(core, Action::Insert, rq, task);
    let op = rq.op;
    if let Some(ElevatorData::Kyber(ky)) = q.sched.as_mut().map(|e| &mut e.data) {
        ky.insert(op, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn token_pools_start_at_kyber_depth_and_refuse_the_next() {
        // kyber_depth[]: 256 / 128 / 64 / 16. OTHER's 16 bits: shift 2
        // (4 << 6, 4 << 5, 4 << 4, 4 << 3 are above 16; 4 << 2 is not), four
        // words of four. The hint follows each bit taken at it (0, 1, ...,
        // 14; at 14 the next hint 15 is >= depth - 1 and wraps to 0), so bit
        // 15 is found from word 0 onwards: tokens 0..15 in order, then none.
        let ky = Kyber::new(256, KyberAsyncDepth::Queue, 2 * MS, 10 * MS);
        let depths: Vec<u32> = ky.tokens.iter().map(|t| t.depth()).collect();
        assert_eq!(depths, vec![256, 128, 64, 16]);
        assert_eq!([256, 128, 64, 16].map(sbitmap_calculate_shift), [6, 5, 4, 2]);
        let mut t = DomainTokens::new(16);
        let got: Vec<u32> = (0..16).map(|_| t.get().expect("free token")).collect();
        assert_eq!(got, (0..16).collect::<Vec<_>>());
        assert_eq!(t.get(), None);
        // A freed bit becomes the hint: the next get takes it.
        t.clear(5);
        assert_eq!(t.get(), Some(5));
    }

    #[test]
    fn a_shrunk_pool_ignores_busy_bits_above_its_depth() {
        // All 16 held, then resized to 8 (sbitmap_queue_resize): bits 8..15
        // stay held. Freeing them gives nothing usable while 0..7 are held;
        // freeing 0..7 instead gives eight tokens, so 16 are out against a
        // depth of 8 until the old ones finish, as with the kernel's sbitmap.
        let full = || {
            let mut t = DomainTokens::new(16);
            (0..16).for_each(|_| assert!(t.get().is_some()));
            t.resize(8);
            t
        };
        let mut t = full();
        (8..16).for_each(|b| t.clear(b));
        assert_eq!(t.get(), None);
        let mut t = full();
        (0..8).for_each(|b| t.clear(b));
        assert_eq!((0..9).filter_map(|_| t.get()).count(), 8);
        assert_eq!(t.in_use(), 16);
        // Never above the initial depth.
        t.resize(300);
        assert_eq!(t.depth(), 16);
    }

    #[test]
    fn async_depth_per_word_on_61_and_per_queue_on_612() {
        // nr_requests 256: shift 6, four words of 64. 6.1: 64 * 75 / 100 = 48
        // a word, 192. 6.12: 75% of 256 = 192, 48 a word. The same.
        assert_eq!(kyber_async_depth(256, KyberAsyncDepth::Word), 192);
        assert_eq!(kyber_async_depth(256, KyberAsyncDepth::Queue), 192);
        // nr_requests 100: shift 4 (4 << 5 = 128 > 100), six words of 16 and
        // one of 4. 6.1: 16 * 75 / 100 = 12 a word, the last min(4, 12):
        // 6 * 12 + 4 = 76. 6.12: 75 over the words: 16 * 75 / 100 = 12 r 0
        // and 4 * 75 / 100 = 3 r 0: 6 * 12 + 3 = 75.
        assert_eq!(kyber_async_depth(100, KyberAsyncDepth::Word), 76);
        assert_eq!(kyber_async_depth(100, KyberAsyncDepth::Queue), 75);
        // nr_requests 10: shift 1, five words of 2. 6.1: 2 * 75 / 100 = 1
        // a word: 5. 6.12: 75% is 7; a word gets 2 * 7 / 10 = 1 r 4, plus
        // one where 4 >= (i + 1) * 2, i.e. words 0 and 1: 2 + 2 + 1 + 1 + 1.
        assert_eq!(kyber_async_depth(10, KyberAsyncDepth::Word), 5);
        assert_eq!(kyber_async_depth(10, KyberAsyncDepth::Queue), 7);
    }

    #[test]
    fn dispatch_batches_per_domain_round_robin() {
        // 20 reads, 10 writes, one discard, tokens for all. READ first
        // (cur_domain 0) for kyber_batch_size 16, then WRITE for 8, DISCARD
        // for its 1, OTHER has nothing, READ's last 4, then the batch runs
        // dry and WRITE's last 2 follow.
        let mut ky = Kyber::new(256, KyberAsyncDepth::Queue, 2 * MS, 10 * MS);
        (0..20).for_each(|i| ky.insert(Op::Read, i));
        (20..30).for_each(|i| ky.insert(Op::Write, i));
        ky.insert(Op::Discard, 30);
        let order: String = std::iter::from_fn(|| ky.kyber_dispatch_request(0))
            .map(|id| match id {
                0..=19 => 'R',
                20..=29 => 'W',
                _ => 'D',
            })
            .collect();
        assert_eq!(order, format!("{}{}D{}{}", "R".repeat(16), "W".repeat(8), "R".repeat(4), "W".repeat(2)));
        assert!(!ky.has_work());
    }

    #[test]
    fn a_domain_without_tokens_waits_and_others_go_on() {
        // WRITE shrunk to 2 tokens: two writes go, the third waits while
        // reads still dispatch; a finished write frees a token for it.
        let mut ky = Kyber::new(256, KyberAsyncDepth::Queue, 2 * MS, 10 * MS);
        ky.tokens[KYBER_WRITE].resize(2);
        (0..3).for_each(|i| ky.insert(Op::Write, i));
        ky.insert(Op::Read, 3);
        let first: Vec<u32> = std::iter::from_fn(|| ky.kyber_dispatch_request(0)).collect();
        // READ is tried first (cur_domain 0): the read, then two writes.
        assert_eq!(first, vec![3, 0, 1]);
        ky.kyber_finish_request(Op::Write, 0);
        assert_eq!(ky.kyber_dispatch_request(0), Some(2));
    }

    #[test]
    fn latency_buckets_are_quarters_of_the_target() {
        // Read target 2 ms: buckets of 500 us; (latency - 1) / 500 us, the
        // last bucket (7) open-ended; a zero latency is bucket 0.
        let mut ky = Kyber::new(256, KyberAsyncDepth::Queue, 2 * MS, 10 * MS);
        for lat in [0, 1, MS / 2, MS / 2 + 1, 2 * MS, 2 * MS + 1, 100 * MS] {
            ky.add_latency_sample(KYBER_READ, KYBER_IO_LATENCY, 2 * MS, lat);
        }
        assert_eq!(ky.latency_buckets[KYBER_READ][KYBER_IO_LATENCY], [3, 1, 0, 1, 1, 0, 0, 1]);
    }

    #[test]
    fn timer_throttles_good_domains_when_one_is_congested() {
        // READ: 600 I/O samples, 100 at 0.3 ms (bucket 0), 500 at 2.2 ms
        // (bucket (2.2 ms - 1) / 0.5 ms = 4). p90: rank ceil(600 * 0.9) = 540;
        // 100 in bucket 0 leave 440, bucket 4 holds 500: bucket 4, past the
        // four good buckets, so the device is congested. READ's total
        // latency: 600 at 1.2 ms, bucket 2, so p99 = 2 and READ goes to
        // 256 * (2 + 1) / 4 = 192. WRITE (target 10 ms, buckets of 2.5 ms):
        // 500 samples at 4 ms, bucket 1, both kinds: p99 1, throttled to
        // 128 * 2 / 4 = 64. DISCARD has no samples: unchanged at 64.
        let mut ky = Kyber::new(256, KyberAsyncDepth::Queue, 2 * MS, 10 * MS);
        let mut add = |d, kind, n, lat| {
            (0..n).for_each(|_| {
                let t = ky.latency_targets[d];
                ky.add_latency_sample(d, kind, t, lat)
            })
        };
        add(KYBER_READ, KYBER_IO_LATENCY, 100, 300_000);
        add(KYBER_READ, KYBER_IO_LATENCY, 500, 2_200_000);
        add(KYBER_READ, KYBER_TOTAL_LATENCY, 600, 1_200_000);
        add(KYBER_WRITE, KYBER_IO_LATENCY, 500, 4 * MS);
        add(KYBER_WRITE, KYBER_TOTAL_LATENCY, 500, 4 * MS);
        ky.kyber_timer_fn(1000);
        let depths: Vec<u32> = ky.tokens.iter().map(|t| t.depth()).collect();
        assert_eq!(depths, vec![192, 64, 64, 16]);
        // The histograms were used up.
        assert_eq!(ky.latency_buckets[KYBER_READ][KYBER_TOTAL_LATENCY], [0; 8]);
    }

    #[test]
    fn timer_gives_a_domain_past_its_target_more_tokens() {
        // No congestion (READ's I/O p90 in bucket 0), but READ's total p99
        // at 3 ms is bucket (3 ms - 1) / 0.5 ms = 5: READ grows by (5 + 1) / 4
        // from 192 to 288, clamped to kyber_depth 256.
        let mut ky = Kyber::new(256, KyberAsyncDepth::Queue, 2 * MS, 10 * MS);
        ky.tokens[KYBER_READ].resize(192);
        (0..500).for_each(|_| ky.add_latency_sample(KYBER_READ, KYBER_IO_LATENCY, 2 * MS, 300_000));
        (0..500).for_each(|_| ky.add_latency_sample(KYBER_READ, KYBER_TOTAL_LATENCY, 2 * MS, 3 * MS));
        ky.kyber_timer_fn(1000);
        assert_eq!(ky.tokens[KYBER_READ].depth(), 256);
    }

    #[test]
    fn percentiles_wait_for_500_samples_or_a_second() {
        // 100 samples at jiffy 1000: too few, and the one-second timeout
        // starts (1000 + HZ). Nothing changes until jiffy 1250.
        let mut ky = Kyber::new(256, KyberAsyncDepth::Queue, 2 * MS, 10 * MS);
        (0..100).for_each(|_| ky.add_latency_sample(KYBER_READ, KYBER_TOTAL_LATENCY, 2 * MS, 3 * MS));
        assert_eq!(ky.calculate_percentile(KYBER_READ, KYBER_TOTAL_LATENCY, 99, 1000), None);
        assert_eq!(ky.calculate_percentile(KYBER_READ, KYBER_TOTAL_LATENCY, 99, 1249), None);
        assert_eq!(ky.calculate_percentile(KYBER_READ, KYBER_TOTAL_LATENCY, 99, 1250), Some(5));
    }

    #[test]
    fn domains_by_op() {
        let d: Vec<usize> = [Op::Read, Op::Write, Op::Discard, Op::Flush, Op::WriteZeroes, Op::SecureErase].map(kyber_sched_domain).to_vec();
        assert_eq!(d, vec![KYBER_READ, KYBER_WRITE, KYBER_DISCARD, KYBER_OTHER, KYBER_OTHER, KYBER_OTHER]);
    }
}
