//! Request-based queues (block/blk-mq.c, blk-mq-sched.c, blk-mq-tag.c,
//! elevator.c): `blk_mq_submit_bio`, tags, the plug flush paths, the
//! software and scheduler queues, dispatch and completion.
//!
//! A bio that reaches a disk is split to the queue's limits, then offered
//! for a plug merge and a scheduler merge; otherwise it gets a request, which
//! needs a tag (a submitter that finds none is parked and its plug flushed,
//! as `io_schedule()` does). The request waits in the task's plug, in the
//! scheduler or software queue, and is issued ('D') to the device model when
//! the driver takes it.

use std::collections::VecDeque;

use crate::bio::{req, BioId, Op, SECTOR_SHIFT};
use crate::disk::DiskModel;
use crate::genhd::{DevId, DiskKind};
use crate::limits::{QueueAttrs, QueueLimits, Zoned};
use crate::merge::{blk_attempt_bio_merge, bio_mergeable, BioMerge};
use crate::plug::{Plug, RqRef};
use crate::profile::{Behaviour, PlugListPath, PlugMerge, PlugSizeRq};
use crate::sched::{self, ElevatorQueue};
use crate::submit::{BlockCore, SimEvent, EIO, KWORKER};
use crate::trace::{Action, Event};
use crate::zoned::Zones;

/// `struct request`.
#[derive(Clone, Debug)]
pub struct Request {
    pub dev: DevId,
    pub op: Op,
    /// `cmd_flags`: the first bio's flags, plus `REQ_NOMERGE` once a merge
    /// was refused for size or segments.
    pub flags: u32,
    pub sector: u64,
    pub nr_sectors: u32,
    pub nr_phys_segments: u32,
    /// `bio` .. `biotail`: the request's bios, linked through their
    /// `bi_next` (never empty: a request starts with the bio it was made for).
    pub bio: BioId,
    pub biotail: BioId,
    /// Accounting start (allocation time).
    pub start_time_ns: u64,
    /// Task that allocated it.
    pub task: u32,
    pub sched_tag: bool,
    pub driver_tag: bool,
    /// mq-deadline's deadline, in jiffies.
    pub fifo_time: u64,
    pub in_elevator: bool,
    /// The status the request ends with (a negative errno; 0 for success).
    pub error: i32,
    /// What writeback throttling counted it as (`rq->wbt_flags`).
    pub wbt_flags: u8,
    /// `io_start_time_ns`: when the driver took it, stamped only while an
    /// rq-qos policy keeps statistics.
    pub io_start_time_ns: u64,
    /// `RQF_FLUSH_SEQ`: the flush machinery completes it (a request in a
    /// flush sequence, or the flush request).
    pub flush_seq: bool,
}

impl Request {
    pub fn bytes(&self) -> u32 {
        self.nr_sectors << SECTOR_SHIFT
    }

    pub fn end(&self) -> u64 {
        self.sector + self.nr_sectors as u64
    }
}

/// The queue's requests, by slot. A freed slot keeps its last request
/// until it is reused: the paths every request takes pay a bounds check
/// per lookup, not a test of an `Option` as well. Debug builds (the
/// tests) still check that a lookup finds a live request.
#[derive(Default)]
pub struct Rqs {
    slots: Vec<Request>,
    free: Vec<u32>,
    #[cfg(debug_assertions)]
    live: Vec<bool>,
}

impl Rqs {
    pub fn alloc(&mut self, rq: Request) -> u32 {
        let id = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = rq;
                i
            }
            None => {
                self.slots.push(rq);
                (self.slots.len() - 1) as u32
            }
        };
        #[cfg(debug_assertions)]
        {
            self.live.resize(self.slots.len(), false);
            self.live[id as usize] = true;
        }
        id
    }

    #[inline(always)]
    fn check_live(&self, _id: u32) {
        #[cfg(debug_assertions)]
        assert!(self.live[_id as usize], "live request");
    }

    #[inline(always)]
    pub fn get(&self, id: u32) -> &Request {
        self.check_live(id);
        &self.slots[id as usize]
    }

    #[inline(always)]
    pub fn get_mut(&mut self, id: u32) -> &mut Request {
        self.check_live(id);
        &mut self.slots[id as usize]
    }

    /// Two different requests at once (a request merge).
    pub fn get2_mut(&mut self, a: u32, b: u32) -> (&mut Request, &mut Request) {
        assert_ne!(a, b, "a request cannot merge with itself");
        self.check_live(a);
        self.check_live(b);
        let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
        let (left, right) = self.slots.split_at_mut(hi);
        let (x, y) = (&mut left[lo], &mut right[0]);
        if a < b {
            (x, y)
        } else {
            (y, x)
        }
    }

    /// Free the slot and hand the request back.
    pub fn take(&mut self, id: u32) -> Request {
        self.check_live(id);
        #[cfg(debug_assertions)]
        {
            self.live[id as usize] = false;
        }
        self.free.push(id);
        self.slots[id as usize].clone()
    }
}

/// A submitter sleeping for a tag, with the bio it was allocating for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiter {
    pub task: u32,
    pub bio: BioId,
    pub nsegs: u32,
}

/// What became of a bio handed to `blk_mq_submit_bio`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    Done,
    /// The task sleeps for a tag; it resumes through [`blk_mq_resume_alloc`].
    Blocked,
}

/// A whole disk's request queue, tags, scheduler and device model.
pub struct RequestQueue {
    pub index: u32,
    pub dev: DevId,
    pub lim: QueueLimits,
    pub attrs: QueueAttrs,
    /// nvme-pci and virtio-blk take plug batches through `->queue_rqs`.
    pub has_queue_rqs: bool,
    /// sd's queues take a dispatch budget (`scsi_mq_get_budget`, the
    /// device's queue depth) before asking the elevator for a request.
    pub dispatch_budget: bool,
    pub disk: DiskModel,
    pub rqs: Rqs,
    /// The elevator (`q->elevator`), none for `none`.
    pub sched: Option<ElevatorQueue>,
    /// The CPU's software queue (`ctx->rq_lists`), used without a scheduler.
    ctx_list: VecDeque<u32>,
    /// `hctx->dispatch`: requests that bypass the scheduler.
    pub(crate) dispatch_list: VecDeque<u32>,
    /// Scratch for one queue's requests taken from a plug being flushed.
    plug_local: VecDeque<u32>,
    pub(crate) driver_tags: u32,
    sched_tags: u32,
    pub tag_waiters: VecDeque<Waiter>,
    /// `q->last_merge`, the elevator's one-hit merge cache.
    pub(crate) last_merge: Option<u32>,
    pub flush: crate::flush::FlushQueue,
    /// Write pointers and zone write plugs, on a host-managed zoned disk
    /// only: other disks pay one test of this in `blk_mq_submit_bio` and
    /// one at issue.
    pub zones: Option<Box<Zones>>,
    /// A loop device's file ([`crate::loopdev`]): its requests go to the
    /// loop worker instead of a device model.
    pub backing: Option<crate::loopdev::LoopBacking>,
    /// The rq-qos policies (`q->rq_qos`, [`crate::rq_qos`]); `None` costs
    /// each hook one test.
    pub rq_qos: Option<Box<crate::rq_qos::RqQos>>,
}

impl RequestQueue {
    pub fn new(index: u32, dev: DevId, kind: DiskKind, lim: QueueLimits, attrs: QueueAttrs, disk: DiskModel, beh: &Behaviour) -> Self {
        let sched = ElevatorQueue::init(&attrs, beh);
        let zones = (lim.zoned == Zoned::HostManaged).then(|| Box::new(Zones::new(lim.chunk_sectors as u64, attrs.nr_conv_zones as u64)));
        RequestQueue {
            index,
            dev,
            lim,
            attrs,
            has_queue_rqs: matches!(kind, DiskKind::Nvme | DiskKind::Virtio),
            dispatch_budget: kind.is_sd(),
            disk,
            rqs: Rqs::default(),
            sched,
            ctx_list: VecDeque::new(),
            dispatch_list: VecDeque::new(),
            plug_local: VecDeque::new(),
            driver_tags: 0,
            sched_tags: 0,
            tag_waiters: VecDeque::new(),
            last_merge: None,
            flush: Default::default(),
            zones,
            backing: None,
            rq_qos: None,
        }
    }

    /// Requests waiting in the scheduler or software queue.
    pub fn queued(&self) -> usize {
        self.sched.as_ref().map_or(0, |s| s.queued()) + self.ctx_list.len() + self.dispatch_list.len()
    }

    /// `blk_mq_get_tag` at allocation: a scheduler tag (as many as the
    /// elevator's `limit_depth` allows this op), or without a scheduler a
    /// driver tag out of `nr_requests`. Inline down to the driver tag of a queue without a scheduler (a
    /// count and a compare, where the call cost more), the scheduler's
    /// tag out of line.
    #[inline(always)]
    fn try_get_tag(&mut self, core: &BlockCore, task: u32, bio: BioId) -> Option<(bool, bool)> {
        if self.sched.is_some() {
            return self.try_get_sched_tag(core, task, bio);
        }
        (self.driver_tags < self.attrs.nr_requests).then(|| {
            self.driver_tags += 1;
            (false, true)
        })
    }

    /// [`Self::try_get_tag`] of a queue with a scheduler.
    #[inline(never)]
    fn try_get_sched_tag(&mut self, core: &BlockCore, task: u32, bio: BioId) -> Option<(bool, bool)> {
        let e = self.sched.as_ref().expect("a scheduler");
        let limit = e.limit_depth(core, task, bio, self.attrs.nr_requests);
        (self.sched_tags < limit).then(|| {
            self.sched_tags += 1;
            (true, false)
        })
    }

    /// `blk_mq_get_driver_tag` at dispatch.
    fn get_driver_tag(&mut self, id: u32) -> bool {
        if self.rqs.get(id).driver_tag {
            return true;
        }
        if self.driver_tags >= self.attrs.queue_depth {
            return false;
        }
        self.driver_tags += 1;
        self.rqs.get_mut(id).driver_tag = true;
        true
    }

    pub(crate) fn put_tags(&mut self, rq: &Request) {
        self.driver_tags -= rq.driver_tag as u32;
        self.sched_tags -= rq.sched_tag as u32;
    }
}

// ---- tracing -------------------------------------------------------------

/// Trace a request event ('I', 'D', 'C', and 'M' for a request merge).
#[inline]
pub fn trace_rq(core: &mut BlockCore, action: Action, rq: &Request, task: u32) {
    if core.tracer.hears(action) {
        trace_rq_event(core, action, rq, task);
    }
}

/// Inline in [`trace_rq`]: out of line, its call and register saves cost
/// about a third of the event, on every request's 'D' and 'C'.
#[inline(always)]
fn trace_rq_event(core: &mut BlockCore, action: Action, rq: &Request, task: u32) {
    core.emit(|core| Event {
        time: core.clock(),
        dev: rq.dev,
        action,
        op: rq.op,
        flags: rq.flags & !req::NOMERGE,
        sector: rq.sector,
        bytes: rq.bytes(),
        task,
        error: if rq.error == crate::nvme_multipath::FAILED_OVER { 0 } else { rq.error },
        arg: 0,
        from_dev: 0,
    });
}

/// 'P' or 'U'/'UT' (no data, so blkparse shows "N"), counted always
/// and traced when anyone hears it. Inline down to that check: out of
/// line, its call and register saves cost more than the count and the
/// check, on a plain run whose analysis thread hears no 'P' or 'U'.
#[inline(always)]
fn trace_plug(core: &mut BlockCore, dev: DevId, action: Action, depth: u64, task: u32) {
    let s = &mut core.stats[dev as usize];
    match action {
        Action::Plug => s.plugs += 1,
        _ => s.unplugs += 1,
    }
    if core.tracer.hears(action) {
        trace_plug_event(core, dev, action, depth, task);
    }
}

fn trace_plug_event(core: &mut BlockCore, dev: DevId, action: Action, depth: u64, task: u32) {
    core.emit(|core| Event { time: core.clock(), dev, action, op: Op::Read, flags: 0, sector: 0, bytes: 0, task, error: 0, arg: depth, from_dev: 0 });
}

// ---- submission ------------------------------------------------------------

/// `blk_mq_submit_bio` for a bio of request queue `qi`. Inline in its one
/// caller, `__submit_bio`: the call cost each bio a second prologue.
#[inline(always)]
pub fn blk_mq_submit_bio(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId) -> Submit {
    let Some((bio, nsegs)) = core.bio_split_to_limits(bio) else { return Submit::Done };
    // A host-managed zoned disk ([`crate::zoned`]): the submission order
    // is noted, a merge may move a zone's write pointer, and a write no
    // merge took goes to its zone's write plug.
    let zoned = qs[qi].zones.is_some();
    if zoned {
        crate::zoned::note_zone_write(&mut qs[qi], core, bio);
    }
    if blk_mq_attempt_bio_merge(qs, core, qi, bio, nsegs) {
        if zoned {
            crate::zoned::blk_zone_write_plug_bio_merged(&mut qs[qi], core, bio);
        }
        return Submit::Done;
    }
    if zoned && crate::zoned::blk_zone_plug_bio(&mut qs[qi], core, bio, nsegs) {
        return Submit::Done;
    }
    blk_mq_new_request(qs, core, qi, bio, nsegs)
}

/// `blk_mq_submit_bio` from its `new_request` label: a request for the
/// bio (`blk_mq_get_new_requests`), and on with it. Always inlined: a zone
/// write plug's work item calls it too, and `blk_mq_submit_bio` must not
/// pay a call for that.
#[inline(always)]
pub(crate) fn blk_mq_new_request(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId, nsegs: u32) -> Submit {
    // blk_mq_get_new_requests: rq_qos_throttle first; a submitter over a
    // policy's limit sleeps (io_schedule() flushes its plug).
    if !crate::rq_qos::rq_qos_throttle(&mut qs[qi], core, bio, nsegs) {
        let task = core.current;
        blk_flush_plug(qs, core, task, true);
        return Submit::Blocked;
    }
    blk_mq_get_request(qs, core, qi, bio, nsegs)
}

/// `__blk_mq_alloc_requests`: a tag (or sleep for one), then the request.
#[inline(always)]
fn blk_mq_get_request(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId, nsegs: u32) -> Submit {
    let Some((sched_tag, driver_tag)) = qs[qi].try_get_tag(core, core.current, bio) else {
        // blk_mq_get_tag sleeps: io_schedule() flushes the plug first.
        let task = core.current;
        qs[qi].tag_waiters.push_back(Waiter { task, bio, nsegs });
        blk_flush_plug(qs, core, task, true);
        return Submit::Blocked;
    };
    blk_mq_alloc_done(qs, core, qi, bio, nsegs, sched_tag, driver_tag);
    Submit::Done
}

/// A parked submitter woke: with its tag, it finishes `blk_mq_submit_bio`;
/// let go by an rq-qos policy, it goes on to get a tag (and may sleep again).
pub fn blk_mq_resume_alloc(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, w: Waiter, tags: Option<(bool, bool)>) -> Submit {
    match tags {
        Some(tags) => {
            blk_mq_alloc_done(qs, core, qi, w.bio, w.nsegs, tags.0, tags.1);
            Submit::Done
        }
        None => blk_mq_get_request(qs, core, qi, w.bio, w.nsegs),
    }
}

/// `blk_mq_attempt_bio_merge`: a plug merge, then a scheduler (or
/// software-queue) merge, unless `nomerges` is 2 or the bio is unmergeable.
///
/// This and the merge functions it calls are forced inline into
/// `blk_mq_submit_bio` (each has one caller): with the zoned hooks there,
/// LLVM's heuristics otherwise leave some of them out of line, at some 30
/// instructions of calls and spills per bio.
#[inline(always)]
fn blk_mq_attempt_bio_merge(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId, nsegs: u32) -> bool {
    if qs[qi].attrs.nomerges == 2 || !bio_mergeable(core.bio(bio)) {
        return false;
    }
    if blk_attempt_plug_merge(qs, core, qi, bio, nsegs) {
        return true;
    }
    if qs[qi].sched.is_some() || !qs[qi].ctx_list.is_empty() {
        core.cpu_charge(|c| c.merge_attempt as u64);
    }
    if qs[qi].sched.is_some() {
        sched::bio_merge(&mut qs[qi], core, bio, nsegs)
    } else {
        let RequestQueue { ctx_list, rqs, lim, .. } = &mut qs[qi];
        blk_bio_list_merge(ctx_list, rqs, lim, core, bio, nsegs)
    }
}

/// `blk_attempt_plug_merge`: exactly one request of the plug is tried
/// (5.16+), or up to 5.15 every request of the bio's queue.
#[inline(always)]
fn blk_attempt_plug_merge(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId, nsegs: u32) -> bool {
    let dev = qs[qi].dev as usize;
    let ok = plug_merge_one(qs, core, qi, bio, nsegs);
    // Both counts through one lookup of the disk's stats, once the merge
    // is done (nothing in it reads them).
    let s = &mut core.stats[dev];
    s.plug_merge_attempts += 1;
    s.plug_merges += ok as u64;
    ok
}

/// The merge [`blk_attempt_plug_merge`] tries: true if a request of the
/// task's plug took the bio.
#[inline(always)]
fn plug_merge_one(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId, nsegs: u32) -> bool {
    let task = core.current as usize;
    let Some(plug) = core.plugs.get(task).and_then(|p| p.as_ref()) else { return false };
    if core.beh.plug_merge == PlugMerge::EveryFromTail {
        return blk_attempt_plug_merge_walk(qs, core, qi, bio, nsegs);
    }
    let Some((cq, cid)) = plug.merge_candidate(qi as u32, core.beh.plug_merge) else { return false };
    core.cpu_charge(|c| c.merge_attempt as u64);
    let q = &mut qs[cq as usize];
    blk_attempt_bio_merge(core, q.rqs.get_mut(cid), bio, nsegs, &q.lim) == BioMerge::Ok
}

/// Up to 5.15 `blk_attempt_plug_merge` walks the plug list from its tail
/// (`list_for_each_entry_reverse`) and tries every request of the bio's
/// queue until one takes the bio.
#[cold]
#[inline(never)]
fn blk_attempt_plug_merge_walk(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId, nsegs: u32) -> bool {
    let task = core.current as usize;
    let ids: Vec<u32> = match core.plugs[task].as_ref() {
        Some(plug) => plug.list().iter().rev().filter(|r| r.0 as usize == qi).map(|r| r.1).collect(),
        None => return false,
    };
    let q = &mut qs[qi];
    for id in ids {
        if blk_attempt_bio_merge(core, q.rqs.get_mut(id), bio, nsegs, &q.lim) == BioMerge::Ok {
            return true;
        }
    }
    false
}

/// `blk_bio_list_merge` over a software queue list: newest to oldest, at
/// most 8 (`blk_mq_sched_bio_merge` skips an empty queue before taking its
/// lock).
#[inline(always)]
pub(crate) fn blk_bio_list_merge(list: &VecDeque<u32>, rqs: &mut Rqs, lim: &QueueLimits, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    if list.is_empty() {
        return false;
    }
    for &id in list.iter().rev().take(8) {
        match blk_attempt_bio_merge(core, rqs.get_mut(id), bio, nsegs, lim) {
            BioMerge::None => continue,
            BioMerge::Ok => return true,
            BioMerge::Failed => return false,
        }
    }
    false
}

/// The rest of `blk_mq_submit_bio` once a tag is held: 'G', the request,
/// accounting, then the plug, the scheduler or the driver.
#[inline(always)]
fn blk_mq_alloc_done(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, bio: BioId, nsegs: u32, sched_tag: bool, driver_tag: bool) {
    core.cpu_charge(|c| c.get_tag as u64);
    core.trace_bio(Action::GetRq, bio, 0, 0);
    let task = core.current;
    let b = core.bio_mut(bio);
    b.in_request = true;
    let rq = Request {
        dev: qs[qi].dev,
        op: b.op,
        flags: b.flags,
        sector: b.iter.sector,
        nr_sectors: b.iter.size >> SECTOR_SHIFT,
        nr_phys_segments: nsegs,
        bio,
        biotail: bio,
        start_time_ns: core.clock(),
        task,
        sched_tag,
        driver_tag,
        fifo_time: 0,
        in_elevator: false,
        error: 0,
        wbt_flags: 0,
        io_start_time_ns: 0,
        flush_seq: false,
    };
    let mut rq = rq;
    crate::rq_qos::rq_qos_track(&qs[qi], &mut rq, core, bio);
    let (op, flags, dev) = (rq.op, rq.flags, rq.dev as usize);
    let rule = core.beh.io_ticks;
    let s = &mut core.stats[dev];
    s.getrq += 1;
    s.disk.io_start(core.now, op, rule);
    let id = qs[qi].rqs.alloc(rq);
    if flags & req::ZONE_WPLUG != 0 {
        crate::zoned::blk_zone_write_plug_init_request(&mut qs[qi], core, id);
    }
    if flags & (req::PREFLUSH | req::FUA) != 0 && crate::flush::blk_insert_flush(qs, core, qi, id) {
        // Taken by the flush state machine (src/flush.rs).
    } else if core.plugs.get(task as usize).is_some_and(|p| p.is_some()) {
        blk_add_rq_to_plug(qs, core, task, (qi as u32, id));
    } else if qs[qi].sched.is_some() {
        sched::insert_requests(&mut qs[qi], core, id, task);
        // Run asynchronously: kblockd issues it (6.1
        // blk_mq_sched_insert_request(rq, false, true, true); 6.12 the same).
        blk_mq_run_hw_queue(qs, core, qi, true);
    } else {
        blk_mq_start_request(&mut qs[qi], core, id, task);
    }
}

/// `blk_add_rq_to_plug`: a new request may first flush the plug (too many
/// requests, or the reference request reached `BLK_PLUG_FLUSH_SIZE`).
fn blk_add_rq_to_plug(qs: &mut [RequestQueue], core: &mut BlockCore, task: u32, rq: RqRef) {
    let plug = core.plugs[task as usize].as_ref().expect("plugged");
    let (count, max) = (plug.rq_count, plug.max_rq_count(core.beh.plug_max_requests));
    let reference = match core.beh.plug_size_rq {
        PlugSizeRq::Head => plug.peek(),
        PlugSizeRq::Tail => plug.tail(),
    };
    let reference_bytes = reference.map(|(q, id)| qs[q as usize].rqs.get(id).bytes() as u64).unwrap_or(0);
    let q = &qs[rq.0 as usize];
    let dev = q.dev;
    let size_flush = q.attrs.nomerges != 2 && core.beh.plug_flush_size != 0 && reference_bytes >= core.beh.plug_flush_size as u64;
    if count == 0 {
        trace_plug(core, dev, Action::Plug, 0, task);
    } else if count >= max || size_flush {
        blk_mq_flush_plug_list(qs, core, task, false);
        trace_plug(core, dev, Action::Plug, 0, task);
    }
    let has_elevator = qs[rq.0 as usize].sched.is_some();
    let how = core.beh.plug_add;
    core.plugs[task as usize].as_mut().expect("plugged").add(rq, how, has_elevator);
}

/// `blk_start_plug`: nested plugs are ignored. Returns whether this call
/// installed the plug.
pub fn blk_start_plug(core: &mut BlockCore, task: u32) -> bool {
    let slot = &mut core.plugs[task as usize];
    if slot.is_some() {
        return false;
    }
    *slot = Some(Plug::with_list(std::mem::take(&mut core.spare_plug_list)));
    true
}

/// `blk_finish_plug`.
pub fn blk_finish_plug(qs: &mut [RequestQueue], core: &mut BlockCore, task: u32) {
    blk_mq_flush_plug_list(qs, core, task, false);
    if let Some(plug) = core.plugs[task as usize].take() {
        core.spare_plug_list = plug.into_list();
    }
}

/// `blk_flush_plug` (inline in the kernel): a task without a plug, or
/// with an empty one, has nothing to flush, and pays a test, not a call
/// (a submitter sleeping for a tag comes here every time).
#[inline]
pub fn blk_flush_plug(qs: &mut [RequestQueue], core: &mut BlockCore, task: u32, from_schedule: bool) {
    if core.plugs.get(task as usize).is_some_and(|p| p.as_ref().is_some_and(|p| p.rq_count > 0)) {
        blk_mq_flush_plug_list(qs, core, task, from_schedule);
    }
}

/// `blk_mq_flush_plug_list`. Inline: a plug flushed as each large
/// request comes (BLK_PLUG_FLUSH_SIZE) holds one request, and its flush
/// (path A for a lone request) costs the caller no call into the batch
/// paths.
#[inline(always)]
pub fn blk_mq_flush_plug_list(qs: &mut [RequestQueue], core: &mut BlockCore, task: u32, from_schedule: bool) {
    let Some(plug) = core.plugs.get_mut(task as usize).and_then(|p| p.as_mut()) else { return };
    if plug.rq_count == 0 {
        return;
    }
    if plug.rq_count == 1 && plug.list().len() == 1 && !plug.multiple_queues && !plug.has_elevator && !from_schedule {
        // The list stays in the plug.
        plug.rq_count = 0;
        let rq = plug.pop_only().expect("a plugged request");
        return flush_plug_one(qs, core, rq, task);
    }
    flush_plug_batch(qs, core, task, from_schedule);
}

/// The rest of `blk_mq_flush_plug_list`: a plug of several requests (or
/// with an elevator, several queues, or flushed by the scheduler).
#[inline(never)]
fn flush_plug_batch(qs: &mut [RequestQueue], core: &mut BlockCore, task: u32, from_schedule: bool) {
    let plug = core.plugs[task as usize].as_mut().expect("a plug with requests");
    let depth = plug.rq_count as u64;
    plug.rq_count = 0;
    let (multi, elevator) = (plug.multiple_queues, plug.has_elevator);
    let mut list = plug.take_list();
    if core.beh.plug_sort && multi && depth > 2 {
        plug_rq_cmp_sort(qs, &mut list);
    }
    core.cpu_charge(|c| c.flush_plug as u64);
    if !multi && !elevator && !from_schedule {
        // Path A: one queue, no elevator: hand the batch to the driver.
        let qi = list[0].0 as usize;
        if core.beh.unplug_trace_direct {
            trace_plug(core, qs[qi].dev, Action::Unplug, depth, task);
        }
        if qs[qi].has_queue_rqs {
            queue_rqs(&mut qs[qi], core, &list, task);
        } else {
            for &(_, id) in &list {
                blk_mq_start_request(&mut qs[qi], core, id, task);
            }
        }
        list.clear();
    }
    while !list.is_empty() {
        blk_mq_dispatch_plug_list(qs, core, &mut list, from_schedule, task);
    }
    // The emptied list goes back to the plug, for the requests to come.
    if let Some(plug) = core.plugs[task as usize].as_mut() {
        plug.restore_list(list);
    }
}

/// Path A of `blk_mq_flush_plug_list` for one request: 'U' (per version)
/// and its issue, which `->queue_rqs` and `->queue_rq` do alike for one.
/// Out of line: [`blk_mq_flush_plug_list`] is inline in several callers.
#[inline(never)]
fn flush_plug_one(qs: &mut [RequestQueue], core: &mut BlockCore, (qi, id): RqRef, task: u32) {
    core.cpu_charge(|c| c.flush_plug as u64);
    let qi = qi as usize;
    if core.beh.unplug_trace_direct {
        trace_plug(core, qs[qi].dev, Action::Unplug, 1, task);
    }
    // blk_mq_start_request with the device's part inline: a plug flushed
    // as each large request comes (md's chunk-by-chunk discards) issues
    // every request here, and the call cost each a quarter of what it does.
    // (Inline in every caller of blk_mq_start_request, it cost the
    // scheduler's dispatch more than it saved.)
    blk_mq_start_request_with(&mut qs[qi], core, id, task, device_submit_inline);
}

/// Up to 5.15 `blk_mq_flush_plug_list` sorts a plug of several queues
/// (`list_sort` with `plug_rq_cmp`, a stable merge sort) by software queue,
/// hardware queue, then start sector. The software queues compare by
/// address (`mq_ctx`, allocated per queue when its disk is created); the
/// model orders them as the disks were created, by queue index.
fn plug_rq_cmp_sort(qs: &[RequestQueue], list: &mut VecDeque<RqRef>) {
    list.make_contiguous().sort_by_key(|&(q, id)| (q, qs[q as usize].rqs.get(id).sector));
}

/// `->queue_rqs` (nvme-pci, virtio-blk): each request is started ('D') as
/// the driver pops it; the head-add era drivers then pushed each at the head
/// of their submit list, so the device saw the batch reversed.
fn queue_rqs(q: &mut RequestQueue, core: &mut BlockCore, list: &VecDeque<RqRef>, task: u32) {
    for &(_, id) in list {
        core.cpu_charge(|c| c.queue_rq as u64);
        blk_mq_issue(q, core, id, task);
    }
    if core.beh.queue_rqs_reverse {
        list.iter().rev().for_each(|&(_, id)| device_submit(q, core, id));
    } else {
        list.iter().for_each(|&(_, id)| device_submit(q, core, id));
    }
}

/// `blk_mq_dispatch_plug_list`: take the requests of the queue at the head
/// of the list (their relative order per version), 'U', then the elevator or
/// the driver.
fn blk_mq_dispatch_plug_list(qs: &mut [RequestQueue], core: &mut BlockCore, list: &mut VecDeque<RqRef>, from_schedule: bool, task: u32) {
    let first = list.pop_front().expect("non-empty");
    let qi = first.0 as usize;
    // The queue's own buffer (no allocation per flush); the others'
    // requests stay in `list`, in their order.
    let mut local = std::mem::take(&mut qs[qi].plug_local);
    local.clear();
    local.push_back(first.1);
    let path = core.beh.plug_list_path;
    for r in list.iter().filter(|r| r.0 as usize == qi) {
        match path {
            PlugListPath::ListAdd => local.push_front(r.1),
            PlugListPath::ListAddTail => local.push_back(r.1),
        }
    }
    list.retain(|r| r.0 as usize != qi);
    let action = if from_schedule { Action::UnplugTimer } else { Action::Unplug };
    trace_plug(core, qs[qi].dev, action, local.len() as u64, task);
    let q = &mut qs[qi];
    // blk_mq_try_issue_list_directly issues them; otherwise the queue runs.
    let direct = q.sched.is_none() && !from_schedule;
    if q.sched.is_some() {
        for &id in &local {
            sched::insert_requests(q, core, id, task);
        }
    } else if direct {
        for &id in &local {
            blk_mq_start_request(q, core, id, task);
        }
    } else {
        for &id in &local {
            core.stats[q.dev as usize].inserts += 1;
            trace_rq(core, Action::Insert, q.rqs.get(id), task);
            q.ctx_list.push_back(id);
        }
    }
    q.plug_local = local;
    if !direct {
        blk_mq_run_hw_queue(qs, core, qi, from_schedule);
    }
}

// ---- dispatch and completion ---------------------------------------------

/// `blk_mq_run_hw_queue`: a queue with nothing pending
/// (`blk_mq_hctx_has_pending`) is not run: every completion asks, and a
/// queue whose requests are issued directly is nearly always empty. An
/// asynchronous run happens in a kworker.
/// (The test is inlined into every caller, each completion among them;
/// the run itself stays out of line.)
#[inline(always)]
pub fn blk_mq_run_hw_queue(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, run_async: bool) {
    if qs[qi].queued() == 0 {
        return;
    }
    let task = if run_async { KWORKER } else { core.current };
    blk_mq_sched_dispatch_requests(&mut qs[qi], core, task);
}

/// `blk_mq_sched_dispatch_requests`: move requests to the driver while it
/// has tags: first `hctx->dispatch`, then the scheduler or the software
/// queue.
#[inline(never)]
fn blk_mq_sched_dispatch_requests(q: &mut RequestQueue, core: &mut BlockCore, task: u32) {
    while let Some(&id) = q.dispatch_list.front() {
        if !q.get_driver_tag(id) {
            return;
        }
        q.dispatch_list.pop_front();
        blk_mq_start_request(q, core, id, task);
    }
    if q.sched.is_some() {
        blk_mq_do_dispatch_sched(q, core, task);
    } else {
        while let Some(id) = q.ctx_list.pop_front() {
            blk_mq_start_request(q, core, id, task);
        }
    }
}

/// `__blk_mq_do_dispatch_sched`: requests from the elevator while each
/// gets a driver tag. With `sched_dispatch_ahead` (6.1+) the elevator is
/// asked before the tag: a request that finds none waits in
/// `hctx->dispatch`, issued first at the next run, so the elevator has
/// handed out one request more than the driver holds; without it, or on a
/// driver whose dispatch budget (sd's) runs out with its queue depth,
/// taking stops when no driver tag is left.
fn blk_mq_do_dispatch_sched(q: &mut RequestQueue, core: &mut BlockCore, task: u32) {
    let ahead = core.beh.sched_dispatch_ahead && !q.dispatch_budget;
    while ahead || q.driver_tags < q.attrs.queue_depth {
        let Some(id) = sched::dispatch_request(q, core) else { break };
        if q.last_merge == Some(id) {
            q.last_merge = None;
        }
        if !q.get_driver_tag(id) {
            q.dispatch_list.push_back(id);
            break;
        }
        blk_mq_start_request(q, core, id, task);
    }
}

/// `blk_mq_start_request` from `->queue_rq`: issued ('D') and handed to
/// the device.
#[inline(always)]
fn blk_mq_start_request(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    blk_mq_start_request_with(q, core, id, task, device_submit);
}

/// `blk_mq_start_request` and the driver's `->queue_rq`, the device's
/// part called as `queue_rq` (out of line, or inline where one caller
/// issues most requests).
#[inline(always)]
fn blk_mq_start_request_with(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32, queue_rq: fn(&mut RequestQueue, &mut BlockCore, u32)) {
    core.cpu_charge(|c| c.queue_rq as u64);
    blk_mq_issue(q, core, id, task);
    queue_rq(q, core, id);
}

#[inline(always)]
fn blk_mq_issue(q: &mut RequestQueue, core: &mut BlockCore, id: u32, task: u32) {
    crate::rq_qos::rq_qos_issue(q, id, core.now);
    let rq = q.rqs.get(id);
    trace_rq(core, Action::Issue, rq, task);
    let s = &mut core.stats[q.dev as usize];
    s.issued += 1;
    s.sectors_issued[rq.op as usize] += rq.nr_sectors as u64;
    s.disk.in_driver += 1;
}

#[inline(never)]
fn device_submit(q: &mut RequestQueue, core: &mut BlockCore, id: u32) {
    device_submit_inline(q, core, id);
}

/// The driver's `->queue_rq` hands the request to the device model (or the
/// loop worker, a zone's write pointer check, a failed path).
#[inline(always)]
fn device_submit_inline(q: &mut RequestQueue, core: &mut BlockCore, id: u32) {
    let rq = q.rqs.get(id);
    let (op, sector, bytes, fua) = (rq.op, rq.sector, rq.bytes(), rq.flags & req::FUA != 0);
    // Data and discards complete in time order within their own class.
    let stream = q.index as usize * 2 + (op.is_discard() || op == Op::WriteZeroes) as usize;
    if q.zones.is_some() && zone_refuses(q, core, id, stream) {
        return;
    }
    if q.backing.is_some() {
        // loop_queue_rq → loop_queue_work: the worker takes it.
        core.loop_work.push((q.index, id));
        return;
    }
    if core.mpath.is_some() && crate::nvme_multipath::path_is_down(core, q.dev) {
        // nvme_fail_nonready_command: a host path error at once, then failover.
        core.schedule_stream(stream, core.clock(), SimEvent::RqComplete { queue: q.index, rq: id });
        return;
    }
    let done = q.disk.service(core.clock(), op, sector, bytes, fua);
    core.schedule_stream(stream, done, SimEvent::RqComplete { queue: q.index, rq: id });
}

/// The write-pointer check of a zoned disk ([`crate::zoned`]): a refused
/// request does not reach the media and ends now, with -EIO.
#[cold]
#[inline(never)]
fn zone_refuses(q: &mut RequestQueue, core: &mut BlockCore, id: u32, stream: usize) -> bool {
    let rq = q.rqs.get(id);
    let Some(zones) = q.zones.as_deref_mut() else { return false };
    if zones.wps.write(rq.op, rq.sector, rq.nr_sectors as u64) {
        return false;
    }
    q.rqs.get_mut(id).error = EIO;
    core.stats[q.dev as usize].zone_write_errors += 1;
    core.schedule_stream(stream, core.clock(), SimEvent::RqComplete { queue: q.index, rq: id });
    true
}

/// `blk_mq_end_request`: 'C', accounting, tags back, bios ended, then
/// tag waiters woken and the queue run again.
pub fn blk_mq_complete_request(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize, id: u32) {
    if qs[qi].rqs.get(id).flush_seq {
        return crate::flush::rq_completed(qs, core, qi, id);
    }
    if core.mpath.is_some() {
        crate::nvme_multipath::nvme_failover_req(&mut qs[qi], core, id);
    }
    let q = &mut qs[qi];
    // blk_mq_finish_request → ->finish_request, before the submitter
    // (woken by its bio's end) can run again.
    sched::finish_request(q, core, id);
    let rq = q.rqs.take(id);
    let s = &mut core.stats[q.dev as usize];
    s.disk.in_driver -= 1;
    s.disk.account_sectors(rq.op, rq.flags, rq.nr_sectors as u64);
    blk_mq_end_request_done(q, core, rq, id);
    blk_mq_run_hw_queue(qs, core, qi, true);
}

/// The scheduler's timer expired (bfq's idle slice timer): it runs the
/// queue from kblockd (`bfq_schedule_dispatch`).
pub fn blk_mq_elevator_timer(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize) {
    if sched::elevator_timer(&mut qs[qi], core) {
        blk_mq_run_hw_queue(qs, core, qi, true);
    }
}

/// The rest of ending a request the driver is done with: tags back, 'C',
/// the I/O accounted, bios ended, tag waiters woken.
#[inline(always)]
pub(crate) fn blk_mq_end_request_done(q: &mut RequestQueue, core: &mut BlockCore, rq: Request, id: u32) {
    if let Some(e) = q.sched.as_mut() {
        e.completed_request(&rq, id, core.now);
    }
    q.put_tags(&rq);
    trace_rq(core, Action::Complete, &rq, 0);
    let rule = core.beh.io_ticks;
    let s = &mut core.stats[q.dev as usize];
    s.completed += 1;
    s.disk.io_done(core.now, rq.op, rq.flags, rq.start_time_ns, rule);
    // blk_update_request: unlink each bio from the chain, then end it
    // with the request's status.
    if rq.error != 0 {
        end_bios_with_error(q, core, rq.bio, rq.error, rq.flags, rq.sector);
    } else {
        core.blk_update_request_bios(rq.bio);
    }
    if rq.flags & req::ZONE_WPLUG != 0 {
        // blk_mq_finish_request → blk_zone_finish_request.
        crate::zoned::blk_zone_write_plug_finish_request(q, core, rq.sector);
    }
    crate::rq_qos::rq_qos_completed(q, core, id, &rq);
    wake_tag_waiters(q, core);
}

/// The bios of a failed request, each ended with its error. The first
/// one's end_io of a plugged zone's write fails the zone's plugged bios
/// first (`blk_zone_write_plug_bio_endio`).
#[cold]
#[inline(never)]
fn end_bios_with_error(q: &mut RequestQueue, core: &mut BlockCore, first: BioId, error: i32, flags: u32, sector: u64) {
    if error == crate::nvme_multipath::FAILED_OVER {
        // Its bios were stolen for the head's requeue list (nvme_failover_req).
        return;
    }
    if flags & req::ZONE_WPLUG != 0 {
        crate::zoned::blk_zone_write_plug_rq_error(q, core, sector);
    }
    let mut next = Some(first);
    while let Some(bio) = next {
        next = core.bio_mut(bio).bi_next.take();
        core.bio_io_error(bio, error);
    }
}

/// Hand freed tags to sleeping submitters, oldest first. Each woken task
/// holds its tag and resumes when the engine runs it. Inline: every
/// request that ends asks.
#[inline(always)]
pub fn wake_tag_waiters(q: &mut RequestQueue, core: &mut BlockCore) {
    while let Some(&w) = q.tag_waiters.front() {
        let Some(tags) = q.try_get_tag(core, w.task, w.bio) else { return };
        q.tag_waiters.pop_front();
        core.woken.push((q.index, w, Some(tags)));
    }
}
