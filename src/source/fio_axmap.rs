//! fio's random map (lib/axmap.c): one bit per block of the file, so a
//! random job without `norandommap` does each block once per pass. fio
//! keeps a tree of levels (a bit above is set when the 64 below are all
//! set); two levels give the same answers here: the blocks, and a "word
//! full" summary that lets a search skip used words 64 at a time.

/// `struct axmap`.
#[derive(Clone, Debug)]
pub struct Axmap {
    nr_bits: u64,
    /// Level 0: one bit per block (the last word may have spare bits).
    map: Vec<u64>,
    /// One bit per level-0 word, set when that word is full.
    full: Vec<u64>,
}

impl Axmap {
    /// `axmap_new`.
    pub fn axmap_new(nr_bits: u64) -> Axmap {
        let words = nr_bits.div_ceil(64).max(1) as usize;
        Axmap { nr_bits, map: vec![0; words], full: vec![0; words.div_ceil(64)] }
    }

    /// `axmap_reset`: a new pass.
    pub fn axmap_reset(&mut self) {
        self.map.iter_mut().for_each(|w| *w = 0);
        self.full.iter_mut().for_each(|w| *w = 0);
    }

    /// `axmap_isset`.
    #[inline]
    pub fn axmap_isset(&self, bit_nr: u64) -> bool {
        bit_nr <= self.nr_bits && self.map.get((bit_nr / 64) as usize).is_some_and(|w| w >> (bit_nr % 64) & 1 == 1)
    }

    /// `axmap_set_nr`: set up to `nr_bits` bits from `bit_nr`, stopping at
    /// the first bit already set; returns how many were set. As in fio, the
    /// spare bits of the last word may be set (the caller keeps I/O inside
    /// the file).
    pub fn axmap_set_nr(&mut self, bit_nr: u64, nr_bits: u64) -> u64 {
        if bit_nr > self.nr_bits {
            return 0;
        }
        let mut set = 0;
        while set < nr_bits {
            let b = bit_nr + set;
            let w = (b / 64) as usize;
            let Some(word) = self.map.get_mut(w) else { break };
            if *word >> (b % 64) & 1 == 1 {
                break;
            }
            *word |= 1 << (b % 64);
            if *word == u64::MAX {
                self.full[w / 64] |= 1 << (w % 64);
            }
            set += 1;
        }
        set
    }

    /// The first free bit at or after `bit_nr` before the end of the map
    /// (`axmap_find_first_free`).
    fn axmap_find_first_free(&self, bit_nr: u64) -> Option<u64> {
        let w0 = (bit_nr / 64) as usize;
        let first = *self.map.get(w0)? | ((1u64 << (bit_nr % 64)) - 1);
        let (w, word) = if first != u64::MAX {
            (w0, first)
        } else {
            let w = self.next_unfull_word(w0 + 1)?;
            (w, self.map[w])
        };
        let index = w as u64 * 64 + (!word).trailing_zeros() as u64;
        (index < self.nr_bits).then_some(index)
    }

    /// The first level-0 word at or after `w` with a free bit.
    fn next_unfull_word(&self, w: usize) -> Option<usize> {
        if w >= self.map.len() {
            return None;
        }
        let mut s = w / 64;
        let mut bits = self.full[s] | ((1u64 << (w % 64)) - 1);
        loop {
            if bits != u64::MAX {
                let found = s * 64 + (!bits).trailing_zeros() as usize;
                return (found < self.map.len()).then_some(found);
            }
            s += 1;
            bits = *self.full.get(s)?;
        }
    }

    /// `axmap_next_free`: `bit_nr` is used; the next free bit after it,
    /// wrapping to the start of the map; `None` when every bit is set.
    pub fn axmap_next_free(&self, bit_nr: u64) -> Option<u64> {
        if bit_nr >= self.nr_bits {
            return None;
        }
        let next = if bit_nr + 1 == self.nr_bits { 0 } else { bit_nr + 1 };
        self.axmap_find_first_free(next).or_else(|| if next != 0 { self.axmap_find_first_free(0) } else { None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_stops_at_a_used_bit() {
        let mut m = Axmap::axmap_new(200);
        assert_eq!(m.axmap_set_nr(10, 1), 1);
        // From 5, 16 wanted: 5..=9 are free, 10 is used: 5 set.
        assert_eq!(m.axmap_set_nr(5, 16), 5);
        assert_eq!(m.axmap_set_nr(10, 4), 0);
        // Across a word boundary: 60..=69.
        assert_eq!(m.axmap_set_nr(60, 10), 10);
        assert!(m.axmap_isset(69) && !m.axmap_isset(70));
    }

    #[test]
    fn next_free_searches_forward_then_wraps() {
        let mut m = Axmap::axmap_new(130);
        m.axmap_set_nr(0, 64);
        m.axmap_set_nr(65, 10);
        // After 3 the first free bit is 64; after 70 it is 75.
        assert_eq!(m.axmap_next_free(3), Some(64));
        assert_eq!(m.axmap_next_free(70), Some(75));
        m.axmap_set_nr(64, 1);
        m.axmap_set_nr(75, 55);
        assert_eq!(m.axmap_next_free(100), None, "all 130 used");
        // One free bit, 5, before the start: found by wrapping.
        let mut m = Axmap::axmap_new(130);
        m.axmap_set_nr(0, 5);
        m.axmap_set_nr(6, 58);
        m.axmap_set_nr(64, 64);
        m.axmap_set_nr(128, 2);
        assert_eq!(m.axmap_next_free(128), Some(5));
        assert_eq!(m.axmap_next_free(129), Some(5));
    }

    #[test]
    fn spare_bits_of_the_last_word_are_not_free_blocks() {
        // 70 blocks: bits 70..=127 of word 1 are spare.
        let mut m = Axmap::axmap_new(70);
        m.axmap_set_nr(0, 64);
        m.axmap_set_nr(64, 6);
        assert_eq!(m.axmap_next_free(10), None);
    }

    #[test]
    fn full_summary_skips_many_words() {
        // 64 × 64 × 3 blocks, all used but the last: found past 191 full words.
        let n = 64 * 64 * 3;
        let mut m = Axmap::axmap_new(n);
        for b in (0..n - 1).step_by(64) {
            m.axmap_set_nr(b, 64.min(n - 1 - b));
        }
        assert_eq!(m.axmap_next_free(0), Some(n - 1));
    }
}
