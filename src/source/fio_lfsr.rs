//! fio's `random_generator=lfsr` (lib/lfsr.c): a Galois LFSR over the
//! smallest width whose period covers the file's blocks, stepping past
//! values beyond the last block, so each block comes up exactly once per
//! pass without a random map.

/// Tap positions per width (`lfsr_taps`, lib/lfsr.c).
const LFSR_TAPS: [&[u8]; 64] = [
    &[], &[], &[], &[3, 2], &[4, 3], &[5, 3], &[6, 5], &[7, 6], &[8, 6, 5, 4], &[9, 5], &[10, 7], &[11, 9],
    &[12, 6, 4, 1], &[13, 4, 3, 1], &[14, 5, 3, 1], &[15, 14], &[16, 15, 13, 4], &[17, 14], &[18, 11],
    &[19, 6, 2, 1], &[20, 17], &[21, 19], &[22, 21], &[23, 18], &[24, 23, 22, 17], &[25, 22], &[26, 6, 2, 1],
    &[27, 5, 2, 1], &[28, 25], &[29, 27], &[30, 6, 4, 1], &[31, 28], &[32, 31, 29, 1], &[33, 20],
    &[34, 27, 2, 1], &[35, 33], &[36, 25], &[37, 5, 4, 3, 2, 1], &[38, 6, 5, 1], &[39, 35], &[40, 38, 21, 19],
    &[41, 38], &[42, 41, 20, 19], &[43, 42, 38, 37], &[44, 43, 18, 17], &[45, 44, 42, 41], &[46, 45, 26, 25],
    &[47, 42], &[48, 47, 21, 20], &[49, 40], &[50, 49, 24, 23], &[51, 50, 36, 35], &[52, 49], &[53, 52, 38, 37],
    &[54, 53, 18, 17], &[55, 31], &[56, 55, 35, 34], &[57, 50], &[58, 39], &[59, 58, 38, 37], &[60, 59],
    &[61, 60, 46, 45], &[62, 61, 6, 5], &[63, 62],
];

/// `struct fio_lfsr` with `spin` 0, the only spin fio's offsets use.
#[derive(Clone, Debug)]
pub struct FioLfsr {
    xormask: u64,
    last_val: u64,
    cached_bit: u64,
    max_val: u64,
    num_vals: u64,
    /// `prepare_spin(0)` leaves 1: the first `lfsr_next` steps twice.
    cycle_length: u64,
}

impl FioLfsr {
    /// `lfsr_init(nums, seed, 0)`; `None` where fio fails ("failed
    /// initializing LFSR": no width fits, or the seed is the all-ones state).
    pub fn lfsr_init(nums: u64, seed: u64) -> Option<FioLfsr> {
        let taps = (3..64).find(|&i| (1u64 << i) > nums).map(|i| LFSR_TAPS[i])?;
        let xormask = taps.iter().fold(0u64, |m, &t| m | 1 << (t - 1));
        let mut fl = FioLfsr { xormask, last_val: 0, cached_bit: 1 << (taps[0] - 1), max_val: nums.wrapping_sub(1), num_vals: 0, cycle_length: 1 };
        fl.lfsr_reset(seed).then_some(fl)
    }

    /// `lfsr_reset`: a new pass from `seed`; false for the all-ones state.
    pub fn lfsr_reset(&mut self, seed: u64) -> bool {
        let bitmask = (self.cached_bit << 1) - 1;
        self.num_vals = 0;
        self.last_val = seed & bitmask;
        self.last_val != bitmask
    }

    #[inline(always)]
    fn step(&mut self) {
        let v = self.last_val;
        self.last_val = ((v >> 1) | self.cached_bit) ^ ((v & 1).wrapping_sub(1) & self.xormask);
    }

    /// `lfsr_next`: the next block, `None` once every block came up.
    #[inline]
    pub fn lfsr_next(&mut self) -> Option<u64> {
        let n = self.num_vals;
        self.num_vals += 1;
        if n > self.max_val {
            return None;
        }
        loop {
            if self.cycle_length > 0 {
                // __lfsr_next(fl, spin + 1) once, then the cached cycle (0).
                self.cycle_length -= 1;
                if self.cycle_length == 0 {
                    self.step();
                }
            }
            self.step();
            if self.last_val <= self.max_val {
                return Some(self.last_val);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_visits_every_block_once() {
        // 100 blocks: a 7-bit LFSR (2^7 = 128 > 100), 128 − 1 states, the
        // 27 beyond block 99 are skipped; 100 values, then the end.
        let mut l = FioLfsr::lfsr_init(100, 12345).unwrap();
        let mut seen = [false; 100];
        for _ in 0..100 {
            let b = l.lfsr_next().unwrap() as usize;
            assert!(!seen[b], "block {b} twice");
            seen[b] = true;
        }
        assert_eq!(l.lfsr_next(), None);
        assert!(l.lfsr_reset(12345));
        assert!(l.lfsr_next().is_some());
    }

    #[test]
    fn all_ones_seed_fails() {
        // 100 blocks: 7-bit mask 127; a seed whose low 7 bits are all ones.
        assert!(FioLfsr::lfsr_init(100, 0x7f).is_none());
        assert!(FioLfsr::lfsr_init(100, 0x17f).is_none());
    }
}
