//! blkstack: a fast, faithful model of the Linux block I/O path.
//!
//! Modules follow the kernel's own map: [`bio`] (struct bio), [`limits`]
//! (blk-settings), [`split`] (blk-merge's splitting), [`submit`] (blk-core and
//! `current->bio_list`), [`mq`] (blk-mq requests and dispatch), [`disk`] (the
//! device service-time model), [`genhd`] (disks, partitions, device numbers),
//! [`source`] (where bios come from), [`trace`] (tracepoints and blkparse
//! text), [`stats`], [`profile`] (kernel versions and behaviour switches),
//! [`scenario`] (the TOML scenario format), [`engine`] (the simulation) and
//! [`check`] (conservation and integrity checks of every run). md and dm
//! drivers live in [`md`] and [`dm`]; the blk-crypto fallback in [`crypto`],
//! zoned disks' write pointers and zone write plugs in [`zoned`].

pub mod bio;
pub mod check;
pub mod critical_path;
pub mod crypto;
pub mod disk;
pub mod dm;
pub mod engine;
pub mod flush;
pub mod genhd;
pub mod host_cpu;
pub mod limits;
pub mod loopdev;
pub mod md;
pub mod merge;
pub mod mq;
pub mod nullb;
pub mod nvme_multipath;
pub mod plug;
pub mod profile;
pub mod rq_qos;
pub mod run;
pub mod scenario;
pub mod sched;
pub mod source;
pub mod split;
pub mod stats;
pub mod submit;
pub mod trace;
pub mod worker;
pub mod zoned;

#[cfg(feature = "python")]
mod python;
#[cfg(feature = "python")]
mod python_diff;
