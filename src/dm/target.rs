//! The device-mapper driver for linear and striped tables (drivers/md/dm.c):
//! `dm_submit_bio` → `dm_split_and_process_bio` →
//! `__split_and_process_bio`, with the targets' `map` from [`super::linear`]
//! and [`super::stripe`].
//!
//! Each call handles one target's worth of the bio: a read or write gets
//! one clone cut to [`DmTarget::max_io_len`] (target end, and for
//! dm-stripe the chunk and dm's `max_sectors`); a discard, secure erase or
//! write zeroes — first split to dm's own limits — gets
//! `num_discard_bios` clones up to the target end. What is left is trimmed
//! off the original bio, traced as a split and resubmitted with
//! `submit_bio_noacct` (the tail of `current->bio_list`), "so it gets
//! handled *after* bios already submitted have been completely processed".
//! A flush sends an empty flush to every device of every target; its data
//! then goes on at once (the kernel resubmits it when the flushes
//! complete).

use crate::bio::{bvec_iter_advance, req, BioId, Op, SECTOR_SHIFT};
use crate::genhd::DevId;
use crate::md::personality::{alloc_bio, clone_part, submit_remapped};
use crate::submit::{BioDriver, BlockCore, EIO};
use crate::trace::Action;

use super::{dm_table_find_target, DmMap, DmTarget};

/// A dm device (`struct mapped_device` with its live table).
pub struct MappedDevice {
    pub targets: Vec<DmTarget>,
    /// For each target, its devices in table order (one for linear, one per
    /// stripe for striped).
    pub devs: Vec<Vec<DevId>>,
}

/// `is_abnormal_io`: ops dm splits to its queue limits and duplicates.
fn is_abnormal_io(op: Op) -> bool {
    matches!(op, Op::Discard | Op::SecureErase | Op::WriteZeroes)
}

impl BioDriver for MappedDevice {
    fn submit_bio(&mut self, core: &mut BlockCore, bio: BioId) {
        self.dm_split_and_process_bio(core, bio);
    }
}

impl MappedDevice {
    /// `dm_table_find_target`, as an index into the table.
    fn target_index(&self, sector: u64) -> Option<usize> {
        let ti = dm_table_find_target(&self.targets, sector)?;
        self.targets.iter().position(|t| std::ptr::eq(t, ti))
    }

    /// `dm_split_and_process_bio`.
    fn dm_split_and_process_bio(&self, core: &mut BlockCore, bio: BioId) {
        let abnormal = is_abnormal_io(core.bio(bio).op);
        let bio = if abnormal {
            match core.bio_split_to_limits(bio) {
                Some((b, _)) => b,
                None => return,
            }
        } else {
            bio
        };
        if core.bio(bio).flags & req::PREFLUSH != 0 {
            self.send_empty_flush(core, bio);
            if core.bio(bio).iter.size == 0 {
                core.bio_endio(bio, 0);
                return;
            }
            core.bio_mut(bio).flags &= !req::PREFLUSH;
        }
        let Some(len) = self.split_and_process_bio(core, bio, abnormal) else {
            core.bio_io_error(bio, EIO);
            return;
        };
        if len < core.bio(bio).sectors() {
            self.resubmit_remainder(core, bio, len);
        } else {
            core.bio_endio(bio, 0);
        }
    }

    /// `__split_and_process_bio`: clone what fits the bio's first target
    /// and map it; returns how many sectors were handled (`None`: no target).
    fn split_and_process_bio(&self, core: &mut BlockCore, bio: BioId, abnormal: bool) -> Option<u32> {
        let b = core.bio(bio);
        let (dm, sector, count) = (b.dev, b.iter.sector, b.sectors());
        let t = self.target_index(sector)?;
        let ti = &self.targets[t];
        let len = if abnormal {
            (ti.begin + ti.len - sector).min(count as u64) as u32
        } else {
            let max_sectors = core.topo.limits(dm).max_sectors;
            ti.max_io_len(sector, max_sectors)?.min(count as u64) as u32
        };
        let io = self.start_io_acct(core, bio, len);
        if abnormal {
            self.process_abnormal_io(core, io, t, sector, len);
        } else {
            self.map_bio(core, io, t, sector, len);
        }
        core.bio_endio(io, 0);
        Some(len)
    }

    /// The `dm_io` of one call: an accounting clone of the handled part,
    /// chained to the original; the target clones complete into it.
    fn start_io_acct(&self, core: &mut BlockCore, bio: BioId, len: u32) -> BioId {
        let dm = core.bio(bio).dev;
        let io = core.bio_alloc_clone(bio, dm);
        core.bio_mut(io).iter.size = len << SECTOR_SHIFT;
        core.bio_chain(io, bio);
        core.bio_start_io_acct(io);
        io
    }

    /// `alloc_tio` + `__map_bio` for a read or write: the clone is mapped
    /// by the target, traced as a remap and submitted.
    fn map_bio(&self, core: &mut BlockCore, io: BioId, t: usize, sector: u64, len: u32) {
        let ti = &self.targets[t];
        let DmMap { dev, sector: to } = ti.map_sector(sector).expect("sector inside its target");
        let flags = core.bio(io).flags;
        let clone = clone_part(core, io, self.devs[t][dev as usize], 0, len, to, flags);
        submit_remapped(core, io, clone, sector);
    }

    /// `__process_abnormal_io` → `__send_duplicate_bios`: one clone per
    /// `num_discard_bios`, each mapped to its own piece; a striped clone
    /// whose stripe holds none of the range is ended unsubmitted.
    fn process_abnormal_io(&self, core: &mut BlockCore, io: BioId, t: usize, sector: u64, len: u32) {
        let b = core.bio(io);
        let (op, flags) = (b.op, b.flags);
        let mut pieces = Vec::new();
        self.targets[t].map_discard(sector, len as u64, &mut pieces);
        for (m, n) in pieces {
            let clone = alloc_bio(core, io, self.devs[t][m.dev as usize], op, flags, m.sector, n as u32);
            submit_remapped(core, io, clone, sector);
        }
    }

    /// `__send_empty_flush`: an empty `REQ_PREFLUSH` write to each device
    /// of each target (`num_flush_bios`: 1 for linear, one per stripe).
    fn send_empty_flush(&self, core: &mut BlockCore, bio: BioId) {
        for devs in &self.devs {
            for &dev in devs {
                let flush = alloc_bio(core, bio, dev, Op::Write, req::PREFLUSH, 0, 0);
                submit_remapped(core, bio, flush, 0);
            }
        }
    }

    /// `bio_trim` of the handled part, `trace_block_split` (of the
    /// remainder itself, as dm does), and `submit_bio_noacct`.
    fn resubmit_remainder(&self, core: &mut BlockCore, bio: BioId, len: u32) {
        let b = core.bio_mut(bio);
        bvec_iter_advance(&b.bvecs, &mut b.iter, len << SECTOR_SHIFT);
        let (dev, sector) = (b.dev, b.iter.sector);
        core.stats[dev as usize].splits += 1;
        core.trace_bio(Action::Split, bio, sector, 0);
        core.submit_bio_noacct(bio);
    }
}
