//! blk-throttle (block/blk-throttle.c): cgroup v2 `io.max`.
//!
//! Each disk with limits has a [`ThrotlData`] (`struct throtl_data`), and
//! each cgroup with limits on it a [`ThrotlGrp`] (`struct throtl_grp`,
//! one level below the root: nested groups are not modelled). A bio of a
//! limited group passes through [`blk_throtl_bio`] in `submit_bio_noacct`;
//! within the group's allowance for the time so far it goes on (charged),
//! otherwise it waits in the group's queue for its direction, in order.
//! The disk's pending timer (`throtl_pending_timer_fn`) releases the
//! queued bios when the limits allow, round-robin over the groups, and the
//! dispatch work (`blk_throtl_dispatch_work_fn`, run by the engine's
//! `kthrotld` worker) submits them again from `submit_bio_noacct_nocheck`.
//!
//! Time is counted in jiffies (HZ = 250) and allowances over slices of
//! `DFL_THROTL_SLICE` (100 ms). The version differences are
//! [`ThrotlRules`]: how the wait is computed, the iops wait's floor, how
//! slices are trimmed.

use std::collections::VecDeque;

use crate::bio::{BioId, Op};
use crate::genhd::DevId;
use crate::profile::{Behaviour, ThrotlDispatch, ThrotlIopsWait, ThrotlTrim, HZ};
use crate::submit::{BlockCore, SimEvent};

/// Bios at most dispatched from one group in a round (`THROTL_GRP_QUANTUM`),
/// three quarters of them reads.
const THROTL_GRP_QUANTUM: u32 = 8;
/// Bios at most dispatched in one round (`THROTL_QUANTUM`).
const THROTL_QUANTUM: u32 = 32;
/// `DFL_THROTL_SLICE` (HZ / 10), in jiffies.
pub const DFL_THROTL_SLICE: u64 = HZ / 10;
/// Nanoseconds per jiffy.
const JIFFY_NS: u64 = 1_000_000_000 / HZ;

/// `BIO_BPS_THROTTLED`: the bio's bytes were charged (set when it passes the
/// throttle; a split remainder keeps it, a clone starts without it).
pub const BIO_BPS_THROTTLED: u8 = 1;
/// `BIO_TG_BPS_THROTTLED` (7.x): charged its bytes by the group it waits in.
pub const BIO_TG_BPS_THROTTLED: u8 = 2;

const READ: usize = 0;
const WRITE: usize = 1;
/// The two queues of a direction: bios still to pass the bps limit (the
/// only queue before 7.x), and bios charged their bytes (7.x).
const BPS_Q: usize = 0;
const IOPS_Q: usize = 1;

/// The jiffy count at `now_ns`.
pub fn jiffies(now_ns: u64) -> u64 {
    now_ns / JIFFY_NS
}

/// The version rules blk-throttle follows.
#[derive(Clone, Copy, Debug)]
pub struct ThrotlRules {
    pub dispatch: ThrotlDispatch,
    pub iops_wait: ThrotlIopsWait,
    pub trim: ThrotlTrim,
    pub split_ios: bool,
}

impl ThrotlRules {
    pub fn of(beh: &Behaviour) -> ThrotlRules {
        ThrotlRules { dispatch: beh.throtl_dispatch, iops_wait: beh.throtl_iops_wait, trim: beh.throtl_trim, split_ios: beh.throtl_split_ios }
    }

    fn split_queues(self) -> bool {
        self.dispatch == ThrotlDispatch::BpsThenIops
    }
}

/// A queued bio as the group sees it: its bytes for the bps limit
/// (`throtl_bio_data_size`) and its throttle flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QBio {
    pub id: BioId,
    pub size: u64,
    pub flags: u8,
}

/// `struct throtl_grp`: one cgroup's limits and state on one disk.
#[derive(Clone, Debug)]
pub struct ThrotlGrp {
    pub blkcg: u16,
    /// Bytes/s and I/Os per second by direction (`u64::MAX`/`u32::MAX`: none).
    pub bps: [u64; 2],
    pub iops: [u32; 2],
    bytes_disp: [i64; 2],
    io_disp: [i64; 2],
    slice_start: [u64; 2],
    slice_end: [u64; 2],
    /// Per direction, the bps queue and the iops queue (7.x; before, only
    /// the first is used).
    queued: [[VecDeque<QBio>; 2]; 2],
    /// When the group's first queued bio may go (jiffies).
    disptime: u64,
    /// On the pending tree (`THROTL_TG_PENDING`), with its insertion order.
    pending: Option<u64>,
    /// `THROTL_TG_WAS_EMPTY` / `THROTL_TG_IOPS_WAS_EMPTY`.
    was_empty: bool,
}

impl ThrotlGrp {
    pub fn new(blkcg: u16, bps: [u64; 2], iops: [u32; 2]) -> ThrotlGrp {
        ThrotlGrp {
            blkcg,
            bps,
            iops,
            bytes_disp: [0; 2],
            io_disp: [0; 2],
            slice_start: [0; 2],
            slice_end: [0; 2],
            queued: Default::default(),
            disptime: 0,
            pending: None,
            was_empty: false,
        }
    }

    /// `sq->nr_queued[rw]` (both queues).
    fn nr_queued(&self, rw: usize) -> usize {
        self.queued[rw][BPS_Q].len() + self.queued[rw][IOPS_Q].len()
    }

    /// `throtl_peek_queued`: the iops queue's head first.
    fn peek(&self, rw: usize) -> Option<QBio> {
        self.queued[rw][IOPS_Q].front().or(self.queued[rw][BPS_Q].front()).copied()
    }

    fn peek_mut(&mut self, rw: usize) -> Option<&mut QBio> {
        let [bps_q, iops_q] = &mut self.queued[rw];
        iops_q.front_mut().or(bps_q.front_mut())
    }

    /// `throtl_pop_queued` within the group.
    fn pop(&mut self, rw: usize) -> Option<QBio> {
        self.queued[rw][IOPS_Q].pop_front().or_else(|| self.queued[rw][BPS_Q].pop_front())
    }

    /// `throtl_slice_used`: `jiffies` is outside [slice_start, slice_end].
    fn throtl_slice_used(&self, rw: usize, j: u64) -> bool {
        !(self.slice_start[rw] <= j && j <= self.slice_end[rw])
    }

    /// `throtl_start_new_slice` (clearing what was dispatched).
    fn throtl_start_new_slice(&mut self, rw: usize, j: u64) {
        self.bytes_disp[rw] = 0;
        self.io_disp[rw] = 0;
        self.slice_start[rw] = j;
        self.slice_end[rw] = j + DFL_THROTL_SLICE;
    }

    /// `throtl_extend_slice`: the slice ends no earlier than `end`,
    /// rounded up to a whole slice.
    fn throtl_extend_slice(&mut self, rw: usize, end: u64) {
        if self.slice_end[rw] < end {
            self.slice_end[rw] = end.next_multiple_of(DFL_THROTL_SLICE);
        }
    }

    /// The slice before a check (`tg_may_dispatch`'s head, 7.x's
    /// `tg_update_slice`): a new one once it is used and nothing waits,
    /// else at least one more slice.
    fn tg_update_slice(&mut self, rw: usize, j: u64) {
        if self.throtl_slice_used(rw, j) && self.nr_queued(rw) == 0 {
            self.throtl_start_new_slice(rw, j);
        } else {
            self.throtl_extend_slice(rw, j + DFL_THROTL_SLICE);
        }
    }

    /// `tg_within_bps_limit`: jiffies `bio` must wait for its bytes (0: none).
    fn tg_within_bps_limit(&self, rw: usize, size: u64, j: u64) -> u64 {
        let elapsed = j - self.slice_start[rw];
        let rnd = elapsed.max(1).next_multiple_of(DFL_THROTL_SLICE);
        let allowed = calculate_bytes_allowed(self.bps[rw], rnd) as i128;
        let disp = self.bytes_disp[rw] as i128;
        if disp + size as i128 <= allowed {
            return 0;
        }
        let extra = (disp + size as i128 - allowed) as u128;
        let wait = ((extra * HZ as u128) / self.bps[rw] as u128).max(1) as u64;
        wait + (rnd - elapsed)
    }

    /// `tg_within_iops_limit`: jiffies the next I/O must wait (0: none).
    fn tg_within_iops_limit(&self, rw: usize, j: u64, rules: ThrotlRules) -> u64 {
        let elapsed = j - self.slice_start[rw];
        let rnd = (elapsed + 1).next_multiple_of(DFL_THROTL_SLICE);
        let allowed = calculate_io_allowed(self.iops[rw], rnd) as i64;
        if allowed > 0 && self.io_disp[rw] < allowed {
            return 0;
        }
        let wait = rnd - elapsed;
        match rules.iops_wait {
            ThrotlIopsWait::SliceEnd => wait,
            ThrotlIopsWait::OneIo => wait.max(HZ / self.iops[rw] as u64 + 1),
        }
    }

    fn bps_limited(&self, rw: usize) -> bool {
        self.bps[rw] != u64::MAX
    }

    fn iops_limited(&self, rw: usize) -> bool {
        self.iops[rw] != u32::MAX
    }

    /// `tg_may_dispatch` (6.x) / `tg_dispatch_time` (7.x): jiffies `bio`,
    /// the head of its direction or arriving at an empty one, must wait.
    /// 7.x charges the bytes of a bio that passes the bps check here.
    fn tg_may_dispatch(&mut self, rw: usize, bio: &mut QBio, j: u64, rules: ThrotlRules) -> u64 {
        if !self.bps_limited(rw) && !self.iops_limited(rw) {
            return 0;
        }
        if rules.split_queues() {
            return self.tg_dispatch_time(rw, bio, j, rules);
        }
        self.tg_update_slice(rw, j);
        let bps_wait = if self.bps_limited(rw) && bio.flags & BIO_BPS_THROTTLED == 0 { self.tg_within_bps_limit(rw, bio.size, j) } else { 0 };
        let iops_wait = || if self.iops_limited(rw) { self.tg_within_iops_limit(rw, j, rules) } else { 0 };
        let wait = match rules.dispatch {
            // 6.1: `tg_within_bps_limit() && tg_within_iops_limit()`.
            ThrotlDispatch::BpsOrIops if bps_wait > 0 => bps_wait,
            ThrotlDispatch::BpsOrIops => iops_wait(),
            _ => bps_wait.max(iops_wait()),
        };
        if wait > 0 {
            self.throtl_extend_slice(rw, j + wait);
        }
        wait
    }

    /// 7.x `tg_dispatch_time`: the bps wait, else (bytes charged) the iops one.
    fn tg_dispatch_time(&mut self, rw: usize, bio: &mut QBio, j: u64, rules: ThrotlRules) -> u64 {
        let wait = self.tg_dispatch_bps_time(rw, bio, j);
        if wait > 0 {
            return wait;
        }
        self.throtl_charge_bps_bio(rw, bio);
        self.tg_dispatch_iops_time(rw, j, rules)
    }

    fn tg_dispatch_bps_time(&mut self, rw: usize, bio: &QBio, j: u64) -> u64 {
        if !self.bps_limited(rw) || bio.flags & (BIO_BPS_THROTTLED | BIO_TG_BPS_THROTTLED) != 0 {
            return 0;
        }
        self.tg_update_slice(rw, j);
        let wait = self.tg_within_bps_limit(rw, bio.size, j);
        self.throtl_extend_slice(rw, j + wait);
        wait
    }

    /// 7.x `throtl_charge_bps_bio`: a bio's bytes, once.
    fn throtl_charge_bps_bio(&mut self, rw: usize, bio: &mut QBio) {
        if bio.flags & (BIO_BPS_THROTTLED | BIO_TG_BPS_THROTTLED) == 0 {
            bio.flags |= BIO_TG_BPS_THROTTLED;
            self.bytes_disp[rw] += bio.size as i64;
        }
    }

    /// `throtl_charge_bio` (6.x: the bytes unless already charged, and one
    /// I/O) / `throtl_charge_iops_bio` (7.x: the I/O; bytes went before).
    fn throtl_charge_bio(&mut self, rw: usize, bio: &mut QBio, rules: ThrotlRules) {
        if rules.split_queues() {
            bio.flags &= !BIO_TG_BPS_THROTTLED;
        } else if bio.flags & BIO_BPS_THROTTLED == 0 {
            self.bytes_disp[rw] += bio.size as i64;
        }
        self.io_disp[rw] += 1;
    }

    /// `throtl_trim_slice`: after a dispatch, whole elapsed slices and
    /// their allowance come off the slice (7.x keeps the last one).
    fn throtl_trim_slice(&mut self, rw: usize, j: u64, rules: ThrotlRules) {
        if self.throtl_slice_used(rw, j) {
            return;
        }
        self.slice_end[rw] = (j + DFL_THROTL_SLICE).next_multiple_of(DFL_THROTL_SLICE);
        let mut elapsed = (j - self.slice_start[rw]) / DFL_THROTL_SLICE * DFL_THROTL_SLICE;
        if rules.trim == ThrotlTrim::KeepOneSlice {
            if elapsed < 2 * DFL_THROTL_SLICE {
                return;
            }
            elapsed -= DFL_THROTL_SLICE;
        }
        if elapsed == 0 {
            return;
        }
        let bytes_trim = if self.bps_limited(rw) { calculate_bytes_allowed(self.bps[rw], elapsed).min(i64::MAX as u64) as i64 } else { 0 };
        let io_trim = if self.iops_limited(rw) { calculate_io_allowed(self.iops[rw], elapsed) as i64 } else { 0 };
        if bytes_trim == 0 && io_trim == 0 {
            return;
        }
        self.bytes_disp[rw] = (self.bytes_disp[rw] - bytes_trim).max(0);
        self.io_disp[rw] = (self.io_disp[rw] - io_trim).max(0);
        self.slice_start[rw] += elapsed;
    }

    /// `tg_within_limit`: may `bio` go now without waiting? (FIFO: not while
    /// bios of its direction wait, except, in 7.x, past the bps queue.)
    fn tg_within_limit(&mut self, rw: usize, bio: &mut QBio, j: u64, rules: ThrotlRules) -> bool {
        if !rules.split_queues() {
            return self.nr_queued(rw) == 0 && self.tg_may_dispatch(rw, bio, j, rules) == 0;
        }
        if bio.flags & BIO_BPS_THROTTLED != 0 {
            return self.queued[rw][IOPS_Q].is_empty() && self.tg_dispatch_iops_time(rw, j, rules) == 0;
        }
        if self.nr_queued(rw) > 0 {
            if self.queued[rw][BPS_Q].is_empty() && self.tg_dispatch_bps_time(rw, bio, j) == 0 {
                self.throtl_charge_bps_bio(rw, bio);
            }
            return false;
        }
        self.tg_dispatch_time(rw, bio, j, rules) == 0
    }

    /// 7.x `tg_dispatch_iops_time`.
    fn tg_dispatch_iops_time(&mut self, rw: usize, j: u64, rules: ThrotlRules) -> u64 {
        if !self.iops_limited(rw) {
            return 0;
        }
        self.tg_update_slice(rw, j);
        let wait = self.tg_within_iops_limit(rw, j, rules);
        self.throtl_extend_slice(rw, j + wait);
        wait
    }

    /// `throtl_add_bio_tg`: queue `bio` (7.x: charged bios on the iops queue).
    fn throtl_add_bio_tg(&mut self, rw: usize, bio: QBio, rules: ThrotlRules) {
        let to_iops = rules.split_queues() && bio.flags & (BIO_BPS_THROTTLED | BIO_TG_BPS_THROTTLED) != 0;
        // THROTL_TG_IOPS_WAS_EMPTY: a split remainder becomes the head.
        let iops_was_empty = to_iops && bio.flags & BIO_BPS_THROTTLED != 0 && self.queued[rw][IOPS_Q].is_empty();
        self.was_empty |= self.nr_queued(rw) == 0 || iops_was_empty;
        self.queued[rw][to_iops as usize].push_back(bio);
    }

    /// `tg_update_disptime`'s wait: the shorter of the two directions' heads.
    fn min_wait(&mut self, j: u64, rules: ThrotlRules) -> u64 {
        let mut min = u64::MAX;
        for rw in [READ, WRITE] {
            if let Some(mut head) = self.peek(rw) {
                min = min.min(self.tg_may_dispatch(rw, &mut head, j, rules));
                *self.peek_mut(rw).expect("peeked") = head;
            }
        }
        min
    }
}

/// `calculate_bytes_allowed`: `bps × jiffies / HZ`, saturating.
fn calculate_bytes_allowed(bps: u64, jiffies: u64) -> u64 {
    (bps as u128 * jiffies as u128 / HZ as u128).min(u64::MAX as u128) as u64
}

/// `calculate_io_allowed`: `iops × jiffies / HZ`, capped at `UINT_MAX`.
fn calculate_io_allowed(iops: u32, jiffies: u64) -> u64 {
    (iops as u128 * jiffies as u128 / HZ as u128).min(u32::MAX as u128) as u64
}

/// `struct throtl_data`: a disk's groups, its pending tree and timer, and
/// the bios released for the dispatch work.
#[derive(Clone, Debug, Default)]
pub struct ThrotlData {
    pub groups: Vec<ThrotlGrp>,
    /// `td->service_queue.queued[rw]`: released bios per group (qnode),
    /// popped round-robin over the groups.
    released: [VecDeque<(usize, VecDeque<BioId>)>; 2],
    /// The pending timer's expiry (jiffies), when armed.
    timer: Option<u64>,
    /// Insertions into the pending tree so far (equal times keep their order).
    pending_seq: u64,
}

impl ThrotlData {
    fn group(&self, blkcg: u16) -> Option<usize> {
        self.groups.iter().position(|g| g.blkcg == blkcg)
    }

    /// `throtl_rb_first`: the pending group dispatching first.
    fn first_pending(&self) -> Option<usize> {
        (0..self.groups.len()).filter(|&i| self.groups[i].pending.is_some()).min_by_key(|&i| (self.groups[i].disptime, self.groups[i].pending))
    }

    /// `tg_update_disptime`: the group's place on the pending tree.
    fn tg_update_disptime(&mut self, g: usize, j: u64, rules: ThrotlRules) {
        let wait = self.groups[g].min_wait(j, rules);
        self.pending_seq += 1;
        let tg = &mut self.groups[g];
        tg.disptime = j.saturating_add(wait);
        tg.pending = Some(self.pending_seq);
        tg.was_empty = false;
    }

    /// `tg_dispatch_one_bio`: the head bio goes up to the disk's queue.
    fn tg_dispatch_one_bio(&mut self, g: usize, rw: usize, j: u64, rules: ThrotlRules) -> QBio {
        let tg = &mut self.groups[g];
        let mut bio = tg.pop(rw).expect("a queued bio");
        tg.throtl_charge_bio(rw, &mut bio, rules);
        bio.flags |= BIO_BPS_THROTTLED;
        match self.released[rw].iter_mut().find(|q| q.0 == g) {
            Some(q) => q.1.push_back(bio.id),
            None => self.released[rw].push_back((g, VecDeque::from([bio.id]))),
        }
        self.groups[g].throtl_trim_slice(rw, j, rules);
        bio
    }

    /// `throtl_dispatch_tg`: up to 6 reads and 2 writes the limits allow.
    fn throtl_dispatch_tg(&mut self, g: usize, j: u64, rules: ThrotlRules, out: &mut Vec<QBio>) -> u32 {
        let max_reads = THROTL_GRP_QUANTUM * 3 / 4;
        let mut n = 0;
        for (rw, max) in [(READ, max_reads), (WRITE, THROTL_GRP_QUANTUM - max_reads)] {
            let mut done = 0;
            while done < max && self.head_may_go(g, rw, j, rules) {
                out.push(self.tg_dispatch_one_bio(g, rw, j, rules));
                done += 1;
            }
            n += done;
        }
        n
    }

    fn head_may_go(&mut self, g: usize, rw: usize, j: u64, rules: ThrotlRules) -> bool {
        let tg = &mut self.groups[g];
        let Some(mut head) = tg.peek(rw) else { return false };
        let wait = tg.tg_may_dispatch(rw, &mut head, j, rules);
        *tg.peek_mut(rw).expect("peeked") = head;
        wait == 0
    }

    /// `throtl_select_dispatch`: groups whose time has come, first first.
    fn throtl_select_dispatch(&mut self, j: u64, rules: ThrotlRules, out: &mut Vec<QBio>) -> u32 {
        let mut n = 0;
        while let Some(g) = self.first_pending() {
            if j < self.groups[g].disptime {
                break;
            }
            n += self.throtl_dispatch_tg(g, j, rules, out);
            if self.groups[g].nr_queued(READ) + self.groups[g].nr_queued(WRITE) > 0 {
                self.tg_update_disptime(g, j, rules);
            } else {
                self.groups[g].pending = None;
            }
            if n >= THROTL_QUANTUM {
                break;
            }
        }
        n
    }

    /// `throtl_schedule_next_dispatch`: arm the timer for the first pending
    /// group; false if its time has come and dispatching should go on.
    fn throtl_schedule_next_dispatch(&mut self, j: u64, force: bool) -> bool {
        let Some(g) = self.first_pending() else { return true };
        let at = self.groups[g].disptime;
        if force || at > j {
            self.timer = Some(at);
            return true;
        }
        false
    }

    /// `throtl_pop_queued` on the disk's queue: one released bio, the
    /// groups taking turns.
    fn pop_released(&mut self, rw: usize) -> Option<BioId> {
        let (g, mut q) = self.released[rw].pop_front()?;
        let bio = q.pop_front();
        if !q.is_empty() {
            self.released[rw].push_back((g, q));
        }
        bio
    }
}

/// blk-throttle on every disk with limits, and the dispatch work's bios.
#[derive(Clone, Debug, Default)]
pub struct Throtl {
    pub rules: Option<ThrotlRules>,
    /// Per device id (whole disks only).
    pub tds: Vec<Option<ThrotlData>>,
    /// Bios the dispatch work is to submit, in order.
    pub ready: VecDeque<BioId>,
}

impl Throtl {
    pub fn new(beh: &Behaviour, nr_devs: usize) -> Throtl {
        Throtl { rules: Some(ThrotlRules::of(beh)), tds: vec![None; nr_devs], ready: VecDeque::new() }
    }

    /// Limits of group `blkcg` on disk `dev` (`tg_set_limit`).
    pub fn set_limit(&mut self, dev: DevId, blkcg: u16, bps: [u64; 2], iops: [u32; 2]) {
        let td = self.tds[dev as usize].get_or_insert_with(ThrotlData::default);
        match td.group(blkcg) {
            Some(g) => (td.groups[g].bps, td.groups[g].iops) = (bps, iops),
            None => td.groups.push(ThrotlGrp::new(blkcg, bps, iops)),
        }
    }
}

/// `bio_data_dir`.
fn data_dir(op: Op) -> usize {
    match op {
        Op::Read => READ,
        _ => WRITE,
    }
}

/// `throtl_bio_data_size`: a discard counts as one sector.
fn data_size(op: Op, size: u32) -> u64 {
    match op {
        Op::Discard => 512,
        _ => size as u64,
    }
}

/// `blk_throtl_bio` (`blk_should_throtl` + `__blk_throtl_bio`): true if
/// the throttle took the bio (it is submitted again when released).
#[cold]
#[inline(never)]
pub fn blk_throtl_bio(core: &mut BlockCore, id: BioId) -> bool {
    let Some(mut t) = core.throtl.take() else { return false };
    let taken = throttle_bio(core, &mut t, id);
    core.throtl = Some(t);
    taken
}

fn throttle_bio(core: &mut BlockCore, t: &mut Throtl, id: BioId) -> bool {
    let b = core.bio(id);
    let (rw, j, rules) = (data_dir(b.op), jiffies(core.now), t.rules.expect("rules"));
    let mut bio = QBio { id, size: data_size(b.op, b.iter.size), flags: b.throtl };
    let (dev, blkcg) = (b.dev, b.blkcg);
    let Some(td) = t.tds.get_mut(dev as usize).and_then(Option::as_mut) else { return false };
    let Some(g) = td.group(blkcg) else { return false };
    let tg = &mut td.groups[g];
    if !blk_should_throtl(tg, rw, bio.flags & BIO_BPS_THROTTLED != 0, rules) {
        return false;
    }
    if tg.tg_within_limit(rw, &mut bio, j, rules) {
        tg.throtl_charge_bio(rw, &mut bio, rules);
        tg.throtl_trim_slice(rw, j, rules);
        core.bio_mut(id).throtl = bio.flags | BIO_BPS_THROTTLED;
        return false;
    }
    tg.throtl_add_bio_tg(rw, bio, rules);
    if tg.was_empty {
        td.tg_update_disptime(g, j, rules);
        td.throtl_schedule_next_dispatch(j, true);
        arm_timer(core, dev, td);
    }
    true
}

/// `blk_should_throtl`: an iops limit counts every bio, a bps limit only
/// bios whose bytes were not charged yet (`passed`); up to 5.17 a bio that
/// passed once is never looked at again.
fn blk_should_throtl(tg: &ThrotlGrp, rw: usize, passed: bool, rules: ThrotlRules) -> bool {
    if passed && !rules.split_ios {
        return false;
    }
    tg.iops_limited(rw) || (tg.bps_limited(rw) && !passed)
}

/// `mod_timer`: the pending timer fires at its expiry's tick, or at the
/// next tick when that has passed.
fn arm_timer(core: &mut BlockCore, dev: DevId, td: &ThrotlData) {
    if let Some(at) = td.timer {
        let tick = at.max(jiffies(core.now) + 1);
        core.schedule(tick * JIFFY_NS, SimEvent::ThrotlTimer { dev });
    }
}

/// `throtl_pending_timer_fn` for disk `dev` (a timer event): release what
/// the limits allow, re-arm for the rest; true if the dispatch work has
/// bios to submit (`queue_work`).
pub fn throtl_pending_timer_fn(core: &mut BlockCore, dev: DevId) -> bool {
    let Some(mut t) = core.throtl.take() else { return false };
    let j = jiffies(core.now);
    let rules = t.rules.expect("rules");
    let mut released = Vec::new();
    let td = t.tds[dev as usize].as_mut().expect("a throttled disk");
    // A stale expiry (the timer was re-armed since) does nothing.
    if td.timer.is_some_and(|at| at <= j) {
        td.timer = None;
        loop {
            td.throtl_select_dispatch(j, rules, &mut released);
            if td.throtl_schedule_next_dispatch(j, false) {
                break;
            }
        }
        arm_timer(core, dev, td);
    }
    for b in &released {
        core.bio_mut(b.id).throtl = b.flags;
    }
    if !released.is_empty() {
        blk_throtl_dispatch_work_fn(&mut t, dev);
    }
    let work = !t.ready.is_empty();
    core.throtl = Some(t);
    work
}

/// `blk_throtl_dispatch_work_fn`'s gathering: every released read, then
/// every released write, the groups taking turns; the engine's worker
/// submits them in that order inside a plug.
fn blk_throtl_dispatch_work_fn(t: &mut Throtl, dev: DevId) {
    let td = t.tds[dev as usize].as_mut().expect("a throttled disk");
    for rw in [READ, WRITE] {
        while let Some(id) = td.pop_released(rw) {
            t.ready.push_back(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(beh: &str) -> ThrotlRules {
        ThrotlRules::of(&crate::profile::profile(beh).unwrap().behaviour)
    }

    fn bio(id: BioId, size: u64) -> QBio {
        QBio { id, size, flags: 0 }
    }

    #[test]
    fn iops_limit_allows_a_slice_of_ios_then_waits_for_the_next() {
        // riops=1000: 1000 × 25 jiffies / 250 = 100 I/Os per 100 ms slice.
        let r = rules("6.12");
        let mut tg = ThrotlGrp::new(1, [u64::MAX; 2], [1000, u32::MAX]);
        for i in 0..100 {
            let mut b = bio(i, 4096);
            assert!(tg.tg_within_limit(READ, &mut b, 0, r), "I/O {i}");
            tg.throtl_charge_bio(READ, &mut b, r);
            tg.throtl_trim_slice(READ, 0, r);
        }
        // The 101st: to the slice's end (25 − 0 jiffies), at least
        // HZ/1000 + 1 = 1.
        let mut b = bio(100, 4096);
        assert_eq!(tg.tg_may_dispatch(READ, &mut b, 0, r), 25);
        // At jiffy 25 the allowance is roundup(26, 25) = 50 jiffies' worth,
        // 200 I/Os: it goes, and the trim takes one slice (100 I/Os) off.
        assert_eq!(tg.tg_may_dispatch(READ, &mut b, 25, r), 0);
        tg.throtl_charge_bio(READ, &mut b, r);
        tg.throtl_trim_slice(READ, 25, r);
        assert_eq!((tg.io_disp[READ], tg.slice_start[READ], tg.slice_end[READ]), (1, 25, 50));
    }

    #[test]
    fn bps_limit_waits_for_the_extra_bytes_and_the_rounding() {
        // rbps=10 MiB/s: 1 MiB per slice. A second 1 MiB bio at jiffy 0
        // is 1 MiB over: 1 MiB × 250 / 10 MiB = 25 jiffies, plus the
        // rounding up of the elapsed 0 jiffies to a slice (25): 50.
        let r = rules("6.1");
        let mut tg = ThrotlGrp::new(1, [10 << 20, u64::MAX], [u32::MAX; 2]);
        let mut a = bio(0, 1 << 20);
        assert!(tg.tg_within_limit(READ, &mut a, 0, r));
        tg.throtl_charge_bio(READ, &mut a, r);
        let mut b = bio(1, 1 << 20);
        assert!(!tg.tg_within_limit(READ, &mut b, 0, r));
        assert_eq!(tg.tg_may_dispatch(READ, &mut b, 0, r), 50);
        // At jiffy 50, 2 MiB are allowed; the trim then takes both slices
        // off (2 MiB), so the next 1 MiB goes at once.
        assert_eq!(tg.tg_may_dispatch(READ, &mut b, 50, r), 0);
        tg.throtl_charge_bio(READ, &mut b, r);
        tg.throtl_trim_slice(READ, 50, r);
        assert_eq!((tg.bytes_disp[READ], tg.slice_start[READ]), (0, 50));
    }

    #[test]
    fn split_remainders_count_as_ios_but_not_bytes() {
        // BIO_BPS_THROTTLED: a remainder of a bio that passed is charged an
        // I/O and no bytes, in every version.
        for p in ["6.1", "6.12", "7.2"] {
            let r = rules(p);
            let mut tg = ThrotlGrp::new(1, [u64::MAX, 1 << 20], [u32::MAX, 1000]);
            let mut b = QBio { id: 0, size: 896 << 10, flags: BIO_BPS_THROTTLED };
            assert!(tg.tg_within_limit(WRITE, &mut b, 0, r), "{p}");
            tg.throtl_charge_bio(WRITE, &mut b, r);
            assert_eq!((tg.bytes_disp[WRITE], tg.io_disp[WRITE]), (0, 1), "{p}");
        }
    }

    #[test]
    fn iops_wait_floor_per_version() {
        // riops=2: one I/O per 25-jiffy slice (2 × 25 / 250 = 0.2, so none
        // at first: the allowance is 0 until 125 jiffies have passed).
        // 6.1 waits to the slice's end (25); 6.12 at least HZ/2 + 1 = 126.
        let mut tg = ThrotlGrp::new(1, [u64::MAX; 2], [2, u32::MAX]);
        let mut b = bio(0, 4096);
        assert_eq!(tg.tg_may_dispatch(READ, &mut b, 0, rules("6.1")), 25);
        let mut tg = ThrotlGrp::new(1, [u64::MAX; 2], [2, u32::MAX]);
        assert_eq!(tg.tg_may_dispatch(READ, &mut b, 0, rules("6.12")), 126);
    }

    #[test]
    fn trim_keeps_one_slice_in_7x() {
        // 60 jiffies into a slice at 10 MiB/s with 3 MiB dispatched:
        // 6.x trims rounddown(60, 25) = 50 jiffies (2 MiB); 7.x waits for
        // two whole slices and keeps one: 25 jiffies (1 MiB).
        for (p, left, start) in [("6.12", 1 << 20, 50), ("7.2", 2 << 20, 25)] {
            let mut tg = ThrotlGrp::new(1, [10 << 20, u64::MAX], [u32::MAX; 2]);
            (tg.bytes_disp[READ], tg.slice_end[READ]) = (3 << 20, 75);
            tg.throtl_trim_slice(READ, 60, rules(p));
            assert_eq!((tg.bytes_disp[READ], tg.slice_start[READ]), (left, start), "{p}");
        }
    }

    #[test]
    fn split_remainders_pass_bios_waiting_for_bytes_in_7x() {
        // wbps=1 MiB/s, wiops=1000. A 2 MiB write waits for its bytes
        // (queued); a split remainder of another write (bytes charged)
        // arrives: 6.x queues it behind the 2 MiB write (FIFO), 7.x checks
        // only the empty iops queue and its iops allowance (100 per slice)
        // and lets it go.
        for (p, passes) in [("6.1", false), ("6.12", false), ("7.2", true)] {
            let r = rules(p);
            let mut tg = ThrotlGrp::new(1, [u64::MAX, 1 << 20], [u32::MAX, 1000]);
            let mut big = bio(0, 2 << 20);
            assert!(!tg.tg_within_limit(WRITE, &mut big, 0, r), "{p}");
            tg.throtl_add_bio_tg(WRITE, big, r);
            let mut rest = QBio { id: 1, size: 128 << 10, flags: BIO_BPS_THROTTLED };
            assert_eq!(tg.tg_within_limit(WRITE, &mut rest, 0, r), passes, "{p}");
        }
    }

    #[test]
    fn released_bios_alternate_between_groups() {
        let mut td = ThrotlData::default();
        td.released[READ].push_back((0, VecDeque::from([1, 2])));
        td.released[READ].push_back((1, VecDeque::from([3])));
        let order: Vec<BioId> = std::iter::from_fn(|| td.pop_released(READ)).collect();
        assert_eq!(order, [1, 3, 2]);
    }
}
