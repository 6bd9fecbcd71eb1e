//! md raid1's bio path (drivers/md/raid1.c): `raid1_make_request`, reads
//! from the mirror `read_balance` picks, writes (and discards) to every
//! mirror.

use crate::bio::{req, BioId, Op};
use crate::limits::{blk_set_stacking_limits, blk_stack_limits, blk_validate_limits, LimitError, LimitsModel, StackMember, StackedLimits, StackingBehaviour};
use crate::submit::BlockCore;

use super::personality::{disk_discards, md_account_bio, md_clone, md_remap, md_split, Mddev};

/// `BARRIER_UNIT_SECTOR_SIZE`: raid1's barrier buckets are 64 MiB.
const BARRIER_UNIT_SECTOR_SIZE: u64 = 1 << 17;

/// `align_to_barrier_unit_end`: a bio may not cross a barrier unit.
fn align_to_barrier_unit_end(start: u64, sectors: u32) -> u32 {
    let len = (start + 1).div_ceil(BARRIER_UNIT_SECTOR_SIZE) * BARRIER_UNIT_SECTOR_SIZE - start;
    len.min(sectors as u64) as u32
}

/// md raid1's limits (`raid1_run` in 6.1, `raid1_set_limits` in 6.12+):
/// no write zeroes, everything else stacked from the mirrors; 7.x sets
/// `chunk_sectors` to the barrier unit.
pub fn raid1_limits(members: &[StackMember], beh: &StackingBehaviour) -> Result<StackedLimits, LimitError> {
    let legacy = beh.model == LimitsModel::Legacy;
    let mut t = blk_set_stacking_limits(legacy);
    t.lim.max_write_zeroes_sectors = 0;
    if beh.raid1_chunk_sectors {
        // 7.x raid1_set_limits: bios are split at barrier units.
        t.lim.chunk_sectors = BARRIER_UNIT_SECTOR_SIZE as u32;
    }
    for m in members {
        blk_stack_limits(&mut t, &m.limits, m.start, legacy);
    }
    if !legacy {
        blk_validate_limits(&mut t, beh.def_max_sectors_cap)?;
    }
    Ok(t)
}

impl Mddev {
    /// `raid1_make_request`.
    #[inline(never)]
    pub(crate) fn raid1_make_request(&mut self, core: &mut BlockCore, bio: BioId) {
        if core.bio(bio).flags & req::PREFLUSH != 0 && self.md_flush_request(core, bio) {
            return;
        }
        let b = core.bio(bio);
        let max = align_to_barrier_unit_end(b.iter.sector, b.sectors());
        let bio = if max < b.sectors() { md_split(core, bio, max) } else { bio };
        md_account_bio(core, bio);
        if core.bio(bio).op == Op::Read {
            self.raid1_read_request(core, bio);
        } else {
            self.raid1_write_request(core, bio);
        }
        core.bio_endio(bio, 0);
    }

    /// `raid1_read_request`: one clone to the mirror `read_balance` picks,
    /// `REQ_SYNC` the only flag kept.
    fn raid1_read_request(&mut self, core: &mut BlockCore, bio: BioId) {
        let b = core.bio(bio);
        let (sector, sectors, flags) = (b.iter.sector, b.sectors(), b.flags);
        let disk = self.raid1_read_balance(core, sector, sectors);
        self.sent(core, disk, sector + sectors as u64);
        self.read_sent(core, bio, disk);
        let m = self.members[disk as usize];
        md_remap(core, bio, m.dev, sector + m.data_offset, flags & req::SYNC, sector);
    }

    /// raid1's `read_balance` on a healthy, in-sync array (6.12's
    /// `choose_best_rdev`; 6.1's loop picks the same): a mirror the read
    /// continues (its last read ended here, or its head is here) keeps the
    /// stream unless the stream has passed `io_opt` on an SSD; otherwise the
    /// mirror with the least I/O pending when any is non-rotational or one is
    /// idle, else the closest head. Ties go to the lower slot.
    fn raid1_read_balance(&mut self, core: &BlockCore, sector: u64, sectors: u32) -> u32 {
        let (mut seq_disk, mut min_pending, mut min_disk, mut closest, mut closest_disk) = (None, u64::MAX, 0, u64::MAX, 0);
        let mut nonrot_disks = 0;
        for d in 0..self.members.len() as u32 {
            let head = self.head(core, d);
            let next_seq_sect = self.mirrors[d as usize].next_seq_sect;
            let mut pending = self.pending(core, d);
            nonrot_disks += self.nonrot(core, d) as u32;
            if next_seq_sect == sector || head == sector {
                if !self.should_choose_next(core, d) {
                    return self.update_read_sectors(d, sector, sectors);
                }
                // Keep the stream only if no other mirror is idle.
                pending += 1;
                seq_disk = Some(d);
            }
            if min_pending > pending {
                (min_pending, min_disk) = (pending, d);
            }
            let dist = sector.abs_diff(head);
            if closest > dist {
                (closest, closest_disk) = (dist, d);
            }
        }
        let disk = match seq_disk {
            Some(d) if min_pending != 0 => d,
            _ if nonrot_disks > 0 || min_pending == 0 => min_disk,
            _ => closest_disk,
        };
        self.update_read_sectors(disk, sector, sectors)
    }

    /// `should_choose_next`: a sequential stream on an SSD longer than its
    /// `io_opt` moves on to an idle mirror.
    fn should_choose_next(&self, core: &BlockCore, disk: u32) -> bool {
        let m = self.mirrors[disk as usize];
        let opt = (core.topo.limits(self.members[disk as usize].dev).io_opt >> 9) as u64;
        self.nonrot(core, disk) && opt > 0 && m.seq_start != u64::MAX && m.next_seq_sect > opt && m.next_seq_sect - opt >= m.seq_start
    }

    /// `update_read_sectors`: the mirror's stream goes on from here.
    fn update_read_sectors(&mut self, disk: u32, sector: u64, sectors: u32) -> u32 {
        let m = &mut self.mirrors[disk as usize];
        if m.next_seq_sect != sector {
            m.seq_start = sector;
        }
        m.next_seq_sect = sector + sectors as u64;
        disk
    }

    /// `raid1_write_request`: a clone per mirror in slot order, keeping
    /// `REQ_SYNC` and `REQ_FUA`; a discard is dropped for a mirror without
    /// discard (`raid1_submit_write`: "Just ignore it").
    fn raid1_write_request(&mut self, core: &mut BlockCore, bio: BioId) {
        let b = core.bio(bio);
        let (md, sector, sectors, op, flags) = (b.dev, b.iter.sector, b.sectors() as u64, b.op, b.flags & (req::SYNC | req::FUA));
        for d in 0..self.members.len() as u32 {
            let (m, disk) = (self.members[d as usize], self.disks[d as usize]);
            if op == Op::Discard && !disk_discards(core, disk) {
                continue;
            }
            self.sent(core, d, sector + sectors);
            let clone = md_clone(core, bio, m.dev, sector + m.data_offset, flags);
            self.md_submit_write(core, md, bio, clone, disk, sector);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_units_are_64_mib() {
        // 131072-sector buckets: from 131000, 72 sectors to the end of the first.
        assert_eq!(align_to_barrier_unit_end(131_000, 2048), 72);
        assert_eq!(align_to_barrier_unit_end(0, 2048), 2048);
        // At a bucket start the whole next bucket is available.
        assert_eq!(align_to_barrier_unit_end(131_072, 200_000), 131_072);
    }

    #[test]
    fn chunk_sectors_is_the_barrier_unit_on_7_x() {
        // 7.2's md0 over two virtio disks showed chunk_sectors 131072.
        let mut m = crate::limits::QueueLimits::stacking();
        (m.max_hw_sectors, m.max_sectors, m.max_dev_sectors) = (2560, 2560, 0);
        let members = vec![StackMember { limits: m.into(), start: 2048 }; 2];
        let l72 = raid1_limits(&members, &StackingBehaviour::v7_2()).unwrap();
        let l612 = raid1_limits(&members, &StackingBehaviour::v6_12()).unwrap();
        assert_eq!((l72.lim.chunk_sectors, l612.lim.chunk_sectors), (131_072, 0));
    }
}
