//! Merging bios into requests and requests into each other
//! (block/blk-merge.c: `blk_rq_merge_ok`, `blk_try_merge`, `ll_back_merge_fn`,
//! `ll_front_merge_fn`, `bio_attempt_*_merge`, `attempt_merge`,
//! `bio_will_gap`).
//!
//! Every successful bio merge counts one diskstats merge and traces 'M' or
//! 'F' (discard merges trace nothing); a refused merge for size or segments
//! marks the request `REQ_NOMERGE` (`req_set_nomerge`), as the kernel does.

use crate::bio::{req, Bio, BioId, Bvec, Op, PAGE_SIZE};
use crate::limits::QueueLimits;
use crate::mq::Request;
use crate::profile::GapRule;
use crate::split::chunk_sectors_left;
use crate::submit::BlockCore;
use crate::trace::Action;

/// `enum elv_merge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElvMerge {
    None,
    Back,
    Front,
    Discard,
}

/// `enum bio_merge_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BioMerge {
    /// Not a candidate: try another request.
    None,
    Ok,
    /// A candidate that refused: stop looking.
    Failed,
}

/// `rq_mergeable`.
pub fn rq_mergeable(rq: &Request) -> bool {
    !matches!(rq.op, Op::Flush | Op::WriteZeroes | Op::ZoneAppend) && rq.flags & req::NOMERGE_FLAGS == 0
}

/// `bio_mergeable`.
pub fn bio_mergeable(bio: &Bio) -> bool {
    bio.flags & req::NOMERGE_FLAGS == 0
}

/// `blk_discard_mergable`: multi-range discards merge regardless of position.
pub fn blk_discard_mergable(rq: &Request, lim: &QueueLimits) -> bool {
    rq.op == Op::Discard && lim.max_discard_segments > 1
}

/// `blk_rq_merge_ok` (same op; cgroup, integrity, crypto, hints and
/// priority are all equal in this model).
pub fn blk_rq_merge_ok(rq: &Request, bio: &Bio) -> bool {
    rq_mergeable(rq) && bio_mergeable(bio) && rq.op == bio.op && (rq.flags & req::ATOMIC) == (bio.flags & req::ATOMIC)
}

/// `blk_try_merge`.
pub fn blk_try_merge(rq: &Request, bio: &Bio, lim: &QueueLimits) -> ElvMerge {
    if blk_discard_mergable(rq, lim) {
        ElvMerge::Discard
    } else if rq.sector + rq.nr_sectors as u64 == bio.iter.sector {
        ElvMerge::Back
    } else if rq.sector.checked_sub(bio.sectors() as u64) == Some(bio.iter.sector) {
        ElvMerge::Front
    } else {
        ElvMerge::None
    }
}

/// `blk_rq_get_max_sectors`: the op's size limit, and for data requests no
/// crossing of a `chunk_sectors` boundary from `offset`.
/// The discards return from the match (no chunk rule for them), so the op
/// is tested once, not again after it.
pub fn blk_rq_get_max_sectors(rq: &Request, offset: u64, lim: &QueueLimits) -> u32 {
    let max = match rq.op {
        Op::Discard => return lim.max_discard_sectors.min(u32::MAX >> 9),
        Op::SecureErase => return lim.max_secure_erase_sectors,
        Op::WriteZeroes => lim.max_write_zeroes_sectors,
        _ => lim.max_sectors,
    };
    if lim.chunk_sectors == 0 {
        return max;
    }
    max.min(chunk_sectors_left(offset, lim.chunk_sectors))
}

fn blk_rq_get_max_segments(rq: &Request, lim: &QueueLimits) -> u32 {
    if rq.op == Op::Discard {
        lim.max_discard_segments
    } else {
        lim.max_segments
    }
}

/// `biovec_phys_mergeable`: physically contiguous and inside one
/// segment-boundary window.
fn biovec_phys_mergeable(lim: &QueueLimits, a: &Bvec, b: &Bvec) -> bool {
    let mask = lim.seg_boundary_mask;
    a.end() == b.phys && (a.phys | mask) == ((b.end() - 1) | mask)
}

/// `bio_will_gap`: would putting `next` after `prev` leave a hole the
/// device's virt boundary cannot describe? `first` is the first bio of the
/// request being extended (back merge) or `prev` itself (front merge).
///
/// Inline: most queues have no virt boundary, and their every merge pays
/// this one test instead of a call (the bvec rules stay out of line).
#[inline(always)]
pub fn bio_will_gap(lim: &QueueLimits, rule: GapRule, first: &Bio, prev: &Bio, next: &Bio) -> bool {
    if lim.virt_boundary_mask == 0 || !prev.op.has_data() {
        return false;
    }
    bio_will_gap_bvecs(lim, rule, first, prev, next)
}

/// The rest of [`bio_will_gap`] on a queue with a virt boundary: the
/// last bvec of `prev` against the first of `next`, per version.
#[inline(never)]
fn bio_will_gap_bvecs(lim: &QueueLimits, rule: GapRule, first: &Bio, prev: &Bio, next: &Bio) -> bool {
    let mask = lim.virt_boundary_mask;
    let (Some(pb), Some(nb)) = (prev.last_bvec(), next.first_bvec()) else { return false };
    let prev_end = (pb.offset() as u64 + pb.len as u64) % PAGE_SIZE;
    match rule {
        GapRule::Current => {
            // A request whose first bio starts off the boundary takes no
            // merges at all.
            if first.first_bvec().is_some_and(|f| f.offset() as u64 & mask != 0) {
                return true;
            }
            if biovec_phys_mergeable(lim, &pb, &nb) {
                return false;
            }
            (nb.offset() as u64 & mask) != 0 || (prev_end & mask) != 0
        }
        GapRule::Old => nb.offset() != 0 || (prev_end & mask) != 0,
        GapRule::SamePageRfc => {
            if (pb.end() - 1) / PAGE_SIZE == nb.phys / PAGE_SIZE {
                nb.phys != pb.end()
            } else {
                (prev_end & mask) != 0
            }
        }
    }
}

/// `req_set_nomerge`.
fn req_set_nomerge(rq: &mut Request) {
    rq.flags |= req::NOMERGE;
}

/// `ll_new_hw_segment`: segments still fit (discards add none).
fn ll_new_hw_segment(rq: &mut Request, nsegs: u32, lim: &QueueLimits) -> bool {
    if rq.op == Op::Discard {
        return true;
    }
    if rq.nr_phys_segments + nsegs > blk_rq_get_max_segments(rq, lim) {
        req_set_nomerge(rq);
        return false;
    }
    rq.nr_phys_segments += nsegs;
    true
}

/// `ll_back_merge_fn` for a bio of `sectors`.
#[inline(always)]
fn ll_back_merge_fn(core: &BlockCore, rq: &mut Request, bio: BioId, sectors: u32, nsegs: u32, lim: &QueueLimits) -> bool {
    // The request's bios are looked up only where bio_will_gap looks at
    // them: on a queue with a virt boundary (its first test).
    if lim.virt_boundary_mask != 0 && bio_will_gap(lim, core.beh.gap_rule, core.bio(rq.bio), core.bio(rq.biotail), core.bio(bio)) {
        return false;
    }
    if rq.nr_sectors + sectors > blk_rq_get_max_sectors(rq, rq.sector, lim) {
        req_set_nomerge(rq);
        return false;
    }
    ll_new_hw_segment(rq, nsegs, lim)
}

/// `ll_front_merge_fn`.
pub fn ll_front_merge_fn(core: &BlockCore, rq: &mut Request, bio: BioId, nsegs: u32, lim: &QueueLimits) -> bool {
    let (b, first) = (core.bio(bio), core.bio(rq.bio));
    if bio_will_gap(lim, core.beh.gap_rule, b, b, first) {
        return false;
    }
    if rq.nr_sectors + b.sectors() > blk_rq_get_max_sectors(rq, b.iter.sector, lim) {
        req_set_nomerge(rq);
        return false;
    }
    ll_new_hw_segment(rq, nsegs, lim)
}

/// Account and trace a bio merged into `rq` (`blk_account_io_merge_bio`).
/// Inline: each caller's action is a constant, so the match on it folds
/// away, with the call, on the path every merge of a stream takes.
/// The bio addresses the request's disk (a whole disk, whose queue the
/// request is on), so its event's device is `rq.dev`, not looked up again.
#[inline(always)]
fn bio_merged(core: &mut BlockCore, rq: &Request, bio: BioId, action: Option<Action>) {
    core.bio_mut(bio).in_request = true;
    core.stats[rq.dev as usize].account_merge(rq.op);
    match action {
        Some(a) => core.trace_bio_on(a, bio, rq.dev, 0, 0),
        None => {
            debug_assert_eq!(core.topo.dev(core.bio(bio).dev).whole, rq.dev, "a bio merges into a request of its disk");
            let sector = core.bio(bio).iter.sector;
            core.tracer.untraced_merge(rq.dev, sector);
        }
    }
}

/// Link `bio` after the request's last bio (`req->biotail->bi_next = bio`).
fn rq_append_bio(core: &mut BlockCore, rq: &mut Request, bio: BioId) {
    core.bio_mut(rq.biotail).bi_next = Some(bio);
    rq.biotail = bio;
}

/// `bio_attempt_back_merge`.
pub fn bio_attempt_back_merge(core: &mut BlockCore, rq: &mut Request, bio: BioId, nsegs: u32, lim: &QueueLimits) -> BioMerge {
    let sectors = core.bio(bio).sectors();
    if !ll_back_merge_fn(core, rq, bio, sectors, nsegs, lim) {
        return BioMerge::Failed;
    }
    bio_merged(core, rq, bio, Some(Action::BackMerge));
    rq.nr_sectors += sectors;
    rq_append_bio(core, rq, bio);
    BioMerge::Ok
}

/// `bio_attempt_front_merge`.
pub fn bio_attempt_front_merge(core: &mut BlockCore, rq: &mut Request, bio: BioId, nsegs: u32, lim: &QueueLimits) -> BioMerge {
    if rq.flags & req::ZONE_WPLUG != 0 {
        // Only an out-of-order write would go in front of a plugged zone's
        // write: left to fail.
        return BioMerge::Failed;
    }
    if !ll_front_merge_fn(core, rq, bio, nsegs, lim) {
        return BioMerge::Failed;
    }
    bio_merged(core, rq, bio, Some(Action::FrontMerge));
    let b = core.bio(bio);
    rq.sector = b.iter.sector;
    rq.nr_sectors += b.sectors();
    core.bio_mut(bio).bi_next = Some(rq.bio);
    rq.bio = bio;
    BioMerge::Ok
}

/// `bio_attempt_discard_merge`: one more range, no contiguity needed.
pub fn bio_attempt_discard_merge(core: &mut BlockCore, rq: &mut Request, bio: BioId, lim: &QueueLimits) -> BioMerge {
    let segments = rq.nr_phys_segments.max(1);
    let sectors = core.bio(bio).sectors();
    if segments >= lim.max_discard_segments || rq.nr_sectors + sectors > blk_rq_get_max_sectors(rq, rq.sector, lim) {
        req_set_nomerge(rq);
        return BioMerge::Failed;
    }
    bio_merged(core, rq, bio, None);
    rq.nr_sectors += sectors;
    rq.nr_phys_segments = segments + 1;
    rq_append_bio(core, rq, bio);
    BioMerge::Ok
}

/// `blk_attempt_bio_merge`: try `bio` against one request. Inline: a
/// few tests before the merge itself, and every plug merge comes here.
#[inline(always)]
pub fn blk_attempt_bio_merge(core: &mut BlockCore, rq: &mut Request, bio: BioId, nsegs: u32, lim: &QueueLimits) -> BioMerge {
    if !blk_rq_merge_ok(rq, core.bio(bio)) {
        return BioMerge::None;
    }
    match blk_try_merge(rq, core.bio(bio), lim) {
        ElvMerge::Back => bio_attempt_back_merge(core, rq, bio, nsegs, lim),
        ElvMerge::Front => bio_attempt_front_merge(core, rq, bio, nsegs, lim),
        ElvMerge::Discard => bio_attempt_discard_merge(core, rq, bio, lim),
        ElvMerge::None => BioMerge::None,
    }
}

/// `attempt_merge` checks and bookkeeping for merging request `next` into
/// `rq` (which must precede it, or both be multi-range discards). On
/// success `rq` owns `next`'s bios; the caller frees `next`.
pub fn attempt_merge(core: &mut BlockCore, rq: &mut Request, next: &mut Request, lim: &QueueLimits) -> bool {
    if !rq_mergeable(rq) || !rq_mergeable(next) || rq.op != next.op {
        return false;
    }
    if blk_discard_mergable(rq, lim) {
        // req_attempt_discard_merge
        let segs = rq.nr_phys_segments.max(1) + next.nr_phys_segments.max(1);
        if segs > lim.max_discard_segments || rq.nr_sectors + next.nr_sectors > blk_rq_get_max_sectors(rq, rq.sector, lim) {
            return false;
        }
        rq.nr_phys_segments = segs;
    } else {
        if rq.sector + rq.nr_sectors as u64 != next.sector {
            return false;
        }
        // ll_merge_requests_fn
        let (first, last, nb) = (core.bio(rq.bio), core.bio(rq.biotail), core.bio(next.bio));
        if bio_will_gap(lim, core.beh.gap_rule, first, last, nb) {
            return false;
        }
        if rq.nr_sectors + next.nr_sectors > blk_rq_get_max_sectors(rq, rq.sector, lim) {
            return false;
        }
        if rq.nr_phys_segments + next.nr_phys_segments > blk_rq_get_max_segments(rq, lim) {
            return false;
        }
        rq.nr_phys_segments += next.nr_phys_segments;
    }
    rq.start_time_ns = rq.start_time_ns.min(next.start_time_ns);
    rq.nr_sectors += next.nr_sectors;
    // req->biotail->bi_next = next->bio: `next` is freed by the caller.
    core.bio_mut(rq.biotail).bi_next = Some(next.bio);
    rq.biotail = next.biotail;
    // blk_account_io_merge_request, then trace_block_rq_merge(next).
    core.stats[rq.dev as usize].account_request_merge(next.op);
    crate::mq::trace_rq(core, Action::BackMerge, next, core.current);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bio(bvecs: &[(u64, u32)]) -> Bio {
        Bio::test_write(0, bvecs)
    }

    fn lim() -> QueueLimits {
        QueueLimits { virt_boundary_mask: 4095, ..QueueLimits::stacking() }
    }

    #[test]
    fn rfc_example_same_page() {
        // Seed 004: prev = 512 bytes at offset 512, next = 512 at offset
        // 1024 of the same page (physically contiguous).
        let page = 0x10_0000u64;
        let prev = bio(&[(page + 512, 512)]);
        let next = bio(&[(page + 1024, 512)]);
        // Current rule: the request's first bio starts at offset 512 → gap.
        assert!(bio_will_gap(&lim(), GapRule::Current, &prev, &prev, &next));
        // If the request started at offset 0 (first bio at 0), the
        // contiguity shortcut lets them merge.
        let first = bio(&[(page, 512)]);
        assert!(!bio_will_gap(&lim(), GapRule::Current, &first, &prev, &next));
        // Old rule: next offset 1024 ≠ 0 → gap.
        assert!(bio_will_gap(&lim(), GapRule::Old, &first, &prev, &next));
        // RFC: same page and contiguous → no gap, wherever the request starts.
        assert!(!bio_will_gap(&lim(), GapRule::SamePageRfc, &prev, &prev, &next));
    }

    #[test]
    fn rfc_still_gaps_across_pages_when_prev_ends_mid_page() {
        let prev = bio(&[(0x10_0000, 512)]);
        let next = bio(&[(0x20_0000, 512)]);
        assert!(bio_will_gap(&lim(), GapRule::SamePageRfc, &prev, &prev, &next));
        // Ending on the page boundary: no gap under every rule.
        let prev = bio(&[(0x10_0e00, 512)]);
        for rule in [GapRule::Current, GapRule::Old, GapRule::SamePageRfc] {
            let first = bio(&[(0x10_0000, 512)]);
            assert!(!bio_will_gap(&lim(), rule, &first, &prev, &next), "{rule:?}");
        }
    }
}
