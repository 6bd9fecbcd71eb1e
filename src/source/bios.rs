//! An explicit list of bios: each entry is one submission, built with
//! `bio_add_page` semantics (physically contiguous pieces share a bvec).

use std::collections::VecDeque;

use super::{IoUnit, Source};
use super::BioSpec;

pub struct BioList {
    pending: VecDeque<BioSpec>,
}

impl BioList {
    pub fn new(bios: Vec<BioSpec>) -> Self {
        BioList { pending: bios.into() }
    }
}

impl Source for BioList {
    fn next_unit(&mut self) -> Option<IoUnit> {
        let bio = self.pending.pop_front()?;
        Some(IoUnit { bios: vec![bio], plug: false })
    }
}
