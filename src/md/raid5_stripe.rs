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
use super::raid5::StripeHeadWrite;

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

/// One handle-list entry: a stripe_head, or a batch by its head.
#[derive(Debug)]
pub(crate) struct StripeWork {
    /// The array's bio the writes belong to.
    pub bio: BioId,
    /// An md bio (no data) chained to `bio` that keeps it open until the
    /// writes are chained; the pre-reads are chained to it, and its end is
    /// deferred ([`req::DEFER_END`]) to tell md they are all done.
    pub hold: BioId,
    /// The bio's start and its `REQ_SYNC`/`REQ_FUA` for the writes.
    pub start: u64,
    pub flags: u32,
    /// The head first, then the batch's members.
    pub shs: Vec<StripeHeadWrite>,
    pub step: StripeStep,
}

/// The stripe_heads of writes raid5d has to handle.
#[derive(Debug, Default)]
pub(crate) struct StripeCache {
    pub handle_list: VecDeque<StripeWork>,
    /// Pre-reads out (`New`) or done (`ReadsDone`), in the order they
    /// were issued.
    pub reading: Vec<StripeWork>,
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
    /// Attach a write's stripe_heads (a batch head with its members, or one
    /// stripe_head) to the handle list, as `raid5_unplug` releases them.
    pub(crate) fn raid5_add_stripe(&mut self, core: &mut BlockCore, bio: BioId, start: u64, flags: u32, shs: Vec<StripeHeadWrite>) {
        let md = core.bio(bio).dev;
        let hold = alloc_bio(core, bio, md, Op::Write, 0, shs[0].sector, 0);
        core.bio_chain(hold, bio);
        self.stripes.handle_list.push_back(StripeWork { bio, hold, start, flags, shs, step: StripeStep::New });
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
                self.stripe_reads(core, w.hold, &head);
                // The hold's own reference goes: its end now waits for the reads.
                core.bio_mut(w.hold).flags |= req::DEFER_END;
                core.bio_endio(w.hold, 0);
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
                        self.stripe_write(core, w.bio, sh, d, w.start, w.flags);
                    }
                }
                core.bio_endio(w.hold, 0);
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
        let w = self.stripes.reading.iter_mut().find(|w| w.hold == hold)?;
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
