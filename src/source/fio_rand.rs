//! fio's random number generators and its per-job seeds, so a fio job draws
//! the same numbers as fio 3.x does for the same job and seed.
//!
//! * lib/rand.h, lib/rand.c: the combined Tausworthe generators — taus88
//!   (32-bit, `__rand32`) and taus258 (64-bit, `__rand64`) — seeded by
//!   `init_rand_seed` (an LCG fills the state words, then six cranks);
//!   `rand_between` for percentages.
//! * hash.h: `__hash_u64` (golden-ratio multiply) and Bob Jenkins' `jhash`.
//! * init.c `setup_random_seeds`, `td_fill_rand_seeds`: one seed per purpose
//!   (`FIO_RAND_*_OFF`) from `randseed` and the job's `thread_number`, and
//!   how `randrepeat`/`allrandrepeat` override them — which changed in
//!   fio 3.35 ([`SeedRules`]).

/// `FIO_RANDSEED` (init.c), the fixed seed of repeatable runs before 3.35.
pub const FIO_RANDSEED: u64 = 0xb189_9bed;

/// Indices of `td->rand_seeds` (fio.h `FIO_RAND_*_OFF`) that the model uses.
pub const FIO_RAND_BS_OFF: usize = 0;
pub const FIO_RAND_MIX_OFF: usize = 4;
pub const FIO_RAND_BLOCK_OFF: usize = 6;
pub const FIO_RAND_ZONE_OFF: usize = 16;
/// `FIO_RAND_NR_OFFS`: how many seeds a job has in fio 3.33 (later
/// releases append more, which leaves these unchanged).
pub const FIO_RAND_NR_OFFS: usize = 21;

/// `FRAND32_MAX_PLUS_ONE` as fio computes it.
const FRAND32_MAX_PLUS_ONE: f64 = 4294967296.0;

/// `struct frand_state`: taus88 (`use64` off) or taus258.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrandState {
    Taus88([u32; 3]),
    Taus258([u64; 5]),
}

/// `__seed`: state words must exceed their generator's minimum.
fn __seed(x: u64, m: u64) -> u64 {
    if x < m {
        x + m
    } else {
        x
    }
}

/// The LCG start value fio writes as `(2^31) + (2^17) + (2^7)`: in C `^` is
/// exclusive or, so it is 29 + 19 + 5 = 53.
const LCG_START: u64 = (2 ^ 31) + (2 ^ 17) + (2 ^ 7);

/// `init_rand_seed`: taus88 takes the seed's low 32 bits.
pub fn init_rand_seed(seed: u64, use64: bool) -> FrandState {
    let mut s = if use64 {
        let lcg = |x: u64| x.wrapping_mul(6906969069) ^ seed;
        let mut w = [0u64; 5];
        let mins = [1, 7, 15, 33, 49];
        let mut prev = LCG_START;
        for (i, m) in mins.into_iter().enumerate() {
            w[i] = __seed(lcg(prev), m);
            prev = w[i];
        }
        FrandState::Taus258(w)
    } else {
        let seed = seed as u32;
        let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
        let s1 = __seed(lcg(LCG_START as u32) as u64, 1) as u32;
        let s2 = __seed(lcg(s1) as u64, 7) as u32;
        let s3 = __seed(lcg(s2) as u64, 15) as u32;
        FrandState::Taus88([s1, s2, s3])
    };
    for _ in 0..6 {
        s.__rand();
    }
    s
}

/// One Tausworthe component step (`TAUSWORTHE(s, a, b, c, d)`).
#[inline(always)]
fn taus32(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
    ((s & c) << d) ^ (((s << a) ^ s) >> b)
}

#[inline(always)]
fn taus64(s: u64, a: u32, b: u32, c: u64, d: u32) -> u64 {
    ((s & c) << d) ^ (((s << a) ^ s) >> b)
}

impl FrandState {
    /// `rand_max`.
    pub fn rand_max(&self) -> u64 {
        match self {
            FrandState::Taus88(_) => u32::MAX as u64,
            FrandState::Taus258(_) => u64::MAX,
        }
    }

    /// `__rand`: `__rand32` or `__rand64`.
    #[inline]
    pub fn __rand(&mut self) -> u64 {
        match self {
            FrandState::Taus88(s) => {
                s[0] = taus32(s[0], 13, 19, 4294967294, 12);
                s[1] = taus32(s[1], 2, 25, 4294967288, 4);
                s[2] = taus32(s[2], 3, 11, 4294967280, 17);
                (s[0] ^ s[1] ^ s[2]) as u64
            }
            FrandState::Taus258(s) => {
                s[0] = taus64(s[0], 1, 53, 18446744073709551614, 10);
                s[1] = taus64(s[1], 24, 50, 18446744073709551104, 5);
                s[2] = taus64(s[2], 3, 23, 18446744073709547520, 29);
                s[3] = taus64(s[3], 5, 24, 18446744073709420544, 23);
                s[4] = taus64(s[4], 3, 33, 18446744073701163008, 8);
                s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
            }
        }
    }

    /// `r / (rand_max + 1.0)` for a draw `r`: uniform in [0, 1).
    #[inline]
    pub fn unit(&self, r: u64) -> f64 {
        r as f64 / (self.rand_max() as f64 + 1.0)
    }

    /// `rand_between`: uniform in [start, end] (`rand32_upto`/`rand64_upto`).
    pub fn rand_between(&mut self, start: u64, end: u64) -> u64 {
        let span = end - start;
        let r = self.__rand();
        let v = match self {
            FrandState::Taus88(_) => ((span as u32).wrapping_add(1) as f64 * (r as f64 / FRAND32_MAX_PLUS_ONE)) as i32 as u32 as u64,
            FrandState::Taus258(_) => (span.wrapping_add(1) as f64 * (r as f64 / (FRAND32_MAX_PLUS_ONE * FRAND32_MAX_PLUS_ONE))) as u64,
        };
        start + v
    }
}

/// `__hash_u64` (hash.h): multiply by the 64-bit golden ratio.
#[inline]
pub fn __hash_u64(v: u64) -> u64 {
    v.wrapping_mul(0x61C8_8646_80B5_83EB)
}

/// `jhash` (hash.h, Bob Jenkins' lookup2 as the kernel has it).
pub fn jhash(key: &[u8], initval: u32) -> u32 {
    let mut a = 0x61C8_8647u32.wrapping_add(key.len() as u32).wrapping_add(initval);
    let (mut b, mut c) = (a, a);
    let mut k = key;
    // fio adds one byte per word here (`a += *k`), not four: kept as is.
    while k.len() > 12 {
        a = a.wrapping_add(k[0] as u32);
        b = b.wrapping_add(k[4] as u32);
        c = c.wrapping_add(k[8] as u32);
        __jhash_mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    let byte = |i: usize, shift: u32| k.get(i).map_or(0, |&x| (x as u32) << shift);
    c = c.wrapping_add(byte(11, 24)).wrapping_add(byte(10, 16)).wrapping_add(byte(9, 8)).wrapping_add(byte(8, 0));
    b = b.wrapping_add(byte(7, 24)).wrapping_add(byte(6, 16)).wrapping_add(byte(5, 8)).wrapping_add(byte(4, 0));
    a = a.wrapping_add(byte(3, 24)).wrapping_add(byte(2, 16)).wrapping_add(byte(1, 8)).wrapping_add(byte(0, 0));
    __jhash_final(&mut a, &mut b, &mut c);
    c
}

fn __jhash_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    for (x, y, z, r) in [(0, 2, 1, 4), (1, 0, 2, 6), (2, 1, 0, 8), (0, 2, 1, 16), (1, 0, 2, 19), (2, 1, 0, 4)] {
        let mut v = [*a, *b, *c];
        // x -= y; x ^= rol(y, r); y += z
        v[x] = v[x].wrapping_sub(v[y]) ^ v[y].rotate_left(r);
        v[y] = v[y].wrapping_add(v[z]);
        [*a, *b, *c] = v;
    }
}

fn __jhash_final(a: &mut u32, b: &mut u32, c: &mut u32) {
    for (x, y, r) in [(2, 1, 14), (0, 2, 11), (1, 0, 25), (2, 1, 16), (0, 2, 4), (1, 0, 14), (2, 1, 24)] {
        let mut v = [*a, *b, *c];
        // x ^= y; x -= rol(y, r)
        v[x] = (v[x] ^ v[y]).wrapping_sub(v[y].rotate_left(r));
        [*a, *b, *c] = v;
    }
}

/// How fio derives a job's seeds from `randrepeat`, `allrandrepeat` and
/// `randseed`; fio 3.35 changed it (commits 95282650 "init: clean up random
/// seed options" and 073974b2 "filesetup: better handle non-uniform
/// distributions").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedRules {
    /// fio 3.31 – 3.34: `randrepeat` sets the offset seed to
    /// `FIO_RANDSEED × thread_number`, even when `randseed` is given (the
    /// seeds are set before `randseed` clears `randrepeat`); `allrandrepeat`
    /// (its own option) sets every seed i to `FIO_RANDSEED × thread_number +
    /// i`; a non-uniform distribution seeds from `jhash(filename) ×
    /// thread_number`, or from the offset seed when `randseed` is given.
    Fio331,
    /// fio 3.35 and later: every seed comes from `randseed` (default 0x89),
    /// `allrandrepeat` is `randrepeat`'s alias; a non-uniform distribution
    /// seeds from `jhash(filename) × thread_number × offset seed`.
    Fio335,
}

impl SeedRules {
    /// The rules of fio `3.N` ("3.33", "3.39", ...); `None` for a version
    /// whose rules are not modelled.
    pub fn of_version(v: &str) -> Option<SeedRules> {
        match fio_minor(v)? {
            31..=34 => Some(SeedRules::Fio331),
            35.. => Some(SeedRules::Fio335),
            _ => None,
        }
    }
}

/// N of a fio version "3.N".
pub fn fio_minor(v: &str) -> Option<u32> {
    v.strip_prefix("3.")?.parse().ok()
}

/// fio 3.42 (commit 7a1b6f44) really switches the offset generator to
/// tausworthe64 when a region has more blocks than the 32-bit generator
/// covers and the job did not choose a generator; before, the switch was
/// made after the generator was seeded and changed nothing.
pub const TAUSWORTHE64_SWITCH_MINOR: u32 = 42;

/// What decides a job's seeds (the job's options, as fio keeps them).
#[derive(Clone, Copy, Debug)]
pub struct SeedOptions {
    pub randrepeat: bool,
    pub allrandrepeat: bool,
    /// `randseed`, and whether the job set it (`fio_option_is_set`).
    pub randseed: u64,
    pub randseed_set: bool,
    /// 1-based, counted over every job and clone in order (`thread_number`).
    pub thread_number: u64,
}

impl SeedOptions {
    /// `rand_repeatable` after `fixup_options`: a `randseed` overrides it.
    pub fn rand_repeatable(&self) -> bool {
        self.randrepeat && !self.randseed_set
    }
}

/// `setup_random_seeds` + the overrides of `td_fill_rand_seeds`. Without
/// `randrepeat` or `randseed` fio reads /dev/urandom; the model uses
/// `fallback` (the scenario's seed) as the `randseed` instead, so a run is
/// still reproducible.
pub fn setup_random_seeds(o: &SeedOptions, rules: SeedRules, fallback: u64) -> [u64; FIO_RAND_NR_OFFS] {
    let tn = o.thread_number;
    // fio seeds before `fixup_options` lets `randseed` clear
    // `rand_repeatable`: here `randrepeat` is still as the job gave it.
    let mut seed = if !o.randrepeat && !o.randseed_set { fallback } else { o.randseed };
    for _ in 0..4 {
        seed = seed.wrapping_mul(0x9e37_0001);
    }
    let mut seeds = [0u64; FIO_RAND_NR_OFFS];
    for (i, s) in seeds.iter_mut().enumerate() {
        *s = seed.wrapping_mul(tn).wrapping_add(i as u64);
        seed = seed.wrapping_mul(0x9e37_0001);
    }
    if rules == SeedRules::Fio331 {
        if o.allrandrepeat {
            for (i, s) in seeds.iter_mut().enumerate() {
                *s = FIO_RANDSEED.wrapping_mul(tn).wrapping_add(i as u64);
            }
        }
        if o.randrepeat {
            seeds[FIO_RAND_BLOCK_OFF] = FIO_RANDSEED.wrapping_mul(tn);
        }
    }
    seeds
}

/// The seed of a non-uniform distribution (`__init_rand_distribution`),
/// an `unsigned int` in fio.
pub fn distribution_seed(file_name: &str, o: &SeedOptions, rules: SeedRules, seeds: &[u64; FIO_RAND_NR_OFFS]) -> u32 {
    let h = jhash(file_name.as_bytes(), 0).wrapping_mul(o.thread_number as u32);
    match rules {
        SeedRules::Fio331 if o.rand_repeatable() => h,
        SeedRules::Fio331 => seeds[FIO_RAND_BLOCK_OFF] as u32,
        SeedRules::Fio335 => h.wrapping_mul(seeds[FIO_RAND_BLOCK_OFF] as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcg_start_is_an_exclusive_or() {
        // 2^31 = 29, 2^17 = 19, 2^7 = 5 in C.
        assert_eq!(LCG_START, 53);
    }

    #[test]
    fn taus88_from_seed_one() {
        // init: s1 = 53·69069 ^ 1 = 3660656 (3660657 ^ ... worked below),
        // the state after six cranks is what the first draw continues from.
        // 53 × 69069 = 3660657; ^1 = 3660656.
        let s = init_rand_seed(1, false);
        let FrandState::Taus88(_) = s else { panic!("taus88") };
        // Two generators from the same seed agree; different seeds differ.
        let (mut a, mut b, mut c) = (init_rand_seed(1, false), init_rand_seed(1, false), init_rand_seed(2, false));
        let (x, y, z) = (a.__rand(), b.__rand(), c.__rand());
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert!(x <= u32::MAX as u64);
    }

    #[test]
    fn repeatable_offset_seed_before_3_35() {
        // randrepeat=1, no randseed, thread 2: FIO_RANDSEED × 2.
        let o = SeedOptions { randrepeat: true, allrandrepeat: false, randseed: 0x89, randseed_set: false, thread_number: 2 };
        let s = setup_random_seeds(&o, SeedRules::Fio331, 0);
        assert_eq!(s[FIO_RAND_BLOCK_OFF], 0x1_6313_37da);
        // allrandrepeat: seed i is FIO_RANDSEED × 2 + i, then the offset
        // seed is set again without the + 6.
        let s = setup_random_seeds(&SeedOptions { allrandrepeat: true, ..o }, SeedRules::Fio331, 0);
        assert_eq!(s[FIO_RAND_MIX_OFF], 0x1_6313_37da + 4);
        assert_eq!(s[FIO_RAND_BLOCK_OFF], 0x1_6313_37da);
    }

    #[test]
    fn randseed_scrambles() {
        // randseed=1, thread 1: seed = 0x9e370001^4 (mod 2^64), seeds[0] = seed.
        let o = SeedOptions { randrepeat: true, allrandrepeat: false, randseed: 1, randseed_set: true, thread_number: 1 };
        let m = 0x9e37_0001u64;
        let s4 = m.wrapping_mul(m).wrapping_mul(m).wrapping_mul(m);
        let s = setup_random_seeds(&o, SeedRules::Fio331, 0);
        assert_eq!(s[0], s4);
        assert_eq!(s[1], s4.wrapping_mul(m) + 1);
    }

    #[test]
    fn versions() {
        assert_eq!(SeedRules::of_version("3.33"), Some(SeedRules::Fio331));
        assert_eq!(SeedRules::of_version("3.35"), Some(SeedRules::Fio335));
        assert_eq!(SeedRules::of_version("3.30"), None);
        assert_eq!(SeedRules::of_version("2.99"), None);
        assert_eq!(SeedRules::of_version("3.x"), None);
    }

    #[test]
    fn jhash_empty_and_short() {
        // Empty key: a = b = c = 0x61C88647 + 0 + 0, no mixing: c returned.
        assert_eq!(jhash(b"", 0), 0x61C8_8647);
        // Different keys give different hashes.
        assert_ne!(jhash(b"sda", 0), jhash(b"sdb", 0));
    }
}
