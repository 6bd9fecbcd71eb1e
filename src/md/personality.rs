//! The md driver as the block layer sees it (drivers/md/md.c): the
//! `->submit_bio` of an array, `md_submit_bio` → `md_handle_request` →
//! `pers->make_request`, and the helpers every personality shares —
//! `md_flush_request`, `md_account_bio`, `md_submit_discard_bio`, the
//! open-coded split and the remap of a clone onto a member.
//!
//! The personalities live beside it, one file each: `raid0_io`,
//! [`super::raid1_io`], `raid10_io` and `raid5_io` (raid4/5/6). They take
//! their arithmetic from the pure modules ([`super::raid0`],
//! [`super::raid10`], [`super::raid5`]) and only add what the kernel does
//! with bios: splitting, cloning, chaining, tracing and submitting.
//!
//! What is simplified (and why it does not change which member sectors a
//! clean, non-degraded array without a write-intent bitmap reads and
//! writes): no barriers, bad blocks, reshape, replacement devices or failed
//! members; member writes are submitted at once (`raid1_add_bio_to_plug`
//! does so without a bitmap); `nr_pending` is the member's in-flight I/O and
//! `head_position` moves when everything sent to the member has completed.
//! raid456 stripe work is submitted by the array's thread, raid5d, inside
//! its plug, once the submitter is done; a stripe_head's writes follow its
//! pre-reads when they complete (`raid5_stripe`). One simplification
//! changes timing, not sectors: `md_flush_request` submits the data right
//! after the member flushes instead of when they complete.

use crate::bio::{req, BioId, Op, SECTOR_SHIFT};
use crate::genhd::DevId;
use crate::profile::{MdAccounting, SplitRemainder};
use crate::source::discard::{blkdev_issue_discard, blkdev_issue_discard_one, DiscardChopping, DiscardLimits};
use crate::submit::{BioDriver, BlockCore};
use crate::trace::Action;

use super::raid0::R0Conf;
use super::raid10::R10Conf;
use super::raid5::{R5Conf, RmwLevel};

/// One member of an array (`struct md_rdev`): the device (a disk, a
/// partition or another stacked device) and where the array's data starts
/// on it (`rdev->data_offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MdMember {
    pub dev: DevId,
    pub data_offset: u64,
}

/// The personality and its geometry (`mddev->pers` + `mddev->private`).
#[derive(Clone, Debug)]
pub enum Personality {
    Raid0(R0Conf),
    /// raid1: every member holds the whole array of `sectors` sectors.
    Raid1 { sectors: u64 },
    Raid10(R10Conf),
    /// raid4/5/6 (`conf.level` says which), with the `rmw_level` sysfs value.
    Raid456 {
        conf: R5Conf,
        rmw_level: RmwLevel,
        /// `conf->raid5_discard_unsupported` on a kernel that shows discard
        /// on every array (7.x): discard bios fail with -EOPNOTSUPP.
        fail_discards: bool,
    },
}

/// Per-member state of `read_balance` (`struct raid1_info` /
/// `struct raid10_info`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mirror {
    /// Where the member's last completed I/O ended (`head_position`).
    pub head_position: u64,
    /// Where the last I/O sent to it ends: it becomes the head once the
    /// member has nothing in flight (the kernel moves the head at each
    /// completion; the model sees completions only as the in-flight count).
    pub sent_head: Option<u64>,
    /// raid1: where the last read md sent it ended, and where that
    /// sequential stream began.
    pub next_seq_sect: u64,
    pub seq_start: u64,
}

impl Default for Mirror {
    fn default() -> Self {
        Mirror { head_position: 0, sent_head: None, next_seq_sect: 0, seq_start: u64::MAX }
    }
}

/// An md array: a [`BioDriver`] whose `->submit_bio` is `md_submit_bio`.
pub struct Mddev {
    pub pers: Personality,
    /// Members in slot order (`rdev->raid_disk`).
    pub members: Vec<MdMember>,
    pub(crate) mirrors: Vec<Mirror>,
    /// Scratch for the copies of a raid10 bio (kept to avoid an allocation per bio).
    pub(crate) copies: Vec<super::raid10::R10Copy>,
    /// Scratch for the member ranges of a raid0/raid10 discard (no allocation per discard).
    pub(crate) discard_ranges: Vec<super::MemberRange>,
    /// Member bios the array's thread (raid5d; raid1d/raid10d with
    /// `md_plug_writes`) submits when it runs next, each with the array
    /// sector its remap is traced from (`None`: traced already).
    pub(crate) raid5d: std::collections::VecDeque<(BioId, Option<u64>)>,
    /// raid1/raid10 writes go to the array's thread (`md_plug_writes`).
    pub(crate) plug_writes: bool,
    /// raid456: the stripe_heads of writes raid5d handles.
    pub(crate) stripes: super::raid5_stripe::StripeCache,
    /// raid1/raid10: the array's reads in flight on each member (the reads
    /// in `rdev->nr_pending`), and which member each array bio went to.
    pub(crate) reads_pending: Vec<u64>,
    pub(crate) read_member: Vec<(BioId, u32)>,
    /// Each member's disk (`bdev_whole(rdev->bdev)`), in slot order: what
    /// a member bio's queue, its 'A' and the member's I/O in flight are
    /// found under. Set at the array's first bio (the topology is not known
    /// before); every member copy used to look it up again, three times.
    pub(crate) disks: Vec<DevId>,
}

impl Mddev {
    pub fn new(pers: Personality, members: Vec<MdMember>) -> Mddev {
        let mirrors = vec![Mirror::default(); members.len()];
        let reads_pending = vec![0; members.len()];
        Mddev { pers, members, mirrors, copies: Vec::new(), discard_ranges: Vec::new(), raid5d: Default::default(), plug_writes: false, stripes: Default::default(), reads_pending, read_member: Vec::new(), disks: Vec::new() }
    }

    /// With `md_plug_writes`: raid1/raid10 have a thread that submits their writes.
    pub fn with_plug_writes(mut self, on: bool) -> Mddev {
        self.plug_writes = on && matches!(self.pers, Personality::Raid1 { .. } | Personality::Raid10(_));
        self
    }

    /// `raid1_add_bio_to_plug` / `raid10_write_one_disk` up to 6.3 (with
    /// `md_plug_writes`): the member write `clone`, remapped and traced,
    /// waits on md's plug callback; the submitter sleeps in its plug
    /// (`submit_bio_wait`, direct I/O), so `raid1_unplug`/`raid10_unplug`
    /// run from the scheduler and pass the list to the array's thread,
    /// which submits it in its own plug (`flush_pending_writes`). Without
    /// the switch the clone is submitted at once. Inline: every member
    /// write of raid1/raid10 passes here, and the call cost about as much
    /// as the test.
    /// `md` is the array (`parent`'s device) and `disk` the clone's member
    /// disk, both known to the caller.
    #[inline(always)]
    pub(crate) fn md_submit_write(&mut self, core: &mut BlockCore, md: DevId, parent: BioId, clone: BioId, disk: DevId, from_sector: u64) {
        if !self.plug_writes {
            core.bio_chain(clone, parent);
            core.trace_bio_remap_to(clone, disk, md, from_sector);
            core.submit_bio_noacct(clone);
            return;
        }
        self.md_plug_write(core, parent, clone, from_sector);
    }

    /// [`Self::md_submit_write`] with `md_plug_writes`: the clone waits for
    /// the array's thread.
    #[inline(never)]
    fn md_plug_write(&mut self, core: &mut BlockCore, parent: BioId, clone: BioId, from_sector: u64) {
        core.bio_chain(clone, parent);
        let md = core.bio(parent).dev;
        core.trace_bio_remap(clone, md, from_sector);
        self.raid5d.push_back((clone, None));
    }

    /// `pers->make_request`.
    fn make_request(&mut self, core: &mut BlockCore, bio: BioId) {
        match &self.pers {
            Personality::Raid0(_) => self.raid0_make_request(core, bio),
            Personality::Raid1 { .. } => self.raid1_make_request(core, bio),
            Personality::Raid10(_) => self.raid10_make_request(core, bio),
            Personality::Raid456 { .. } => self.raid5_make_request(core, bio),
        }
    }

    /// `md_flush_request`: an empty `REQ_PREFLUSH` write to every member,
    /// chained to `bio`; an empty flush is then done (true), a flush with
    /// data goes on without the flag (false). (The kernel resubmits the
    /// data once the member flushes complete; here it goes on at once.)
    #[inline(never)]
    pub(crate) fn md_flush_request(&self, core: &mut BlockCore, bio: BioId) -> bool {
        for m in &self.members {
            let flush = alloc_bio(core, bio, m.dev, Op::Write, req::PREFLUSH, 0, 0);
            core.bio_chain(flush, bio);
            core.submit_bio_noacct(flush);
        }
        if core.bio(bio).iter.size == 0 {
            core.bio_endio(bio, 0);
            return true;
        }
        core.bio_mut(bio).flags &= !req::PREFLUSH;
        false
    }

    /// `rdev->nr_pending`: the array's reads sent to the member and not yet
    /// completed, one per array bio whatever the requests they merged into
    /// (`read_balance` takes a reference for each), and the writes in
    /// flight on the member's disk.
    #[inline(always)]
    pub(crate) fn pending(&self, core: &BlockCore, disk: u32) -> u64 {
        self.reads_pending[disk as usize] + core.stats[self.disks[disk as usize] as usize].disk.in_flight[1]
    }

    /// `read_balance` chose member `disk` for the array read `bio`: it holds
    /// a reference on the member until the read completes
    /// (`rdev_dec_pending` in `raid1_end_read_request` /
    /// `raid10_end_read_request`), which the array hears of as the bio's
    /// deferred end.
    pub(crate) fn read_sent(&mut self, core: &mut BlockCore, bio: BioId, disk: u32) {
        self.reads_pending[disk as usize] += 1;
        self.read_member.push((bio, disk));
        core.bio_mut(bio).flags |= req::DEFER_END;
    }

    /// The array read `bio` completed: its member's reference goes. False
    /// when it was not such a read.
    fn read_done(&mut self, bio: BioId) -> bool {
        let Some(i) = self.read_member.iter().position(|&(b, _)| b == bio) else { return false };
        let (_, disk) = self.read_member.swap_remove(i);
        self.reads_pending[disk as usize] -= 1;
        true
    }

    /// `head_position` of member `disk` as of now (see [`Mirror::sent_head`]).
    #[inline(always)]
    pub(crate) fn head(&mut self, core: &BlockCore, disk: u32) -> u64 {
        if self.pending(core, disk) == 0 {
            if let Some(h) = self.mirrors[disk as usize].sent_head.take() {
                self.mirrors[disk as usize].head_position = h;
            }
        }
        self.mirrors[disk as usize].head_position
    }

    /// An I/O to member `disk` ending at `end` is about to be sent
    /// (`update_head_pos` runs when it completes). Called before the I/O
    /// counts as pending: if the member is idle now, what was sent before
    /// has completed and its end becomes the head first, or a later
    /// `read_balance` that finds the member busy would see an older head.
    #[inline(always)]
    pub(crate) fn sent(&mut self, core: &BlockCore, disk: u32, end: u64) {
        self.head(core, disk);
        self.mirrors[disk as usize].sent_head = Some(end);
    }

    pub(crate) fn nonrot(&self, core: &BlockCore, disk: u32) -> bool {
        !core.topo.queue(self.members[disk as usize].dev).attrs.rotational
    }
}

impl BioDriver for Mddev {
    /// `md_submit_bio`: split to md's own limits, clear `REQ_NOMERGE` ("bio
    /// could be mergeable after passing to underlayer"), account per the
    /// version, and hand the bio to the personality.
    fn submit_bio(&mut self, core: &mut BlockCore, bio: BioId) {
        if self.disks.len() != self.members.len() {
            self.disks = self.members.iter().map(|m| core.topo.dev(m.dev).whole).collect();
        }
        let Some((bio, _)) = core.bio_split_to_limits(bio) else { return };
        let b = core.bio_mut(bio);
        b.flags &= !req::NOMERGE;
        let (dev, op, flags, sectors, unaccounted) = (b.dev, b.op, b.flags, b.sectors() as u64, b.acct().is_none());
        if core.beh.md_accounting == MdAccounting::SubmitBio && unaccounted && sectors != 0 {
            core.bio_start_io_acct(bio);
        }
        self.make_request(core, bio);
        // ≤5.8 md_make_request: counts after make_request, no time.
        if core.beh.md_accounting == MdAccounting::Inline && sectors != 0 {
            core.stats[dev as usize].disk.count_io(op, flags, sectors);
        }
    }

    /// raid456 has a thread, `mdN_raidL` (`raid5d`); raid1/raid10 too
    /// when it submits their writes (`md_plug_writes`).
    fn thread_name(&self) -> Option<String> {
        match &self.pers {
            Personality::Raid456 { conf, .. } => Some(format!("raid{}", conf.level)),
            Personality::Raid1 { .. } if self.plug_writes => Some("raid1".into()),
            Personality::Raid10(_) if self.plug_writes => Some("raid10".into()),
            _ => None,
        }
    }

    /// raid5d's next member bio: its remap is traced as raid5d submits it.
    /// When none is queued, raid5d handles the next stripe_heads of its
    /// handle list (`handle_active_stripes`).
    fn thread_next(&mut self, core: &mut BlockCore) -> Option<BioId> {
        loop {
            if self.raid5d_sleeps() {
                return None;
            }
            if let Some((bio, from)) = self.raid5d.pop_front() {
                if let Some(from) = from {
                    let md = core.bio(core.bio(bio).parent.expect("chained to the array's bio")).dev;
                    core.trace_bio_remap(bio, md, from);
                }
                return Some(bio);
            }
            if !self.raid5d_handle_active_stripes(core) {
                return None;
            }
        }
    }

    /// `raid5_unplug`: the stripe_heads the plug held go to raid5d's list.
    fn plug_callback(&mut self) {
        if matches!(self.pers, Personality::Raid456 { .. }) {
            self.raid5_unplug();
        }
    }

    /// `raid5_unplug` released stripe_heads to raid5d's handle list.
    fn unplug_wakes_thread(&self) -> bool {
        matches!(self.pers, Personality::Raid456 { .. }) && !self.stripes.handle_list.is_empty()
    }

    /// raid5d's first run ended its plug and nothing holds it back.
    fn thread_runs_again(&self) -> bool {
        self.raid5d_runs_again()
    }

    /// A raid1/raid10 read completed, or the pre-reads of a raid5
    /// stripe_head did (its hold bio's deferred end): it goes back to raid5d.
    fn bio_deferred_end(&mut self, core: &mut BlockCore, bio: BioId, status: i32) {
        if self.read_done(bio) || self.raid5_reads_done(core, bio).is_none() {
            core.bio_endio(bio, status);
        }
    }
}

/// `md_account_bio` (6.12+; `bio_start_io_acct` on r1/r10 bios in 6.1):
/// the bio is accounted until it completes, when the personality is where
/// md accounts (5.14+).
#[inline(always)]
pub(crate) fn md_account_bio(core: &mut BlockCore, bio: BioId) {
    if core.beh.md_accounting == MdAccounting::Personality && core.bio(bio).acct().is_none() {
        core.bio_start_io_acct(bio);
    }
}

/// The open-coded split of md personalities (raid1/raid10 read and write,
/// raid5 `chunk_aligned_read`, raid0 before 6.5): `bio_split` + `bio_chain`,
/// `trace_block_split` from 6.12, and the remainder resubmitted — with
/// `submit_bio_noacct` (tail of `current->bio_list`) up to 6.17, with
/// `bio_submit_split_bioset` (head) from 6.18. Returns the front.
pub(crate) fn md_split(core: &mut BlockCore, bio: BioId, sectors: u32) -> BioId {
    let front = md_split_front(core, bio, sectors);
    match core.beh.split_remainder {
        SplitRemainder::Tail => core.submit_bio_noacct_remainder(bio),
        SplitRemainder::Head => core.submit_bio_noacct_nocheck(bio, true),
    };
    front
}

/// `bio_split` + `bio_chain` (+ 'X' from 6.12) without resubmitting the
/// remainder: for the callers that resubmit a particular piece themselves.
pub(crate) fn md_split_front(core: &mut BlockCore, bio: BioId, sectors: u32) -> BioId {
    let front = core.bio_split(bio, sectors);
    core.bio_chain(front, bio);
    if core.beh.md_split_trace {
        let dev = core.bio(bio).dev;
        core.stats[dev as usize].splits += 1;
        let rest = core.bio(bio).iter.sector;
        core.trace_bio(Action::Split, front, rest, 0);
    }
    front
}

/// Clone `bio` onto `member` at member sector `sector` with `flags`,
/// chain it to `bio`, trace the remap (`mddev_trace_remap`, from
/// `from_sector` of the array) and submit it. The clone covers `bio`'s
/// whole range; [`clone_part`] takes a piece.
pub(crate) fn md_remap(core: &mut BlockCore, bio: BioId, member: DevId, sector: u64, flags: u32, from_sector: u64) -> BioId {
    let clone = md_clone(core, bio, member, sector, flags);
    submit_remapped(core, bio, clone, from_sector)
}

/// A clone of `bio` onto `member` at `sector` with `flags` (not yet chained
/// or submitted). Inline: one per member bio, a call costing about as much
/// as the two fields it sets.
#[inline(always)]
pub(crate) fn md_clone(core: &mut BlockCore, bio: BioId, member: DevId, sector: u64, flags: u32) -> BioId {
    core.bio_alloc_clone_with(bio, member, |c| {
        c.iter.sector = sector;
        c.flags = flags;
    })
}

/// Chain an already remapped `clone` to `parent`, trace and submit it.
#[inline(always)]
pub(crate) fn submit_remapped(core: &mut BlockCore, parent: BioId, clone: BioId, from_sector: u64) -> BioId {
    core.bio_chain(clone, parent);
    let md = core.bio(parent).dev;
    core.trace_bio_remap(clone, md, from_sector);
    core.submit_bio_noacct(clone);
    clone
}

/// A clone of `sectors` of `bio` starting `skip` sectors into it, on
/// `dev` at `sector` (not yet chained or submitted): its pages are the
/// bio's own, as `bio_alloc_clone` + `bio_advance` + `bio_trim` give.
pub(crate) fn clone_part(core: &mut BlockCore, bio: BioId, dev: DevId, skip: u32, sectors: u32, sector: u64, flags: u32) -> BioId {
    core.bio_alloc_clone_with(bio, dev, |c| {
        crate::bio::bvec_iter_advance(&c.bvecs, &mut c.iter, skip << SECTOR_SHIFT);
        c.iter.size = sectors << SECTOR_SHIFT;
        c.iter.sector = sector;
        c.flags = flags;
    })
}

/// A new bio of `sectors` on `dev` at `sector`, with no pages unless it is
/// a data bio, which gets one page-aligned buffer of its own at `phys`
/// (a stripe-cache page). Owner and cookie come from `like` (for reports).
pub(crate) fn alloc_bio(core: &mut BlockCore, like: BioId, dev: DevId, op: Op, flags: u32, sector: u64, sectors: u32) -> BioId {
    alloc_bio_at(core, like, dev, op, flags, sector, sectors, None)
}

/// [`alloc_bio`] with a buffer at `phys` for a data bio.
#[allow(clippy::too_many_arguments)]
pub(crate) fn alloc_bio_at(core: &mut BlockCore, like: BioId, dev: DevId, op: Op, flags: u32, sector: u64, sectors: u32, phys: Option<u64>) -> BioId {
    let l = core.bio(like);
    let (owner, cookie) = (l.owner, l.cookie);
    let size = sectors << SECTOR_SHIFT;
    let page = phys.filter(|_| size > 0).map(|p| crate::bio::Bvec { phys: p, len: size });
    // Written into its slot in place (a whole bio built and moved in costs
    // more: one per member discard); no cgroup, as Bio::new.
    core.alloc_root_bio(dev, op, flags, sector, size, page.as_slice(), owner, cookie, 0)
}

/// Does the member's queue take discards (`bdev_max_discard_sectors`)?
pub(crate) fn member_discards(core: &BlockCore, dev: DevId) -> bool {
    core.topo.limits(dev).max_discard_sectors != 0
}

/// [`member_discards`] of a member whose disk is known.
#[inline(always)]
pub(crate) fn disk_discards(core: &BlockCore, disk: DevId) -> bool {
    core.topo.whole_queue(disk).limits.max_discard_sectors != 0
}

/// `md_submit_discard_bio` (5.13+): `__blkdev_issue_discard` on the
/// member cuts [start, start+sectors) into bios (each previous one chained
/// to the next and submitted as the next is made); the last is chained to
/// `bio`, traced as a remap from `bio`'s sector and submitted. A member
/// without discard gets nothing.
pub(crate) fn md_submit_discard_bio(core: &mut BlockCore, bio: BioId, member: DevId, start: u64, sectors: u64) {
    let d = core.topo.dev(member);
    let lim = core.topo.limits(member);
    let dl = DiscardLimits {
        logical_block_size: lim.logical_block_size,
        discard_granularity: lim.discard_granularity,
        discard_alignment: lim.discard_alignment,
        max_discard_sectors: lim.max_discard_sectors,
        start_sect: d.start_sect,
    };
    let chop = DiscardChopping::BioDiscardLimit;
    let last = match blkdev_issue_discard_one(chop, &dl, start, sectors) {
        // Nearly always one bio for the whole range: no list, nothing to chain.
        Some((sector, n)) => alloc_bio(core, bio, member, Op::Discard, 0, sector, n),
        None => {
            let Ok(pieces) = blkdev_issue_discard(chop, &dl, start, sectors) else { return };
            let Some(last) = discard_chain(core, bio, member, &pieces) else { return };
            last
        }
    };
    let from = core.bio(bio).iter.sector;
    submit_remapped(core, bio, last, from);
}

/// `__blkdev_issue_discard`'s loop over several `pieces`: each bio but the
/// last is chained to the next and submitted as the next is made; the last
/// is returned, not yet submitted.
#[cold]
fn discard_chain(core: &mut BlockCore, like: BioId, member: DevId, pieces: &[(u64, u32)]) -> Option<BioId> {
    let mut prev: Option<BioId> = None;
    for &(sector, n) in pieces {
        let next = alloc_bio(core, like, member, Op::Discard, 0, sector, n);
        if let Some(p) = prev {
            // blk_next_bio: chain the previous one to the new one and submit it.
            core.bio_chain(p, next);
            core.submit_bio_noacct(p);
        }
        prev = Some(next);
    }
    prev
}
