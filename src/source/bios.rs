//! An explicit list of bios: each entry is one submission, built with
//! `bio_add_page` semantics (physically contiguous pieces share a bvec).

use std::collections::VecDeque;

use super::{IoUnit, Source};
use super::BioSpec;

pub struct BioList {
    pending: VecDeque<BioSpec>,
    plug: bool,
}

impl BioList {
    /// `plug`: each submission runs inside a plug.
    pub fn new(bios: Vec<BioSpec>, plug: bool) -> Self {
        BioList { pending: bios.into(), plug }
    }
}

impl Source for BioList {
    fn next_unit(&mut self) -> Option<IoUnit> {
        let bio = self.pending.pop_front()?;
        Some(IoUnit { bios: vec![bio], plug: self.plug })
    }
}
