//! Where bios come from. A source produces I/O units — what one system call
//! submits — as lists of bios; the engine runs each source as a job that
//! keeps up to `iodepth` units in flight (1 for synchronous tools such as dd).

pub mod bios;
pub mod dd;
pub mod dio;
pub mod discard;
pub mod discard_tool;
pub mod extents;
pub mod fio;
pub mod fio_axmap;
pub mod fio_dist;
pub mod fio_io_u;
pub mod fio_job;
pub mod fio_lfsr;
pub mod fio_rand;
pub mod pagecache;
pub mod replay;
pub mod rng;
pub mod writeback;

use crate::bio::{Bvec, Op};
use crate::genhd::DevId;

/// One bio as a source builds it, before submission.
#[derive(Debug, Default, PartialEq)]
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

impl Clone for BioSpec {
    fn clone(&self) -> Self {
        let mut b = BioSpec { bvecs: Vec::new(), ..*self };
        b.bvecs.clone_from(&self.bvecs);
        b
    }

    /// Into an existing spec, reusing its bvec buffer (sources refill the
    /// specs of finished units).
    /// Field by field, and bvec by bvec when the counts agree (a repeated
    /// entry's specs always do): no whole-spec temporary, no call to copy
    /// a bvec or two. Inline: the copy is a few stores, less than a call.
    #[inline]
    fn clone_from(&mut self, src: &Self) {
        let BioSpec { dev, op, flags, sector, ref bvecs, size } = *src;
        (self.dev, self.op, self.flags, self.sector, self.size) = (dev, op, flags, sector, size);
        match (&mut self.bvecs[..], &bvecs[..]) {
            // One bvec (nearly every spec): no loop to set up.
            ([d], [s]) => *d = *s,
            (d, s) if d.len() == s.len() => {
                for (d, s) in d.iter_mut().zip(s) {
                    *d = *s;
                }
            }
            _ => self.bvecs.clone_from(bvecs),
        }
    }
}

/// What a unit counts as in a tool's statistics (fio's `DDIR_*`), in the
/// order of [`UnitKind::index`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnitKind {
    /// Not counted (dd, explicit bios, writeback on a tool's behalf).
    #[default]
    Other,
    Read,
    Write,
    Trim,
    /// fsync / fdatasync.
    Sync,
}

impl UnitKind {
    /// Index into per-kind statistics (read, write, trim, sync): the
    /// declaration order less one, a subtraction where a `match` was a jump
    /// through a table (asked two or three times of every unit).
    #[inline(always)]
    pub fn index(self) -> Option<usize> {
        (self as usize).checked_sub(1)
    }
}

/// What one system call submits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IoUnit {
    pub bios: Vec<BioSpec>,
    /// Submitted inside `blk_start_plug`/`blk_finish_plug`.
    pub plug: bool,
    /// The call sleeps for its I/O before it finishes its plug (a
    /// synchronous write inside 6.1's `blkdev_write_iter` plug): the
    /// scheduler flushes the plug first (`blk_flush_plug(plug, true)`).
    pub sleeps_in_plug: bool,
    /// A synchronous call (BLKDISCARD, fsync, a buffered write that waits):
    /// the task submits nothing else until this unit completes, whatever
    /// its iodepth.
    pub sync: bool,
    /// Submitted only once everything the job has in flight has completed
    /// (fsync waiting for the writeback it started, a drain before a flush).
    pub drain: bool,
    /// Not submitted before this simulated time, in ns (trace replay).
    pub not_before: u64,
    /// The system call began at this time (ns), before this unit: its
    /// latency counts from there (fsync's flush after its writeback).
    pub started_ns: Option<u64>,
    pub kind: UnitKind,
    /// Bytes the tool counts for the unit (fio's `io_bytes`); a buffered
    /// write counts its bytes though it submits no bio.
    pub bytes: u64,
    /// The call completes short (its bios cover part of the I/O): the I/O
    /// the tool submits for the rest once this one has completed, ahead of
    /// any new one (fio's `requeue_io_u`, [`dio::fio_counted`]).
    pub requeue: Option<Box<IoUnit>>,
}

pub trait Source {
    /// The next unit, or `None` when the workload is finished.
    fn next_unit(&mut self) -> Option<IoUnit>;

    /// The next unit when the simulated clock reads `now` (ns): sources that
    /// stop at a time (fio's `runtime`) override this.
    fn next_unit_at(&mut self, now: u64) -> Option<IoUnit> {
        let _ = now;
        self.next_unit()
    }

    /// [`Self::next_unit_at`] with the unit's bios built in `bios` rather
    /// than in a list of the unit's own (the one returned is empty). The
    /// engine keeps the lists of the units it submitted and passes one the
    /// block layer is done with (all its bios submitted; empty at first),
    /// so a source that refills it in place allocates nothing per unit and
    /// hands no list back. The default gives the old list to
    /// [`Self::unit_done`] and moves the unit's own in.
    fn next_unit_into(&mut self, now: u64, bios: &mut Vec<BioSpec>) -> Option<IoUnit> {
        if bios.capacity() > 0 {
            self.unit_done(std::mem::take(bios));
        }
        let mut u = self.next_unit_at(now)?;
        *bios = std::mem::take(&mut u.bios);
        Some(u)
    }

    /// After a unit from [`Self::next_unit_into`], the units that follow
    /// it while they are like it in all but their bios (every other field
    /// of [`IoUnit`] the same, and no `requeue`), at most one per list of
    /// `lists`, each built into its list as [`Self::next_unit_into`]
    /// builds one; how many. The engine takes them in flight as it would
    /// have taken each from [`Self::next_unit_into`], for a fraction of the
    /// cost (a call per run rather than a unit built and read per unit).
    /// The default: none.
    fn next_units_like(&mut self, now: u64, lists: &mut [Vec<BioSpec>]) -> usize {
        let _ = (now, lists);
        0
    }

    /// How much of its work the source has handed out, from 0 to 1, when it
    /// knows (for progress displays); `now` is the simulated time in ns.
    fn progress(&self, now: u64) -> Option<f64> {
        let _ = now;
        None
    }

    /// Something the user should know about how the source ran (a warning
    /// in the run's summary), once it has finished.
    fn note(&self) -> Option<String> {
        None
    }

    /// The engine is done with a unit's bios (all submitted; the block
    /// layer copied what it needs): a source may keep the buffers for the
    /// units it builds next.
    fn unit_done(&mut self, bios: Vec<BioSpec>) {
        let _ = bios;
    }
}

/// The share of the work of all `sources` handed out: the mean of their
/// shares, when each knows its own.
pub fn overall_progress<'a>(sources: impl Iterator<Item = &'a dyn Source>, now: u64) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0);
    for s in sources {
        sum += s.progress(now)?.clamp(0.0, 1.0);
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

/// `done / total`; an empty workload is done.
pub fn fraction(done: u64, total: u64) -> f64 {
    if total == 0 {
        1.0
    } else {
        done as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::UnitKind;

    #[test]
    fn unit_kinds_index_fio_statistics_in_ddir_order() {
        // Read, write, trim, sync: fio's DDIR_READ .. DDIR_SYNC; other units are not counted.
        let kinds = [UnitKind::Other, UnitKind::Read, UnitKind::Write, UnitKind::Trim, UnitKind::Sync];
        assert_eq!(kinds.map(UnitKind::index), [None, Some(0), Some(1), Some(2), Some(3)]);
    }
}
