//! Conservation: every sector a submitter sends to the top of the stack
//! reaches the leaf disks exactly as often as the layout says, on the right
//! disk at the right sector, and nothing else is issued.
//!
//! Per root bio (one a job submitted) the check keeps what reached the leaf
//! disks (each bio object queued on a request-based disk, after the
//! partition remap, counted once — split fronts and resubmitted remainders
//! of it are the same sectors), coalesced per disk and op. When the root
//! completes without error, that is compared with the root's reference
//! runs ([`super::layout::Runs`]): copies of a write, discard or write zeroes exactly once
//! (raid4/5/6: every touched 4 KiB unit and its parity at least once,
//! pre-reads only inside the touched stripe_heads, discards at most once
//! per whole stripe row). Reads and data writes are also checked piece by
//! piece as they are queued: a bio carrying the submitter's pages carries
//! specific top sectors (its position in those pages says which), and must
//! sit where a copy of exactly those sectors lives. The read pieces of one
//! root must tile its range exactly once.

use crate::bio::Op;
use crate::genhd::{DevId, Topology};

use super::layout::{Bounds, Run};

/// Leaf pieces of one root: per (disk, op), ranges in arrival order, each
/// extended when the next piece continues it. One flat list for all keys
/// (a key's ranges are those carrying it, in list order), so a cleared
/// `Issued` keeps its buffers for the next root.
#[derive(Debug, Default)]
pub struct Issued {
    ranges: Vec<Piece>,
    /// Per (disk, op): index of its last range (a few keys: a linear scan).
    last: Vec<(DevId, Op, usize)>,
}

/// One range of one disk and op: (disk, op, start, end).
type Piece = (DevId, Op, u64, u64);

impl Issued {
    pub fn push(&mut self, leaf: DevId, op: Op, start: u64, end: u64) {
        let slot = self.last.iter().position(|k| k.0 == leaf && k.1 == op);
        if let Some(s) = slot {
            let r = &mut self.ranges[self.last[s].2];
            if r.3 == start {
                r.3 = end;
                return;
            }
        }
        self.ranges.push((leaf, op, start, end));
        let i = self.ranges.len() - 1;
        match slot {
            Some(s) => self.last[s].2 = i,
            None => self.last.push((leaf, op, i)),
        }
    }

    /// Every range, all keys interleaved (filter by key for one key's, in order).
    pub fn ranges(&self) -> &[Piece] {
        &self.ranges
    }

    /// Each (disk, op) with a range, once.
    pub fn keys(&self) -> impl Iterator<Item = (DevId, Op)> + '_ {
        self.last.iter().map(|&(leaf, op, _)| (leaf, op))
    }

    /// Empty again, keeping the buffers.
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.last.clear();
    }
}

/// A leaf range hit a number of times the layout does not allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Miscount {
    pub leaf: DevId,
    pub op: Op,
    pub start: u64,
    pub end: u64,
    pub count: u32,
    /// Allowed counts: at least `min`, at most `max` (`None`: no bound).
    pub min: u32,
    pub max: Option<u32>,
}

/// Buffers [`compare`] fills and empties for every root it sweeps, kept
/// from one root to the next so that checking allocates nothing once they
/// have grown (a whole-array discard's root spans every member).
#[derive(Debug, Default)]
pub struct Scratch {
    leaves: Vec<DevId>,
    got: Vec<(u64, u64)>,
    want: Vec<(u64, u64, Bounds)>,
    /// [`sweep`]'s boundaries.
    ev: Vec<(u64, i32, i32, i32, i32)>,
}

/// Compare one root's leaf pieces with its reference runs; `op` is the
/// root's op (its reads, if any, are pre-reads checked against the runs
/// marked `read`).
pub fn compare(issued: &Issued, expected: &[Run], op: Op, out: &mut Vec<Miscount>) {
    compare_in(issued, expected, op, out, &mut Scratch::default());
}

/// [`compare`] in reused buffers.
pub fn compare_in(issued: &Issued, expected: &[Run], op: Op, out: &mut Vec<Miscount>, scratch: &mut Scratch) {
    // Most roots reach one disk as one contiguous range that is exactly
    // their one run: nothing to sweep.
    if one_exact_range_per_leaf(issued.ranges(), expected, op) {
        return;
    }
    let Scratch { leaves, got, want, ev } = scratch;
    leaves.clear();
    leaves.extend(expected.iter().map(|r| r.leaf).chain(issued.keys().map(|(leaf, _)| leaf)));
    leaves.sort_unstable();
    leaves.dedup();
    // Pre-reads to check: a root of another op with reads issued or expected.
    let reads = op != Op::Read && (issued.keys().any(|(_, o)| o == Op::Read) || expected.iter().any(|r| r.read));
    for &leaf in leaves.iter() {
        for (kind, read) in [(op, false), (Op::Read, true)] {
            if read && !reads {
                continue;
            }
            got.clear();
            got.extend(issued.ranges().iter().filter(|k| k.0 == leaf && k.1 == kind).map(|k| (k.2, k.3)));
            join_touching(got);
            want.clear();
            want.extend(expected.iter().filter(|r| r.leaf == leaf && r.read == read).map(|r| (r.phys, r.phys + r.len, r.bounds)));
            sweep(leaf, kind, got, want, out, ev);
        }
    }
}

/// Is each reference run an exact, non-read one on a leaf of its own, and
/// each issued range exactly one of them, of the root's op? Then every
/// sector was hit once where once is required and nowhere else: what
/// [`sweep`] passes, found without sorting (nearly every root: one run per
/// member, as a mirror's copies or a whole-array discard's member ranges).
fn one_exact_range_per_leaf(issued: &[Piece], expected: &[Run], op: Op) -> bool {
    if issued.len() != expected.len() || expected.len() > 16 {
        return false;
    }
    expected.iter().enumerate().all(|(i, r)| {
        let mut on_leaf = issued.iter().filter(|k| k.0 == r.leaf);
        let matched = on_leaf.next().is_some_and(|k| k.1 == op && (k.2, k.3) == (r.phys, r.phys + r.len)) && on_leaf.next().is_none();
        matched && r.bounds == Bounds::EXACT && !r.read && expected[..i].iter().all(|o| o.leaf != r.leaf)
    })
}

/// Sort one leaf's issued ranges and join each to the one it touches
/// (`[a, b)` then `[b, c)`: the same counts as `[a, c)`), so the sweep
/// sorts a few boundaries instead of two per leaf bio. The stable sort
/// finds the runs arrival order leaves (md's split fronts go down
/// ascending, their remainders descending) and merges them in linear time.
fn join_touching(got: &mut Vec<(u64, u64)>) {
    got.sort();
    let mut n = 0;
    for i in 0..got.len() {
        if n > 0 && got[n - 1].1 == got[i].0 {
            got[n - 1].1 = got[i].1;
        } else {
            got[n] = got[i];
            n += 1;
        }
    }
    got.truncate(n);
}

/// One pass over the boundaries of both lists: each elementary piece's
/// issue count against the bounds of the runs covering it (overlapping
/// runs add up; no run means "never").
fn sweep(leaf: DevId, op: Op, got: &[(u64, u64)], want: &[(u64, u64, Bounds)], out: &mut Vec<Miscount>, ev: &mut Vec<(u64, i32, i32, i32, i32)>) {
    // (position, issued delta, min delta, max delta, unbounded delta)
    ev.clear();
    for &(s, e) in got {
        ev.push((s, 1, 0, 0, 0));
        ev.push((e, -1, 0, 0, 0));
    }
    for &(s, e, b) in want {
        let inf = (b.max == 0) as i32;
        ev.push((s, 0, b.min as i32, b.max as i32, inf));
        ev.push((e, 0, -(b.min as i32), -(b.max as i32), -inf));
    }
    ev.sort_unstable_by_key(|e| e.0);
    let (mut c, mut min, mut max, mut inf, mut at) = (0i32, 0i32, 0i32, 0i32, 0u64);
    for &(x, dc, dmin, dmax, dinf) in ev.iter() {
        if x > at && (c != 0 || min != 0) {
            let bad = c < min || (inf == 0 && c > max);
            if bad {
                let max = (inf == 0).then_some(max as u32);
                push_miscount(out, Miscount { leaf, op, start: at, end: x, count: c as u32, min: min as u32, max });
            }
        }
        (c, min, max, inf, at) = (c + dc, min + dmin, max + dmax, inf + dinf, x);
    }
}

/// Append, joining a piece that continues the previous one with the same counts.
fn push_miscount(out: &mut Vec<Miscount>, m: Miscount) {
    if let Some(p) = out.last_mut() {
        if p.leaf == m.leaf && p.op == m.op && p.end == m.start && p.count == m.count && p.min == m.min && p.max == m.max {
            p.end = m.end;
            return;
        }
    }
    out.push(m);
}

/// Do the read pieces (top sector, length) tile [start, end) exactly once?
/// Returns the first gap or overlap as (sector, what).
pub fn reads_tile(pieces: &mut [(u64, u64)], start: u64, end: u64) -> Option<(u64, &'static str)> {
    pieces.sort_unstable();
    let mut at = start;
    for &(s, n) in pieces.iter() {
        if s > at {
            return Some((at, "never read"));
        }
        if s < at {
            return Some((s, "read twice"));
        }
        at = s + n;
    }
    (at < end).then_some((at, "never read"))
}

/// What the layout allows, in words.
fn expected_text(min: u32, max: Option<u32>) -> String {
    match (min, max) {
        (0, Some(0)) => "expected none (no copy of the range lives there)".into(),
        (n, Some(m)) if n == m => format!("expected {n}"),
        (0, Some(m)) => format!("expected at most {m}"),
        (n, None) => format!("expected at least {n}"),
        (n, Some(m)) => format!("expected {n} to {m}"),
    }
}

/// One line for a miscount, e.g. "sdc sectors [6144, 6248): written 0
/// time(s), expected 1".
pub fn describe(topo: &Topology, m: &Miscount) -> String {
    let verb = match m.op {
        Op::Read => "read",
        Op::Discard => "discarded",
        Op::WriteZeroes => "zeroed",
        Op::SecureErase => "erased",
        _ => "written",
    };
    format!("{} sectors [{}, {}): {verb} {} time(s), {}", topo.dev(m.leaf).name, m.start, m.end, m.count, expected_text(m.min, m.max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(leaf: DevId, phys: u64, len: u64, bounds: Bounds) -> Run {
        Run { leaf, phys, len, logical: 0, read: false, bounds }
    }

    #[test]
    fn exact_copies_written_once_pass() {
        // Two copies of 8 sectors on leaves 1 and 2, each written once (in two pieces on leaf 1).
        let mut is = Issued::default();
        is.push(1, Op::Write, 100, 104);
        is.push(1, Op::Write, 104, 108);
        is.push(2, Op::Write, 200, 208);
        let mut out = Vec::new();
        compare(&is, &[run(1, 100, 8, Bounds::EXACT), run(2, 200, 8, Bounds::EXACT)], Op::Write, &mut out);
        assert_eq!(out, vec![]);
    }

    #[test]
    fn missed_copy_double_write_and_stray_write_are_reported() {
        // Leaf 1 [100,108) twice, leaf 2 never, leaf 3 [0,8) not a copy.
        let mut is = Issued::default();
        is.push(1, Op::Write, 100, 108);
        is.push(1, Op::Write, 100, 108);
        is.push(3, Op::Write, 0, 8);
        let mut out = Vec::new();
        compare(&is, &[run(1, 100, 8, Bounds::EXACT), run(2, 200, 8, Bounds::EXACT)], Op::Write, &mut out);
        let got: Vec<(DevId, u64, u64, u32, u32, Option<u32>)> = out.iter().map(|m| (m.leaf, m.start, m.end, m.count, m.min, m.max)).collect();
        assert_eq!(got, vec![(1, 100, 108, 2, 1, Some(1)), (2, 200, 208, 0, 1, Some(1)), (3, 0, 8, 1, 0, Some(0))]);
    }

    #[test]
    fn one_range_per_copy_passes_and_a_copy_written_twice_does_not() {
        // Copies on leaves 2 and 1 (in that order), each written once as
        // one range: nothing to report.
        let mut is = Issued::default();
        is.push(1, Op::Discard, 100, 108);
        is.push(2, Op::Discard, 200, 208);
        let want = [run(2, 200, 8, Bounds::EXACT), run(1, 100, 8, Bounds::EXACT)];
        let mut out = Vec::new();
        compare(&is, &want, Op::Discard, &mut out);
        assert_eq!(out, vec![]);
        // As many ranges as copies, but leaf 1's twice and leaf 2's never:
        // [100, 108) discarded 2 times, [200, 208) 0 times.
        let mut is = Issued::default();
        is.push(1, Op::Discard, 100, 108);
        is.push(1, Op::Discard, 100, 108);
        compare(&is, &want, Op::Discard, &mut out);
        let got: Vec<(DevId, u64, u64, u32)> = out.iter().map(|m| (m.leaf, m.start, m.end, m.count)).collect();
        assert_eq!(got, vec![(1, 100, 108, 2), (2, 200, 208, 0)]);
        // Each copy once, but one of them as a write: the discard of
        // [200, 208) is missing and the write was not expected.
        let mut is = Issued::default();
        is.push(1, Op::Discard, 100, 108);
        is.push(2, Op::Write, 200, 208);
        out.clear();
        compare(&is, &want, Op::Discard, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].leaf, out[0].op, out[0].count), (2, Op::Discard, 0));
    }

    #[test]
    fn touching_pieces_join_and_overlaps_still_count() {
        // md's order on a member: split fronts ascending, remainders
        // descending. [1023,1024) [2047,2048) then [1024,2047): one range
        // [1023, 2048) once the touching ones join.
        let mut got = vec![(1023, 1024), (2047, 2048), (1024, 2047)];
        join_touching(&mut got);
        assert_eq!(got, vec![(1023, 2048)]);
        // [0,10) [5,10) [10,20): sorted, [10,20) joins [5,10), the last it
        // touches: [0,10) [5,20) count 1 on [0,5), 2 on [5,10), 1 on [10,20),
        // as the three pieces do.
        let mut got = vec![(10, 20), (5, 10), (0, 10)];
        join_touching(&mut got);
        assert_eq!(got, vec![(0, 10), (5, 20)]);
        // A piece issued twice stays twice: [100,108) written 2 times.
        let mut is = Issued::default();
        is.push(1, Op::Write, 104, 108);
        is.push(1, Op::Write, 100, 104);
        is.push(1, Op::Write, 100, 108);
        let mut out = Vec::new();
        compare(&is, &[run(1, 100, 8, Bounds::EXACT)], Op::Write, &mut out);
        let got: Vec<(u64, u64, u32)> = out.iter().map(|m| (m.start, m.end, m.count)).collect();
        assert_eq!(got, vec![(100, 108, 2)]);
    }

    #[test]
    fn reads_must_tile() {
        assert_eq!(reads_tile(&mut [(8, 8), (0, 8)], 0, 16), None);
        assert_eq!(reads_tile(&mut [(0, 8), (4, 12)], 0, 16), Some((4, "read twice")));
        assert_eq!(reads_tile(&mut [(0, 8)], 0, 16), Some((8, "never read")));
    }
}
