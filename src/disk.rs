//! Device service-time model: turns the stream of issued requests into
//! completion times.
//!
//! A device admits commands no faster than its IOPS cap, serves up to
//! `parallelism` of them at once (each taking the op's latency plus, on a
//! rotating disk, seek and rotation), and moves their data through one
//! transfer path at the device's bandwidth. Discards and write zeroes cost a
//! fixed time per command plus a time per GiB, on their own (often
//! serialised) channel. Every figure is a parameter; presets give typical
//! devices (docs/devices.md lists their sources).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bio::{Op, SECTOR_SIZE};
use crate::genhd::DiskKind;

/// A rotating disk's mechanics.
#[derive(Clone, Debug, PartialEq)]
pub struct Rotation {
    pub rpm: u32,
    /// Track-to-track seek.
    pub seek_min_ns: u64,
    /// Full-stroke seek.
    pub seek_max_ns: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServiceModel {
    pub read_latency_ns: u64,
    pub write_latency_ns: u64,
    /// Read bandwidth, bytes per second.
    pub bandwidth: u64,
    /// Write bandwidth, bytes per second.
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
    /// A cache flush.
    pub flush_latency_ns: u64,
    /// Time each read or write holds the transfer path besides its data:
    /// per-command protocol and firmware work that does not overlap other
    /// commands' transfers (0 in the generic presets).
    pub command_overhead_ns: u64,
    pub rotation: Option<Rotation>,
}

/// Named presets: (name, what it models).
pub const PRESETS: &[(&str, &str)] = &[
    ("nvme", "a generic datacenter NVMe SSD (~800K IOPS, 3.5 GB/s)"),
    ("nvme-180k", "the 1.9 TB instance-store NVMe of AWS i3 instances: 180K IOPS (seed 001), calibrated discard (seed 002)"),
    ("sata-ssd", "a SATA SSD: 32 NCQ tags, 530 MB/s"),
    ("hdd-7200", "a 7200 rpm SATA disk: seek and rotation, 200 MB/s"),
    ("virtio", "a virtio-blk disk on a host SSD"),
    ("ufs4", "a UFS 4.0 phone storage device"),
    ("hyperv", "a Hyper-V storvsc virtual disk"),
];

impl ServiceModel {
    /// The preset a disk kind starts from.
    pub fn for_kind(kind: DiskKind) -> ServiceModel {
        let name = match kind {
            DiskKind::Nvme => "nvme",
            DiskKind::Sata | DiskKind::Scsi => "sata-ssd",
            DiskKind::VirtioScsi => "virtio",
            // Replaced by crate::nullb's completion timing; a loop device's
            // requests complete with the I/O on its backing device.
            DiskKind::NullBlk | DiskKind::Loop => "nvme",
            DiskKind::Hdd => "hdd-7200",
            DiskKind::Virtio => "virtio",
            DiskKind::Ufs => "ufs4",
            DiskKind::Hyperv => "hyperv",
            DiskKind::Md | DiskKind::Dm => "nvme",
        };
        Self::preset(name).expect("known preset")
    }

    pub fn preset(name: &str) -> Option<ServiceModel> {
        let us = 1_000u64;
        let base = ServiceModel {
            read_latency_ns: 80 * us,
            write_latency_ns: 20 * us,
            bandwidth: 3_500_000_000,
            write_bandwidth: 3_000_000_000,
            iops: 800_000,
            parallelism: 64,
            discard_latency_ns: 100 * us,
            discard_ns_per_gib: 1_000_000,
            discard_parallelism: 1,
            flush_latency_ns: 500 * us,
            command_overhead_ns: 0,
            rotation: None,
        };
        Some(match name {
            "nvme" => base,
            "nvme-180k" => ServiceModel {
                read_latency_ns: 90 * us,
                write_latency_ns: 30 * us,
                bandwidth: 2_000_000_000,
                write_bandwidth: 1_600_000_000,
                iops: 180_000,
                // Seed 002 (same i3 instance-store device): 5.8's mkfs.xfs
                // discards 3,623,704 × 512 KiB per member in 674.7 s, and
                // 5.13's fstrim 1,769 GiB per member in 1.99 s.
                discard_latency_ns: 186 * us,
                discard_ns_per_gib: 1_125_000,
                ..base
            },
            "sata-ssd" => ServiceModel {
                read_latency_ns: 100 * us,
                write_latency_ns: 50 * us,
                bandwidth: 530_000_000,
                write_bandwidth: 500_000_000,
                iops: 95_000,
                parallelism: 32,
                discard_latency_ns: 1_000 * us,
                discard_ns_per_gib: 5_000_000,
                flush_latency_ns: 2_000 * us,
                ..base
            },
            "hdd-7200" => ServiceModel {
                read_latency_ns: 100 * us,
                write_latency_ns: 100 * us,
                bandwidth: 200_000_000,
                write_bandwidth: 200_000_000,
                iops: 0,
                parallelism: 1,
                discard_latency_ns: 0,
                discard_ns_per_gib: 0,
                flush_latency_ns: 10_000 * us,
                rotation: Some(Rotation { rpm: 7200, seek_min_ns: 800 * us, seek_max_ns: 16_000 * us }),
                ..base
            },
            "virtio" => ServiceModel {
                read_latency_ns: 60 * us,
                write_latency_ns: 60 * us,
                bandwidth: 2_000_000_000,
                write_bandwidth: 2_000_000_000,
                iops: 400_000,
                parallelism: 16,
                ..base
            },
            "ufs4" => ServiceModel {
                read_latency_ns: 90 * us,
                write_latency_ns: 60 * us,
                bandwidth: 4_200_000_000,
                write_bandwidth: 2_900_000_000,
                iops: 300_000,
                parallelism: 32,
                ..base
            },
            "hyperv" => ServiceModel {
                read_latency_ns: 200 * us,
                write_latency_ns: 200 * us,
                bandwidth: 1_000_000_000,
                write_bandwidth: 1_000_000_000,
                iops: 100_000,
                parallelism: 64,
                ..base
            },
            _ => return None,
        })
    }

    fn transfer_ns(&self, op: Op, bytes: u32) -> u64 {
        let bw = if op.is_write() { self.write_bandwidth } else { self.bandwidth };
        // A u32 of bytes times 10⁹ fits in a u64.
        bytes as u64 * 1_000_000_000 / bw.max(1)
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
        DiskModel { model, admit_gap_ns, nr_sectors: nr_sectors.max(1), channels, discard_channels, next_admit: 0, bus_free: 0, head: 0 }
    }

    /// Seek and rotational delay to reach `sector` (0 when sequential).
    fn positioning_ns(&mut self, sector: u64, end: u64) -> u64 {
        let Some(r) = &self.model.rotation else { return 0 };
        let distance = sector.abs_diff(self.head);
        self.head = end;
        if distance == 0 {
            return 0;
        }
        // Seek time grows with the square root of the distance; then wait
        // half a revolution on average.
        let frac = (distance as f64 / self.nr_sectors as f64).sqrt();
        let seek = r.seek_min_ns + ((r.seek_max_ns - r.seek_min_ns) as f64 * frac) as u64;
        let half_turn = 30_000_000_000 / r.rpm as u64;
        seek + half_turn
    }

    /// A request issued at `now`: when it completes.
    pub fn service(&mut self, now: u64, op: Op, sector: u64, bytes: u32) -> u64 {
        let m = &self.model;
        let mut admit = now.max(self.next_admit);
        if m.iops != 0 {
            self.next_admit = admit + self.admit_gap_ns;
        }
        if op.is_discard() || op == Op::WriteZeroes {
            let gib = bytes as u128 * m.discard_ns_per_gib as u128 / (1u128 << 30);
            let cost = m.discard_latency_ns + gib as u64;
            let done = admit.max(earliest(&self.discard_channels)) + cost;
            occupy_earliest(&mut self.discard_channels, done);
            return done;
        }
        let latency = match op {
            _ if bytes == 0 => m.flush_latency_ns,
            op if op.is_write() => m.write_latency_ns,
            _ => m.read_latency_ns,
        };
        let xfer = m.command_overhead_ns + m.transfer_ns(op, bytes);
        admit = admit.max(earliest(&self.channels));
        let end = sector + bytes as u64 / SECTOR_SIZE;
        let ready = admit + latency + self.positioning_ns(sector, end);
        let done = ready.max(self.bus_free) + xfer;
        self.bus_free = done;
        occupy_earliest(&mut self.channels, done);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iops_cap_spaces_commands() {
        // 180K IOPS: one command every 5,555 ns; 64 slots and 30 µs writes
        // never bind, so 1000 back-to-back 4 KiB writes take 999 × 5,555 ns
        // plus the last one's 30 µs + 4096 B at 1.6 GB/s (2,560 ns).
        let mut d = DiskModel::new(ServiceModel::preset("nvme-180k").unwrap(), 1 << 30);
        let mut last = 0;
        for i in 0..1000 {
            last = d.service(0, Op::Write, i * 8, 4096);
        }
        assert_eq!(last, 999 * 5_555 + 30_000 + 2_560);
    }

    #[test]
    fn sequential_hdd_reads_skip_seek_and_rotation() {
        let mut d = DiskModel::new(ServiceModel::preset("hdd-7200").unwrap(), 1 << 30);
        // First read at sector 0 from head 0: 100 µs + 64 KiB at 200 MB/s (327,680 ns).
        let t1 = d.service(0, Op::Read, 0, 65536);
        assert_eq!(t1, 100_000 + 327_680);
        // The next one continues where the head is: no positioning.
        let t2 = d.service(t1, Op::Read, 128, 65536);
        assert_eq!(t2 - t1, 100_000 + 327_680);
        // A jump pays a seek plus half a turn (4,166,666 ns at 7200 rpm).
        let t3 = d.service(t2, Op::Read, 1 << 29, 4096);
        assert!(t3 - t2 > 800_000 + 4_166_666);
    }
}
