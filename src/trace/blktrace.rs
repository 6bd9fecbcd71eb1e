//! blktrace's binary output (`blktrace -d /dev/sda` writes `sda.blktrace.N`,
//! one file per CPU): records of `struct blk_io_trace`
//! (include/uapi/linux/blktrace_api.h), read into the same
//! [`TraceRecord`]s as blkparse's text, so that everything reading a trace
//! reads these files too.
//!
//! A record is 48 bytes in the recording machine's byte order — magic
//! (`BLK_IO_TRACE_MAGIC` or'ed with the version), sequence, time (ns), sector,
//! bytes, action, pid, device (`major << 20 | minor`, the kernel's dev_t),
//! cpu, error (u16), pdu_len — then `pdu_len` bytes: the cgroup id first
//! when the action has `__BLK_TA_CGROUP`, then the action's payload, in big
//! endian (`blk_io_trace_remap` for A, the remainder's sector for X, the
//! depth for U). The action's low 16 bits are the kind (`__BLK_TA_*`), the
//! high 16 the categories (`BLK_TC_*`) that blkparse's `fill_rwbs` turns
//! into the RWBS letters. Notify records carry a task's name
//! (`__BLK_TN_PROCESS`), a timestamp or a message.

use std::collections::HashMap;
use std::io::Write;

use super::parse::{DevNo, Extra, Line, TraceAction, TraceParse, TraceRecord};
use super::{Action, Event, Task, TraceCtx, TraceSink};
use crate::bio::{req, Op};

/// `BLK_IO_TRACE_MAGIC`: the magic without its version byte.
pub const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;
/// The size of `struct blk_io_trace`.
const RECORD: usize = 48;

// Categories, shifted by BLK_TC_SHIFT (16) into the action.
const TC_READ: u32 = 1 << 16;
const TC_WRITE: u32 = 1 << 17;
const TC_FLUSH: u32 = 1 << 18;
const TC_SYNC: u32 = 1 << 19;
const TC_FS: u32 = 1 << 24;
const TC_NOTIFY: u32 = 1 << 26;
const TC_AHEAD: u32 = 1 << 27;
const TC_META: u32 = 1 << 28;
const TC_DISCARD: u32 = 1 << 29;
const TC_FUA: u32 = 1 << 31;
/// `__BLK_TA_CGROUP`: a cgroup id precedes the payload.
const TA_CGROUP: u32 = 1 << 8;

/// Whether `bytes` begin with a blktrace record (either byte order).
pub fn is_blktrace(bytes: &[u8]) -> bool {
    byte_order(bytes).is_some()
}

/// Whether the file at `path` begins with a blktrace record.
pub fn file_is_blktrace(path: &str) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(4);
    std::fs::File::open(path)?.take(4).read_to_end(&mut head)?;
    Ok(is_blktrace(&head))
}

/// Little endian (true) or big endian, from the first record's magic.
fn byte_order(bytes: &[u8]) -> Option<bool> {
    let head: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    if u32::from_le_bytes(head) & 0xFFFF_FF00 == BLK_IO_TRACE_MAGIC {
        Some(true)
    } else if u32::from_be_bytes(head) & 0xFFFF_FF00 == BLK_IO_TRACE_MAGIC {
        Some(false)
    } else {
        None
    }
}

/// One record's fixed part.
struct Raw {
    sequence: u32,
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    pid: u32,
    device: u32,
    cpu: u32,
    error: u16,
}

fn read_raw(b: &[u8], le: bool) -> (Raw, u16) {
    let u32_at = |o: usize| {
        let x: [u8; 4] = b[o..o + 4].try_into().expect("4 bytes");
        if le { u32::from_le_bytes(x) } else { u32::from_be_bytes(x) }
    };
    let u64_at = |o: usize| {
        let x: [u8; 8] = b[o..o + 8].try_into().expect("8 bytes");
        if le { u64::from_le_bytes(x) } else { u64::from_be_bytes(x) }
    };
    let u16_at = |o: usize| {
        let x: [u8; 2] = b[o..o + 2].try_into().expect("2 bytes");
        if le { u16::from_le_bytes(x) } else { u16::from_be_bytes(x) }
    };
    let raw = Raw {
        sequence: u32_at(4),
        time: u64_at(8),
        sector: u64_at(16),
        bytes: u32_at(24),
        action: u32_at(28),
        pid: u32_at(32),
        device: u32_at(36),
        cpu: u32_at(40),
        error: u16_at(44),
    };
    (raw, u16_at(46))
}

/// The kernel's dev_t (`MINORBITS` 20) as major,minor.
fn dev_no(d: u32) -> DevNo {
    DevNo { major: d >> 20, minor: d & 0xF_FFFF }
}

/// blkparse's `fill_rwbs`: F (preflush), D / W / R (a read only with data)
/// / N, then F (FUA), A, S, M.
pub fn fill_rwbs(action: u32, bytes: u32) -> String {
    let mut s = String::new();
    let has = |c: u32| action & c != 0;
    if has(TC_FLUSH) {
        s.push('F');
    }
    s.push(if has(TC_DISCARD) {
        'D'
    } else if has(TC_WRITE) {
        'W'
    } else if bytes != 0 {
        'R'
    } else {
        'N'
    });
    for (c, l) in [(TC_FUA, 'F'), (TC_AHEAD, 'A'), (TC_SYNC, 'S'), (TC_META, 'M')] {
        if has(c) {
            s.push(l);
        }
    }
    s
}

/// blkparse's letter for `__BLK_TA_*` `kind`.
fn letter(kind: u32) -> Option<&'static str> {
    const LETTERS: [&str; 16] = ["Q", "M", "F", "G", "S", "R", "D", "C", "P", "U", "UT", "I", "X", "B", "A", ""];
    LETTERS.get((kind as usize).checked_sub(1)?).copied().filter(|l| !l.is_empty())
}

fn be_u64(p: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(p.get(..8)?.try_into().ok()?))
}

fn be_u32(p: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(..4)?.try_into().ok()?))
}

/// Read the records of one or more per-CPU files, in time order (the
/// sequence number breaking ties, as blkparse sorts). A record's `line` is
/// its place in that order, from 1. Task names come from the process
/// notify records; a file cut short ends at its last whole record.
pub fn parse_blktrace(files: &[&[u8]]) -> TraceParse {
    let mut out = TraceParse::default();
    let mut comms: HashMap<u32, String> = HashMap::new();
    let mut records = Vec::new();
    for bytes in files {
        let Some(le) = byte_order(bytes) else { continue };
        let mut at = 0;
        while at + RECORD <= bytes.len() {
            let (raw, pdu_len) = read_raw(&bytes[at..], le);
            let end = (at + RECORD + pdu_len as usize).min(bytes.len());
            let pdu = &bytes[at + RECORD..end];
            at += RECORD + pdu_len as usize;
            if raw.action & TC_NOTIFY != 0 {
                note(&raw, pdu, &mut comms, &mut records, &mut out);
                continue;
            }
            match record(&raw, pdu) {
                Some(r) => records.push(r),
                None => out.skipped += 1,
            }
        }
    }
    records.sort_by_key(|r: &TraceRecord| (r.time_ns, r.seq));
    for (i, r) in records.iter_mut().enumerate() {
        r.line = i + 1;
        if r.comm.is_none() && r.action != TraceAction::Model(Action::Complete) {
            r.comm = comms.get(&r.pid).cloned();
        }
    }
    out.records = records;
    out
}

/// A notify record: a task's name (`__BLK_TN_PROCESS`), a message
/// (`__BLK_TN_MESSAGE`), or a timestamp (skipped).
fn note(raw: &Raw, pdu: &[u8], comms: &mut HashMap<u32, String>, records: &mut Vec<TraceRecord>, out: &mut TraceParse) {
    let text = String::from_utf8_lossy(pdu.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
    match raw.action & 0xFFFF {
        0 => {
            comms.insert(raw.pid, text);
            out.skipped += 1;
        }
        2 => {
            let mut r = base(raw, TraceAction::Message);
            r.extra = Extra::Message(text);
            records.push(r);
        }
        _ => out.skipped += 1,
    }
}

fn base(raw: &Raw, action: TraceAction) -> TraceRecord {
    let mut r = TraceRecord::blank(action);
    r.time_ns = raw.time;
    r.dev = Some(dev_no(raw.device));
    r.cpu = raw.cpu;
    r.seq = Some(raw.sequence as u64);
    r.pid = raw.pid;
    r
}

/// One I/O record as blkparse shows it; `None` for kinds it has no letter
/// for (abort, driver data).
fn record(raw: &Raw, pdu: &[u8]) -> Option<TraceRecord> {
    let kind = raw.action & 0xFFFF & !TA_CGROUP;
    let action = TraceAction::from_blkparse(letter(kind)?)?;
    let payload = if raw.action & TA_CGROUP != 0 { pdu.get(8..).unwrap_or(&[]) } else { pdu };
    let mut r = base(raw, action);
    r.rwbs = fill_rwbs(raw.action, raw.bytes);
    r.nr_sectors = raw.bytes >> 9;
    let letter = letter(kind).unwrap_or("");
    r.sector = match letter {
        "P" | "U" | "UT" => None,
        "X" | "A" => Some(raw.sector),
        _ if raw.bytes == 0 => None,
        _ => Some(raw.sector),
    };
    if matches!(letter, "C" | "R") {
        r.error = Some(raw.error as i32);
    }
    r.extra = match letter {
        "X" => be_u64(payload).map_or(Extra::None, |s| Extra::Split { new_sector: s }),
        "U" | "UT" => be_u64(payload).map_or(Extra::None, |d| Extra::Unplug { depth: d as u32 }),
        "A" => match (be_u32(payload), payload.get(8..).and_then(be_u64)) {
            (Some(from), Some(from_sector)) => Extra::Remap { from: dev_no(from), from_sector, nr_bios: None },
            _ => Extra::None,
        },
        _ => Extra::None,
    };
    Some(r)
}

/// Read the trace at `path`, text or binary: blkparse or ftrace text, or
/// blktrace's per-CPU files — given one of them (`sda.blktrace.0`), every
/// `sda.blktrace.N` beside it is read too, as `blkparse -i sda` does.
pub fn read_trace_file(path: &str) -> std::io::Result<TraceParse> {
    let bytes = std::fs::read(path)?;
    if !is_blktrace(&bytes) {
        return Ok(super::parse::parse_trace(&String::from_utf8_lossy(&bytes)));
    }
    let others: Vec<Vec<u8>> = per_cpu_siblings(path).iter().filter_map(|p| std::fs::read(p).ok()).collect();
    let mut all: Vec<&[u8]> = vec![&bytes];
    all.extend(others.iter().map(|b| b.as_slice()));
    Ok(parse_blktrace(&all))
}

/// Every line (record) of the trace at `path`, in order, to `f`: a text
/// trace line by line, parsed on a thread of its own while `f` runs
/// ([`super::parse_thread`]), holding a few batches of lines at a time;
/// blktrace's binary files whole, since their per-CPU records interleave.
pub fn read_trace_lines(path: &str, mut f: impl FnMut(Line<&TraceRecord>)) -> std::io::Result<()> {
    if !file_is_blktrace(path)? {
        let src = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
        return super::parse_thread::for_each_line(src, f);
    }
    let TraceParse { records, bad, skipped } = read_trace_file(path)?;
    records.iter().for_each(|r| f(Line::Record(r)));
    bad.into_iter().for_each(|b| f(Line::Bad(b)));
    (0..skipped).for_each(|_| f(Line::Skipped));
    Ok(())
}

/// The other `NAME.blktrace.N` files beside `NAME.blktrace.M`.
fn per_cpu_siblings(path: &str) -> Vec<std::path::PathBuf> {
    let p = std::path::Path::new(path);
    let Some(name) = p.file_name().and_then(|n| n.to_str()) else { return Vec::new() };
    let Some((stem, cpu)) = name.rsplit_once(".blktrace.") else { return Vec::new() };
    if cpu.parse::<u32>().is_err() {
        return Vec::new();
    }
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let (s, c) = n.rsplit_once(".blktrace.")?;
            (s == stem && c != cpu && c.parse::<u32>().is_ok()).then(|| e.path())
        })
        .collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------
// Writing: what `blktrace -d DEV` would have recorded, one file per device.

/// Categories the kernel adds per kind (`BLK_TA_*` = `__BLK_TA_*` |
/// `BLK_TC_ACT(...)`): QUEUE for the submission side, ISSUE, COMPLETE,
/// REQUEUE; none for split and bounce.
fn kind_and_category(a: Action) -> u32 {
    const QUEUE: u32 = 1 << 20;
    const REQUEUE: u32 = 1 << 21;
    const ISSUE: u32 = 1 << 22;
    const COMPLETE: u32 = 1 << 23;
    match a {
        Action::Queue => 1 | QUEUE,
        Action::BackMerge => 2 | QUEUE,
        Action::FrontMerge => 3 | QUEUE,
        Action::GetRq => 4 | QUEUE,
        Action::Requeue => 6 | REQUEUE,
        Action::Issue => 7 | ISSUE,
        Action::Complete => 8 | COMPLETE,
        Action::Plug => 9 | QUEUE,
        Action::Unplug => 10 | QUEUE,
        Action::UnplugTimer => 11 | QUEUE,
        Action::Insert => 12 | QUEUE,
        Action::Split => 13,
        Action::Remap => 15 | QUEUE,
    }
}

/// The categories of an I/O's op and flags (`__blk_add_trace`: the
/// direction, READ or WRITE by `op_is_write` (`ddir_act`: a flush is a
/// read), `REQ_SYNC`, `REQ_RAHEAD`, `REQ_META`, `REQ_PREFLUSH`,
/// `REQ_FUA`, and DISCARD or FLUSH by op), which `fill_rwbs` reads back as
/// the letters blkstack's own text prints.
fn op_categories(op: Op, flags: u32) -> u32 {
    let mut c = 0;
    for (on, bit) in [
        (!op.is_write(), TC_READ),
        (op.is_write(), TC_WRITE),
        (op.is_discard(), TC_DISCARD),
        (op == Op::Flush || flags & req::PREFLUSH != 0, TC_FLUSH),
        (flags & req::FUA != 0, TC_FUA),
        (flags & req::RAHEAD != 0, TC_AHEAD),
        (flags & req::SYNC != 0, TC_SYNC),
        (flags & req::META != 0, TC_META),
    ] {
        if on {
            c |= bit;
        }
    }
    c
}

/// The action word of an event's record, before the request-only FS
/// category: its kind and kind category, then its op's categories.
pub(crate) fn action_word(a: Action, op: Op, flags: u32) -> u32 {
    kind_and_category(a) | op_categories(op, flags)
}

/// The kernel's dev_t of a device.
fn dev_t(major: u32, minor: u32) -> u32 {
    major << 20 | (minor & 0xF_FFFF)
}

/// One record in this machine's byte order (blktrace writes the kernel's
/// records as they are): the fixed part, then `pdu`.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn put_record(out: &mut Vec<u8>, seq: u32, time: u64, sector: u64, bytes: u32, action: u32, pid: u32, dev: u32, error: u16, pdu: &[u8]) {
    put_record_on(out, 0, seq, time, sector, bytes, action, pid, dev, error, pdu);
}

/// [`put_record`] of an event recorded on `cpu`: the fixed part assembled
/// in place, then stored in one copy.
#[allow(clippy::too_many_arguments)]
fn put_record_on(out: &mut Vec<u8>, cpu: u32, seq: u32, time: u64, sector: u64, bytes: u32, action: u32, pid: u32, dev: u32, error: u16, pdu: &[u8]) {
    let mut r = [0u8; RECORD];
    r[0..4].copy_from_slice(&(BLK_IO_TRACE_MAGIC | 7).to_ne_bytes());
    r[4..8].copy_from_slice(&seq.to_ne_bytes());
    r[8..16].copy_from_slice(&time.to_ne_bytes());
    r[16..24].copy_from_slice(&sector.to_ne_bytes());
    r[24..28].copy_from_slice(&bytes.to_ne_bytes());
    r[28..32].copy_from_slice(&action.to_ne_bytes());
    r[32..36].copy_from_slice(&pid.to_ne_bytes());
    r[36..40].copy_from_slice(&dev.to_ne_bytes());
    r[40..44].copy_from_slice(&cpu.to_ne_bytes());
    r[44..46].copy_from_slice(&error.to_ne_bytes());
    r[46..48].copy_from_slice(&(pdu.len() as u16).to_ne_bytes());
    out.extend_from_slice(&r);
    out.extend_from_slice(pdu);
}

/// Writes every event to its device's output for the CPU it was recorded
/// on ([`super::cpu`]): a process notify the first time a task shows on a
/// device (blktrace's `__BLK_TN_PROCESS`, which gives blkparse the task's
/// name), then the record; sequence numbers count per device and CPU from
/// 1, as blktrace's per-CPU buffers number them. Devices may share an
/// output: one time-ordered stream, as `blkparse -d` dumps it for btt.
pub struct BlktraceWriter {
    outs: Vec<Box<dyn Write>>,
    /// By device id: its dev_t, whether it is request-based, and its
    /// outputs (the index into `outs` of CPU 0's, how many CPUs have one),
    /// sequence per CPU and the pids already named.
    devs: Vec<(u32, bool, Option<DevOut>)>,
    cpus: super::cpu::EventCpus,
    buf: Vec<u8>,
}

struct DevOut {
    first: usize,
    nr: u32,
    seq: Vec<u32>,
    named: Vec<u32>,
}

/// What the writer needs to know of a device: its number, whether its
/// events are a request queue's, and which output its records go to
/// (whole disks: events land on them).
pub struct BlktraceDev {
    pub major: u32,
    pub minor: u32,
    pub request_based: bool,
    pub out: Option<usize>,
    /// Outputs `out`, `out + 1`, ...: one per CPU (1: every CPU's records
    /// in one stream).
    pub cpus: u32,
}

impl BlktraceWriter {
    /// `devs[d]`: device `d` (by id), writing into `outs`.
    pub fn new(devs: Vec<BlktraceDev>, outs: Vec<Box<dyn Write>>) -> Self {
        let devs = devs
            .into_iter()
            .map(|d| (dev_t(d.major, d.minor), d.request_based, d.out.map(|first| DevOut { first, nr: d.cpus.max(1), seq: Vec::new(), named: Vec::new() })))
            .collect();
        BlktraceWriter { outs, devs, cpus: Default::default(), buf: Vec::with_capacity(256) }
    }

    /// Write one event by `task`, recorded on CPU 0.
    pub fn record(&mut self, ev: &Event, task: &Task) -> std::io::Result<()> {
        self.record_on(ev, task, 0)
    }

    /// Write one event by `task`, recorded on `cpu`: into that CPU's file
    /// (a CPU beyond the files goes to the one it wraps around to).
    pub fn record_on(&mut self, ev: &Event, task: &Task, cpu: u32) -> std::io::Result<()> {
        let from = self.devs.get(ev.from_dev as usize).map_or(0, |d| d.0);
        let Some((dev, request_based, Some(o))) = self.devs.get_mut(ev.dev as usize) else { return Ok(()) };
        let (dev, request_based) = (*dev, *request_based);
        let (cpu, single) = if o.nr == 1 { (cpu, true) } else { (cpu % o.nr, false) };
        let out = o.first + if single { 0 } else { cpu as usize };
        if o.seq.len() <= cpu as usize {
            o.seq.resize(cpu as usize + 1, 0);
        }
        self.buf.clear();
        if !o.named.contains(&task.pid) {
            o.named.push(task.pid);
            let mut comm = task.comm.as_bytes().to_vec();
            comm.push(0);
            put_record_on(&mut self.buf, cpu, 0, ev.time, 0, 0, TC_NOTIFY, task.pid, dev, 0, &comm);
        }
        // The payload, on the stack: at most a remap's 16 bytes.
        let mut pdu = [0u8; 16];
        let pdu_len = match ev.action {
            Action::Split | Action::Unplug | Action::UnplugTimer => {
                pdu[..8].copy_from_slice(&ev.arg.to_be_bytes());
                8
            }
            Action::Remap => {
                pdu[..4].copy_from_slice(&from.to_be_bytes());
                pdu[4..8].copy_from_slice(&dev.to_be_bytes());
                pdu[8..].copy_from_slice(&ev.arg.to_be_bytes());
                16
            }
            _ => 0,
        };
        o.seq[cpu as usize] += 1;
        let seq = o.seq[cpu as usize];
        let mut action = action_word(ev.action, ev.op, ev.flags);
        // blk_add_trace_rq: a request's events (not a bio-based device's
        // completions) carry the FS category.
        if request_based && matches!(ev.action, Action::Insert | Action::Issue | Action::Requeue | Action::Complete) {
            action |= TC_FS;
        }
        put_record_on(&mut self.buf, cpu, seq, ev.time, ev.sector, ev.bytes, action, task.pid, dev, ev.error as u16, &pdu[..pdu_len]);
        self.outs[out].write_all(&self.buf)
    }
}

impl TraceSink for BlktraceWriter {
    fn event(&mut self, ev: &Event, ctx: &TraceCtx) -> std::io::Result<()> {
        let cpu = self.cpus.cpu(ev, ctx);
        self.record_on(ev, &ctx.tasks[ev.task as usize], cpu)
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.outs.iter_mut().try_for_each(|o| o.flush())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record with its payload, in this machine's byte order.
    #[allow(clippy::too_many_arguments)]
    fn rec(seq: u32, time: u64, sector: u64, bytes: u32, action: u32, pid: u32, dev: u32, pdu: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        put_record(&mut b, seq, time, sector, bytes, action, pid, dev, 0, pdu);
        b
    }

    #[test]
    fn records_read_as_blkparse_prints_them() {
        // sda is 8,0: dev_t 8 << 20. A sync write queued (Q = 1, categories
        // WRITE | SYNC | QUEUE), split at 2304 (X = 13, payload be64), then
        // issued (D = 7) by pid 843, whose name a process notify gives; a
        // flush request issued with no data (FLUSH, no WRITE: "FN").
        let sda = 8 << 20;
        let mut f = rec(0, 0, 0, 0, TC_NOTIFY, 843, sda, b"dd\0");
        f.extend(rec(1, 1000, 2048, 768 * 512, 1 | TC_WRITE | TC_SYNC | (1 << 20), 843, sda, &[]));
        f.extend(rec(2, 2000, 2048, 0, 13 | TC_WRITE | TC_SYNC, 843, sda, &2304u64.to_be_bytes()));
        f.extend(rec(3, 3000, 2048, 256 * 512, 7 | TC_WRITE | TC_SYNC | (1 << 22), 843, sda, &[]));
        f.extend(rec(4, 4000, 0, 0, 7 | TC_FLUSH | (1 << 22), 843, sda, &[]));
        let p = parse_blktrace(&[&f]);
        assert_eq!(p.skipped, 1);
        let show: Vec<(String, String, Option<u64>, u32)> =
            p.records.iter().map(|r| (r.action.model().unwrap().letter().to_string(), r.rwbs.clone(), r.sector, r.nr_sectors)).collect();
        assert_eq!(
            show,
            [
                ("Q".into(), "WS".into(), Some(2048), 768),
                ("X".into(), "WS".into(), Some(2048), 0),
                ("D".into(), "WS".into(), Some(2048), 256),
                ("D".into(), "FN".into(), None, 0)
            ]
        );
        assert_eq!(p.records[1].extra, Extra::Split { new_sector: 2304 });
        assert_eq!(p.records[0].comm.as_deref(), Some("dd"));
        assert_eq!(p.records[0].dev, Some(DevNo { major: 8, minor: 0 }));
    }
}
