//! A rotating disk's positioning time: seek curve, rotation, track
//! read-ahead.
//!
//! The seek curve is Ruemmler and Wilkes' two-regime form ("An
//! introduction to disk drive modeling", IEEE Computer 27(3), 1994): a
//! short seek, dominated by the arm's acceleration, grows with the square
//! root of the distance in cylinders; a long one, coasting at full speed,
//! linearly: `a + b·√d` below a boundary, `c + e·d` from it on. Without
//! a cylinder count the distance is the fraction of the capacity and the
//! curve runs `seek_min + (seek_max − seek_min)·√fraction`. A head that
//! does not move waits for no seek; a request that starts where the
//! previous one ended (or, with track read-ahead, within the track the
//! drive kept reading after it) waits for no rotation either; any other
//! waits half a revolution on average.

/// A seek curve in cylinders (Ruemmler and Wilkes' form).
#[derive(Clone, Debug, PartialEq)]
pub struct SeekCurve {
    /// `a`: short-seek constant.
    pub short_ns: u64,
    /// `b`: short-seek time per √cylinder.
    pub short_sqrt_ns: f64,
    /// First distance (cylinders) on the long regime.
    pub boundary_cyl: u64,
    /// `c`: long-seek constant.
    pub long_ns: u64,
    /// `e`: long-seek time per cylinder.
    pub long_per_cyl_ns: f64,
}

/// A rotating disk's mechanics.
#[derive(Clone, Debug, PartialEq)]
pub struct Rotation {
    pub rpm: u32,
    /// Track-to-track seek (the √-of-capacity curve).
    pub seek_min_ns: u64,
    /// Full-stroke seek (the √-of-capacity curve).
    pub seek_max_ns: u64,
    /// Cylinders; with `curve`, distances are counted in them.
    pub cylinders: u64,
    pub curve: Option<SeekCurve>,
    /// Sectors the drive keeps reading into its buffer after a read (its
    /// track read-ahead; 0: none).
    pub track_sectors: u64,
}

impl SeekCurve {
    /// Seek time over `d` cylinders (0 when the arm does not move).
    pub fn seek_ns(&self, d: u64) -> u64 {
        if d == 0 {
            0
        } else if d < self.boundary_cyl {
            self.short_ns + (self.short_sqrt_ns * (d as f64).sqrt()) as u64
        } else {
            self.long_ns + (self.long_per_cyl_ns * d as f64) as u64
        }
    }
}

impl Rotation {
    /// Seek time from sector `from` to `to` of a disk of `capacity` sectors.
    pub fn seek_ns(&self, from: u64, to: u64, capacity: u64) -> u64 {
        let distance = from.abs_diff(to);
        match &self.curve {
            Some(c) => {
                let per_cyl = (capacity / self.cylinders.max(1)).max(1);
                c.seek_ns((to / per_cyl).abs_diff(from / per_cyl))
            }
            None if distance == 0 => 0,
            None => {
                let frac = (distance as f64 / capacity as f64).sqrt();
                self.seek_min_ns + ((self.seek_max_ns.saturating_sub(self.seek_min_ns)) as f64 * frac) as u64
            }
        }
    }

    /// Average rotational delay: half a revolution.
    pub fn half_turn_ns(&self) -> u64 {
        30_000_000_000 / self.rpm.max(1) as u64
    }

    /// Positioning before a request at `sector` with the head after
    /// `head` (where the last request ended): nothing for a request that
    /// starts there or in the read-ahead beyond it, else seek plus half a
    /// revolution.
    pub fn positioning_ns(&self, head: u64, sector: u64, capacity: u64) -> u64 {
        if sector >= head && sector - head <= self.track_sectors {
            return 0;
        }
        self.seek_ns(head, sector, capacity) + self.half_turn_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The HP 97560 as Ruemmler and Wilkes (1994, table 1) give it: 1962
    /// cylinders, 4002 rpm, seek 3.24 + 0.400·√d ms below 383 cylinders,
    /// 8.00 + 0.008·d ms from there.
    fn hp97560() -> Rotation {
        Rotation {
            rpm: 4002,
            seek_min_ns: 0,
            seek_max_ns: 0,
            cylinders: 1962,
            curve: Some(SeekCurve {
                short_ns: 3_240_000,
                short_sqrt_ns: 400_000.0,
                boundary_cyl: 383,
                long_ns: 8_000_000,
                long_per_cyl_ns: 8_000.0,
            }),
            track_sectors: 0,
        }
    }

    #[test]
    fn hp97560_matches_the_published_curve() {
        let r = hp97560();
        let c = r.curve.as_ref().unwrap();
        // 1 cylinder: 3.24 + 0.4 = 3.64 ms; 100: 3.24 + 4.0 = 7.24 ms;
        // 382: 3.24 + 0.4·19.5448 = 11.0579 ms; 383: 8 + 3.064 = 11.064 ms;
        // full stroke 1961: 8 + 15.688 = 23.688 ms.
        assert_eq!(c.seek_ns(1), 3_640_000);
        assert_eq!(c.seek_ns(100), 7_240_000);
        assert_eq!(c.seek_ns(382) / 1000, 11_057);
        assert_eq!(c.seek_ns(383), 11_064_000);
        assert_eq!(c.seek_ns(1961), 23_688_000);
        // 4002 rpm: 14.993 ms a turn, 7.496 ms on average.
        assert_eq!(r.half_turn_ns(), 7_496_251);
    }

    #[test]
    fn distances_are_counted_in_cylinders() {
        // 1962 cylinders of 19 × 72 sectors (the drive's geometry): a jump
        // of 100 cylinders costs the 100-cylinder seek and half a turn.
        let r = hp97560();
        let cap = 1962 * 19 * 72;
        assert_eq!(r.positioning_ns(0, 100 * 19 * 72, cap), 7_240_000 + 7_496_251);
        // Within the same cylinder: no seek, still half a turn.
        assert_eq!(r.positioning_ns(0, 500, cap), 7_496_251);
    }

    #[test]
    fn track_read_ahead_serves_a_short_forward_skip() {
        let mut r = hp97560();
        r.track_sectors = 72;
        let cap = 1962 * 19 * 72;
        assert_eq!(r.positioning_ns(1000, 1000, cap), 0);
        assert_eq!(r.positioning_ns(1000, 1072, cap), 0);
        // Backwards or past the read-ahead: a rotation at least.
        assert!(r.positioning_ns(1000, 992, cap) >= 7_496_251);
        assert!(r.positioning_ns(1000, 1073, cap) >= 7_496_251);
    }
}
