//! Block tracepoints (include/trace/events/block.h, kernel/trace/blktrace.c).
//!
//! The engine emits an [`Event`] wherever the kernel fires a `block_*`
//! tracepoint; sinks turn them into blkparse text ([`blkparse`]), the issued
//! request list ([`requests`]) or an in-memory log ([`EventLog`]).

pub mod align;
pub mod blkparse;
pub mod blkparse_fast;
pub mod blkparse_summary;
pub mod blktrace;
pub mod columns;
pub mod cpu;
pub mod parse;
pub mod parse_thread;
pub mod requests;
pub mod store;
pub mod streams;
pub mod text;

use std::io;

use crate::bio::{req, Op};
use crate::genhd::{DevId, Topology};

/// blkparse action letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `block_bio_queue`
    Queue,
    /// `block_split`
    Split,
    /// `block_bio_remap`
    Remap,
    /// `block_getrq`
    GetRq,
    /// `block_rq_insert`
    Insert,
    /// `block_rq_issue`
    Issue,
    /// `block_rq_complete` / `block_bio_complete`
    Complete,
    /// `block_plug`
    Plug,
    /// `block_unplug`, explicit
    Unplug,
    /// `block_unplug` from schedule
    UnplugTimer,
    /// `block_bio_backmerge` / `block_rq_merge`
    BackMerge,
    /// `block_bio_frontmerge`
    FrontMerge,
    /// `block_rq_requeue`
    Requeue,
}

impl Action {
    /// Every action, in discriminant order.
    pub const ALL: [Action; 13] = [
        Action::Queue,
        Action::Split,
        Action::Remap,
        Action::GetRq,
        Action::Insert,
        Action::Issue,
        Action::Complete,
        Action::Plug,
        Action::Unplug,
        Action::UnplugTimer,
        Action::BackMerge,
        Action::FrontMerge,
        Action::Requeue,
    ];

    pub fn letter(self) -> &'static str {
        match self {
            Action::Queue => "Q",
            Action::Split => "X",
            Action::Remap => "A",
            Action::GetRq => "G",
            Action::Insert => "I",
            Action::Issue => "D",
            Action::Complete => "C",
            Action::Plug => "P",
            Action::Unplug => "U",
            Action::UnplugTimer => "UT",
            Action::BackMerge => "M",
            Action::FrontMerge => "F",
            Action::Requeue => "R",
        }
    }
}

/// One tracepoint firing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: u64,
    /// The device whose trace stream this lands in (the queue's whole disk).
    pub dev: DevId,
    pub action: Action,
    pub op: Op,
    pub flags: u32,
    pub sector: u64,
    pub bytes: u32,
    /// Index into the task table (pid, comm).
    pub task: u32,
    pub error: i32,
    /// X: the remainder's sector; A: the source sector; U: the depth.
    pub arg: u64,
    /// A: the source device.
    pub from_dev: DevId,
}

impl Event {
    pub fn sectors(&self) -> u32 {
        self.bytes >> 9
    }
}

/// rwbs as blkparse rebuilds it from the trace's category bits
/// (`fill_rwbs`): F(lush) D|W|R|N, then F(UA) A S M.
pub fn rwbs(op: Op, flags: u32, bytes: u32) -> String {
    rwbs_of(op, flags, bytes).as_str().to_string()
}

/// [`rwbs`] without an allocation: at most six letters.
#[derive(Clone, Copy)]
pub struct Rwbs {
    letters: [u8; 6],
    len: u8,
}

impl Rwbs {
    pub fn as_bytes(&self) -> &[u8] {
        &self.letters[..self.len as usize]
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).expect("rwbs letters are ASCII")
    }

    #[inline]
    fn push(&mut self, c: u8) {
        self.letters[self.len as usize] = c;
        self.len += 1;
    }
}

/// The letters of [`rwbs`].
#[inline]
pub fn rwbs_of(op: Op, flags: u32, bytes: u32) -> Rwbs {
    let mut s = Rwbs { letters: [0; 6], len: 0 };
    if flags & req::PREFLUSH != 0 || op == Op::Flush {
        s.push(b'F');
    }
    if op.is_discard() {
        s.push(b'D');
    } else if op.is_write() {
        s.push(b'W');
    } else if bytes != 0 {
        s.push(b'R');
    } else {
        s.push(b'N');
    }
    if flags & req::FUA != 0 {
        s.push(b'F');
    }
    if flags & req::RAHEAD != 0 {
        s.push(b'A');
    }
    if flags & req::SYNC != 0 {
        s.push(b'S');
    }
    if flags & req::META != 0 {
        s.push(b'M');
    }
    s
}

/// A process as traces name it.
#[derive(Clone, Debug)]
pub struct Task {
    pub pid: u32,
    pub comm: String,
    /// The CPU the task runs on (where its events are recorded).
    pub cpu: u32,
}

/// Everything a sink needs to render events.
pub struct TraceCtx<'a> {
    pub topo: &'a Topology,
    pub tasks: &'a [Task],
}

pub trait TraceSink {
    fn event(&mut self, ev: &Event, ctx: &TraceCtx) -> io::Result<()>;
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Keeps every event in memory (tests, and the Python API's columns).
#[derive(Default)]
pub struct EventLog {
    pub events: Vec<Event>,
}

impl TraceSink for EventLog {
    fn event(&mut self, ev: &Event, _: &TraceCtx) -> io::Result<()> {
        self.events.push(*ev);
        Ok(())
    }
}

/// Events a run analyses on the engine's thread before the analysis moves
/// to a thread of its own: past the few thousand events of a small
/// scenario, the thread's start costs less than the analysis it takes off
/// the engine's path.
const ANALYSIS_THREAD_AFTER: u64 = 1 << 12;

/// Fans events out to sinks; records the first write error and stops.
#[derive(Default)]
pub struct Tracer {
    /// Anyone listens (a sink, the log or the analysis).
    on: bool,
    sinks: Vec<Box<dyn TraceSink>>,
    pub log: Option<EventLog>,
    /// The compact log the Python API reads (`blkstack.run()`).
    pub store: Option<store::EventStore>,
    /// btt-style analysis and histograms of the events (here before a run
    /// reaches `ANALYSIS_THREAD_AFTER` events and after [`Tracer::finish`]).
    pub analysis: Option<crate::stats::analysis::Analysis>,
    /// The analysis on a thread of its own, meanwhile.
    analysis_thread: Option<crate::stats::analysis_thread::AnalysisThread>,
    /// Events analysed on this thread so far.
    analysed: u64,
    /// btt's own bookkeeping (`--btt`).
    pub btt: Option<crate::stats::btt::Btt>,
    pub error: Option<io::Error>,
    /// Tracing is stopped for now (an untraced scenario step).
    paused: bool,
    /// Anyone but the analysis thread listens.
    others: bool,
    /// The analysis on its thread is the only listener (what a plain
    /// `blkstack run` has after its first events): [`Tracer::emit`] hands
    /// the event to it and looks at nothing else.
    thread_only: bool,
}

impl Tracer {
    pub fn add_sink(&mut self, sink: Box<dyn TraceSink>) {
        self.sinks.push(sink);
        self.listeners_changed();
    }

    /// Keep events in memory too (see [`Tracer::log`]).
    pub fn keep_log(&mut self) {
        self.log = Some(EventLog::default());
        self.listeners_changed();
    }

    /// Keep events compactly too (see [`Tracer::store`]).
    pub fn keep_store(&mut self, keep: store::Keep) {
        self.store = Some(store::EventStore::new(keep));
        self.listeners_changed();
    }

    /// Analyse events (btt stages, merge information, histograms).
    pub fn keep_analysis(&mut self) {
        self.analysis = Some(Default::default());
        self.listeners_changed();
    }

    /// Keep btt's bookkeeping too; `devnos[d]` is device `d`'s number.
    pub fn keep_btt(&mut self, devnos: Vec<(u32, u32)>) {
        self.btt = Some(crate::stats::btt::Btt::new(devnos));
        self.listeners_changed();
    }

    /// Stop (`true`) or resume tracing: nobody hears events meanwhile.
    pub fn pause(&mut self, paused: bool) {
        self.paused = paused;
        self.listeners_changed();
    }

    /// Whether anyone listens, and whether the analysis thread alone does.
    fn listeners_changed(&mut self) {
        let others = !self.sinks.is_empty() || self.log.is_some() || self.store.is_some() || self.analysis.is_some() || self.btt.is_some();
        self.on = !self.paused && (others || self.analysis_thread.is_some());
        self.thread_only = self.on && !others;
        self.others = self.on && others;
    }

    /// A bio merged into a request without an event: the analysis forgets
    /// its 'Q' (see [`crate::stats::analysis::Analysis::untraced_merge`]).
    pub fn untraced_merge(&mut self, dev: crate::genhd::DevId, sector: u64) {
        if let Some(a) = &mut self.analysis {
            a.untraced_merge(dev, sector);
        } else if let Some(t) = &mut self.analysis_thread {
            t.untraced_merge(dev, sector);
        }
    }

    /// A long run's analysis moves to a thread of its own (a short one's
    /// is not worth a thread).
    fn analysis_to_thread(&mut self) {
        let Some(a) = self.analysis.take() else { return };
        match crate::stats::analysis_thread::AnalysisThread::start(a) {
            Ok(t) => self.analysis_thread = Some(t),
            Err(a) => self.analysis = Some(a),
        }
        self.listeners_changed();
    }

    /// Whether anyone listens; callers skip building events otherwise.
    #[inline]
    pub fn active(&self) -> bool {
        self.on
    }

    /// Whether anyone listens for `action`; callers skip building its
    /// event otherwise. The analysis thread alone (a plain run) hears
    /// only the actions the analysis reads
    /// ([`crate::stats::analysis::READS`]), so a plain run builds no 'P',
    /// 'U' or 'A' for it to pass over. For a constant action this is one
    /// test, as [`Tracer::active`] is.
    #[inline(always)]
    pub fn hears(&self, action: Action) -> bool {
        if crate::stats::analysis::READS & 1 << action as u16 != 0 {
            self.on
        } else {
            self.others
        }
    }

    /// Whether the analysis thread is the only listener: the engine's
    /// path then hands it each event directly ([`Tracer::to_thread`],
    /// from [`crate::submit::BlockCore::emit`]).
    #[inline(always)]
    pub fn thread_only(&self) -> bool {
        self.thread_only
    }

    /// Hand `ev` to the analysis thread (when [`Tracer::thread_only`]).
    #[inline(always)]
    pub fn to_thread(&mut self, ev: &Event) {
        if let Some(t) = &mut self.analysis_thread {
            t.add(ev);
        }
    }

    /// Every listener hears the event, in a fixed order (out of line: a
    /// plain run's events take [`Tracer::to_thread`] instead).
    #[inline(never)]
    pub fn emit(&mut self, ev: Event, ctx: &TraceCtx) {
        if let Some(log) = &mut self.log {
            log.events.push(ev);
        }
        if let Some(store) = &mut self.store {
            store.push(&ev);
        }
        if let Some(a) = &mut self.analysis {
            a.add(&ev);
            self.analysed += 1;
            if self.analysed == ANALYSIS_THREAD_AFTER {
                self.analysis_to_thread();
            }
        } else if let Some(t) = &mut self.analysis_thread {
            t.add(&ev);
        }
        if let Some(b) = &mut self.btt {
            b.add(&ev, &ctx.tasks[ev.task as usize]);
        }
        if self.error.is_some() {
            return;
        }
        for s in &mut self.sinks {
            if let Err(e) = s.event(&ev, ctx) {
                self.error = Some(e);
                return;
            }
        }
    }

    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(t) = self.analysis_thread.take() {
            self.analysis = Some(t.finish());
            self.listeners_changed();
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for s in &mut self.sinks {
            s.finish()?;
        }
        Ok(())
    }
}
