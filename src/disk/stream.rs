//! Sequential-stream detection: the device's read-ahead.
//!
//! An SSD or disk that sees a read start exactly where an earlier read
//! ended treats it as a sequential stream and reads ahead: the next
//! continuation is already in the device's buffer and skips the media
//! access. Firmware tracks a few such streams; a read that continues
//! none of them starts a new one, replacing the oldest.
//!
//! "Continues" is exact, as blktrace's zero-seek count measures it (the
//! next request's start equals the previous one's end): a read that
//! arrives out of order, even inside the range the device just read,
//! misses, which is what disorder at the device costs.

/// The ends of the read streams a device tracks, oldest replaced first.
#[derive(Clone, Debug, Default)]
pub struct Streams {
    /// Sector each tracked stream's next read would start at.
    ends: Vec<u64>,
    /// The slot a miss replaces (round robin: the oldest stream).
    victim: usize,
}

impl Streams {
    /// Tracks `n` streams (0: no detection, every read misses).
    pub fn new(n: u32) -> Self {
        Streams { ends: vec![u64::MAX; n as usize], victim: 0 }
    }

    /// A read of `sector..end`: whether it continues a tracked stream.
    /// Either way the stream now ends at `end`.
    #[inline]
    pub fn continues(&mut self, sector: u64, end: u64) -> bool {
        if let Some(slot) = self.ends.iter_mut().find(|e| **e == sector) {
            *slot = end;
            return true;
        }
        if let Some(slot) = self.ends.get_mut(self.victim) {
            *slot = end;
            self.victim = (self.victim + 1) % self.ends.len();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stream_hits_only_the_exact_continuation() {
        let mut s = Streams::new(1);
        assert!(!s.continues(0, 128)); // a new stream
        assert!(s.continues(128, 256)); // continues it
        assert!(!s.continues(512, 640)); // a jump: a new stream replaces it
        assert!(!s.continues(256, 384)); // the old stream is gone
    }

    #[test]
    fn two_streams_follow_two_interleaved_readers() {
        let mut s = Streams::new(2);
        assert!(!s.continues(0, 8));
        assert!(!s.continues(1000, 1008));
        assert!(s.continues(8, 16));
        assert!(s.continues(1008, 1016));
        // A third reader replaces the oldest slot (the one at 16).
        assert!(!s.continues(5000, 5008));
        assert!(!s.continues(16, 24));
    }

    #[test]
    fn no_streams_never_hit() {
        let mut s = Streams::new(0);
        assert!(!s.continues(0, 8));
        assert!(!s.continues(8, 16));
    }
}
