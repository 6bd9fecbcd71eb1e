//! Interval maps over sectors: the compact state the integrity oracle
//! keeps (what each member range holds, the newest completed version of
//! each range of a top device).

use std::collections::BTreeMap;

/// Values over disjoint half-open sector ranges; adjacent ranges with the
/// same value are merged, so a device written in large runs stays small.
#[derive(Clone, Debug)]
pub struct IntervalMap<T: Copy + PartialEq> {
    /// start → (end, value)
    map: BTreeMap<u64, (u64, T)>,
}

impl<T: Copy + PartialEq> Default for IntervalMap<T> {
    fn default() -> Self {
        IntervalMap { map: BTreeMap::new() }
    }
}

impl<T: Copy + PartialEq> IntervalMap<T> {
    pub fn new() -> Self {
        IntervalMap { map: BTreeMap::new() }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Set [start, end) to `value`.
    pub fn set(&mut self, start: u64, end: u64, value: T) {
        if start >= end {
            return;
        }
        self.cut(start);
        self.cut(end);
        let inside: Vec<u64> = self.map.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            self.map.remove(&s);
        }
        let (mut s, mut e) = (start, end);
        if let Some((&ps, &(pe, pv))) = self.map.range(..s).next_back() {
            if pe == s && pv == value {
                self.map.remove(&ps);
                s = ps;
            }
        }
        if let Some(&(ne, nv)) = self.map.get(&e) {
            if nv == value {
                self.map.remove(&e);
                e = ne;
            }
        }
        self.map.insert(s, (e, value));
    }

    /// Split the range containing `at` so that a range starts there.
    fn cut(&mut self, at: u64) {
        if let Some((&s, &(e, v))) = self.map.range(..at).next_back() {
            if e > at {
                self.map.insert(s, (at, v));
                self.map.insert(at, (e, v));
            }
        }
    }

    /// Walk [start, end) in order: `f(a, b, value)` for each piece, `None`
    /// where nothing was set.
    pub fn walk(&self, start: u64, end: u64, mut f: impl FnMut(u64, u64, Option<T>)) {
        let mut pos = start;
        let first = self.map.range(..=start).next_back().map(|(&s, _)| s).unwrap_or(start);
        for (&s, &(e, v)) in self.map.range(first..end) {
            if e <= pos {
                continue;
            }
            if s > pos {
                f(pos, s, None);
                pos = s;
            }
            let b = e.min(end);
            f(pos, b, Some(v));
            pos = b;
        }
        if pos < end {
            f(pos, end, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(m: &IntervalMap<u32>, s: u64, e: u64) -> Vec<(u64, u64, Option<u32>)> {
        let mut v = Vec::new();
        m.walk(s, e, |a, b, x| v.push((a, b, x)));
        v
    }

    #[test]
    fn set_splits_and_merges() {
        let mut m = IntervalMap::new();
        m.set(0, 100, 1);
        m.set(40, 60, 2);
        assert_eq!(pieces(&m, 0, 120), vec![(0, 40, Some(1)), (40, 60, Some(2)), (60, 100, Some(1)), (100, 120, None)]);
        // Writing 1 over the middle merges back into one range.
        m.set(40, 60, 1);
        assert_eq!(m.len(), 1);
        assert_eq!(pieces(&m, 10, 20), vec![(10, 20, Some(1))]);
        // Adjacent equal values merge; a gap stays a gap.
        m.set(100, 150, 1);
        m.set(160, 170, 1);
        assert_eq!(m.len(), 2);
        assert_eq!(pieces(&m, 140, 165), vec![(140, 150, Some(1)), (150, 160, None), (160, 165, Some(1))]);
    }
}
