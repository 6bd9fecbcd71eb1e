//! btt's seek figures (btt/seek.c): the distance of each Q (Q2Q) or D
//! (D2D) from the one before it on the device, their mean, median and
//! modes.
//!
//! btt counts the distances in a red-black tree (`__insert`) and takes
//! the median and modes by walking it, so those figures depend on the
//! tree's shape. The shape depends only on the order in which distinct
//! distances first came, so the distances are kept here as they come and
//! the tree is built from them only when a figure depends on its shape:
//! most traces have one most frequent distance and a median that is 0 or
//! the one distance seen at least half the time, which need no tree, only
//! the distances counted (sorted). A walk down a tree of every distinct
//! distance for every Q and D is a cache miss per level.

use super::rbtree::{RbTree, NIL};
use super::FastMap;

#[derive(Clone, Debug, Default)]
pub struct Seeki {
    /// Every distance, in order.
    seen: Vec<u64>,
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
        self.seen.push(dist);
    }

    /// btt's tree of the distances: each inserted in the order first seen
    /// (a distance seen again only counts), with its count.
    fn tree(&self) -> RbTree<u64> {
        let mut tree = RbTree::default();
        let mut index: FastMap<u64, u32> = FastMap::default();
        for &d in &self.seen {
            match index.get(&d) {
                Some(&n) => *tree.val_mut(n) += 1,
                None => {
                    index.insert(d, tree.insert(d, 1));
                }
            }
        }
        tree
    }

    /// The distinct distances, in increasing order, with their counts.
    fn counted(&self) -> Vec<(u64, u64)> {
        let mut sorted = self.seen.clone();
        sorted.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for d in sorted {
            match out.last_mut() {
                Some((last, n)) if *last == d => *n += 1,
                _ => out.push((d, 1)),
            }
        }
        out
    }

    pub fn figures(&self) -> SeekFigures {
        let counted = self.counted();
        let built = std::cell::OnceCell::new();
        let tree = || built.get_or_init(|| self.tree());
        let (modes, most) = sole_mode(&counted).unwrap_or_else(|| modes(tree()));
        let target = self.nseeks / 2;
        let median = self.median_without_tree(&counted, target).unwrap_or_else(|| median(tree(), target));
        SeekFigures { nseeks: self.nseeks, mean: self.total_sectors / self.nseeks as f64, median, modes, most }
    }

    /// [`median`] where the tree's shape does not matter: from 2 up, at
    /// most two distances reach `target` (half the seeks); none gives 0,
    /// one gives itself, and two that are the only distances give the
    /// first seen, the root of a tree of two. Otherwise (a target of 0 or
    /// 1 takes the root; two of three distances reaching it are met in the
    /// order of the tree's walk) `None`.
    fn median_without_tree(&self, counted: &[(u64, u64)], target: u64) -> Option<i64> {
        if target < 2 {
            return None;
        }
        let mut over = counted.iter().filter(|&&(_, n)| n >= target);
        match (over.next(), over.next()) {
            (None, _) => Some(0),
            (Some(&(d, _)), None) => Some(d as i64),
            (Some(_), Some(_)) if counted.len() == 2 => Some(self.seen[0] as i64),
            _ => None,
        }
    }
}

/// The modes when one distance alone has the highest count: then the
/// order of the tree's walk does not matter.
fn sole_mode(counted: &[(u64, u64)]) -> Option<(Vec<i64>, u64)> {
    let most = counted.iter().map(|c| c.1).max()?;
    let mut at = counted.iter().filter(|c| c.1 == most);
    match (at.next(), at.next()) {
        (Some(&(d, _)), None) => Some((vec![d as i64], most)),
        _ => None,
    }
}

/// `seeki_median`: the first distance, visiting each node before its
/// left and then its right subtree, whose own count reaches `target`
/// (btt does not add up the counts it passes); 0 when none does.
fn median(tree: &RbTree<u64>, target: u64) -> i64 {
    let mut stack = vec![tree.root()];
    while let Some(n) = stack.pop() {
        if n == NIL {
            continue;
        }
        if *tree.val(n) >= target {
            return tree.key(n) as i64;
        }
        stack.push(tree.right(n));
        stack.push(tree.left(n));
    }
    0
}

/// `seeki_mode`: visiting left subtree, right subtree, then the node,
/// the distances with the highest count in the order met, and that
/// count.
fn modes(tree: &RbTree<u64>) -> (Vec<i64>, u64) {
    let (mut modes, mut most) = (Vec::new(), 0);
    let mut visit = Vec::new();
    post_order(tree, tree.root(), &mut visit);
    for n in visit {
        let count = *tree.val(n);
        if modes.is_empty() || count > most {
            modes.clear();
        } else if count < most {
            continue;
        }
        most = count;
        modes.push(tree.key(n) as i64);
    }
    (modes, most)
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

    #[test]
    fn figures_without_the_tree_are_those_of_its_walks() {
        // The shortcuts (one most frequent distance; a median of 0, of the
        // one distance reaching half the seeks, or of the first of two)
        // give what btt's walks of the whole tree give: seeded sequences of
        // 1 to 40 seeks over 1 to 6 distinct starts, so with few and many
        // distances, one mode and ties.
        let mut x: u64 = 18;
        for case in 0..600u64 {
            let mut s = Seeki::default();
            for _ in 0..1 + case % 40 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let start = (x >> 33) % (1 + case % 6) * 8;
                s.add(start, start + 8);
            }
            let (tree, f) = (s.tree(), s.figures());
            assert_eq!((f.modes, f.most), modes(&tree), "case {case}");
            assert_eq!(f.median, median(&tree, s.nseeks / 2), "case {case}");
        }
    }
}
