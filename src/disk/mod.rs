//! Device service-time model: turns the stream of issued requests into
//! completion times, with a cost that depends on the pattern the block
//! layer produces.
//!
//! A device admits commands no faster than its IOPS cap and works on up
//! to `parallelism` of them at once (its channels and dies: with each
//! command's access time this bounds small random I/O at
//! `parallelism / latency`). Each command waits its access time — a read
//! that continues one of the device's tracked streams was read ahead and
//! waits `seq_read_latency` instead of `read_latency` (stream.rs); a
//! rotating disk adds seek and rotation (seek.rs) — then holds the one
//! transfer path for its per-command overhead, which no other command
//! overlaps, plus its data at the interface's bandwidth: so the bandwidth
//! a block size reaches is `bs / (overhead + bs / bandwidth)`, and more,
//! smaller requests cost more. Writes land in the device's write cache
//! and complete there until it is full, then at the media's speed; FUA
//! writes and flushes wait for the media (cache.rs). Discards and write
//! zeroes cost a fixed time per command plus a time per GiB, on their own
//! (often serialised) channel. A device that posts completions in batches
//! (a virtual disk whose host thread drains the queue before it
//! interrupts) holds each completion until it has no command left
//! (batch.rs). Every figure is a parameter; presets give typical devices
//! (presets.rs; docs/devices.md lists their sources).

mod batch;
mod cache;
mod presets;
mod seek;
mod stream;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bio::{Op, SECTOR_SIZE};

pub use presets::PRESETS;
pub use seek::{Rotation, SeekCurve};

use cache::WriteCache;
use stream::Streams;

#[derive(Clone, Debug, PartialEq)]
pub struct ServiceModel {
    /// Access time of a read the device has not read ahead (a media read).
    pub read_latency_ns: u64,
    pub write_latency_ns: u64,
    /// Read bandwidth of the transfer path (the interface), bytes per second.
    pub bandwidth: u64,
    /// Write bandwidth of the transfer path, bytes per second.
    pub write_bandwidth: u64,
    /// Commands per second the device admits (0 = no cap).
    pub iops: u64,
    /// Commands served at once.
    pub parallelism: u32,
    /// Per discard / write-zeroes / secure-erase command.
    pub discard_latency_ns: u64,
    /// Added per GiB discarded.
    pub discard_ns_per_gib: u64,
    /// Discard commands served at once.
    pub discard_parallelism: u32,
    /// A cache flush, once the cache has drained.
    pub flush_latency_ns: u64,
    /// Time each read or write holds the transfer path besides its data:
    /// per-command protocol and firmware work that does not overlap other
    /// commands' transfers (0 in the generic presets).
    pub command_overhead_ns: u64,
    /// The same for a write (a UFS or SCSI write also waits for the
    /// device's ready-to-transfer before its data moves).
    pub write_command_overhead_ns: u64,
    /// Read streams the device tracks for read-ahead (0: none).
    pub streams: u32,
    /// Access time of a read that continues a tracked stream: its data
    /// was read ahead.
    pub seq_read_latency_ns: u64,
    /// Bytes of volatile write cache (0: writes go to the media at
    /// `write_bandwidth`, nothing to drain).
    pub write_cache_bytes: u64,
    /// The rate the write cache drains to the media, bytes per second.
    pub media_write_bandwidth: u64,
    pub rotation: Option<Rotation>,
    /// Completions are posted only once the device has served every
    /// command it holds, all together (batch.rs).
    pub batch_completions: bool,
}

impl ServiceModel {
    /// Time a command holds the transfer path: its overhead and its data.
    fn transfer_ns(&self, op: Op, bytes: u32) -> u64 {
        let (bw, overhead) = if op.is_write() {
            (self.write_bandwidth, self.write_command_overhead_ns)
        } else {
            (self.bandwidth, self.command_overhead_ns)
        };
        // A u32 of bytes times 10⁹ fits in a u64.
        overhead + bytes as u64 * 1_000_000_000 / bw.max(1)
    }
}

/// One disk's service state.
#[derive(Clone, Debug)]
pub struct DiskModel {
    model: ServiceModel,
    /// Time between admissions under the IOPS cap (0: no cap), worked
    /// out once instead of dividing per request.
    admit_gap_ns: u64,
    nr_sectors: u64,
    /// When each command slot frees (a min-heap).
    channels: BinaryHeap<Reverse<u64>>,
    discard_channels: BinaryHeap<Reverse<u64>>,
    /// When the next command may be admitted (IOPS cap).
    next_admit: u64,
    /// When the transfer path frees.
    bus_free: u64,
    /// Where the head is (rotating disks).
    head: u64,
    streams: Streams,
    cache: WriteCache,
    /// When the last command served so far finishes.
    idle_at: u64,
    /// When the batch under way began (batch.rs).
    batch_start: u64,
}

/// Slots that are all free at time 0.
fn slots(n: u32) -> BinaryHeap<Reverse<u64>> {
    (0..n.max(1)).map(|_| Reverse(0)).collect()
}

/// When the slot that frees first is free.
fn earliest(slots: &BinaryHeap<Reverse<u64>>) -> u64 {
    slots.peek().expect("at least one slot").0
}

/// That slot is now busy until `done` (rewritten in place: one sift
/// instead of a pop and a push).
fn occupy_earliest(slots: &mut BinaryHeap<Reverse<u64>>, done: u64) {
    *slots.peek_mut().expect("at least one slot") = Reverse(done);
}

impl DiskModel {
    pub fn new(model: ServiceModel, nr_sectors: u64) -> Self {
        let (channels, discard_channels) = (slots(model.parallelism), slots(model.discard_parallelism));
        let admit_gap_ns = 1_000_000_000u64.checked_div(model.iops).unwrap_or(0);
        let streams = Streams::new(model.streams);
        let cache = WriteCache::new(model.write_cache_bytes, model.media_write_bandwidth);
        DiskModel {
            model,
            admit_gap_ns,
            nr_sectors: nr_sectors.max(1),
            channels,
            discard_channels,
            next_admit: 0,
            bus_free: 0,
            head: 0,
            streams,
            cache,
            idle_at: 0,
            batch_start: 0,
        }
    }

    /// Seek and rotational delay to reach `sector` (0 when sequential).
    fn positioning_ns(&mut self, sector: u64, end: u64) -> u64 {
        let Some(r) = &self.model.rotation else { return 0 };
        let ns = r.positioning_ns(self.head, sector, self.nr_sectors);
        self.head = end;
        ns
    }

    /// Access time of a data command or flush before it moves data.
    #[inline]
    fn access_ns(&mut self, op: Op, sector: u64, end: u64, bytes: u32) -> u64 {
        let m = &self.model;
        match op {
            _ if bytes == 0 => m.flush_latency_ns,
            op if op.is_write() => m.write_latency_ns,
            _ if self.streams.continues(sector, end) => m.seq_read_latency_ns,
            _ => m.read_latency_ns,
        }
    }

    /// A request issued at `now`: when it completes. `fua`: the write
    /// must reach the media before it completes. Inline in its one
    /// caller, `device_submit`: the call and its register saves cost each
    /// request about a third of a discard's service.
    #[inline(always)]
    pub fn service(&mut self, now: u64, op: Op, sector: u64, bytes: u32, fua: bool) -> u64 {
        self.batch_arrival(now);
        let mut admit = now.max(self.next_admit);
        if self.model.iops != 0 {
            self.next_admit = admit + self.admit_gap_ns;
        }
        if op.is_discard() || op == Op::WriteZeroes {
            return self.discard(admit, bytes);
        }
        let end = sector + bytes as u64 / SECTOR_SIZE;
        let latency = self.access_ns(op, sector, end, bytes);
        let xfer = self.model.transfer_ns(op, bytes);
        admit = admit.max(earliest(&self.channels));
        let mut ready = admit + latency + self.positioning_ns(sector, end);
        if bytes == 0 && self.cache.enabled() {
            ready = ready.max(self.cache.flushed_at(admit) + self.model.flush_latency_ns);
        }
        let mut done = ready.max(self.bus_free) + xfer;
        self.bus_free = done;
        if op.is_write() && bytes != 0 && self.cache.enabled() {
            done = self.cache.write(done, bytes, fua);
        }
        occupy_earliest(&mut self.channels, done);
        self.idle_at = self.idle_at.max(done);
        done
    }

    /// A discard, secure erase or write zeroes admitted at `admit`.
    fn discard(&mut self, admit: u64, bytes: u32) -> u64 {
        let m = &self.model;
        let gib = bytes as u128 * m.discard_ns_per_gib as u128 / (1u128 << 30);
        let cost = m.discard_latency_ns + gib as u64;
        let done = admit.max(earliest(&self.discard_channels)) + cost;
        occupy_earliest(&mut self.discard_channels, done);
        self.idle_at = self.idle_at.max(done);
        done
    }
}

#[cfg(test)]
mod tests;
