//! Writeback throttling (block/blk-wbt.c): buffered writeback and discards
//! are held to a few requests in flight so that reads beside them keep a
//! low latency.
//!
//! * Which bios count (`wbt_should_throttle`): writes, unless `REQ_SYNC |
//!   REQ_IDLE` (O_DIRECT), and discards. Reads are only timestamped.
//! * Three limits from the queue depth and the scale step
//!   (`calc_wb_limits`): `max_depth` for `REQ_SYNC`/`REQ_META`/`REQ_PRIO`
//!   writes (WB_SYNC_ALL writeback, fsync), `wb_background` for
//!   `REQ_BACKGROUND` writeback, discards, and any write within 100 ms of
//!   another read's issue or completion (`close_io`), `wb_normal` otherwise.
//! * `wbt_wait`: a submitter over its limit sleeps until a completion frees
//!   a slot; with a volatile write cache, sleepers are woken only once the
//!   writes in flight drained to none (`wbt_rqw_done`).
//! * Every window (100 ms, shorter when scaled down: `rwb_arm_timer`) the
//!   smallest read latency is compared with `min_lat_nsec` (`wbt_lat_usec`):
//!   above it the depth halves (a step down), below it a step up; with only
//!   writes the step may go negative, raising the depth up to 3/4 of the
//!   queue (`wb_timer_fn`, `latency_exceeded`).
//!
//! Not modelled: `balance_dirty_pages` sleeps (`wb_recent_wait`, which
//! lifts writes to `max_depth`) and kswapd (no task of the model is).

use crate::bio::{req, BioId, Op};
use crate::mq::{Request, RequestQueue, Waiter};
use crate::profile::WbtReclaim;
use crate::rq_qos::stat::{BlkRqStat, BlkStatCallback, READ, WRITE};
use crate::rq_qos::{RqDepth, RqWait};
use crate::stats::diskstats::jiffies;
use crate::submit::{BlockCore, SimEvent};

/// `enum wbt_flags`, kept on the request.
pub const WBT_TRACKED: u8 = 1;
pub const WBT_READ: u8 = 2;
/// From kswapd (up to 6.1) or a swap write (6.12 on): its own wait queue.
pub const WBT_SWAP: u8 = 4;
pub const WBT_DISCARD: u8 = 8;

/// The wait queues: background, swap (kswapd), discard.
const WBT_RWQ_BG: usize = 0;
const WBT_RWQ_SWAP: usize = 1;
const WBT_RWQ_DISCARD: usize = 2;

/// `RWB_DEF_DEPTH`: the depth at step 0, when the queue is deeper.
const RWB_DEF_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`: 100 ms.
const RWB_WINDOW_NSEC: u64 = 100_000_000;
/// `RWB_MIN_WRITE_SAMPLES`.
const RWB_MIN_WRITE_SAMPLES: u32 = 3;
/// `RWB_UNKNOWN_BUMP`.
const RWB_UNKNOWN_BUMP: u32 = 5;
/// `HZ / 10`: what `close_io` calls recent.
const CLOSE_IO_JIFFIES: u64 = crate::profile::HZ / 10;

/// `wbt_default_latency_nsec`: 2 ms for non-rotational storage, 75 ms for
/// rotational (6.1, 6.12 and later alike).
pub fn wbt_default_latency_nsec(rotational: bool) -> u64 {
    if rotational {
        75_000_000
    } else {
        2_000_000
    }
}

/// Whether attaching an elevator turns default wbt off: bfq's
/// `bfq_init_queue` calls `wbt_disable_default` (and 6.2+ marks it
/// `ELEVATOR_FLAG_DISABLE_WBT`, which only matters for an elevator in place
/// before the queue is registered: the model's scheduler is a sysfs write
/// after that, as in every kernel).
pub fn elevator_disables_wbt(elevator_name: &str) -> bool {
    elevator_name == "bfq"
}

/// What `latency_exceeded` concludes about a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatStatus {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// `struct rq_wb`.
#[derive(Clone, Debug)]
pub struct RqWb {
    pub wb_background: u32,
    pub wb_normal: u32,
    pub unknown_cnt: u32,
    pub win_nsec: u64,
    pub cur_win_nsec: u64,
    pub cb: BlkStatCallback,
    /// A timer event is in the run's queue for this time.
    event_at: Option<u64>,
    /// `sync_issue`, `sync_cookie`: the oldest read in flight, by issue
    /// time and request slot.
    sync: Option<(u64, u32)>,
    /// `last_issue`, `last_comp` of reads, in jiffies (`None`: long ago —
    /// the kernel sets them when the disk is registered, well before).
    last_issue: Option<u64>,
    last_comp: Option<u64>,
    pub min_lat_nsec: u64,
    pub rq_wait: [RqWait; 3],
    pub rq_depth: RqDepth,
    /// `QUEUE_FLAG_WC`.
    write_cache: bool,
    reclaim: WbtReclaim,
}

/// `wbt_init` with latency target `min_lat_nsec` (non-zero) on a queue of
/// `blk_queue_depth` `queue_depth`.
pub fn wbt_init(queue_depth: u32, min_lat_nsec: u64, write_cache: bool, reclaim: WbtReclaim) -> RqWb {
    let rq_depth = RqDepth { max_depth: 0, scale_step: 0, scaled_max: false, queue_depth, default_depth: RWB_DEF_DEPTH };
    let mut rwb = RqWb {
        wb_background: 0,
        wb_normal: 0,
        unknown_cnt: 0,
        win_nsec: RWB_WINDOW_NSEC,
        cur_win_nsec: RWB_WINDOW_NSEC,
        cb: BlkStatCallback::default(),
        event_at: None,
        sync: None,
        last_issue: None,
        last_comp: None,
        min_lat_nsec,
        rq_wait: Default::default(),
        rq_depth,
        write_cache,
        reclaim,
    };
    rwb.rq_depth.rq_depth_calc_max_depth();
    rwb.calc_wb_limits();
    rwb
}

/// `wbt_should_throttle`: writes other than O_DIRECT ones, and discards.
pub fn wbt_should_throttle(op: Op, flags: u32) -> bool {
    match op {
        Op::Write => flags & (req::SYNC | req::IDLE) != req::SYNC | req::IDLE,
        Op::Discard => true,
        _ => false,
    }
}

/// `bio_to_wbt_flags`.
pub fn bio_to_wbt_flags(rwb: &RqWb, op: Op, flags: u32) -> u8 {
    if op == Op::Read {
        return WBT_READ;
    }
    if !wbt_should_throttle(op, flags) {
        return 0;
    }
    let swap = match rwb.reclaim {
        // current_is_kswapd(): no task of the model is kswapd.
        WbtReclaim::Kswapd => false,
        WbtReclaim::Swap => flags & req::SWAP != 0,
    };
    WBT_TRACKED | if swap { WBT_SWAP } else { 0 } | if op == Op::Discard { WBT_DISCARD } else { 0 }
}

/// `get_rq_wait`.
fn get_rq_wait(wb_acct: u8) -> usize {
    if wb_acct & WBT_SWAP != 0 {
        WBT_RWQ_SWAP
    } else if wb_acct & WBT_DISCARD != 0 {
        WBT_RWQ_DISCARD
    } else {
        WBT_RWQ_BG
    }
}

impl RqWb {
    /// `calc_wb_limits`.
    pub fn calc_wb_limits(&mut self) {
        let max = self.rq_depth.max_depth;
        (self.wb_normal, self.wb_background) = if self.min_lat_nsec == 0 {
            (0, 0)
        } else if max <= 2 {
            (max, 1)
        } else {
            ((max + 1) / 2, (max + 3) / 4)
        };
    }

    /// `close_io`: a read was issued or completed less than 100 ms ago.
    fn close_io(&self, now: u64) -> bool {
        let j = jiffies(now);
        [self.last_issue, self.last_comp].iter().any(|t| t.is_some_and(|t| j < t + CLOSE_IO_JIFFIES))
    }

    /// `get_limit` for a tracked bio with `flags`.
    pub fn get_limit(&self, op: Op, flags: u32, now: u64) -> u32 {
        if op == Op::Discard {
            return self.wb_background;
        }
        // REQ_HIPRIO: REQ_SYNC | REQ_META | REQ_PRIO, and REQ_SWAP since
        // swap writes got their own queue. (wb_recent_wait and
        // current_is_kswapd are never true here.)
        let hiprio = req::SYNC | req::META | req::PRIO | if self.reclaim == WbtReclaim::Swap { req::SWAP } else { 0 };
        if flags & hiprio != 0 {
            self.rq_depth.max_depth
        } else if flags & req::BACKGROUND != 0 || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    fn inflight(&self) -> u32 {
        self.rq_wait.iter().map(|w| w.inflight).sum()
    }

    /// `wbt_rqw_done`: one tracked request less on its queue; whether its
    /// sleepers should be woken.
    fn wbt_rqw_done(&mut self, wb_acct: u8) -> bool {
        let rqw = &mut self.rq_wait[get_rq_wait(wb_acct)];
        rqw.inflight -= 1;
        let inflight = rqw.inflight;
        // Discards drop to the background limit; writes to a disk with a
        // volatile write cache drain completely before anyone is woken.
        let limit = if wb_acct & WBT_DISCARD != 0 {
            self.wb_background
        } else if self.write_cache {
            0
        } else {
            self.wb_normal
        };
        if inflight > 0 && inflight >= limit {
            return false;
        }
        !rqw.waiters.is_empty() && (inflight == 0 || limit - inflight >= self.wb_background / 2)
    }

    /// `latency_exceeded` for a closed window at `now`.
    pub fn latency_exceeded(&self, stat: &[BlkRqStat; 2], now: u64) -> LatStatus {
        // A read issued long ago and still not back counts as a violation.
        let thislat = self.sync.map_or(0, |(t, _)| now.saturating_sub(t));
        if thislat > self.cur_win_nsec || (thislat > self.min_lat_nsec && stat[READ].nr_samples == 0) {
            return LatStatus::Exceeded;
        }
        if !(stat[READ].nr_samples >= 1 && stat[WRITE].nr_samples >= RWB_MIN_WRITE_SAMPLES) {
            return if stat[WRITE].nr_samples > 0 || self.inflight() > 0 { LatStatus::UnknownWrites } else { LatStatus::Unknown };
        }
        if stat[READ].min > self.min_lat_nsec {
            LatStatus::Exceeded
        } else {
            LatStatus::Ok
        }
    }

    /// `scale_up`: whether the sleepers should all be woken.
    fn scale_up(&mut self) -> bool {
        if !self.rq_depth.rq_depth_scale_up() {
            return false;
        }
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        true
    }

    /// `scale_down`.
    fn scale_down(&mut self, hard_throttle: bool) {
        if self.rq_depth.rq_depth_scale_down(hard_throttle) {
            self.calc_wb_limits();
            self.unknown_cnt = 0;
        }
    }

    /// `wb_timer_fn`'s decision for a closed window: the new step and
    /// limits; true when the sleepers should be woken (a scale up).
    pub fn wb_timer_decide(&mut self, stat: &[BlkRqStat; 2], now: u64) -> bool {
        match self.latency_exceeded(stat, now) {
            LatStatus::Exceeded => {
                self.scale_down(true);
                false
            }
            // With writes but no valid mix the step may go negative.
            LatStatus::Ok | LatStatus::UnknownWrites => self.scale_up(),
            LatStatus::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt < RWB_UNKNOWN_BUMP {
                    return false;
                }
                // Back towards step 0, slowly.
                if self.rq_depth.scale_step > 0 {
                    return self.scale_up();
                }
                if self.rq_depth.scale_step < 0 {
                    self.scale_down(false);
                }
                false
            }
        }
    }

    /// `rwb_arm_timer`: the window shrinks to 100 ms / sqrt(step + 1) when
    /// scaled down. Returns when it closes.
    pub fn rwb_arm_timer(&mut self, now: u64) -> u64 {
        let step = self.rq_depth.scale_step;
        self.cur_win_nsec = if step > 0 { (self.win_nsec << 4) / int_sqrt(((step + 1) as u64) << 8) } else { self.win_nsec };
        self.cb.blk_stat_activate_nsecs(now, self.cur_win_nsec)
    }
}

/// `int_sqrt`: the floor of the square root.
fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// Arm the window's timer at `at` (now, or a missed firing being caught
/// up) and schedule its firing when that is still to come.
#[cold]
#[inline(never)]
fn arm(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, at: u64) {
    let e = rwb.rwb_arm_timer(at);
    if e >= core.now && rwb.event_at != Some(e) {
        core.schedule(e, SimEvent::WbtTimer { queue: qi });
        rwb.event_at = Some(e);
    }
}

/// The window's timer fires at `at`: `blk_stat_timer_fn` → `wb_timer_fn`.
/// The step is decided, and the timer re-armed while scaled or busy.
#[cold]
#[inline(never)]
fn timer_fire(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, at: u64) {
    let inflight = rwb.inflight();
    let stat = rwb.cb.fire();
    if rwb.wb_timer_decide(&stat, at) {
        rwb_wake_all(rwb, core, qi);
    }
    if rwb.rq_depth.scale_step != 0 || inflight > 0 {
        arm(rwb, core, qi, at);
    }
}

/// Firings the run skipped while nothing was pending (see
/// [`wb_timer_event`]) happen now, in order, before anything looks at
/// the window or the limits.
fn catch_up(rwb: &mut RqWb, core: &mut BlockCore, qi: u32) {
    while let Some(e) = rwb.cb.expires {
        if e > core.now || rwb.event_at == Some(e) {
            return;
        }
        timer_fire(rwb, core, qi, e);
    }
}

/// `rwb_wake_all`.
fn rwb_wake_all(rwb: &mut RqWb, core: &mut BlockCore, qi: u32) {
    for i in 0..rwb.rq_wait.len() {
        wake_rq_wait(rwb, core, qi, i);
    }
}

/// `wake_up_all` on one wait queue: each sleeper under its own limit.
#[cold]
#[inline(never)]
fn wake_rq_wait(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, i: usize) {
    if rwb.rq_wait[i].waiters.is_empty() {
        return;
    }
    let mut rqw = std::mem::take(&mut rwb.rq_wait[i]);
    let now = core.now;
    let mut woken = std::mem::take(&mut core.woken);
    rqw.wake_all(qi, &mut woken, |w: &Waiter| {
        let b = core.bio(w.bio);
        rwb.get_limit(b.op, b.flags, now)
    });
    core.woken = woken;
    rwb.rq_wait[i] = rqw;
}

/// `wbt_wait` (the `throttle` hook): false when the submitter sleeps.
/// Inline in `rq_qos_throttle`: a few tests and a count for each bio of
/// a queue with wbt, about what a call costs.
#[inline(always)]
pub fn wbt_wait(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, bio: BioId, nsegs: u32) -> bool {
    catch_up(rwb, core, qi);
    let (op, flags) = (core.bio(bio).op, core.bio(bio).flags);
    let wb_acct = bio_to_wbt_flags(rwb, op, flags);
    if wb_acct & WBT_TRACKED == 0 {
        if wb_acct & WBT_READ != 0 {
            rwb.last_issue = Some(jiffies(core.now));
        }
        return true;
    }
    let limit = rwb.get_limit(op, flags, core.now);
    let got = rwb.rq_wait[get_rq_wait(wb_acct)].rq_qos_wait(limit, Waiter { task: core.current, bio, nsegs });
    if !rwb.cb.blk_stat_is_active() {
        arm(rwb, core, qi, core.now);
    }
    got
}

/// `wbt_cleanup`: a counted bio got no request.
pub fn wbt_cleanup(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, bio: BioId) {
    let b = core.bio(bio);
    let wb_acct = bio_to_wbt_flags(rwb, b.op, b.flags);
    if wb_acct & WBT_TRACKED != 0 && rwb.wbt_rqw_done(wb_acct) {
        wake_rq_wait(rwb, core, qi, get_rq_wait(wb_acct));
    }
}

/// `wbt_issue`: the first read in flight is remembered.
pub fn wbt_issue(rwb: &mut RqWb, id: u32, wb_flags: u8, now: u64) {
    if wb_flags & WBT_READ != 0 && rwb.sync.is_none() {
        rwb.sync = Some((now, id));
    }
}

/// A request ends: `blk_stat_add` with its issue-to-completion time, then
/// `wbt_done`. Inline: a few tests and counts for each request that ends,
/// where the call and its register saves cost about a third as much.
#[inline(always)]
pub fn wbt_completed(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, id: u32, rq: &Request) {
    catch_up(rwb, core, qi);
    rwb.cb.blk_stat_add(rq.op, core.now.saturating_sub(rq.io_start_time_ns));
    // Caught up just now: the window cannot have closed since.
    wbt_done_caught_up(rwb, core, qi, id, rq.wbt_flags);
}

/// `wbt_done`: a request ends or is freed. Inline: a few tests and a
/// count for each request, about what a call costs.
#[inline(always)]
pub fn wbt_done(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, id: u32, wb_flags: u8) {
    catch_up(rwb, core, qi);
    wbt_done_caught_up(rwb, core, qi, id, wb_flags);
}

/// [`wbt_done`] once any window that closed is dealt with.
#[inline(always)]
fn wbt_done_caught_up(rwb: &mut RqWb, core: &mut BlockCore, qi: u32, id: u32, wb_flags: u8) {
    if wb_flags & WBT_TRACKED == 0 {
        if rwb.sync.is_some_and(|(_, c)| c == id) {
            rwb.sync = None;
        }
        if wb_flags & WBT_READ != 0 {
            rwb.last_comp = Some(jiffies(core.now));
        }
    } else if rwb.wbt_rqw_done(wb_flags) {
        wake_rq_wait(rwb, core, qi, get_rq_wait(wb_flags));
    }
}

/// The window's timer event. With nothing else pending the run would
/// only go on for the timer's sake (windows without I/O stepping back to
/// step 0): the firing is left to [`catch_up`] when I/O comes again, so a
/// run (or a scenario step) ends with its last I/O.
pub fn wb_timer_event(q: &mut RequestQueue, core: &mut BlockCore) {
    let qi = q.index;
    let Some(qos) = q.rq_qos.as_deref_mut() else { return };
    let rwb = &mut qos.wbt;
    if rwb.event_at != Some(core.now) {
        return;
    }
    rwb.event_at = None;
    if core.pending_events() > 0 {
        timer_fire(rwb, core, qi, core.now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rwb(queue_depth: u32, wc: bool) -> RqWb {
        wbt_init(queue_depth, 2_000_000, wc, WbtReclaim::Swap)
    }

    fn stat(reads: u32, read_min: u64, writes: u32) -> [BlkRqStat; 2] {
        [BlkRqStat { min: read_min, max: read_min, nr_samples: reads }, BlkRqStat { min: 1, max: 1, nr_samples: writes }]
    }

    #[test]
    fn limits_for_depth_and_step() {
        // nr_requests 64: max_depth min(16, 64) = 16, wb_normal (16+1)/2 = 8,
        // wb_background (16+3)/4 = 4.
        let mut r = rwb(64, true);
        assert_eq!((r.rq_depth.max_depth, r.wb_normal, r.wb_background), (16, 8, 4));
        // Step 1: max 1 + (15 >> 1) = 8, normal 4, background (8+3)/4 = 2.
        r.scale_down(true);
        assert_eq!((r.rq_depth.max_depth, r.wb_normal, r.wb_background), (8, 4, 2));
        // Step 3: max 1 + (15 >> 3) = 2 (<= 2): normal 2, background 1.
        r.scale_down(true);
        r.scale_down(true);
        assert_eq!((r.rq_depth.max_depth, r.wb_normal, r.wb_background), (2, 2, 1));
        // Step -1 on depth 64: max 31, normal 16, background (31+3)/4 = 8.
        let mut r = rwb(64, true);
        r.scale_up();
        assert_eq!((r.rq_depth.scale_step, r.rq_depth.max_depth, r.wb_normal, r.wb_background), (-1, 31, 16, 8));
        // A SATA disk of queue depth 31... is 16 too; depth 4: max 4,
        // normal (4+1)/2 = 2, background (4+3)/4 = 1.
        let r = rwb(4, true);
        assert_eq!((r.rq_depth.max_depth, r.wb_normal, r.wb_background), (4, 2, 1));
    }

    #[test]
    fn which_bios_and_which_limit() {
        let r = rwb(64, true);
        // O_DIRECT writes (SYNC|IDLE) pass untracked; reads are only marked.
        assert_eq!(bio_to_wbt_flags(&r, Op::Write, req::SYNC | req::IDLE), 0);
        assert_eq!(bio_to_wbt_flags(&r, Op::Read, 0), WBT_READ);
        assert_eq!(bio_to_wbt_flags(&r, Op::Flush, req::PREFLUSH), 0);
        assert_eq!(bio_to_wbt_flags(&r, Op::Discard, 0), WBT_TRACKED | WBT_DISCARD);
        assert_eq!(bio_to_wbt_flags(&r, Op::Write, req::SWAP), WBT_TRACKED | WBT_SWAP);
        // 6.1: a swap write from direct reclaim has no queue of its own.
        let old = wbt_init(64, 2_000_000, true, WbtReclaim::Kswapd);
        assert_eq!(bio_to_wbt_flags(&old, Op::Write, req::SWAP), WBT_TRACKED);
        // Limits: fsync writeback max 16, background 4, other buffered
        // writes 8 (no read for long), discards 4; a swap write max on 6.12,
        // normal on 6.1.
        let t = 10_000_000_000;
        assert_eq!(r.get_limit(Op::Write, req::SYNC, t), 16);
        assert_eq!(r.get_limit(Op::Write, req::BACKGROUND, t), 4);
        assert_eq!(r.get_limit(Op::Write, 0, t), 8);
        assert_eq!(r.get_limit(Op::Discard, 0, t), 4);
        assert_eq!((r.get_limit(Op::Write, req::SWAP, t), old.get_limit(Op::Write, req::SWAP, t)), (16, 8));
    }

    #[test]
    fn a_read_within_100ms_drops_writes_to_background() {
        let mut r = rwb(64, true);
        // A read completed at jiffy 250 (1 s); HZ/10 = 25 jiffies later
        // (1.1 s) the window of close_io has passed.
        r.last_comp = Some(jiffies(1_000_000_000));
        assert_eq!(r.get_limit(Op::Write, 0, 1_099_999_999), 4);
        assert_eq!(r.get_limit(Op::Write, 0, 1_100_000_000), 8);
    }

    #[test]
    fn the_window_decides_the_step() {
        // min_lat 2 ms. A window with 1 read of min 3 ms and 3 writes:
        // exceeded, step 1.
        let mut r = rwb(64, true);
        assert_eq!(r.latency_exceeded(&stat(1, 3_000_000, 3), 0), LatStatus::Exceeded);
        r.wb_timer_decide(&stat(1, 3_000_000, 3), 0);
        assert_eq!(r.rq_depth.scale_step, 1);
        // Reads at 1.5 ms: ok, back to step 0 (a scale up wakes sleepers).
        assert!(r.wb_timer_decide(&stat(4, 1_500_000, 10), 0));
        assert_eq!(r.rq_depth.scale_step, 0);
        // Two writes and no read: not a valid mix but writes: step -1.
        assert_eq!(r.latency_exceeded(&stat(0, 0, 2), 0), LatStatus::UnknownWrites);
        r.wb_timer_decide(&stat(0, 0, 2), 0);
        assert_eq!(r.rq_depth.scale_step, -1);
        // Nothing at all: unknown; the fifth in a row steps back to 0.
        for _ in 0..4 {
            r.wb_timer_decide(&stat(0, 0, 0), 0);
        }
        assert_eq!((r.rq_depth.scale_step, r.unknown_cnt), (-1, 4));
        r.wb_timer_decide(&stat(0, 0, 0), 0);
        assert_eq!((r.rq_depth.scale_step, r.unknown_cnt), (0, 0));
    }

    #[test]
    fn a_read_stuck_past_the_window_is_a_violation() {
        // A read issued at 0 still in flight at 101 ms > the 100 ms window.
        let mut r = rwb(64, true);
        wbt_issue(&mut r, 7, WBT_READ, 0);
        assert_eq!(r.latency_exceeded(&stat(0, 0, 5), 101_000_000), LatStatus::Exceeded);
        // At 3 ms with no read sample: above min_lat (2 ms), also exceeded.
        assert_eq!(r.latency_exceeded(&stat(0, 0, 5), 3_000_000), LatStatus::Exceeded);
    }

    #[test]
    fn window_shrinks_with_the_step() {
        // Step 1: 100 ms * 16 / int_sqrt(2 << 8 = 512) = 1.6e9 / 22 =
        // 72_727_272 ns; step 3: / int_sqrt(1024) = 32: 50 ms.
        let mut r = rwb(64, true);
        r.scale_down(true);
        assert_eq!(r.rwb_arm_timer(0), 72_000_000);
        assert_eq!(r.cur_win_nsec, 72_727_272);
        r.scale_down(true);
        r.scale_down(true);
        r.rwb_arm_timer(0);
        assert_eq!(r.cur_win_nsec, 50_000_000);
    }

    #[test]
    fn write_cache_wakes_only_when_drained() {
        // Background limit 4, four in flight and a sleeper. With a write
        // cache the limit on completion is 0: no wake until none is left.
        let mut r = rwb(64, true);
        r.rq_wait[WBT_RWQ_BG].inflight = 4;
        r.rq_wait[WBT_RWQ_BG].waiters.push_back(Waiter { task: 1, bio: 0, nsegs: 1 });
        let wakes: Vec<bool> = (0..4).map(|_| r.wbt_rqw_done(WBT_TRACKED)).collect();
        assert_eq!(wakes, [false, false, false, true]);
        // Without one: normal limit 8; 3 left is below it and 8 - 3 = 5 >=
        // 4 / 2: wake.
        let mut r = rwb(64, false);
        r.rq_wait[WBT_RWQ_BG].inflight = 4;
        r.rq_wait[WBT_RWQ_BG].waiters.push_back(Waiter { task: 1, bio: 0, nsegs: 1 });
        assert!(r.wbt_rqw_done(WBT_TRACKED));
    }

    #[test]
    fn defaults() {
        assert_eq!((wbt_default_latency_nsec(true), wbt_default_latency_nsec(false)), (75_000_000, 2_000_000));
        assert!(elevator_disables_wbt("bfq") && !elevator_disables_wbt("mq-deadline"));
        assert_eq!((int_sqrt(512), int_sqrt(1024), int_sqrt(1023)), (22, 32, 31));
    }
}
