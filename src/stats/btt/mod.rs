//! btt (blktrace's btt/, version 2.09 as Debian ships it in blktrace
//! 1.2.0), re-implemented on the event stream, so `--btt` prints what
//! `btt -A` prints for the same trace: per process and per device stage
//! latencies, the device overhead, merge, seek, plug, active-request and
//! active-period tables, the Q2D histogram and the activity ranges.
//!
//! It follows btt's own bookkeeping, quirks included, since its figures
//! are what users compare against: a Q is matched to later events by the
//! sector they fall in (a second Q at the same start sector while the first
//! is pending is ignored); X (split) events are not read; a device's events
//! count only from its first Q or A; devices of majors 9, 253 and 254 are
//! "remappers" whose Q2Q, Q2A and Q2C are the `dm` rows.

mod live;
mod output;
mod rbtree;
mod seek;

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

use rbtree::{RbTree, NIL};

use crate::genhd::DevId;
use crate::trace::{Action, Event, Task};
use live::Lives;
use seek::Seeki;

/// Maps looked up for every event (devices, pids, seek distances): hashed
/// with the analysis's cheap hasher, not SipHash.
type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<crate::stats::analysis::SectorHasher>>;

/// btt's `avg_info`: min, max, total and count of a figure, in ns (or
/// sectors for `BLKS`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AvgInfo {
    pub min: u64,
    pub max: u64,
    pub total: u64,
    pub n: u64,
}

impl AvgInfo {
    /// `avg_update`.
    fn update(&mut self, t: u64) {
        if self.n == 0 {
            (self.min, self.max, self.total) = (t, t, t);
        } else {
            self.min = self.min.min(t);
            self.max = self.max.max(t);
            self.total += t;
        }
        self.n += 1;
    }

    /// `ap->avg` as btt computes it: seconds.
    fn avg(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            bit_time(self.total) / self.n as f64
        }
    }
}

/// Indices into [`Avgs`], in btt's `struct avgs_info` order.
const Q2Q_DM: usize = 0;
const Q2A_DM: usize = 1;
const Q2C_DM: usize = 2;
const Q2Q: usize = 3;
const Q2A: usize = 4;
const Q2G: usize = 5;
const S2G: usize = 6;
const G2I: usize = 7;
const Q2M: usize = 8;
const I2D: usize = 9;
const M2D: usize = 10;
const D2C: usize = 11;
const Q2C: usize = 12;
const BLKS: usize = 13;
type Avgs = [AvgInfo; 14];

/// `BIT_TIME`: a trace time in seconds, as btt's double.
fn bit_time(t: u64) -> f64 {
    (t / 1_000_000_000) as f64 + (t % 1_000_000_000) as f64 / 1.0e9
}

/// `tdelta`: a time difference, at least 1 ns.
fn tdelta(from: u64, to: u64) -> u64 {
    if from < to {
        to - from
    } else {
        1
    }
}

/// `remapper_dev`: md (9) and the majors device-mapper had (253, 254).
fn remapper(major: u32) -> bool {
    matches!(major, 9 | 253 | 254)
}

/// Start and end time of activity, split where it pauses 0.1 s or more
/// (`update_range`, btt's default `range_delta`).
#[derive(Clone, Debug, Default)]
struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    fn update(&mut self, t: u64) {
        if let Some(last) = self.0.last_mut() {
            if t < last.1 {
                return;
            }
            // bit_time(t - last.1) < 0.1: below 1 s, bit_time is the ns
            // over 1e9 correctly rounded, below 0.1 exactly when the ns
            // are below 1e8 (0.1 itself rounds to the double 0.1).
            if t - last.1 < 100_000_000 {
                last.1 = t;
                return;
            }
        }
        self.0.push((t, t));
    }
}

#[derive(Clone, Debug, Default)]
struct Regions {
    q: Ranges,
    c: Ranges,
}

/// A queued bio btt keeps until a completion covers it.
#[derive(Clone, Copy, Debug)]
struct QIop {
    time: u64,
    end: u64,
    proc_: usize,
    g_time: Option<u64>,
    i_time: Option<u64>,
    m_time: Option<u64>,
    d_time: Option<u64>,
}

/// btt's `struct d_info`: one device.
#[derive(Clone, Debug)]
struct Dip {
    major: u32,
    minor: u32,
    pre_culling: bool,
    /// Pending Qs by start sector, in btt's tree.
    qs: RbTree<QIop>,
    avgs: Avgs,
    regions: Regions,
    last_q: Option<u64>,
    start_time: f64,
    /// The time of its last event, in ns (btt's `end_time` is
    /// `bit_time` of it).
    end_ns: u64,
    n_qs: u64,
    n_ds: u64,
    n_act_q: u64,
    t_act_q: u64,
    q2q_seek: Seeki,
    d2d_seek: Seeki,
    is_plugged: bool,
    last_plug: f64,
    plugged_time: f64,
    nplugs: u64,
    nplugs_t: u64,
    nios_up: u64,
    nios_upt: u64,
    lives: Lives,
    q2d: [u64; 10],
}

/// btt's `struct p_info`: one process, by name.
#[derive(Clone, Debug)]
struct Proc {
    name: String,
    avgs: Avgs,
    regions: Regions,
    last_q: Option<u64>,
}

/// What [`Btt::dip_of`] holds for a device without state.
const NO_DIP: usize = usize::MAX;

/// btt's state over one trace.
#[derive(Clone, Debug)]
pub struct Btt {
    /// Device numbers by device id.
    devnos: Vec<(u32, u32)>,
    dips: Vec<Dip>,
    /// Each device id's index into `dips` ([`NO_DIP`] before its first
    /// event): a device's state is looked up for every event.
    dip_of: Vec<usize>,
    procs: Vec<Proc>,
    proc_by_pid: FastMap<u32, usize>,
    /// The pid of the event before and its process (most events are by
    /// the same task as the one before them).
    last_proc: Option<(u32, usize)>,
    proc_by_name: BTreeMap<String, usize>,
    all: Avgs,
    all_regions: Regions,
    all_lives: Lives,
    last_q: Option<u64>,
    origin: Option<u64>,
    /// What [`covered`] found and its stack, kept between events.
    covered: (Vec<u32>, Vec<u32>),
}

impl Btt {
    /// A btt for a trace whose device id `d` is `devnos[d]` (major, minor).
    pub fn new(devnos: Vec<(u32, u32)>) -> Self {
        Btt {
            devnos,
            dips: Vec::new(),
            dip_of: Vec::new(),
            procs: Vec::new(),
            proc_by_pid: FastMap::default(),
            last_proc: None,
            proc_by_name: BTreeMap::new(),
            all: Avgs::default(),
            all_regions: Regions::default(),
            all_lives: Lives::default(),
            last_q: None,
            origin: None,
            covered: Default::default(),
        }
    }

    /// Device id `devnos.len()` is `devno` (major, minor): for a trace
    /// whose devices are learnt as they come.
    pub fn add_device(&mut self, devno: (u32, u32)) {
        self.devnos.push(devno);
    }

    /// `add_trace`: one event by `task`. Times are taken from the first
    /// event, as blkparse's dump gives them to btt.
    pub fn add(&mut self, ev: &Event, task: &Task) {
        let origin = *self.origin.get_or_insert(ev.time);
        let t = ev.time.saturating_sub(origin);
        let p = self.process(task);
        match ev.action {
            Action::Queue if ev.bytes > 0 => self.trace_queue(ev, t, p),
            Action::Remap => self.trace_remap(ev, t),
            Action::GetRq | Action::Insert | Action::BackMerge | Action::FrontMerge if ev.bytes > 0 => self.trace_igm(ev, t),
            Action::Requeue => self.trace_requeue(ev, t),
            Action::Issue if ev.bytes > 0 => self.trace_issue(ev, t),
            Action::Complete if ev.bytes > 0 => self.trace_complete(ev, t, p),
            Action::Plug => self.dip_plug(ev.dev, t),
            Action::Unplug | Action::UnplugTimer => self.dip_unplug(ev.dev, t, ev.arg, ev.action == Action::UnplugTimer),
            _ => {}
        }
    }

    /// The process of a task (`process_alloc` on its notify record, then
    /// `find_process`): pid 0 is "kernel"; processes of the same name are
    /// one.
    fn process(&mut self, task: &Task) -> usize {
        if let Some((pid, p)) = self.last_proc {
            if pid == task.pid {
                return p;
            }
        }
        if let Some(&p) = self.proc_by_pid.get(&task.pid) {
            self.last_proc = Some((task.pid, p));
            return p;
        }
        let name = if task.pid == 0 {
            "kernel".to_string()
        } else if task.comm.is_empty() {
            format!("pid{:09}", task.pid)
        } else {
            task.comm.split('/').next().unwrap_or_default().to_string()
        };
        let p = *self.proc_by_name.entry(name.clone()).or_insert_with(|| {
            self.procs.push(Proc { name, avgs: Avgs::default(), regions: Regions::default(), last_q: None });
            self.procs.len() - 1
        });
        self.proc_by_pid.insert(task.pid, p);
        p
    }

    /// The index of device `dev`'s state, once it has one.
    fn dip(&self, dev: DevId) -> Option<usize> {
        self.dip_of.get(dev as usize).copied().filter(|&i| i != NO_DIP)
    }

    /// `dip_alloc`: the device's state, created at its first event; none
    /// while the device has seen no Q or A yet (`pre_culling`).
    fn dip_alloc(&mut self, dev: DevId, t: u64, q_or_a: bool) -> Option<usize> {
        let i = match self.dip(dev) {
            Some(i) => i,
            None => {
                let (major, minor) = self.devnos.get(dev as usize).copied().unwrap_or((0, dev));
                self.dips.push(Dip::new(major, minor, t));
                if self.dip_of.len() <= dev as usize {
                    self.dip_of.resize(dev as usize + 1, NO_DIP);
                }
                self.dip_of[dev as usize] = self.dips.len() - 1;
                self.dips.len() - 1
            }
        };
        let d = &mut self.dips[i];
        if d.pre_culling {
            if !q_or_a {
                return None;
            }
            d.pre_culling = false;
        }
        d.end_ns = t;
        Some(i)
    }

    fn update(&mut self, which: usize, d: usize, p: usize, v: u64) {
        self.all[which].update(v);
        self.dips[d].avgs[which].update(v);
        self.procs[p].avgs[which].update(v);
    }

    /// `trace_queue` / `handle_queue`.
    fn trace_queue(&mut self, ev: &Event, t: u64, p: usize) {
        let Some(d) = self.dip_alloc(ev.dev, t, true) else { return };
        let end = ev.sector + (ev.bytes >> 9) as u64;
        let dip = &mut self.dips[d];
        // A Q at the start sector of a pending one takes its place in the
        // tree (btt 1.2.0 as Debian builds it); the older is forgotten.
        let q = QIop { time: t, end, proc_: p, g_time: None, i_time: None, m_time: None, d_time: None };
        match dip.qs.find(ev.sector) {
            Some(n) => *dip.qs.val_mut(n) = q,
            None => {
                dip.qs.insert(ev.sector, q);
            }
        }
        dip.q2q_seek.add(ev.sector, end);
        let dm = remapper(dip.major);
        let which = if dm { Q2Q_DM } else { Q2Q };
        update_lq(&mut dip.last_q, &mut dip.avgs[which], t);
        dip.regions.q.update(t);
        dip.n_qs += 1;
        dip.t_act_q += dip.n_act_q;
        dip.n_act_q += 1;
        self.all_regions.q.update(t);
        let pr = &mut self.procs[p];
        update_lq(&mut pr.last_q, &mut pr.avgs[which], t);
        pr.regions.q.update(t);
        update_lq(&mut self.last_q, &mut self.all[which], t);
    }

    /// `trace_remap`: Q2A for the source device's Q the remap came from.
    fn trace_remap(&mut self, ev: &Event, t: u64) {
        if self.dip_alloc(ev.dev, t, true).is_none() {
            return;
        }
        let Some(src) = self.dip(ev.from_dev) else { return };
        let Some(n) = find_sec(&self.dips[src].qs, ev.arg) else { return };
        let q = *self.dips[src].qs.val(n);
        let which = if remapper(self.dips[src].major) { Q2A_DM } else { Q2A };
        self.update(which, src, q.proc_, tdelta(q.time, t));
    }

    /// `handle_g`, `handle_i`, `handle_m`: stamp the Q the request or
    /// merge starts in.
    fn trace_igm(&mut self, ev: &Event, t: u64) {
        let Some(d) = self.dip_alloc(ev.dev, t, false) else { return };
        if matches!(ev.action, Action::BackMerge | Action::FrontMerge) {
            let dip = &mut self.dips[d];
            dip.n_act_q = dip.n_act_q.saturating_sub(1);
        }
        let Some(n) = find_sec(&self.dips[d].qs, ev.sector) else { return };
        let q = self.dips[d].qs.val_mut(n);
        let (which, v) = match ev.action {
            Action::GetRq => {
                q.g_time = Some(t);
                (Q2G, tdelta(q.time, t))
            }
            Action::Insert => {
                q.i_time = Some(t);
                let Some(g) = q.g_time else { return };
                (G2I, tdelta(g, t))
            }
            _ => {
                q.m_time = Some(t);
                (Q2M, tdelta(q.time, t))
            }
        };
        let q = *q;
        self.update(which, d, q.proc_, v);
    }

    /// `handle_requeue`: counted as a Q for the active-request figures.
    fn trace_requeue(&mut self, ev: &Event, t: u64) {
        let Some(d) = self.dip_alloc(ev.dev, t, false) else { return };
        let dip = &mut self.dips[d];
        dip.n_qs += 1;
        dip.t_act_q += dip.n_act_q;
        dip.n_act_q += 1;
    }

    /// `handle_issue`: I2D (or M2D) and the Q2D histogram of every Q the
    /// request covers.
    fn trace_issue(&mut self, ev: &Event, t: u64) {
        let Some(d) = self.dip_alloc(ev.dev, t, false) else { return };
        let end = ev.sector + (ev.bytes >> 9) as u64;
        let dip = &mut self.dips[d];
        dip.n_act_q = dip.n_act_q.saturating_sub(1);
        dip.d2d_seek.add(ev.sector, end);
        dip.n_ds += 1;
        let mut nodes = std::mem::take(&mut self.covered);
        covered(&dip.qs, ev.sector, end, &mut nodes);
        for &n in &nodes.0 {
            let q = *self.dips[d].qs.val(n);
            if let Some(i) = q.i_time {
                self.update(I2D, d, q.proc_, tdelta(i, t));
            } else if let Some(m) = q.m_time {
                self.update(M2D, d, q.proc_, tdelta(m, t));
            }
            let dip = &mut self.dips[d];
            dip.qs.val_mut(n).d_time = Some(t);
            dip.q2d[q2d_bucket(t.wrapping_sub(q.time))] += 1;
        }
        self.covered = nodes;
    }

    /// `handle_complete`: Q2C and D2C of every Q the completion covers,
    /// which btt then forgets.
    fn trace_complete(&mut self, ev: &Event, t: u64, p: usize) {
        let Some(d) = self.dip_alloc(ev.dev, t, false) else { return };
        let blks = (ev.bytes >> 9) as u64;
        self.update(BLKS, d, p, blks);
        self.all_regions.c.update(t);
        self.dips[d].regions.c.update(t);
        self.procs[p].regions.c.update(t);
        let end = ev.sector + blks;
        let mut nodes = std::mem::take(&mut self.covered);
        covered(&self.dips[d].qs, ev.sector, end, &mut nodes);
        for &n in &nodes.0 {
            let q = *self.dips[d].qs.val(n);
            self.dips[d].qs.erase(n);
            let which = if remapper(self.dips[d].major) { Q2C_DM } else { Q2C };
            self.update(which, d, q.proc_, tdelta(q.time, t));
            if let Some(dt) = q.d_time {
                self.dips[d].lives.add(dt, t);
                self.all_lives.add(dt, t);
                self.update(D2C, d, q.proc_, tdelta(dt, t));
            }
        }
        self.covered = nodes;
    }

    fn dip_plug(&mut self, dev: DevId, t: u64) {
        let Some(d) = self.dip(dev) else { return };
        let dip = &mut self.dips[d];
        if !dip.is_plugged {
            dip.is_plugged = true;
            dip.last_plug = bit_time(t);
        }
    }

    /// `dip_unplug` and `dip_unplug_tm`: `nios` requests were unplugged.
    fn dip_unplug(&mut self, dev: DevId, t: u64, nios: u64, timer: bool) {
        let Some(d) = self.dip(dev) else { return };
        let dip = &mut self.dips[d];
        if dip.is_plugged {
            if timer {
                dip.nplugs_t += 1;
                dip.nios_upt += nios;
            } else {
                dip.nplugs += 1;
                dip.nios_up += nios;
            }
            dip.is_plugged = false;
            dip.plugged_time += bit_time(t) - dip.last_plug;
        }
    }
}

impl Dip {
    fn new(major: u32, minor: u32, start_ns: u64) -> Self {
        Dip {
            major,
            minor,
            pre_culling: true,
            qs: RbTree::default(),
            avgs: Avgs::default(),
            regions: Regions::default(),
            last_q: None,
            start_time: bit_time(start_ns),
            end_ns: start_ns,
            n_qs: 0,
            n_ds: 0,
            n_act_q: 0,
            t_act_q: 0,
            q2q_seek: Seeki::default(),
            d2d_seek: Seeki::default(),
            is_plugged: false,
            last_plug: 0.0,
            plugged_time: 0.0,
            nplugs: 0,
            nplugs_t: 0,
            nios_up: 0,
            nios_upt: 0,
            lives: Lives::default(),
            q2d: [0; 10],
        }
    }
}

/// `rb_find_sec`: the pending Q whose range holds `sector`, searching by
/// start sector (of overlapping ranges, the first met on the way down).
fn find_sec(qs: &RbTree<QIop>, sector: u64) -> Option<u32> {
    let mut n = qs.root();
    while n != NIL {
        if sector < qs.key(n) {
            n = qs.left(n);
        } else if sector >= qs.val(n).end {
            n = qs.right(n);
        } else {
            return Some(n);
        }
    }
    None
}

/// `rb_foreach`: the pending Qs inside [start, end], visiting a node, then
/// its left subtree only when `start` lies left of it and its right one
/// only when it ends before `end` (so a Q overlapped by a longer one above
/// it can be missed, as btt misses it), into the first of `scratch`.
fn covered(qs: &RbTree<QIop>, start: u64, end: u64, scratch: &mut (Vec<u32>, Vec<u32>)) {
    let (out, stack) = scratch;
    out.clear();
    stack.clear();
    stack.push(qs.root());
    while let Some(n) = stack.pop() {
        if n == NIL {
            continue;
        }
        let (s, e) = (qs.key(n), qs.val(n).end);
        if start <= s && e <= end {
            out.push(n);
        }
        if e < end {
            stack.push(qs.right(n));
        }
        if start < s {
            stack.push(qs.left(n));
        }
    }
}

/// `update_lq`: the time since the previous Q (at least 1 ns).
fn update_lq(last: &mut Option<u64>, avg: &mut AvgInfo, t: u64) {
    if let Some(l) = *last {
        avg.update(tdelta(l, t));
    }
    *last = Some(t);
}

/// `q2d_histo_add`: the bucket of a Q2D time (<5 ms, <10, <25, <50, <75,
/// <100, <250, <500, <1000 ms, more), from whole milliseconds.
fn q2d_bucket(ns: u64) -> usize {
    let ms = (bit_time(ns) / 0.001) as i64;
    match ms {
        0..=4 => 0,
        5..=9 => 1,
        10..=24 => 2,
        25..=49 => 3,
        50..=74 => 4,
        75..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=999 => 8,
        _ => 9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bio::Op;

    fn ev(time: u64, dev: DevId, action: Action, sector: u64, sectors: u32) -> Event {
        Event { time, dev, action, op: Op::Read, flags: 0, sector, bytes: sectors << 9, task: 0, error: 0, arg: 0, from_dev: 0 }
    }

    #[test]
    fn btts_bookkeeping_by_hand() {
        // Device 0 is sda (8,0), device 1 md0 (9,0). A D on sda before any
        // Q is culled. Qs at 0 and 8 on sda (Q2Q 1000 ns); the G at 0
        // stamps the first (Q2G 500); a third Q at 0 while the first is
        // pending takes its place (Q2Q 500), without a G. The D covers
        // both pending Qs (0+16), the C at 6000: D2C 3000 each, Q2C 3500
        // (6000 - 2500) and 4000. md0's two Qs count as Q2Qdm (major 9).
        let task = Task { pid: 7, comm: "dd".into(), cpu: 0 };
        let mut b = Btt::new(vec![(8, 0), (9, 0)]);
        for e in [
            ev(0, 0, Action::Issue, 100, 8),
            ev(1000, 0, Action::Queue, 0, 8),
            ev(1200, 1, Action::Queue, 0, 8),
            ev(1500, 0, Action::GetRq, 0, 8),
            ev(2000, 0, Action::Queue, 8, 8),
            ev(2100, 1, Action::Queue, 8, 8),
            ev(2500, 0, Action::Queue, 0, 8),
            ev(3000, 0, Action::Issue, 0, 16),
            ev(6000, 0, Action::Complete, 0, 16),
        ] {
            b.add(&e, &task);
        }
        let sda = &b.dips[0];
        assert_eq!((sda.n_qs, sda.n_ds), (3, 1));
        let a = |x: &AvgInfo| (x.min, x.max, x.total, x.n);
        assert_eq!(a(&sda.avgs[Q2Q]), (500, 1000, 1500, 2));
        assert_eq!(a(&sda.avgs[Q2G]), (500, 500, 500, 1));
        assert_eq!(a(&sda.avgs[D2C]), (3000, 3000, 6000, 2));
        assert_eq!(a(&sda.avgs[Q2C]), (3500, 4000, 7500, 2));
        assert_eq!(a(&b.dips[1].avgs[Q2Q_DM]), (900, 900, 900, 1));
        assert_eq!(b.dips[1].avgs[Q2Q].n, 0);
        // Requests active at each Q: 0, 1, 2 (t_act_q 3); the D takes one.
        assert_eq!((sda.t_act_q, sda.n_act_q), (3, 2));
        // The system's Q2Q (sda's Qs) and Q2Qdm (md0's) share one "last Q"
        // time: 1000 → 1200 (dm, 200), → 2000 (800), → 2100 (dm, 100),
        // → 2500 (400).
        assert_eq!(a(&b.all[Q2Q]), (400, 800, 1200, 2));
        assert_eq!(a(&b.all[Q2Q_DM]), (100, 200, 300, 2));
    }
}
