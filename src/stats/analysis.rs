//! What btt and the seed scripts compute from a block trace, computed from
//! the event stream: per-device stage latencies (Q2G, G2I, I2D, D2C, Q2C,
//! Q2M, Q2Q), btt's "Device Merge Information", the seek-distance histogram
//! of issued requests (seed 000's format) and the request-size histogram.
//!
//! Like btt, it matches events by device and sector: a 'G' takes the 'Q'
//! at its sector, a split ('X') moves the pending 'Q' time to the
//! remainder's sector, a merge ('M'/'F') consumes a pending 'Q'. It works on
//! any event stream, simulated or parsed from a real trace.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;

use super::clat::LatStat;
use crate::genhd::DevId;
use crate::trace::{Action, Event, TraceCtx, TraceSink};

/// A multiplicative hash for sector keys: the maps below are on the
/// per-event path, where SipHash costs more than the rest of the analysis.
/// The product's high half is folded into the low half, which picks the
/// bucket: on its own the low half depends only on the key's low bits, all
/// zero for aligned sectors (chunk or request multiples), and every key of
/// such a run would probe the same buckets.
#[derive(Default)]
pub struct SectorHasher(u64);

impl Hasher for SectorHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type SectorMap<V> = HashMap<u64, V, BuildHasherDefault<SectorHasher>>;

/// min / total / max / n of a latency, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Avg {
    pub min: u64,
    pub max: u64,
    pub total: u128,
    pub n: u64,
}

impl Avg {
    pub fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.total += v as u128;
        self.n += 1;
    }

    pub fn avg(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.total as f64 / self.n as f64
        }
    }
}

/// btt's stage names, in its output order.
pub const STAGES: [&str; 7] = ["Q2Q", "Q2G", "G2I", "Q2M", "I2D", "D2C", "Q2C"];
const Q2Q: usize = 0;
const Q2G: usize = 1;
const G2I: usize = 2;
const Q2M: usize = 3;
const I2D: usize = 4;
const D2C: usize = 5;
const Q2C: usize = 6;

/// A log2 histogram in KiB buckets: bucket 0 is [0, 1), bucket k ≥ 1 is
/// [2^(k-1), 2^k).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log2Hist {
    pub buckets: Vec<u64>,
    pub count: u64,
    pub zero: u64,
}

impl Log2Hist {
    /// Inline: twice per issued request, and out of line its call cost
    /// about a third of it (callgrind, seed64's analysis thread).
    #[inline(always)]
    pub fn add_kib(&mut self, kib: u64) {
        let b = if kib == 0 { 0 } else { 64 - kib.leading_zeros() as usize };
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.count += 1;
        self.zero += (kib == 0) as u64;
    }

    /// Bucket bounds in KiB.
    pub fn bounds(b: usize) -> (u64, u64) {
        if b == 0 {
            (0, 1)
        } else {
            (1 << (b - 1), 1 << b)
        }
    }

    /// Seed 000's layout: a title, the counts, then one line per bucket up
    /// to the last non-empty one, with a 40-character bar scaled to the
    /// largest bucket (rounded up).
    pub fn render(&self, title: &str, out: &mut String) {
        let _ = writeln!(out, "{title}");
        let _ = writeln!(out, "cnt {}, zero cnt {}", self.count, self.zero);
        let _ = writeln!(out, "{:>10} .. {:<10}: {:<10} {:>6} |{:<40}|", ">=(KB)", "<(KB)", "count", "ratio", "distribution");
        let max = self.buckets.iter().copied().max().unwrap_or(0);
        for (b, &c) in self.buckets.iter().enumerate() {
            let (lo, hi) = Self::bounds(b);
            let ratio = if self.count == 0 { 0.0 } else { c as f64 * 100.0 / self.count as f64 };
            let bar = if max == 0 { 0 } else { (c * 40).div_ceil(max) as usize };
            let _ = writeln!(out, "{lo:>10} .. {hi:<10}: {c:<10} {ratio:>5.1}% |{:<40}|", "#".repeat(bar));
        }
    }
}

/// The actions [`DeviceAnalysis::event`] reads, a bit per [`Action`]
/// (see [`crate::trace::Tracer::hears`]); it passes over the others.
pub const READS: u16 = 1 << Action::Queue as u16
    | 1 << Action::Split as u16
    | 1 << Action::GetRq as u16
    | 1 << Action::BackMerge as u16
    | 1 << Action::FrontMerge as u16
    | 1 << Action::Insert as u16
    | 1 << Action::Issue as u16
    | 1 << Action::Complete as u16;

/// What the analysis reads of an [`Event`] (its op, flags, task and
/// error it does not): the analysis thread's batches carry this, 40 bytes
/// to the event's 56, which the engine's thread stores fewer of.
#[derive(Clone, Copy, Debug)]
pub struct EventBrief {
    pub time: u64,
    pub sector: u64,
    /// X: the remainder's sector.
    pub arg: u64,
    pub dev: DevId,
    pub bytes: u32,
    pub action: Action,
}

impl EventBrief {
    #[inline(always)]
    pub fn of(ev: &Event) -> Self {
        EventBrief { time: ev.time, sector: ev.sector, arg: ev.arg, dev: ev.dev, bytes: ev.bytes, action: ev.action }
    }

    fn sectors(&self) -> u32 {
        self.bytes >> 9
    }
}

/// A request being followed from 'G' to 'C'.
#[derive(Clone, Copy, Debug)]
struct Tracked {
    q: Option<u64>,
    g: u64,
    i: Option<u64>,
    d: Option<u64>,
}

/// Everything derived for one device.
#[derive(Clone, Debug, Default)]
pub struct DeviceAnalysis {
    pub stages: [Avg; 7],
    pub n_q: u64,
    pub n_d: u64,
    /// Sizes of issued requests, in sectors.
    pub blks: Avg,
    /// D2C and Q2C samples in fio's latency buckets, for percentiles
    /// (btt gives only min/avg/max; sweeps and reports want the tail).
    pub latency: [LatStat; 2],
    pub seek: Log2Hist,
    pub sizes: Log2Hist,
    last_q: Option<u64>,
    last_d_end: Option<u64>,
    /// Pending 'Q' times by sector.
    pending_q: SectorSlots<u64>,
    requests: SectorSlots<Tracked>,
}

/// Values by sector (the 'Q' times waiting for their 'G', merge, split
/// or completion; the requests followed from 'G' to 'C'): a map whose
/// newest entry stays in a slot of its own until the next insert moves it
/// in. Most entries are used right after they are made (a bio's 'Q' by
/// its merge or request allocation, a request's 'G' by its 'I' and 'D'),
/// so those lookups never touch the hash map; all lookups see one map all
/// the same (the slot's sector is never also in `map`).
#[derive(Clone, Debug)]
struct SectorSlots<V> {
    newest: Option<(u64, V)>,
    map: SectorMap<V>,
}

impl<V> Default for SectorSlots<V> {
    fn default() -> Self {
        SectorSlots { newest: None, map: SectorMap::default() }
    }
}

impl<V> SectorSlots<V> {
    /// Set `sector`'s value (replacing any it had).
    #[inline]
    fn insert(&mut self, sector: u64, value: V) {
        match self.newest.take() {
            Some((s, v)) if s != sector => {
                self.map.insert(s, v);
                self.map.remove(&sector);
            }
            Some(_) => {}
            None if !self.map.is_empty() => {
                self.map.remove(&sector);
            }
            None => {}
        }
        self.newest = Some((sector, value));
    }

    #[inline]
    fn get_mut(&mut self, sector: u64) -> Option<&mut V> {
        match &mut self.newest {
            Some((s, v)) if *s == sector => Some(v),
            _ if self.map.is_empty() => None,
            _ => self.map.get_mut(&sector),
        }
    }

    #[inline]
    fn remove(&mut self, sector: u64) -> Option<V> {
        if matches!(self.newest, Some((s, _)) if s == sector) {
            return self.newest.take().map(|(_, v)| v);
        }
        if self.map.is_empty() {
            return None;
        }
        self.map.remove(&sector)
    }
}

impl DeviceAnalysis {
    fn stage(&mut self, i: usize, v: u64) {
        self.stages[i].add(v);
    }

    /// Reads only the actions in [`READS`].
    #[inline(always)]
    fn event(&mut self, ev: &EventBrief) {
        let t = ev.time;
        match ev.action {
            Action::Queue => {
                self.n_q += 1;
                if let Some(prev) = self.last_q {
                    self.stage(Q2Q, t.saturating_sub(prev));
                }
                self.last_q = Some(t);
                self.pending_q.insert(ev.sector, t);
            }
            Action::Split => {
                if let Some(&mut q) = self.pending_q.get_mut(ev.sector) {
                    self.pending_q.insert(ev.arg, q);
                }
            }
            Action::GetRq => {
                let q = self.pending_q.remove(ev.sector);
                if let Some(q) = q {
                    self.stage(Q2G, t.saturating_sub(q));
                }
                self.requests.insert(ev.sector, Tracked { q, g: t, i: None, d: None });
            }
            Action::BackMerge | Action::FrontMerge => self.merge(ev),
            Action::Insert => {
                if let Some(r) = self.requests.get_mut(ev.sector) {
                    r.i = Some(t);
                    let g = r.g;
                    self.stage(G2I, t.saturating_sub(g));
                }
            }
            Action::Issue => self.issue(ev),
            Action::Complete => self.complete(ev),
            // Not in READS.
            Action::Remap | Action::Plug | Action::Unplug | Action::UnplugTimer | Action::Requeue => {}
        }
    }

    /// Inline into [`Self::event`]: a run of plug merges is mostly 'Q'
    /// and 'M', and out of line the call and register saves of each
    /// merge cost about as much as its work (callgrind, merge4k).
    #[inline(always)]
    fn merge(&mut self, ev: &EventBrief) {
        let t = ev.time;
        if let Some(q) = self.pending_q.remove(ev.sector) {
            self.stage(Q2M, t.saturating_sub(q));
            if ev.action == Action::FrontMerge {
                // The request now starts at the bio's sector.
                if let Some(r) = self.requests.remove(ev.sector + ev.sectors() as u64) {
                    self.requests.insert(ev.sector, r);
                }
            }
        } else {
            // A request absorbed by another ('M' of block_rq_merge).
            self.requests.remove(ev.sector);
        }
    }

    #[inline(always)]
    fn issue(&mut self, ev: &EventBrief) {
        let t = ev.time;
        self.n_d += 1;
        let n = ev.sectors() as u64;
        self.blks.add(n);
        self.sizes.add_kib(n / 2);
        if let Some(prev_end) = self.last_d_end {
            self.seek.add_kib(ev.sector.abs_diff(prev_end) / 2);
        }
        self.last_d_end = Some(ev.sector + n);
        if let Some(r) = self.requests.get_mut(ev.sector) {
            r.d = Some(t);
            let i = r.i;
            if let Some(i) = i {
                self.stage(I2D, t.saturating_sub(i));
            }
        } else {
            // A request whose allocation the trace does not show (only
            // block_rq_issue and block_rq_complete enabled, a flush from
            // the flush machinery): followed from here for D2C.
            self.requests.insert(ev.sector, Tracked { q: None, g: t, i: None, d: Some(t) });
        }
    }

    #[inline(always)]
    fn complete(&mut self, ev: &EventBrief) {
        let t = ev.time;
        if let Some(r) = self.requests.remove(ev.sector) {
            if let Some(d) = r.d {
                self.stage(D2C, t.saturating_sub(d));
                self.latency[0].add(t.saturating_sub(d));
            }
            if let Some(q) = r.q {
                self.stage(Q2C, t.saturating_sub(q));
                self.latency[1].add(t.saturating_sub(q));
            }
        } else if let Some(q) = self.pending_q.remove(ev.sector) {
            // A bio completing on a bio-based device (md, dm).
            self.stage(Q2C, t.saturating_sub(q));
            self.latency[1].add(t.saturating_sub(q));
        }
    }
}

/// The analysis of a whole run, per device.
#[derive(Default)]
pub struct Analysis {
    pub devices: Vec<DeviceAnalysis>,
}

impl Analysis {
    pub fn device(&self, dev: DevId) -> Option<&DeviceAnalysis> {
        self.devices.get(dev as usize)
    }

    #[inline]
    pub fn add(&mut self, ev: &Event) {
        self.add_inlined(&EventBrief::of(ev));
    }

    /// [`Self::add`], always inlined into its caller: the analysis
    /// thread's loop over a batch of events then saves and restores the
    /// registers the analysis needs once per batch instead of once per
    /// event (about 16 instructions of each event's 60).
    #[inline(always)]
    pub fn add_inlined(&mut self, ev: &EventBrief) {
        let i = ev.dev as usize;
        if self.devices.len() <= i {
            self.devices.resize_with(i + 1, DeviceAnalysis::default);
        }
        self.devices[i].event(ev);
    }
}

impl Analysis {
    /// A bio at `sector` of `dev` joined a request without a trace event
    /// (`bio_attempt_discard_merge` traces none, unlike the back and front
    /// merges): nothing will take its 'Q' now, which would otherwise wait
    /// for good — one per merged range of a multi-range discard. Only a
    /// simulated run knows; a parsed trace keeps such 'Q's, as btt does.
    pub fn untraced_merge(&mut self, dev: DevId, sector: u64) {
        if let Some(d) = self.devices.get_mut(dev as usize) {
            d.pending_q.remove(sector);
        }
    }
}

impl TraceSink for Analysis {
    fn event(&mut self, ev: &Event, _: &TraceCtx) -> io::Result<()> {
        self.add(ev);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, action: Action, sector: u64, arg: u64) -> Event {
        Event { time, dev: 0, action, op: crate::bio::Op::Write, flags: 0, sector, bytes: 4096, task: 0, error: 0, arg, from_dev: 0 }
    }

    #[test]
    fn pending_queues_match_by_sector() {
        // btt's rule: a 'Q' waits at its sector until a 'G', merge or
        // split takes it; a later 'Q' at the same sector replaces it.
        // Q@8 t=0, Q@16 t=10, Q@8 t=20 (replaces t=0), X@16 t=30 moves
        // 16's Q (t=10) to the remainder at 24 too; G@8 t=25: Q2G 5;
        // M@24 t=40: Q2M 30; G@16 t=50: Q2G 40; a G@8 again at t=60
        // finds no Q.
        let mut a = DeviceAnalysis::default();
        for e in [ev(0, Action::Queue, 8, 0), ev(10, Action::Queue, 16, 0), ev(20, Action::Queue, 8, 0), ev(25, Action::GetRq, 8, 0), ev(30, Action::Split, 16, 24)] {
            a.event(&EventBrief::of(&e));
        }
        for e in [ev(40, Action::BackMerge, 24, 0), ev(50, Action::GetRq, 16, 0), ev(60, Action::GetRq, 8, 0)] {
            a.event(&EventBrief::of(&e));
        }
        let q2g = a.stages[Q2G];
        assert_eq!((q2g.n, q2g.min, q2g.max), (2, 5, 40));
        let q2m = a.stages[Q2M];
        assert_eq!((q2m.n, q2m.min), (1, 30));
    }

    #[test]
    fn untraced_merge_takes_the_pending_queue() {
        // A discard range merged into a request by
        // bio_attempt_discard_merge shows its 'Q' and nothing else: Q@8
        // t=0, Q@16 t=5, the bio at 8 merges untraced; a 'G' at 8 (t=20)
        // then finds no 'Q' (Q2G none), the one at 16 (t=30) its own:
        // Q2G 25. Nothing waits afterwards.
        let mut a = Analysis::default();
        a.add(&ev(0, Action::Queue, 8, 0));
        a.add(&ev(5, Action::Queue, 16, 0));
        a.untraced_merge(0, 8);
        a.add(&ev(20, Action::GetRq, 8, 0));
        a.add(&ev(30, Action::GetRq, 16, 0));
        let d = &a.devices[0];
        assert_eq!((d.stages[Q2G].n, d.stages[Q2G].min), (1, 25));
        assert!(d.pending_q.newest.is_none() && d.pending_q.map.is_empty());
    }

    #[test]
    fn seed_000_histogram_layout() {
        // Bucket counts from seed 000's "before" histogram: the lines must
        // come out as the seed printed them.
        let mut h = Log2Hist::default();
        let counts = [(0u64, 25079u64), (32, 12540), (64, 2508), (256, 10032), (512, 5016)];
        for (kib, n) in counts {
            for _ in 0..n {
                h.add_kib(kib);
            }
        }
        let mut s = String::new();
        h.render("Read|Write seek", &mut s);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], "cnt 55175, zero cnt 25079");
        assert_eq!(lines[2], "    >=(KB) .. <(KB)     : count       ratio |distribution                            |");
        assert_eq!(lines[3], "         0 .. 1         : 25079       45.5% |########################################|");
        assert_eq!(lines[4], "         1 .. 2         : 0            0.0% |                                        |");
        assert_eq!(lines[9], "        32 .. 64        : 12540       22.7% |#####################                   |");
        assert_eq!(lines[10], "        64 .. 128       : 2508         4.5% |#####                                   |");
        assert_eq!(lines[13], "       512 .. 1024      : 5016         9.1% |#########                               |");
    }
}
