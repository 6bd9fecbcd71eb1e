//! Aligning two event streams in order (`blkstack diff`): which events of
//! one line up with which of the other, as `diff` pairs lines.
//!
//! An exact longest-common-subsequence costs time quadratic in what
//! differs, and traces a million events long differ everywhere when the
//! two sides issue requests in a slightly different order. This alignment
//! is anchored instead: equal runs are taken as they come, and at a
//! mismatch at (`i`, `j`) the streams resynchronise at the nearest pair
//! `a[i + p] == b[j + q]` (the least `p + q`; the earliest such pair when
//! several tie), found through each key's next occurrence. The search for
//! a pair stops once `p` or `q` alone would cost more than the best pair
//! found, and at [`SEARCH`] events on each side: work per mismatch is
//! bounded by how far the streams drifted apart, so identical and locally
//! reordered streams align in linear time. Two events swapped
//! (`x y` against `y x`) cost one event unmatched on each side, as in a
//! longest common subsequence.

/// How far past a mismatch the nearest common event is looked for, on
/// each side; beyond that the two blocks are taken as replaced.
pub const SEARCH: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

impl Tag {
    /// difflib's name for the tag.
    pub fn name(self) -> &'static str {
        match self {
            Tag::Equal => "equal",
            Tag::Replace => "replace",
            Tag::Delete => "delete",
            Tag::Insert => "insert",
        }
    }
}

/// `a[i1..i2]` against `b[j1..j2]`, as difflib's opcodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opcode {
    pub tag: Tag,
    pub i1: usize,
    pub i2: usize,
    pub j1: usize,
    pub j2: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Alignment {
    /// Events aligned in order.
    pub matched: usize,
    /// Events in common when order is ignored (a multiset intersection).
    pub common: usize,
    /// Every event of both sides, covered in order.
    pub ops: Vec<Opcode>,
}

/// Where each key occurs in a stream, and a cursor per key that only
/// moves forward (the alignment never goes back).
struct Occurrences {
    /// Positions grouped by key: key k's are `pos[start[k]..start[k + 1]]`.
    start: Vec<u32>,
    pos: Vec<u32>,
    cursor: Vec<u32>,
}

impl Occurrences {
    fn new(s: &[u32], nkeys: usize) -> Self {
        let mut start = vec![0u32; nkeys + 1];
        for &k in s {
            start[k as usize + 1] += 1;
        }
        for k in 0..nkeys {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut pos = vec![0u32; s.len()];
        for (i, &k) in s.iter().enumerate() {
            pos[fill[k as usize] as usize] = i as u32;
            fill[k as usize] += 1;
        }
        let cursor = start[..nkeys].to_vec();
        Occurrences { start, pos, cursor }
    }

    /// The first occurrence of `key` at `from` or after; `from` never
    /// decreases from call to call.
    fn next(&mut self, key: u32, from: usize) -> Option<usize> {
        let k = key as usize;
        let end = self.start[k + 1];
        let mut c = self.cursor[k];
        while c < end && (self.pos[c as usize] as usize) < from {
            c += 1;
        }
        self.cursor[k] = c;
        (c < end).then(|| self.pos[c as usize] as usize)
    }

    fn count(&self, key: usize) -> usize {
        (self.start[key + 1] - self.start[key]) as usize
    }
}

/// Align `a` with `b`, whose keys are below `nkeys`.
pub fn align(a: &[u32], b: &[u32], nkeys: usize) -> Alignment {
    let (mut in_a, mut in_b) = (Occurrences::new(a, nkeys), Occurrences::new(b, nkeys));
    let common = (0..nkeys).map(|k| in_a.count(k).min(in_b.count(k))).sum();
    let (n, m) = (a.len(), b.len());
    let (mut i, mut j, mut matched) = (0, 0, 0);
    let mut ops: Vec<Opcode> = Vec::new();
    while i < n && j < m {
        if a[i] == b[j] {
            let (i0, j0) = (i, j);
            while i < n && j < m && a[i] == b[j] {
                i += 1;
                j += 1;
            }
            matched += i - i0;
            ops.push(Opcode { tag: Tag::Equal, i1: i0, i2: i, j1: j0, j2: j });
            continue;
        }
        let (p, q) = resync(a, b, i, j, &mut in_a, &mut in_b);
        push_change(&mut ops, i, i + p, j, j + q);
        i += p;
        j += q;
    }
    push_change(&mut ops, i, n, j, m);
    Alignment { matched, common, ops }
}

/// At a mismatch at (`i`, `j`): the steps (`p`, `q`) to the nearest pair
/// of equal events, or past a block of [`SEARCH`] events on each side
/// with nothing in common (the rest of both when it is shorter).
fn resync(a: &[u32], b: &[u32], i: usize, j: usize, in_a: &mut Occurrences, in_b: &mut Occurrences) -> (usize, usize) {
    let (n, m) = (a.len(), b.len());
    let mut best: Option<(usize, usize)> = None;
    let cost = |b: Option<(usize, usize)>| b.map_or(usize::MAX, |(p, q)| p + q);
    let mut k = 0;
    while k < cost(best) && k <= SEARCH && (i + k < n || j + k < m) {
        if i + k < n {
            if let Some(at) = in_b.next(a[i + k], j) {
                if k + (at - j) < cost(best) {
                    best = Some((k, at - j));
                }
            }
        }
        if j + k < m {
            if let Some(at) = in_a.next(b[j + k], i) {
                if k + (at - i) < cost(best) {
                    best = Some((at - i, k));
                }
            }
        }
        k += 1;
    }
    best.unwrap_or(((n - i).min(SEARCH), (m - j).min(SEARCH)))
}

/// A change `a[i1..i2]` against `b[j1..j2]` (nothing when both are empty),
/// joined with a change just before it.
fn push_change(ops: &mut Vec<Opcode>, i1: usize, i2: usize, j1: usize, j2: usize) {
    if i1 == i2 && j1 == j2 {
        return;
    }
    let (i1, j1) = match ops.last() {
        Some(o) if o.tag != Tag::Equal => {
            let o = ops.pop().expect("a last opcode");
            (o.i1, o.j1)
        }
        _ => (i1, j1),
    };
    let tag = match (i1 < i2, j1 < j2) {
        (true, true) => Tag::Replace,
        (true, false) => Tag::Delete,
        _ => Tag::Insert,
    };
    ops.push(Opcode { tag, i1, i2, j1, j2 });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(a: &[u32], b: &[u32]) -> (usize, usize, Vec<(&'static str, usize, usize, usize, usize)>) {
        let n = a.iter().chain(b).max().map_or(0, |&k| k as usize + 1);
        let r = align(a, b, n);
        (r.matched, r.common, r.ops.iter().map(|o| (o.tag.name(), o.i1, o.i2, o.j1, o.j2)).collect())
    }

    #[test]
    fn one_request_issued_as_two() {
        // 0 1 2 3 4 against 0 1 5 6 3 4: after the common 0 1, the nearest
        // common event is 3, one step on the left and two on the right:
        // 2 is replaced by 5 6, and 3 4 match again. 4 of 6 in order.
        assert_eq!(ops(&[0, 1, 2, 3, 4], &[0, 1, 5, 6, 3, 4]), (4, 4, vec![("equal", 0, 2, 0, 2), ("replace", 2, 3, 2, 4), ("equal", 3, 5, 4, 6)]));
    }

    #[test]
    fn a_moved_event_is_one_insert_and_one_delete() {
        // 0 1 2 against 2 0 1: resynchronising at 0 (one step on the
        // right) beats resynchronising at 2 (two steps on the left): 2 of 3
        // in order, all 3 ignoring order.
        assert_eq!(ops(&[0, 1, 2], &[2, 0, 1]), (2, 3, vec![("insert", 0, 0, 0, 1), ("equal", 0, 2, 1, 3), ("delete", 2, 3, 3, 3)]));
    }

    #[test]
    fn swapped_neighbours_cost_one_each() {
        // Pairs swapped all along (1 0 3 2 5 4 ...): each pair keeps one
        // of its two events in order, as a longest common subsequence does.
        let a: Vec<u32> = (0..1000).collect();
        let b: Vec<u32> = (0..1000).map(|x| x ^ 1).collect();
        let r = align(&a, &b, 1000);
        assert_eq!((r.matched, r.common), (500, 1000));
        let covered: usize = r.ops.iter().map(|o| o.i2 - o.i1).sum();
        assert_eq!(covered, 1000);
    }

    #[test]
    fn nothing_in_common_and_empty_sides() {
        assert_eq!(ops(&[0, 1], &[2, 3, 4]), (0, 0, vec![("replace", 0, 2, 0, 3)]));
        assert_eq!(ops(&[], &[1]), (0, 0, vec![("insert", 0, 0, 0, 1)]));
        assert_eq!(ops(&[1], &[]), (0, 0, vec![("delete", 0, 1, 0, 0)]));
        assert_eq!(ops(&[], &[]), (0, 0, vec![]));
    }

    #[test]
    fn blocks_with_nothing_in_common_longer_than_the_search() {
        // 10000 events with nothing in common, then 5 equal: the changes
        // join into one replace, and the 5 match.
        let mut a: Vec<u32> = (0..10_000).collect();
        let mut b: Vec<u32> = (10_000..20_000).collect();
        a.extend(20_000..20_005);
        b.extend(20_000..20_005);
        assert_eq!(ops(&a, &b).2, vec![("replace", 0, 10_000, 0, 10_000), ("equal", 10_000, 10_005, 10_000, 10_005)]);
    }
}
