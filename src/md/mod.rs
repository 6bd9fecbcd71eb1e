//! md: the pure mapping arithmetic of drivers/md, and the driver built on it.
//!
//! The arithmetic modules hold the geometry of one personality and the functions
//! that turn an array sector (or a bio's range) into member sectors, named
//! after the kernel function that does the same sum:
//!
//! * [`raid0`]: `create_strip_zones`, `find_zone`/`map_sector`, the chunk split
//!   of `raid0_make_request` and `raid0_handle_discard` (drivers/md/raid0.c).
//! * [`raid10`]: `setup_geo`, `calc_sectors`, `raid10_find_phys` and both
//!   versions of `raid10_handle_discard` (drivers/md/raid10.c).
//! * [`raid5`]: `raid5_compute_sector` for raid4/5/6, the split of
//!   `chunk_aligned_read`, and the stripe_head decomposition of a write
//!   (drivers/md/raid5.c).
//! * [`superblock`]: where mdadm puts the superblock and the data (the data
//!   offset every member mapping adds), from mdadm's super0.c/super1.c.
//!
//! The arithmetic submits no bios and keeps no time: the functions return
//! what the kernel would compute, and the driver decides what to do. All
//! sizes are in 512-byte sectors. Inputs that come from a scenario (member
//! sizes, layouts, chunk sizes, sectors) are validated and never panic;
//! a sector past the end of an array maps to `None`.
//!
//! [`personality`] is the driver itself: `md_submit_bio` and the bio paths
//! of each personality (`raid0_io`, `raid1_io`, `raid10_io`, `raid5_io`),
//! built on the arithmetic above.
//!
//! Queue limits of md devices (`raid0_limits`, `raid10_limits`,
//! `raid5_limits`) live with the rest of the limits code in
//! [`crate::limits`].

pub mod personality;
pub mod raid0;
mod raid0_io;
pub mod raid1_io;
pub mod raid10;
mod raid10_io;
pub mod raid5;
mod raid5_io;
mod raid5_stripe;
pub mod superblock;

/// A range of an array's own sectors (a piece of a bio that md splits off
/// and resubmits to itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorRange {
    pub start: u64,
    pub sectors: u64,
}

impl SectorRange {
    /// One past the last sector.
    pub fn end(&self) -> u64 {
        self.start + self.sectors
    }
}

/// A contiguous range on one member device, in that member's sectors
/// (data offset included): what `md_submit_discard_bio` receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberRange {
    /// The member's slot (`rdev->raid_disk`).
    pub disk: u32,
    pub start: u64,
    pub sectors: u64,
}

/// One end of a discard range in stripe terms: the stripe row it falls in
/// (`first/last_stripe_index`), the position of the member it falls on
/// (`start/end_disk_index`) and the member offset there
/// (`start/end_disk_offset`), as `raid0_handle_discard` and
/// `raid10_handle_discard` compute them. Members before that position have
/// already passed into the next row, members after it have not reached it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Edge {
    pub row: u64,
    pub pos: u32,
    /// Member offset at the member the edge falls on.
    pub offset: u64,
    pub chunk: u64,
}

impl Edge {
    /// The member offset this edge means for the member at stripe position `p`.
    pub fn member_bound(&self, p: u32) -> u64 {
        match p.cmp(&self.pos) {
            std::cmp::Ordering::Less => (self.row + 1) * self.chunk,
            std::cmp::Ordering::Greater => self.row * self.chunk,
            std::cmp::Ordering::Equal => self.offset,
        }
    }
}
