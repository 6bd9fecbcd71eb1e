//! A free-extent list for an fstrim-style workload: one `start length` pair
//! per line, in the order the filesystem would discard them (ext4's FITRIM
//! walks free extents group by group and discards each one, block/blk-lib.c
//! `blkdev_issue_discard` per extent).
//!
//! A number without a unit counts 512-byte sectors. With a unit it counts
//! bytes, as elsewhere in blkstack: `b` bytes, `s` sectors, `K`/`KiB`,
//! `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (powers of 1024; lower case k/m/g/t too),
//! `KB`/`MB`/`GB`/`TB` (powers of 1000); a byte count must be whole sectors.
//! `#` starts a comment; blank lines are ignored. Extents must not be empty
//! and must not overlap.

use std::fmt;

/// One free extent, in 512-byte sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub len: u64,
    /// Line it was read from (1-based).
    pub line: usize,
}

impl Extent {
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtentError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

impl fmt::Display for ExtentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)
    }
}

impl std::error::Error for ExtentError {}

/// Parse an extent list; `file` names it in errors.
pub fn parse_extents(file: &str, text: &str) -> Result<Vec<Extent>, ExtentError> {
    let err = |line: usize, msg: String| ExtentError { file: file.to_string(), line, msg };
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let body = raw.split('#').next().unwrap_or("");
        if body.trim().is_empty() {
            continue;
        }
        out.push(parse_line(body, i + 1).map_err(|m| err(i + 1, m))?);
    }
    check_overlaps(&out).map_err(|(line, m)| err(line, m))?;
    Ok(out)
}

fn parse_line(body: &str, line: usize) -> Result<Extent, String> {
    let fields: Vec<&str> = body.split_whitespace().collect();
    let [start, len] = fields[..] else {
        return Err(format!("expected 'start length', found {} field(s)", fields.len()));
    };
    let start = parse_sectors(start).map_err(|m| format!("start: {m}"))?;
    let len = parse_sectors(len).map_err(|m| format!("length: {m}"))?;
    if len == 0 {
        return Err("empty extent (length 0)".to_string());
    }
    if start.checked_add(len).is_none() {
        return Err("extent ends beyond 2^64 sectors".to_string());
    }
    Ok(Extent { start, len, line })
}

/// A count of sectors: bare = sectors, with a unit = bytes (see module docs).
pub fn parse_sectors(s: &str) -> Result<u64, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(format!("'{s}' is not a number"));
    }
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is too large"))?;
    if unit.is_empty() || unit == "s" {
        return Ok(n);
    }
    let mult = unit_bytes(unit).ok_or_else(|| format!("'{s}' has an unknown unit '{unit}'"))?;
    let bytes = n.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))?;
    if bytes % 512 != 0 {
        return Err(format!("'{s}' is {bytes} bytes, not a whole number of 512-byte sectors"));
    }
    Ok(bytes / 512)
}

fn unit_bytes(unit: &str) -> Option<u64> {
    Some(match unit {
        "b" | "B" => 1,
        "k" | "K" | "KiB" => 1 << 10,
        "m" | "M" | "MiB" => 1 << 20,
        "g" | "G" | "GiB" => 1 << 30,
        "t" | "T" | "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return None,
    })
}

/// The first pair of overlapping extents, reported at the later line.
fn check_overlaps(ext: &[Extent]) -> Result<(), (usize, String)> {
    let mut sorted: Vec<&Extent> = ext.iter().collect();
    sorted.sort_by_key(|e| (e.start, e.line));
    for w in sorted.windows(2) {
        let (a, b) = (w[0], w[1]);
        if b.start < a.end() {
            let (first, second) = if a.line < b.line { (a, b) } else { (b, a) };
            return Err((second.line, format!("overlaps the extent on line {} ({} + {})", first.line, first.start, first.len)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_and_units() {
        let text = "\
# free extents of /dev/md0
2048 8          # 8 sectors at 2048
4096K 1MiB      # 4096 KiB = 8192 sectors; 1 MiB = 2048 sectors

1G 512b
";
        let e = parse_extents("free.txt", text).unwrap();
        // 1 GiB = 2,097,152 sectors; 512 bytes = 1 sector.
        let want = [(2048, 8, 2), (8192, 2048, 3), (2_097_152, 1, 5)];
        let got: Vec<(u64, u64, usize)> = e.iter().map(|x| (x.start, x.len, x.line)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_extents("f", "0 8\n16\n").unwrap_err();
        assert_eq!(e.to_string(), "f:2: expected 'start length', found 1 field(s)");
        let e = parse_extents("f", "0 8\n8 0\n").unwrap_err();
        assert_eq!((e.line, e.msg.as_str()), (2, "empty extent (length 0)"));
        // 1000 bytes is not whole sectors.
        assert!(parse_extents("f", "0 1KB\n").unwrap_err().msg.contains("1000 bytes"));
        assert!(parse_extents("f", "0 8 9\n").is_err());
        assert!(parse_extents("f", "x 8\n").unwrap_err().msg.starts_with("start:"));
        assert!(parse_extents("f", "0 8Q\n").unwrap_err().msg.contains("unknown unit"));
        assert!(parse_extents("f", "18446744073709551615 1\n").is_err());
    }

    #[test]
    fn overlaps_are_refused() {
        // [100, 164) and [150, 158) overlap; reported on the later line.
        let e = parse_extents("f", "100 64\n0 8\n150 8\n").unwrap_err();
        assert_eq!((e.line, e.msg.as_str()), (3, "overlaps the extent on line 1 (100 + 64)"));
        // Touching extents are fine.
        assert_eq!(parse_extents("f", "0 8\n8 8\n").unwrap().len(), 2);
    }
}
