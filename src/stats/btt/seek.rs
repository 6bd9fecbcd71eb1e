//! btt's seek figures (btt/seek.c): the distance of each Q (Q2Q) or D
//! (D2D) from the one before it on the device, their mean, median and
//! modes.

use super::rbtree::{RbTree, NIL};

#[derive(Clone, Debug, Default)]
pub struct Seeki {
    /// Distinct distances with their counts (btt's `seek_bkt`s).
    tree: RbTree<u64>,
    pub nseeks: u64,
    total_sectors: f64,
    last_start: i64,
    last_end: i64,
}

/// A device's seek figures as `do_output_dip_seek_info` prints them.
pub struct SeekFigures {
    pub nseeks: u64,
    pub mean: f64,
    pub median: i64,
    pub modes: Vec<i64>,
    pub most: u64,
}

impl Seeki {
    /// `seek_dist`: no seek when the range overlaps the previous one;
    /// otherwise from the previous end when it lies after it, from the
    /// previous start when before.
    fn seek_dist(&mut self, start: i64, end: i64) -> i64 {
        let (ls, le) = (self.last_start, self.last_end);
        let dist = if (ls <= start && start <= le) || (ls <= end && end <= le) {
            0
        } else if start > le {
            start - le
        } else {
            start - ls
        };
        self.last_start = start;
        self.last_end = end;
        dist
    }

    /// `seeki_add`: one more Q or D over [start, end) sectors.
    pub fn add(&mut self, start: u64, end: u64) {
        let dist = self.seek_dist(start as i64, end as i64).unsigned_abs();
        self.nseeks += 1;
        self.total_sectors += dist as f64;
        let (n, new) = self.tree.find_or_insert(dist, || 1);
        if !new {
            *self.tree.val_mut(n) += 1;
        }
    }

    pub fn figures(&self) -> SeekFigures {
        let (modes, most) = self.modes();
        SeekFigures { nseeks: self.nseeks, mean: self.total_sectors / self.nseeks as f64, median: self.median(self.nseeks / 2), modes, most }
    }

    /// `seeki_median`: the first distance, visiting each node before its
    /// left and then its right subtree, whose own count reaches `target`
    /// (btt does not add up the counts it passes); 0 when none does.
    fn median(&self, target: u64) -> i64 {
        let mut stack = vec![self.tree.root()];
        while let Some(n) = stack.pop() {
            if n == NIL {
                continue;
            }
            if *self.tree.val(n) >= target {
                return self.tree.key(n) as i64;
            }
            stack.push(self.tree.right(n));
            stack.push(self.tree.left(n));
        }
        0
    }

    /// `seeki_mode`: visiting left subtree, right subtree, then the node,
    /// the distances with the highest count in the order met, and that
    /// count.
    fn modes(&self) -> (Vec<i64>, u64) {
        let (mut modes, mut most) = (Vec::new(), 0);
        let mut visit = Vec::new();
        post_order(&self.tree, self.tree.root(), &mut visit);
        for n in visit {
            let count = *self.tree.val(n);
            if modes.is_empty() || count > most {
                modes.clear();
            } else if count < most {
                continue;
            }
            most = count;
            modes.push(self.tree.key(n) as i64);
        }
        (modes, most)
    }
}

fn post_order(t: &RbTree<u64>, n: u32, out: &mut Vec<u32>) {
    if n != NIL {
        post_order(t, t.left(n), out);
        post_order(t, t.right(n), out);
        out.push(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_as_btt_measures_them() {
        // From (0, 0): [8, 16) starts 8 past the end 0; [16, 24) touches
        // 16, the previous end, so 0; [0, 8) lies before: 0 - 16 = -16,
        // counted as 16; [100, 108) is 100 - 8 = 92 past [0, 8).
        let mut s = Seeki::default();
        for (a, b) in [(8, 16), (16, 24), (0, 8), (100, 108)] {
            s.add(a, b);
        }
        let f = s.figures();
        assert_eq!((f.nseeks, f.mean), (4, (8 + 0 + 16 + 92) as f64 / 4.0));
        // Distances 8, 0, 16, 92 inserted in that order: 8 on top, 0 left,
        // 16 right, 92 under 16. Pre-order 8, 0, 16, 92; target 4 / 2 = 2:
        // no count reaches 2, so the median is 0. Every count is 1: the
        // modes are all, in post-order 0, 92, 16, 8.
        assert_eq!((f.median, f.modes, f.most), (0, vec![0, 92, 16, 8], 1));
    }
}
