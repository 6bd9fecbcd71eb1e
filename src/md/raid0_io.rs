//! md raid0's bio path (drivers/md/raid0.c): `raid0_make_request`,
//! `raid0_map_submit_bio` and `raid0_handle_discard`. The zones and the
//! mapping are [`super::raid0`]'s.

use crate::bio::{req, BioId, Op};
use crate::profile::{Raid0DiscardLayout, Raid0Split};
use crate::submit::{BlockCore, EIO};

use super::personality::{md_account_bio, md_remap, md_split, md_split_front, md_submit_discard_bio, Mddev, Personality};
use super::raid0::{R0Conf, Raid0DiscardMode};

impl Mddev {
    fn r0conf(&self) -> &R0Conf {
        match &self.pers {
            Personality::Raid0(c) => c,
            _ => unreachable!("raid0 path on another personality"),
        }
    }

    /// `raid0_make_request`: flushes, discards, and the chunk split. Since
    /// md's `max_hw_sectors` is the chunk, a bio crosses at most one chunk
    /// end. Before 6.5 the front is mapped and the remainder goes back to
    /// md; from 319ff40a5427 both are mapped here, the remainder first.
    #[inline(never)]
    pub(crate) fn raid0_make_request(&mut self, core: &mut BlockCore, bio: BioId) {
        if core.bio(bio).flags & req::PREFLUSH != 0 && self.md_flush_request(core, bio) {
            return;
        }
        if core.bio(bio).op == Op::Discard {
            self.raid0_handle_discard(core, bio);
            return;
        }
        let b = core.bio(bio);
        let Some(front_sectors) = self.r0conf().raid0_make_request_split(b.iter.sector, b.sectors()) else {
            self.raid0_map_submit_bio(core, bio);
            return;
        };
        match core.beh.raid0_split {
            Raid0Split::RemainderToMd => {
                let front = md_split(core, bio, front_sectors);
                self.raid0_map_submit_bio(core, front);
            }
            Raid0Split::MapBoth => {
                let front = md_split_front(core, bio, front_sectors);
                self.raid0_map_submit_bio(core, bio);
                self.raid0_map_submit_bio(core, front);
            }
        }
    }

    /// `raid0_map_submit_bio`: account (`md_account_bio`, whose clone is the
    /// bio that goes down), map the start sector, remap and submit.
    fn raid0_map_submit_bio(&self, core: &mut BlockCore, bio: BioId) {
        md_account_bio(core, bio);
        let (sector, flags) = (core.bio(bio).iter.sector, core.bio(bio).flags);
        let Some(m) = self.r0conf().map_sector(sector) else {
            core.bio_io_error(bio, EIO);
            return;
        };
        md_remap(core, bio, self.members[m.disk as usize].dev, m.sector, flags, sector);
        core.bio_endio(bio, 0);
    }

    /// `raid0_handle_discard`: the part past the zone end goes back to md;
    /// each member of the zone gets one discard of its whole range.
    fn raid0_handle_discard(&self, core: &mut BlockCore, bio: BioId) {
        let (start, sectors) = (core.bio(bio).iter.sector, core.bio(bio).sectors() as u64);
        let mode = match core.beh.raid0_discard {
            Raid0DiscardLayout::Unshifted => Raid0DiscardMode::Unshifted,
            Raid0DiscardLayout::DiskShift => Raid0DiscardMode::DiskShift,
        };
        let mut ranges = Vec::new();
        let Some(d) = self.r0conf().raid0_handle_discard(start, sectors, mode, &mut ranges) else {
            core.bio_io_error(bio, EIO);
            return;
        };
        let bio = match d.remainder {
            Some(_) => {
                let front = md_split_front(core, bio, d.handled.sectors as u32);
                core.submit_bio_noacct(bio);
                front
            }
            None => bio,
        };
        for r in ranges {
            md_submit_discard_bio(core, bio, self.members[r.disk as usize].dev, r.start, r.sectors);
        }
        core.bio_endio(bio, 0);
    }
}
