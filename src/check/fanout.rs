//! A stacked root of an op without data (a discard, write zeroes or secure
//! erase of an md or dm device) while each of its leaf pieces continues one
//! of its reference runs from where the run's last piece ended (what a
//! whole-array discard does: one run per member, each member's pieces in
//! order). Its runs are mapped when the root is submitted and followed by
//! a cursor each, instead of a full [`super::RootState`] gathering ranges
//! to sweep at completion: every run covered once and nothing else issued
//! is exactly what the sweep passes. A piece that continues no run, or a
//! root that does not complete with every run covered, becomes a full
//! state there and then (`Checker::promote_fanout`), holding what the
//! piece by piece bookkeeping would hold at that point.

use crate::bio::Op;
use crate::genhd::DevId;

use super::conservation::Issued;
use super::layout::{Bounds, Run};
use super::Root;

/// Runs one root follows at most (an array of this many members).
const MAX_RUNS: usize = 16;

/// One run followed: its leaf, first sector, the sector the next piece on
/// it starts at, and its end.
#[derive(Clone, Copy, Default)]
struct Cursor {
    leaf: DevId,
    start: u64,
    next: u64,
    end: u64,
}

#[derive(Default)]
pub(super) struct Fanout {
    /// A root in flight on this id is kept here (not in `Checker::roots`).
    pub live: bool,
    pub root: Root,
    runs: [Cursor; MAX_RUNS],
    n: u8,
}

impl Fanout {
    /// Follow the root's reference `runs`, if each is one the op itself
    /// must hit exactly once (not raid4/5/6's looser bounds or pre-reads)
    /// and there are few enough; false (nothing changed) otherwise.
    pub fn follow(&mut self, runs: &[Run]) -> bool {
        if runs.len() > MAX_RUNS || runs.iter().any(|r| r.read || r.bounds != Bounds::EXACT) {
            return false;
        }
        for (c, r) in self.runs.iter_mut().zip(runs) {
            *c = Cursor { leaf: r.leaf, start: r.phys, next: r.phys, end: r.phys + r.len };
        }
        self.n = runs.len() as u8;
        true
    }

    /// Is this leaf piece of `n` sectors of the root's op the next on one
    /// of its runs, inside it? Then it is counted.
    #[inline(always)]
    pub fn extend(&mut self, leaf: DevId, op: Op, phys: u64, n: u64) -> bool {
        if op != self.root.op {
            return false;
        }
        for c in &mut self.runs[..self.n as usize] {
            if c.leaf == leaf && c.next == phys && n <= c.end - phys {
                c.next += n;
                return true;
            }
        }
        false
    }

    /// Was every run covered?
    pub fn complete(&self) -> bool {
        self.runs[..self.n as usize].iter().all(|c| c.next == c.end)
    }

    /// The pieces counted so far, as the ranges they form, into `issued`.
    pub fn counted(&self, issued: &mut Issued) {
        for c in self.runs[..self.n as usize].iter().filter(|c| c.next > c.start) {
            issued.push(c.leaf, self.root.op, c.start, c.next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_continuing_their_runs_cover_them() {
        // Runs [100, 108) on leaf 1 and [200, 208) on leaf 2: leaf 1 in
        // two pieces (4 + 4), leaf 2 in one; a piece past a run's end, of
        // another op or off the cursor is not counted.
        let mut f = Fanout { root: Root { op: Op::Discard, ..Root::default() }, ..Fanout::default() };
        let exact = Run { leaf: 1, phys: 100, len: 8, logical: 0, read: false, bounds: Bounds::EXACT };
        assert!(f.follow(&[exact, Run { leaf: 2, phys: 200, ..exact }]));
        assert!(f.extend(1, Op::Discard, 100, 4));
        assert!(!f.extend(1, Op::Discard, 104, 5), "past the run's end");
        assert!(!f.extend(2, Op::Write, 200, 8), "another op");
        assert!(!f.extend(2, Op::Discard, 201, 7), "off the cursor");
        assert!(!f.complete());
        let mut is = Issued::default();
        f.counted(&mut is);
        assert_eq!(is.ranges(), [(1, Op::Discard, 100, 104)]);
        assert!(f.extend(1, Op::Discard, 104, 4) && f.extend(2, Op::Discard, 200, 8));
        assert!(f.complete());
        // Bounds other than exactly once are the sweep's to judge.
        assert!(!f.follow(&[Run { bounds: Bounds::AT_MOST_ONCE, ..exact }]));
    }
}
