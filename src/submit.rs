//! Bio submission (block/blk-core.c, block/bio.c).
//!
//! [`BlockCore`] is the state every layer shares while a bio travels down
//! the stack: the bio arena, `current->bio_list`, the tracer, per-device
//! counters and the simulated clock. The two loops of the kernel —
//! `__submit_bio_noacct` (top of stack is bio-based) and
//! `__submit_bio_noacct_mq` (request-based) — are generic over a [`Stack`],
//! which knows how to run `__submit_bio` for each device.

use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

use crate::bio::{bvec_iter_advance, req, Bio, BioId, BioVecs, Bvec, BvecIter, Op, SECTOR_SHIFT};
use crate::check::thread::{CheckThread, Hook};
use crate::check::Checker;
use crate::genhd::{DevId, Driver, Topology};
use crate::host_cpu::{CpuCosts, HostCpu};
use crate::mq::{Submit, Waiter};
use crate::plug::{Plug, RqRef};
use crate::profile::{Behaviour, BioAccounting, BioListAssembly, SplitRemainder};
use crate::split::{split_decision, SplitDecision};
use crate::stats::DevStats;
use crate::trace::{Action, Event, Task, TraceCtx, Tracer};

/// `BLK_STS_*` as errno values, as blktrace prints them.
pub const EIO: i32 = -5;
pub const EOPNOTSUPP: i32 = -95;
pub const EINVAL: i32 = -22;
pub const EAGAIN: i32 = -11;

/// Task index of the idle/interrupt context (completions).
pub const IRQ: u32 = 0;
/// Task index of the kworker that runs queues asynchronously.
pub const KWORKER: u32 = 1;

/// Hooks a run's checks take on the engine's thread before they move to a
/// thread of their own: past a small scenario's few thousand, the thread's
/// start costs less than the checking it takes off the engine's path.
pub const CHECK_THREAD_AFTER: u64 = 1 << 14;

/// A driver with its own `->submit_bio` (md, dm, test doubles).
pub trait BioDriver {
    /// `->submit_bio`: called with `current->bio_list` active, so everything
    /// it submits is queued and handled after it returns.
    fn submit_bio(&mut self, core: &mut BlockCore, bio: BioId);

    /// The name of the driver's own kernel thread after the device's
    /// (md's `raid5d` is `md0_raid5`: "raid5"), if it has one.
    fn thread_name(&self) -> Option<String> {
        None
    }

    /// The thread's task name for device `dev_name`: by default
    /// `DEV_SUFFIX` from [`Self::thread_name`].
    fn thread_comm(&self, dev_name: &str) -> Option<String> {
        self.thread_name().map(|s| format!("{dev_name}_{s}"))
    }

    /// The thread runs: the next bio it submits (after tracing what comes
    /// before its 'Q'), or `None` when it has nothing left to do.
    fn thread_next(&mut self, _core: &mut BlockCore) -> Option<BioId> {
        None
    }

    /// The submitter's plug callback (md's `raid5_unplug`) has handed the
    /// thread work as the plug ended, and woken it.
    fn unplug_wakes_thread(&self) -> bool {
        false
    }

    /// A submitter's own `__submit_bio` plug ended: the driver's plug
    /// callback (md's `raid5_unplug`) releases what the plug held.
    fn plug_callback(&mut self) {}

    /// The thread's run ended (its plug finished) with work left that it
    /// goes on with at once, in a new plug (md's raid5d after its first run).
    fn thread_runs_again(&self) -> bool {
        false
    }

    /// The name of a workqueue worker the driver submits from, if it has
    /// timed work ([`SimEvent::DriverWork`]).
    fn worker_name(&self) -> Option<String> {
        None
    }

    /// The task of that worker.
    fn set_worker(&mut self, _task: u32) {}

    /// Timed work of the driver is due now: it does it, and puts in `out`
    /// what must be submitted (and from which task).
    fn work_due(&mut self, _core: &mut BlockCore, _out: &mut Vec<DriverSubmit>) {}

    /// A bio of this driver marked [`req::DEFER_END`] lost its last
    /// completion reference with `status`: the driver ends it
    /// ([`BlockCore::bio_endio`] again) when it is ready.
    fn bio_deferred_end(&mut self, core: &mut BlockCore, bio: BioId, status: i32) {
        core.bio_endio(bio, status);
    }
}

/// A bio a driver's timed work hands out to be submitted by `task`, after
/// its remap from `from_sector` of `from_dev` is traced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverSubmit {
    pub task: u32,
    pub bio: BioId,
    pub from_dev: DevId,
    pub from_sector: u64,
}

/// Timed things the simulation waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimEvent {
    /// A request finished on its device.
    RqComplete { queue: u32, rq: u32 },
    /// The completing CPU handled a finished request's interrupt
    /// ([`crate::host_cpu`]): its bios end now.
    RqIrqDone { queue: u32, rq: u32 },
    /// A job may submit again.
    JobWake { job: u32 },
    /// Take a /proc/diskstats snapshot (`iostat` intervals).
    Sample,
    /// blk-throttle's pending timer of a disk (`throtl_pending_timer_fn`).
    ThrotlTimer { dev: DevId },
    /// The zone write plug work queue of a zoned disk's queue runs its next
    /// work item (`blk_zone_wplug_bio_work`).
    ZoneWplugWork { queue: u32 },
    /// Writeback throttling's window closes on a queue (its blk-stat
    /// callback's timer): housekeeping, like a sample, that never makes a
    /// run longer.
    WbtTimer { queue: u32 },
    /// The scheduler's timer of a queue expires (bfq's idle slice timer).
    ElvTimer { queue: u32 },
    /// A bio-based device's timed work is due (dm-crypt's kcryptd).
    DriverWork { dev: DevId },
}

/// What the event heap holds: an event, or the head of a stream.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Event(SimEvent),
    Stream(u32),
}

/// An entry of the event heap, ordered by its key alone, earliest first
/// (keys are unique — the sequence number is part of them — so what the
/// slot holds never decides; comparing it cost every sift).
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    slot: Slot,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.key == other.key
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed: `BinaryHeap` is a max-heap.
    fn cmp(&self, other: &Entry) -> std::cmp::Ordering {
        other.key.cmp(&self.key)
    }
}

/// A FIFO stream of events whose keys only grow (a device's completions),
/// kept in a vector read from `head` and emptied when read to its end:
/// `VecDeque`'s ring wrapped its index on every push, look at the back, pop
/// and look at the front, one of each per event.
#[derive(Default)]
struct Stream {
    /// Those from `head` on are pending; the last is the stream's back.
    events: Vec<(u128, SimEvent)>,
    head: usize,
}

impl Stream {
    fn push_back(&mut self, e: (u128, SimEvent)) {
        // A stream that never runs dry reclaims what it has read (when that
        // is at least half) rather than grow: each event is moved at most
        // once more for every time the vector fills.
        if self.events.len() == self.events.capacity() && self.head > 0 && self.head >= self.events.len() / 2 {
            self.events.drain(..self.head);
            self.head = 0;
        }
        self.events.push(e);
    }

    /// The head's event, and the next one's key if there is one.
    #[inline(always)]
    fn pop_front(&mut self) -> (SimEvent, Option<u128>) {
        let (_, ev) = self.events[self.head];
        self.head += 1;
        match self.events.get(self.head) {
            Some(&(next, _)) => (ev, Some(next)),
            None => {
                self.events.clear();
                self.head = 0;
                (ev, None)
            }
        }
    }
}

/// A root bio (one a job submitted) finished.
#[derive(Clone, Copy, Debug)]
pub struct RootDone {
    pub owner: u32,
    pub cookie: u32,
    pub status: i32,
}

/// `struct bio_list`: bios linked head to tail through their `bi_next`
/// (a bio waiting on a list is in no request, so the field is free).
#[derive(Clone, Copy, Debug, Default)]
struct BioList {
    head: Option<BioId>,
    tail: Option<BioId>,
}

impl BioList {
    /// `bio_list_add`.
    fn add(&mut self, bios: &mut [Bio], b: BioId) {
        bios[b as usize].bi_next = None;
        match self.tail {
            Some(t) => bios[t as usize].bi_next = Some(b),
            None => self.head = Some(b),
        }
        self.tail = Some(b);
    }

    /// `bio_list_add_head`.
    fn add_head(&mut self, bios: &mut [Bio], b: BioId) {
        bios[b as usize].bi_next = self.head;
        self.tail = self.tail.or(Some(b));
        self.head = Some(b);
    }

    /// `bio_list_pop`: the head, unlinked.
    fn pop(&mut self, bios: &mut [Bio]) -> Option<BioId> {
        let b = self.head?;
        self.head = bios[b as usize].bi_next.take();
        if self.head.is_none() {
            self.tail = None;
        }
        Some(b)
    }

    /// `bio_list_merge`: `other`'s bios after these.
    fn merge(&mut self, bios: &mut [Bio], other: BioList) {
        let Some(h) = other.head else { return };
        match self.tail {
            Some(t) => bios[t as usize].bi_next = Some(h),
            None => self.head = Some(h),
        }
        self.tail = other.tail;
    }
}

/// `current->bio_list[0..2]`. `bio_list_on_stack[0]` is kept sorted the
/// way `__submit_bio_noacct` sorts it after each bio — bios for other
/// queues (`lower`) and bios for the queue whose `__submit_bio` runs
/// (`same`), each in list order — as bios arrive: the lists are the ones
/// the kernel's walk builds, without the walk. The request-based loop does
/// not sort; its one list is `same`.
#[derive(Clone, Copy, Default)]
struct BioLists {
    lower: BioList,
    same: BioList,
    /// `bio_list_on_stack[1]`: the bios pending from before.
    pending: BioList,
    /// The queue the bio-based loop is submitting to (what sorts new
    /// bios); `None` in the request-based loop.
    queue: Option<DevId>,
}

pub struct BlockCore {
    pub topo: Topology,
    pub beh: Behaviour,
    /// Simulated time, ns.
    pub now: u64,
    pub tracer: Tracer,
    pub tasks: Vec<Task>,
    /// Each task's I/O priority (`ioprio_set`), by task.
    pub ioprio: Vec<crate::sched::bfq_ioprio::Ioprio>,
    /// The task running the submission path now.
    pub current: u32,
    pub stats: Vec<DevStats>,
    bios: Vec<Bio>,
    free: Vec<BioId>,
    /// Bio objects ever allocated (the throughput figure counts these).
    pub bios_allocated: u64,
    pub bios_live_peak: usize,
    /// `current->bio_list`, per task: a sleeping task's lists stay put
    /// (in the kernel, on its stack) until it resumes.
    bio_lists: Vec<Option<BioLists>>,
    pub done_roots: Vec<RootDone>,
    /// `current->plug`, per task.
    pub plugs: Vec<Option<Plug>>,
    /// A finished plug's (empty) list buffer, for the next plug: a plug is
    /// a stack variable in the kernel, and costs nothing to set up.
    pub spare_plug_list: VecDeque<RqRef>,
    /// Submitters that got a tag back: (queue, what they were allocating
    /// for, the tags they now hold); `None` for one an rq-qos policy let go
    /// (`rq_qos_wait`), which has yet to get its tag.
    pub woken: Vec<(u32, Waiter, Option<(bool, bool)>)>,
    /// Keyed by time, class and sequence packed into one integer
    /// (`time << 64 | class << 63 | sequence`): at equal times samples
    /// (class 1) come after everything else, so a snapshot sees all that
    /// happened by then.
    events: BinaryHeap<Entry>,
    /// FIFO streams of events whose times never decrease (a device's
    /// completions): only each stream's head sits in `events`.
    streams: Vec<Stream>,
    /// Events other than samples still pending.
    real_events: usize,
    /// Time of the last event that was not a sample.
    pub last_activity: u64,
    event_seq: u64,
    /// Conservation (always) and integrity (on request) checks.
    pub check: Checker,
    /// The checks on a thread of their own meanwhile (a long run's: see
    /// [`BlockCore::allow_check_thread`]); `check` is then empty.
    check_thread: Option<CheckThread>,
    /// Hooks the checks took on this thread while they could move.
    checked_here: u64,
    /// After how many of those they move ([`CHECK_THREAD_AFTER`]; tests
    /// set 0 or `u64::MAX` to compare the two).
    pub check_thread_after: u64,
    /// The checks may move to a thread of their own, or are on it: their
    /// hooks go through [`BlockCore::check_hook`].
    check_movable: bool,
    /// Bios failed so far (the checks skip roots during which any failed).
    pub errors_total: u64,
    /// Bounce pages the blk-crypto fallback took so far ([`crate::crypto`]).
    pub bounce_pages: u64,
    /// (queue, request) issued to a loop device, for its worker.
    pub loop_work: Vec<(u32, u32)>,
    /// blk-throttle, when a cgroup has io.max limits ([`crate::rq_qos::throttle`]).
    pub throtl: Option<Box<crate::rq_qos::throttle::Throtl>>,
    /// Bios marked [`req::DEFER_END`] whose last reference dropped, with
    /// their status, for their drivers.
    pub deferred_ends: Vec<(BioId, i32)>,
    /// The host CPU model (`[host] cpu`; off by default).
    pub cpu: HostCpu,
    /// nvme multipath failover, when a scenario fails a path
    /// ([`crate::nvme_multipath::Failover`]).
    pub mpath: Option<Box<crate::nvme_multipath::Failover>>,
}

impl BlockCore {
    pub fn new(topo: Topology, beh: Behaviour) -> Self {
        let n = topo.devs.len();
        BlockCore {
            topo,
            beh,
            now: 0,
            tracer: Tracer::default(),
            tasks: vec![Task { pid: 0, comm: "swapper/0".into(), cpu: 0 }, Task { pid: 92, comm: "kworker/0:1H".into(), cpu: 0 }],
            ioprio: vec![Default::default(); 2],
            current: 0,
            stats: vec![DevStats::default(); n],
            bios: Vec::new(),
            free: Vec::new(),
            bios_allocated: 0,
            bios_live_peak: 0,
            bio_lists: vec![None, None],
            done_roots: Vec::new(),
            plugs: vec![None, None],
            spare_plug_list: VecDeque::new(),
            woken: Vec::new(),
            events: BinaryHeap::new(),
            streams: Vec::new(),
            real_events: 0,
            last_activity: 0,
            event_seq: 0,
            check: Checker::new(),
            check_thread: None,
            checked_here: 0,
            check_thread_after: CHECK_THREAD_AFTER,
            check_movable: false,
            errors_total: 0,
            bounce_pages: 0,
            loop_work: Vec::new(),
            throtl: None,
            deferred_ends: Vec::new(),
            cpu: HostCpu::default(),
            mpath: None,
        }
    }

    pub fn add_task(&mut self, pid: u32, comm: &str) -> u32 {
        self.tasks.push(Task { pid, comm: comm.to_string(), cpu: 0 });
        self.ioprio.push(Default::default());
        self.plugs.push(None);
        self.bio_lists.push(None);
        (self.tasks.len() - 1) as u32
    }

    // ---- the bio arena -------------------------------------------------

    pub fn bio(&self, id: BioId) -> &Bio {
        &self.bios[id as usize]
    }

    pub fn bio_mut(&mut self, id: BioId) -> &mut Bio {
        &mut self.bios[id as usize]
    }

    pub fn alloc_bio(&mut self, bio: Bio) -> BioId {
        match self.take_free_slot() {
            Some(id) => {
                self.bios[id as usize] = bio;
                id
            }
            None => {
                self.bios.push(bio);
                (self.bios.len() - 1) as BioId
            }
        }
    }

    /// `bio_alloc` + `bio_init` of a submitter's bio: what [`Bio::new`]
    /// sets (with its owner, cookie and cgroup) written field by field into
    /// a free slot. Every root bio comes through here, and building a whole
    /// bio to move it into its slot costs more. (The pattern names every
    /// field, so a new one must be set here too.)
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn alloc_root_bio(&mut self, dev: DevId, op: Op, flags: u32, sector: u64, size: u32, bvecs: &[Bvec], owner: u32, cookie: u32, blkcg: u16) -> BioId {
        let Some(id) = self.take_free_slot() else {
            self.bios.push(Bio { owner, cookie, blkcg, ..Bio::new(dev, op, flags, sector, size, BioVecs::new(bvecs)) });
            return (self.bios.len() - 1) as BioId;
        };
        let Bio { dev: b_dev, op: b_op, flags: b_flags, iter, bvecs: b_bvecs, traced, remapped, parent, remaining, in_request, bi_next, owner: b_owner, cookie: b_cookie, acct_start, acct_sectors, status, blkcg: b_blkcg, throtl } = &mut self.bios[id as usize];
        (*b_dev, *b_op, *b_flags, *iter) = (dev, op, flags, BvecIter { sector, size, idx: 0, bvec_done: 0 });
        *b_bvecs = BioVecs::new(bvecs);
        (*traced, *remapped, *parent, *remaining, *in_request, *bi_next) = (false, false, None, 1, false, None);
        (*b_owner, *b_cookie, *acct_start, *acct_sectors, *status, *b_blkcg, *throtl) = (owner, cookie, 0, crate::bio::NO_ACCT, 0, blkcg, 0);
        id
    }

    /// Count a new bio object; a free slot for it, if there is one.
    /// Every slot holds a live bio or is free, so the live bios are the
    /// slots less the free ones ([`Self::live_bios`]), not a count kept per
    /// bio; while a free slot is left they are fewer than the arena's
    /// slots, which the peak reached when the arena last grew: only a bio
    /// that grows the arena (all its slots live, and one more) can set a
    /// new peak, and the others need not compare.
    fn take_free_slot(&mut self) -> Option<BioId> {
        self.bios_allocated += 1;
        let slot = self.free.pop();
        if slot.is_none() {
            self.bios_live_peak = self.bios_live_peak.max(self.bios.len() + 1);
        }
        slot
    }

    fn bio_put(&mut self, id: BioId) {
        self.free.push(id);
    }

    /// A new bio object that starts as a copy of `id`, its completion and
    /// request state cleared (`__bio_clone`), and `adjust` applied (the
    /// caller's fields: device, sector, flags, size). It is copied into its
    /// slot and adjusted there: building it on the stack and moving it in
    /// stalls on store forwarding, on the path every clone and split takes.
    /// The copy, the reset and `adjust` go through one borrow of the slot:
    /// each lookup again cost a bounds check and reloads of the arena (its
    /// length might have changed with any store, for all the compiler
    /// knows), and the fields set twice were stored twice.
    #[inline(always)]
    fn bio_copy(&mut self, id: BioId, adjust: impl FnOnce(&mut Bio)) -> BioId {
        let (new, c) = match self.take_free_slot() {
            Some(new) => {
                let (src, dst) = (id as usize, new as usize);
                let c = if src < dst {
                    let (lo, hi) = self.bios.split_at_mut(dst);
                    hi[0].clone_from(&lo[src]);
                    &mut hi[0]
                } else {
                    let (lo, hi) = self.bios.split_at_mut(src);
                    lo[dst].clone_from(&hi[0]);
                    &mut lo[dst]
                };
                (new, c)
            }
            None => {
                let new = self.bio_copy_to_new_slot(id);
                (new, &mut self.bios[new as usize])
            }
        };
        c.parent = None;
        c.remaining = 1;
        c.in_request = false;
        c.bi_next = None;
        // Accounting lives with the I/O being accounted (md_io_acct,
        // dm_io, r10bio), never with a clone or split front.
        c.acct_sectors = crate::bio::NO_ACCT;
        c.status = 0;
        // A clone starts with no bio flags: blk-throttle sees it afresh.
        c.throtl = 0;
        adjust(c);
        new
    }

    /// [`Self::bio_copy`] when the arena has no free slot: it grows (only
    /// until the run's peak of live bios is reached).
    #[cold]
    #[inline(never)]
    fn bio_copy_to_new_slot(&mut self, id: BioId) -> BioId {
        let copy = self.bio(id).clone();
        self.bios.push(copy);
        (self.bios.len() - 1) as BioId
    }

    /// `bio_alloc_clone`: shares the bvecs, copies the iterator and flags;
    /// the clone is a new object, so it gets its own 'Q' where submitted.
    #[inline(always)]
    pub fn bio_alloc_clone(&mut self, id: BioId, dev: DevId) -> BioId {
        self.bio_alloc_clone_with(id, dev, |_| {})
    }

    /// [`Self::bio_alloc_clone`] with the caller's changes (`adjust`) made
    /// as the clone is set up (see [`Self::bio_copy`]).
    #[inline(always)]
    pub fn bio_alloc_clone_with(&mut self, id: BioId, dev: DevId, adjust: impl FnOnce(&mut Bio)) -> BioId {
        self.bio_copy(id, |c| {
            c.dev = dev;
            c.traced = false;
            c.remapped = false;
            adjust(c);
        })
    }

    /// `bio_split`: a clone covering the first `sectors`; the original is
    /// advanced and becomes the remainder. The front keeps
    /// `BIO_TRACE_COMPLETION`, so it gets no second 'Q'.
    #[inline(always)]
    pub fn bio_split(&mut self, id: BioId, sectors: u32) -> BioId {
        self.bio_split_with(id, sectors, |_| {})
    }

    /// [`Self::bio_split`] with the caller's changes to the front made as
    /// it is set up (see [`Self::bio_copy`]).
    #[inline(always)]
    fn bio_split_with(&mut self, id: BioId, sectors: u32, adjust: impl FnOnce(&mut Bio)) -> BioId {
        let bytes = sectors << SECTOR_SHIFT;
        let b = self.bio(id);
        assert!(sectors > 0 && bytes < b.iter.size, "bio_split of {sectors} sectors out of range");
        // The size is not set in bio_copy's `adjust`: that saved a lookup
        // per split but, inlined into blk_mq_submit_bio, cost every bio
        // there more (merge4k: 4.5 M more instructions, without a split).
        let front = self.bio_copy(id, adjust);
        self.bio_mut(front).iter.size = bytes;
        let b = self.bio_mut(id);
        bvec_iter_advance(&b.bvecs, &mut b.iter, bytes);
        front
    }

    /// The whole disk bio `id` addresses (a partition's bio, its disk).
    #[inline(always)]
    fn bio_disk(&self, id: BioId) -> DevId {
        self.topo.dev(self.bio(id).dev).whole
    }

    /// `bio_chain`: `parent` completes only after `child` does.
    pub fn bio_chain(&mut self, child: BioId, parent: BioId) {
        self.bio_mut(child).parent = Some(parent);
        self.bio_mut(parent).remaining += 1;
    }

    // ---- tracing -------------------------------------------------------

    /// Emit an event for bio `id` on its queue's trace stream (inlined
    /// down to the check, so an untraced run pays no call). `action` is
    /// one the analysis reads (the merges' is not a constant, and
    /// [`crate::trace::Tracer::hears`] of it would cost a test per merge);
    /// 'A' goes through [`Self::trace_bio_remap`].
    #[inline(always)]
    pub fn trace_bio(&mut self, action: Action, id: BioId, arg: u64, from_dev: DevId) {
        debug_assert!(crate::stats::analysis::READS & 1 << action as u16 != 0);
        if self.tracer.active() {
            let disk = self.bio_disk(id);
            self.trace_bio_event(action, id, disk, arg, from_dev, 0);
        }
    }

    /// [`Self::trace_bio`] of a bio the caller knows addresses whole disk
    /// `disk` (a bio being queued, or merged into a request of `disk`):
    /// the event's device is not looked up again.
    #[inline(always)]
    pub fn trace_bio_on(&mut self, action: Action, id: BioId, disk: DevId, arg: u64, from_dev: DevId) {
        debug_assert!(crate::stats::analysis::READS & 1 << action as u16 != 0);
        debug_assert_eq!(self.bio_disk(id), disk, "the bio addresses disk {disk}");
        if self.tracer.active() {
            self.trace_bio_event(action, id, disk, arg, from_dev, 0);
        }
    }

    /// `trace_block_bio_complete`: a bio's 'C' carries its `bi_status`
    /// (`blk_add_trace_bio_complete`), so a failed bio shows its errno.
    #[inline]
    fn trace_bio_complete(&mut self, id: BioId, status: i32) {
        if self.tracer.active() {
            let disk = self.bio_disk(id);
            self.trace_bio_event(Action::Complete, id, disk, 0, 0, status);
        }
    }

    /// Inline: its call (five arguments, register saves) cost about a quarter of
    /// the event, on every bio's 'Q' and more. It builds the event in each
    /// of [`Self::emit`]'s two ways itself ([`Self::bio_event`], always
    /// inline): through `emit`'s closure, LLVM called the building out of
    /// line from `blk_mq_submit_bio` (its 'G'), a call per request.
    #[inline(always)]
    fn trace_bio_event(&mut self, action: Action, id: BioId, disk: DevId, arg: u64, from_dev: DevId, error: i32) {
        if self.tracer.thread_only() {
            let ev = self.bio_event(action, id, disk, arg, from_dev, error);
            self.tracer.to_thread(&ev);
        } else {
            let ev = self.bio_event(action, id, disk, arg, from_dev, error);
            let ctx = TraceCtx { topo: &self.topo, tasks: &self.tasks };
            self.tracer.emit(ev, &ctx);
        }
    }

    /// The event of bio `id` now, on its whole disk `disk`.
    #[inline(always)]
    fn bio_event(&self, action: Action, id: BioId, disk: DevId, arg: u64, from_dev: DevId, error: i32) -> Event {
        let b = self.bio(id);
        Event {
            time: self.clock(),
            dev: disk,
            action,
            op: b.op,
            flags: b.flags,
            sector: b.iter.sector,
            bytes: b.iter.size,
            task: self.current,
            error,
            arg,
            from_dev,
        }
    }

    /// The time the running code has reached: now, plus the CPU time it
    /// spent since ([`crate::host_cpu`]; 0 when that model is off).
    #[inline(always)]
    pub fn clock(&self) -> u64 {
        self.now + self.cpu.skew
    }

    /// Charge the CPU the running code is on for one operation
    /// ([`crate::host_cpu`]); nothing when the model is off.
    #[inline(always)]
    pub fn cpu_charge(&mut self, cost: impl FnOnce(&CpuCosts) -> u64) {
        if let Some(c) = &self.cpu.costs {
            self.cpu.skew += cost(c);
        }
    }

    /// Hand the event `make` builds to the listeners: straight into the
    /// analysis thread's batch when it alone listens, else to each through
    /// [`crate::trace::Tracer::emit`]. Each way builds its own: the
    /// thread's takes only the fields the analysis reads
    /// ([`crate::stats::analysis::EventBrief`]), and the compiler leaves out
    /// the loads of the others.
    #[inline(always)]
    pub fn emit(&mut self, make: impl FnOnce(&Self) -> Event) {
        if self.tracer.thread_only() {
            let ev = make(self);
            self.tracer.to_thread(&ev);
        } else {
            let ev = make(self);
            let ctx = TraceCtx { topo: &self.topo, tasks: &self.tasks };
            self.tracer.emit(ev, &ctx);
        }
    }

    /// `trace_block_bio_remap`: `id` now addresses its (lower) device;
    /// it came from `from_sector` on `from_dev`.
    #[inline(always)]
    pub fn trace_bio_remap(&mut self, id: BioId, from_dev: DevId, from_sector: u64) {
        let disk = self.bio_disk(id);
        self.trace_bio_remap_to(id, disk, from_dev, from_sector);
    }

    /// [`Self::trace_bio_remap`] of a bio whose disk the caller knows.
    #[inline(always)]
    pub fn trace_bio_remap_to(&mut self, id: BioId, disk: DevId, from_dev: DevId, from_sector: u64) {
        self.stats[disk as usize].remaps += 1;
        if self.tracer.hears(Action::Remap) {
            let whole = self.bio_disk(id);
            self.trace_bio_event(Action::Remap, id, whole, from_sector, from_dev, 0);
        }
    }

    // ---- submission ----------------------------------------------------

    /// `submit_bio_noacct`: end-of-device and op checks, partition remap,
    /// then [`Self::submit_bio_noacct_nocheck`]. Returns the bio if the
    /// caller must start a submission loop (no `current->bio_list` yet).
    pub fn submit_bio_noacct(&mut self, id: BioId) -> Option<BioId> {
        self.cpu_charge(|c| c.submit_bio as u64);
        // What this function's checks read of the bio, read once: each
        // lookup of it again cost a bounds check and reloads of the arena,
        // on every bio submitted. (None of it changes below but the sector
        // and device.)
        let b = self.bio(id);
        let (devid, op, size, sector, end) = (b.dev, b.op, b.iter.size, b.iter.sector, b.end_sector());
        let dev = self.topo.dev(devid);
        let (nr_sectors, whole, start) = (dev.nr_sectors, dev.whole, dev.start_sect);
        // bio_check_eod, against the partition's own size before the remap.
        if size != 0 && end > nr_sectors {
            self.bio_io_error(id, EIO);
            return None;
        }
        if whole != devid {
            // blk_partition_remap: from here on the bio addresses the disk.
            let bm = self.bio_mut(id);
            bm.iter.sector += start;
            bm.dev = whole;
            bm.remapped = true;
            self.trace_bio_remap(id, devid, sector);
        }
        // From here on the disk's queue decides (looked up once).
        let q = self.topo.whole_queue(whole);
        if op_unsupported(&q.limits, op) {
            self.bio_io_error(id, EOPNOTSUPP);
            return None;
        }
        // A device without a volatile cache strips PREFLUSH/FUA, and an
        // empty flush then completes at once.
        if !q.attrs.write_cache {
            self.bio_mut(id).flags &= !(req::PREFLUSH | req::FUA);
            if size == 0 && op == Op::Write {
                self.bio_endio(id, 0);
                return None;
            }
        }
        if self.throtl.is_some() && crate::rq_qos::throttle::blk_throtl_bio(self, id) {
            return None;
        }
        self.submit_bio_noacct_nocheck(id, false)
    }

    /// `submit_bio_noacct_nocheck`: one 'Q' per bio object, then onto
    /// `current->bio_list` if a loop is running (at the head for a split
    /// remainder under head insertion).
    #[inline(always)]
    pub fn submit_bio_noacct_nocheck(&mut self, id: BioId, split: bool) -> Option<BioId> {
        let BlockCore { bios, stats, topo, .. } = self;
        let b = &mut bios[id as usize];
        // Its disk, which nothing below changes, read once for the 'Q'
        // and the list.
        let disk = b.dev;
        if !b.traced {
            b.traced = true;
            // What the 'Q' and the checks need of the bio and its disk,
            // read before the 'Q': after it, the arena and the disk were
            // looked up (and bounds checked) again.
            let (op, sectors) = (b.op, b.sectors() as u64);
            let leaf = matches!(topo.dev(disk).driver, Driver::Mq(_)) && b.flags & req::BOUNCE == 0;
            let s = &mut stats[disk as usize];
            s.queued += 1;
            s.sectors_queued[op as usize] += sectors;
            self.trace_bio_on(Action::Queue, id, disk, 0, 0);
            if leaf {
                self.check_leaf(id);
            }
        }
        let head = split && self.beh.split_remainder == SplitRemainder::Head;
        debug_assert_eq!(self.bio_disk(id), self.bio(id).dev, "a bio on a list addresses a whole disk");
        let BlockCore { bio_lists, bios, current, .. } = self;
        let Some(lists) = &mut bio_lists[*current as usize] else { return Some(id) };
        // The bio addresses its whole disk (remapped by submit_bio_noacct,
        // or a remainder of a bio that was): its device is its queue.
        let lower = lists.queue.is_some_and(|q| disk != q);
        let list = if lower { &mut lists.lower } else { &mut lists.same };
        if head {
            list.add_head(bios, id);
        } else {
            list.add(bios, id);
        }
        None
    }

    /// `bio_submit_split`: split off a front of `sectors`, chain it, trace
    /// 'X' and resubmit the remainder; returns the front for the caller to
    /// keep processing.
    #[inline(always)]
    pub fn bio_submit_split(&mut self, id: BioId, sectors: u32) -> BioId {
        self.cpu_charge(|c| c.split as u64);
        // The front's flag and its half of bio_chain(front, id) are set as
        // it is copied, and the remainder's half with what is read of it:
        // each lookup again cost a bounds check (md's chunk-by-chunk
        // discards split every piece).
        let front = self.bio_split_with(id, sectors, |f| {
            f.flags |= req::NOMERGE;
            f.parent = Some(id);
        });
        let b = self.bio_mut(id);
        b.remaining += 1;
        let (dev, rest) = (b.dev, b.iter.sector);
        self.stats[dev as usize].splits += 1;
        self.trace_bio(Action::Split, front, rest, 0);
        let looped = match self.beh.split_remainder {
            SplitRemainder::Tail => self.submit_bio_noacct_remainder(id),
            SplitRemainder::Head => self.submit_split_remainder(id),
        };
        debug_assert!(looped.is_none(), "split outside a submission loop");
        front
    }

    /// `submit_bio_noacct` of a split's remainder, as the splits up to 6.17
    /// resubmit it (`bio_split_to_limits`, md's open-coded splits). Its
    /// checks cannot fail now: the bio passed them when it came to this
    /// queue, and a remainder keeps its disk (a whole one, as every bio
    /// on a list), its op, its end and its flags (the cache flags already
    /// stripped). So only the CPU's charge, the throttle and the list are
    /// left of it; the checks' lookups cost every piece of a bio split
    /// many times over (md's chunk-by-chunk discards). Out of line, as
    /// `submit_bio_noacct`.
    #[inline(never)]
    pub fn submit_bio_noacct_remainder(&mut self, id: BioId) -> Option<BioId> {
        self.cpu_charge(|c| c.submit_bio as u64);
        debug_assert!(
            {
                let b = self.bio(id);
                let q = self.topo.whole_queue(b.dev);
                let cache_flags = !q.attrs.write_cache && b.flags & (req::PREFLUSH | req::FUA) != 0;
                b.iter.size != 0 && b.end_sector() <= self.topo.dev(b.dev).nr_sectors && !op_unsupported(&q.limits, b.op) && !cache_flags
            },
            "a split remainder fails submit_bio_noacct's checks"
        );
        if self.throtl.is_some() && crate::rq_qos::throttle::blk_throtl_bio(self, id) {
            return None;
        }
        self.submit_bio_noacct_nocheck(id, false)
    }

    /// `bio_submit_split_bioset` under head insertion: the remainder goes
    /// through the throttle, then to the head of `current->bio_list`.
    fn submit_split_remainder(&mut self, id: BioId) -> Option<BioId> {
        if self.throtl.is_some() && crate::rq_qos::throttle::blk_throtl_bio(self, id) {
            return None;
        }
        self.submit_bio_noacct_nocheck(id, true)
    }

    /// `bio_split_to_limits`: split to the limits of the bio's queue.
    /// Returns the (front) bio to continue with and its segment count, or
    /// `None` if the bio was failed.
    #[inline(always)]
    pub fn bio_split_to_limits(&mut self, id: BioId) -> Option<(BioId, u32)> {
        // Called from a driver's `->submit_bio`, with a bio off
        // `current->bio_list`: it addresses a whole disk.
        let b = self.bio(id);
        match split_decision(&self.topo.whole_queue(b.dev).limits, b, &self.beh) {
            SplitDecision::Fits { nsegs } => Some((id, nsegs)),
            SplitDecision::At { sectors, nsegs } => Some((self.bio_submit_split(id, sectors), nsegs)),
            SplitDecision::Fail(status) => {
                self.bio_io_error(id, status);
                None
            }
        }
    }

    /// The reassembly of `current->bio_list` in `__submit_bio_noacct`
    /// after a bio: the bios it submitted for other queues ("lower") and
    /// for its own ("same"), joined with the pending ones per the version;
    /// returns the next bio to handle (the rest stays pending).
    #[inline(always)]
    fn reassemble_bio_list(&mut self) -> Option<BioId> {
        let BlockCore { bio_lists, bios, beh, current, .. } = self;
        let lists = bio_lists[*current as usize].as_mut().expect("loop active");
        if lists.lower.head.is_none() && lists.same.head.is_none() {
            // The bio submitted nothing (a disk's bio that became a
            // request): every order leaves the pending list as it is.
            return lists.pending.pop(bios);
        }
        let (lower, same, pending) = (std::mem::take(&mut lists.lower), std::mem::take(&mut lists.same), std::mem::take(&mut lists.pending));
        let order = match beh.bio_list_assembly {
            BioListAssembly::LowerSamePending => [lower, same, pending],
            BioListAssembly::PendingLowerSame => [pending, lower, same],
        };
        for l in order {
            lists.pending.merge(bios, l);
        }
        lists.pending.pop(bios)
    }

    /// `bio_list_pop(&bio_list_on_stack[0])` in the request-based loop.
    fn bio_list_pop(&mut self) -> Option<BioId> {
        let BlockCore { bio_lists, bios, current, .. } = self;
        bio_lists[*current as usize].as_mut()?.same.pop(bios)
    }

    /// `current->bio_list`.
    fn bio_list(&mut self) -> &mut Option<BioLists> {
        &mut self.bio_lists[self.current as usize]
    }

    // ---- checks --------------------------------------------------------

    /// The end of a bio's completion chain: the submitter's bio.
    fn root_of(&self, mut id: BioId) -> BioId {
        while let Some(p) = self.bios[id as usize].parent {
            id = p;
        }
        id
    }

    /// A submitter's bio enters the stack (inline: the checks' own fast
    /// path is a few stores, less than a call).
    #[inline(always)]
    pub fn check_root(&mut self, id: BioId) {
        if self.check_movable {
            return self.check_hook_root(id);
        }
        self.check.root_submitted(&self.topo, &self.bios[id as usize], id, self.errors_total);
    }

    /// A bio object is queued on a request-based disk for the first time
    /// (inline, as [`Self::check_root`]).
    #[inline(always)]
    fn check_leaf(&mut self, id: BioId) {
        if self.check_movable {
            return self.check_hook_leaf(id);
        }
        let root = self.root_of(id);
        self.check.leaf_queued(&self.topo, &self.bios[id as usize], root);
    }

    /// A submitter's bio ended with `status` (inline, as [`Self::check_root`]).
    #[inline(always)]
    fn check_root_done(&mut self, root: BioId, status: i32) {
        if self.check_movable {
            return self.check_hook(Hook::Done { root, status, errors: self.errors_total });
        }
        self.check.root_done(&self.topo, root, status, self.errors_total);
    }

    /// [`Self::check_root`] of checks that may move (out of line, with the
    /// copy of the bio: the hooks of checks that stay cost what they did).
    #[inline(never)]
    fn check_hook_root(&mut self, id: BioId) {
        self.check_hook(Hook::Root { id, errors: self.errors_total, bio: self.bios[id as usize].clone() });
    }

    /// [`Self::check_leaf`] of checks that may move (as [`Self::check_hook_root`]).
    /// Once the checks are on their thread, the copy of the bio goes
    /// straight into the batch: through [`Self::check_hook`] it was copied
    /// twice, into the hook and the hook into the batch, for every piece a
    /// disk queues.
    #[inline(never)]
    fn check_hook_leaf(&mut self, id: BioId) {
        let root = self.root_of(id);
        let BlockCore { check_thread, bios, .. } = self;
        if let Some(t) = check_thread {
            return t.push(Hook::Leaf { root, bio: bios[id as usize].clone() });
        }
        self.check_hook(Hook::Leaf { root, bio: self.bios[id as usize].clone() });
    }

    /// A hook of checks that may move to a thread of their own: on their
    /// thread, or here for the first [`Self::check_thread_after`] hooks.
    #[inline(never)]
    fn check_hook(&mut self, hook: Hook) {
        if self.check_thread.is_none() && self.checked_here >= self.check_thread_after {
            self.check_to_thread();
        }
        if let Some(t) = &mut self.check_thread {
            return t.push(hook);
        }
        crate::check::thread::call(&mut self.check, &self.topo, &hook);
        self.checked_here += 1;
    }

    /// The checks move to a thread of their own (or, if none can be
    /// started, stay here for the rest of the run).
    #[cold]
    #[inline(never)]
    fn check_to_thread(&mut self) {
        match crate::check::thread::start(std::mem::take(&mut self.check), &self.topo) {
            Ok(t) => self.check_thread = Some(t),
            Err(c) => (self.check, self.check_movable) = (c, false),
        }
    }

    /// A run starts (`true`): checks worth it ([`Checker::worth_a_thread`])
    /// may move to a thread of their own. Or it ends, or comes to a phase
    /// that may change the stack (`false`): the checks are back here with
    /// every hook handed over taken.
    pub fn allow_check_thread(&mut self, allow: bool) {
        if let Some(t) = self.check_thread.take() {
            self.check = t.finish().check;
        }
        self.check_movable = allow && self.check.worth_a_thread();
    }

    // ---- bio-based accounting (md, dm) ------------------------------------

    /// `bio_start_io_acct` for the device the bio is on: the I/O is
    /// accounted until this bio completes. 6.1 counts ios and sectors here,
    /// 6.12+ at the end.
    #[inline(always)]
    pub fn bio_start_io_acct(&mut self, id: BioId) {
        let (now, rule, at_start) = (self.now, self.beh.io_ticks, self.beh.bio_accounting == BioAccounting::Start);
        let b = self.bio(id);
        let (dev, op, flags, sectors) = (b.dev as usize, b.op, b.flags, b.sectors());
        let d = &mut self.stats[dev].disk;
        d.io_start(now, op, rule);
        if at_start {
            d.count_io(op, flags, sectors as u64);
        }
        let b = self.bio_mut(id);
        (b.acct_start, b.acct_sectors) = (now, sectors);
    }

    /// `bio_end_io_acct`: latency at jiffy resolution.
    fn bio_end_io_acct(&mut self, dev: DevId, op: Op, flags: u32, start: u64, sectors: u32) {
        let (now, rule, at_end) = (self.now, self.beh.io_ticks, self.beh.bio_accounting == BioAccounting::End);
        self.stats[dev as usize].disk.bio_done(now, op, flags, start, sectors as u64, rule, at_end);
    }

    // ---- completion ----------------------------------------------------

    pub fn bio_io_error(&mut self, id: BioId, status: i32) {
        let dev = self.bio(id).dev;
        self.stats[dev as usize].errors += 1;
        self.errors_total += 1;
        self.bio_endio(id, status);
    }

    /// `bio_endio`: drop one completion reference; when the last one goes,
    /// trace 'C' for a Q-traced bio that is not part of a request, and
    /// complete the parent (chain or clone origin).
    pub fn bio_endio(&mut self, id: BioId, status: i32) {
        self.bio_endio_inline(id, status)
    }

    /// `blk_update_request`'s walk of a request that ended well: each bio
    /// unlinked from the chain (`bi_next`), then ended. One call per
    /// request with [`Self::bio_endio`]'s body inline: a call of it per
    /// bio cost each bio its prologue, register saves and a second lookup
    /// of the bio.
    pub fn blk_update_request_bios(&mut self, first: BioId) {
        let mut next = Some(first);
        while let Some(bio) = next {
            next = self.bio_mut(bio).bi_next.take();
            self.bio_endio_inline(bio, 0);
        }
    }

    /// The body of [`Self::bio_endio`].
    #[inline(always)]
    fn bio_endio_inline(&mut self, mut id: BioId, mut status: i32) {
        loop {
            let b = self.bio_mut(id);
            // bio_chain_endio: a child's error sticks to the parent unless
            // it already has one.
            if status != 0 && b.status == 0 {
                b.status = status as i8;
            }
            if b.remaining > 1 {
                b.remaining -= 1;
                return;
            }
            if b.flags & req::DEFER_END != 0 {
                return self.defer_end(id, status);
            }
            if b.status != 0 {
                status = b.status as i32;
            }
            let (traced, in_rq, parent, dev) = (b.traced, b.in_request, b.parent, b.dev);
            if let Some((start, sectors)) = b.acct() {
                let (op, flags) = (b.op, b.flags);
                self.bio_end_io_acct(dev, op, flags, start, sectors);
            }
            if traced && !in_rq {
                self.stats[dev as usize].bio_completions += 1;
                if self.tracer.active() {
                    // Completions run in interrupt context.
                    let saved = std::mem::replace(&mut self.current, IRQ);
                    self.trace_bio_complete(id, status);
                    self.current = saved;
                }
            }
            let Some(p) = parent else { return self.root_bio_done(id, status) };
            self.bio_put(id);
            id = p;
        }
    }

    /// `bio_remaining_done`: drop one of `id`'s references unless it is the
    /// last; true when it is, and [`Self::bio_endio`] must end the bio. For
    /// a driver that ends its own bio after chaining clones to it, nearly
    /// always while they are in flight: inline, where the call of
    /// `bio_endio` for the count alone cost its register saves.
    #[inline(always)]
    pub fn bio_remaining_done(&mut self, id: BioId) -> bool {
        let b = self.bio_mut(id);
        if b.remaining > 1 {
            b.remaining -= 1;
            return false;
        }
        true
    }

    /// A bio whose end its driver decides: handed over, unmarked, so that
    /// the driver's `bio_endio` ends it.
    #[cold]
    #[inline(never)]
    fn defer_end(&mut self, id: BioId, status: i32) {
        self.bio_mut(id).flags &= !req::DEFER_END;
        self.deferred_ends.push((id, status));
    }

    /// A submitter's bio ended: the checks compare what its pieces did, and
    /// its job hears of it. Inline: the checks' fast path (a root whose
    /// pieces formed one streak or fan-out) is a few compares, their
    /// rest out of line. Always inline: in [`Self::blk_update_request_bios`]
    /// too, where LLVM left it out of line, at some 13 instructions of calls
    /// and spills per bio.
    #[inline(always)]
    fn root_bio_done(&mut self, id: BioId, status: i32) {
        let b = self.bio(id);
        let (owner, cookie) = (b.owner, b.cookie);
        self.check_root_done(id, status);
        self.bio_put(id);
        self.done_roots.push(RootDone { owner, cookie, status });
    }

    // ---- the simulated clock ---------------------------------------------

    /// The ordering key: time, then samples after everything else, then
    /// scheduling order.
    fn event_key(&mut self, at: u64, ev: SimEvent) -> u128 {
        self.event_seq += 1;
        let class = matches!(ev, SimEvent::Sample | SimEvent::WbtTimer { .. }) as u8;
        self.real_events += 1 - class as usize;
        (at.max(self.now) as u128) << 64 | (class as u128) << 63 | self.event_seq as u128
    }

    pub fn schedule(&mut self, at: u64, ev: SimEvent) {
        let key = self.event_key(at, ev);
        self.events.push(Entry { key, slot: Slot::Event(ev) });
    }

    /// Schedule on FIFO stream `stream` (events that usually come in time
    /// order, like one device's completions): the heap then holds one
    /// entry per stream instead of one per event. An event earlier than the
    /// stream's last goes to the heap directly, so the order is exact.
    #[inline(always)]
    pub fn schedule_stream(&mut self, stream: usize, at: u64, ev: SimEvent) {
        let key = self.event_key(at, ev);
        if self.streams.len() <= stream {
            self.streams.resize_with(stream + 1, Stream::default);
        }
        let s = &mut self.streams[stream];
        match s.events.last() {
            Some(&(last, _)) if last > key => self.events.push(Entry { key, slot: Slot::Event(ev) }),
            Some(_) => s.push_back((key, ev)),
            None => {
                s.push_back((key, ev));
                self.events.push(Entry { key, slot: Slot::Stream(stream as u32) });
            }
        }
    }

    /// Inline: the engine's loop takes one event at a time, and the call
    /// cost its register saves and a return through memory.
    #[inline]
    pub fn pop_event(&mut self) -> Option<SimEvent> {
        let mut top = self.events.peek_mut()?;
        let Entry { key, slot } = *top;
        let ev = match slot {
            Slot::Event(ev) => {
                PeekMut::pop(top);
                ev
            }
            Slot::Stream(i) => {
                let (ev, next) = self.streams[i as usize].pop_front();
                match next {
                    // The stream's next event takes the head's place: one
                    // sift instead of a pop and a push (keys are unique, so
                    // the order is the same).
                    Some(next) => top.key = next,
                    None => drop(PeekMut::pop(top)),
                }
                ev
            }
        };
        let (t, class) = ((key >> 64) as u64, (key >> 63) as u8 & 1);
        self.now = t;
        if class == 0 {
            self.real_events -= 1;
            self.last_activity = t;
        }
        Some(ev)
    }

    pub fn live_bios(&self) -> usize {
        self.bios.len() - self.free.len()
    }

    /// Timed events still pending, samples not counted.
    pub fn pending_events(&self) -> usize {
        self.real_events
    }

    /// The 17 /proc/diskstats fields of `dev` now; field 9 per the profile's
    /// `inflight_count` on request-based disks.
    pub fn diskstats(&self, dev: DevId) -> [u64; 17] {
        let d = &self.stats[dev as usize].disk;
        let inflight = match (self.topo.dev(dev).driver, self.beh.inflight_count) {
            (Driver::Mq(_), crate::profile::InflightCount::Driver) => d.in_driver,
            _ => d.inflight(),
        };
        d.fields(inflight)
    }
}

/// The op checks of `submit_bio_noacct`: ops the queue does not take
/// (and flushes, never valid in a bio) fail with `-EOPNOTSUPP`.
fn op_unsupported(lim: &crate::limits::QueueLimits, op: Op) -> bool {
    match op {
        Op::Discard => lim.max_discard_sectors == 0,
        Op::SecureErase => lim.max_secure_erase_sectors == 0,
        Op::WriteZeroes => lim.max_write_zeroes_sectors == 0,
        Op::ZoneAppend => lim.zoned == crate::limits::Zoned::None,
        Op::Flush => true,
        Op::Read | Op::Write => false,
    }
}

/// What the submission loops need from the stack: the core, and a way to
/// run `__submit_bio` for a bio (driver `->submit_bio` or `blk_mq_submit_bio`).
pub trait Stack {
    fn core(&mut self) -> &mut BlockCore;
    fn __submit_bio(&mut self, bio: BioId) -> Submit;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoopKind {
    /// `__submit_bio_noacct_mq`: the top device is request-based.
    Mq,
    /// `__submit_bio_noacct`: the top device is bio-based.
    BioBased,
}

/// A submission loop whose task went to sleep (for a tag) inside
/// `__submit_bio`: which loop. The task's `current->bio_list` waits in
/// [`BlockCore`].
pub struct Suspended {
    kind: LoopKind,
}

/// `submit_bio_noacct` from outside any loop (a task submitting a bio, a
/// driver's thread such as md's raid5d, a bounce bio of the 7.x crypto
/// fallback): start the loop that matches the device. Returns the suspended
/// loop if the task went to sleep before the loop finished. A submitter's
/// own bio is first given to the checks ([`BlockCore::check_root`]).
pub fn submit_bio_from_thread<S: Stack>(stack: &mut S, id: BioId) -> Option<Suspended> {
    let id = stack.core().submit_bio_noacct(id)?;
    start_submission_loop(stack, id)
}

/// `submit_bio_noacct_nocheck` from outside any loop (blk-throttle's
/// dispatch work resubmitting a released bio): its 'Q', then the loop.
pub fn submit_bio_nocheck_from_thread<S: Stack>(stack: &mut S, id: BioId) -> Option<Suspended> {
    let id = stack.core().submit_bio_noacct_nocheck(id, false)?;
    start_submission_loop(stack, id)
}

/// The submission loop that matches the bio's device, with a fresh
/// `current->bio_list`.
fn start_submission_loop<S: Stack>(stack: &mut S, id: BioId) -> Option<Suspended> {
    let core = stack.core();
    let driver = core.topo.dev(core.bio(id).dev).driver;
    *core.bio_list() = Some(BioLists::default());
    match driver {
        Driver::BioBased(_) => start_bio_based_loop(stack, id),
        Driver::Mq(_) => mq_loop(stack, Some(id)),
    }
}

/// [`bio_based_loop`] from its first bio: a call (once per submitted bio),
/// where a resumed loop (at every tag a sleeping submitter gets back) has
/// the loop inline.
#[inline(never)]
fn start_bio_based_loop<S: Stack>(stack: &mut S, id: BioId) -> Option<Suspended> {
    bio_based_loop(stack, Step::Submit(id))
}

/// Continue a loop once the sleeping task finished its `__submit_bio`.
pub fn resume_submit<S: Stack>(stack: &mut S, s: Suspended) -> Option<Suspended> {
    let core = stack.core();
    match s.kind {
        LoopKind::Mq => {
            let next = core.bio_list_pop();
            mq_loop(stack, next)
        }
        LoopKind::BioBased => bio_based_loop(stack, Step::Finish),
    }
}

fn suspend(core: &mut BlockCore, kind: LoopKind) -> Option<Suspended> {
    debug_assert!(core.bio_list().is_some(), "loop active");
    Some(Suspended { kind })
}

/// `__submit_bio_noacct_mq`: bios the disk resubmits (split remainders) are
/// handled in list order.
fn mq_loop<S: Stack>(stack: &mut S, mut next: Option<BioId>) -> Option<Suspended> {
    while let Some(id) = next {
        if stack.__submit_bio(id) == Submit::Blocked {
            return suspend(stack.core(), LoopKind::Mq);
        }
        next = stack.core().bio_list_pop();
    }
    *stack.core().bio_list() = None;
    None
}

enum Step {
    Submit(BioId),
    /// The `__submit_bio` of the bio in progress just finished.
    Finish,
}

/// `__submit_bio_noacct`: after each bio, what it submitted is sorted into
/// bios for other queues ("lower") and for its own queue ("same"), and
/// handled before the bios pending from earlier.
#[inline(always)]
fn bio_based_loop<S: Stack>(stack: &mut S, mut step: Step) -> Option<Suspended> {
    loop {
        if let Step::Submit(id) = step {
            let core = stack.core();
            // What this bio submits is sorted by its queue: its device, a
            // whole disk once it is on a list.
            let q = core.bio(id).dev;
            core.bio_list().as_mut().expect("loop active").queue = Some(q);
            if stack.__submit_bio(id) == Submit::Blocked {
                return suspend(stack.core(), LoopKind::BioBased);
            }
        }
        let next = stack.core().reassemble_bio_list();
        match next {
            Some(id) => step = Step::Submit(id),
            None => break,
        }
    }
    *stack.core().bio_list() = None;
    None
}
