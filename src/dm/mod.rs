//! device-mapper tables and the pure mapping of the linear and striped
//! targets (drivers/md/dm-table.c, dm.c, dm-linear.c, dm-stripe.c).
//!
//! A table is what `dmsetup table` prints: one line per target,
//! `<start> <length> <target type> <arguments...>`, in sectors. Targets must
//! tile the device from sector 0 without gaps (`dm_table_add_target`).
//! [`parse_table`] turns the text into typed [`DmTarget`]s, refusing what
//! the kernel refuses with an error naming the line and field.
//!
//! How dm splits I/O (`dm_split_and_process_bio`): a read or write is cut
//! to [`DmTarget::max_io_len`] — the end of its target and, for targets that
//! set `max_io_len` (dm-stripe: the chunk), the next chunk boundary and the
//! dm queue's `max_sectors` — and the remainder is resubmitted. Discards and
//! write zeroes are cloned once per `num_discard_bios` (1 for linear, one
//! per stripe for striped) and each clone maps its own piece.
//!
//! The driver that does this with real bios is [`target::MappedDevice`].
//!
//! The striped target's queue-limit hints are `dm_stripe_io_hints` in
//! [`crate::limits`]. dm-crypt ([`crypt`], [`crypt_io`]) maps like linear
//! but encrypts on the way: its table, cut and hints in `crypt`, its
//! queues and CPU cost in `crypt_io`.

use std::fmt;

pub mod crypt;
pub mod crypt_io;
pub mod linear;
pub mod stripe;
pub mod target;

use crypt::CryptC;
use linear::LinearC;
use stripe::StripeC;

/// A table line the kernel (or dmsetup) would refuse: 1-based line number,
/// the field at fault, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    pub line: usize,
    pub field: String,
    pub msg: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dm table line {}: {}: {}", self.line, self.field, self.msg)
    }
}

impl std::error::Error for TableError {}

/// An error inside one target's arguments, before the line number is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    pub field: String,
    pub msg: String,
}

impl ArgError {
    pub(crate) fn new(field: impl Into<String>, msg: impl Into<String>) -> ArgError {
        ArgError { field: field.into(), msg: msg.into() }
    }
}

/// A target's type and its constructor's result (`ti->private`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetKind {
    Linear(LinearC),
    Striped(StripeC),
    Crypt(CryptC),
}

/// `struct dm_target`: where the target sits in the dm device and what it maps to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmTarget {
    pub begin: u64,
    pub len: u64,
    pub kind: TargetKind,
    /// `ti->max_io_len` (0 = none): reads and writes may not cross a multiple of it.
    pub max_io_len: u32,
    /// `ti->num_discard_bios`: clones per discard (and write zeroes).
    pub num_discard_bios: u32,
}

/// Where one dm sector goes: index of the target's device (0 for linear,
/// the stripe for striped) and the sector on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmMap {
    pub dev: u32,
    pub sector: u64,
}

/// Parse a whole table (blank lines and `#` comments are skipped) and check
/// that the targets tile the device from 0.
pub fn parse_table(text: &str) -> Result<Vec<DmTarget>, TableError> {
    let mut targets: Vec<DmTarget> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let ti = parse_table_line(line, i + 1)?;
        // adjoin(): the first target starts at 0, each next one where the previous ended.
        let want = targets.last().map_or(0, |p| p.begin + p.len);
        if ti.begin != want {
            return Err(TableError { line: i + 1, field: "start".into(), msg: format!("gap in table: target starts at {} but the previous one ends at {want}", ti.begin) });
        }
        targets.push(ti);
    }
    Ok(targets)
}

/// `dm_table_add_target` for one line (`line_no` only labels errors):
/// start and length, the target type, then the type's constructor.
pub fn parse_table_line(line: &str, line_no: usize) -> Result<DmTarget, TableError> {
    let err = |field: &str, msg: String| TableError { line: line_no, field: field.into(), msg };
    let args = dm_split_args(line);
    let [start, len, kind, rest @ ..] = args.as_slice() else {
        return Err(err("target", format!("expected '<start> <length> <type> <arguments>', got {} field(s)", args.len())));
    };
    let begin = parse_sectors(start).map_err(|m| err("start", m))?;
    let len = parse_sectors(len).map_err(|m| err("length", m))?;
    if len == 0 {
        return Err(err("length", "zero-length target".into()));
    }
    // "too large device": the end must fit in LLONG_MAX bytes.
    if begin.checked_add(len).map_or(true, |end| end > (i64::MAX as u64) >> 9) {
        return Err(err("length", format!("target {begin}+{len} is too large a device")));
    }
    let argv: Vec<&str> = rest.iter().map(String::as_str).collect();
    let ctr = match kind.as_str() {
        "linear" => linear::linear_ctr(&argv).map(|c| (TargetKind::Linear(c), 0, 1)),
        "striped" => stripe::stripe_ctr(len, &argv).map(|c| {
            let (chunk, n) = (c.chunk_size, c.stripes);
            (TargetKind::Striped(c), chunk, n)
        }),
        // allow_discards sets num_discard_bios = 1; without it dm-crypt takes none.
        "crypt" => crypt::crypt_ctr(len, &argv).map(|c| {
            let discards = c.flags.allow_discards as u32;
            (TargetKind::Crypt(c), 0, discards)
        }),
        other => return Err(err("target", format!("unknown target type '{other}' (supported: linear, striped, crypt)"))),
    };
    let (kind, max_io_len, num_discard_bios) = ctr.map_err(|e| err(&e.field, e.msg))?;
    Ok(DmTarget { begin, len, kind, max_io_len, num_discard_bios })
}

/// A decimal sector count (what dmsetup's `%llu` and the kernel's
/// `sscanf("%llu%c")` accept, without sign tricks).
pub(crate) fn parse_sectors(s: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{s}' is not a decimal number of sectors"));
    }
    s.parse::<u64>().map_err(|_| format!("'{s}' does not fit in 64 bits"))
}

/// `dm_split_args`: whitespace-separated words, a backslash quoting the
/// next character (so device paths may contain spaces).
pub fn dm_split_args(input: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = input.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(q) = chars.next() {
                word.get_or_insert_with(String::new).push(q);
                continue;
            }
        }
        if c.is_whitespace() {
            out.extend(word.take());
        } else {
            word.get_or_insert_with(String::new).push(c);
        }
    }
    out.extend(word);
    out
}

/// `dm_table_find_target`: the target holding `sector`, if any.
pub fn dm_table_find_target(targets: &[DmTarget], sector: u64) -> Option<&DmTarget> {
    targets.iter().find(|t| sector >= t.begin && sector - t.begin < t.len)
}

/// `blk_boundary_sectors_left` (6.1: `blk_chunk_sectors_left`): sectors
/// from `offset` to the next multiple of `boundary`, any boundary.
fn boundary_sectors_left(offset: u64, boundary: u32) -> u64 {
    boundary as u64 - offset % boundary as u64
}

impl DmTarget {
    /// `max_io_len`: how much of a read/write starting at `sector` one clone
    /// may take — to the end of the target, and for targets with a
    /// `max_io_len` also to the next multiple of it (counted from the
    /// target's start) and at most the dm queue's `max_sectors`.
    /// `None` if `sector` is outside the target.
    pub fn max_io_len(&self, sector: u64, dm_max_sectors: u32) -> Option<u64> {
        let offset = sector.checked_sub(self.begin).filter(|&o| o < self.len)?;
        let len = self.len - offset;
        if self.max_io_len == 0 {
            return Some(len);
        }
        Some(len.min((dm_max_sectors as u64).min(boundary_sectors_left(offset, self.max_io_len))))
    }

    /// The target's `map` for a read/write at `sector`: which device and
    /// sector (`linear_map_sector`, `stripe_map_sector` + `physical_start`).
    pub fn map_sector(&self, sector: u64) -> Option<DmMap> {
        let offset = sector.checked_sub(self.begin).filter(|&o| o < self.len)?;
        Some(match &self.kind {
            TargetKind::Linear(lc) => DmMap { dev: 0, sector: lc.linear_map_sector(offset) },
            TargetKind::Crypt(cc) => DmMap { dev: 0, sector: cc.start + offset },
            TargetKind::Striped(sc) => {
                let (stripe, on_dev) = sc.stripe_map_sector(offset);
                DmMap { dev: stripe, sector: on_dev + sc.stripe[stripe as usize].physical_start }
            }
        })
    }

    /// Map a discard (or write zeroes) clone set: the part of [start,
    /// start+sectors) inside this target, cloned `num_discard_bios` times,
    /// each clone mapped to its device (`stripe_map_range` ends clones that
    /// miss their stripe). Appends (device, sector, length) in clone order.
    pub fn map_discard(&self, start: u64, sectors: u64, out: &mut Vec<(DmMap, u64)>) {
        let lo = start.max(self.begin);
        let hi = start.saturating_add(sectors).min(self.begin + self.len);
        if lo >= hi {
            return;
        }
        let (b, e) = (lo - self.begin, hi - self.begin);
        match &self.kind {
            TargetKind::Linear(lc) => out.push((DmMap { dev: 0, sector: lc.linear_map_sector(b) }, e - b)),
            TargetKind::Crypt(cc) => out.push((DmMap { dev: 0, sector: cc.start + b }, e - b)),
            TargetKind::Striped(sc) => {
                for t in 0..sc.stripes {
                    if let Some((sector, len)) = sc.stripe_map_range(b, e, t) {
                        out.push((DmMap { dev: t, sector }, len));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRIPED3: &str = "0 6291456 striped 3 128 /dev/sdb 0 /dev/sdc 0 /dev/sdd 0";

    fn line_err(line: &str) -> TableError {
        parse_table(line).unwrap_err()
    }

    #[test]
    fn parses_linear_and_striped_lines() {
        let t = parse_table("0 2097152 linear /dev/sdb 2048\n").unwrap();
        assert_eq!(t[0].begin, 0);
        assert_eq!(t[0].len, 2_097_152);
        assert_eq!(t[0].kind, TargetKind::Linear(LinearC { dev: "/dev/sdb".into(), start: 2048 }));
        assert_eq!((t[0].max_io_len, t[0].num_discard_bios), (0, 1));
        let t = parse_table(STRIPED3).unwrap();
        let TargetKind::Striped(sc) = &t[0].kind else { panic!("not striped") };
        // width = 6291456 / 3 = 2097152; max_io_len = chunk; one discard clone per stripe.
        assert_eq!((sc.stripes, sc.chunk_size, sc.stripe_width), (3, 128, 2_097_152));
        assert_eq!(sc.stripe.iter().map(|s| s.dev.as_str()).collect::<Vec<_>>(), ["/dev/sdb", "/dev/sdc", "/dev/sdd"]);
        assert_eq!((t[0].max_io_len, t[0].num_discard_bios), (128, 3));
    }

    #[test]
    fn tables_must_tile_from_zero() {
        let two = "0 1000 linear /dev/sdb 0\n# second half\n\n1000 1000 linear /dev/sdc 0\n";
        assert_eq!(parse_table(two).unwrap().len(), 2);
        let e = parse_table("0 1000 linear /dev/sdb 0\n1001 10 linear /dev/sdc 0").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "start"));
        assert_eq!(line_err("8 1000 linear /dev/sdb 0").field, "start");
    }

    #[test]
    fn errors_name_the_field() {
        let e = line_err("0 0 linear /dev/sdb 0");
        assert_eq!((e.line, e.field.as_str(), e.msg.as_str()), (1, "length", "zero-length target"));
        assert_eq!(line_err("x 10 linear /dev/sdb 0").field, "start");
        assert_eq!(line_err("0 1e3 linear /dev/sdb 0").field, "length");
        assert_eq!(line_err("0 10 mirror /dev/sdb 0").field, "target");
        assert_eq!(line_err("0 10").field, "target");
        assert_eq!(line_err("0 18014398509481984 linear /dev/sdb 0").field, "length");
        let e = line_err("0 10 linear /dev/sdb");
        assert_eq!((e.field.as_str(), e.msg.as_str()), ("arguments", "linear takes <device> <offset>, got 1 argument(s)"));
        assert_eq!(line_err("0 10 linear /dev/sdb -5").field, "offset");
        // striped: length not divisible by the stripe count, then by the chunk.
        assert_eq!(line_err("0 6291455 striped 3 128 /dev/sdb 0 /dev/sdc 0 /dev/sdd 0").field, "length");
        assert_eq!(line_err("0 6291456 striped 3 100 /dev/sdb 0 /dev/sdc 0 /dev/sdd 0").field, "length");
        assert_eq!(line_err("0 6291456 striped 0 128").field, "stripes");
        assert_eq!(line_err("0 6291456 striped 3 0 /dev/sdb 0 /dev/sdc 0 /dev/sdd 0").field, "chunk_size");
        let e = line_err("0 6291456 striped 3 128 /dev/sdb 0 /dev/sdc 0");
        assert_eq!((e.field.as_str(), e.msg.as_str()), ("arguments", "3 stripes need 3 <device> <offset> pairs, got 4 argument(s) after the chunk size"));
        assert_eq!(line_err("0 6291456 striped 3 128 /dev/sdb 0 /dev/sdc x /dev/sdd 0").field, "stripe 1 offset");
    }

    #[test]
    fn split_args_quotes_with_backslash() {
        assert_eq!(dm_split_args("  a\\ b  c\\\\d e "), vec!["a b", "c\\d", "e"]);
    }

    #[test]
    fn linear_maps_with_offset() {
        let t = parse_table("0 2097152 linear /dev/sdb 2048").unwrap();
        assert_eq!(t[0].map_sector(100), Some(DmMap { dev: 0, sector: 2148 }));
        assert_eq!(t[0].map_sector(2_097_152), None);
        // No max_io_len: a clone runs to the target end.
        assert_eq!(t[0].max_io_len(100, 2560), Some(2_097_052));
    }

    #[test]
    fn striped_over_three_devices_maps_reads_and_writes() {
        let t = &parse_table(STRIPED3).unwrap()[0];
        // Chunk 128. Sector 128 is chunk 1 → stripe 1 at 0; 384 is chunk 3 → stripe 0, its 2nd chunk (128).
        assert_eq!(t.map_sector(128), Some(DmMap { dev: 1, sector: 0 }));
        assert_eq!(t.map_sector(384), Some(DmMap { dev: 0, sector: 128 }));
        // 1000: chunk 7 (896..1023), 104 in; stripe 7 mod 3 = 1, its chunk 7/3 = 2 → 256 + 104 = 360.
        assert_eq!(t.map_sector(1000), Some(DmMap { dev: 1, sector: 360 }));
        // A clone from 1000 may take 128 − 104 = 24 sectors (chunk boundary beats max_sectors 2560);
        // from 1024, a whole chunk; with max_sectors 64, 64.
        assert_eq!(t.max_io_len(1000, 2560), Some(24));
        assert_eq!(t.max_io_len(1024, 2560), Some(128));
        assert_eq!(t.max_io_len(1024, 64), Some(64));
    }

    #[test]
    fn striped_discard_clone_per_stripe() {
        // Discard [100, 1100) over 3 stripes of 128:
        // begin 100 is stripe 0 at 100; end 1100 is chunk 8 (76 in) → stripe 2 at (8/3)·128 + 76 = 332.
        // stripe 0: [100, 332 rounded down 256 + 128 (0 < 2) = 384) → 284 = chunks 0 (28), 3, 6.
        // stripe 1: [100 → 0 (1 > 0, no step), 256 + 128 = 384) → chunks 1, 4, 7 = 384.
        // stripe 2: [0, 332) → chunks 2, 5 and 76 of 8. 284 + 384 + 332 = 1000.
        let t = &parse_table(STRIPED3).unwrap()[0];
        let mut out = Vec::new();
        t.map_discard(100, 1000, &mut out);
        let want = [(0, 100, 284), (1, 0, 384), (2, 0, 332)];
        assert_eq!(out, want.map(|(dev, sector, len)| (DmMap { dev, sector }, len)));
        // A discard inside one chunk: the other two clones map to nothing and are ended.
        out.clear();
        t.map_discard(130, 10, &mut out);
        assert_eq!(out, vec![(DmMap { dev: 1, sector: 2 }, 10)]);
    }

    #[test]
    fn discard_is_clipped_to_the_target() {
        let t = parse_table("0 1000 linear /dev/sdb 0\n1000 1000 linear /dev/sdc 500").unwrap();
        let mut out = Vec::new();
        t[1].map_discard(900, 300, &mut out);
        assert_eq!(out, vec![(DmMap { dev: 0, sector: 500 }, 200)]);
        assert_eq!(dm_table_find_target(&t, 1999).map(|x| x.begin), Some(1000));
        assert!(dm_table_find_target(&t, 2000).is_none());
    }
}
