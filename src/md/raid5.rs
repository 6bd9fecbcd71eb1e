//! md raid4/5/6 (drivers/md/raid5.c): where data and parity live, the read
//! fast path's split, and how a write becomes stripe_head work.
//!
//! The array is cut into chunks; `data_disks` consecutive chunks plus their
//! parity (P, and Q for raid6) form a stripe row on all members at the same
//! member offset. The *algorithm* (the md `layout` field) decides which
//! member holds the parity of each row and in which order the data chunks
//! follow it: [`R5Conf::raid5_compute_sector`].
//!
//! Writes are not remapped bio by bio: `raid5_make_request` attaches the bio
//! to `stripe_head`s — one 4 KiB unit (`RAID5_STRIPE_SECTORS`) at the same
//! member sector on every member — and `handle_stripe` then reads what
//! parity needs (read-modify-write or reconstruct-write) and writes the
//! data units and the parity. [`R5Conf::raid5_make_request_write`] returns
//! that plan for a clean, non-degraded array with nothing cached.

use std::fmt;

/// `RAID5_STRIPE_SECTORS` with the default stripe size of one 4 KiB page.
pub const STRIPE_SECTORS: u64 = 8;
/// `RAID5_MAX_REQ_STRIPES`: stripes one request may hold (md's `max_hw_sectors` = this × 8).
pub const RAID5_MAX_REQ_STRIPES: u32 = 256;

/// `ALGORITHM_*`: the md `layout` values of raid5 and raid6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raid5Algorithm {
    LeftAsymmetric = 0,
    RightAsymmetric = 1,
    /// mdadm's default.
    LeftSymmetric = 2,
    RightSymmetric = 3,
    Parity0 = 4,
    /// Also `ALGORITHM_PARITY_N_6`, and what raid4 is.
    ParityN = 5,
    /// DDF raid6 layouts.
    RotatingZeroRestart = 8,
    RotatingNRestart = 9,
    RotatingNContinue = 10,
    /// raid6 with a raid5 layout on all members but the last, Q on the last.
    LeftAsymmetric6 = 16,
    RightAsymmetric6 = 17,
    LeftSymmetric6 = 18,
    RightSymmetric6 = 19,
    Parity06 = 20,
}

impl Raid5Algorithm {
    /// The algorithm a `layout` value names for `level`
    /// (`algorithm_valid_raid5`/`algorithm_valid_raid6`); raid4 ignores it.
    pub fn from_layout(level: u32, layout: u32) -> Option<Raid5Algorithm> {
        use Raid5Algorithm::*;
        let alg = match layout {
            0 => LeftAsymmetric,
            1 => RightAsymmetric,
            2 => LeftSymmetric,
            3 => RightSymmetric,
            4 => Parity0,
            5 => ParityN,
            8 => RotatingZeroRestart,
            9 => RotatingNRestart,
            10 => RotatingNContinue,
            16 => LeftAsymmetric6,
            17 => RightAsymmetric6,
            18 => LeftSymmetric6,
            19 => RightSymmetric6,
            20 => Parity06,
            _ => return None,
        };
        match level {
            4 => Some(ParityN),
            5 if layout <= 5 => Some(alg),
            6 => Some(alg),
            _ => None,
        }
    }
}

/// `rmw_level` (sysfs `rmw_level`): may handle_stripe read-modify-write?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwLevel {
    /// `PARITY_DISABLE_RMW`: always reconstruct-write (raid6 without a
    /// `xor_syndrome` implementation).
    Disable,
    /// `PARITY_ENABLE_RMW` (default): the cheaper of rmw and rcw, rcw on a tie.
    Enable,
    /// `PARITY_PREFER_RMW`: the cheaper, rmw on a tie.
    PreferRmw,
}

/// Why `setup_conf` refuses a raid4/5/6 array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Raid5Error {
    Level(u32),
    /// The layout is not an algorithm of this level.
    Layout { level: u32, layout: u32 },
    /// raid4/5 need 2 members, raid6 4.
    TooFewDisks { level: u32, raid_disks: u32 },
    /// Not a power of two, or not a whole number of pages.
    Chunk(u32),
    DataOffsets { raid_disks: u32, given: usize },
}

impl fmt::Display for Raid5Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Raid5Error::Level(l) => write!(f, "raid level {l} is not 4, 5 or 6"),
            Raid5Error::Layout { level, layout } => write!(f, "layout {layout} is not a raid{level} algorithm"),
            Raid5Error::TooFewDisks { level, raid_disks } => {
                write!(f, "raid{level} needs at least {} members, got {raid_disks}", if *level == 6 { 4 } else { 2 })
            }
            Raid5Error::Chunk(c) => write!(f, "raid4/5/6 chunk of {c} sectors must be a power of two of at least 8 sectors (one page)"),
            Raid5Error::DataOffsets { raid_disks, given } => write!(f, "array of {raid_disks} members got {given} data offsets"),
        }
    }
}

impl std::error::Error for Raid5Error {}

/// `struct r5conf`: the geometry (no reshape) and the members' data offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct R5Conf {
    pub level: u32,
    pub raid_disks: u32,
    pub chunk_sectors: u32,
    pub algorithm: Raid5Algorithm,
    pub data_offset: Vec<u64>,
}

/// What `raid5_compute_sector` returns: the member holding the sector
/// (`dd_idx`), the member sector before the data offset, and the parity
/// members of that stripe row (`sh->pd_idx`, `sh->qd_idx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R5Map {
    pub dd_idx: u32,
    pub sector: u64,
    pub pd_idx: u32,
    pub qd_idx: Option<u32>,
    /// DDF layouts order the Q syndrome's inputs differently.
    pub ddf_layout: bool,
}

/// How `handle_stripe_dirtying` computes new parity for one stripe_head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StripeWriteMode {
    /// Every data unit is overwritten: parity from the new data, no reads.
    FullStripe,
    /// Read-modify-write: read old data of the written units and old parity.
    Rmw,
    /// Reconstruct-write: read the data units not fully overwritten.
    Rcw,
}

/// The work one stripe_head does for a write. Member disks are listed in
/// `ops_run_io` order (highest slot first); every I/O is `STRIPE_SECTORS`
/// at `sector` + that member's data offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripeHeadWrite {
    /// `sh->sector`: the member sector (before the data offset) of the unit.
    pub sector: u64,
    pub pd_idx: u32,
    pub qd_idx: Option<u32>,
    /// Data members the bio writes any part of (`dev->towrite`).
    pub towrite: Vec<u32>,
    /// Data members whose whole unit is written (`R5_OVERWRITE`).
    pub overwrite: Vec<u32>,
    pub mode: StripeWriteMode,
    pub reads: Vec<u32>,
    pub writes: Vec<u32>,
}

/// `setup_conf`'s checks for a raid4/5/6 array (no reshape).
pub fn setup_conf(level: u32, raid_disks: u32, chunk_sectors: u32, layout: u32, data_offset: Vec<u64>) -> Result<R5Conf, Raid5Error> {
    if !(4..=6).contains(&level) {
        return Err(Raid5Error::Level(level));
    }
    let algorithm = Raid5Algorithm::from_layout(level, layout).ok_or(Raid5Error::Layout { level, layout })?;
    if raid_disks < if level == 6 { 4 } else { 2 } {
        return Err(Raid5Error::TooFewDisks { level, raid_disks });
    }
    if chunk_sectors == 0 || chunk_sectors as u64 % STRIPE_SECTORS != 0 || !chunk_sectors.is_power_of_two() {
        return Err(Raid5Error::Chunk(chunk_sectors));
    }
    if data_offset.len() != raid_disks as usize {
        return Err(Raid5Error::DataOffsets { raid_disks, given: data_offset.len() });
    }
    Ok(R5Conf { level, raid_disks, chunk_sectors, algorithm, data_offset })
}

impl R5Conf {
    /// `conf->max_degraded`: parity members per row.
    pub fn max_degraded(&self) -> u32 {
        if self.level == 6 {
            2
        } else {
            1
        }
    }

    pub fn data_disks(&self) -> u32 {
        self.raid_disks - self.max_degraded()
    }

    /// `raid5_compute_sector`: member, member sector and parity members of
    /// array sector `r_sector`.
    pub fn raid5_compute_sector(&self, r_sector: u64) -> R5Map {
        let chunk = self.chunk_sectors as u64;
        let chunk_number = r_sector / chunk;
        let stripe = chunk_number / self.data_disks() as u64;
        let dd = (chunk_number % self.data_disks() as u64) as u32;
        let (dd_idx, pd_idx, qd_idx, ddf_layout) = match self.level {
            4 => (dd, self.data_disks(), None, false),
            5 => {
                let (d, p) = self.place_raid5(stripe, dd);
                (d, p, None, false)
            }
            _ => self.place_raid6(stripe, dd),
        };
        R5Map { dd_idx, sector: stripe * chunk + r_sector % chunk, pd_idx, qd_idx, ddf_layout }
    }

    /// raid5 algorithms: (data member, parity member) of data chunk `dd` in row `stripe`.
    fn place_raid5(&self, stripe: u64, dd: u32) -> (u32, u32) {
        use Raid5Algorithm::*;
        let n = self.raid_disks;
        let rot = (stripe % n as u64) as u32;
        match self.algorithm {
            LeftAsymmetric => skip_parity(dd, self.data_disks() - rot),
            RightAsymmetric => skip_parity(dd, rot),
            LeftSymmetric => follow_parity(dd, self.data_disks() - rot, n),
            RightSymmetric => follow_parity(dd, rot, n),
            Parity0 => (dd + 1, 0),
            // from_layout admits only 0..=5 for raid5.
            _ => (dd, self.data_disks()),
        }
    }

    /// raid6 algorithms: (data member, P, Q, ddf) of data chunk `dd` in row `stripe`.
    fn place_raid6(&self, stripe: u64, dd: u32) -> (u32, u32, Option<u32>, bool) {
        use Raid5Algorithm::*;
        let n = self.raid_disks;
        let rot = |m: u32| (stripe % m as u64) as u32;
        let last = n - 1;
        let (d, p, q, ddf) = match self.algorithm {
            LeftAsymmetric => qd_after_p(dd, last - rot(n), n, false),
            RightAsymmetric => qd_after_p(dd, rot(n), n, false),
            LeftSymmetric => {
                let p = last - rot(n);
                ((p + 2 + dd) % n, p, (p + 1) % n, false)
            }
            RightSymmetric => {
                let p = rot(n);
                ((p + 2 + dd) % n, p, (p + 1) % n, false)
            }
            Parity0 => (dd + 2, 0, 1, false),
            ParityN => (dd, self.data_disks(), self.data_disks() + 1, false),
            RotatingZeroRestart => qd_after_p(dd, rot(n), n, true),
            // LEFT_ASYMMETRIC started one row later: the first row is D D D P Q.
            RotatingNRestart => qd_after_p(dd, last - ((stripe + 1) % n as u64) as u32, n, true),
            RotatingNContinue => {
                let p = last - rot(n);
                ((p + 1 + dd) % n, p, (p + n - 1) % n, true)
            }
            // The raid5 layout on members 0..n-2, Q always on the last member.
            LeftAsymmetric6 | RightAsymmetric6 | LeftSymmetric6 | RightSymmetric6 | Parity06 => {
                let (d, p) = self.place_raid5_on_n_minus_1(stripe, dd);
                (d, p, last, false)
            }
        };
        (d, p, Some(q), ddf)
    }

    /// The `*_6` algorithms: raid5's rotation over the first `n − 1` members.
    fn place_raid5_on_n_minus_1(&self, stripe: u64, dd: u32) -> (u32, u32) {
        use Raid5Algorithm::*;
        let m = self.raid_disks - 1;
        let rot = (stripe % m as u64) as u32;
        match self.algorithm {
            LeftAsymmetric6 => skip_parity(dd, self.data_disks() - rot),
            RightAsymmetric6 => skip_parity(dd, rot),
            LeftSymmetric6 => follow_parity(dd, self.data_disks() - rot, m),
            RightSymmetric6 => follow_parity(dd, rot, m),
            _ => (dd + 1, 0),
        }
    }

    /// `raid5_compute_blocknr`: the array sector of the unit that member
    /// `disk` holds in the stripe_head at member sector `sh_sector` (data
    /// offset excluded); `None` for the parity members (the kernel returns
    /// 0 there). The inverse of [`R5Conf::raid5_compute_sector`] on a row.
    pub fn raid5_compute_blocknr(&self, sh_sector: u64, disk: u32) -> Option<u64> {
        let chunk = self.chunk_sectors as u64;
        let (row, chunk_off) = (sh_sector / chunk, sh_sector % chunk);
        let dd = self.data_disks() as u64;
        (0..dd).map(|i| (row * dd + i) * chunk + chunk_off).find(|&s| self.raid5_compute_sector(s).dd_idx == disk)
    }

    /// The split in `chunk_aligned_read`: a read crossing a chunk boundary
    /// is cut at it (the remainder is resubmitted to md). Returns the
    /// front's size, `None` if the read stays in one chunk.
    pub fn chunk_aligned_read_split(&self, sector: u64, sectors: u32) -> Option<u32> {
        let chunk = self.chunk_sectors;
        let front = chunk - (sector % chunk as u64) as u32;
        (front < sectors).then_some(front)
    }

    /// `raid5_read_one_chunk`'s remap of a read that fits one chunk
    /// (`in_chunk_boundary`): member and member sector, data offset
    /// included. `None` if the read crosses a chunk (it takes the stripe path).
    /// (Degraded members, bad blocks and the journal cache also send a read
    /// to the stripe path; not modelled.)
    pub fn raid5_read_one_chunk(&self, sector: u64, sectors: u32) -> Option<(u32, u64)> {
        let in_chunk = sector % self.chunk_sectors as u64;
        if in_chunk + sectors as u64 > self.chunk_sectors as u64 {
            return None;
        }
        let m = self.raid5_compute_sector(sector);
        Some((m.dd_idx, m.sector + self.data_offset[m.dd_idx as usize]))
    }

    /// `raid5_bio_lowest_chunk_sector`: where `raid5_make_request` starts
    /// walking a bio. If the bio runs from one data chunk into the next
    /// member's chunk of the same row, start at that next chunk's first unit,
    /// which has the lowest chunk offset, so member I/O stays sequential.
    pub fn raid5_bio_lowest_chunk_sector(&self, start: u64, sectors: u64) -> u64 {
        let r_sector = start - start % STRIPE_SECTORS;
        let m = self.raid5_compute_sector(r_sector);
        let chunk_offset = m.sector % self.chunk_sectors as u64;
        let left = self.chunk_sectors as u64 - chunk_offset;
        if left >= sectors {
            return r_sector;
        }
        // The kernel looks at the next member *number*, skipping parity.
        let mut dd = m.dd_idx + 1;
        while dd == m.pd_idx || Some(dd) == m.qd_idx {
            dd += 1;
        }
        if dd >= self.raid_disks {
            r_sector
        } else {
            r_sector + left
        }
    }

    /// `raid5_make_request` for a write of `sectors` at `start`, followed by
    /// `handle_stripe_dirtying` for each stripe_head it touches: appends one
    /// [`StripeHeadWrite`] per stripe_head, in the order the bio is attached
    /// to them (from the lowest chunk sector on, wrapping). Assumes a clean,
    /// in-sync array with nothing cached; `resync_offset` is md's resync
    /// position (`None` = clean): stripe_heads at or past it must
    /// reconstruct-write. The bio is expected to be within the md queue's
    /// limits already (≤ `max_hw_sectors`): the walk keeps one flag per
    /// 4 KiB unit, as the kernel's `sectors_to_do` bitmap does.
    pub fn raid5_make_request_write(&self, start: u64, sectors: u64, rmw_level: RmwLevel, resync_offset: Option<u64>, out: &mut Vec<StripeHeadWrite>) {
        if sectors == 0 {
            return;
        }
        let first = start - start % STRIPE_SECTORS;
        let last = start.saturating_add(sectors);
        let units = (last - first).div_ceil(STRIPE_SECTORS) as usize;
        let mut todo = vec![true; units];
        let s0 = ((self.raid5_bio_lowest_chunk_sector(start, sectors) - first) / STRIPE_SECTORS) as usize;
        for i in 0..units {
            let u = (s0 + i) % units;
            if todo[u] {
                let mut sh = self.add_all_stripe_bios(first + u as u64 * STRIPE_SECTORS, start, last, &mut todo);
                let force_rcw = rmw_level == RmwLevel::Disable || resync_offset.is_some_and(|r| sh.sector >= r);
                self.handle_stripe_dirtying(&mut sh, rmw_level, force_rcw);
                out.push(sh);
            }
        }
    }

    /// `add_all_stripe_bios`: attach the bio [start, last) to every data unit
    /// of the stripe_head holding `logical`, clearing those units from
    /// `todo` (units counted from `start` rounded down to a unit).
    fn add_all_stripe_bios(&self, logical: u64, start: u64, last: u64, todo: &mut [bool]) -> StripeHeadWrite {
        let first = start - start % STRIPE_SECTORS;
        let chunk = self.chunk_sectors as u64;
        let m = self.raid5_compute_sector(logical);
        let (row, chunk_off) = (m.sector / chunk, m.sector % chunk);
        let mut sh = StripeHeadWrite {
            sector: m.sector,
            pd_idx: m.pd_idx,
            qd_idx: m.qd_idx,
            towrite: Vec::new(),
            overwrite: Vec::new(),
            mode: StripeWriteMode::FullStripe,
            reads: Vec::new(),
            writes: Vec::new(),
        };
        for i in 0..self.data_disks() as u64 {
            // The array sector of data unit i of this stripe_head (what `dev->sector` holds).
            let dev_sector = (row * self.data_disks() as u64 + i) * chunk + chunk_off;
            if dev_sector < first || dev_sector >= last {
                continue;
            }
            todo[((dev_sector - first) / STRIPE_SECTORS) as usize] = false;
            let disk = self.raid5_compute_sector(dev_sector).dd_idx;
            sh.towrite.push(disk);
            if start <= dev_sector && last >= dev_sector + STRIPE_SECTORS {
                sh.overwrite.push(disk);
            }
        }
        sh
    }

    /// `handle_stripe_dirtying` on a stripe_head with nothing cached: count
    /// the reads rmw needs (written units + parity) and rcw needs (data units
    /// not overwritten), pick one, and fill `reads`/`writes`.
    pub(crate) fn handle_stripe_dirtying(&self, sh: &mut StripeHeadWrite, rmw_level: RmwLevel, force_rcw: bool) {
        let parity: Vec<u32> = std::iter::once(sh.pd_idx).chain(sh.qd_idx).collect();
        let not_overwritten: Vec<u32> = (0..self.raid_disks).filter(|d| !parity.contains(d) && !sh.overwrite.contains(d)).collect();
        let rmw = sh.towrite.len() + parity.len();
        let rcw = not_overwritten.len();
        let prefer_rmw = rmw_level == RmwLevel::PreferRmw;
        sh.mode = if rcw == 0 {
            StripeWriteMode::FullStripe
        } else if !force_rcw && (rmw < rcw || (rmw == rcw && prefer_rmw)) {
            StripeWriteMode::Rmw
        } else {
            StripeWriteMode::Rcw
        };
        let mut reads = match sh.mode {
            StripeWriteMode::FullStripe => Vec::new(),
            StripeWriteMode::Rmw => sh.towrite.iter().chain(&parity).copied().collect(),
            StripeWriteMode::Rcw => not_overwritten,
        };
        let mut writes: Vec<u32> = sh.towrite.iter().chain(&parity).copied().collect();
        // ops_run_io walks the members from the highest slot down.
        reads.sort_unstable_by(|a, b| b.cmp(a));
        writes.sort_unstable_by(|a, b| b.cmp(a));
        (sh.reads, sh.writes) = (reads, writes);
    }
}

/// Asymmetric layouts: data chunks fill the members in order, stepping over
/// the parity member `p`.
fn skip_parity(dd: u32, p: u32) -> (u32, u32) {
    (if dd >= p { dd + 1 } else { dd }, p)
}

/// Symmetric layouts: data chunks start right after the parity member `p`
/// and wrap around the `n` members.
fn follow_parity(dd: u32, p: u32, n: u32) -> (u32, u32) {
    ((p + 1 + dd) % n, p)
}

/// raid6 asymmetric layouts: Q follows P, except that P on the last member
/// puts Q on the first ("Q D D D P"); data steps over both.
fn qd_after_p(dd: u32, p: u32, n: u32, ddf: bool) -> (u32, u32, u32, bool) {
    if p == n - 1 {
        (dd + 1, p, 0, ddf)
    } else if dd >= p {
        (dd + 2, p, p + 1, ddf)
    } else {
        (dd, p, p + 1, ddf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(level: u32, disks: u32, chunk: u32, layout: u32) -> R5Conf {
        setup_conf(level, disks, chunk, layout, vec![0; disks as usize]).unwrap()
    }

    /// (data members of chunks in row order, P, Q) for each stripe row `0..rows`.
    fn rows(c: &R5Conf, rows: u64) -> Vec<(Vec<u32>, u32, Option<u32>)> {
        let chunk = c.chunk_sectors as u64;
        let dd = c.data_disks() as u64;
        (0..rows)
            .map(|r| {
                let maps: Vec<R5Map> = (0..dd).map(|i| c.raid5_compute_sector((r * dd + i) * chunk)).collect();
                (maps.iter().map(|m| m.dd_idx).collect(), maps[0].pd_idx, maps[0].qd_idx)
            })
            .collect()
    }

    #[test]
    fn four_disk_left_symmetric_matches_the_spec() {
        // Spec §5.1: row 0 P on 3, D0-D2 on 0,1,2; row 1 P on 2, D3 on 3, D4 on 0, D5 on 1;
        // row 2 P on 1, D6 on 2, D7 on 3, D8 on 0; row 3 P on 0, D9-D11 on 1,2,3.
        let c = conf(5, 4, 128, 2);
        assert_eq!(
            rows(&c, 4),
            vec![(vec![0, 1, 2], 3, None), (vec![3, 0, 1], 2, None), (vec![2, 3, 0], 1, None), (vec![1, 2, 3], 0, None)]
        );
        // Member sector: D4 is array chunk 4 = row 1 → member 0 at 1·128; 5 sectors in → 133.
        let m = c.raid5_compute_sector(4 * 128 + 5);
        assert_eq!((m.dd_idx, m.sector), (0, 133));
    }

    #[test]
    fn eight_disk_left_symmetric_rotates_parity_down() {
        // pd = data_disks − (row mod 8) = 7 − row mod 8: 7, 6, 5, .. 0, then 7 again at row 8;
        // data starts right after P: first data member (pd + 1) mod 8.
        let c = conf(5, 8, 128, 2);
        let r = rows(&c, 9);
        let parity: Vec<u32> = r.iter().map(|x| x.1).collect();
        assert_eq!(parity, vec![7, 6, 5, 4, 3, 2, 1, 0, 7]);
        let first: Vec<u32> = r.iter().map(|x| x.0[0]).collect();
        assert_eq!(first, vec![0, 7, 6, 5, 4, 3, 2, 1, 0]);
        // Row 1 in full: P on 6, D7..D13 on 7, 0, 1, 2, 3, 4, 5.
        assert_eq!(r[1].0, vec![7, 0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn raid5_other_algorithms() {
        // 4 members. left-asymmetric: row 0 P 3, data 0 1 2; row 1 P 2, data 0 1 3.
        assert_eq!(rows(&conf(5, 4, 128, 0), 2), vec![(vec![0, 1, 2], 3, None), (vec![0, 1, 3], 2, None)]);
        // right-asymmetric: row 0 P 0, data 1 2 3; row 1 P 1, data 0 2 3.
        assert_eq!(rows(&conf(5, 4, 128, 1), 2), vec![(vec![1, 2, 3], 0, None), (vec![0, 2, 3], 1, None)]);
        // right-symmetric: row 0 P 0, data 1 2 3; row 1 P 1, data 2 3 0.
        assert_eq!(rows(&conf(5, 4, 128, 3), 2), vec![(vec![1, 2, 3], 0, None), (vec![2, 3, 0], 1, None)]);
        // parity-0 and parity-N: fixed parity member.
        assert_eq!(rows(&conf(5, 4, 128, 4), 2), vec![(vec![1, 2, 3], 0, None); 2]);
        assert_eq!(rows(&conf(5, 4, 128, 5), 2), vec![(vec![0, 1, 2], 3, None); 2]);
        // raid4 ignores the layout: parity on the last member.
        assert_eq!(rows(&conf(4, 4, 128, 0), 2), vec![(vec![0, 1, 2], 3, None); 2]);
    }

    #[test]
    fn raid6_algorithms() {
        // 5 members, 3 data. left-symmetric: pd = 4 − row mod 5, qd = pd + 1 mod 5, data from pd + 2.
        // row 0: P 4, Q 0, data 1 2 3; row 1: P 3, Q 4, data 0 1 2; row 2: P 2, Q 3, data 4 0 1.
        assert_eq!(rows(&conf(6, 5, 128, 2), 3), vec![(vec![1, 2, 3], 4, Some(0)), (vec![0, 1, 2], 3, Some(4)), (vec![4, 0, 1], 2, Some(3))]);
        // left-asymmetric: row 0 "Q D D D P"; row 1 P 3 Q 4, data 0 1 2; row 2 P 2 Q 3, data 0 1 4.
        assert_eq!(rows(&conf(6, 5, 128, 0), 3), vec![(vec![1, 2, 3], 4, Some(0)), (vec![0, 1, 2], 3, Some(4)), (vec![0, 1, 4], 2, Some(3))]);
        // left-symmetric-6: raid5 left-symmetric on members 0-3 (pd = 3 − row mod 4), Q on 4.
        assert_eq!(rows(&conf(6, 5, 128, 18), 2), vec![(vec![0, 1, 2], 3, Some(4)), (vec![3, 0, 1], 2, Some(4))]);
        // parity-N: P 3, Q 4; parity-0-6: P 0, data 1 2 3, Q 4.
        assert_eq!(rows(&conf(6, 5, 128, 5), 1), vec![(vec![0, 1, 2], 3, Some(4))]);
        assert_eq!(rows(&conf(6, 5, 128, 20), 1), vec![(vec![1, 2, 3], 0, Some(4))]);
        // DDF rotating-N-continue: Q before P: row 0 P 4, Q 3, data 0 1 2.
        assert_eq!(rows(&conf(6, 5, 128, 10), 1), vec![(vec![0, 1, 2], 4, Some(3))]);
        // DDF rotating-N-restart: first row D D D P Q.
        assert_eq!(rows(&conf(6, 5, 128, 9), 1), vec![(vec![0, 1, 2], 3, Some(4))]);
        assert!(conf(6, 5, 128, 9).raid5_compute_sector(0).ddf_layout);
    }

    #[test]
    fn bad_geometries_are_refused() {
        assert_eq!(setup_conf(3, 4, 128, 2, vec![0; 4]).unwrap_err(), Raid5Error::Level(3));
        assert_eq!(setup_conf(5, 4, 128, 16, vec![0; 4]).unwrap_err(), Raid5Error::Layout { level: 5, layout: 16 });
        assert_eq!(setup_conf(6, 4, 128, 6, vec![0; 4]).unwrap_err(), Raid5Error::Layout { level: 6, layout: 6 });
        assert_eq!(setup_conf(6, 3, 128, 2, vec![0; 3]).unwrap_err(), Raid5Error::TooFewDisks { level: 6, raid_disks: 3 });
        assert_eq!(setup_conf(5, 4, 96, 2, vec![0; 4]).unwrap_err(), Raid5Error::Chunk(96));
        assert_eq!(setup_conf(5, 4, 4, 2, vec![0; 4]).unwrap_err(), Raid5Error::Chunk(4));
        assert_eq!(setup_conf(5, 4, 128, 2, vec![0; 2]).unwrap_err(), Raid5Error::DataOffsets { raid_disks: 4, given: 2 });
    }

    #[test]
    fn compute_blocknr_inverts_compute_sector() {
        // 4 members LS, chunk 128. Row 1 (member sector 128..255): P on 2, D3 on 3, D4 on 0, D5 on 1.
        // Member 0 at member sector 133 holds D4 + 5 = 4·128 + 5 = 517; member 2 is parity.
        let c = conf(5, 4, 128, 2);
        assert_eq!(c.raid5_compute_blocknr(133, 0), Some(517));
        assert_eq!(c.raid5_compute_blocknr(133, 3), Some(3 * 128 + 5));
        assert_eq!(c.raid5_compute_blocknr(133, 2), None);
    }

    #[test]
    fn aligned_read_split_and_remap() {
        let c = setup_conf(5, 4, 128, 2, vec![2048; 4]).unwrap();
        // 100 mod 128 = 100 → 28 to the chunk end.
        assert_eq!(c.chunk_aligned_read_split(100, 64), Some(28));
        assert_eq!(c.chunk_aligned_read_split(128, 128), None);
        // Array sector 4·128 + 5 (D4): member 0 at 133, + data offset 2048.
        assert_eq!(c.raid5_read_one_chunk(517, 8), Some((0, 2181)));
        assert_eq!(c.raid5_read_one_chunk(100, 64), None);
    }

    #[test]
    fn full_stripe_write_needs_no_reads() {
        // 4 members LS, chunk 128: [0, 384) is the whole of row 0. Lowest chunk sector: unit 0 is 128
        // from its chunk end, less than 384, next member 1 is data → start at 128 (D1's first unit),
        // whose stripe_head is sector 0. Then units of D1 continue: heads 8, 16, .. 120, in order.
        let c = conf(5, 4, 128, 2);
        assert_eq!(c.raid5_bio_lowest_chunk_sector(0, 384), 128);
        let mut out = Vec::new();
        c.raid5_make_request_write(0, 384, RmwLevel::Enable, None, &mut out);
        assert_eq!(out.iter().map(|s| s.sector).collect::<Vec<_>>(), (0..16).map(|i| i * 8).collect::<Vec<_>>());
        for sh in &out {
            assert_eq!((sh.mode, sh.reads.len()), (StripeWriteMode::FullStripe, 0));
            assert_eq!(sh.writes, vec![3, 2, 1, 0]);
            assert_eq!(sh.overwrite, vec![0, 1, 2]);
        }
    }

    #[test]
    fn small_write_reads_by_cost() {
        // 4 KiB at 0 on 4 members: written D0; rmw reads D0 + P = 2, rcw reads D1, D2 = 2.
        // A tie: rcw by default, rmw with PREFER_RMW. Either way it writes D0 and P.
        let c = conf(5, 4, 128, 2);
        let mut out = Vec::new();
        c.raid5_make_request_write(0, 8, RmwLevel::Enable, None, &mut out);
        assert_eq!((out[0].mode, out[0].reads.clone(), out[0].writes.clone()), (StripeWriteMode::Rcw, vec![2, 1], vec![3, 0]));
        out.clear();
        c.raid5_make_request_write(0, 8, RmwLevel::PreferRmw, None, &mut out);
        assert_eq!((out[0].mode, out[0].reads.clone()), (StripeWriteMode::Rmw, vec![3, 0]));
        // 6 members (5 data): rmw 2 reads < rcw 4 → rmw. Row 0 P on 5.
        let c6 = conf(5, 6, 128, 2);
        out.clear();
        c6.raid5_make_request_write(0, 8, RmwLevel::Enable, None, &mut out);
        assert_eq!((out[0].mode, out[0].reads.clone()), (StripeWriteMode::Rmw, vec![5, 0]));
        // ... unless the range is still being resynced: rcw reads the other 4 data units.
        out.clear();
        c6.raid5_make_request_write(0, 8, RmwLevel::Enable, Some(0), &mut out);
        assert_eq!((out[0].mode, out[0].reads.clone()), (StripeWriteMode::Rcw, vec![4, 3, 2, 1]));
        // A 2 KiB write [2, 6) is not an overwrite: rmw 2 (D0, P) < rcw 3 (D0, D1, D2).
        out.clear();
        c.raid5_make_request_write(2, 4, RmwLevel::Enable, None, &mut out);
        assert_eq!((out[0].towrite.clone(), out[0].overwrite.clone(), out[0].mode), (vec![0], vec![], StripeWriteMode::Rmw));
        assert_eq!(out[0].reads, vec![3, 0]);
    }

    #[test]
    fn raid6_small_write_reconstructs() {
        // 5 members LS raid6, row 0 P 4, Q 0, D0 on 1: rmw reads D0 + P + Q = 3, rcw reads D1, D2 = 2 → rcw;
        // writes D0, P and Q.
        let c = conf(6, 5, 128, 2);
        let mut out = Vec::new();
        c.raid5_make_request_write(0, 8, RmwLevel::Enable, None, &mut out);
        let sh = &out[0];
        assert_eq!((sh.pd_idx, sh.qd_idx, sh.mode), (4, Some(0), StripeWriteMode::Rcw));
        assert_eq!((sh.reads.clone(), sh.writes.clone()), (vec![3, 2], vec![4, 1, 0]));
    }

    #[test]
    fn every_unit_of_a_write_is_attached_once() {
        // The towrite members of all stripe_heads are exactly the (member, member sector) of the 4 KiB
        // units the bio touches, by raid5_compute_sector, for raid5 and raid6 layouts.
        for (level, disks, layout) in [(5, 4, 2), (5, 5, 0), (6, 6, 2), (6, 5, 18), (4, 4, 0)] {
            let c = conf(level, disks, 16, layout);
            for (start, sectors) in [(0, 8), (3, 100), (40, 300), (17, 1)] {
                let mut out = Vec::new();
                c.raid5_make_request_write(start, sectors, RmwLevel::Enable, None, &mut out);
                let mut got: Vec<(u32, u64)> = out.iter().flat_map(|sh| sh.towrite.iter().map(move |&d| (d, sh.sector))).collect();
                let first = start - start % STRIPE_SECTORS;
                let mut want: Vec<(u32, u64)> = (first..start + sectors)
                    .step_by(STRIPE_SECTORS as usize)
                    .map(|u| c.raid5_compute_sector(u))
                    .map(|m| (m.dd_idx, m.sector))
                    .collect();
                got.sort();
                want.sort();
                assert_eq!(got, want, "raid{level} {disks} members layout {layout}: write {start}+{sectors}");
            }
        }
    }

    #[test]
    fn write_across_a_chunk_starts_at_the_lowest_chunk_offset() {
        // 4 members LS, chunk 128; write [120, 136): unit [120,128) is D0 (member 0, member sector 120),
        // unit [128,136) is D1 (member 1, member sector 0). Unit 0 is 8 from its chunk end < 16 and member 1
        // is data → start at 128: stripe_head 0 first (member 1), then 120 (member 0).
        let c = conf(5, 4, 128, 2);
        assert_eq!(c.raid5_bio_lowest_chunk_sector(120, 16), 128);
        let mut out = Vec::new();
        c.raid5_make_request_write(120, 16, RmwLevel::Enable, None, &mut out);
        let got: Vec<(u64, Vec<u32>)> = out.iter().map(|s| (s.sector, s.towrite.clone())).collect();
        assert_eq!(got, vec![(0, vec![1]), (120, vec![0])]);
        // Row 0 of a left-symmetric 4-member array: D2 on member 2, next member 3 is P → no next data
        // member → the walk starts at the bio's own first unit.
        assert_eq!(c.raid5_bio_lowest_chunk_sector(2 * 128 + 120, 16), 2 * 128 + 120);
    }
}
