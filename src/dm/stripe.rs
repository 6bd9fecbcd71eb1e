//! dm-stripe (drivers/md/dm-stripe.c): chunks round-robin over N devices.
//!
//! Table arguments: `<stripes> <chunk size> (<device> <offset>){stripes}`.
//! The target length must divide into `stripes` equal widths of whole
//! chunks. Chunk `k` of the target goes to stripe `k mod stripes`, as that
//! device's chunk `k / stripes`, after the device's offset. Any chunk size
//! works (the kernel has a shift path for powers of two and a division
//! path otherwise; both compute the same).

use super::{parse_sectors, ArgError};

/// One `<device> <offset>` pair (`struct stripe`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stripe {
    pub dev: String,
    pub physical_start: u64,
}

/// `struct stripe_c`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripeC {
    pub stripes: u32,
    /// Target length / stripes: the sectors each device contributes.
    pub stripe_width: u64,
    pub chunk_size: u32,
    pub stripe: Vec<Stripe>,
}

/// `stripe_ctr` for a target of `len` sectors.
pub fn stripe_ctr(len: u64, argv: &[&str]) -> Result<StripeC, ArgError> {
    let [stripes, chunk, pairs @ ..] = argv else {
        return Err(ArgError::new("arguments", "striped takes <stripes> <chunk size> then a <device> <offset> pair per stripe"));
    };
    let stripes = parse_u32_nonzero(stripes).map_err(|m| ArgError::new("stripes", m))?;
    let chunk_size = parse_u32_nonzero(chunk).map_err(|m| ArgError::new("chunk_size", m))?;
    if len % stripes as u64 != 0 {
        return Err(ArgError::new("length", format!("target length {len} is not divisible by the number of stripes ({stripes})")));
    }
    let stripe_width = len / stripes as u64;
    if stripe_width % chunk_size as u64 != 0 {
        return Err(ArgError::new("length", format!("each stripe's width ({stripe_width} = {len}/{stripes}) is not divisible by the chunk size ({chunk_size})")));
    }
    if pairs.len() != 2 * stripes as usize {
        let msg = format!("{stripes} stripes need {stripes} <device> <offset> pairs, got {} argument(s) after the chunk size", pairs.len());
        return Err(ArgError::new("arguments", msg));
    }
    let stripe = pairs.chunks(2).enumerate().map(|(i, p)| get_stripe(i, p[0], p[1])).collect::<Result<_, _>>()?;
    Ok(StripeC { stripes, stripe_width, chunk_size, stripe })
}

/// `get_stripe`: one `<device> <offset>` pair.
fn get_stripe(i: usize, dev: &str, offset: &str) -> Result<Stripe, ArgError> {
    let physical_start = parse_sectors(offset).map_err(|m| ArgError::new(format!("stripe {i} offset"), m))?;
    Ok(Stripe { dev: dev.to_string(), physical_start })
}

/// `kstrtouint` plus the constructor's "must not be 0".
fn parse_u32_nonzero(s: &str) -> Result<u32, String> {
    let n = parse_sectors(s)?;
    match u32::try_from(n) {
        Ok(0) => Err("must not be 0".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{n} does not fit in 32 bits")),
    }
}

impl StripeC {
    /// `stripe_map_sector`, given the offset inside the target: (stripe,
    /// sector on that stripe's device before its `physical_start`).
    pub fn stripe_map_sector(&self, target_offset: u64) -> (u32, u64) {
        let chunk = self.chunk_size as u64;
        let chunk_no = target_offset / chunk;
        let stripe = (chunk_no % self.stripes as u64) as u32;
        (stripe, chunk_no / self.stripes as u64 * chunk + target_offset % chunk)
    }

    /// `stripe_map_range_sector`: where a range boundary at `target_offset`
    /// falls on stripe `target_stripe`. On its own stripe, exactly there;
    /// on another, at the start of the chunk row the boundary is in — or of
    /// the next row for stripes that come before the boundary's stripe
    /// (their chunk of this row is already wholly before the boundary).
    pub fn stripe_map_range_sector(&self, target_offset: u64, target_stripe: u32) -> u64 {
        let (stripe, result) = self.stripe_map_sector(target_offset);
        if stripe == target_stripe {
            return result;
        }
        let chunk = self.chunk_size as u64;
        let row_start = result - result % chunk;
        if target_stripe < stripe {
            row_start + chunk
        } else {
            row_start
        }
    }

    /// `stripe_map_range`: the discard/write-zeroes clone for stripe
    /// `target_stripe` of the range [begin, end) (target offsets): device
    /// sector (`physical_start` included) and length, or `None` when the
    /// range holds none of that stripe's chunks (the clone is ended).
    pub fn stripe_map_range(&self, begin: u64, end: u64, target_stripe: u32) -> Option<(u64, u64)> {
        let b = self.stripe_map_range_sector(begin, target_stripe);
        let e = self.stripe_map_range_sector(end, target_stripe);
        (b < e).then(|| (b + self.stripe[target_stripe as usize].physical_start, e - b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> StripeC {
        stripe_ctr(6_291_456, &["3", "128", "/dev/sdb", "0", "/dev/sdc", "0", "/dev/sdd", "2048"]).unwrap()
    }

    #[test]
    fn every_sector_maps_once() {
        // 3 stripes of 2 chunks of 8 (a 48-sector target): all 48 sectors land on distinct
        // (stripe, sector) places inside each stripe's 16-sector width.
        let sc = stripe_ctr(48, &["3", "8", "a", "0", "b", "0", "c", "0"]).unwrap();
        let mut seen = std::collections::HashSet::new();
        for s in 0..48 {
            let (st, x) = sc.stripe_map_sector(s);
            assert!(x < sc.stripe_width);
            assert!(seen.insert((st, x)));
        }
    }

    #[test]
    fn range_clones_cover_exactly_the_mapped_sectors() {
        // For any range, the per-stripe clones hold exactly the sectors stripe_map_sector sends there.
        let sc = stripe_ctr(3 * 960, &["3", "96", "a", "0", "b", "0", "c", "0"]).unwrap();
        for (b, e) in [(0, 2880), (100, 1100), (95, 97), (200, 390), (500, 501)] {
            for t in 0..3 {
                let got: Vec<u64> = sc.stripe_map_range(b, e, t).map_or(vec![], |(s, n)| (s..s + n).collect());
                let want: Vec<u64> = (b..e).map(|x| sc.stripe_map_sector(x)).filter(|m| m.0 == t).map(|m| m.1).collect();
                assert_eq!(got, want, "range {b}..{e} stripe {t}");
            }
        }
    }

    #[test]
    fn non_power_of_two_chunk() {
        // chunk 96 over 3: sector 500 is chunk 5 (480..575), 20 in → stripe 2, its chunk 1 → 96 + 20 = 116.
        let sc = stripe_ctr(3 * 960, &["3", "96", "a", "0", "b", "0", "c", "0"]).unwrap();
        assert_eq!(sc.stripe_map_sector(500), (2, 116));
    }

    #[test]
    fn range_sector_rounds_to_the_row() {
        // Boundary 1100: chunk 8 (76 in), stripe 2 at 332. Stripe 2 → 332; stripe 0 and 1 (before 2)
        // → row start 256 + 128 = 384; boundary 100 (stripe 0 at 100) for stripe 1 → row start 0.
        let sc = three();
        assert_eq!(sc.stripe_map_range_sector(1100, 2), 332);
        assert_eq!(sc.stripe_map_range_sector(1100, 0), 384);
        assert_eq!(sc.stripe_map_range_sector(1100, 1), 384);
        assert_eq!(sc.stripe_map_range_sector(100, 1), 0);
        // physical_start of stripe 2 (2048) is added to the clone's start: [0, 332) → 2048.
        assert_eq!(sc.stripe_map_range(100, 1100, 2), Some((2048, 332)));
    }
}
