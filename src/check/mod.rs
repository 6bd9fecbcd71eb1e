//! Run-time checks of what the stack does with every submitted bio.
//!
//! * [`conservation`] (always on, cheap): each root bio's sectors reach the
//!   leaf disks as often as the layout says, at the right place, and
//!   nothing else is issued.
//! * [`oracle`] (`--check integrity`): versions of data per member
//!   location; missed copies, stale reads and over-reaching discards.
//!
//! Both compare the drivers against reference [`layout`]s built from the
//! pure mapping arithmetic. [`Checker`] is the part the block core calls:
//! when a submitter's bio enters the stack ([`Checker::root_submitted`]),
//! when a bio object is first queued on a request-based disk
//! ([`Checker::leaf_queued`]; its root is found through the completion
//! chain) and when the root completes ([`Checker::root_done`]). Roots on
//! devices the checks know nothing about, and roots during which any bio
//! failed, are not checked.

pub mod conservation;
mod fanout;
pub mod intervals;
pub mod layout;
pub mod oracle;
mod streak;
pub mod thread;

use crate::bio::{Bio, BioId, BioVecs, BvecIter, Op, SECTOR_SHIFT};
use crate::genhd::{DevId, Topology};

use conservation::{Issued, Miscount};
use fanout::Fanout;
use layout::{default_layout, plain_disk, raid10_tiles, Bounds, Layout, Mapper, R10Tiles, Run, Runs};
use oracle::Oracle;
use streak::Streak;

/// Violations kept word for word (the count goes on).
const MAX_REPORTED: usize = 20;

/// What the checks note of every root when it is submitted, whichever
/// state then follows it (a [`Streak`], a [`Fanout`] or a [`RootState`]).
#[derive(Clone, Copy, Default)]
struct Root {
    /// The root's number (1 for a run's first bio), for reports.
    seq: u64,
    dev: DevId,
    op: Op,
    start: u64,
    sectors: u64,
    /// The block core's count of failed bios when the root was submitted.
    errors_at_start: u64,
}

impl Root {
    /// Root `bio`, the run's `seq`th, submitted with `errors` failed bios.
    fn of(bio: &Bio, seq: u64, errors: u64) -> Root {
        Root { seq, dev: bio.dev, op: bio.op, start: bio.iter.sector, sectors: bio.sectors() as u64, errors_at_start: errors }
    }
}

/// What the checks know of one root bio while it is in flight. Finished
/// states go back to a free list with their buffers (pieces, reads,
/// reference runs) emptied but kept, so checking a root allocates nothing
/// once a run has as many states as it has roots in flight.
#[derive(Default)]
struct RootState {
    root: Root,
    /// The root's device is a plain disk or a partition of one: (the disk,
    /// the partition start). Its sectors have one home each, found without
    /// mapping.
    plain: Option<(DevId, u64)>,
    /// A plain root whose pieces so far continue one another from its
    /// first sector, each of its op, on its disk, at its own place (what
    /// nearly every plain root's pieces do): they were kept as one count
    /// ([`Streak`]), `cursor` (the whole-disk sector the next such piece
    /// starts at), and go into `issued` and `reads` when a piece breaks the
    /// streak ([`RootState::end_streak`]) or the root completes short of
    /// its end.
    streak: bool,
    cursor: u64,
    /// The submitter's pages (none once finished), and where the root
    /// starts in them (bytes). A piece is the submitter's data when its
    /// bio holds the same pages (a clone or split of the root).
    bvecs: BioVecs,
    base: u64,
    issued: Issued,
    /// Read roots: (top sector, sectors) of each piece.
    reads: Vec<(u64, u64)>,
    /// Oracle: the version of a write-like root.
    version: u32,
    /// Oracle: where the root's data lives (computed on first need, then
    /// `has_copies`).
    copies: Runs,
    has_copies: bool,
    /// The root's reference runs for its own op (computed on first need,
    /// then `has_expected`).
    expected: Runs,
    has_expected: bool,
}

impl RootState {
    /// The streak's pieces into `issued` (and `reads`), as the piece by
    /// piece bookkeeping would have them: one range, since each continued
    /// the last (for reads, one piece tiles as its parts do).
    fn end_streak(&mut self) {
        if !std::mem::take(&mut self.streak) {
            return;
        }
        let (disk, offset) = self.plain.expect("a streak is a plain root's");
        let first = self.root.start + offset;
        if self.cursor > first {
            self.issued.push(disk, self.root.op, first, self.cursor);
            if self.root.op == Op::Read {
                self.reads.push((self.root.start, self.cursor - first));
            }
        }
    }

    /// Did the streak reach the root's end?
    fn streak_complete(&self) -> bool {
        self.streak && self.plain.is_some_and(|(_, offset)| self.cursor == self.root.start + offset + self.root.sectors)
    }

    /// Back to empty for the next root, keeping the buffers.
    fn recycle(&mut self) {
        self.bvecs = BioVecs::default();
        self.issued.clear();
        self.reads.clear();
        self.has_copies = false;
        self.has_expected = false;
    }
}

/// The checks' state for a run; lives in the block core.
#[derive(Default)]
pub struct Checker {
    /// Layouts given by the scenario (stacked devices).
    given: Vec<(DevId, Layout)>,
    /// Every device's layout, resolved on first use.
    layouts: Vec<Layout>,
    /// Per device, resolved with `layouts`: a raid10 array's period in
    /// closed form.
    tiles: Vec<Option<R10Tiles>>,
    /// Per device, resolved with `layouts`: the plain disk and partition
    /// start its sectors live at ([`plain_disk`]), looked up once per root.
    plain: Vec<Option<(DevId, u64)>>,
    /// Per device, resolved with `layouts`: where its roots keep a
    /// [`Streak`], and of which ops (one lookup and a bit test per root).
    homes: Vec<StreakHome>,
    /// Boxed, so taking one in and out of its slot moves a pointer.
    roots: Vec<Option<Box<RootState>>>,
    /// Finished root states, their buffers kept for reuse (boxed, as above).
    #[allow(clippy::vec_box)]
    free_roots: Vec<Box<RootState>>,
    /// Plain roots while their pieces form one streak, by root id (used
    /// when the oracle is off): most roots never need a `RootState`.
    streaks: Vec<Streak>,
    /// Stacked roots of ops without data while their pieces continue their
    /// reference runs, by root id (used when the oracle is off).
    fanouts: Vec<Fanout>,
    next_seq: u64,
    oracle: Option<Oracle>,
    /// Roots compared at completion, and roots left unchecked.
    pub roots_checked: u64,
    pub roots_unchecked: u64,
    pub violations: Vec<String>,
    pub violation_count: u64,
    /// Reused for every placement check (one per bio reaching a disk).
    scratch: Option<Runs>,
    /// Reused for every root compared with its reference runs.
    compare_scratch: conservation::Scratch,
}

/// A device whose roots keep a [`Streak`]: a plain disk or a partition of
/// one, with the oracle off.
#[derive(Clone, Copy, Default)]
struct StreakHome {
    /// The ops whose roots keep one, a bit (`1 << op`) each: those the disk
    /// takes (none for a device that is not plain, or with the oracle on).
    /// A root of an op its disk does not take never passes as a streak at
    /// completion; it gets a full [`RootState`] at once, which counts its
    /// pieces just as a promoted streak would, and the streak's completion
    /// need not ask the disk's layout again for every root.
    ops: u32,
    /// The disk, and the partition's start (0 on a whole disk).
    disk: DevId,
    offset: u64,
}

/// Byte offset of `iter` in a bvec table. The table is looked at (its
/// variant matched) only past the first bvec: every root and piece asks.
#[inline(always)]
fn data_offset(bvecs: &BioVecs, iter: &BvecIter) -> u64 {
    if iter.idx == 0 {
        // In the first bvec (every single-page bio): no sum to take.
        return iter.bvec_done as u64;
    }
    bvecs[..(iter.idx as usize).min(bvecs.len())].iter().map(|b| b.len as u64).sum::<u64>() + iter.bvec_done as u64
}

/// Is `op` one that changes what the disks hold?
fn writes_data(op: Op) -> bool {
    matches!(op, Op::Write | Op::WriteZeroes | Op::Discard | Op::SecureErase | Op::ZoneAppend)
}

impl Checker {
    pub fn new() -> Checker {
        Checker::default()
    }

    /// The reference layout of a stacked device (set before the run).
    pub fn set_layout(&mut self, dev: DevId, layout: Layout) {
        self.given.push((dev, layout));
        self.layouts.clear();
    }

    /// Turn the integrity oracle on.
    pub fn enable_oracle(&mut self) {
        self.oracle = Some(Oracle::new());
        // Resolved again: with the oracle on no root keeps a streak.
        self.layouts.clear();
    }

    pub fn oracle_enabled(&self) -> bool {
        self.oracle.is_some()
    }

    /// Do the checks map pieces through stacked devices' layouts or keep
    /// the oracle's versions (work worth a thread of their own, see
    /// [`thread`]), rather than only follow plain disks' streaks (a few
    /// compares a piece, about what handing it over costs)?
    pub fn worth_a_thread(&self) -> bool {
        !self.given.is_empty() || self.oracle.is_some()
    }

    /// Every device's layout, resolved once per run: a compare on every
    /// root (inline), the work itself out of line.
    #[inline(always)]
    fn resolve(&mut self, topo: &Topology) {
        if self.layouts.len() != topo.devs.len() {
            self.resolve_layouts(topo);
        }
    }

    #[cold]
    #[inline(never)]
    fn resolve_layouts(&mut self, topo: &Topology) {
        self.layouts = (0..topo.devs.len() as DevId).map(|d| default_layout(topo, d)).collect();
        for (d, l) in &self.given {
            if let Some(slot) = self.layouts.get_mut(*d as usize) {
                *slot = l.clone();
            }
        }
        self.plain = (0..self.layouts.len() as DevId).map(|d| plain_disk(&self.layouts, d)).collect();
        let oracle = self.oracle.is_some();
        let all = [Op::Read, Op::Write, Op::Flush, Op::Discard, Op::SecureErase, Op::ZoneAppend, Op::WriteZeroes];
        self.homes = self
            .plain
            .iter()
            .map(|p| match *p {
                Some((disk, offset)) if !oracle => {
                    let ops = all.iter().filter(|&&op| op == Op::Read || self.mapper(op).leaf_takes_op(disk)).fold(0, |m, &op| m | 1 << op as u32);
                    StreakHome { ops, disk, offset }
                }
                _ => StreakHome::default(),
            })
            .collect();
        self.tiles = raid10_tiles(&self.layouts);
    }

    fn violation(&mut self, msg: String) {
        self.violation_count += 1;
        if self.violations.len() < MAX_REPORTED {
            self.violations.push(msg);
        }
    }

    /// The report a failed run prints, if anything failed.
    pub fn failure_report(&self) -> Option<String> {
        if self.violation_count == 0 {
            return None;
        }
        let mut s = format!("{} check violation(s)", self.violation_count);
        for v in &self.violations {
            s.push_str("\n  ");
            s.push_str(v);
        }
        if self.violation_count as usize > self.violations.len() {
            s.push_str(&format!("\n  ... and {} more", self.violation_count as usize - self.violations.len()));
        }
        Some(s)
    }

    fn mapper(&self, op: Op) -> Mapper<'_> {
        Mapper { layouts: &self.layouts, tiles: &self.tiles, op }
    }

    // ---- hooks ---------------------------------------------------------

    /// A submitter's bio enters the stack (before `submit_bio_noacct`).
    /// A plain root (no oracle) of an op its disk takes starts its streak
    /// here, inline: what nearly every root does.
    #[inline(always)]
    pub fn root_submitted(&mut self, topo: &Topology, bio: &Bio, id: BioId, errors: u64) {
        self.resolve(topo);
        self.next_seq += 1;
        if let Some(&StreakHome { disk, offset, .. }) = self.homes.get(bio.dev as usize).filter(|h| h.ops & (1 << bio.op as u32) != 0) {
            return self.begin_streak(bio, id, errors, disk, offset);
        }
        self.root_submitted_full(bio, id, errors)
    }

    /// [`Self::root_submitted`] of a root with a full [`RootState`] (a
    /// stacked device, or the oracle on).
    #[inline(never)]
    fn root_submitted_full(&mut self, bio: &Bio, id: BioId, errors: u64) {
        if let Some(s) = self.streaks.get_mut(id as usize) {
            s.live = false;
        }
        if let Some(f) = self.fanouts.get_mut(id as usize) {
            f.live = false;
        }
        if matches!(self.layouts[bio.dev as usize], Layout::Unknown) {
            return;
        }
        let plain = self.plain[bio.dev as usize];
        let (start, sectors) = (bio.iter.sector, bio.sectors() as u64);
        // A stacked root of an op without data: its reference runs now
        // rather than at completion; a fan-out follows them, or the full
        // state keeps them.
        let mut runs = None;
        if plain.is_none() && self.oracle.is_none() && !bio.op.has_data() && sectors > 0 {
            let mut r = self.scratch.take().unwrap_or_else(|| Runs::new(false));
            r.clear(false);
            self.mapper(bio.op).map(bio.dev, start, sectors, start, Bounds::EXACT, false, &mut r);
            if self.begin_fanout(bio, id, errors, &r.runs) {
                self.scratch = Some(r);
                return;
            }
            runs = Some(r);
        }
        let version = match &mut self.oracle {
            Some(o) if writes_data(bio.op) && sectors > 0 => o.begin(bio.dev, bio.op, start, start + sectors, self.next_seq),
            _ => 0,
        };
        let st = self.full_state(id as usize, Root::of(bio, self.next_seq, errors));
        (st.plain, st.streak, st.cursor, st.version) = (plain, false, 0, version);
        st.bvecs = bio.bvecs.clone();
        st.base = data_offset(&bio.bvecs, &bio.iter);
        if let Some(mut r) = runs {
            std::mem::swap(&mut st.expected, &mut r);
            st.has_expected = true;
            self.scratch = Some(r);
        }
    }

    /// A plain root (no oracle) starts its streak in slot `id`.
    #[inline(always)]
    fn begin_streak(&mut self, bio: &Bio, id: BioId, errors: u64, disk: DevId, offset: u64) {
        let i = id as usize;
        if self.streaks.len() <= i {
            self.streaks.resize_with(i + 1, Streak::default);
        }
        let s = &mut self.streaks[i];
        s.live = true;
        s.root = Root::of(bio, self.next_seq, errors);
        let first = bio.iter.sector + offset;
        (s.disk, s.offset, s.cursor, s.end) = (disk, offset, first, first + s.root.sectors);
        s.bvecs = bio.bvecs.clone();
        s.base = data_offset(&bio.bvecs, &bio.iter);
    }

    /// A stacked root of an op without data (no oracle) follows its
    /// reference `runs` in slot `id`, if they allow ([`Fanout::follow`]).
    fn begin_fanout(&mut self, bio: &Bio, id: BioId, errors: u64, runs: &[Run]) -> bool {
        let i = id as usize;
        if self.fanouts.len() <= i {
            self.fanouts.resize_with(i + 1, Fanout::default);
        }
        let f = &mut self.fanouts[i];
        if !f.follow(runs) {
            return false;
        }
        f.live = true;
        f.root = Root::of(bio, self.next_seq, errors);
        true
    }

    /// The fan-out in slot `root` becomes a full [`RootState`] holding the
    /// pieces counted so far.
    #[cold]
    #[inline(never)]
    fn promote_fanout(&mut self, root: BioId) {
        let i = root as usize;
        self.fanouts[i].live = false;
        let st = self.full_state(i, self.fanouts[i].root);
        (st.plain, st.streak, st.cursor, st.bvecs, st.base) = (None, false, 0, BioVecs::None, 0);
        let Checker { roots, fanouts, .. } = self;
        fanouts[i].counted(&mut roots[i].as_mut().expect("placed").issued);
    }

    /// A full [`RootState`] for `root` in slot `i` (its other fields for
    /// the caller to set).
    fn full_state(&mut self, i: usize, root: Root) -> &mut RootState {
        let mut st = self.free_roots.pop().unwrap_or_default();
        (st.root, st.version) = (root, 0);
        if self.roots.len() <= i {
            self.roots.resize_with(i + 1, || None);
        }
        self.roots[i].insert(st)
    }

    /// The streak in slot `root` becomes a full [`RootState`], its pieces
    /// so far still one count (`streak`, `cursor`).
    #[cold]
    #[inline(never)]
    fn promote(&mut self, root: BioId) {
        let i = root as usize;
        let s = &mut self.streaks[i];
        s.live = false;
        let (root, plain, cursor, bvecs, base) = (s.root, Some((s.disk, s.offset)), s.cursor, std::mem::take(&mut s.bvecs), s.base);
        let st = self.full_state(i, root);
        (st.plain, st.streak, st.cursor, st.bvecs, st.base) = (plain, true, cursor, bvecs, base);
    }

    /// A bio object is queued on a request-based disk for the first time
    /// (after the partition remap). `root` is the end of its chain.
    /// A piece that continues its root's streak is counted inline.
    #[inline(always)]
    pub fn leaf_queued(&mut self, topo: &Topology, bio: &Bio, root: BioId) {
        let n = bio.sectors() as u64;
        if let Some(s) = self.streaks.get_mut(root as usize).filter(|s| s.live) {
            if n == 0 || s.extend(bio, n) {
                return;
            }
            self.promote(root);
        }
        if let Some(f) = self.fanouts.get_mut(root as usize).filter(|f| f.live) {
            if n == 0 || f.extend(bio.dev, bio.op, bio.iter.sector, n) {
                return;
            }
            self.promote_fanout(root);
        }
        self.leaf_queued_full(topo, bio, root, n)
    }

    /// [`Self::leaf_queued`] for a root with a full [`RootState`]: the
    /// piece recorded and its placement checked.
    #[inline(never)]
    fn leaf_queued_full(&mut self, topo: &Topology, bio: &Bio, root: BioId, n: u64) {
        let Some(Some(st)) = self.roots.get_mut(root as usize) else { return };
        if n == 0 {
            return;
        }
        let (leaf, phys) = (bio.dev, bio.iter.sector);
        st.end_streak();
        st.issued.push(leaf, bio.op, phys, phys + n);
        let allowed = bio.op == st.root.op || (bio.op == Op::Read && st.root.op == Op::Write);
        let attributed = bio.op.has_data() && bio.bvecs.same_pages(&st.bvecs);
        let logical = attributed.then(|| st.root.start + ((data_offset(&bio.bvecs, &bio.iter) - st.base) >> SECTOR_SHIFT));
        let root_op = st.root.op;
        if !allowed {
            return self.wrong_op(topo, root, bio);
        }
        if let Some(l) = logical {
            self.check_placement(topo, root, leaf, phys, n, l);
        } else if bio.op == Op::Read && root_op == Op::Read {
            self.foreign_read(topo, root, bio);
        }
        if self.oracle.is_some() {
            self.oracle_piece(topo, root, bio.op, leaf, phys, n, logical);
        }
    }

    /// A leaf piece of an op its root cannot cause. (Violations are cold:
    /// their formatting stays out of the path every leaf bio takes.)
    #[cold]
    fn wrong_op(&mut self, topo: &Topology, root: BioId, bio: &Bio) {
        let st = self.roots[root as usize].as_ref().expect("root");
        let (seq, dev, op, phys, end) = (st.root.seq, st.root.dev, st.root.op, bio.iter.sector, bio.end_sector());
        let name = &topo.dev(bio.dev).name;
        self.violation(format!("{} #{seq} of {}: a {} reached {name} sectors [{phys}, {end})", op.name(), topo.dev(dev).name, bio.op.name()));
    }

    /// A read piece that does not carry the submitter's pages.
    #[cold]
    fn foreign_read(&mut self, topo: &Topology, root: BioId, bio: &Bio) {
        let st = self.roots[root as usize].as_ref().expect("root");
        let (seq, dev, phys, end) = (st.root.seq, st.root.dev, bio.iter.sector, bio.end_sector());
        self.violation(format!("read #{seq} of {}: {} sectors [{phys}, {end}) were read into pages that are not the submitter's", topo.dev(dev).name, topo.dev(bio.dev).name));
    }

    /// A piece carrying top sectors [l, l+n) must sit where a copy of
    /// exactly those sectors lives; a read piece is also noted for tiling.
    fn check_placement(&mut self, topo: &Topology, root: BioId, leaf: DevId, phys: u64, n: u64, l: u64) {
        let st = self.roots[root as usize].as_mut().expect("root");
        if st.root.op == Op::Read {
            st.reads.push((l, n));
        }
        if st.plain.is_some_and(|(disk, offset)| leaf == disk && phys == l + offset) {
            return;
        }
        self.check_mapped_placement(topo, root, leaf, phys, n, l);
    }

    /// [`Self::check_placement`] on a stacked device: where the layout puts
    /// those sectors. Out of line: a plain disk's pieces, most of them,
    /// need no mapping.
    #[inline(never)]
    fn check_mapped_placement(&mut self, topo: &Topology, root: BioId, leaf: DevId, phys: u64, n: u64, l: u64) {
        let st = self.roots[root as usize].as_ref().expect("root");
        let (dev, seq, op) = (st.root.dev, st.root.seq, st.root.op);
        let mut runs = self.scratch.take().unwrap_or_else(|| Runs::new(true));
        runs.clear(true);
        self.mapper(Op::Read).map(dev, l, n, l, Bounds::EXACT, false, &mut runs);
        let ok = runs.runs.iter().any(|r| r.leaf == leaf && r.phys <= phys && phys + n <= r.phys + r.len && r.logical + (phys - r.phys) == l);
        if !ok {
            let homes: Vec<String> = runs.runs.iter().take(4).map(|r| format!("{} [{}, {})", topo.dev(r.leaf).name, r.phys, r.phys + r.len)).collect();
            self.violation(format!(
                "{} #{seq} of {}: {} sectors [{phys}, {}) got its sectors [{l}, {}), which live at {}",
                op.name(),
                topo.dev(dev).name,
                topo.dev(leaf).name,
                phys + n,
                l + n,
                homes.join(", ")
            ));
        }
        self.scratch = Some(runs);
    }

    /// A submitter's bio completed with `status`; `errors` is the block
    /// core's count of failed bios so far.
    /// A root whose one streak covered it is passed inline.
    #[inline(always)]
    pub fn root_done(&mut self, topo: &Topology, root: BioId, status: i32, errors: u64) {
        if let Some(s) = self.streaks.get_mut(root as usize).filter(|s| s.live) {
            // What `check_root` passes at once: no error, the streak over
            // the whole root (of an op the disk takes: see `StreakHome`).
            if status == 0 && errors == s.root.errors_at_start && s.complete() {
                // Its pages stay until the slot's next root replaces them:
                // a test and a store less on every root, and a table kept a
                // little longer is all the difference.
                s.live = false;
                self.roots_checked += 1;
                return;
            }
            self.promote(root);
        }
        if let Some(f) = self.fanouts.get_mut(root as usize).filter(|f| f.live) {
            // What `check_counts` passes at once: every run covered once,
            // nothing else issued.
            if status == 0 && errors == f.root.errors_at_start && f.complete() {
                f.live = false;
                self.roots_checked += 1;
                return;
            }
            self.promote_fanout(root);
        }
        self.root_done_full(topo, root, status, errors)
    }

    /// [`Self::root_done`] for a root with a full [`RootState`].
    #[inline(never)]
    fn root_done_full(&mut self, topo: &Topology, root: BioId, status: i32, errors: u64) {
        let Some(mut st) = self.roots.get_mut(root as usize).and_then(Option::take) else { return };
        self.check_root(topo, &mut st, status, errors);
        st.recycle();
        self.free_roots.push(st);
    }

    fn check_root(&mut self, topo: &Topology, st: &mut RootState, status: i32, errors: u64) {
        if status != 0 || errors != st.root.errors_at_start {
            self.roots_unchecked += 1;
            return;
        }
        self.roots_checked += 1;
        // A streak over the whole root is what both checks below pass at
        // once (one range, exactly the root's; reads tiling it once).
        if st.streak_complete() && (st.root.op == Op::Read || self.mapper(st.root.op).leaf_takes_op(st.plain.expect("plain").0)) {
            return;
        }
        st.end_streak();
        if st.root.op == Op::Read {
            self.check_read_tiling(topo, st);
        } else if st.root.sectors > 0 {
            self.check_counts(topo, st);
        }
        if self.oracle.is_some() && writes_data(st.root.op) && st.root.sectors > 0 {
            let version = st.version;
            let copies = self.copies(st);
            let mut out = Vec::new();
            self.oracle.as_mut().expect("on").complete(topo, version, copies, &mut out);
            out.into_iter().for_each(|m| self.violation(m));
        }
    }

    fn check_read_tiling(&mut self, topo: &Topology, st: &mut RootState) {
        if let Some((at, what)) = conservation::reads_tile(&mut st.reads, st.root.start, st.root.start + st.root.sectors) {
            self.violation(format!("read #{} of {} [{}, {}): sector {at} {what}", st.root.seq, topo.dev(st.root.dev).name, st.root.start, st.root.start + st.root.sectors));
        }
    }

    fn check_counts(&mut self, topo: &Topology, st: &mut RootState) {
        // A plain disk's reference is the root's own range, once: what
        // compare() passes at once when that range is all that was issued.
        if let Some((disk, offset)) = st.plain {
            let (s, e) = (st.root.start + offset, st.root.start + offset + st.root.sectors);
            if st.issued.ranges() == [(disk, st.root.op, s, e)] && self.mapper(st.root.op).leaf_takes_op(disk) {
                return;
            }
        }
        self.expected(st);
        let mut bad: Vec<Miscount> = Vec::new();
        conservation::compare_in(&st.issued, &st.expected.runs, st.root.op, &mut bad, &mut self.compare_scratch);
        for m in bad.iter().take(4) {
            let msg = format!("{} #{} of {} [{}, {}): {}", st.root.op.name(), st.root.seq, topo.dev(st.root.dev).name, st.root.start, st.root.start + st.root.sectors, conservation::describe(topo, m));
            self.violation(msg);
        }
        self.violation_count += bad.len().saturating_sub(4) as u64;
    }

    /// The root's reference runs for its own op.
    fn expected<'s>(&self, st: &'s mut RootState) -> &'s [Run] {
        if !st.has_expected {
            st.expected.clear(false);
            self.mapper(st.root.op).map(st.root.dev, st.root.start, st.root.sectors, st.root.start, Bounds::EXACT, false, &mut st.expected);
            st.has_expected = true;
        }
        &st.expected.runs
    }

    /// Where the root's sectors live, with the top sector of each run.
    fn copies<'s>(&self, st: &'s mut RootState) -> &'s [Run] {
        if !st.has_copies {
            st.copies.clear(true);
            self.mapper(Op::Read).map(st.root.dev, st.root.start, st.root.sectors, st.root.start, Bounds::EXACT, false, &mut st.copies);
            st.has_copies = true;
        }
        &st.copies.runs
    }

    /// Feed one leaf piece to the oracle (out of line: it is on only with
    /// `--check integrity`).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn oracle_piece(&mut self, topo: &Topology, root: BioId, op: Op, leaf: DevId, phys: u64, n: u64, logical: Option<u64>) {
        let mut st = self.roots[root as usize].take().expect("root");
        let mut out = Vec::new();
        match op {
            Op::Read => {
                if let (Some(l), Op::Read) = (logical, st.root.op) {
                    self.oracle.as_ref().expect("on").read_piece(topo, st.root.dev, st.root.seq, leaf, phys, n, l, &mut out);
                }
            }
            Op::Write | Op::ZoneAppend => {
                let version = st.version;
                let copies = self.copies(&mut st);
                self.oracle.as_mut().expect("on").write_piece(leaf, phys, n, version, copies);
            }
            _ => {
                let version = st.version;
                let allowed = self.expected(&mut st);
                self.oracle.as_mut().expect("on").erase_piece(topo, leaf, phys, n, version, allowed, &mut out);
            }
        }
        self.roots[root as usize] = Some(st);
        out.into_iter().for_each(|m| self.violation(m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bio::Bvec;
    use crate::genhd::{DiskKind, Driver, Queue};
    use crate::limits::{resolve, LimitsModel, SysfsWrites};
    use crate::md::personality::{MdMember, Personality};

    /// sda (device 0) and its partition sda1 (device 1) from sector 2048.
    fn sda_with_partition() -> Topology {
        let beh = crate::profile::profile("6.12").expect("profile").behaviour;
        let (limits, attrs) = resolve(&DiskKind::Sata.driver_limits(&beh), &SysfsWrites::default(), LimitsModel::Legacy, 2560).expect("limits");
        let mut t = Topology::default();
        let sda = t.add_disk("sda", DiskKind::Sata, 1 << 24, Queue { limits, attrs }, Driver::Mq(0));
        t.add_partition(sda, "sda1", 1, 2048, 1 << 20);
        t
    }

    /// A piece on sda at `sector` of `bytes`, `skip` bytes into `pages`.
    fn piece(op: Op, sector: u64, bytes: u32, pages: &BioVecs, skip: u32) -> Bio {
        let mut b = Bio::new(0, op, 0, sector, bytes, pages.clone());
        b.iter.bvec_done = skip;
        b
    }

    /// Four NVMe disks (devices 0-3, with discard) and md0 (device 4), a
    /// raid10 near 2 of them with 8-sector chunks, data at 0.
    fn raid10_of_four() -> (Topology, Checker) {
        let beh = crate::profile::profile("6.12").expect("profile").behaviour;
        let (limits, attrs) = resolve(&DiskKind::Nvme.driver_limits(&beh), &SysfsWrites::default(), LimitsModel::Legacy, 2560).expect("limits");
        let mut t = Topology::default();
        let members: Vec<MdMember> = ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
            .iter()
            .map(|n| MdMember { dev: t.add_disk(n, DiskKind::Nvme, 1 << 20, Queue { limits: limits.clone(), attrs: attrs.clone() }, Driver::Mq(0)), data_offset: 0 })
            .collect();
        let md = t.add_disk("md0", DiskKind::Md, 1 << 21, Queue { limits, attrs }, Driver::BioBased(0));
        let conf = crate::md::raid10::setup_conf(0x102, 8, 4, 1 << 20, vec![0; 4]).expect("conf");
        let mut c = Checker::new();
        c.set_layout(md, Layout::Md { pers: Personality::Raid10(conf), members });
        (t, c)
    }

    #[test]
    fn stacked_discards_are_followed_run_by_run() {
        let (topo, mut c) = raid10_of_four();
        let discard = |sector: u64, sectors: u64| Bio::new(4, Op::Discard, 0, sector, (sectors << SECTOR_SHIFT) as u32, BioVecs::None);
        let piece = |dev: DevId, sector: u64, sectors: u64| Bio::new(dev, Op::Discard, 0, sector, (sectors << SECTOR_SHIFT) as u32, BioVecs::None);
        // md0 [0, 64): 8 chunks, chunk k's copies on members 2k mod 4 and
        // the next, row k / 2: each member holds [0, 32). Member 0 in two
        // pieces, the others in one: followed to the end, no full state.
        c.root_submitted(&topo, &discard(0, 64), 1, 0);
        for (dev, sector, n) in [(0, 0, 16), (1, 0, 32), (2, 0, 32), (3, 0, 32), (0, 16, 16)] {
            c.leaf_queued(&topo, &piece(dev, sector, n), 1);
        }
        c.root_done(&topo, 1, 0, 0);
        assert_eq!((c.violation_count, c.roots_checked), (0, 1));
        assert!(c.roots.iter().all(Option::is_none), "no full state");
        // The same, member 3's piece 8 sectors late ([8, 40)): its
        // [0, 8) is missed and [32, 40) holds no copy of the range.
        c.root_submitted(&topo, &discard(0, 64), 1, 0);
        for (dev, sector, n) in [(0, 0, 32), (1, 0, 32), (2, 0, 32), (3, 8, 32)] {
            c.leaf_queued(&topo, &piece(dev, sector, n), 1);
        }
        c.root_done(&topo, 1, 0, 0);
        assert_eq!((c.violation_count, c.roots_checked), (2, 2), "{:?}", c.violations);
        assert_eq!(c.violations[0], "discard #2 of md0 [0, 64): nvme3n1 sectors [0, 8): discarded 0 time(s), expected 1");
        assert_eq!(c.violations[1], "discard #2 of md0 [0, 64): nvme3n1 sectors [32, 40): discarded 1 time(s), expected none (no copy of the range lives there)");
        // Every piece in place but member 1 short of its end ([0, 24)):
        // found at completion.
        c.root_submitted(&topo, &discard(0, 64), 1, 0);
        for (dev, sector, n) in [(0, 0, 32), (1, 0, 24), (2, 0, 32), (3, 0, 32)] {
            c.leaf_queued(&topo, &piece(dev, sector, n), 1);
        }
        c.root_done(&topo, 1, 0, 0);
        assert_eq!(c.violations.last().map(String::as_str), Some("discard #3 of md0 [0, 64): nvme1n1 sectors [24, 32): discarded 0 time(s), expected 1"));
    }

    #[test]
    fn plain_roots_catch_misplaced_missing_and_doubled_pieces() {
        let topo = sda_with_partition();
        let mut c = Checker::new();
        let pages = BioVecs::new(&[Bvec { phys: 1 << 20, len: 16384 }]);
        // 1: a 16 KiB write at sda1 sector 8, whose home is sda [2056,
        // 2088): its front 4 KiB at 2056 and the rest, 4 KiB into the
        // pages (top sectors 16..40), at 2064. Nothing to report.
        c.root_submitted(&topo, &Bio::new(1, Op::Write, 0, 8, 16384, pages.clone()), 1, 0);
        c.leaf_queued(&topo, &piece(Op::Write, 2056, 4096, &pages, 0), 1);
        c.leaf_queued(&topo, &piece(Op::Write, 2064, 12288, &pages, 4096), 1);
        c.root_done(&topo, 1, 0, 0);
        assert_eq!((c.violation_count, c.roots_checked), (0, 1));
        // 2: the same, its rest issued at 2072: that piece is misplaced
        // (top sectors 16..40 live at 2064..2088), and at completion
        // [2064, 2072) was written 0 times, [2088, 2096) once where no
        // copy lives: three violations.
        c.root_submitted(&topo, &Bio::new(1, Op::Write, 0, 8, 16384, pages.clone()), 1, 0);
        c.leaf_queued(&topo, &piece(Op::Write, 2056, 4096, &pages, 0), 1);
        c.leaf_queued(&topo, &piece(Op::Write, 2072, 12288, &pages, 4096), 1);
        c.root_done(&topo, 1, 0, 0);
        assert_eq!(c.violation_count, 3, "{:?}", c.violations);
        assert!(c.violations[0].contains("sda sectors [2072, 2096) got its sectors [16, 40), which live at sda [2064, 2088)"), "{:?}", c.violations);
        assert!(c.violations[1].ends_with("sda sectors [2064, 2072): written 0 time(s), expected 1"), "{:?}", c.violations);
        // 3: an 8 KiB read of sda from sector 0 of which only the first
        // 4 KiB arrive: sector 8 is never read.
        c.root_submitted(&topo, &Bio::new(0, Op::Read, 0, 0, 8192, pages.clone()), 2, 0);
        c.leaf_queued(&topo, &piece(Op::Read, 0, 4096, &pages, 0), 2);
        c.root_done(&topo, 2, 0, 0);
        assert_eq!(c.violations.last().map(String::as_str), Some("read #3 of sda [0, 16): sector 8 never read"));
        // 4: a 4 KiB write of sda at 100 issued twice: written twice.
        c.root_submitted(&topo, &Bio::new(0, Op::Write, 0, 100, 4096, pages.clone()), 3, 0);
        c.leaf_queued(&topo, &piece(Op::Write, 100, 4096, &pages, 0), 3);
        c.leaf_queued(&topo, &piece(Op::Write, 100, 4096, &pages, 0), 3);
        c.root_done(&topo, 3, 0, 0);
        assert_eq!(c.violations.last().map(String::as_str), Some("write #4 of sda [100, 108): sda sectors [100, 108): written 2 time(s), expected 1"));
        assert_eq!((c.violation_count, c.roots_checked), (5, 4));
    }
}
