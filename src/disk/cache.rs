//! The device's volatile write cache.
//!
//! A write lands in the cache at the interface's speed and completes
//! there, while the cache drains to the media at the media's write
//! bandwidth in arrival order. A write completes only once the data
//! still waiting for the media, its own included, fits in the cache: a
//! burst up to the cache's size completes at interface speed, a longer
//! one at media speed. A FUA write completes when its data is on the
//! media; a flush when everything written before it is.

/// Drain state of one device's write cache.
#[derive(Clone, Debug)]
pub struct WriteCache {
    /// Bytes the cache holds (0: no cache, writes go to the media).
    bytes: u64,
    /// The media's write rate, bytes per second.
    media_bandwidth: u64,
    /// How long the media takes to absorb a full cache.
    full_drain_ns: u64,
    /// When every byte accepted so far will be on the media.
    media_done: u64,
}

impl WriteCache {
    pub fn new(bytes: u64, media_bandwidth: u64) -> Self {
        let media_bandwidth = media_bandwidth.max(1);
        let full_drain_ns = (bytes as u128 * 1_000_000_000 / media_bandwidth as u128) as u64;
        WriteCache { bytes, media_bandwidth, full_drain_ns, media_done: 0 }
    }

    pub fn enabled(&self) -> bool {
        self.bytes != 0
    }

    /// A write of `bytes` that is in the cache at `arrived`: when it
    /// completes (`fua`: when it is on the media).
    pub fn write(&mut self, arrived: u64, bytes: u32, fua: bool) -> u64 {
        let drain = bytes as u64 * 1_000_000_000 / self.media_bandwidth;
        self.media_done = self.media_done.max(arrived) + drain;
        if fua {
            return self.media_done;
        }
        // The backlog after this write must fit: it may complete once the
        // media is no more than a full cache behind.
        arrived.max(self.media_done.saturating_sub(self.full_drain_ns))
    }

    /// A cache flush issued at `now`: when the media holds everything.
    pub fn flushed_at(&self, now: u64) -> u64 {
        now.max(self.media_done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_within_the_cache_completes_at_once_then_at_media_speed() {
        // 1 MiB cache draining at 1 GiB/s (1 MiB in 976,562 ns; 256 KiB in
        // 244,140 ns). Four 256 KiB writes arriving at t=0 fill it: each
        // completes on arrival. The fifth must wait until the media is a
        // cache behind its own end: 5 × 244,140 − 976,562 = 244,138 ns.
        let mut c = WriteCache::new(1 << 20, 1 << 30);
        for _ in 0..4 {
            assert_eq!(c.write(0, 256 << 10, false), 0);
        }
        assert_eq!(c.write(0, 256 << 10, false), 5 * 244_140 - 976_562);
        // A flush now waits for all five on the media: 1,220,700 ns.
        assert_eq!(c.flushed_at(0), 1_220_700);
    }

    #[test]
    fn fua_waits_for_the_media() {
        // 4 KiB at 1 GB/s: 4,096 ns after it arrives, behind nothing.
        let mut c = WriteCache::new(1 << 20, 1_000_000_000);
        assert_eq!(c.write(10_000, 4096, true), 14_096);
    }
}
