//! Device service-time model: turns the stream of issued requests into
//! completion times.
//!
//! This first model is one FIFO server per disk: a request starts when the
//! device is free and takes a fixed per-command latency plus its bytes at
//! the device's bandwidth. It keeps completion order equal to issue order.

use crate::bio::Op;
use crate::genhd::DiskKind;

#[derive(Clone, Debug, PartialEq)]
pub struct ServiceModel {
    pub read_latency_ns: u64,
    pub write_latency_ns: u64,
    /// Per discard / write-zeroes command.
    pub discard_latency_ns: u64,
    /// Bytes per second.
    pub bandwidth: u64,
}

impl ServiceModel {
    /// Rough per-kind defaults.
    pub fn for_kind(kind: DiskKind) -> ServiceModel {
        let (r, w, d, bw) = match kind {
            DiskKind::Nvme => (80_000, 20_000, 100_000, 3_000_000_000),
            DiskKind::Sata => (100_000, 50_000, 500_000, 530_000_000),
            DiskKind::Hdd => (8_000_000, 8_000_000, 8_000_000, 180_000_000),
            DiskKind::Scsi => (5_000_000, 5_000_000, 5_000_000, 200_000_000),
            DiskKind::Virtio => (50_000, 50_000, 100_000, 2_000_000_000),
            DiskKind::Ufs => (100_000, 50_000, 1_000_000, 3_500_000_000),
            DiskKind::Hyperv => (200_000, 200_000, 500_000, 1_000_000_000),
            DiskKind::Md | DiskKind::Dm => (0, 0, 0, u64::MAX),
        };
        ServiceModel { read_latency_ns: r, write_latency_ns: w, discard_latency_ns: d, bandwidth: bw }
    }

    pub fn service_ns(&self, op: Op, bytes: u32) -> u64 {
        match op {
            Op::Discard | Op::SecureErase | Op::WriteZeroes => self.discard_latency_ns,
            _ => {
                let base = if op.is_write() { self.write_latency_ns } else { self.read_latency_ns };
                base + (bytes as u128 * 1_000_000_000 / self.bandwidth.max(1) as u128) as u64
            }
        }
    }
}

/// One disk's service state.
#[derive(Clone, Debug)]
pub struct DiskModel {
    pub model: ServiceModel,
    busy_until: u64,
}

impl DiskModel {
    pub fn new(model: ServiceModel) -> Self {
        DiskModel { model, busy_until: 0 }
    }

    /// A request of `bytes` issued at `now`: when it completes.
    pub fn service(&mut self, now: u64, op: Op, bytes: u32) -> u64 {
        let start = now.max(self.busy_until);
        self.busy_until = start + self.model.service_ns(op, bytes);
        self.busy_until
    }
}
