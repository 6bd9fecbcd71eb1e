//! Trace replay: the bios a trace shows processes submitting, submitted
//! again. The scenario reader ([`crate::scenario::workload_replay`]) picks
//! the root bios out of a blkparse or ftrace trace and groups them into
//! units; this source hands them to one job per traced process.

use std::collections::VecDeque;

use super::{IoUnit, Source};

/// One traced process's units, in trace order.
pub struct Replay {
    units: VecDeque<IoUnit>,
    total: usize,
}

impl Replay {
    pub fn new(units: Vec<IoUnit>) -> Self {
        Replay { total: units.len(), units: units.into() }
    }
}

impl Source for Replay {
    fn next_unit(&mut self) -> Option<IoUnit> {
        self.units.pop_front()
    }

    fn progress(&self, _now: u64) -> Option<f64> {
        Some(super::fraction((self.total - self.units.len()) as u64, self.total as u64))
    }
}
