//! An explicit list of bios: each entry is one submission, built with
//! `bio_add_page` semantics (physically contiguous pieces share a bvec). An
//! entry may repeat, each time `stride` sectors further (and its buffer as
//! far further in memory), expanded lazily so memory stays bounded.

use std::collections::VecDeque;

use super::BioSpec;
use super::{IoUnit, Source};
use crate::bio::SECTOR_SIZE;

pub struct BioList {
    /// (bio, times left, stride in sectors).
    pending: VecDeque<(BioSpec, u64, u64)>,
    plug: bool,
    /// Submissions in all (for progress).
    total: u64,
    done: u64,
    /// The bio lists of units the engine is done with, refilled for the
    /// next units so a long repeat allocates nothing.
    spare: Vec<Vec<BioSpec>>,
}

impl BioList {
    /// `plug`: each submission runs inside a plug.
    pub fn new(bios: Vec<(BioSpec, u64, u64)>, plug: bool) -> Self {
        let total = bios.iter().map(|b| b.1).sum();
        BioList { pending: bios.into(), plug, total, done: 0, spare: Vec::new() }
    }
}

impl Source for BioList {
    fn next_unit(&mut self) -> Option<IoUnit> {
        let (spec, left, stride) = self.pending.front_mut()?;
        let mut bios = self.spare.pop().unwrap_or_default();
        bios.truncate(1);
        match bios.first_mut() {
            Some(b) => b.clone_from(spec),
            None => bios.push(spec.clone()),
        }
        *left -= 1;
        self.done += 1;
        if *left == 0 {
            self.pending.pop_front();
        } else {
            spec.sector += *stride;
            for bv in &mut spec.bvecs {
                bv.phys += *stride * SECTOR_SIZE;
            }
        }
        Some(IoUnit { bios, plug: self.plug, ..IoUnit::default() })
    }

    fn unit_done(&mut self, bios: Vec<BioSpec>) {
        self.spare.push(bios);
    }

    fn progress(&self, _now: u64) -> Option<f64> {
        Some(super::fraction(self.done, self.total))
    }
}
