//! blkparse's default lines in their common shapes, read byte by byte into
//! a reused [`TraceRecord`]: a trace of millions of lines is read without
//! an allocation or a UTF-8 pass per line. The header is
//! `MAJ,MIN CPU SEQ SEC.NSEC PID ACTION RWBS` (`process_default` in
//! blkparse_fmt.c, as [`super::blkparse`] writes it), then the tails
//! blkparse prints for a model action: `S + N [comm]` or `[comm]` (Q G I
//! D M F), `S + N [err]` or `S [err]` (C R), `[comm]` (P), `[comm] depth`
//! (U UT), `S + N <- (maj,min) FROM` (A), `S / NEW [comm]` (X).
//!
//! Anything else — other actions, passthrough and `-t` fields, columns
//! apart by other whitespace than spaces, numbers that overflow, bytes
//! that are not ASCII outside the task name — is left to
//! [`super::parse`]'s reader, which reads every line these do to the same
//! record: this is a shortcut, never a second grammar.

use super::parse::{DevNo, Extra, TraceAction, TraceRecord};
use super::Action;

/// A task name's string kept across records that have none (C, R), so
/// that the next one reuses its allocation.
#[derive(Default)]
pub struct Spare(Option<String>);

struct Bytes<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Bytes<'a> {
    #[inline(always)]
    fn spaces(&mut self) -> usize {
        let start = self.i;
        while self.s.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
        self.i - start
    }

    #[inline(always)]
    fn lit(&mut self, l: &[u8]) -> Option<()> {
        if self.s[self.i..].starts_with(l) {
            self.i += l.len();
            Some(())
        } else {
            None
        }
    }

    /// Decimal digits as a number, `None` without any or past u64.
    #[inline(always)]
    fn num(&mut self) -> Option<u64> {
        let (v, n) = self.digits();
        (n > 0).then_some(v?)
    }

    /// The decimal digits from here, as a number (`None` past u64), and
    /// how many there were. Up to 19 digits cannot overflow a u64, so
    /// only longer runs are checked at each step.
    #[inline(always)]
    fn digits(&mut self) -> (Option<u64>, usize) {
        // One pass: a digit is a byte within 9 of b'0'.
        let (start, mut v) = (self.i, 0u64);
        while let Some(d) = self.s.get(self.i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
            v = v.wrapping_mul(10).wrapping_add(d as u64);
            self.i += 1;
        }
        let n = self.i - start;
        if n <= 19 {
            return (Some(v), n);
        }
        (self.s[start..self.i].iter().try_fold(0u64, |v, &c| v.checked_mul(10)?.checked_add((c - b'0') as u64)), n)
    }

    /// A number filling a whole column, then the spaces after it.
    #[inline(always)]
    fn column(&mut self) -> Option<u64> {
        let v = self.num()?;
        self.end_of_column()?;
        Some(v)
    }

    /// A column ends at spaces (at least one) or the line's end.
    #[inline(always)]
    fn end_of_column(&mut self) -> Option<()> {
        (self.spaces() > 0 || self.i == self.s.len()).then_some(())
    }

    /// A word of printable ASCII up to the next space.
    #[inline(always)]
    fn word(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        while let Some(&c) = self.s.get(self.i) {
            if c == b' ' {
                break;
            }
            if !c.is_ascii_graphic() {
                return None;
            }
            self.i += 1;
        }
        let w = &self.s[start..self.i];
        self.end_of_column()?;
        (!w.is_empty()).then_some(w)
    }

    #[inline(always)]
    fn rest(&self) -> &'a [u8] {
        &self.s[self.i..]
    }
}

fn u32_of(v: u64) -> Option<u32> {
    u32::try_from(v).ok()
}

/// The column `SEC.NSEC` with one to nine fraction digits, in ns.
#[inline(always)]
fn time(b: &mut Bytes) -> Option<u64> {
    let sec = b.num()?;
    b.lit(b".")?;
    let (frac, n) = b.digits();
    if n == 0 || n > 9 {
        return None;
    }
    b.end_of_column()?;
    let ns = frac? * 10u64.pow(9 - n as u32);
    sec.checked_mul(1_000_000_000)?.checked_add(ns)
}

fn action(w: &[u8]) -> Option<Action> {
    Some(match w {
        b"Q" => Action::Queue,
        b"X" => Action::Split,
        b"A" => Action::Remap,
        b"G" => Action::GetRq,
        b"I" => Action::Insert,
        b"D" => Action::Issue,
        b"C" => Action::Complete,
        b"P" => Action::Plug,
        b"U" => Action::Unplug,
        b"UT" => Action::UnplugTimer,
        b"M" => Action::BackMerge,
        b"F" => Action::FrontMerge,
        b"R" => Action::Requeue,
        _ => return None,
    })
}

/// `[text]` making up all of `rest` (UTF-8 is checked when it is kept).
fn bracketed(rest: &[u8]) -> Option<&[u8]> {
    rest.strip_prefix(b"[")?.strip_suffix(b"]")
}

/// `S + N ` (with its spaces) or nothing, when a number starts here.
#[inline(always)]
fn range(b: &mut Bytes, r: &mut TraceRecord) -> Option<()> {
    if let Some(s) = b.num() {
        r.sector = Some(s);
        b.lit(b" + ")?;
        r.nr_sectors = u32_of(b.num()?)?;
        (b.spaces() > 0).then_some(())?;
    }
    Some(())
}

/// Read `line` into `r` when it has one of the shapes above; `false`
/// (with `r` in any state) when it has not.
pub fn read_line(line: &[u8], r: &mut TraceRecord, spare: &mut Spare) -> bool {
    read(line, r, spare).is_some()
}

fn read(line: &[u8], r: &mut TraceRecord, spare: &mut Spare) -> Option<()> {
    // The line without trailing whitespace, as the reader trims it; a
    // last byte that is not ASCII may be whitespace of another kind.
    let end = line.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(0, |p| p + 1);
    if line.get(end.wrapping_sub(1)).is_some_and(|c| !c.is_ascii()) {
        return None;
    }
    let mut b = Bytes { s: &line[..end], i: 0 };
    b.spaces();
    let major = u32_of(b.num()?)?;
    b.lit(b",")?;
    let minor = u32_of(b.column()?)?;
    let cpu = u32_of(b.column()?)?;
    let seq = b.column()?;
    let time_ns = time(&mut b)?;
    let pid = u32_of(b.column()?)?;
    let act = action(b.word()?)?;
    let rwbs = b.word()?;
    r.action = TraceAction::Model(act);
    r.dev = Some(DevNo { major, minor });
    (r.cpu, r.seq, r.time_ns, r.pid) = (cpu, Some(seq), time_ns, pid);
    if r.rwbs.as_bytes() != rwbs {
        // A word is printable ASCII: each byte is its own char.
        r.rwbs.clear();
        r.rwbs.extend(rwbs.iter().map(|&c| c as char));
    }
    (r.sector, r.nr_sectors, r.error, r.bytes, r.cmd, r.ioprio, r.elapsed_ns, r.extra) = (None, 0, None, None, None, None, None, Extra::None);
    let comm = match act {
        Action::Complete | Action::Requeue => {
            // `S + N [err]`, `S [err]` or `[err]`; blkparse prints the
            // __u16 field: 65531 is -EIO.
            if let Some(s) = b.num() {
                r.sector = Some(s);
                if b.lit(b" + ").is_some() {
                    r.nr_sectors = u32_of(b.num()?)?;
                }
                (b.spaces() > 0).then_some(())?;
            }
            let e = error(std::str::from_utf8(bracketed(b.rest())?).ok()?)?;
            r.error = Some(if (32768..=65535).contains(&e) { e as u16 as i16 as i32 } else { e });
            None
        }
        Action::Queue | Action::GetRq | Action::Insert | Action::Issue | Action::BackMerge | Action::FrontMerge => {
            range(&mut b, r)?;
            Some(bracketed(b.rest())?)
        }
        Action::Plug => Some(bracketed(b.rest())?),
        Action::Unplug | Action::UnplugTimer => {
            let rest = b.rest();
            let close = rest.iter().rposition(|&c| c == b']')?;
            let mut depth = Bytes { s: &rest[close + 1..], i: 0 };
            (depth.spaces() > 0).then_some(())?;
            let d = u32_of(depth.num()?)?;
            (depth.i == depth.s.len()).then_some(())?;
            r.extra = Extra::Unplug { depth: d };
            Some(bracketed(&rest[..close + 1])?)
        }
        Action::Remap => {
            r.sector = Some(b.num()?);
            b.lit(b" + ")?;
            r.nr_sectors = u32_of(b.num()?)?;
            b.lit(b" <- (")?;
            let from_major = u32_of(b.num()?)?;
            b.lit(b",")?;
            let from_minor = u32_of(b.num()?)?;
            b.lit(b") ")?;
            let from_sector = b.num()?;
            (b.i == b.s.len()).then_some(())?;
            r.extra = Extra::Remap { from: DevNo { major: from_major, minor: from_minor }, from_sector, nr_bios: None };
            None
        }
        Action::Split => {
            r.sector = Some(b.num()?);
            b.lit(b" / ")?;
            r.extra = Extra::Split { new_sector: b.num()? };
            (b.spaces() > 0).then_some(())?;
            Some(bracketed(b.rest())?)
        }
    };
    set_comm(r, comm, spare)
}

/// An error number: digits, with a minus sign or not.
fn error(s: &str) -> Option<i32> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The record's task name, `None` when the bytes are not UTF-8. A name
/// the same as the record before's (most are) is kept as it is.
fn set_comm(r: &mut TraceRecord, comm: Option<&[u8]>, spare: &mut Spare) -> Option<()> {
    match comm {
        Some(c) if r.comm.as_ref().is_some_and(|s| s.as_bytes() == c) => {}
        Some(c) => {
            let c = std::str::from_utf8(c).ok()?;
            let mut s = r.comm.take().or_else(|| spare.0.take()).unwrap_or_default();
            s.clear();
            s.push_str(c);
            r.comm = Some(s);
        }
        None => {
            if let Some(s) = r.comm.take() {
                spare.0 = Some(s);
            }
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::parse::{parse_blkparse_line, TraceRecord};
    use super::*;

    /// The shortcut reads `line` to what the general reader reads, or
    /// leaves it to it.
    fn same(line: &str) -> bool {
        let mut r = TraceRecord::blank(TraceAction::Message);
        let mut spare = Spare::default();
        if !read_line(line.as_bytes(), &mut r, &mut spare) {
            return false;
        }
        r.line = 7;
        assert_eq!(Ok(r), parse_blkparse_line(line.trim_end(), 7), "{line}");
        true
    }

    #[test]
    fn common_lines_read_as_the_general_reader_reads_them() {
        for line in [
            "  8,0    0        1     0.000000000  4242  Q  WS 96496 + 8 [fio]",
            "  8,0    0        3     0.000000000  4242  P   N [fio]",
            "  8,0    2        2     0.012500000     0  C  FN [0]",
            "  8,0    0        9     1.000000001     0  C   W 0 + 64 [65531]",
            "  8,0    0        9     1.000000001     0  C   W 0 [-5]",
            "254,0    0        2     0.000100000    92  D  FN [kworker/0:1H]",
            "  8,16   1       12     0.5   500  U   N [dd] 3",
            "  8,16   1       12     0.500000000   500  UT  N [kworker] x] 12",
            "  9,0    0        1     0.000000000   500  A   W 2048 + 64 <- (8,1) 0",
            "  8,0    0        5     0.000000004  1  X  R 0 / 256 [a b]",
            "  8,0    0        5     0.000000004  1  M  R 8 + 8 [task]]  ",
            "8,0 0 1 0.0 1 D R 0 + 8 [a]",
        ] {
            assert!(same(line), "not read by the shortcut: {line}");
        }
    }

    #[test]
    fn unusual_lines_are_left_to_the_general_reader() {
        for line in [
            "  8,0    0        1     0.000000000  4242  Q  WS 96496 + 8 (12) [fio]", // -t
            "  8,0    0        1     0.000000000  4242  D  R 4096 (12 00) [fio]",    // passthrough
            "  8,0    0        1     0.000000000  4242  m   N some message",
            "  8,0\t0 1 0.0 1 D R 0 + 8 [a]",
            "  8,0    0        1     0.000000000  99999999999  D  R 0 + 8 [a]",
            "  8,0    0        1     0.000000000  1  D  R 0 + 8 [a] trailing",
            "  8,0    0        1     0.000000000  1  B  R 0 + 8 [a]",
            "CPU0 (8,0):",
        ] {
            assert!(!same(line), "read by the shortcut: {line}");
        }
    }
}
