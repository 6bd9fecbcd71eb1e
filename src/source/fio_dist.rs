//! fio's non-uniform offset distributions (lib/zipf.c, lib/gauss.c): a
//! range index in [0, nranges) per draw, from a 32-bit Tausworthe generator
//! of their own, scattered over the file by `__hash_u64` and shifted by a
//! random (or `center`) offset.

use super::fio_rand::{__hash_u64, init_rand_seed, FrandState};

/// `ZIPF_MAX_GEN`: ζ(n, θ) sums at most this many terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// `FRAND32_MAX` as a double (zipf and pareto divide by it, not by max + 1).
const FRAND32_MAX: f64 = 4294967295.0;

/// `struct zipf_state`, for zipf and pareto.
#[derive(Clone, Debug)]
pub struct ZipfState {
    nranges: u64,
    theta: f64,
    zeta2: f64,
    zetan: f64,
    pareto_pow: f64,
    rand: FrandState,
    rand_off: u64,
}

impl ZipfState {
    /// `shared_rand_init`: the generator, and where rank 0 lands — the
    /// first draw, or `nranges × center`.
    fn shared_rand_init(nranges: u64, center: Option<f64>, seed: u32) -> ZipfState {
        let mut rand = init_rand_seed(seed as u64, false);
        let drawn = rand.__rand();
        let rand_off = match center {
            Some(c) => (nranges as f64 * c) as u64,
            None => drawn,
        };
        ZipfState { nranges, theta: 0.0, zeta2: 0.0, zetan: 0.0, pareto_pow: 0.0, rand, rand_off }
    }

    /// `zipf_init` (with `zipf_update`'s ζ(n, θ) over at most 10M terms).
    pub fn zipf_init(nranges: u64, theta: f64, center: Option<f64>, seed: u32) -> ZipfState {
        let mut zs = Self::shared_rand_init(nranges, center, seed);
        zs.theta = theta;
        zs.zeta2 = 1.0f64.powf(theta) + 0.5f64.powf(theta);
        for i in 0..nranges.min(ZIPF_MAX_GEN) {
            zs.zetan += (1.0 / (i + 1) as f64).powf(theta);
        }
        zs
    }

    /// `zipf_next`.
    pub fn zipf_next(&mut self) -> u64 {
        let n = self.nranges;
        let alpha = 1.0 / (1.0 - self.theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan);
        let rand_uni = self.rand.__rand() as f64 / FRAND32_MAX;
        let rand_z = rand_uni * self.zetan;
        let val: u64 = if rand_z < 1.0 {
            1
        } else if rand_z < 1.0 + 0.5f64.powf(self.theta) {
            2
        } else {
            1u64.wrapping_add((n as f64 * (eta * rand_uni - eta + 1.0).powf(alpha)) as u64)
        };
        __hash_u64(val.wrapping_sub(1)).wrapping_add(self.rand_off) % n
    }

    /// `pareto_init`.
    pub fn pareto_init(nranges: u64, h: f64, center: Option<f64>, seed: u32) -> ZipfState {
        let mut zs = Self::shared_rand_init(nranges, center, seed);
        zs.pareto_pow = h.ln() / (1.0 - h).ln();
        zs
    }

    /// `pareto_next`.
    pub fn pareto_next(&mut self) -> u64 {
        let rand = self.rand.__rand() as f64 / FRAND32_MAX;
        let n = ((self.nranges - 1) as f64 * rand.powf(self.pareto_pow)) as u64;
        __hash_u64(n).wrapping_add(self.rand_off) % self.nranges
    }
}

/// `GAUSS_ITERS`: the sum of this many uniform draws approximates a normal.
const GAUSS_ITERS: u64 = 12;

/// `struct gauss_state`.
#[derive(Clone, Debug)]
pub struct GaussState {
    r: FrandState,
    nranges: u64,
    stddev: u32,
    rand_off: u32,
}

impl GaussState {
    /// `gauss_init`: `dev` is a percentage of the ranges.
    pub fn gauss_init(nranges: u64, dev: f64, center: Option<f64>, seed: u32) -> GaussState {
        let mut stddev = 0u32;
        if dev != 0.0 {
            stddev = (nranges as f64 * dev / 100.0).ceil() as u32;
            stddev = stddev.min((nranges / 2) as u32);
        }
        // An unsigned int in fio: a centre below the middle wraps, as x86 does.
        let rand_off = center.map_or(0, |c| (nranges as f64 * (c - 0.5)) as i64 as u32);
        GaussState { r: init_rand_seed(seed as u64, false), nranges, stddev, rand_off }
    }

    /// `gauss_dev`: a deviation in [−stddev/2, stddev/2).
    fn gauss_dev(&mut self) -> i32 {
        if self.stddev == 0 {
            return 0;
        }
        let r = self.r.__rand();
        let vr = (self.stddev as f64 * (r as f64 / 4294967296.0)) as i32;
        vr.wrapping_sub((self.stddev / 2) as i32)
    }

    /// `gauss_next`.
    pub fn gauss_next(&mut self) -> u64 {
        let mut sum = 0u64;
        for _ in 0..GAUSS_ITERS {
            sum = sum.wrapping_add(self.r.__rand() % (self.nranges + 1));
        }
        sum = sum.div_ceil(GAUSS_ITERS);
        if self.stddev != 0 {
            let mut dev = self.gauss_dev();
            // `dev + sum` in unsigned 64-bit arithmetic.
            while (dev as i64 as u64).wrapping_add(sum) >= self.nranges {
                dev /= 2;
            }
            sum = sum.wrapping_add(dev as i64 as u64);
        }
        __hash_u64(sum).wrapping_add(self.rand_off as u64) % self.nranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_favours_some_ranges() {
        // zipf(1.2) over 1000 ranges: rank 0 takes about 1/ζ(1000, 1.2) ≈
        // 1/4.6 ≈ 22 % of the draws, all landing on one range (hash + offset).
        let mut z = ZipfState::zipf_init(1000, 1.2, None, 7);
        let mut counts = vec![0u32; 1000];
        for _ in 0..10_000 {
            counts[z.zipf_next() as usize] += 1;
        }
        let top = *counts.iter().max().unwrap();
        assert!((1900..=2500).contains(&top), "{top}");
    }

    #[test]
    fn gauss_stays_in_range() {
        let mut g = GaussState::gauss_init(100, 10.0, Some(0.2), 3);
        for _ in 0..1000 {
            assert!(g.gauss_next() < 100);
        }
    }
}
