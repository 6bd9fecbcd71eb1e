//! Write pointers of a host-managed zoned disk (block/blk-zoned.c,
//! drivers/block/null_blk/zoned.c, drivers/scsi/sd_zbc.c).
//!
//! A sequential-write-required zone accepts a write only at its write
//! pointer. Zones start empty (every WP at the zone start) and the model
//! keeps a WP only for zones that were written, so memory grows with the
//! zones touched, not the disk's size. A WRITE or WRITE ZEROES that does
//! not start at the WP, or would cross the zone end, fails with -EIO and
//! leaves the WP where it was; one that fits moves the WP by its length.
//! A ZONE APPEND goes to the WP if the zone has room for it.
//!
//! Where the kernel rejects an out-of-order write differs by version:
//! 6.1 sends it and the device refuses it (null_blk's `null_zone_write`:
//! `sector != zone->wp` is BLK_STS_IOERR; SCSI: "unaligned write command"),
//! 6.12 refuses it before the device (`blk_zone_wplug_prepare_bio`). Both
//! end the bio with -EIO and keep the WP. The model checks when the request
//! is issued ('D'), in issue order, and completes a refused request at once
//! with the error. It does not model 6.12's zone write plugs (one write in
//! flight per zone, bios held in a plug) nor the `NEED_WP_UPDATE` state
//! that fails every later write to a zone after an error from the device.

use std::collections::HashMap;

use crate::bio::Op;

/// The write pointers of one zoned disk.
#[derive(Clone, Debug, Default)]
pub struct ZoneWps {
    /// Zone size in sectors (`chunk_sectors`), a power of two.
    zone_sectors: u64,
    /// Zones at the start of the disk without a WP (conventional).
    nr_conv: u64,
    /// Zone number → WP offset from the zone start, for zones written.
    wp: HashMap<u64, u64>,
}

impl ZoneWps {
    pub fn new(zone_sectors: u64, nr_conv: u64) -> Self {
        assert!(zone_sectors > 0, "a zoned disk has a zone size");
        ZoneWps { zone_sectors, nr_conv, wp: HashMap::new() }
    }

    /// A request of `op` at `sector` for `sectors` reaches the zone:
    /// whether it is accepted (and the WP moved), as the write-pointer
    /// rules say. Ops that do not write are always accepted.
    pub fn write(&mut self, op: Op, sector: u64, sectors: u64) -> bool {
        if !matches!(op, Op::Write | Op::WriteZeroes | Op::ZoneAppend) || sectors == 0 {
            return true;
        }
        let zone = sector / self.zone_sectors;
        if zone < self.nr_conv {
            // A conventional zone takes any write, but not one running on
            // into the sequential zones.
            return (sector + sectors).div_ceil(self.zone_sectors) <= self.nr_conv;
        }
        let offset = sector % self.zone_sectors;
        let wp = self.wp.entry(zone).or_insert(0);
        let at = if op == Op::ZoneAppend { *wp } else { offset };
        if op == Op::ZoneAppend && offset != 0 {
            // A zone append names the zone by its start sector.
            return false;
        }
        if at != *wp || at + sectors > self.zone_sectors {
            return false;
        }
        *wp += sectors;
        true
    }

    /// The WP of `zone` as an offset from its start (`None` for a
    /// conventional zone).
    pub fn wp_offset(&self, zone: u64) -> Option<u64> {
        (zone >= self.nr_conv).then(|| self.wp.get(&zone).copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 MiB zones: 8192 sectors.
    const Z: u64 = 8192;

    #[test]
    fn writes_must_start_at_the_write_pointer() {
        let mut z = ZoneWps::new(Z, 0);
        // 0..1024 at the WP (0): accepted, WP 1024.
        assert!(z.write(Op::Write, 0, 1024));
        assert_eq!(z.wp_offset(0), Some(1024));
        // 2048..3072 skips ahead of the WP: -EIO, WP stays 1024.
        assert!(!z.write(Op::Write, 2048, 1024));
        assert_eq!(z.wp_offset(0), Some(1024));
        // 1024..2048 fills the gap: WP 2048; then the retry at 2048 fits.
        assert!(z.write(Op::Write, 1024, 1024));
        assert!(z.write(Op::Write, 2048, 1024));
        assert_eq!(z.wp_offset(0), Some(3072));
        // Rewriting behind the WP fails too.
        assert!(!z.write(Op::Write, 0, 8));
        // Reads go anywhere.
        assert!(z.write(Op::Read, 4096, 8));
        // Another zone starts empty: its first write must be at its start.
        assert!(!z.write(Op::Write, Z + 8, 8));
        assert!(z.write(Op::WriteZeroes, Z, 8));
        assert_eq!(z.wp_offset(1), Some(8));
        // Zones never written keep no state.
        assert_eq!(z.wp.len(), 2);
        assert_eq!(z.wp_offset(7), Some(0));
    }

    #[test]
    fn a_write_may_not_cross_the_zone_end() {
        let mut z = ZoneWps::new(Z, 0);
        assert!(z.write(Op::Write, 0, Z - 8));
        // 16 sectors at WP 8184 would end at 8200 > 8192: refused.
        assert!(!z.write(Op::Write, Z - 8, 16));
        assert!(z.write(Op::Write, Z - 8, 8));
        // Full: nothing more fits.
        assert_eq!(z.wp_offset(0), Some(Z));
        assert!(!z.write(Op::Write, Z - 8, 8));
    }

    #[test]
    fn zone_append_goes_to_the_write_pointer() {
        let mut z = ZoneWps::new(Z, 0);
        assert!(z.write(Op::ZoneAppend, 0, 64));
        assert!(z.write(Op::ZoneAppend, 0, 64));
        assert_eq!(z.wp_offset(0), Some(128));
        // Not at a zone start: refused.
        assert!(!z.write(Op::ZoneAppend, 128, 64));
    }

    #[test]
    fn conventional_zones_take_any_write() {
        // Two conventional zones, then sequential ones.
        let mut z = ZoneWps::new(Z, 2);
        assert!(z.write(Op::Write, 100, 8));
        assert!(z.write(Op::Write, 8, 8));
        assert!(z.write(Op::Write, 2 * Z - 8, 8));
        // Running from the last conventional zone into the first sequential one.
        assert!(!z.write(Op::Write, 2 * Z - 8, 16));
        assert_eq!(z.wp_offset(1), None);
        assert!(!z.write(Op::Write, 2 * Z + 8, 8));
        assert!(z.write(Op::Write, 2 * Z, 8));
    }
}
