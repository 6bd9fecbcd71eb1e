//! Where bios come from. A source produces I/O units — what one system call
//! submits — as lists of bios; the engine runs each source as a job that
//! keeps up to `iodepth` units in flight (1 for synchronous tools such as dd).

pub mod bios;
pub mod dd;
pub mod dio;
pub mod discard;
pub mod extents;
pub mod fio;
pub mod rng;
pub mod writeback;

use crate::bio::{Bvec, Op};
use crate::genhd::DevId;

/// One bio as a source builds it, before submission.
#[derive(Clone, Debug, PartialEq)]
pub struct BioSpec {
    pub dev: DevId,
    pub op: Op,
    pub flags: u32,
    pub sector: u64,
    /// Data pages; empty for discard, write zeroes and flushes.
    pub bvecs: Vec<Bvec>,
    /// Size in bytes (equals the bvecs' total when there are bvecs).
    pub size: u32,
}

/// What one system call submits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IoUnit {
    pub bios: Vec<BioSpec>,
    /// Submitted inside `blk_start_plug`/`blk_finish_plug`.
    pub plug: bool,
}

pub trait Source {
    /// The next unit, or `None` when the workload is finished.
    fn next_unit(&mut self) -> Option<IoUnit>;
}
