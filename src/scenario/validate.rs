//! `[validate]`: how `blkstack validate` sets up the guest's disks, where
//! that changes the device the model must describe.
//!
//! `disk_latency_ms = L` makes every disk a fixed-latency device. In the
//! guest each disk's image is served by nbdkit with its delay filter (every
//! read, write, trim and write-zeroes answered L ms after it arrives) and
//! reached through QEMU's NBD client, which keeps at most 16 requests in
//! flight per disk (`MAX_NBD_REQUESTS` in QEMU's block/nbd.c): the others
//! wait in QEMU, in order. So the model's device serves 16 commands at a
//! time, each for exactly L, with no transfer time, read-ahead, write cache
//! or IOPS cap of its own (an `iops` given in `[disks.NAME.model]` still
//! applies: the guest's QEMU throttles the drive before the NBD client).
//! Flushes complete at once: the drive's `cache=unsafe` keeps QEMU from
//! sending them. docs/validation.md ("Slow disks") says why.

use crate::disk::ServiceModel;

use super::tree::Obj;
use super::ScenarioError;

/// Requests QEMU's NBD client keeps in flight on one connection.
pub const NBD_IN_FLIGHT: u32 = 16;

/// The longest latency accepted: a guest run at 10 s per request would
/// not finish within validate's timeout anyway.
const MAX_LATENCY_MS: u64 = 10_000;

/// `[validate]`: the guest set-up that the model must follow.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValidateSpec {
    /// `disk_latency_ms`: every disk answers each command after this long
    /// (None, or 0 in the file: the guest's disks as QEMU serves them).
    pub disk_latency_ms: Option<u64>,
}

impl ValidateSpec {
    /// The service model every disk starts from (before its own
    /// `[disks.NAME.model]` keys), when the disks have a fixed latency.
    pub fn disk_model(&self) -> Option<ServiceModel> {
        self.disk_latency_ms.map(|ms| fixed_latency_model(ms * 1_000_000))
    }
}

pub fn read_validate(o: &Obj) -> Result<ValidateSpec, ScenarioError> {
    let Some(t) = o.table("validate")? else { return Ok(ValidateSpec::default()) };
    let disk_latency_ms = match t.opt_u64("disk_latency_ms")? {
        None | Some((0, _)) => None,
        Some((ms, n)) if ms > MAX_LATENCY_MS => {
            return Err(t.err("disk_latency_ms", &n.at, format!("{ms} ms: at most {MAX_LATENCY_MS} ms (0: off)")));
        }
        Some((ms, _)) => Some(ms),
    };
    t.finish(&["disk_latency_ms"])?;
    Ok(ValidateSpec { disk_latency_ms })
}

/// A device that answers every command exactly `latency_ns` after it
/// starts, [`NBD_IN_FLIGHT`] at a time: nbdkit's delay filter behind
/// QEMU's NBD client. No transfer time (the bandwidth is unbounded, so a
/// command's data costs 0 ns), no read-ahead streams, no write cache, no
/// IOPS cap; discards and write zeroes take the same latency on as many
/// slots of their own.
pub fn fixed_latency_model(latency_ns: u64) -> ServiceModel {
    ServiceModel {
        read_latency_ns: latency_ns,
        write_latency_ns: latency_ns,
        seq_read_latency_ns: latency_ns,
        bandwidth: u64::MAX,
        write_bandwidth: u64::MAX,
        iops: 0,
        parallelism: NBD_IN_FLIGHT,
        discard_latency_ns: latency_ns,
        discard_ns_per_gib: 0,
        discard_parallelism: NBD_IN_FLIGHT,
        flush_latency_ns: 0,
        command_overhead_ns: 0,
        write_command_overhead_ns: 0,
        streams: 0,
        write_cache_bytes: 0,
        media_write_bandwidth: u64::MAX,
        rotation: None,
        batch_completions: false,
    }
}
