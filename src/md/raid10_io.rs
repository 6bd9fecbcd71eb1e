//! md raid10's bio path (drivers/md/raid10.c): `raid10_make_request`,
//! reads from one copy, writes to every copy, and the three discard
//! behaviours of [`crate::profile::Raid10Discard`]. Where the copies are
//! is [`super::raid10`]'s `raid10_find_phys`.

use crate::bio::{req, BioId, Op};
use crate::profile::Raid10Discard;
use crate::submit::BlockCore;

use super::personality::{disk_discards, md_account_bio, md_clone, md_remap, md_split, md_split_front, md_submit_discard_bio, Mddev, Personality};
use super::raid10::{R10Conf, R10Copy, Raid10DiscardVersion};
use super::MemberRange;

impl Mddev {
    fn r10conf(&self) -> &R10Conf {
        match &self.pers {
            Personality::Raid10(c) => c,
            _ => unreachable!("raid10 path on another personality"),
        }
    }

    /// Every copy of array `sector` into `self.copies`, in
    /// `raid10_find_phys` slot order (`r10_bio->devs[]`).
    #[inline(always)]
    fn raid10_copies(&mut self, sector: u64) {
        let Personality::Raid10(conf) = &self.pers else { unreachable!("raid10 path on another personality") };
        self.copies.clear();
        conf.geo.raid10_find_phys(sector, |c| self.copies.push(c));
    }

    /// A copy's member sector: `addr` + the member's data offset.
    #[inline(always)]
    fn copy_sector(&self, c: &R10Copy) -> u64 {
        c.addr + self.r10conf().data_offset[c.devnum as usize]
    }

    /// raid10's `read_balance` on a healthy array: per copy in slot order, a
    /// near layout takes an idle member at once (distance 0), a far layout
    /// the lowest address, others the closest head; with any non-rotational
    /// member, the copy whose member has the least I/O pending instead.
    /// Ties go to the first slot. Returns the slot.
    fn raid10_read_balance(&mut self, core: &BlockCore) -> usize {
        let geo = self.r10conf().geo;
        let (mut best_dist, mut best_dist_slot, mut min_pending, mut best_pending_slot) = (u64::MAX, 0, u64::MAX, None);
        let mut has_nonrot = false;
        for slot in 0..self.copies.len() {
            let c = self.copies[slot];
            let (pending, nonrot) = (self.pending(core, c.devnum), self.nonrot(core, c.devnum));
            has_nonrot |= nonrot;
            if min_pending > pending && nonrot {
                (min_pending, best_pending_slot) = (pending, Some(slot));
            }
            // "This optimisation is debatable, and completely destroys sequential read speed for
            // 'far copies' arrays. So only keep it for 'near' arrays."
            let dist = if geo.near_copies > 1 && pending == 0 {
                0
            } else if geo.far_copies > 1 {
                c.addr
            } else {
                c.addr.abs_diff(self.head(core, c.devnum))
            };
            if dist < best_dist {
                (best_dist, best_dist_slot) = (dist, slot);
            }
        }
        match best_pending_slot {
            Some(s) if has_nonrot => s,
            _ => best_dist_slot,
        }
    }

    /// `raid10_make_request`: flushes; discards through
    /// `raid10_handle_discard` when the version has it (anything it does
    /// not handle, and every discard ≤5.12, takes the write path); then a
    /// cut at the chunk end (unless every member is a near copy), and the
    /// read or write path.
    #[inline(never)]
    pub(crate) fn raid10_make_request(&mut self, core: &mut BlockCore, bio: BioId) {
        let (flags, op) = (core.bio(bio).flags, core.bio(bio).op);
        if flags & req::PREFLUSH != 0 && self.md_flush_request(core, bio) {
            return;
        }
        if op == Op::Discard {
            let version = match core.beh.raid10_discard {
                Raid10Discard::ChunkLimited => None,
                Raid10Discard::WholeRange => Some(Raid10DiscardVersion::V2),
                Raid10Discard::WholeRangeV1 => Some(Raid10DiscardVersion::V1),
            };
            if version.is_some_and(|v| self.raid10_handle_discard(core, bio, v)) {
                return;
            }
        }
        let b = core.bio(bio);
        let sectors = b.sectors();
        let max = self.r10conf().raid10_make_request_split(b.iter.sector, sectors).unwrap_or(sectors);
        // __make_request → raid10_read_request / raid10_write_request split
        // at r10_bio->sectors and resubmit the rest.
        let bio = if max < sectors { md_split(core, bio, max) } else { bio };
        md_account_bio(core, bio);
        if op == Op::Read {
            self.raid10_read_request(core, bio);
        } else {
            self.raid10_write_request(core, bio);
        }
        // md's own reference: its clones nearly always still hold theirs.
        if core.bio_remaining_done(bio) {
            core.bio_endio(bio, 0);
        }
    }

    /// `raid10_read_request`: one clone to the copy `read_balance` picks,
    /// with only `REQ_SYNC` kept.
    fn raid10_read_request(&mut self, core: &mut BlockCore, bio: BioId) {
        let b = core.bio(bio);
        let (sector, sectors, flags) = (b.iter.sector, b.sectors() as u64, b.flags);
        self.raid10_copies(sector);
        let slot = self.raid10_read_balance(core);
        let c = self.copies[slot];
        self.sent(core, c.devnum, c.addr + sectors);
        self.read_sent(core, bio, c.devnum);
        let at = self.copy_sector(&c);
        md_remap(core, bio, self.members[c.devnum as usize].dev, at, flags & req::SYNC, sector);
    }

    /// `raid10_write_request` + `raid10_write_one_disk`: a clone per copy
    /// in slot order keeping `REQ_SYNC`/`REQ_FUA`; a discard skips members
    /// without discard.
    fn raid10_write_request(&mut self, core: &mut BlockCore, bio: BioId) {
        let b = core.bio(bio);
        let (md, sector, op, flags, sectors) = (b.dev, b.iter.sector, b.op, b.flags & (req::SYNC | req::FUA), b.sectors() as u64);
        self.raid10_copies(sector);
        // The copies are few (near × far) and stay put while the clones are
        // sent: walked by index, each copy's member and sector found once.
        for i in 0..self.copies.len() {
            let c = self.copies[i];
            let (dev, disk, at) = (self.members[c.devnum as usize].dev, self.disks[c.devnum as usize], self.copy_sector(&c));
            if op == Op::Discard && !disk_discards(core, disk) {
                continue;
            }
            self.sent(core, c.devnum, c.addr + sectors);
            let clone = md_clone(core, bio, dev, at, flags);
            self.md_submit_write(core, md, bio, clone, disk, sector);
        }
    }

    /// `raid10_handle_discard` (5.13+, or 5.10-rc1's first version): false
    /// when the bio is shorter than two stripes (write path). Otherwise the
    /// unaligned head is split off and resubmitted, then the unaligned tail
    /// (both with `submit_bio_noacct`, in every version), and each member
    /// gets one discard per far-copy region of the stripe-aligned middle.
    #[inline(never)]
    fn raid10_handle_discard(&mut self, core: &mut BlockCore, bio: BioId, version: Raid10DiscardVersion) -> bool {
        let (start, sectors) = (core.bio(bio).iter.sector, core.bio(bio).sectors() as u64);
        let mut ranges = std::mem::take(&mut self.discard_ranges);
        ranges.clear();
        let handled = self.r10conf().raid10_handle_discard(start, sectors, version, &mut ranges);
        if let Some(d) = handled {
            self.raid10_discard_ranges(core, bio, d, &ranges);
        }
        self.discard_ranges = ranges;
        handled.is_some()
    }

    /// The rest of `raid10_handle_discard` once the discard is handled:
    /// head and tail resubmitted, one discard per member range.
    fn raid10_discard_ranges(&self, core: &mut BlockCore, bio: BioId, d: super::raid10::Raid10Discard, ranges: &[MemberRange]) {
        if let Some(head) = d.head {
            // "Resend the fist split part": the head goes back, the rest stays here.
            let head = md_split_front(core, bio, head.sectors as u32);
            core.submit_bio_noacct(head);
        }
        let mut bio = bio;
        if d.tail.is_some() {
            // "Resend the second split part": the tail goes back, the middle stays.
            let middle = md_split_front(core, bio, d.middle.sectors as u32);
            core.submit_bio_noacct_remainder(bio);
            bio = middle;
        }
        md_account_bio(core, bio);
        for r in ranges {
            md_submit_discard_bio(core, bio, self.members[r.disk as usize].dev, r.start, r.sectors);
        }
        core.bio_endio(bio, 0);
    }
}
