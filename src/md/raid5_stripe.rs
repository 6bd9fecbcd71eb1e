//! raid5d's handling of write stripe_heads (drivers/md/raid5.c): the
//! handle list, `handle_active_stripes` taking up to `MAX_STRIPE_BATCH`
//! entries from its front at a time, and the visits `handle_stripe` makes
//! to a write's stripe_head:
//!
//! 1. a stripe_head that needs old data (read-modify-write or
//!    reconstruct-write, `handle_stripe_dirtying`) gets its pre-reads
//!    (`R5_Wantread`, submitted by `ops_run_io`) and leaves the list until
//!    they complete (`raid5_end_read_request` puts it back);
//! 2. one with everything it needs computes parity (`schedule_reconstruction`;
//!    without an offload engine `ops_complete_reconstruct` runs at once)
//!    and goes back to the *tail* of the list;
//! 3. on its next visit (`reconstruct_state_drain_result`) `ops_run_io`
//!    writes the data units and parity.
//!
//! A batch of full-stripe writes (`stripe_add_to_batch_list`) is one list
//! entry, its head's; it starts at step 2. The order matters because all of
//! one raid5d run goes through one plug, where member requests merge only
//! with the first request of their queue met in the plug list.
//!
//! When pre-reads complete is timing: in the TCG guests the emulated disks
//! answer while raid5d is still flushing the plug that issued them, in the
//! order it dispatched them, so raid5d's next run finds every stripe_head
//! of its previous run ready. The model puts read-complete stripe_heads
//! back on the list in that order ([`ready_order`]) once no pre-read is
//! out any more, and raid5d runs then.

use std::collections::VecDeque;

use crate::bio::{req, BioId, Op};
use crate::profile::PlugAdd;
use crate::submit::BlockCore;

use super::personality::{alloc_bio, Mddev};
use super::raid5::{RmwLevel, StripeHeadWrite, StripeWriteMode};

/// `MAX_STRIPE_BATCH`: stripe_heads `handle_active_stripes` takes at a time.
pub(crate) const MAX_STRIPE_BATCH: usize = 8;

/// Where a write's stripe_head is in `handle_stripe`'s cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StripeStep {
    /// Just attached by `raid5_make_request`.
    New,
    /// Its pre-reads completed.
    ReadsDone,
    /// Parity computed: the next visit writes.
    Computed,
}

/// A bio attached to a handle-list entry: the md bio it keeps open until
/// the writes are chained (`hold`) and the units it writes.
#[derive(Debug)]
pub(crate) struct Attached {
    /// The array's bio.
    pub bio: BioId,
    /// An md bio (no data) chained to `bio` that keeps it open until the
    /// writes are chained. The first attached bio's hold also carries the
    /// pre-reads, and its end is deferred ([`req::DEFER_END`]) to tell md
    /// they are all done.
    pub hold: BioId,
    /// The bio's start sector.
    pub start: u64,
    /// (stripe_head sector, member) of the data units it writes.
    pub units: Vec<(u64, u32)>,
}

/// One handle-list entry: a stripe_head, or a batch by its head.
#[derive(Debug)]
pub(crate) struct StripeWork {
    /// The bios attached (`add_stripe_bio`), first the one that set it up;
    /// a later bio joins stripe_heads raid5d has not handled yet
    /// (`raid5_get_active_stripe` finds them in the stripe cache).
    pub bios: Vec<Attached>,
    /// The bios' `REQ_SYNC`/`REQ_FUA` for the writes.
    pub flags: u32,
    /// The head first, then the batch's members.
    pub shs: Vec<StripeHeadWrite>,
    pub step: StripeStep,
    /// On raid5d's handle list with no reference left: put there by an
    /// earlier plug's end (`raid5_unplug`: `__release_stripe`) or by a
    /// raid5d run (`release_stripe_list` drains `released_stripes`);
    /// `false` while the plug that set it up, or that list, holds it.
    pub released: bool,
}

impl StripeWork {
    /// The bio, and its start, whose data member `d` of stripe_head
    /// `sector` writes (the last one attached there).
    fn writer(&self, sector: u64, d: u32) -> (BioId, u64) {
        let a = self.bios.iter().rev().find(|a| a.units.contains(&(sector, d))).unwrap_or(&self.bios[0]);
        (a.bio, a.start)
    }

    /// Where the stripe_head at `sector` is, if raid5d has not handled it.
    fn unhandled(&self, sector: u64) -> Option<usize> {
        (self.step == StripeStep::New).then(|| self.shs.iter().position(|sh| sh.sector == sector)).flatten()
    }
}

/// `stripe_add_to_batch_list`'s back search for a full-stripe write at
/// `sector` (`flags` its bio's): the entry and the position of the
/// stripe_head just below it, when both lie in one chunk row (same parity
/// members) and that one is a full-stripe write of the same flags raid5d has
/// not handled yet (`stripe_can_batch`: `STRIPE_BATCH_READY` is cleared by
/// its first `handle_stripe`). `entries` are the handle list's.
pub(crate) fn batch_below<'a>(entries: impl Iterator<Item = (bool, u32, &'a [StripeHeadWrite])>, sector: u64, chunk: u64, flags: u32) -> Option<(usize, usize)> {
    if sector % chunk == 0 {
        return None;
    }
    let below = sector - super::raid5::STRIPE_SECTORS;
    entries.enumerate().find_map(|(e, (unhandled, f, shs))| {
        let k = shs.iter().position(|sh| sh.sector == below)?;
        (unhandled && f == flags && shs[k].mode == StripeWriteMode::FullStripe).then_some((e, k))
    })
}

/// The stripe_heads of writes raid5d has to handle.
#[derive(Debug, Default)]
pub(crate) struct StripeCache {
    pub handle_list: VecDeque<StripeWork>,
    /// Pre-reads out (`New`) or done (`ReadsDone`), in the order they
    /// were issued.
    pub reading: Vec<StripeWork>,
    /// raid5d's first run when a submitter without a plug woke it.
    pub first_run: FirstRun,
}

/// raid5d's first wake-up of the run by a submitter that has no plug
/// (7.x, where `__submit_bio` has none: switch `submit_bio_plug`):
/// `release_stripe_plug` then releases each stripe_head as it is set up,
/// and raid5d preempts the submitter at the first release and handles
/// what is on its list then, in a plug of its own; later wake-ups leave
/// it to run when the submitter sleeps (docs/validation.md, H). That is
/// the guests' most frequent outcome, not a rule: whether a wake-up
/// preempts is the fair class's pick (`wakeup_preempt_fair`,
/// `pick_eevdf`), which follows the lag raid5d kept from its earlier runs
/// (`place_entity`), i.e. every task's CPU time since long before the
/// write; runs of one write took from none to every stripe_head of a
/// piece alone (docs/validation.md, R).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FirstRun {
    /// raid5d has not been woken by a submitter without a plug.
    #[default]
    NotYet,
    /// The first run's member bios wait for raid5d to submit them; its
    /// plug ends after the last.
    Queued,
    /// raid5d's next run waits for the first run's pre-reads: under TCG
    /// the submitter takes longer over the rest of its request than the
    /// emulated disks take to answer, so those stripe_heads are back on the
    /// list, behind everything the submitter released, when raid5d runs.
    Waiting,
    /// Every later run goes as with a plug.
    Done,
}

/// What `handle_stripe` does on a visit to a write's stripe_head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StripeVisit {
    /// Submit the pre-reads; off the list until they complete.
    Read,
    /// Compute parity; back to the tail of the list.
    Compute,
    /// Submit the writes; done.
    Write,
}

/// `handle_stripe`'s visit for a stripe_head at `step` that needs pre-reads
/// (`needs_reads`) or not (a full-stripe write).
pub(crate) fn handle_stripe_visit(step: StripeStep, needs_reads: bool) -> StripeVisit {
    match step {
        StripeStep::New if needs_reads => StripeVisit::Read,
        StripeStep::New | StripeStep::ReadsDone => StripeVisit::Compute,
        StripeStep::Computed => StripeVisit::Write,
    }
}

/// One `handle_active_stripes` call: up to [`MAX_STRIPE_BATCH`] entries
/// from the front of `list`, each handled by `handle` (which returns the
/// entry if it stays on the list), then put back at the tail in their
/// order (`__release_stripe` after the batch). False if the list was empty.
pub(crate) fn handle_active_stripes<T>(list: &mut VecDeque<T>, mut handle: impl FnMut(T) -> Option<T>) -> bool {
    let n = list.len().min(MAX_STRIPE_BATCH);
    if n == 0 {
        return false;
    }
    let batch: Vec<T> = list.drain(..n).collect();
    let back: Vec<T> = batch.into_iter().filter_map(&mut handle).collect();
    list.extend(back);
    true
}

impl Mddev {
    /// `add_stripe_bio` of one stripe_head `sh` of the write `bio` (the
    /// units this bio writes, with its rmw/rcw plan alone) as
    /// `raid5_make_request` attaches it and `raid5_unplug` releases it to the
    /// handle list: it joins the same stripe_head when raid5d has not
    /// handled that yet (a bio split at md's `max_sectors` reaches a row in
    /// pieces; parity is then planned for what all of them write); a
    /// full-stripe write joins the batch below it ([`batch_below`]); anything
    /// else is an entry of its own at the tail.
    ///
    /// Returns whether the stripe_head can batch now (`stripe_can_batch`:
    /// a full-stripe write raid5d has not handled).
    pub(crate) fn raid5_add_stripe_bio(&mut self, core: &mut BlockCore, bio: BioId, start: u64, flags: u32, sh: StripeHeadWrite) -> bool {
        let sector = sh.sector;
        let units: Vec<(u64, u32)> = sh.towrite.iter().map(|&d| (sh.sector, d)).collect();
        let found = self.stripes.handle_list.iter().enumerate().find_map(|(e, w)| Some((e, w.unhandled(sh.sector)?)));
        let (e, k) = match found {
            Some((e, k)) => {
                self.stripe_join(e, k, &sh);
                (e, k)
            }
            None => {
                let hold = self.stripe_hold(core, bio, sh.sector);
                let a = Attached { bio, hold, start, units: Vec::new() };
                self.stripes.handle_list.push_back(StripeWork { bios: vec![a], flags, shs: vec![sh], step: StripeStep::New, released: false });
                (self.stripes.handle_list.len() - 1, 0)
            }
        };
        let e = self.stripe_requeue(e, k);
        self.stripe_attach(core, e, bio, start, units);
        self.stripe_add_to_batch_list(core, e, k);
        self.stripe_can_batch(sector)
    }

    /// A lone stripe_head `k` = 0 of entry `e` on raid5d's handle list
    /// with no reference left ([`StripeWork::released`]) leaves the list
    /// for the bio joining it (`find_get_stripe`: `list_del_init` of a
    /// stripe_head whose count is zero) and goes back at the tail when that
    /// bio releases it (`do_release_stripe`: `list_add_tail`), after what
    /// is already there. One still held keeps its place: on the same plug's
    /// list (`release_stripe_plug`: `STRIPE_ON_UNPLUG_LIST`, 6.1's plug
    /// holds the whole write) or, released without a plug (7.x), on
    /// `released_stripes` with its count at one until raid5d drains it
    /// (`raid5_release_stripe`'s `llist_add`). Returns its index.
    fn stripe_requeue(&mut self, e: usize, k: usize) -> usize {
        let list = &mut self.stripes.handle_list;
        if k != 0 || list[e].shs.len() != 1 || !list[e].released {
            return e;
        }
        let mut w = list.remove(e).expect("entry e is on the list");
        w.released = false;
        list.push_back(w);
        list.len() - 1
    }

    /// `raid5_unplug` at a plug's end (or raid5d's `release_stripe_list`):
    /// nobody holds what is on raid5d's list any more.
    pub(crate) fn raid5_unplug(&mut self) {
        for w in self.stripes.handle_list.iter_mut() {
            w.released = true;
        }
    }

    /// `stripe_can_batch` of the stripe_head at `sector`: on the list,
    /// not handled yet, and a full-stripe write.
    fn stripe_can_batch(&self, sector: u64) -> bool {
        self.stripes.handle_list.iter().any(|w| w.unhandled(sector).is_some_and(|k| w.shs[k].mode == StripeWriteMode::FullStripe))
    }

    /// `release_stripe_plug` with no plug (`raid5_release_stripe` at once)
    /// for the stripe_head just set up at `sector`. One that can batch is
    /// held by the request (`ctx->batch_last`) until the next one that can
    /// batch is set up, or the request ends (`sector` `None`), so a batch
    /// head reaches the list only then; any other is released at once.
    /// The first release of the run wakes raid5d ([`FirstRun`]).
    pub(crate) fn release_stripe_unplugged(&mut self, core: &mut BlockCore, sector: Option<u64>, batchable: bool, batch_last: &mut Option<u64>) {
        let released = match sector {
            Some(s) if batchable => batch_last.replace(s).is_some(),
            Some(_) => true,
            None => batch_last.take().is_some(),
        };
        if released && self.stripes.first_run == FirstRun::NotYet {
            self.raid5d_first_run(core, *batch_last);
        }
    }

    /// raid5d's first run, at the first release: it handles every
    /// stripe_head on its list but a batch head the request still holds
    /// (`held`), until the list is empty, and queues their member bios.
    fn raid5d_first_run(&mut self, core: &mut BlockCore, held: Option<u64>) {
        let held = held.and_then(|s| self.stripes.handle_list.iter().position(|w| w.step == StripeStep::New && w.shs[0].sector == s));
        let kept = held.and_then(|e| self.stripes.handle_list.remove(e));
        while self.raid5d_handle_active_stripes(core) {}
        // release_stripe_list drained what was released: nobody holds it.
        self.raid5_unplug();
        self.stripes.handle_list.extend(kept);
        self.stripes.first_run = if self.raid5d.is_empty() { FirstRun::Done } else { FirstRun::Queued };
    }

    /// Whether raid5d's run ends before its next bio ([`FirstRun`]): after
    /// the first run's bios (its plug ends), and while that run's pre-reads
    /// are out.
    pub(crate) fn raid5d_sleeps(&mut self) -> bool {
        match self.stripes.first_run {
            FirstRun::Queued if self.raid5d.is_empty() => {
                self.stripes.first_run = FirstRun::Waiting;
                true
            }
            FirstRun::Waiting if !self.stripes.reading.is_empty() => true,
            FirstRun::Waiting => {
                self.stripes.first_run = FirstRun::Done;
                false
            }
            _ => false,
        }
    }

    /// raid5d's first run ended its plug with no pre-read out: it goes on
    /// with the rest of its list at once, in a new plug.
    pub(crate) fn raid5d_runs_again(&self) -> bool {
        self.stripes.first_run == FirstRun::Waiting && self.stripes.reading.is_empty()
    }

    /// A further bio's units join the unhandled stripe_head `k` of entry
    /// `e`: `handle_stripe_dirtying` will see the units of every bio.
    fn stripe_join(&mut self, e: usize, k: usize, sh: &StripeHeadWrite) {
        let (conf, rmw) = self.r5conf();
        let mut merged = self.stripes.handle_list[e].shs[k].clone();
        for (have, add) in [(&mut merged.towrite, &sh.towrite), (&mut merged.overwrite, &sh.overwrite)] {
            have.extend(add.iter().filter(|d| !have.contains(d)).copied().collect::<Vec<_>>());
            have.sort_unstable();
        }
        conf.handle_stripe_dirtying(&mut merged, rmw, rmw == RmwLevel::Disable);
        self.stripes.handle_list[e].shs[k] = merged;
    }

    /// Record that `bio` writes `units` of entry `e` (a hold of its own the
    /// first time the bio reaches the entry).
    fn stripe_attach(&mut self, core: &mut BlockCore, e: usize, bio: BioId, start: u64, units: Vec<(u64, u32)>) {
        if let Some(a) = self.stripes.handle_list[e].bios.iter_mut().find(|a| a.bio == bio) {
            a.units.extend(units);
            return;
        }
        let sector = units.first().map_or(0, |u| u.0);
        let hold = self.stripe_hold(core, bio, sector);
        self.stripes.handle_list[e].bios.push(Attached { bio, hold, start, units });
    }

    /// An md bio chained to `bio` that keeps it open until raid5d has
    /// chained the writes.
    fn stripe_hold(&self, core: &mut BlockCore, bio: BioId, sector: u64) -> BioId {
        let md = core.bio(bio).dev;
        let hold = alloc_bio(core, bio, md, Op::Write, 0, sector, 0);
        core.bio_chain(hold, bio);
        hold
    }

    /// `stripe_add_to_batch_list`: entry `e`, if it is the lone stripe_head
    /// `k` = 0 and now a full-stripe write, moves into the batch of the
    /// stripe_head below it, right after that one (`list_add` after it in
    /// the batch list), bios and all.
    fn stripe_add_to_batch_list(&mut self, core: &mut BlockCore, e: usize, k: usize) {
        let w = &self.stripes.handle_list[e];
        if k != 0 || w.shs.len() != 1 || w.shs[0].mode != StripeWriteMode::FullStripe {
            return;
        }
        let (sector, flags) = (w.shs[0].sector, w.flags);
        let chunk = self.r5conf().0.chunk_sectors as u64;
        let list = &self.stripes.handle_list;
        let entries = list.iter().enumerate().map(|(i, w)| (i != e && w.step == StripeStep::New, w.flags, w.shs.as_slice()));
        let Some((to, at)) = batch_below(entries, sector, chunk, flags) else { return };
        let w = self.stripes.handle_list.remove(e).expect("entry e is on the list");
        let to = if to > e { to - 1 } else { to };
        let head = &mut self.stripes.handle_list[to];
        head.shs.insert(at + 1, w.shs.into_iter().next().expect("one stripe_head"));
        for a in w.bios {
            match head.bios.iter_mut().find(|b| b.bio == a.bio) {
                // The bio has a hold there already: this one goes.
                Some(b) => {
                    b.units.extend(a.units);
                    core.bio_endio(a.hold, 0);
                }
                None => head.bios.push(a),
            }
        }
    }

    /// One `handle_active_stripes` call of raid5d; false if nothing was on the list.
    pub(crate) fn raid5d_handle_active_stripes(&mut self, core: &mut BlockCore) -> bool {
        let mut list = std::mem::take(&mut self.stripes.handle_list);
        let any = handle_active_stripes(&mut list, |w| self.handle_stripe(core, w));
        // Nothing reaches the list while raid5d runs (no time passes).
        list.append(&mut self.stripes.handle_list);
        self.stripes.handle_list = list;
        any
    }

    /// `handle_stripe` on a write's stripe_head: returns it if it goes back
    /// on the list.
    fn handle_stripe(&mut self, core: &mut BlockCore, mut w: StripeWork) -> Option<StripeWork> {
        match handle_stripe_visit(w.step, !w.shs[0].reads.is_empty()) {
            StripeVisit::Read => {
                let head = w.shs[0].clone();
                let hold = w.bios[0].hold;
                self.stripe_reads(core, hold, &head);
                // The hold's own reference goes: its end now waits for the reads.
                core.bio_mut(hold).flags |= req::DEFER_END;
                core.bio_endio(hold, 0);
                self.stripes.reading.push(w);
                None
            }
            StripeVisit::Compute => {
                w.step = StripeStep::Computed;
                Some(w)
            }
            StripeVisit::Write => {
                for &d in &w.shs[0].writes {
                    for sh in &w.shs {
                        let (bio, start) = w.writer(sh.sector, d);
                        self.stripe_write(core, bio, sh, d, start, w.flags);
                    }
                }
                for a in &w.bios {
                    core.bio_endio(a.hold, 0);
                }
                None
            }
        }
    }

    /// `raid5_end_read_request` for the last pre-read of the stripe_head
    /// `hold` stands for: it is ready. Once no pre-read is out, the ready
    /// stripe_heads go back on the list in the order their last reads were
    /// dispatched ([`ready_order`]); `Some(true)`: raid5d has work. `None`
    /// if `hold` is no stripe_head's.
    pub(crate) fn raid5_reads_done(&mut self, core: &BlockCore, hold: BioId) -> Option<bool> {
        let w = self.stripes.reading.iter_mut().find(|w| w.bios[0].hold == hold)?;
        w.step = StripeStep::ReadsDone;
        if self.stripes.reading.iter().any(|w| w.step != StripeStep::ReadsDone) {
            return Some(false);
        }
        let mut ready = std::mem::take(&mut self.stripes.reading);
        let queues: Vec<Vec<u32>> = ready
            .iter()
            .map(|w| w.shs[0].reads.iter().map(|&d| core.topo.dev(self.members[d as usize].dev).whole).collect())
            .collect();
        let order = ready_order(&queues, core.beh.plug_add);
        let mut slots: Vec<Option<StripeWork>> = ready.drain(..).map(Some).collect();
        self.stripes.handle_list.extend(order.into_iter().filter_map(|i| slots[i].take()));
        Some(true)
    }
}

/// The order stripe_heads become ready when their pre-reads went out in
/// one plug: `reads[i]` are the queues stripe_head `i`'s reads went to, in
/// submission order. The plug flush dispatches queue by queue
/// (`blk_mq_dispatch_plug_list` takes the list head's queue first: the
/// queue read first under tail-add, 6.0+; the queue read last under
/// head-add), a queue's requests oldest first, and the TCG guests' disks
/// answer in that order; a stripe_head is ready with its read on the
/// queue dispatched last. Returns indices into `reads`.
pub(crate) fn ready_order(reads: &[Vec<u32>], plug_add: PlugAdd) -> Vec<usize> {
    // The queues in the order the flush reaches them.
    let mut queues: Vec<u32> = Vec::new();
    let submitted: Vec<u32> = reads.iter().flatten().copied().collect();
    let seq: Box<dyn Iterator<Item = &u32>> = match plug_add {
        PlugAdd::Tail => Box::new(submitted.iter()),
        PlugAdd::Head => Box::new(submitted.iter().rev()),
    };
    for &q in seq {
        if !queues.contains(&q) {
            queues.push(q);
        }
    }
    let rank = |i: usize| reads[i].iter().map(|q| queues.iter().position(|x| x == q).unwrap_or(0)).max().unwrap_or(0);
    let mut order: Vec<usize> = (0..reads.len()).collect();
    order.sort_by_key(|&i| rank(i));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stripe_needing_reads_is_read_then_computed_then_written() {
        use StripeStep::*;
        assert_eq!(handle_stripe_visit(New, true), StripeVisit::Read);
        assert_eq!(handle_stripe_visit(ReadsDone, true), StripeVisit::Compute);
        assert_eq!(handle_stripe_visit(Computed, true), StripeVisit::Write);
        // A full-stripe write computes on its first visit.
        assert_eq!(handle_stripe_visit(New, false), StripeVisit::Compute);
    }

    #[test]
    fn ready_order_follows_the_plug_flush() {
        // 6.1-random-1-097 (3 members, right-asymmetric, parity on member 2):
        // stripe_head 0 reads member 0's queue (A = 1), stripe_heads 200..248
        // (seven) read member 1's queue (B = 2). Tail-add (6.12): the flush
        // takes the head's queue first, A (read first): 0 is ready first,
        // then the seven in order. Head-add (6.1): the head is the newest
        // request, B's: the seven first, then 0. (Both guests' write passes
        // showed these orders.)
        let reads: Vec<Vec<u32>> = std::iter::once(vec![1]).chain(std::iter::repeat(vec![2]).take(7)).collect();
        assert_eq!(ready_order(&reads, PlugAdd::Tail), (0..8).collect::<Vec<_>>());
        assert_eq!(ready_order(&reads, PlugAdd::Head), [1, 2, 3, 4, 5, 6, 7, 0]);
        // Every stripe_head reading both queues is ready with its read on the
        // queue dispatched last: all tie, handle order stays.
        let both = vec![vec![1, 2]; 3];
        assert_eq!(ready_order(&both, PlugAdd::Head), [0, 1, 2]);
        assert_eq!(ready_order(&both, PlugAdd::Tail), [0, 1, 2]);
    }

    fn sh(sector: u64, full: bool) -> StripeHeadWrite {
        let mode = if full { StripeWriteMode::FullStripe } else { StripeWriteMode::Rcw };
        StripeHeadWrite { sector, pd_idx: 3, qd_idx: None, towrite: vec![], overwrite: vec![], mode, reads: vec![], writes: vec![] }
    }

    /// The sectors of each handle-list entry after attaching `shs` in order
    /// (all unhandled, one bio): joined to the batch below, else alone.
    fn attach(shs: &[StripeHeadWrite], chunk: u64) -> Vec<Vec<u64>> {
        let mut list: Vec<Vec<StripeHeadWrite>> = Vec::new();
        for s in shs {
            let below = (s.mode == StripeWriteMode::FullStripe).then(|| batch_below(list.iter().map(|e| (true, 0, e.as_slice())), s.sector, chunk, 0)).flatten();
            match below {
                Some((e, k)) => list[e].insert(k + 1, s.clone()),
                None => list.push(vec![s.clone()]),
            }
        }
        list.iter().map(|e| e.iter().map(|s| s.sector).collect()).collect()
    }

    #[test]
    fn full_stripe_writes_batch_backwards_within_a_chunk_row() {
        // 16-sector chunks: stripe_heads at 0 and 8 in row 0, 16 and 24 in
        // row 1. A plan that starts at 8 (the bio's lowest chunk offset)
        // and wraps: 8 finds nothing below it yet, 0 cannot join 8 (the
        // search only goes back), 16 starts a row (sector % chunk == 0),
        // 24 joins 16; 32 is partial, alone; 40 finds 32 below it, not a
        // full-stripe write: alone.
        let plan = [sh(8, true), sh(0, true), sh(16, true), sh(24, true), sh(32, false), sh(40, true)];
        assert_eq!(attach(&plan, 16), [vec![8], vec![0], vec![16, 24], vec![32], vec![40]]);
        // In order, a full row of four is one batch, headed by its lowest.
        let row = [sh(0, true), sh(8, true), sh(16, true), sh(24, true)];
        assert_eq!(attach(&row, 32), [vec![0, 8, 16, 24]]);
        // A handled stripe_head below (its batch no longer ready) or one of
        // other flags takes no new member.
        assert_eq!(batch_below([(false, 0, &row[..1])].into_iter(), 8, 32, 0), None);
        assert_eq!(batch_below([(true, 1, &row[..1])].into_iter(), 8, 32, 0), None);
        assert_eq!(batch_below([(true, 0, &row[..1])].into_iter(), 8, 32, 0), Some((0, 0)));
    }

    #[test]
    fn handle_active_stripes_takes_eight_and_requeues_at_the_tail() {
        // Ten full-stripe entries 0..9 (each needs a compute visit, then a
        // write visit). raid5d's loop: batch 1 is 0..7, all computed and put
        // back after 8 and 9; batch 2 is 8, 9, 0..5: 8 and 9 computed (back
        // to the tail), 0..5 written; batch 3: 6, 7 written, 8, 9 written.
        let mut list: VecDeque<(u32, StripeStep)> = (0..10).map(|i| (i, StripeStep::New)).collect();
        let mut writes = Vec::new();
        let mut calls = 0;
        while handle_active_stripes(&mut list, |(i, step)| match handle_stripe_visit(step, false) {
            StripeVisit::Compute => Some((i, StripeStep::Computed)),
            _ => {
                writes.push(i);
                None
            }
        }) {
            calls += 1;
        }
        assert_eq!(writes, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(calls, 3);
        // Eight entries: one batch computes all, the next writes all.
        let mut list: VecDeque<u32> = (0..8).collect();
        let mut seen = Vec::new();
        assert!(handle_active_stripes(&mut list, |i| {
            seen.push(i);
            Some(i)
        }));
        assert_eq!((seen, list.iter().copied().collect::<Vec<_>>()), ((0..8).collect(), (0..8).collect()));
    }
}
