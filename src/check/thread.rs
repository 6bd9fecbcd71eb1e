//! The checks on a thread of their own during a long run: the block core
//! hands each hook over as it happens ([`Hook`]) and the thread calls the
//! [`Checker`] with it, in the same order, so what the checks find is what
//! they find inline. The engine's thread then pays a copy of the bio per
//! hook instead of the checks' bookkeeping (for stacked roots, their
//! reference runs, placements and the sweep at completion).

use super::Checker;
use crate::bio::{Bio, BioId};
use crate::genhd::Topology;
use crate::worker::Worker;

/// One call of the checks, with what the block core passed it.
pub enum Hook {
    /// [`Checker::root_submitted`].
    Root { id: BioId, errors: u64, bio: Bio },
    /// [`Checker::leaf_queued`].
    Leaf { root: BioId, bio: Bio },
    /// [`Checker::root_done`].
    Done { root: BioId, status: i32, errors: u64 },
}

/// What the thread holds: the checks, and the stack they check (a copy:
/// the topology does not change while a run's events drain).
#[derive(Default)]
pub struct Remote {
    pub check: Checker,
    topo: Topology,
}

pub type CheckThread = Worker<Remote, Hook>;

/// Move `check` onto a thread of its own with a copy of `topo`; `Err`
/// gives it back when no thread can be started.
pub fn start(check: Checker, topo: &Topology) -> Result<CheckThread, Checker> {
    Worker::start(Remote { check, topo: topo.clone() }, "blkstack-check", apply).map_err(|r| r.check)
}

fn apply(r: &mut Remote, batch: &[Hook]) {
    for h in batch {
        call(&mut r.check, &r.topo, h);
    }
}

/// The call of `check` that `hook` stands for.
#[inline]
pub fn call(check: &mut Checker, topo: &Topology, hook: &Hook) {
    match hook {
        Hook::Root { id, errors, bio } => check.root_submitted(topo, bio, *id, *errors),
        Hook::Leaf { root, bio } => check.leaf_queued(topo, bio, *root),
        Hook::Done { root, status, errors } => check.root_done(topo, *root, *status, *errors),
    }
}
