//! Decimal text into a byte buffer, as `printf`'s `%d`, `%3d`, `%-3d` and
//! `%09lu` print it, without `core::fmt`: trace writers print a few
//! numbers on every line, and the formatting machinery cost several times
//! the digits themselves. A [`Text`] writes into a slice the caller has
//! made long enough for the line ([`Text::room`]), digits straight into
//! place.

/// "00" "01" ... "99": two digits per division by 100.
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// The most bytes a number takes (u64::MAX has 20 digits).
pub const NUMBER_MAX: usize = 20;

/// The widest field padded: `%Nd` and `%Ns` with N up to this. A line
/// needs this much room past its end, for the block [`Text`] pads with.
pub const PAD_MAX: usize = 16;

/// 10^w for the widths a field may have: `v < POW10[w]` fits in w digits.
const POW10: [u64; PAD_MAX + 1] = {
    let mut t = [0u64; PAD_MAX + 1];
    let mut i = 0;
    let mut p = 1u64;
    while i <= PAD_MAX {
        t[i] = p;
        p = p.saturating_mul(10);
        i += 1;
    }
    t
};

/// The digits of `v` written backwards so that the last lands just before
/// `end` in `buf`; returns where the first landed.
#[inline(always)]
fn digits_before(mut v: u64, buf: &mut [u8], end: usize) -> usize {
    let mut i = end;
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i] = PAIRS[d];
        buf[i + 1] = PAIRS[d + 1];
    }
    if v >= 10 {
        let d = v as usize * 2;
        i -= 2;
        buf[i] = PAIRS[d];
        buf[i + 1] = PAIRS[d + 1];
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    i
}

/// A line being written into `buf` from `pos` on. `buf` has room for the
/// line and [`PAD_MAX`] bytes more, and for [`NUMBER_MAX`] past where any
/// number starts: padding and numbers store whole blocks, of which the
/// bytes past the field are scratch, overwritten or never written out.
pub struct Text<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Text<'a> {
    /// Writes into `buf`, which must hold everything written and
    /// [`PAD_MAX`] bytes more (`room`).
    pub fn new(buf: &'a mut [u8]) -> Self {
        Text { buf, pos: 0 }
    }

    /// The buffer a line of at most `len` bytes needs: grown, never shrunk.
    pub fn room(buf: &mut Vec<u8>, len: usize) {
        if buf.len() < len {
            buf.resize(len, 0);
        }
    }

    /// The bytes written so far.
    pub fn len(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    #[inline(always)]
    pub fn byte(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    /// A literal: its length is known, so the copy is a few stores.
    #[inline(always)]
    pub fn lit<const N: usize>(&mut self, s: &[u8; N]) {
        self.buf[self.pos..self.pos + N].copy_from_slice(s);
        self.pos += N;
    }

    /// `%s`.
    #[inline(always)]
    pub fn bytes(&mut self, s: &[u8]) {
        self.buf[self.pos..self.pos + s.len()].copy_from_slice(s);
        self.pos += s.len();
    }

    /// `n` copies of `byte`, at most [`PAD_MAX`]: a whole block is
    /// stored (the line has room for it) and `n` of it kept.
    #[inline(always)]
    fn pad(&mut self, byte: u8, n: usize) {
        debug_assert!(n <= PAD_MAX);
        self.buf[self.pos..self.pos + PAD_MAX].copy_from_slice(&[byte; PAD_MAX]);
        self.pos += n.min(PAD_MAX);
    }

    /// `%d`. The digits go right-aligned into a scratch array, which is
    /// copied whole (a copy of known size) so that they start at `pos`.
    #[inline]
    pub fn u64(&mut self, v: u64) {
        let mut scratch = [0u8; 2 * NUMBER_MAX];
        let first = digits_before(v, &mut scratch, NUMBER_MAX);
        self.buf[self.pos..self.pos + NUMBER_MAX].copy_from_slice(&scratch[first..first + NUMBER_MAX]);
        self.pos += NUMBER_MAX - first;
    }

    /// `%Nd` (`fill` b' ') or `%0Nd` (b'0'): a number that fits the field
    /// fills exactly `width` bytes, its digits written back from the
    /// field's end over a block of `fill`; a longer one is written whole.
    #[inline(always)]
    fn u64_field(&mut self, v: u64, width: usize, fill: u8) {
        if v < POW10[width] {
            self.buf[self.pos..self.pos + PAD_MAX].copy_from_slice(&[fill; PAD_MAX]);
            digits_before(v, self.buf, self.pos + width);
            self.pos += width;
        } else {
            self.u64(v);
        }
    }

    /// `%Nd`: right-aligned in at least `width` columns, spaces before.
    #[inline]
    pub fn u64_right(&mut self, v: u64, width: usize) {
        self.u64_field(v, width, b' ');
    }

    /// `%0Nd`: at least `width` digits, zeros before.
    #[inline]
    pub fn u64_zeros(&mut self, v: u64, width: usize) {
        self.u64_field(v, width, b'0');
    }

    /// `%-Nd`: left-aligned in at least `width` columns, spaces after.
    #[inline]
    pub fn u64_left(&mut self, v: u64, width: usize) {
        let start = self.pos;
        self.u64(v);
        let len = self.pos - start;
        self.pad(b' ', width.saturating_sub(len));
    }

    /// `%Ns`: right-aligned in at least `width` columns.
    #[inline]
    pub fn str_right(&mut self, s: &[u8], width: usize) {
        self.pad(b' ', width.saturating_sub(s.len()));
        self.bytes(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl Fn(&mut Text)) -> String {
        let mut buf = vec![0u8; 64 + PAD_MAX];
        let mut t = Text::new(&mut buf);
        f(&mut t);
        let n = t.len();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn decimal_as_printf_prints_it() {
        assert_eq!(text(|t| t.u64(0)), "0");
        assert_eq!(text(|t| t.u64(65531)), "65531");
        assert_eq!(text(|t| t.u64(u64::MAX)), "18446744073709551615");
        assert_eq!(text(|t| t.u64_right(5, 8)), "       5");
        assert_eq!(text(|t| t.u64_right(123456, 3)), "123456"); // wider than the field: nothing cut
        assert_eq!(text(|t| t.u64_left(0, 3)), "0  ");
        assert_eq!(text(|t| t.u64_left(259, 3)), "259");
        assert_eq!(text(|t| t.u64_zeros(7, 9)), "000000007");
        assert_eq!(text(|t| t.u64_zeros(999_999_999, 9)), "999999999");
        assert_eq!(text(|t| t.str_right(b"D", 2)), " D");
        assert_eq!(text(|t| t.str_right(b"FWFS", 3)), "FWFS");
        assert_eq!(text(|t| { t.lit(b"["); t.bytes(b"dd"); t.byte(b']') }), "[dd]");
        // Every digit count, at both ends: 1, 9, 10, 99, 100, ... 10^19.
        let mut p = 1u64;
        for digits in 1..=20 {
            assert_eq!(text(|t| t.u64(p)), format!("1{}", "0".repeat(digits - 1)));
            assert_eq!(text(|t| t.u64(p - 1)), if digits == 1 { "0".to_string() } else { "9".repeat(digits - 1) });
            p = p.saturating_mul(10);
            if digits == 20 {
                break;
            }
        }
    }
}
