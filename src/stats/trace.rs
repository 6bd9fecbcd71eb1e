//! Statistics of a real trace (`blkstack stats`): the records of a parsed
//! blkparse or ftrace text ([`crate::trace::parse`]) become the model's
//! [`Event`]s, go through the same btt-style [`Analysis`] as a simulated
//! run's, and rebuild each device's /proc/diskstats as the kernel accounts
//! it, so that [`super::report`] prints the same iostat, btt and histogram
//! reports for both.
//!
//! The accounting follows what the tracepoints show of the kernel's:
//!
//! * request-based disks (any `G`, `I` or `D` on the device): a request is
//!   accounted from its `G` (`blk_account_io_start` at allocation; from its
//!   `D` when the trace has no `G`) to its `C` (`blk_account_io_done`: one
//!   I/O, its sectors, its latency); a bio merge (`M`/`F` of a queued bio)
//!   counts a merge, a request merge (`M` of a request) a merge and one
//!   fewer request in flight;
//! * bio-based devices (md, dm: only `Q`, `X`, `A`, `C`): each bio is in
//!   flight from its `Q` (or its split, `X`) to its `C`, counted at the end
//!   with a latency in whole jiffies (`bio_end_io_acct`, 6.12's rule);
//! * `io_ticks` by the precise rule of 6.1.93+/6.10+, with jiffies counted
//!   from the trace's first event.
//!
//! Times are relative to the trace's first record. Records the model has
//! no event for (messages, bounces, errors, `block_io_start`...) and those
//! that name no device (ftrace's `block_plug`/`block_unplug`) are counted,
//! not analysed. RWBS letters are decoded by [`Rwbs::decode`]; a record
//! whose RWBS has letters it does not know is read by the letters it knows,
//! and listed.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use serde_json::{json, Map, Value};

use super::analysis::Analysis;
use super::btt::Btt;
use super::diskstats::DiskStats;
use super::report::{self, ReportDev, ReportInput};
use super::{NR_OPS, OPS};
use crate::bio::{req, Op};
use crate::genhd::DevId;
use crate::profile::IoTicks;
use crate::trace::blkparse_fast::same_short;
use crate::trace::parse::{BadLine, DevNo, Extra, Line, Rwbs, TraceAction, TraceParse, TraceRecord};
use crate::trace::{Action, Event, Task};

/// Maps looked up for every record: sectors, device numbers, pids and
/// RWBS strings hash with the analysis's cheap hasher, not SipHash.
type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<super::analysis::SectorHasher>>;

/// The rule `blkstack stats` counts `io_ticks` by.
const IO_TICKS: IoTicks = IoTicks::Precise;

/// A request being accounted, by its first sector.
#[derive(Clone, Copy, Debug)]
struct Rq {
    start: u64,
}

/// One device's accounting state.
#[derive(Default)]
struct Acct {
    request_based: bool,
    disk: DiskStats,
    /// Queued bios not yet in a request or merged: sector -> 'Q' time.
    pending_q: FastMap<u64, u64>,
    rqs: FastMap<u64, Rq>,
    requests: u64,
    sectors_issued: [u64; NR_OPS],
    /// Completions whose request or bio started before the trace did.
    unmatched: u64,
    /// Q events seen, and C events seen.
    queued: u64,
    completed: u64,
}

impl Acct {
    /// A bio-based device with queued bios and not one completion: md and
    /// dm trace a bio's completion only when it was remapped
    /// (`BIO_TRACE_COMPLETION`), so such a trace says nothing of when its
    /// bios finished, and diskstats rebuilt from it would hold every bio in
    /// flight forever.
    fn lacks_completions(&self) -> bool {
        !self.request_based && self.queued > 0 && self.completed == 0
    }
}

impl Acct {
    fn event(&mut self, ev: &Event) {
        let t = ev.time;
        let accounted = ev.op != Op::Read || ev.bytes != 0 || ev.flags & req::PREFLUSH != 0;
        self.queued += (ev.action == Action::Queue) as u64;
        self.completed += (ev.action == Action::Complete) as u64;
        match ev.action {
            Action::Queue => {
                self.pending_q.insert(ev.sector, t);
                if !self.request_based {
                    self.disk.io_start(t, ev.op, IO_TICKS);
                }
            }
            Action::Split => {
                if let Some(&q) = self.pending_q.get(&ev.sector) {
                    self.pending_q.insert(ev.arg, q);
                }
                if !self.request_based {
                    self.disk.io_start(t, ev.op, IO_TICKS);
                }
            }
            Action::GetRq => {
                self.pending_q.remove(&ev.sector);
                self.rqs.insert(ev.sector, Rq { start: t });
                self.disk.io_start(t, ev.op, IO_TICKS);
            }
            Action::Issue => {
                self.requests += 1;
                self.sectors_issued[op_index(ev.op)] += ev.sectors() as u64;
                if !self.rqs.contains_key(&ev.sector) && accounted {
                    self.rqs.insert(ev.sector, Rq { start: t });
                    self.disk.io_start(t, ev.op, IO_TICKS);
                }
            }
            Action::BackMerge | Action::FrontMerge => {
                if self.pending_q.remove(&ev.sector).is_some() {
                    self.disk.account_merge(ev.op);
                    if ev.action == Action::FrontMerge {
                        if let Some(r) = self.rqs.remove(&(ev.sector + ev.sectors() as u64)) {
                            self.rqs.insert(ev.sector, r);
                        }
                    }
                } else if self.rqs.remove(&ev.sector).is_some() {
                    self.disk.account_request_merge(ev.op);
                }
            }
            Action::Complete => self.complete(ev, accounted),
            _ => {}
        }
    }

    fn complete(&mut self, ev: &Event, accounted: bool) {
        let (t, sectors) = (ev.time, ev.sectors() as u64);
        if self.request_based {
            let start = match self.rqs.remove(&ev.sector) {
                Some(r) => r.start,
                None if accounted => {
                    self.unmatched += 1;
                    t
                }
                None => return,
            };
            self.disk.account_sectors(ev.op, ev.flags, sectors);
            self.disk.io_done(t, ev.op, ev.flags, start, IO_TICKS);
        } else {
            let start = self.pending_q.remove(&ev.sector).unwrap_or_else(|| {
                self.unmatched += 1;
                t
            });
            self.disk.bio_done(t, ev.op, ev.flags, start, sectors, IO_TICKS, true);
        }
    }
}

fn op_index(op: Op) -> usize {
    OPS.iter().position(|&o| o == op).unwrap_or(0)
}

/// The op and `REQ_*` flags an RWBS string stands for; `N` (no data: a
/// passthrough command, write zeroes) reads as a read of nothing, which
/// is not accounted. A preflush of no data, `FN` (how blkparse prints the
/// flush machinery's `REQ_OP_FLUSH | REQ_PREFLUSH` request; the
/// tracepoints print `FF`), is a flush.
pub fn rwbs_op(rwbs: &str) -> (Op, u32) {
    let r = Rwbs::decode(rwbs);
    let op = if r.preflush && !(r.discard || r.write || r.read || r.flush) {
        Op::Flush
    } else if r.discard {
        if r.secure_erase {
            Op::SecureErase
        } else {
            Op::Discard
        }
    } else if r.write {
        Op::Write
    } else if r.flush {
        Op::Flush
    } else {
        Op::Read
    };
    let mut flags = 0;
    for (on, f) in [(r.preflush, req::PREFLUSH), (r.fua, req::FUA), (r.rahead, req::RAHEAD), (r.sync, req::SYNC), (r.meta, req::META)] {
        if on {
            flags |= f;
        }
    }
    (op, flags)
}

/// The name Linux gives device `d` when its major is one of the fixed
/// ones (SCSI disks `sdX[N]`, md `mdN`, loop `loopN`); else `maj,min`.
pub fn device_name(d: DevNo) -> String {
    let sd_base = match d.major {
        8 => Some(0),
        65..=71 => Some(16 * (d.major - 64)),
        128..=135 => Some(128 + 16 * (d.major - 128)),
        _ => None,
    };
    match (sd_base, d.major) {
        (Some(base), _) => {
            // sd_format_disk_name: a, ..., z, aa, ab, ... (bijective base 26).
            let mut i = base + d.minor / 16 + 1;
            let mut letters = Vec::new();
            while i > 0 {
                i -= 1;
                letters.push(b'a' + (i % 26) as u8);
                i /= 26;
            }
            letters.reverse();
            let part = d.minor % 16;
            let disk = format!("sd{}", String::from_utf8(letters).unwrap_or_default());
            if part == 0 {
                disk
            } else {
                format!("{disk}{part}")
            }
        }
        (None, 9) => format!("md{}", d.minor),
        // LOOP_MAJOR, with max_part 0: one minor per device.
        (None, 7) => format!("loop{}", d.minor),
        _ => d.to_string(),
    }
}

impl TraceStats {
    /// Name devices (`MAJ:MIN=NAME` mappings, [`super::dev_names`]).
    pub fn rename(&mut self, map: &[(DevNo, String)]) {
        super::dev_names::rename(&self.devices, &mut self.names, map);
    }
}

/// A record whose RWBS has letters [`Rwbs::decode`] does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OddRwbs {
    pub line: usize,
    pub rwbs: String,
}

/// What a first reading of a trace's records (in time order) tells before
/// any is analysed: the devices in order of first appearance and which are
/// request-based, where time starts, which formats the lines came in, and
/// whether time ever ran backwards in the order read.
#[derive(Default)]
struct Survey {
    devices: Vec<DevNo>,
    ids: FastMap<DevNo, u32>,
    /// The device last interned (most records are on the one before theirs).
    last: Option<(DevNo, u32)>,
    request_based: Vec<bool>,
    origin_ns: Option<u64>,
    previous_ns: Option<u64>,
    /// Records whose time is before the record above them, and the first
    /// (line, its time, the time above it in ns).
    backwards: (usize, Option<(usize, u64, u64)>),
    with_seq: bool,
    without_seq: bool,
}

impl Survey {
    fn intern(&mut self, d: DevNo) -> u32 {
        if let Some((last, id)) = self.last {
            if last == d {
                return id;
            }
        }
        let next = self.devices.len() as u32;
        let id = *self.ids.entry(d).or_insert_with(|| {
            self.devices.push(d);
            self.request_based.push(false);
            next
        });
        self.last = Some((d, id));
        id
    }

    fn record(&mut self, r: &TraceRecord) {
        if let Some(prev) = self.previous_ns.filter(|&p| r.time_ns < p) {
            self.backwards.0 += 1;
            self.backwards.1.get_or_insert((r.line, r.time_ns, prev));
        }
        self.previous_ns = Some(r.time_ns);
        self.origin_ns = Some(self.origin_ns.map_or(r.time_ns, |o| o.min(r.time_ns)));
        self.with_seq |= r.seq.is_some();
        self.without_seq |= r.seq.is_none();
        let (Some(action), Some(dev)) = (r.action.model(), r.dev) else { return };
        let id = self.intern(dev) as usize;
        if let Extra::Remap { from, .. } = &r.extra {
            self.intern(*from);
        }
        if matches!(action, Action::GetRq | Action::Insert | Action::Issue) {
            self.request_based[id] = true;
        }
    }

    fn format(&self) -> &'static str {
        match (self.with_seq, self.without_seq) {
            (true, true) => "mixed",
            (true, false) => "blkparse",
            (false, true) => "ftrace",
            (false, false) => "empty",
        }
    }
}

/// An RWBS string as the analysis reads it, decoded once per distinct string.
struct RwbsCode {
    op: Op,
    flags: u32,
    unknown: bool,
}

/// Everything `blkstack stats` computes from a trace.
pub struct TraceStats {
    /// Device numbers by [`DevId`], in order of first appearance.
    pub devices: Vec<DevNo>,
    pub names: Vec<String>,
    /// The CPUs the records name: the highest CPU number plus one (what
    /// iostat's banner can say of the traced machine).
    pub cpus: u32,
    /// The records as events, in time order (relative to `origin_ns`),
    /// every one or the issued requests alone ([`Keep::events`]).
    pub events: Vec<Event>,
    /// Each kept event's RWBS as the trace printed it, an index into `rwbs_names`.
    pub rwbs: Vec<u16>,
    pub rwbs_names: Vec<String>,
    pub tasks: Vec<Task>,
    /// The trace's first record time (its own clock), in ns.
    pub origin_ns: u64,
    pub samples: Vec<(u64, Vec<[u64; 17]>)>,
    pub intervals: bool,
    pub analysis: Analysis,
    /// btt's report of the trace, when asked for ([`Keep::btt`]).
    pub btt: Option<Btt>,
    acct: Vec<Acct>,
    /// Per device, while a one-pass reading does not know it is
    /// request-based: its accounting as a bio-based device
    /// ([`TraceStats::learn`]), and each snapshot's fields of it as one
    /// (snapshot, device, fields).
    shadow: Vec<Option<Acct>>,
    shadow_samples: Vec<(usize, usize, [u64; 17])>,
    /// How many records of each kind the model has no event for.
    pub other: Vec<(String, usize)>,
    /// Records that name no device (ftrace's plug and unplug).
    pub no_device: usize,
    pub odd_rwbs: Vec<OddRwbs>,
    pub bad: Vec<BadLine>,
    /// Blank lines, headers, summaries and other tracepoints.
    pub skipped: usize,
    pub format: &'static str,
    /// Records whose time is before the record above them, and the first
    /// (line, its time, the time above it in ns).
    pub backwards: (usize, Option<(usize, u64, u64)>),
    /// Events analysed, and whether each device had any.
    count: usize,
    seen: Vec<bool>,
    ids: FastMap<DevNo, u32>,
    /// The device and the task of the record before (most records are on
    /// the same ones as the record before them).
    last_dev: Option<(DevNo, u32)>,
    last_task: Option<(u32, u32)>,
    /// Tasks by pid, then name: their ids.
    task_ids: FastMap<u32, Vec<(String, u32)>>,
    rwbs_ids: FastMap<String, u32>,
    rwbs_codes: Vec<RwbsCode>,
    keep_events: bool,
    keep_requests: bool,
    interval_ns: Option<u64>,
    next_sample: Option<u64>,
    last_ns: u64,
}

/// What to keep besides the reports.
#[derive(Clone, Copy, Default)]
pub struct Keep {
    /// Every event, for the Python API's events table and blktrace output
    /// (without it, the issued requests ('D') alone are kept: the requests
    /// table is built from them).
    pub events: bool,
    /// Without `events`, the issued requests for the requests table
    /// (`blkstack stats`, which shows none, keeps nothing: its memory does
    /// not grow with the trace).
    pub requests: bool,
    /// btt's bookkeeping, for its report.
    pub btt: bool,
}

/// The name of a record kind the model has no event for.
fn other_name(a: TraceAction) -> &'static str {
    match a {
        TraceAction::Bounce => "B (bounce)",
        TraceAction::Sleep => "S (sleep)",
        TraceAction::Message => "m (message)",
        TraceAction::Error => "block_rq_error",
        TraceAction::IoStart => "block_io_start",
        TraceAction::IoDone => "block_io_done",
        TraceAction::Model(a) => a.letter(),
    }
}

/// Analyse a parsed trace. With `interval_ns`, diskstats are also
/// snapshotted every interval of trace time (iostat per interval).
pub fn analyse(parse: TraceParse, interval_ns: Option<u64>) -> TraceStats {
    analyse_records(parse, interval_ns, Keep { events: true, requests: true, btt: false })
}

/// [`analyse`] of records in memory: sorted by time (stably), then fed.
fn analyse_records(parse: TraceParse, interval_ns: Option<u64>, keep: Keep) -> TraceStats {
    let TraceParse { mut records, bad, skipped } = parse;
    let mut in_file_order = Survey::default();
    records.iter().for_each(|r| in_file_order.record(r));
    records.sort_by_key(|r| r.time_ns);
    let mut survey = Survey::default();
    records.iter().for_each(|r| survey.record(r));
    survey.backwards = in_file_order.backwards;
    let mut st = TraceStats::new(survey, interval_ns, keep);
    records.iter().for_each(|r| st.record(r));
    st.finish(bad, skipped);
    st
}

/// Analyse the trace at `path` as [`analyse`] does, holding in memory what
/// is in flight rather than the whole trace: a text trace is read line by
/// line (parsed on a second thread while this one analyses the lines
/// before, [`crate::trace::parse_thread`]), its devices learnt as they
/// come ([`TraceStats::learn`]); records
/// out of time order, from a joined or edited file, are read again and
/// sorted in memory first. Binary blktrace files, whose per-CPU records
/// interleave, are read whole ([`crate::trace::blktrace::read_trace_lines`]).
pub fn analyse_file(path: &str, interval_ns: Option<u64>, keep: Keep) -> std::io::Result<TraceStats> {
    use crate::trace::blktrace::read_trace_lines;
    let mut survey = Survey::default();
    let mut st = TraceStats::new(Survey::default(), interval_ns, keep);
    let mut parse = TraceParse::default();
    read_trace_lines(path, |line| match line {
        _ if survey.backwards.0 > 0 => {}
        Line::Record(r) => {
            survey.record(r);
            if survey.backwards.0 == 0 {
                st.learn(&survey, r);
                st.record(r);
            }
        }
        Line::Skipped => parse.skipped += 1,
        Line::Bad(b) => parse.bad.push(b),
    })?;
    if survey.backwards.0 > 0 {
        let mut parse = TraceParse::default();
        read_trace_lines(path, |line| match line {
            Line::Record(r) => parse.records.push(r.clone()),
            Line::Skipped => parse.skipped += 1,
            Line::Bad(b) => parse.bad.push(b),
        })?;
        return Ok(analyse_records(parse, interval_ns, keep));
    }
    st.settle(&survey);
    st.finish(parse.bad, parse.skipped);
    Ok(st)
}

impl TraceStats {
    fn new(survey: Survey, interval_ns: Option<u64>, keep: Keep) -> Self {
        let n = survey.devices.len();
        let acct = survey.request_based.iter().map(|&rb| Acct { request_based: rb, ..Default::default() }).collect();
        let btt = keep.btt.then(|| Btt::new(survey.devices.iter().map(|d| (d.major, d.minor)).collect()));
        let mut st = TraceStats {
            names: survey.devices.iter().map(|&d| device_name(d)).collect(),
            cpus: 0,
            events: Vec::new(),
            rwbs: Vec::new(),
            rwbs_names: Vec::new(),
            tasks: Vec::new(),
            origin_ns: survey.origin_ns.unwrap_or(0),
            samples: Vec::new(),
            intervals: interval_ns.is_some(),
            analysis: Analysis::default(),
            btt,
            acct,
            shadow: (0..n).map(|_| None).collect(),
            shadow_samples: Vec::new(),
            other: Vec::new(),
            no_device: 0,
            odd_rwbs: Vec::new(),
            bad: Vec::new(),
            skipped: 0,
            format: survey.format(),
            backwards: survey.backwards,
            count: 0,
            seen: vec![false; n],
            ids: survey.ids,
            last_dev: None,
            last_task: None,
            devices: survey.devices,
            task_ids: FastMap::default(),
            rwbs_ids: FastMap::default(),
            rwbs_codes: Vec::new(),
            keep_events: keep.events,
            keep_requests: keep.requests,
            interval_ns,
            next_sample: interval_ns,
            last_ns: 0,
        };
        st.snapshot(0);
        st
    }

    /// What a record read in one pass ([`analyse_file`]) adds to what is
    /// known of the trace, `survey` having just read it: where time starts
    /// (its first record, time never running backwards in such a pass), the
    /// devices it names first, and whether its device is request-based. A
    /// device is accounted as request-based and, until a G, I or D shows
    /// it is, also as bio-based ([`TraceStats::shadow`]).
    fn learn(&mut self, survey: &Survey, r: &TraceRecord) {
        self.origin_ns = survey.origin_ns.unwrap_or(0);
        while self.devices.len() < survey.devices.len() {
            let d = survey.devices[self.devices.len()];
            self.ids.insert(d, self.devices.len() as u32);
            self.devices.push(d);
            self.names.push(device_name(d));
            self.acct.push(Acct { request_based: true, ..Default::default() });
            self.shadow.push(Some(Acct::default()));
            self.seen.push(false);
            if let Some(b) = &mut self.btt {
                b.add_device((d.major, d.minor));
            }
            let fresh = DiskStats::default().fields(0);
            self.samples.iter_mut().for_each(|s| s.1.push(fresh));
        }
        if let (Some(d), Some(_)) = (r.dev, r.action.model()) {
            let id = self.dev_id(d) as usize;
            // (Looked at first: writing a None over the large Acct
            // copies all of it, for every record.)
            if survey.request_based[id] && self.shadow[id].is_some() {
                self.shadow[id] = None;
            }
        }
    }

    /// After a pass: a device that showed no G, I or D is bio-based, its
    /// accounting and snapshots those of [`TraceStats::shadow`].
    fn settle(&mut self, survey: &Survey) {
        self.format = survey.format();
        for (i, shadow) in self.shadow.iter_mut().enumerate() {
            if let Some(a) = shadow.take() {
                self.acct[i] = a;
                for &(s, _, fields) in self.shadow_samples.iter().filter(|x| x.1 == i) {
                    self.samples[s].1[i] = fields;
                }
            }
        }
        self.shadow_samples.clear();
    }

    /// The id of device `d`, as [`Survey::intern`] gave it.
    fn dev_id(&mut self, d: DevNo) -> u32 {
        match self.last_dev {
            Some((last, id)) if last == d => id,
            _ => {
                let id = self.ids[&d];
                self.last_dev = Some((d, id));
                id
            }
        }
    }

    /// The id of `r`'s task, interned; the CPU of its first record is its own.
    fn task_id(&mut self, pid: u32, comm: &str, cpu: u32) -> u32 {
        if let Some((last, id)) = self.last_task {
            if last == pid && same_short(self.tasks[id as usize].comm.as_bytes(), comm.as_bytes()) {
                return id;
            }
        }
        let id = self.find_task(pid, comm, cpu);
        self.last_task = Some((pid, id));
        id
    }

    fn find_task(&mut self, pid: u32, comm: &str, cpu: u32) -> u32 {
        let same_pid = self.task_ids.entry(pid).or_default();
        if let Some(&(_, id)) = same_pid.iter().find(|(c, _)| c == comm) {
            return id;
        }
        let id = self.tasks.len() as u32;
        same_pid.push((comm.to_string(), id));
        self.tasks.push(Task { pid, comm: comm.to_string(), cpu });
        id
    }

    /// The id of an RWBS string, interned and decoded.
    fn rwbs_id(&mut self, rwbs: &str) -> u32 {
        // A trace has a few distinct strings: the first are found by
        // comparing, without hashing.
        if let Some(id) = self.rwbs_names.iter().take(8).position(|n| same_short(n.as_bytes(), rwbs.as_bytes())) {
            return id as u32;
        }
        if let Some(&id) = self.rwbs_ids.get(rwbs) {
            return id;
        }
        let id = self.rwbs_names.len() as u32;
        let (op, flags) = rwbs_op(rwbs);
        self.rwbs_codes.push(RwbsCode { op, flags, unknown: Rwbs::decode(rwbs).unknown > 0 });
        self.rwbs_names.push(rwbs.to_string());
        self.rwbs_ids.insert(rwbs.to_string(), id);
        id
    }

    fn count_other(&mut self, a: TraceAction) {
        let name = other_name(a);
        match self.other.iter_mut().find(|(n, _)| n == name) {
            Some((_, c)) => *c += 1,
            None => self.other.push((name.to_string(), 1)),
        }
    }

    /// One record, in time order: as an event into the analysis, the
    /// accounting and btt's bookkeeping.
    fn record(&mut self, r: &TraceRecord) {
        let Some(action) = r.action.model() else {
            self.count_other(r.action);
            return;
        };
        let Some(dev) = r.dev else {
            self.no_device += 1;
            return;
        };
        let id = self.dev_id(dev);
        self.cpus = self.cpus.max(r.cpu.saturating_add(1));
        let task = self.task_id(r.pid, r.comm.as_deref().unwrap_or_default(), r.cpu);
        let code = self.rwbs_id(&r.rwbs);
        let RwbsCode { op, flags, unknown } = self.rwbs_codes[code as usize];
        if unknown {
            self.odd_rwbs.push(OddRwbs { line: r.line, rwbs: r.rwbs.clone() });
        }
        let (arg, from_dev) = match &r.extra {
            Extra::Split { new_sector } => (*new_sector, 0),
            Extra::Remap { from, from_sector, .. } => (*from_sector, self.dev_id(*from)),
            Extra::Unplug { depth } => (*depth as u64, 0),
            _ => (0, 0),
        };
        let bytes = (r.nr_sectors as u64 * 512).min(u32::MAX as u64 & !511) as u32;
        let ev = Event {
            time: r.time_ns - self.origin_ns,
            dev: id as DevId,
            action,
            op,
            flags,
            sector: r.sector.unwrap_or(0),
            bytes,
            task,
            error: r.error.unwrap_or(0),
            arg,
            from_dev: from_dev as DevId,
        };
        self.event(&ev);
        if self.keep_events || (self.keep_requests && ev.action == Action::Issue) {
            self.events.push(ev);
            self.rwbs.push(code as u16);
        }
    }

    /// The analysis and the diskstats accounting of one event, after the
    /// snapshots of the intervals that ended before it.
    fn event(&mut self, ev: &Event) {
        while let Some(at) = self.next_sample.filter(|&at| ev.time >= at) {
            self.snapshot(at);
            self.next_sample = self.interval_ns.map(|every| at + every);
        }
        self.analysis.add(ev);
        self.acct[ev.dev as usize].event(ev);
        if let Some(a) = &mut self.shadow[ev.dev as usize] {
            a.event(ev);
        }
        if let Some(b) = &mut self.btt {
            b.add(ev, &self.tasks[ev.task as usize]);
        }
        self.seen[ev.dev as usize] = true;
        self.count += 1;
        self.last_ns = ev.time;
    }

    /// After the last record: the closing snapshot, and the lines read
    /// and not analysed.
    fn finish(&mut self, bad: Vec<BadLine>, skipped: usize) {
        let end = self.last_ns;
        if self.samples.last().map(|s| s.0) != Some(end) || self.samples.len() < 2 {
            self.snapshot(end);
        }
        self.bad = bad;
        self.skipped = skipped;
    }

    /// Whether device `i`'s events are a request queue's.
    pub fn request_based(&self, i: usize) -> bool {
        self.acct.get(i).is_some_and(|a| a.request_based)
    }

    /// What the user should know about the trace: time going backwards,
    /// devices whose completions it lacks (figures left out).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let (n, Some((line, t, before))) = self.backwards {
            out.push(format!(
                "time runs backwards {n} time{} (first at line {line}: {:.9} s after {:.9} s); records were sorted by time",
                if n == 1 { "" } else { "s" },
                t as f64 / 1e9,
                before as f64 / 1e9
            ));
        }
        for (i, a) in self.acct.iter().enumerate() {
            if a.lacks_completions() {
                out.push(format!(
                    "{}: the trace has {} queued bios (Q) and no completions (C) on this device: its iostat figures, in-flight depth and throughput are left out",
                    self.names[i], a.queued
                ));
            }
        }
        out
    }

    fn snapshot(&mut self, at: u64) {
        let all = self.acct.iter().map(|a| a.disk.fields(a.disk.inflight())).collect();
        let s = self.samples.len();
        let shadows = self.shadow.iter().enumerate().filter_map(|(i, a)| a.as_ref().map(|a| (s, i, a.disk.fields(a.disk.inflight()))));
        self.shadow_samples.extend(shadows);
        self.samples.push((at, all));
    }

    /// (name, major, minor) of each device, by id.
    pub fn device_table(&self) -> Vec<(String, u32, u32)> {
        self.devices.iter().zip(&self.names).map(|(d, n)| (n.clone(), d.major, d.minor)).collect()
    }

    /// The devices as the reports show them: those with events of their
    /// own (not those only named as a remap's source).
    pub fn report_input(&self) -> ReportInput<'_> {
        let devices = self
            .devices
            .iter()
            .enumerate()
            .filter(|(i, _)| self.seen[*i])
            .map(|(i, d)| ReportDev { id: i as DevId, name: self.names[i].clone(), major: d.major, minor: d.minor, accounted: !self.acct[i].lacks_completions() })
            .collect();
        ReportInput { devices, samples: &self.samples, intervals: self.intervals, analysis: Some(&self.analysis), btt: self.btt.as_ref() }
    }

    /// The summary, shaped like a simulated run's (`devices`, `reports`,
    /// `iostat_intervals`) plus what was read and skipped.
    pub fn summary(&self, path: &str) -> Value {
        let input = self.report_input();
        let mut devices = Map::new();
        for rd in &input.devices {
            let (i, d) = (rd.id as usize, &self.devices[rd.id as usize]);
            let a = &self.acct[i];
            let per_op: Map<String, Value> = OPS.iter().map(|op| (op.name().to_string(), json!(a.sectors_issued[op_index(*op)]))).collect();
            let mut dev = json!({
                "major": d.major,
                "minor": d.minor,
                "request_based": a.request_based,
                "requests": a.requests,
                "sectors_issued": per_op,
                "unmatched_completions": a.unmatched,
            });
            if rd.accounted {
                dev["diskstats"] = json!(self.samples.last().map(|s| s.1[i].to_vec()).unwrap_or_default());
            } else {
                dev["missing"] = json!("completions");
            }
            report::analysis_json(&input, i as DevId, &mut dev);
            devices.insert(self.names[i].clone(), dev);
        }
        let end = self.samples.last().map_or(0, |s| s.0);
        let other: Map<String, Value> = self.other.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        json!({
            "trace": path,
            "format": self.format,
            "events": self.count,
            "origin_ns": self.origin_ns,
            "duration_ns": end,
            "cpus": self.cpus,
            "devices": devices,
            "iostat_intervals": report::intervals_json(&input),
            "reports": report::reports_json(&input),
            "other_records": other,
            "no_device_records": self.no_device,
            "unknown_rwbs": self.odd_rwbs.iter().map(|o| json!({"line": o.line, "rwbs": o.rwbs})).collect::<Vec<_>>(),
            "bad_lines": self.bad.iter().map(|b| json!({"line": b.line, "text": b.text, "reason": b.reason})).collect::<Vec<_>>(),
            "skipped_lines": self.skipped,
            "warnings": self.warnings(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_major_names() {
        let n = |major, minor| device_name(DevNo { major, minor });
        assert_eq!(n(8, 0), "sda");
        assert_eq!(n(8, 17), "sdb1");
        assert_eq!(n(8, 240), "sdp");
        // Major 65 holds disks 16..31: disk 16 is sdq; disk 26 (minor
        // 10 * 16) is the first two-letter name, sdaa.
        assert_eq!(n(65, 0), "sdq");
        assert_eq!(n(65, 160), "sdaa");
        assert_eq!(n(9, 127), "md127");
        assert_eq!(n(7, 3), "loop3");
        assert_eq!(n(259, 3), "259,3");
    }

    #[test]
    fn bio_based_devices_count_bios_from_queue_to_completion() {
        // md0 (9,0) shows only Q and C: one 64-sector write from 0 to 10 ms.
        // bio_end_io_acct counts it at the end with its latency in whole
        // jiffies (HZ 250: jiffy 0 to jiffy 2 = 8 ms, not 10), and the disk
        // was busy from jiffy 0 to 2: io_ticks 8 ms.
        let text = "  9,0    0        1     0.000000000   500  Q   W 0 + 64 [dd]\n  9,0    0        2     0.010000000     0  C   W 0 + 64 [0]\n";
        let st = analyse(crate::trace::parse::parse_trace(text), None);
        assert_eq!(st.names, ["md0"]);
        let f = st.samples.last().unwrap().1[0];
        assert_eq!((f[4], f[6], f[7], f[8], f[9]), (1, 64, 8, 0, 8));
        assert!(!st.acct[0].request_based);
    }

    #[test]
    fn flush_requests_count_as_flushes() {
        // blkparse prints a flush request as FN: issued at 0, completed
        // 12.5 ms later. diskstats: 1 flush (field 15), 12 ms flushing
        // (field 16, 12.5 ms in whole ms), no read.
        let text = "  8,0    2        1     0.000000000    78  D  FN [kworker/2:1H]\n  8,0    2        2     0.012500000     0  C  FN [0]\n";
        let st = analyse(crate::trace::parse::parse_trace(text), None);
        let f = st.samples.last().unwrap().1[0];
        assert_eq!((f[0], f[15], f[16]), (0, 1, 12));
    }

    #[test]
    fn bio_based_device_without_completions_is_left_out_of_iostat() {
        // md0 queues two bios and the trace has no C for them (md traces a
        // bio's completion only when it was remapped): no iostat figures,
        // no diskstats, and a warning naming the device.
        let text = "  9,0    0        1     0.000000000   500  Q   W 0 + 64 [dd]\n  9,0    0        2     0.010000000   500  Q   W 64 + 64 [dd]\n";
        let st = analyse(crate::trace::parse::parse_trace(text), None);
        let s = st.summary("t");
        let md0 = &s["devices"]["md0"];
        assert!(md0.get("iostat").is_none() && md0.get("diskstats").is_none(), "{md0}");
        assert_eq!(md0["missing"], "completions");
        assert!(!s["reports"]["iostat"].as_str().unwrap().contains("md0"));
        assert!(st.warnings()[0].starts_with("md0: the trace has 2 queued bios (Q) and no completions (C)"), "{:?}", st.warnings());
    }

    #[test]
    fn time_running_backwards_is_a_warning() {
        // Line 2 is 5 ms before line 1.
        let text = "  8,0    0        1     0.010000000   500  D   W 0 + 8 [dd]\n  8,0    0        2     0.005000000   500  D   W 8 + 8 [dd]\n  8,0    0        3     0.020000000     0  C   W 0 + 8 [0]\n";
        let st = analyse(crate::trace::parse::parse_trace(text), None);
        assert_eq!(st.warnings(), ["time runs backwards 1 time (first at line 2: 0.005000000 s after 0.010000000 s); records were sorted by time"]);
    }

    #[test]
    fn rwbs_to_op_and_flags() {
        assert_eq!(rwbs_op("WS"), (Op::Write, req::SYNC));
        assert_eq!(rwbs_op("FWFS"), (Op::Write, req::PREFLUSH | req::FUA | req::SYNC));
        assert_eq!(rwbs_op("RA"), (Op::Read, req::RAHEAD));
        assert_eq!(rwbs_op("DE"), (Op::SecureErase, 0));
        // An unknown letter is ignored: "WZ" reads as "W".
        assert_eq!(rwbs_op("WZ"), (Op::Write, 0));
        assert_eq!(rwbs_op("N"), (Op::Read, 0));
        // A flush request: blkparse's FN, the tracepoints' FF.
        assert_eq!(rwbs_op("FN"), (Op::Flush, req::PREFLUSH));
        assert_eq!(rwbs_op("FF"), (Op::Flush, req::PREFLUSH));
    }
}
