//! md raid4/5/6's bio path (drivers/md/raid5.c): `raid5_make_request`
//! with the `chunk_aligned_read` fast path, the write path in the shape
//! members see it (one 4 KiB bio per member per stripe_head: pre-reads,
//! then data and parity writes, highest slot first as `ops_run_io` goes;
//! full-stripe writes of consecutive stripe_heads batched), and
//! `make_discard_request`. Reads bypass the stripe cache and go out at
//! once; stripe work is submitted by the array's thread, raid5d
//! ([`crate::submit::BioDriver::thread_next`]), inside its plug. The layout
//! and the stripe_head plan are [`super::raid5`]'s.
//!
//! A stripe_head's member I/O uses stripe-cache pages, except a data unit
//! the bio overwrites completely, which is written from the bio's own pages
//! (as with `skip_copy`); the cache pages get physical addresses of their
//! own ([`stripe_page`]).

use crate::bio::{req, BioId, Op};
use crate::submit::{BlockCore, EOPNOTSUPP};

use super::personality::{alloc_bio, alloc_bio_at, clone_part, md_account_bio, md_remap, md_split, member_discards, Mddev, Personality};
use super::raid5::{R5Conf, RmwLevel, StripeHeadWrite, STRIPE_SECTORS};

/// Where the model puts stripe-cache pages: far above any buffer a
/// workload uses, one page per (member, stripe_head).
const STRIPE_CACHE_BASE: u64 = 0x7000_0000_0000;

/// The stripe-cache page of member `disk` for the stripe_head at member
/// sector `sh_sector` (page aligned, as `sh->dev[i].page` is).
fn stripe_page(disk: u32, sh_sector: u64) -> u64 {
    STRIPE_CACHE_BASE + ((disk as u64) << 40) + (sh_sector << 9)
}

impl Mddev {
    pub(crate) fn r5conf(&self) -> (&R5Conf, RmwLevel) {
        match &self.pers {
            Personality::Raid456 { conf, rmw_level, .. } => (conf, *rmw_level),
            _ => unreachable!("raid456 path on another personality"),
        }
    }

    /// `raid5_make_request`.
    #[inline(never)]
    pub(crate) fn raid5_make_request(&mut self, core: &mut BlockCore, bio: BioId) {
        if core.bio(bio).flags & req::PREFLUSH != 0 && self.md_flush_request(core, bio) {
            return;
        }
        match core.bio(bio).op {
            Op::Read => self.chunk_aligned_read(core, bio),
            Op::Discard => self.make_discard_request(core, bio),
            _ => self.raid5_write(core, bio),
        }
    }

    /// `chunk_aligned_read`: at most one chunk per call (the rest goes back
    /// to md), then `raid5_read_one_chunk` sends it to its member.
    fn chunk_aligned_read(&mut self, core: &mut BlockCore, bio: BioId) {
        let b = core.bio(bio);
        let (sector, sectors) = (b.iter.sector, b.sectors());
        let bio = match self.r5conf().0.chunk_aligned_read_split(sector, sectors) {
            Some(front) => md_split(core, bio, front),
            None => bio,
        };
        let b = core.bio(bio);
        let (sectors, flags) = (b.sectors(), b.flags);
        let (disk, at) = self.r5conf().0.raid5_read_one_chunk(sector, sectors).expect("the front fits one chunk");
        md_account_bio(core, bio);
        md_remap(core, bio, self.members[disk as usize].dev, at, flags, sector);
        core.bio_endio(bio, 0);
    }

    /// The write path: `raid5_make_request` attaches the bio to its
    /// stripe_heads (from the lowest chunk offset on) and hands them to
    /// raid5d, whose `handle_stripe` reads what parity needs and writes the
    /// data units and parity — a batch of full-stripe writes together,
    /// member by member (`ops_run_io` walks a batch per member), all inside
    /// raid5d's plug, where a member's consecutive 4 KiB writes merge. The
    /// writes carry the bio's `REQ_SYNC` and `REQ_FUA` (`R5_SyncIO`,
    /// `R5_WantFUA`, spread to every written unit and parity by
    /// `ops_complete_reconstruct`).
    fn raid5_write(&mut self, core: &mut BlockCore, bio: BioId) {
        md_account_bio(core, bio);
        let b = core.bio(bio);
        let (start, sectors, flags) = (b.iter.sector, b.sectors() as u64, b.flags & (req::FUA | req::SYNC));
        let (conf, rmw) = self.r5conf();
        let mut plan = Vec::new();
        conf.raid5_make_request_write(start, sectors, rmw, None, &mut plan);
        // blk_check_plugged: without a plug each stripe_head is released as
        // it is set up, else raid5_unplug releases them all.
        let unplugged = core.plugs[core.current as usize].is_none();
        let mut batch_last = None;
        for sh in plan {
            let sector = sh.sector;
            let batchable = self.raid5_add_stripe_bio(core, bio, start, flags, sh);
            if unplugged {
                self.release_stripe_unplugged(core, Some(sector), batchable, &mut batch_last);
            }
        }
        if unplugged {
            self.release_stripe_unplugged(core, None, false, &mut batch_last);
        }
        core.bio_endio(bio, 0);
    }

    /// The array sector `sh->dev[disk].sector` traces as the remap origin
    /// (0 for parity, as `raid5_compute_blocknr` returns).
    fn unit_sector(&self, sh_sector: u64, disk: u32) -> u64 {
        self.r5conf().0.raid5_compute_blocknr(sh_sector, disk).unwrap_or(0)
    }

    /// Chain a member bio to the array's bio and leave it to raid5d.
    fn queue_for_raid5d(&mut self, core: &mut BlockCore, bio: BioId, member_bio: BioId, from_sector: u64) {
        core.bio_chain(member_bio, bio);
        self.raid5d.push_back((member_bio, Some(from_sector)));
    }

    /// The pre-reads of read-modify-write or reconstruct-write, into the
    /// stripe cache, chained to `bio`.
    pub(crate) fn stripe_reads(&mut self, core: &mut BlockCore, bio: BioId, sh: &StripeHeadWrite) {
        for &d in &sh.reads {
            let m = self.members[d as usize];
            let rb = alloc_bio_at(core, bio, m.dev, Op::Read, 0, sh.sector + m.data_offset, STRIPE_SECTORS as u32, Some(stripe_page(d, sh.sector)));
            let from = self.unit_sector(sh.sector, d);
            self.queue_for_raid5d(core, bio, rb, from);
        }
    }

    /// The write of member `d` of one stripe_head: a fully overwritten data
    /// unit from the bio's pages, a partly written one and parity from the
    /// cache.
    pub(crate) fn stripe_write(&mut self, core: &mut BlockCore, bio: BioId, sh: &StripeHeadWrite, d: u32, start: u64, flags: u32) {
        let m = self.members[d as usize];
        let at = sh.sector + m.data_offset;
        let logical = self.unit_sector(sh.sector, d);
        let wb = if sh.overwrite.contains(&d) {
            clone_part(core, bio, m.dev, (logical - start) as u32, STRIPE_SECTORS as u32, at, flags)
        } else {
            alloc_bio_at(core, bio, m.dev, Op::Write, flags, at, STRIPE_SECTORS as u32, Some(stripe_page(d, sh.sector)))
        };
        self.queue_for_raid5d(core, bio, wb, logical);
    }

    /// `make_discard_request` (reached up to 6.x only with
    /// `devices_handle_discard_safely`, else md has no discard; 7.x fails
    /// the bio there when discard is unsafe): the bio is
    /// rounded in to whole data stripes; each stripe_head of those rows
    /// discards its 4 KiB unit on every member, data and parity, submitted
    /// by raid5d (stripe_head by stripe_head: discards are not batched).
    fn make_discard_request(&mut self, core: &mut BlockCore, bio: BioId) {
        if matches!(self.pers, Personality::Raid456 { fail_discards: true, .. }) {
            // raid5_discard_limits (7.x): BLK_STS_NOTSUPP.
            core.bio_endio(bio, EOPNOTSUPP);
            return;
        }
        let b = core.bio(bio);
        let (start, end) = (b.iter.sector, b.end_sector());
        let conf = self.r5conf().0;
        let chunk = conf.chunk_sectors as u64;
        let stripe_sectors = chunk * conf.data_disks() as u64;
        let (first, last) = (start.div_ceil(stripe_sectors), end / stripe_sectors);
        if first >= last {
            core.bio_endio(bio, 0);
            return;
        }
        // md_account_bio sees the bio trimmed to the whole stripes.
        let saved = core.bio(bio).iter;
        let it = &mut core.bio_mut(bio).iter;
        (it.sector, it.size) = (first * stripe_sectors, (((last - first) * stripe_sectors) << 9) as u32);
        md_account_bio(core, bio);
        core.bio_mut(bio).iter = saved;
        for sh_sector in (first * chunk..last * chunk).step_by(STRIPE_SECTORS as usize) {
            for d in (0..self.members.len() as u32).rev() {
                let m = self.members[d as usize];
                if !member_discards(core, m.dev) {
                    continue;
                }
                let db = alloc_bio(core, bio, m.dev, Op::Discard, 0, sh_sector + m.data_offset, STRIPE_SECTORS as u32);
                let from = self.unit_sector(sh_sector, d);
                self.queue_for_raid5d(core, bio, db, from);
            }
        }
        core.bio_endio(bio, 0);
    }
}
