//! Named device presets (docs/devices.md gives each figure's source).

use super::seek::{Rotation, SeekCurve};
use super::ServiceModel;
use crate::genhd::DiskKind;

/// Named presets: (name, what it models).
pub const PRESETS: &[(&str, &str)] = &[
    ("nvme", "a generic datacenter NVMe SSD (~800K IOPS, 3.5 GB/s)"),
    ("nvme-180k", "the 1.9 TB instance-store NVMe of AWS i3 instances: 180K IOPS (seed 001), calibrated discard (seed 002)"),
    ("sata-ssd", "a SATA SSD: 32 NCQ tags, 530 MB/s"),
    ("sas-ssd", "a 12 Gb/s SAS SSD serving one read stream from read-ahead, media reads one at a time (seed 000's members)"),
    ("hdd-7200", "a 7200 rpm SATA disk: seek and rotation, 200 MB/s"),
    ("hp97560", "the HP 97560 of Ruemmler and Wilkes' disk model: its published seek curve, 4002 rpm"),
    ("virtio", "a virtio-blk disk on a host SSD"),
    ("ufs4", "a UFS 4.0 phone storage device"),
    ("hyperv", "a Hyper-V storvsc virtual disk"),
];

const US: u64 = 1_000;

/// What every preset starts from: a generic NVMe SSD with no stream
/// detection, no modelled write cache and no per-command overhead.
const BASE: ServiceModel = ServiceModel {
    read_latency_ns: 80 * US,
    write_latency_ns: 20 * US,
    bandwidth: 3_500_000_000,
    write_bandwidth: 3_000_000_000,
    iops: 800_000,
    parallelism: 64,
    discard_latency_ns: 100 * US,
    discard_ns_per_gib: 1_000_000,
    discard_parallelism: 1,
    flush_latency_ns: 500 * US,
    command_overhead_ns: 0,
    write_command_overhead_ns: 0,
    streams: 0,
    seq_read_latency_ns: 80 * US,
    write_cache_bytes: 0,
    media_write_bandwidth: 3_000_000_000,
    rotation: None,
    batch_completions: false,
};

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
        let base = BASE;
        Some(match name {
            "nvme" => base,
            // Bandwidths and IOPS: Seastar iotune's measurement of one i3
            // instance-store disk (scylladb/scylla-machine-image,
            // scylla_cloud_io_setup's i3 figures per disk, also in
            // redpanda's rpk iotune data.go): reads 2,015,342,735 B/s and
            // 411,200 IOPS, writes 808,775,652 B/s and 181,500 IOPS.
            "nvme-180k" => ServiceModel {
                read_latency_ns: 90 * US,
                seq_read_latency_ns: 90 * US,
                write_latency_ns: 30 * US,
                bandwidth: 2_000_000_000,
                write_bandwidth: 808_775_652,
                media_write_bandwidth: 808_775_652,
                iops: 180_000,
                // Seed 002 (same i3 instance-store device), its before
                // figures: 5.8's mkfs.xfs discards 3,623,704 × 512 KiB per
                // member in 674.7 s: 186 µs a command, all of it charged per
                // command (the per-GiB part is a datasheet-class figure).
                discard_latency_ns: 186 * US,
                discard_ns_per_gib: 1_125_000,
                ..base
            },
            "sata-ssd" => ServiceModel {
                read_latency_ns: 100 * US,
                seq_read_latency_ns: 100 * US,
                write_latency_ns: 50 * US,
                bandwidth: 530_000_000,
                write_bandwidth: 500_000_000,
                media_write_bandwidth: 500_000_000,
                iops: 95_000,
                parallelism: 32,
                discard_latency_ns: 1_000 * US,
                discard_ns_per_gib: 5_000_000,
                flush_latency_ns: 2_000 * US,
                ..base
            },
            // Seed 000's members, from its before figures and the SAS-3
            // link (docs/seeds.md works it through): 1.2 GB/s of payload
            // (12 Gb/s, 8b/10b); one tracked stream, whose continuations
            // come from the read-ahead buffer at no access time; a read
            // that misses waits 211 µs for the media, one at a time — the
            // figure at which the before run moves md0's 3,276.87 MB/s.
            "sas-ssd" => ServiceModel {
                read_latency_ns: 211 * US,
                seq_read_latency_ns: 0,
                streams: 1,
                parallelism: 1,
                bandwidth: 1_200_000_000,
                write_bandwidth: 1_200_000_000,
                media_write_bandwidth: 1_200_000_000,
                iops: 0,
                ..Self::preset("sata-ssd").expect("known preset")
            },
            "hdd-7200" => ServiceModel {
                read_latency_ns: 100 * US,
                seq_read_latency_ns: 100 * US,
                write_latency_ns: 100 * US,
                bandwidth: 200_000_000,
                write_bandwidth: 200_000_000,
                media_write_bandwidth: 200_000_000,
                iops: 0,
                parallelism: 1,
                discard_latency_ns: 0,
                discard_ns_per_gib: 0,
                flush_latency_ns: 10_000 * US,
                rotation: Some(Rotation {
                    rpm: 7200,
                    seek_min_ns: 800 * US,
                    seek_max_ns: 16_000 * US,
                    cylinders: 0,
                    curve: None,
                    track_sectors: 0,
                }),
                ..base
            },
            // Ruemmler and Wilkes, "An introduction to disk drive modeling"
            // (IEEE Computer 27(3), 1994), table 1: 1962 cylinders of 19
            // tracks of 72 sectors, 4002 rpm, 2.2 ms controller overhead,
            // seek 3.24 + 0.400·√d ms below 383 cylinders, 8.00 + 0.008·d
            // beyond; one 72-sector track transfers per turn (14.99 ms):
            // 2.46 MB/s.
            "hp97560" => ServiceModel {
                read_latency_ns: 2_200 * US,
                seq_read_latency_ns: 2_200 * US,
                write_latency_ns: 2_200 * US,
                bandwidth: 2_459_000,
                write_bandwidth: 2_459_000,
                media_write_bandwidth: 2_459_000,
                iops: 0,
                parallelism: 1,
                discard_latency_ns: 0,
                discard_ns_per_gib: 0,
                flush_latency_ns: 0,
                rotation: Some(Rotation {
                    rpm: 4002,
                    seek_min_ns: 3_640 * US,
                    seek_max_ns: 23_688 * US,
                    cylinders: 1962,
                    curve: Some(SeekCurve {
                        short_ns: 3_240 * US,
                        short_sqrt_ns: 400_000.0,
                        boundary_cyl: 383,
                        long_ns: 8_000 * US,
                        long_per_cyl_ns: 8_000.0,
                    }),
                    track_sectors: 0,
                }),
                ..base
            },
            "virtio" => ServiceModel {
                read_latency_ns: 60 * US,
                seq_read_latency_ns: 60 * US,
                write_latency_ns: 60 * US,
                bandwidth: 2_000_000_000,
                write_bandwidth: 2_000_000_000,
                media_write_bandwidth: 2_000_000_000,
                iops: 400_000,
                parallelism: 16,
                ..base
            },
            "ufs4" => ServiceModel {
                read_latency_ns: 90 * US,
                seq_read_latency_ns: 90 * US,
                write_latency_ns: 60 * US,
                bandwidth: 4_200_000_000,
                write_bandwidth: 2_800_000_000,
                media_write_bandwidth: 2_800_000_000,
                iops: 300_000,
                parallelism: 32,
                ..base
            },
            "hyperv" => ServiceModel {
                read_latency_ns: 200 * US,
                seq_read_latency_ns: 200 * US,
                write_latency_ns: 200 * US,
                bandwidth: 1_000_000_000,
                write_bandwidth: 1_000_000_000,
                media_write_bandwidth: 1_000_000_000,
                iops: 100_000,
                parallelism: 64,
                ..base
            },
            _ => return None,
        })
    }
}
