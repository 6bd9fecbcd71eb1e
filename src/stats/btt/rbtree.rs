//! The red-black tree btt keeps its pending Qs and its seek distances in.
//! btt walks it in ways that depend on its shape: `rb_find_sec` and
//! `rb_foreach` prune by start sector, so of overlapping ranges some are
//! never found; the seek median and modes come from pre- and post-order
//! walks. This tree inserts and erases exactly as the rbtree.c btt builds
//! with (`rb_insert_color`, `rb_erase`, `__rb_erase_color`), so the shape,
//! and every figure that depends on it, comes out the same.

pub const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node<V> {
    key: u64,
    val: V,
    left: u32,
    right: u32,
    parent: u32,
    red: bool,
}

/// Nodes by key, in an arena (ids of erased nodes are reused).
#[derive(Clone, Debug)]
pub struct RbTree<V> {
    nodes: Vec<Node<V>>,
    free: Vec<u32>,
    root: u32,
}

impl<V> Default for RbTree<V> {
    fn default() -> Self {
        RbTree { nodes: Vec::new(), free: Vec::new(), root: NIL }
    }
}

impl<V> RbTree<V> {
    pub fn root(&self) -> u32 {
        self.root
    }

    pub fn left(&self, n: u32) -> u32 {
        self.nodes[n as usize].left
    }

    pub fn right(&self, n: u32) -> u32 {
        self.nodes[n as usize].right
    }

    pub fn key(&self, n: u32) -> u64 {
        self.nodes[n as usize].key
    }

    pub fn val(&self, n: u32) -> &V {
        &self.nodes[n as usize].val
    }

    pub fn val_mut(&mut self, n: u32) -> &mut V {
        &mut self.nodes[n as usize].val
    }

    /// The node of `key`, by binary search.
    pub fn find(&self, key: u64) -> Option<u32> {
        let mut n = self.root;
        while n != NIL {
            let k = self.key(n);
            if key == k {
                return Some(n);
            }
            n = if key < k { self.left(n) } else { self.right(n) };
        }
        None
    }

    /// Add `key` (absent) where the binary search ends, then rebalance.
    pub fn insert(&mut self, key: u64, val: V) -> u32 {
        let (mut parent, mut cur, mut left) = (NIL, self.root, false);
        while cur != NIL {
            parent = cur;
            left = key < self.key(cur);
            cur = if left { self.left(cur) } else { self.right(cur) };
        }
        self.link(key, val, parent, left)
    }

    /// A new red node under `parent` (on its left or right), then rebalance.
    fn link(&mut self, key: u64, val: V, parent: u32, left: bool) -> u32 {
        let node = Node { key, val, left: NIL, right: NIL, parent, red: true };
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() as u32 - 1
            }
        };
        self.set_child(parent, left, id);
        self.insert_color(id);
        id
    }

    fn red(&self, n: u32) -> bool {
        n != NIL && self.nodes[n as usize].red
    }

    fn parent(&self, n: u32) -> u32 {
        self.nodes[n as usize].parent
    }

    fn set_red(&mut self, n: u32, red: bool) {
        if n != NIL {
            self.nodes[n as usize].red = red;
        }
    }

    fn set_parent(&mut self, n: u32, p: u32) {
        if n != NIL {
            self.nodes[n as usize].parent = p;
        }
    }

    /// Make `child` the left (or right) child of `parent`, or the root.
    fn set_child(&mut self, parent: u32, left: bool, child: u32) {
        if parent == NIL {
            self.root = child;
        } else if left {
            self.nodes[parent as usize].left = child;
        } else {
            self.nodes[parent as usize].right = child;
        }
    }

    /// Put `new` where `old` hangs from its parent.
    fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        let left = parent != NIL && self.left(parent) == old;
        self.set_child(parent, left, new);
    }

    /// `rb_insert_color`.
    fn insert_color(&mut self, mut node: u32) {
        loop {
            let parent = self.parent(node);
            if parent == NIL || !self.red(parent) {
                break;
            }
            let gparent = self.parent(parent);
            let parent_is_left = self.left(gparent) == parent;
            let uncle = if parent_is_left { self.right(gparent) } else { self.left(gparent) };
            if self.red(uncle) {
                self.set_red(uncle, false);
                self.set_red(parent, false);
                self.set_red(gparent, true);
                node = gparent;
                continue;
            }
            let mut parent = parent;
            let inner = if parent_is_left { self.right(parent) == node } else { self.left(parent) == node };
            if inner {
                self.rotate(parent, parent_is_left);
                std::mem::swap(&mut parent, &mut node);
            }
            self.set_red(parent, false);
            self.set_red(gparent, true);
            self.rotate(gparent, !parent_is_left);
        }
        let root = self.root;
        self.set_red(root, false);
    }

    /// `__rb_rotate_left` (`left`) or `__rb_rotate_right` around `node`.
    fn rotate(&mut self, node: u32, left: bool) {
        let child = if left { self.right(node) } else { self.left(node) };
        let moved = if left { self.left(child) } else { self.right(child) };
        if left {
            self.nodes[node as usize].right = moved;
            self.nodes[child as usize].left = node;
        } else {
            self.nodes[node as usize].left = moved;
            self.nodes[child as usize].right = node;
        }
        self.set_parent(moved, node);
        let parent = self.parent(node);
        self.set_parent(child, parent);
        self.replace_child(parent, node, child);
        self.set_parent(node, child);
    }

    /// `rb_erase`: a node with two children is replaced by its successor.
    pub fn erase(&mut self, node: u32) {
        let (child, parent, red);
        if self.left(node) != NIL && self.right(node) != NIL {
            let old = node;
            let mut succ = self.right(old);
            while self.left(succ) != NIL {
                succ = self.left(succ);
            }
            self.replace_child(self.parent(old), old, succ);
            child = self.right(succ);
            red = self.red(succ);
            let mut p = self.parent(succ);
            if p == old {
                p = succ;
            } else {
                self.set_parent(child, p);
                self.nodes[p as usize].left = child;
                let r = self.right(old);
                self.nodes[succ as usize].right = r;
                self.set_parent(r, succ);
            }
            parent = p;
            self.nodes[succ as usize].parent = self.parent(old);
            self.nodes[succ as usize].red = self.red(old);
            let l = self.left(old);
            self.nodes[succ as usize].left = l;
            self.set_parent(l, succ);
        } else {
            child = if self.left(node) == NIL { self.right(node) } else { self.left(node) };
            parent = self.parent(node);
            red = self.red(node);
            self.set_parent(child, parent);
            self.replace_child(parent, node, child);
        }
        if !red {
            self.erase_color(child, parent);
        }
        self.free.push(node);
    }

    /// `__rb_erase_color`: restore the black heights below `parent`,
    /// whose `node` side lost a black node.
    fn erase_color(&mut self, mut node: u32, mut parent: u32) {
        while !self.red(node) && node != self.root {
            let left = self.left(parent) == node;
            let mut other = if left { self.right(parent) } else { self.left(parent) };
            if self.red(other) {
                self.set_red(other, false);
                self.set_red(parent, true);
                self.rotate(parent, left);
                other = if left { self.right(parent) } else { self.left(parent) };
            }
            let (near, far) = if left { (self.left(other), self.right(other)) } else { (self.right(other), self.left(other)) };
            if !self.red(near) && !self.red(far) {
                self.set_red(other, true);
                node = parent;
                parent = self.parent(node);
                continue;
            }
            if !self.red(far) {
                self.set_red(near, false);
                self.set_red(other, true);
                self.rotate(other, !left);
                other = if left { self.right(parent) } else { self.left(parent) };
            }
            let parent_red = self.red(parent);
            self.set_red(other, parent_red);
            self.set_red(parent, false);
            let far = if left { self.right(other) } else { self.left(other) };
            self.set_red(far, false);
            self.rotate(parent, left);
            node = self.root;
            break;
        }
        self.set_red(node, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre_order(t: &RbTree<()>) -> Vec<u64> {
        let (mut out, mut stack) = (Vec::new(), vec![t.root()]);
        while let Some(n) = stack.pop() {
            if n != NIL {
                out.push(t.key(n));
                stack.push(t.right(n));
                stack.push(t.left(n));
            }
        }
        out
    }

    #[test]
    fn shapes_as_the_kernel_tree_makes_them() {
        // 1, 2, 3: a right line rotated left at 1 (2 on top). 4 recolours
        // (uncle 1 red) and hangs right of 3: pre-order 2, 1, 3, 4.
        let mut t = RbTree::default();
        for k in [1, 2, 3, 4] {
            t.insert(k, ());
        }
        assert_eq!(pre_order(&t), [2, 1, 3, 4]);
        // Erasing the root 2 (two children): its successor 3 takes its
        // place and colour; 3's right child 4 moves up: 3, 1, 4.
        t.erase(t.find(2).unwrap());
        assert_eq!(pre_order(&t), [3, 1, 4]);
        // Erasing 1, a black leaf: its sibling 4 (black by now, without
        // children) turns red and the missing black moves up to 3, the
        // root: 3, 4.
        t.erase(t.find(1).unwrap());
        assert_eq!(pre_order(&t), [3, 4]);
    }
}
