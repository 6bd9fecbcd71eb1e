//! Completion latencies as fio keeps them (stat.c): a log-linear histogram
//! of nanosecond samples — `FIO_IO_U_PLAT_BITS` = 6, so values below 128 ns
//! are exact and every later power-of-two group has 64 buckets — plus the
//! running min, max, mean and variance (`add_stat_sample`, Welford's
//! method). Percentiles are read from the histogram exactly as
//! `calc_clat_percentiles` does: the first bucket at which the running
//! count reaches `p/100 × samples`, reported as the bucket's midpoint
//! (`plat_idx_to_val`).

const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_GROUP_NR: usize = 29;
/// `FIO_IO_U_PLAT_NR`.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// fio's default `percentile_list`.
pub const FIO_PERCENTILES: [f64; 17] = [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// `plat_val_to_idx`.
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 { 0 } else { 63 - val.leading_zeros() };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) << PLAT_BITS) as u64;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    (base + offset).min(PLAT_NR as u64 - 1) as usize
}

/// `plat_idx_to_val`: the midpoint of the bucket's range.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    if (idx as u64) < (PLAT_VAL << 1) {
        return idx as u64;
    }
    let error_bits = (idx as u32 >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = idx as u64 % PLAT_VAL;
    // base + (k + 0.5) × 2^error_bits, exact since error_bits ≥ 1 here.
    base + (2 * k + 1) * (1u64 << (error_bits - 1))
}

/// One latency series (fio's `io_stat` plus `io_u_plat`).
#[derive(Clone, Debug, PartialEq)]
pub struct LatStat {
    pub samples: u64,
    pub min: u64,
    pub max: u64,
    mean: f64,
    /// Sum of squared differences from the mean (`S`).
    s: f64,
    plat: Vec<u64>,
    /// Keep the histogram (fio keeps one only for the series it reports
    /// percentiles of: clat by default; slat and lat are `io_stat` alone).
    hist: bool,
}

impl Default for LatStat {
    fn default() -> Self {
        LatStat { samples: 0, min: u64::MAX, max: 0, mean: 0.0, s: 0.0, plat: Vec::new(), hist: true }
    }
}

impl LatStat {
    /// A series without the histogram: min, max, mean and variance only.
    pub fn summary_only() -> Self {
        LatStat { hist: false, ..LatStat::default() }
    }

    /// `add_stat_sample` + `add_lat_percentile_sample`.
    pub fn add(&mut self, ns: u64) {
        if self.hist {
            if self.plat.is_empty() {
                self.plat = vec![0; PLAT_NR];
            }
            self.plat[plat_val_to_idx(ns)] += 1;
        }
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.samples += 1;
        let delta = ns as f64 - self.mean;
        self.mean += delta / self.samples as f64;
        self.s += delta * (ns as f64 - self.mean);
    }

    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// `calc_lat`'s standard deviation (n − 1 in the denominator).
    pub fn stdev(&self) -> f64 {
        if self.samples > 1 {
            (self.s / (self.samples - 1) as f64).sqrt()
        } else {
            0.0
        }
    }

    /// Fold another series in (`sum_thread_stats` for group_reporting).
    pub fn merge(&mut self, o: &LatStat) {
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = o.clone();
            return;
        }
        let (n1, n2) = (self.samples as f64, o.samples as f64);
        let delta = o.mean - self.mean;
        let n = n1 + n2;
        self.mean += delta * n2 / n;
        self.s += o.s + delta * delta * n1 * n2 / n;
        self.samples += o.samples;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        for (a, b) in self.plat.iter_mut().zip(&o.plat) {
            *a += b;
        }
    }

    /// `sum_stat` with `pure_sum` (group_reporting's bandwidth and IOPS
    /// samples): min, max, mean, S and the sample count add up.
    pub fn sum(&mut self, o: &LatStat) {
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = o.clone();
            return;
        }
        self.min += o.min;
        self.max += o.max;
        self.samples += o.samples;
        self.mean += o.mean;
        self.s += o.s;
    }

    /// The histogram's non-empty buckets as (bucket value, count), in
    /// order: json+'s `bins` (`plat_idx_to_val` of each used index).
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.plat.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (plat_idx_to_val(i), c))
    }

    /// `calc_clat_percentiles` for `list` (ascending): one value per entry, in ns.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(list.len());
        if self.samples == 0 {
            return out;
        }
        let nr = self.samples as f64;
        let mut sum = 0u64;
        for (i, &count) in self.plat.iter().enumerate() {
            sum += count;
            while out.len() < list.len() && sum as f64 >= list[out.len()] / 100.0 * nr {
                out.push(plat_idx_to_val(i));
            }
            if out.len() == list.len() {
                break;
            }
        }
        out
    }
}

/// fio's `num2str(num, maxlen, 1, pow2, unit)`: at most `maxlen` digits
/// before the unit prefix, the rest as decimals (e.g. 12345 → "12.3k").
pub fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let prefix = if pow2 { IEC } else { SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let (mut post, mut modulo, mut carry) = (0usize, None, false);
    while post < prefix.len() && num.to_string().len() > maxlen {
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= prefix.len() {
        post = 0;
    }
    let Some(m) = modulo else { return format!("{num}{}{unit}", prefix[post]) };
    let digits = num.to_string().len();
    if maxlen <= digits + 1 {
        return format!("{}{}{unit}", num + carry as u64, prefix[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    format!("{num}.{}{}{unit}", &frac[2.min(frac.len())..], prefix[post])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip_like_fio() {
        // Below 128 every value is its own bucket.
        assert_eq!(plat_val_to_idx(100), 100);
        assert_eq!(plat_idx_to_val(100), 100);
        // 1000 ns: msb 9, error_bits 3, base (3+1)·64 = 256, offset
        // (1000 >> 3) & 63 = 125 & 63 = 61 → index 317; back: error_bits
        // 317/64 − 1 = 3, base 2^9 = 512, k = 61 → 512 + 61.5·8 = 1004.
        assert_eq!(plat_val_to_idx(1000), 317);
        assert_eq!(plat_idx_to_val(317), 1004);
        // The last bucket takes everything beyond 2^34 ns.
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_take_the_first_bucket_reaching_the_rank() {
        // 100 samples 1..=100 ns, all exact buckets: p50 is the first value
        // where the count reaches 50 → 50; p99 → 99; p99.9 → 100 (needs 99.9).
        let mut s = LatStat::default();
        for v in 1..=100 {
            s.add(v);
        }
        assert_eq!(s.percentiles(&[50.0, 99.0, 99.9]), vec![50, 99, 100]);
        assert_eq!((s.min, s.max), (1, 100));
        assert!((s.mean() - 50.5).abs() < 1e-9);
        // Sample stdev of 1..=100: sqrt(100·101/12) = 29.0115...
        assert!((s.stdev() - 29.011491975882016).abs() < 1e-9);
        let mut two = LatStat::default();
        two.merge(&s);
        two.merge(&s);
        assert_eq!((two.samples, two.percentiles(&[50.0])[0]), (200, 50));
    }

    #[test]
    fn num2str_matches_fio() {
        // 12,345 IOPS, 4 digits: 12 then ".3" → "12.3k".
        assert_eq!(num2str(12_345, 4, false, ""), "12.3k");
        assert_eq!(num2str(999, 4, false, ""), "999");
        // 50,462,720 B/s in powers of 1024: 49280 KiB (5 digits) → 48 MiB,
        // modulo 128 → .125 → "48.1MiB/s".
        assert_eq!(num2str(50_462_720, 4, true, "B/s"), "48.1MiB/s");
        // 3,000,000,000 bytes: 2929687 KiB → 2861 MiB (4 digits, no room).
        assert_eq!(num2str(3_000_000_000, 4, true, "B"), "2861MiB");
    }
}
