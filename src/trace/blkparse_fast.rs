//! blkparse's default lines in their common shapes, read byte by byte into
//! a reused [`TraceRecord`]: a trace of millions of lines is read without
//! an allocation or a UTF-8 pass per line, the columns' padding and the
//! longer numbers (sequence, time, pid, sector) eight bytes at a time. The header is
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

/// The rest of a line, read from the front.
struct Bytes<'a> {
    s: &'a [u8],
}

/// Eight bytes as one little-endian word (the first byte lowest).
#[inline(always)]
fn word_at(s: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(*s.first_chunk::<8>()?))
}

const ONES: u64 = 0x0101_0101_0101_0101;

/// 10 to the power of 0 to 8.
const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// How many of a word's bytes, first first, are decimal digits: a byte
/// is one when its high nibble is 3 and its low nibble at most 9
/// (adding 6 to the low nibble alone carries into bit 4 from 10 up).
#[inline(always)]
fn digit_run(x: u64) -> usize {
    let high = (x & (0xF0 * ONES)) ^ (0x30 * ONES);
    let low = ((x & (0x0F * ONES)) + 6 * ONES) & (0xF0 * ONES);
    ((high | low).trailing_zeros() / 8) as usize
}

/// The value of a word's first `n` (1 to 8) bytes, all digits: shifted
/// so that they are its last, behind zeros, then summed pairwise into
/// 2-digit, 4-digit and 8-digit numbers.
#[inline(always)]
fn digits_value(x: u64, n: usize) -> u64 {
    let v = (x & (0x0F * ONES)) << (8 * (8 - n));
    let v = (v * 10 + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v * 100 + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    (v * 10000 + (v >> 32)) & 0xFFFF_FFFF
}

impl<'a> Bytes<'a> {
    #[inline(always)]
    fn skip(&mut self, n: usize) {
        self.s = &self.s[n..];
    }

    /// Skip spaces, eight at a time while eight bytes are left; how many.
    #[inline(always)]
    fn spaces(&mut self) -> usize {
        let len = self.s.len();
        while let Some(x) = word_at(self.s) {
            let other = x ^ (b' ' as u64 * ONES);
            if other != 0 {
                self.skip((other.trailing_zeros() / 8) as usize);
                return len - self.s.len();
            }
            self.skip(8);
        }
        while let [b' ', rest @ ..] = self.s {
            self.s = rest;
        }
        len - self.s.len()
    }

    #[inline(always)]
    fn lit(&mut self, l: &[u8]) -> Option<()> {
        self.s = self.s.strip_prefix(l)?;
        Some(())
    }

    /// Decimal digits as a number, `None` without any or past u64.
    #[inline(always)]
    fn num(&mut self) -> Option<u64> {
        at_least_one(self.digits())
    }

    /// The decimal digits from here, as a number (`None` past u64), and
    /// how many there were, one by one (most numbers here have one).
    #[inline(always)]
    fn digits(&mut self) -> (Option<u64>, usize) {
        self.more_digits(self.s, 0)
    }

    /// The digits from here added one by one to `v`, the value of those
    /// from `start` to here: [`digits_end`] of all of them.
    #[inline(always)]
    fn more_digits(&mut self, start: &'a [u8], mut v: u64) -> (Option<u64>, usize) {
        while let [c @ b'0'..=b'9', rest @ ..] = self.s {
            v = v.wrapping_mul(10).wrapping_add((c - b'0') as u64);
            self.s = rest;
        }
        digits_end(start, self.s, v)
    }

    /// [`Bytes::num`] for a number that has several digits more often
    /// than not.
    #[inline(always)]
    fn num_long(&mut self) -> Option<u64> {
        at_least_one(self.digits_long())
    }

    /// [`Bytes::digits`] eight bytes at a time while eight are left.
    #[inline(always)]
    fn digits_long(&mut self) -> (Option<u64>, usize) {
        let (start, mut v) = (self.s, 0u64);
        while let Some(x) = word_at(self.s) {
            let n = digit_run(x);
            if n > 0 {
                v = v.wrapping_mul(POW10[n]).wrapping_add(digits_value(x, n));
                self.skip(n);
            }
            if n < 8 {
                return digits_end(start, self.s, v);
            }
        }
        self.more_digits(start, v)
    }

    /// A number filling a whole column, then the spaces after it.
    #[inline(always)]
    fn column(&mut self) -> Option<u64> {
        let v = self.num()?;
        self.end_of_column()?;
        Some(v)
    }

    /// [`Bytes::column`] of [`Bytes::num_long`].
    #[inline(always)]
    fn long_column(&mut self) -> Option<u64> {
        let v = self.num_long()?;
        self.end_of_column()?;
        Some(v)
    }

    /// A column ends at spaces (at least one) or the line's end.
    #[inline(always)]
    fn end_of_column(&mut self) -> Option<()> {
        (self.spaces() > 0 || self.s.is_empty()).then_some(())
    }

    /// A word of printable ASCII up to the next space.
    #[inline(always)]
    fn word(&mut self) -> Option<&'a [u8]> {
        let all = self.s;
        let n = all.iter().position(|&c| c == b' ').unwrap_or(all.len());
        let w = &all[..n];
        if w.is_empty() || !w.iter().all(|c| c.is_ascii_graphic()) {
            return None;
        }
        self.s = &all[n..];
        self.end_of_column()?;
        Some(w)
    }

    #[inline(always)]
    fn rest(&self) -> &'a [u8] {
        self.s
    }

    /// Nothing left.
    #[inline(always)]
    fn done(&self) -> bool {
        self.s.is_empty()
    }
}

/// The number read, when there was at least one digit.
#[inline(always)]
fn at_least_one((v, n): (Option<u64>, usize)) -> Option<u64> {
    (n > 0).then_some(v?)
}

/// The digits between `start` and `end` (what is left after them) as a
/// number, `v` their value when there are at most 19 (more can overflow
/// a u64, and are checked), and how many there were.
#[inline(always)]
fn digits_end(start: &[u8], end: &[u8], v: u64) -> (Option<u64>, usize) {
    let n = start.len() - end.len();
    if n <= 19 {
        return (Some(v), n);
    }
    (start[..n].iter().try_fold(0u64, |v, &c| v.checked_mul(10)?.checked_add((c - b'0') as u64)), n)
}

fn u32_of(v: u64) -> Option<u32> {
    u32::try_from(v).ok()
}

/// The column `SEC.NSEC` with one to nine fraction digits, in ns.
#[inline(always)]
fn time(b: &mut Bytes) -> Option<u64> {
    let sec = b.num()?;
    b.lit(b".")?;
    let (frac, n) = b.digits_long();
    if n == 0 || n > 9 {
        return None;
    }
    b.end_of_column()?;
    let ns = frac? * POW10[9 - n];
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
    if let Some(s) = b.num_long() {
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
    let mut b = Bytes { s: &line[..end] };
    b.spaces();
    let major = u32_of(b.num()?)?;
    b.lit(b",")?;
    let minor = u32_of(b.column()?)?;
    let cpu = u32_of(b.column()?)?;
    let seq = b.long_column()?;
    let time_ns = time(&mut b)?;
    let pid = u32_of(b.long_column()?)?;
    let act = action(b.word()?)?;
    let rwbs = b.word()?;
    r.action = TraceAction::Model(act);
    r.dev = Some(DevNo { major, minor });
    (r.cpu, r.seq, r.time_ns, r.pid) = (cpu, Some(seq), time_ns, pid);
    if !same_short(r.rwbs.as_bytes(), rwbs) {
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
            let mut depth = Bytes { s: &rest[close + 1..] };
            (depth.spaces() > 0).then_some(())?;
            let d = u32_of(depth.num()?)?;
            depth.done().then_some(())?;
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
            b.done().then_some(())?;
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

/// Whether two short strings (an RWBS, a task name) are equal, compared
/// byte by byte in line: `==` calls memcmp, whose call costs more than
/// the comparison of a few bytes.
#[inline(always)]
pub fn same_short(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
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
        Some(c) if r.comm.as_ref().is_some_and(|s| same_short(s.as_bytes(), c)) => {}
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
            // Numbers of eight digits and more, read eight bytes at a time.
            "259,0   1 123456789 12345.123456789 4194303  Q  WS 12345678901 + 2048 [kworker/u16:3]",
            "  8,0    0 99999999     0.12345678 12345678  D  RM 99999999 + 8 [12345678]",
            "  8,0    0 18446744073709551615     0.000000001     1  C  W 18446744073709551615 + 8 [0]",
        ] {
            assert!(same(line), "not read by the shortcut: {line}");
        }
    }

    #[test]
    fn digit_runs_of_any_length_read_as_str_parse_reads_them() {
        // Runs of 0 to 22 digits (seeded), followed by the line's end, a
        // space, a letter, a byte past ASCII, '/' or ':' (the bytes either
        // side of the digits): both readers give what str::parse gives
        // (None past u64::MAX) and the run's length, and stop after it.
        let mut x: u64 = 18;
        for len in 0..=22usize {
            for case in 0..40 {
                let digits: String = (0..len)
                    .map(|_| {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                        char::from(b'0' + ((x >> 33) % 10) as u8)
                    })
                    .collect();
                let tail: &[u8] = [&b""[..], b" 8 [fio]", b"x", &[0xc3, 0xa9], b"/", b":"][case % 6];
                let line = [digits.as_bytes(), tail].concat();
                let want = (if len == 0 { Some(0) } else { digits.parse::<u64>().ok() }, len);
                let (mut a, mut b) = (Bytes { s: &line }, Bytes { s: &line });
                assert_eq!((a.digits(), a.rest()), (want, tail), "{:?}", String::from_utf8_lossy(&line));
                assert_eq!((b.digits_long(), b.rest()), (want, tail), "{:?}", String::from_utf8_lossy(&line));
            }
        }
        for n in ["18446744073709551615", "18446744073709551616", "99999999999999999999", "00000000000000000000001"] {
            let want = (n.parse::<u64>().ok(), n.len());
            assert_eq!((Bytes { s: n.as_bytes() }.digits(), Bytes { s: n.as_bytes() }.digits_long()), (want, want), "{n}");
        }
    }

    #[test]
    fn spaces_of_any_length_are_skipped() {
        for n in 0..20 {
            for tail in ["", "x", "\t", "8,0"] {
                let line = format!("{}{tail}", " ".repeat(n));
                let mut b = Bytes { s: line.as_bytes() };
                assert_eq!((b.spaces(), b.rest()), (n, tail.as_bytes()), "{line:?}");
            }
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
            "  8,0    0 18446744073709551616     0.000000001     1  C  W 0 + 8 [0]", // past u64
            "  8,0    0        1     0.0000000001     1  C  W 0 + 8 [0]",              // ten fraction digits
        ] {
            assert!(!same(line), "read by the shortcut: {line}");
        }
    }
}
