//! The integrity oracle (`--check integrity`): which version of its data
//! every member location holds, and what the submitters may expect back.
//!
//! Every write, write zeroes or discard a submitter sends to a top device
//! gets a version number (0 is the data the disks held before the run).
//! When a piece of it is queued on a leaf disk, the leaf range takes that
//! version — as the copy of specific top sectors for data, as "what this
//! discard/zeroing left" otherwise — in a compact [`IntervalMap`] per leaf.
//! Per top device another map keeps the newest write that *completed* over
//! each range. Three faults fail the run:
//!
//! * a write completes while one of its copies still holds older data
//!   (older than anything that was still in flight when it was submitted):
//!   it missed a copy;
//! * a read is served from a leaf range that holds data older than the
//!   newest completed write of those sectors, or another block's data, or
//!   what a discard of *other* sectors left there: a stale location;
//! * a discard's piece lands on a leaf range that holds no copy of the
//!   discarded range: it destroys live data.
//!
//! Data lands when its bio is queued on the leaf (the order of a
//! synchronous workload; racing overlapping I/O is never reported as a
//! missed copy). Parity is not tracked (md never reads it back on a
//! healthy array); data read or written through two different top devices
//! is only checked for age.

use std::collections::HashMap;

use crate::bio::Op;
use crate::genhd::{DevId, Topology};

use super::intervals::IntervalMap;
use super::layout::Run;

/// What a leaf range holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    pub version: u32,
    /// For data: top sector minus leaf sector of the copy. `None`: what a
    /// discard or write zeroes left (no particular sector's data).
    pub delta: Option<i64>,
}

/// One write, write zeroes or discard of a submitter.
#[derive(Clone, Debug)]
struct Version {
    dev: DevId,
    op: Op,
    start: u64,
    end: u64,
    /// The submitter's bio number (for reports).
    root: u64,
    submitted: u64,
    done: Option<u64>,
}

#[derive(Default)]
pub struct Oracle {
    phys: HashMap<DevId, IntervalMap<Tag>>,
    floor: HashMap<DevId, IntervalMap<u32>>,
    versions: Vec<Version>,
    clock: u64,
}

impl Oracle {
    pub fn new() -> Oracle {
        let initial = Version { dev: 0, op: Op::Write, start: 0, end: 0, root: 0, submitted: 0, done: Some(0) };
        Oracle { versions: vec![initial], ..Default::default() }
    }

    /// A write-like root was submitted: its version.
    pub fn begin(&mut self, dev: DevId, op: Op, start: u64, end: u64, root: u64) -> u32 {
        self.clock += 1;
        self.versions.push(Version { dev, op, start, end, root, submitted: self.clock, done: None });
        (self.versions.len() - 1) as u32
    }

    fn describe_version(&self, topo: &Topology, v: u32) -> String {
        if v == 0 {
            return "the data it held before the run".into();
        }
        let x = &self.versions[v as usize];
        let verb = match x.op {
            Op::Discard => "discard",
            Op::WriteZeroes => "write zeroes",
            Op::SecureErase => "secure erase",
            _ => "write",
        };
        format!("{verb} #{} of {} [{}, {})", x.root, topo.dev(x.dev).name, x.start, x.end)
    }

    /// A data write piece on `leaf` [phys, phys+n): the parts that are
    /// copies of the root's sectors (`copies`) now hold version `v`.
    pub fn write_piece(&mut self, leaf: DevId, phys: u64, n: u64, v: u32, copies: &[Run]) {
        let map = self.phys.entry(leaf).or_default();
        for r in copies.iter().filter(|r| r.leaf == leaf) {
            let (a, b) = (phys.max(r.phys), (phys + n).min(r.phys + r.len));
            if a < b {
                map.set(a, b, Tag { version: v, delta: Some(r.logical as i64 - r.phys as i64) });
            }
        }
    }

    /// A discard / write zeroes piece: everything it covers holds version
    /// `v` now; what lies outside the root's reference runs (`allowed`) was
    /// live data of other sectors, reported.
    #[allow(clippy::too_many_arguments)]
    pub fn erase_piece(&mut self, topo: &Topology, leaf: DevId, phys: u64, n: u64, v: u32, allowed: &[Run], out: &mut Vec<String>) {
        let mut inside: Vec<(u64, u64)> = allowed.iter().filter(|r| r.leaf == leaf).map(|r| (r.phys, r.phys + r.len)).collect();
        inside.sort_unstable();
        let mut at = phys;
        let end = phys + n;
        for (s, e) in inside.into_iter().chain(std::iter::once((end, end))) {
            if e <= at {
                continue;
            }
            if s > at {
                self.report_outside(topo, leaf, at, s.min(end), v, out);
            }
            at = at.max(e);
            if at >= end {
                break;
            }
        }
        self.phys.entry(leaf).or_default().set(phys, end, Tag { version: v, delta: None });
    }

    fn report_outside(&self, topo: &Topology, leaf: DevId, a: u64, b: u64, v: u32, out: &mut Vec<String>) {
        let what = self.describe_version(topo, v);
        let mut held = Vec::new();
        match self.phys.get(&leaf) {
            Some(m) => m.walk(a, b, |x, y, t| held.push(format!("[{x}, {y}) holds {}", self.content(topo, x, y, t)))),
            None => held.push(format!("[{a}, {b}) holds {}", self.describe_version(topo, 0))),
        }
        out.push(format!("{what} touched {} sectors [{a}, {b}), which hold no copy of the discarded range: {}", topo.dev(leaf).name, held.join("; ")))
    }

    /// What leaf range [x, y) tagged `t` holds, in words.
    fn content(&self, topo: &Topology, x: u64, y: u64, t: Option<Tag>) -> String {
        match t {
            Some(Tag { version, delta: Some(d) }) => {
                let dev = &topo.dev(self.versions[version as usize].dev).name;
                format!("{dev} sectors [{}, {}) from {}", x as i64 + d, y as i64 + d, self.describe_version(topo, version))
            }
            Some(Tag { version, delta: None }) => format!("what {} left", self.describe_version(topo, version)),
            None => self.describe_version(topo, 0),
        }
    }

    /// A read piece of top device `top` sectors [l, l+n), served from
    /// `leaf` [phys, phys+n) for root `root`: is what it finds current?
    #[allow(clippy::too_many_arguments)]
    pub fn read_piece(&self, topo: &Topology, top: DevId, root: u64, leaf: DevId, phys: u64, n: u64, l: u64, out: &mut Vec<String>) {
        let (no_tags, no_floor) = (IntervalMap::new(), IntervalMap::new());
        let map = self.phys.get(&leaf).unwrap_or(&no_tags);
        let floor = self.floor.get(&top).unwrap_or(&no_floor);
        map.walk(phys, phys + n, |a, b, tag| {
            let la = l + (a - phys);
            floor.walk(la, la + (b - a), |fa, fb, fl| {
                let pa = a + (fa - la);
                if let Some(problem) = self.judge(top, tag, fa, pa, fl.unwrap_or(0)) {
                    let (top_name, pb) = (&topo.dev(top).name, pa + (fb - fa));
                    let held = self.content(topo, pa, pb, tag);
                    out.push(format!("read #{root} of {top_name} sectors [{fa}, {fb}) served from {} sectors [{pa}, {pb}), which hold {held}: {problem}", topo.dev(leaf).name));
                }
            });
        });
    }

    /// What is wrong with reading top sector `fa` (at leaf sector `pa`)
    /// from a range tagged `tag` when version `fl` completed last.
    fn judge(&self, top: DevId, tag: Option<Tag>, fa: u64, pa: u64, fl: u32) -> Option<String> {
        let v = tag.map_or(0, |t| t.version);
        let info = &self.versions[v as usize];
        if let Some(Tag { delta, .. }) = tag {
            let same_top = info.dev == top;
            match delta {
                Some(d) if same_top && d != fa as i64 - pa as i64 => return Some("another block's data".into()),
                None if same_top && !(info.start <= fa && fa < info.end) => {
                    return Some("destroyed by a discard of other sectors".into());
                }
                _ => {}
            }
        }
        (v < fl).then(|| format!("stale: version {v} is older than write #{} (version {fl}), which completed", self.versions[fl as usize].root))
    }

    /// Root of version `v` completed: for a write, every copy must hold it
    /// (or something newer, or something that raced with it); the top
    /// sectors' newest completed version becomes `v`.
    pub fn complete(&mut self, topo: &Topology, v: u32, copies: &[Run], out: &mut Vec<String>) {
        self.clock += 1;
        let info = self.versions[v as usize].clone();
        self.versions[v as usize].done = Some(self.clock);
        if info.op == Op::Discard || info.op == Op::SecureErase {
            return;
        }
        let empty = IntervalMap::new();
        for r in copies {
            let map = self.phys.get(&r.leaf).unwrap_or(&empty);
            map.walk(r.phys, r.phys + r.len, |a, b, t| {
                let u = t.map_or(0, |t| t.version);
                if u < v && self.versions[u as usize].done.is_some_and(|d| d < info.submitted) {
                    let l = r.logical + (a - r.phys);
                    out.push(format!(
                        "{} completed, but {} sectors [{a}, {b}) (the copy of {} sectors [{l}, {})) still hold {}: the write missed a copy",
                        self.describe_version(topo, v),
                        topo.dev(r.leaf).name,
                        topo.dev(info.dev).name,
                        l + (b - a),
                        self.describe_version(topo, u)
                    ));
                }
            });
        }
        self.raise_floor(info.dev, info.start, info.end, v);
    }

    fn raise_floor(&mut self, dev: DevId, start: u64, end: u64, v: u32) {
        let floor = self.floor.entry(dev).or_default();
        let mut lower = Vec::new();
        floor.walk(start, end, |a, b, f| {
            if f.unwrap_or(0) < v {
                lower.push((a, b));
            }
        });
        for (a, b) in lower {
            floor.set(a, b, v);
        }
    }

    /// Leaf ranges tracked (a measure of the oracle's memory).
    pub fn tracked_ranges(&self) -> usize {
        self.phys.values().map(|m| m.len()).sum::<usize>() + self.floor.values().map(|m| m.len()).sum::<usize>()
    }
}
