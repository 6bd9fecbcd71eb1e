//! Reading block traces: blkparse's default text output and the kernel's
//! ftrace text for the `block_*` tracepoints, into one record type.
//!
//! * blkparse (blkparse_fmt.c `process_default`, which [`super::blkparse`]
//!   writes): a header `"%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s "` — device,
//!   CPU, sequence, seconds.nanoseconds, pid, action, RWBS — then a tail that
//!   depends on the action: `sector + n [comm]` (Q G I D M F S B),
//!   `sector + n [error]` (C R), `[comm]` (P), `[comm] depth` (U UT),
//!   `sector + n <- (maj,min) from` (A), `sector / new [comm]` (X), message
//!   text (m); `(elapsed)` with `-t`; `bytes (cdb) [comm]` for passthrough.
//!   After the events blkparse prints a summary ("CPU0 (8,0):", "Total
//!   (8,0):", "Throughput (R/W): ...", "Events (8,0): N entries", "Skips:
//!   ..."), which is skipped.
//! * ftrace (include/trace/events/block.h `TP_printk`): a line prefix
//!   `comm-pid [cpu] flags seconds.micros: event: ` and the event's fields.
//!   6.12 prints the request's I/O priority (`class,hint,level`, e.g.
//!   `none,0,0`) before the bracket in `block_rq_{requeue,complete,error,
//!   insert,issue,merge}` and `block_io_{start,done}`; 6.1 does not. Both
//!   are read. `block_plug`/`block_unplug` carry no device.
//!
//! Odd lines never stop the reader: blank lines, summaries, ftrace header
//! comments, lost-event notes and other tracepoints are counted as skipped;
//! anything else that does not parse is reported with its line number.
//! Unknown RWBS letters are kept as they are ([`Rwbs::unknown`] counts them).

use std::fmt;

use super::Action;

/// A device number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevNo {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for DevNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.major, self.minor)
    }
}

/// What happened: the model's actions, plus the tracepoints it has none for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceAction {
    /// One of the model's actions (blkparse's letters).
    Model(Action),
    /// B: `block_bio_bounce`
    Bounce,
    /// S: `block_sleeprq` (before 5.x)
    Sleep,
    /// m: a message (`blk_add_trace_msg`)
    Message,
    /// `block_rq_error`
    Error,
    /// `block_io_start` (6.5+)
    IoStart,
    /// `block_io_done` (6.5+)
    IoDone,
}

impl TraceAction {
    /// From blkparse's action column ("T", the old unplug-timer letter, as "UT").
    pub fn from_blkparse(s: &str) -> Option<TraceAction> {
        if let Some(&a) = Action::ALL.iter().find(|a| a.letter() == s) {
            return Some(TraceAction::Model(a));
        }
        Some(match s {
            "T" => TraceAction::Model(Action::UnplugTimer),
            "B" => TraceAction::Bounce,
            "S" => TraceAction::Sleep,
            "m" => TraceAction::Message,
            _ => return None,
        })
    }

    /// The name the record kind goes by: blkparse's letter, or the
    /// tracepoint's name for those blkparse has none for.
    pub fn name(self) -> &'static str {
        match self {
            TraceAction::Model(a) => a.letter(),
            TraceAction::Bounce => "B",
            TraceAction::Sleep => "S",
            TraceAction::Message => "m",
            TraceAction::Error => "block_rq_error",
            TraceAction::IoStart => "block_io_start",
            TraceAction::IoDone => "block_io_done",
        }
    }

    /// The model's [`Action`], where it has one.
    pub fn model(self) -> Option<Action> {
        match self {
            TraceAction::Model(a) => Some(a),
            _ => None,
        }
    }

    /// The inverse of [`TraceAction::model`].
    pub fn from_model(a: Action) -> TraceAction {
        TraceAction::Model(a)
    }
}

/// Action-specific fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extra {
    None,
    /// A: where the bio came from; `nr_bios` only from `block_rq_remap`.
    Remap { from: DevNo, from_sector: u64, nr_bios: Option<u32> },
    /// X: the remainder's first sector.
    Split { new_sector: u64 },
    /// U / UT: requests released.
    Unplug { depth: u32 },
    /// m: the message text.
    Message(String),
}

/// One trace line, whichever format it came in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Line number in the input (1-based).
    pub line: usize,
    pub time_ns: u64,
    /// `None` for ftrace's `block_plug`/`block_unplug`, which name no device.
    pub dev: Option<DevNo>,
    pub cpu: u32,
    /// blkparse's per-device sequence number (ftrace has none).
    pub seq: Option<u64>,
    pub pid: u32,
    pub action: TraceAction,
    pub rwbs: String,
    pub sector: Option<u64>,
    pub nr_sectors: u32,
    /// The task name in brackets (ftrace: else the line's task).
    pub comm: Option<String>,
    /// C / R / `block_rq_error`: the `[error]` field.
    pub error: Option<i32>,
    /// Request bytes (ftrace `block_rq_*`; blkparse passthrough).
    pub bytes: Option<u64>,
    /// The `(...)` command / CDB text, when printed.
    pub cmd: Option<String>,
    /// 6.12's `class,hint,level` I/O priority.
    pub ioprio: Option<String>,
    /// blkparse `-t`: the `(elapsed)` field, in nanoseconds.
    pub elapsed_ns: Option<u64>,
    pub extra: Extra,
}

impl TraceRecord {
    /// A record of `action` with nothing else known yet (line 0).
    pub fn blank(action: TraceAction) -> Self {
        Self::new(0, action)
    }

    fn new(line: usize, action: TraceAction) -> Self {
        TraceRecord {
            line,
            time_ns: 0,
            dev: None,
            cpu: 0,
            seq: None,
            pid: 0,
            action,
            rwbs: String::new(),
            sector: None,
            nr_sectors: 0,
            comm: None,
            error: None,
            bytes: None,
            cmd: None,
            ioprio: None,
            elapsed_ns: None,
            extra: Extra::None,
        }
    }
}

/// RWBS letters decoded (blk_fill_rwbs / blkparse `fill_rwbs`):
/// `[F]` preflush, then the op (`W`, `R`, `D`, `DE`, `F` flush, `N`), then
/// `F` FUA, `A` readahead, `S` sync, `M` meta.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rwbs {
    pub preflush: bool,
    pub write: bool,
    pub read: bool,
    pub discard: bool,
    pub secure_erase: bool,
    pub flush: bool,
    pub fua: bool,
    pub rahead: bool,
    pub sync: bool,
    pub meta: bool,
    /// Letters not in the kernel's or blkparse's alphabet.
    pub unknown: u32,
}

impl Rwbs {
    pub fn decode(s: &str) -> Rwbs {
        let mut r = Rwbs::default();
        let mut op_seen = false;
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, op_seen) {
                ('F', false) if chars.peek().is_some_and(|n| "WRDFN".contains(*n)) => r.preflush = true,
                ('F', false) => (r.flush, op_seen) = (true, true),
                ('W', false) => (r.write, op_seen) = (true, true),
                ('R', false) => (r.read, op_seen) = (true, true),
                ('N', false) => op_seen = true,
                ('D', false) => (r.discard, op_seen) = (true, true),
                ('E', true) if r.discard => r.secure_erase = true,
                ('F', true) => r.fua = true,
                ('A', true) => r.rahead = true,
                ('S', true) => r.sync = true,
                ('M', true) => r.meta = true,
                _ => r.unknown += 1,
            }
        }
        r
    }
}

/// A line that looked like an event and did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.reason, self.text)
    }
}

/// Everything read from a trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceParse {
    pub records: Vec<TraceRecord>,
    pub bad: Vec<BadLine>,
    /// Blank lines, summaries, headers, lost-event notes, other tracepoints.
    pub skipped: usize,
}

/// Read a whole trace; lines of both formats may be mixed.
pub fn parse_trace(text: &str) -> TraceParse {
    let mut out = TraceParse::default();
    for line in TraceLines::new(text.as_bytes()) {
        match line.expect("reading from memory") {
            Line::Record(r) => out.records.push(r),
            Line::Skipped => out.skipped += 1,
            Line::Bad(b) => out.bad.push(b),
        }
    }
    out
}

/// What one line of a trace turned out to be.
#[derive(Debug)]
pub enum Line<R = TraceRecord> {
    Record(R),
    /// Blank, a header, a summary, a lost-event note, another tracepoint.
    Skipped,
    Bad(BadLine),
}

/// The lines of a text trace read one at a time from `src`, as
/// [`parse_trace`] reads them, holding one line in memory: a trace of any
/// length is read in the memory of its longest line. Lines in blkparse's
/// common shapes are read byte by byte into one reused record
/// ([`super::blkparse_fast`]); the others by [`classify`].
pub struct TraceLines<R: std::io::BufRead> {
    reader: LineReader<R>,
    rec: TraceRecord,
}

impl<R: std::io::BufRead> TraceLines<R> {
    pub fn new(src: R) -> Self {
        TraceLines { reader: LineReader::new(src), rec: TraceRecord::blank(TraceAction::Message) }
    }

    /// The next line; a record is lent until the next call.
    pub fn next_line(&mut self) -> Option<std::io::Result<Line<&TraceRecord>>> {
        Some(self.reader.next_into(&mut self.rec)?.map(|line| match line {
            Line::Record(()) => Line::Record(&self.rec),
            Line::Skipped => Line::Skipped,
            Line::Bad(b) => Line::Bad(b),
        }))
    }
}

/// What reads [`TraceLines`]' lines, each record into a record the caller
/// holds (the one [`TraceLines`] lends, or a slot of a batch
/// [`super::parse_thread`] hands over): the source, the line count and
/// whether blkparse's closing summary is being read.
pub struct LineReader<R: std::io::BufRead> {
    src: R,
    buf: Vec<u8>,
    n: usize,
    in_summary: bool,
    spare: super::blkparse_fast::Spare,
}

impl<R: std::io::BufRead> LineReader<R> {
    pub fn new(src: R) -> Self {
        LineReader { src, buf: Vec::with_capacity(256), n: 0, in_summary: false, spare: Default::default() }
    }

    /// The next line, a record read into `rec` (left in any state when the
    /// line is not one). A line in blkparse's common shapes that lies whole
    /// in the reader's buffer is read where it lies; any other is copied
    /// out first.
    pub fn next_into(&mut self, rec: &mut TraceRecord) -> Option<std::io::Result<Line<()>>> {
        let held = match self.src.fill_buf() {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        if held.is_empty() {
            return None;
        }
        self.buf.clear();
        if let Some(nl) = memchr::memchr(b'\n', held) {
            if super::blkparse_fast::read_line(without_line_end(&held[..nl + 1]), rec, &mut self.spare) {
                self.src.consume(nl + 1);
                return Some(Ok(self.fast_record(rec)));
            }
            self.buf.extend_from_slice(&held[..nl + 1]);
            self.src.consume(nl + 1);
        } else {
            if let Err(e) = self.src.read_until(b'\n', &mut self.buf) {
                return Some(Err(e));
            }
            if super::blkparse_fast::read_line(without_line_end(&self.buf), rec, &mut self.spare) {
                return Some(Ok(self.fast_record(rec)));
            }
        }
        self.n += 1;
        let raw = String::from_utf8_lossy(without_line_end(&self.buf));
        Some(Ok(match classify(raw.trim_end(), self.n, &mut self.in_summary) {
            Ok(Some(r)) => {
                *rec = r;
                Line::Record(())
            }
            Ok(None) => Line::Skipped,
            Err(reason) => Line::Bad(BadLine { line: self.n, text: raw.into_owned(), reason }),
        }))
    }

    /// The record [`super::blkparse_fast`] has just read into `rec`, as the
    /// next line.
    fn fast_record(&mut self, rec: &mut TraceRecord) -> Line<()> {
        self.n += 1;
        rec.line = self.n;
        self.in_summary = false;
        Line::Record(())
    }
}

/// As str::lines: without the "\n" or "\r\n" that ends the line.
fn without_line_end(line: &[u8]) -> &[u8] {
    match line.strip_suffix(b"\n") {
        Some(l) => l.strip_suffix(b"\r").unwrap_or(l),
        None => line,
    }
}

impl<R: std::io::BufRead> Iterator for TraceLines<R> {
    type Item = std::io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_line()?.map(|line| match line {
            Line::Record(r) => Line::Record(r.clone()),
            Line::Skipped => Line::Skipped,
            Line::Bad(b) => Line::Bad(b),
        }))
    }
}

/// A record, `None` for a line to skip, or why an event-looking line is bad.
fn classify(line: &str, n: usize, in_summary: &mut bool) -> Result<Option<TraceRecord>, String> {
    if line.trim().is_empty() || line.starts_with('#') || is_lost_events(line) {
        return Ok(None);
    }
    let err = match parse_blkparse_line(line, n) {
        Ok(r) => {
            *in_summary = false;
            return Ok(Some(r));
        }
        Err(e) => e,
    };
    if let Some(ev) = ftrace_event(line) {
        return parse_ftrace(line, ev, n);
    }
    if *in_summary || is_summary_start(line) {
        *in_summary = true;
        return Ok(None);
    }
    Err(err)
}

/// blkparse's end-of-run report and its "Input file ... added" notes.
fn is_summary_start(line: &str) -> bool {
    let cpu = line.strip_prefix("CPU").is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && r.contains(" ("));
    cpu || ["Total (", "Throughput (", "Events (", "Skips:", "Input file "].iter().any(|p| line.starts_with(p))
}

/// ftrace's "CPU:2 [LOST 12 EVENTS]".
fn is_lost_events(line: &str) -> bool {
    line.starts_with("CPU:") && line.contains("[LOST")
}

// ---------------------------------------------------------------------------
// A cursor over the text of one line

struct Cur<'a>(&'a str);

impl<'a> Cur<'a> {
    fn ws(&mut self) {
        self.0 = self.0.trim_start();
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn lit(&mut self, s: &str) -> bool {
        match self.0.strip_prefix(s) {
            Some(r) => {
                self.0 = r;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, s: &str) -> Result<(), String> {
        if self.lit(s) {
            Ok(())
        } else {
            Err(format!("expected '{}' at '{}'", s.trim(), self.0))
        }
    }

    /// A whitespace-separated word.
    fn word(&mut self) -> Option<&'a str> {
        self.ws();
        let end = self.0.find(char::is_whitespace).unwrap_or(self.0.len());
        if end == 0 {
            return None;
        }
        let (w, r) = self.0.split_at(end);
        self.0 = r;
        Some(w)
    }

    /// An unsigned decimal number, if one starts here.
    fn num(&mut self) -> Option<u64> {
        let end = self.0.find(|c: char| !c.is_ascii_digit()).unwrap_or(self.0.len());
        let v = self.0[..end].parse().ok()?;
        self.0 = &self.0[end..];
        Some(v)
    }

    fn need_num(&mut self, what: &str) -> Result<u64, String> {
        self.num().ok_or_else(|| format!("expected {what} at '{}'", self.0))
    }

    /// `(...)` up to the first ')'.
    fn paren(&mut self) -> Option<&'a str> {
        let inner = self.0.strip_prefix('(')?;
        let end = inner.find(')')?;
        self.0 = &inner[end + 1..];
        Some(&inner[..end])
    }

    /// `[...]` up to the last ']' (a task name may contain ']').
    fn bracket(&mut self) -> Option<&'a str> {
        let inner = self.0.strip_prefix('[')?;
        let end = inner.rfind(']')?;
        self.0 = &inner[end + 1..];
        Some(&inner[..end])
    }

    fn need_bracket(&mut self) -> Result<&'a str, String> {
        self.bracket().ok_or_else(|| format!("expected [...] at '{}'", self.0))
    }

    /// `maj,min`.
    fn devno(&mut self) -> Result<DevNo, String> {
        let w = self.word().ok_or("missing device")?;
        parse_devno(w).ok_or_else(|| format!("'{w}' is not a device number"))
    }

    fn end(&mut self) -> Result<(), String> {
        self.ws();
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("unexpected '{}'", self.0))
        }
    }
}

fn parse_devno(w: &str) -> Option<DevNo> {
    let (a, b) = w.split_once(',')?;
    Some(DevNo { major: a.parse().ok()?, minor: b.parse().ok()? })
}

fn to_u32(v: u64, what: &str) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("{what} {v} is too large"))
}

fn to_i32(s: &str) -> Result<i32, String> {
    s.trim().parse().map_err(|_| format!("'{s}' is not an error number"))
}

/// `seconds.fraction` (any number of fraction digits up to 9) in nanoseconds;
/// a plain integer is taken as nanoseconds (ftrace counter clocks).
fn parse_time(s: &str) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a time");
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    if sec.is_empty() || frac.len() > 9 || !sec.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let sec: u64 = sec.parse().map_err(|_| bad())?;
    if !s.contains('.') {
        return Ok(sec);
    }
    let ns: u64 = if frac.is_empty() { 0 } else { frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32) };
    sec.checked_mul(1_000_000_000).and_then(|t| t.checked_add(ns)).ok_or_else(bad)
}

// ---------------------------------------------------------------------------
// blkparse

/// One line of blkparse's default output.
pub fn parse_blkparse_line(line: &str, n: usize) -> Result<TraceRecord, String> {
    let mut c = Cur(line);
    let dev = c.devno()?;
    let cpu = to_u32(word_num(&mut c, "CPU")?, "CPU")?;
    let seq = word_num(&mut c, "sequence")?;
    let time_ns = parse_time(c.word().ok_or("missing time")?)?;
    let pid = to_u32(word_num(&mut c, "pid")?, "pid")?;
    let act = c.word().ok_or("missing action")?;
    let action = TraceAction::from_blkparse(act).ok_or_else(|| format!("unknown action '{act}'"))?;
    let rwbs = c.word().ok_or("missing RWBS")?;
    let mut r = TraceRecord::new(n, action);
    (r.dev, r.cpu, r.seq, r.time_ns, r.pid, r.rwbs) = (Some(dev), cpu, Some(seq), time_ns, pid, rwbs.to_string());
    c.ws();
    blkparse_tail(&mut r, &mut c)?;
    Ok(r)
}

fn word_num(c: &mut Cur, what: &str) -> Result<u64, String> {
    let w = c.word().ok_or_else(|| format!("missing {what}"))?;
    w.parse().map_err(|_| format!("'{w}' is not a {what}"))
}

/// The part after the RWBS column, by action (`process_default`).
fn blkparse_tail(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    use TraceAction as T;
    match r.action {
        T::Model(Action::Complete) | T::Model(Action::Requeue) => bp_completion(r, c),
        T::Model(Action::Issue) | T::Model(Action::Insert) | T::Model(Action::Queue) | T::Bounce => bp_with_pc(r, c),
        T::Model(Action::BackMerge) | T::Model(Action::FrontMerge) | T::Model(Action::GetRq) | T::Sleep => bp_range_comm(r, c),
        T::Model(Action::Plug) => bp_plug(r, c),
        T::Model(Action::Unplug) | T::Model(Action::UnplugTimer) => bp_unplug(r, c),
        T::Model(Action::Remap) => bp_remap(r, c),
        T::Model(Action::Split) => bp_split(r, c),
        T::Message => {
            r.extra = Extra::Message(c.0.to_string());
            Ok(())
        }
        T::Error | T::IoStart | T::IoDone => Err("not a blkparse action".to_string()),
    }
}

/// `sector[ + n]`, if a number starts here.
fn sector_range(r: &mut TraceRecord, c: &mut Cur) -> Result<bool, String> {
    let Some(s) = c.num() else { return Ok(false) };
    r.sector = Some(s);
    if c.lit(" + ") {
        r.nr_sectors = to_u32(c.need_num("sector count")?, "sector count")?;
    }
    Ok(true)
}

/// `(elapsed)` after a range (blkparse -t).
fn elapsed(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    c.ws();
    if let Some(p) = c.paren() {
        r.elapsed_ns = Some(p.trim().parse().map_err(|_| format!("'{p}' is not an elapsed time"))?);
    }
    c.ws();
    Ok(())
}

/// C, R: `sector + n [err]`, `sector [err]`, or passthrough `(cdb) [err]`.
fn bp_completion(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    if sector_range(r, c)? {
        elapsed(r, c)?;
    } else if let Some(p) = c.paren() {
        r.cmd = Some(p.to_string());
        c.ws();
    }
    // blkparse prints the __u16 field: 65531 is -EIO.
    let e = to_i32(c.need_bracket()?)?;
    r.error = Some(if (32768..=65535).contains(&e) { e as u16 as i16 as i32 } else { e });
    c.end()
}

/// D, I, Q, B: `sector + n [comm]`, `[comm]`, `(elapsed) [comm]`, or
/// passthrough `bytes (cdb) [comm]`.
fn bp_with_pc(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    if let Some(v) = c.num() {
        if c.lit(" + ") {
            r.sector = Some(v);
            r.nr_sectors = to_u32(c.need_num("sector count")?, "sector count")?;
            elapsed(r, c)?;
        } else {
            r.bytes = Some(v);
            c.ws();
            r.cmd = c.paren().map(str::to_string);
            c.ws();
        }
    } else {
        elapsed(r, c)?;
    }
    r.comm = Some(c.need_bracket()?.to_string());
    c.end()
}

/// M, F, G, S: `sector + n [comm]` or `[comm]`.
fn bp_range_comm(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    if sector_range(r, c)? {
        c.ws();
    }
    r.comm = Some(c.need_bracket()?.to_string());
    c.end()
}

fn bp_plug(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    r.comm = Some(c.need_bracket()?.to_string());
    c.end()
}

/// U, UT: `[comm] depth`.
fn bp_unplug(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    r.comm = Some(unplug_comm(c)?.to_string());
    c.ws();
    r.extra = Extra::Unplug { depth: to_u32(c.need_num("depth")?, "depth")? };
    c.end()
}

/// `[comm] depth`: the bracket ends at the last ']' before the depth.
fn unplug_comm<'a>(c: &mut Cur<'a>) -> Result<&'a str, String> {
    let s = c.0;
    let close = s.rfind(']').filter(|_| s.starts_with('[')).ok_or_else(|| format!("expected [comm] at '{s}'"))?;
    c.0 = &s[close + 1..];
    Ok(&s[1..close])
}

/// A: `sector + n <- (maj,min) from_sector`.
fn bp_remap(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    remap_fields(r, c)?;
    c.end()
}

fn remap_fields(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    r.sector = Some(c.need_num("sector")?);
    c.expect(" + ")?;
    r.nr_sectors = to_u32(c.need_num("sector count")?, "sector count")?;
    c.expect(" <- ")?;
    let from = c.paren().and_then(parse_devno).ok_or("expected (maj,min)")?;
    c.ws();
    let from_sector = c.need_num("source sector")?;
    r.extra = Extra::Remap { from, from_sector, nr_bios: None };
    Ok(())
}

/// X: `sector / new [comm]`.
fn bp_split(r: &mut TraceRecord, c: &mut Cur) -> Result<(), String> {
    r.sector = Some(c.need_num("sector")?);
    c.expect(" / ")?;
    r.extra = Extra::Split { new_sector: c.need_num("new sector")? };
    c.ws();
    r.comm = Some(c.need_bracket()?.to_string());
    c.end()
}

// ---------------------------------------------------------------------------
// ftrace

/// The event name if this is an ftrace line (`...: name: fields`).
fn ftrace_event(line: &str) -> Option<&str> {
    let (_, after_cpu) = ftrace_prefix(line)?;
    let mut c = Cur(after_cpu);
    let mut ts = c.word()?;
    if !ts.ends_with(':') {
        ts = c.word()?; // the flags column (irq-info) came first
    }
    if !ts.ends_with(':') {
        return None;
    }
    let ev = c.word()?;
    ev.strip_suffix(':')
}

/// Split `comm-pid [(tgid)] [cpu]` off; returns ((comm, pid, cpu), rest).
/// Only the first few '[' are tried (a task name rarely holds one).
fn ftrace_prefix(line: &str) -> Option<((&str, u32, u32), &str)> {
    for (i, _) in line.match_indices('[').take(8) {
        let Some((cpu, rest)) = cpu_field(&line[i + 1..]) else { continue };
        if let Some((comm, pid)) = task_field(&line[..i]) {
            return Some(((comm, pid, cpu), rest));
        }
    }
    None
}

/// `123]` → (123, rest).
fn cpu_field(s: &str) -> Option<(u32, &str)> {
    let end = s.find(']')?;
    let cpu = s[..end].parse().ok()?;
    Some((cpu, &s[end + 1..]))
}

/// `   comm-pid` or `comm-pid (  tgid)` → (comm, pid).
fn task_field(s: &str) -> Option<(&str, u32)> {
    let mut s = s.trim_end();
    if s.ends_with(')') {
        s = s[..s.rfind('(')?].trim_end(); // record-tgid column
    }
    let dash = s.rfind('-')?;
    let pid = s[dash + 1..].parse().ok()?;
    Some((s[..dash].trim_start(), pid))
}

/// One ftrace line whose event is `ev`.
fn parse_ftrace(line: &str, ev: &str, n: usize) -> Result<Option<TraceRecord>, String> {
    let Some(action) = ftrace_action(ev) else { return Ok(None) };
    let ((comm, pid, cpu), rest) = ftrace_prefix(line).ok_or("bad ftrace prefix")?;
    let (head, fields) = rest.split_once(&format!(" {ev}:")).ok_or("missing event name")?;
    let ts = head.split_whitespace().last().and_then(|t| t.strip_suffix(':')).ok_or("missing timestamp")?;
    let mut r = TraceRecord::new(n, action);
    (r.time_ns, r.pid, r.cpu) = (parse_time(ts)?, pid, cpu);
    let mut c = Cur(fields.trim_start());
    ftrace_fields(&mut r, ev, &mut c)?;
    if r.comm.is_none() {
        r.comm = Some(comm.to_string());
    }
    Ok(Some(r))
}

/// Tracepoint name → action; `None` for tracepoints that are not block I/O
/// (`block_touch_buffer`, `block_dirty_buffer`, anything not `block_*`).
fn ftrace_action(ev: &str) -> Option<TraceAction> {
    use TraceAction as T;
    Some(match ev {
        "block_bio_queue" => T::Model(Action::Queue),
        "block_split" => T::Model(Action::Split),
        "block_bio_remap" | "block_rq_remap" => T::Model(Action::Remap),
        "block_getrq" => T::Model(Action::GetRq),
        "block_rq_insert" => T::Model(Action::Insert),
        "block_rq_issue" => T::Model(Action::Issue),
        "block_rq_complete" | "block_bio_complete" => T::Model(Action::Complete),
        "block_plug" => T::Model(Action::Plug),
        "block_unplug" => T::Model(Action::Unplug),
        "block_bio_backmerge" | "block_rq_merge" => T::Model(Action::BackMerge),
        "block_bio_frontmerge" => T::Model(Action::FrontMerge),
        "block_rq_requeue" => T::Model(Action::Requeue),
        "block_bio_bounce" => T::Bounce,
        "block_sleeprq" => T::Sleep,
        "block_rq_error" => T::Error,
        "block_io_start" => T::IoStart,
        "block_io_done" => T::IoDone,
        _ => return None,
    })
}

/// The fields after `event:`, by event class (TP_printk in block.h).
fn ftrace_fields(r: &mut TraceRecord, ev: &str, c: &mut Cur) -> Result<(), String> {
    match ev {
        "block_plug" => bp_plug(r, c),
        "block_unplug" => bp_unplug(r, c),
        _ => {
            r.dev = Some(c.devno()?);
            r.rwbs = c.word().ok_or("missing RWBS")?.to_string();
            c.ws();
            ftrace_dev_fields(r, ev, c)
        }
    }
}

fn ftrace_dev_fields(r: &mut TraceRecord, ev: &str, c: &mut Cur) -> Result<(), String> {
    match ev {
        "block_rq_requeue" | "block_rq_complete" | "block_rq_error" => ft_rq(r, c, false, true),
        "block_rq_insert" | "block_rq_issue" | "block_rq_merge" | "block_io_start" | "block_io_done" => ft_rq(r, c, true, false),
        "block_bio_complete" => {
            sector_range(r, c)?;
            c.ws();
            r.error = Some(to_i32(c.need_bracket()?)?);
            c.end()
        }
        "block_split" => bp_split(r, c),
        "block_bio_remap" => bp_remap(r, c),
        "block_rq_remap" => {
            remap_fields(r, c)?;
            c.ws();
            let nr = to_u32(c.need_num("bio count")?, "bio count")?;
            if let Extra::Remap { nr_bios, .. } = &mut r.extra {
                *nr_bios = Some(nr);
            }
            c.end()
        }
        _ => bp_range_comm(r, c), // block_bio class: "%llu + %u [%s]"
    }
}

/// `block_rq` / `block_rq_completion` / requeue: `[bytes ](cmd) sector + n
/// [class,hint,level] [comm|error]`.
fn ft_rq(r: &mut TraceRecord, c: &mut Cur, bytes: bool, error: bool) -> Result<(), String> {
    if bytes {
        r.bytes = Some(c.need_num("bytes")?);
        c.ws();
    }
    r.cmd = Some(c.paren().ok_or("expected (cmd)")?.to_string());
    c.ws();
    sector_range(r, c)?;
    c.ws();
    if !c.0.starts_with('[') && !c.is_empty() {
        r.ioprio = c.word().map(str::to_string); // 6.12: "none,0,0"
        c.ws();
    }
    let b = c.need_bracket()?;
    if error {
        r.error = Some(to_i32(b)?);
    } else {
        r.comm = Some(b.to_string());
    }
    c.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bio::{req, Op};
    use crate::genhd::{DevId, DiskKind, Driver, Queue, Topology};
    use crate::limits::{resolve, LimitsModel, SysfsWrites};
    use crate::trace::blkparse::format_event;
    use crate::trace::{rwbs, Event, Task, TraceCtx};
    use proptest::prelude::*;

    fn queue() -> Queue {
        let (limits, attrs) = resolve(&DiskKind::Sata.driver_limits(&crate::profile::profile("6.12").unwrap().behaviour), &SysfsWrites::default(), LimitsModel::Legacy, 2560).unwrap();
        Queue { limits, attrs }
    }

    /// sda (8,0) with sda1 (8,1); a second SATA disk sdb (8,16).
    fn topo() -> Topology {
        let mut t = Topology::default();
        let sda = t.add_disk("sda", DiskKind::Sata, 1 << 24, queue(), Driver::Mq(0));
        t.add_partition(sda, "sda1", 1, 2048, 1 << 20);
        t.add_disk("sdb", DiskKind::Sata, 1 << 24, queue(), Driver::Mq(1));
        t
    }

    fn tasks() -> Vec<Task> {
        vec![Task { pid: 843, comm: "dd".into(), cpu: 0 }, Task { pid: 0, comm: "swapper/0".into(), cpu: 0 }, Task { pid: 77, comm: "kworker/u8:2 x]".into(), cpu: 0 }]
    }

    /// What the parser must read back from `format_event(ev)`: the fields
    /// blkparse prints for that action (process_default).
    fn expected(ev: &Event, seq: u64, line: usize, ctx: &TraceCtx) -> TraceRecord {
        let d = ctx.topo.dev(ev.dev);
        let task = &ctx.tasks[ev.task as usize];
        let mut r = TraceRecord::new(line, TraceAction::from_model(ev.action));
        r.time_ns = ev.time;
        r.dev = Some(DevNo { major: d.major, minor: d.minor });
        r.seq = Some(seq);
        r.pid = task.pid;
        r.rwbs = rwbs(ev.op, ev.flags, ev.bytes);
        let n = ev.sectors();
        let comm = Some(task.comm.clone());
        match ev.action {
            Action::Complete | Action::Requeue => {
                (r.sector, r.nr_sectors, r.error) = (Some(ev.sector), n, Some(ev.error));
            }
            Action::Plug => r.comm = comm,
            Action::Unplug | Action::UnplugTimer => (r.comm, r.extra) = (comm, Extra::Unplug { depth: ev.arg as u32 }),
            Action::Remap => {
                let f = ctx.topo.dev(ev.from_dev);
                let from = DevNo { major: f.major, minor: f.minor };
                (r.sector, r.nr_sectors) = (Some(ev.sector), n);
                r.extra = Extra::Remap { from, from_sector: ev.arg, nr_bios: None };
            }
            Action::Split => (r.sector, r.comm, r.extra) = (Some(ev.sector), comm, Extra::Split { new_sector: ev.arg }),
            _ if n == 0 => r.comm = comm,
            _ => (r.sector, r.nr_sectors, r.comm) = (Some(ev.sector), n, comm),
        }
        r
    }

    fn event(action: Action, op: Op, flags: u32, sector: u64, bytes: u32) -> Event {
        Event { time: 0, dev: 0, action, op, flags, sector, bytes, task: 0, error: 0, arg: 0, from_dev: 0 }
    }

    fn round_trip(events: &[Event]) {
        let (topo, tasks) = (topo(), tasks());
        let ctx = TraceCtx { topo: &topo, tasks: &tasks };
        let mut text = Vec::new();
        for (i, ev) in events.iter().enumerate() {
            format_event(ev, i as u64 + 1, &ctx, &mut text).unwrap();
        }
        let text = String::from_utf8(text).unwrap();
        let got = parse_trace(&text);
        assert!(got.bad.is_empty(), "{:?}", got.bad);
        let want: Vec<TraceRecord> = events.iter().enumerate().map(|(i, ev)| expected(ev, i as u64 + 1, i + 1, &ctx)).collect();
        assert_eq!(got.records, want, "\n{text}");
    }

    #[test]
    fn every_action_round_trips() {
        let mut evs = Vec::new();
        for (i, a) in Action::ALL.iter().enumerate() {
            let mut e = event(*a, Op::Write, req::SYNC | req::FUA, 2048 + i as u64, 4096);
            (e.time, e.task, e.arg, e.error) = (1_000_000_007 * i as u64, (i % 3) as u32, 4 + i as u64, -(i as i32));
            (e.dev, e.from_dev) = (if *a == Action::Remap { 0 } else { (i % 3) as DevId }, 1);
            evs.push(e);
        }
        // Zero-length forms: a flush issue prints "[comm]", its completion "sector [err]".
        evs.push(event(Action::Issue, Op::Flush, req::PREFLUSH, 0, 0));
        evs.push(event(Action::Complete, Op::Flush, req::PREFLUSH, 0, 0));
        evs.push(event(Action::Queue, Op::Discard, 0, 1 << 40, !511u32));
        round_trip(&evs);
    }

    fn arb_event() -> impl Strategy<Value = Event> {
        let ops = prop::sample::select(vec![Op::Read, Op::Write, Op::Flush, Op::Discard, Op::SecureErase, Op::WriteZeroes]);
        (0..13usize, ops, 0u32..1 << 11, any::<u64>(), 0u32..1 << 23, 0u32..3, -200i32..200, any::<u32>(), 0u32..3, 0u32..3, 0u64..1 << 50)
            .prop_map(|(a, op, flags, sector, sectors, task, error, arg, dev, from, time)| Event {
                time,
                dev,
                action: Action::ALL[a],
                op,
                flags,
                sector: sector >> 1,
                bytes: sectors << 9,
                task,
                error,
                arg: arg as u64,
                from_dev: from,
            })
    }

    proptest! {
        #[test]
        fn random_events_round_trip(evs in prop::collection::vec(arb_event(), 1..40)) {
            round_trip(&evs);
        }
    }

    #[test]
    fn blkparse_extras_summary_and_bad_lines() {
        let text = "\
  8,0    0        1     0.000000000   843  Q   R 2048 + 8 [dd]
  8,0    1        0     0.000012000  1234  m   N cfq1234 insert_request

  8,0    0        2     0.000100000   843  D  WS 2048 + 8 (     100) [dd]
  8,0    0        3     0.000200000     0  C  WZ 2048 + 8 (  100000) [0]
  8,0    0        4     0.000300000   843  D   N 0 (12 00 00 00) [sg_inq]
  8,0    0        5     0.000400000   843 UT   N [kworker/0:1H] 3
  8,0    0        6     0.0005   843  Q   R garbage
  8,0    0        7     0.000600000   843  Z   R 1 + 1 [dd]
CPU0 (8,0):
 Reads Queued:           1,        4KiB\t Writes Queued:           0,        0KiB
Total (8,0):
 Reads Queued:           1,        4KiB\t Writes Queued:           0,        0KiB

Throughput (R/W): 4KiB/s / 0KiB/s
Events (8,0): 7 entries
Skips: 0 forward (0 -   0.0%)
";
        let p = parse_trace(text);
        assert_eq!(p.records.len(), 6);
        assert_eq!(p.records[1].extra, Extra::Message("cfq1234 insert_request".into()));
        assert_eq!(p.records[2].elapsed_ns, Some(100));
        // "WZ": 'Z' is no RWBS letter; kept, and counted.
        assert_eq!((p.records[3].rwbs.as_str(), Rwbs::decode("WZ").unknown), ("WZ", 1));
        assert_eq!((p.records[4].bytes, p.records[4].cmd.as_deref()), (Some(0), Some("12 00 00 00")));
        assert_eq!((p.records[5].action, &p.records[5].extra), (TraceAction::Model(Action::UnplugTimer), &Extra::Unplug { depth: 3 }));
        let bad: Vec<usize> = p.bad.iter().map(|b| b.line).collect();
        assert_eq!(bad, [8, 9]);
        assert!(p.bad[1].reason.contains("unknown action"));
        // Line 3 (blank) and the eight lines of the summary (10-17).
        assert_eq!(p.skipped, 9);
    }

    #[test]
    fn ftrace_6_1_and_6_12_formats() {
        let text = "\
# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
              dd-843     [000] .....    11.357392: block_rq_issue: 8,0 R 65536 () 14071424 + 128 [dd]
              dd-843     [001] d..1.    11.357400: block_rq_issue: 8,0 R 65536 () 14071424 + 128 be,0,4 [dd]
          <idle>-0       [000] d.h1.    11.358001: block_rq_complete: 8,0 R () 14071424 + 128 none,0,0 [0]
          <idle>-0       [000] ..s.    11.358002: block_rq_complete: 8,0 WS () 14071552 + 8 [-5]
 kworker/u8:2-77    (     77) [003] ..... 12.000001: block_unplug: [kworker/u8:2] 1
              dd-843     [000] .....    11.357000: block_bio_remap: 8,0 R 14071424 + 128 <- (8,1) 14069376
              dd-843     [000] .....    11.357001: block_split: 8,0 R 14071424 / 14071552 [dd]
              dd-843     [000] .....    11.357002: block_dirty_buffer: 8,0 sector=1 size=4096
              dd-843     [000] .....    11.357003: sched_switch: prev_comm=dd
CPU:2 [LOST 12 EVENTS]
              dd-843     [000] .....    11.357004: block_bio_queue: 8,0 R garbage [dd]
";
        let p = parse_trace(text);
        assert_eq!(p.records.len(), 7, "{:?}", p.bad);
        let r = &p.records[0];
        // 11.357392 s = 11,357,392,000 ns; 65536 bytes = 128 sectors.
        assert_eq!((r.time_ns, r.pid, r.cpu, r.action), (11_357_392_000, 843, 0, TraceAction::Model(Action::Issue)));
        assert_eq!((r.dev, r.sector, r.nr_sectors, r.bytes), (Some(DevNo { major: 8, minor: 0 }), Some(14071424), 128, Some(65536)));
        assert_eq!((r.cmd.as_deref(), r.ioprio.as_deref(), r.comm.as_deref()), (Some(""), None, Some("dd")));
        assert_eq!((p.records[1].cpu, p.records[1].ioprio.as_deref()), (1, Some("be,0,4")));
        assert_eq!((p.records[2].error, p.records[2].comm.as_deref()), (Some(0), Some("<idle>")));
        assert_eq!(p.records[3].error, Some(-5));
        let u = &p.records[4];
        assert_eq!((u.dev, u.pid, u.cpu, &u.extra), (None, 77, 3, &Extra::Unplug { depth: 1 }));
        assert_eq!(p.records[5].extra, Extra::Remap { from: DevNo { major: 8, minor: 1 }, from_sector: 14069376, nr_bios: None });
        assert_eq!(p.records[6].extra, Extra::Split { new_sector: 14071552 });
        // The header (3), block_dirty_buffer, sched_switch and the lost-events note.
        assert_eq!(p.skipped, 6);
        assert_eq!(p.bad.iter().map(|b| b.line).collect::<Vec<_>>(), [14]);
    }

    #[test]
    fn rwbs_decoding() {
        let r = Rwbs::decode("FWFSM");
        assert!(r.preflush && r.write && r.fua && r.sync && r.meta && !r.flush);
        let r = Rwbs::decode("DE");
        assert!(r.discard && r.secure_erase);
        let r = Rwbs::decode("F");
        assert!(r.flush && !r.preflush);
        assert_eq!(Rwbs::decode("RAS").unknown, 0);
        assert_eq!(Rwbs::decode("Rq?").unknown, 2);
    }
}
