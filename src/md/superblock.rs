//! Where mdadm puts the md superblock and the data on each member
//! (mdadm's super0.c and super1.c), so that member mappings can add the
//! right `data_offset`.
//!
//! * 0.90: superblock in the last 64 KiB-aligned 64 KiB of the device; data
//!   from sector 0 (`MD_NEW_SIZE_SECTORS`).
//! * 1.0: superblock 8–12 KiB from the end; data from sector 0.
//! * 1.1: superblock at sector 0, 1.2 (mdadm's default): at sector 8 (4 KiB).
//!   Data after a gap that holds the superblock, bad-block log, internal
//!   bitmap and "headroom" for reshapes that move the data offset.
//!
//! The 1.1/1.2 data offset is `validate_geometry1`'s rule (mdadm 3.3+; the
//! headroom came with 3.2.4's "super1: leave more space in front of data by
//! default", the two-chunk floor with cb19a251 for 3.3): headroom starts
//! at 128 MiB and halves while it exceeds 0.1% of the device (while
//! headroom·1024 is above the device size), but never below two chunks; then
//! `data_offset = 12 KiB + bitmap space + headroom`, rounded to a whole MiB —
//! *up* since mdadm 4.1 (795bd44e "super1: Always round data offset to 1M"),
//! *down* (when above 1 MiB) in 3.3–4.0.
//!
//! Example, mdadm ≥ 4.1, 1.2 metadata, 2 GiB members (4194304 sectors),
//! default 512 KiB chunk: bitmap space 4 KiB (8 sectors: the device is not
//! above 8 GiB); headroom 262144 → .. → 4096 sectors (4096·1024 = 4194304 is
//! no longer above the size; 2048 ≥ 2 chunks of 1024 allowed every halving);
//! 24 + 8 + 4096 = 4128 → rounded up to 6144 sectors (3 MiB). mdadm 4.0
//! rounds down to 4096.

use std::fmt;

/// `MD_RESERVED_SECTORS`: the 64 KiB a 0.90 superblock reserves.
const MD_RESERVED_SECTORS: u64 = 128;
/// `ONE_MEG` in sectors.
const ONE_MEG: u64 = 2048;

/// md metadata formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metadata {
    V0_90,
    V1_0,
    V1_1,
    V1_2,
}

impl Metadata {
    /// mdadm's `--metadata` names ("0.90", "1.0", "1.1", "1.2"; "1" and
    /// "default" are 1.2).
    pub fn from_name(s: &str) -> Option<Metadata> {
        Some(match s {
            "0.90" | "0.9" | "0" => Metadata::V0_90,
            "1.0" => Metadata::V1_0,
            "1.1" => Metadata::V1_1,
            "1.2" | "1" | "default" => Metadata::V1_2,
            _ => return None,
        })
    }
}

/// How mdadm rounds the 1.1/1.2 data offset to a MiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataOffsetRounding {
    /// mdadm 3.3–4.0: round down when above 1 MiB.
    Down,
    /// mdadm 4.1+: always round up.
    Up,
}

/// One member's layout as mdadm creates it, in sectors from the device start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberLayout {
    pub super_offset: u64,
    pub data_offset: u64,
    /// Space left for data (mdadm's "freesize": the largest component size
    /// this member allows).
    pub avail_sectors: u64,
}

/// The device cannot even hold the metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooSmall {
    pub metadata: Metadata,
    pub device_sectors: u64,
}

impl fmt::Display for TooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {}-sector device is too small for {:?} metadata", self.device_sectors, self.metadata)
    }
}

impl std::error::Error for TooSmall {}

/// `choose_bm_space`: room reserved for an internal bitmap — 128 KiB above
/// 200 GiB, 64 KiB above 8 GiB, else 4 KiB (nothing under 64 KiB).
pub fn choose_bm_space(devsize: u64) -> u64 {
    if devsize < 64 * 2 {
        0
    } else if devsize - 64 * 2 >= 200 * 1024 * 1024 * 2 {
        128 * 2
    } else if devsize - 4 * 2 > 8 * 1024 * 1024 * 2 {
        64 * 2
    } else {
        4 * 2
    }
}

/// The default 1.1/1.2 data offset (`validate_geometry1`) for a device of
/// `devsize` sectors and a chunk of `chunk_kib` KiB (0 for levels without a
/// chunk, e.g. raid1: then the headroom only follows the 0.1% rule).
pub fn default_data_offset_1x(devsize: u64, chunk_kib: u32, rounding: DataOffsetRounding) -> u64 {
    let mut headroom: u64 = 128 * 1024 * 2;
    let two_chunks = chunk_kib as u64 * 2 * 2;
    while (headroom << 10) > devsize && (chunk_kib == 0 || headroom / 2 >= two_chunks) {
        headroom >>= 1;
    }
    let offset = 12 * 2 + choose_bm_space(devsize) + headroom;
    match rounding {
        DataOffsetRounding::Up => offset.div_ceil(ONE_MEG) * ONE_MEG,
        DataOffsetRounding::Down if offset > ONE_MEG => offset / ONE_MEG * ONE_MEG,
        DataOffsetRounding::Down => offset,
    }
}

/// Where mdadm puts superblock and data on a member of `devsize` sectors
/// when creating an array with `metadata` (no `--data-offset`, bitmap
/// space reserved as for an internal bitmap, no PPL).
pub fn member_layout(metadata: Metadata, devsize: u64, chunk_kib: u32, rounding: DataOffsetRounding) -> Result<MemberLayout, TooSmall> {
    let too_small = || TooSmall { metadata, device_sectors: devsize };
    match metadata {
        // super0's avail_size0/MD_NEW_SIZE_SECTORS: round down to 64 KiB, minus 64 KiB.
        Metadata::V0_90 => {
            if devsize < MD_RESERVED_SECTORS {
                return Err(too_small());
            }
            let sb = (devsize & !(MD_RESERVED_SECTORS - 1)) - MD_RESERVED_SECTORS;
            Ok(MemberLayout { super_offset: sb, data_offset: 0, avail_sectors: sb })
        }
        // validate_geometry1, minor 0: 4 KiB-rounded size minus superblock (8 KiB),
        // bad-block log (4 KiB) and bitmap; the superblock 8–12 KiB from the end.
        Metadata::V1_0 => {
            let overhead = 8 * 2 + 8 + choose_bm_space(devsize);
            let usable = (devsize & !7).checked_sub(overhead).ok_or_else(too_small)?;
            Ok(MemberLayout { super_offset: (devsize - 8 * 2) & !7, data_offset: 0, avail_sectors: usable })
        }
        Metadata::V1_1 | Metadata::V1_2 => {
            let data_offset = default_data_offset_1x(devsize, chunk_kib, rounding);
            let avail = devsize.checked_sub(data_offset).ok_or_else(too_small)?;
            let super_offset = if metadata == Metadata::V1_2 { 8 } else { 0 };
            Ok(MemberLayout { super_offset, data_offset, avail_sectors: avail })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 2 * 1024 * 1024;

    #[test]
    fn v1_2_on_2_gib_members() {
        // Worked in the module doc: headroom 4096, 24 + 8 + 4096 = 4128 → 6144 (up) / 4096 (down).
        assert_eq!(default_data_offset_1x(2 * GIB, 512, DataOffsetRounding::Up), 6144);
        assert_eq!(default_data_offset_1x(2 * GIB, 512, DataOffsetRounding::Down), 4096);
        let l = member_layout(Metadata::V1_2, 2 * GIB, 512, DataOffsetRounding::Up).unwrap();
        assert_eq!(l, MemberLayout { super_offset: 8, data_offset: 6144, avail_sectors: 2 * GIB - 6144 });
    }

    #[test]
    fn large_members_get_the_full_128_mib_headroom() {
        // 1 TiB: 262144·1024 = 268435456 sectors ≤ 2147483648 → no halving; bitmap 128 KiB
        // (above 200 GiB). 24 + 256 + 262144 = 262424 → up to 264192 (129 MiB).
        assert_eq!(default_data_offset_1x(1024 * GIB, 512, DataOffsetRounding::Up), 264_192);
        // 100 GiB (209715200): halve to 131072 (·1024 = 134217728 ≤ size); bitmap 64 KiB.
        // 24 + 128 + 131072 = 131224 → 133120 (65 MiB).
        assert_eq!(default_data_offset_1x(100 * GIB, 512, DataOffsetRounding::Up), 133_120);
    }

    #[test]
    fn chunk_bounds_the_headroom() {
        // 2 GiB with 4 MiB chunks (8192 sectors): halving stops once headroom/2 < 2 chunks = 16384,
        // i.e. at 16384 (16384/2 = 8192 < 16384). 24 + 8 + 16384 = 16416 → 18432.
        assert_eq!(default_data_offset_1x(2 * GIB, 4096, DataOffsetRounding::Up), 18_432);
        // raid1 (no chunk) on 2 GiB: down to 4096 like the 512 KiB case → 6144.
        assert_eq!(default_data_offset_1x(2 * GIB, 0, DataOffsetRounding::Up), 6144);
        // 64 MiB raid1 member (131072): halve while ·1024 > 131072 → 128; 24 + 8 + 128 = 160 → 2048 (up),
        // 160 (down: not above 1 MiB).
        assert_eq!(default_data_offset_1x(131_072, 0, DataOffsetRounding::Up), 2048);
        assert_eq!(default_data_offset_1x(131_072, 0, DataOffsetRounding::Down), 160);
    }

    #[test]
    fn end_of_device_formats_keep_data_at_zero() {
        // 0.90 on 2 GiB + 100 sectors: round down to 128 → 4194304, minus 128 → superblock at 4194176.
        let l = member_layout(Metadata::V0_90, 2 * GIB + 100, 0, DataOffsetRounding::Up).unwrap();
        assert_eq!(l, MemberLayout { super_offset: 4_194_176, data_offset: 0, avail_sectors: 4_194_176 });
        // 1.0 on 2 GiB + 3: superblock at (4194307 − 16) & !7 = 4194288; usable (4194307 & !7) − (16 + 8 + 8)
        // = 4194304 − 32.
        let l = member_layout(Metadata::V1_0, 2 * GIB + 3, 0, DataOffsetRounding::Up).unwrap();
        assert_eq!(l, MemberLayout { super_offset: 4_194_288, data_offset: 0, avail_sectors: 4_194_272 });
        assert!(member_layout(Metadata::V0_90, 100, 0, DataOffsetRounding::Up).is_err());
        assert!(member_layout(Metadata::V1_2, 1000, 0, DataOffsetRounding::Up).is_err());
        assert_eq!(Metadata::from_name("1.2"), Some(Metadata::V1_2));
        assert_eq!(Metadata::from_name("2.0"), None);
    }

    #[test]
    fn bitmap_space_steps() {
        // < 128 → 0; ≤ 8 GiB (+4 KiB) → 8; > 8 GiB → 128; ≥ 200 GiB (+64 KiB) → 256.
        assert_eq!(choose_bm_space(127), 0);
        assert_eq!(choose_bm_space(8 * GIB + 8), 8);
        assert_eq!(choose_bm_space(8 * GIB + 9), 128);
        assert_eq!(choose_bm_space(200 * GIB + 128), 256);
    }
}
