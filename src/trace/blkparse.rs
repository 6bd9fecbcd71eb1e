//! blkparse's default text output (`process_default` in blkparse_fmt.c).
//!
//! Header `%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s ` — major,minor, CPU,
//! sequence, seconds.nanoseconds, pid, action, rwbs — then a tail that
//! depends on the action. Each event is on its CPU ([`super::cpu`]); the
//! sequence number counts per traced device and CPU, as blktrace's per-CPU
//! counter of a trace does. After
//! the events comes blkparse's closing summary ([`super::blkparse_summary`]),
//! as blkparse prints it to the same output.

use std::io::{self, Write};

use super::blkparse_summary::BlkparseSummary;
use super::cpu::EventCpus;
use super::text::{Text, NUMBER_MAX, PAD_MAX};
use super::{rwbs_of, Action, Event, TraceCtx, TraceSink};

pub struct BlkparseWriter<W: Write> {
    out: W,
    /// Per device, per CPU: the last sequence number.
    seq: Vec<Vec<u64>>,
    cpus: EventCpus,
    /// The events of the current instant, not written yet.
    pending: Vec<Pending>,
    /// The line being formatted, reused from event to event.
    line: Vec<u8>,
    summary: BlkparseSummary,
}

impl<W: Write> BlkparseWriter<W> {
    pub fn new(out: W) -> Self {
        BlkparseWriter { out, seq: Vec::new(), cpus: EventCpus::default(), pending: Vec::new(), line: Vec::new(), summary: BlkparseSummary::default() }
    }

    fn next_seq(&mut self, dev: u32, cpu: u32) -> u64 {
        let i = dev as usize;
        if self.seq.len() <= i {
            self.seq.resize(i + 1, Vec::new());
        }
        let per_cpu = &mut self.seq[i];
        if per_cpu.len() <= cpu as usize {
            per_cpu.resize(cpu as usize + 1, 0);
        }
        per_cpu[cpu as usize] += 1;
        per_cpu[cpu as usize]
    }
}

/// The fixed part of a line at most: the header's numbers and the longest
/// tail (a remap's), each number at its widest.
const LINE_FIXED: usize = 14 * NUMBER_MAX + 32 + PAD_MAX;

/// Format one event as blkparse prints it, its newline included.
pub fn format_event(ev: &Event, seq: u64, ctx: &TraceCtx, out: &mut impl Write) -> io::Result<()> {
    let mut line = Vec::new();
    let cpu = ctx.tasks.get(ev.task as usize).map_or(0, |t| t.cpu);
    let n = format_line(ev, cpu, seq, ctx, &mut line);
    out.write_all(&line[..n])
}

/// Write the line of one event at the start of `buf` (grown to fit);
/// returns its length. By hand, not through `core::fmt`: this runs for
/// every event of a traced run.
pub fn format_line(ev: &Event, cpu: u32, seq: u64, ctx: &TraceCtx, buf: &mut Vec<u8>) -> usize {
    let d = ctx.topo.dev(ev.dev);
    let task = &ctx.tasks[ev.task as usize];
    let comm = task.comm.as_bytes();
    Text::room(buf, LINE_FIXED + comm.len());
    let mut t = Text::new(buf);
    // "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s ".
    t.u64_right(d.major as u64, 3);
    t.byte(b',');
    t.u64_left(d.minor as u64, 3);
    t.byte(b' ');
    t.u64_right(cpu as u64, 2);
    t.byte(b' ');
    t.u64_right(seq, 8);
    t.byte(b' ');
    t.u64_right(ev.time / 1_000_000_000, 5);
    t.byte(b'.');
    t.u64_zeros(ev.time % 1_000_000_000, 9);
    t.byte(b' ');
    t.u64_right(task.pid as u64, 5);
    t.byte(b' ');
    t.str_right(ev.action.letter().as_bytes(), 2);
    t.byte(b' ');
    t.str_right(rwbs_of(ev.op, ev.flags, ev.bytes).as_bytes(), 3);
    t.byte(b' ');
    let n = ev.sectors() as u64;
    match ev.action {
        Action::Complete | Action::Requeue => {
            // "%llu + %u [%d]", or "%llu [%d]" without sectors. struct
            // blk_io_trace keeps the errno in a __u16 and blkparse prints
            // that: -EIO shows as 65531.
            sector_and_count(&mut t, ev.sector, n);
            t.byte(b'[');
            t.u64(ev.error as u16 as u64);
            t.byte(b']');
        }
        Action::Issue | Action::Insert | Action::Queue | Action::BackMerge | Action::FrontMerge | Action::GetRq => {
            // "%llu + %u [%s]", or "[%s]" alone without sectors (a flush).
            if n != 0 {
                sector_and_count(&mut t, ev.sector, n);
            }
            bracketed(&mut t, comm);
        }
        Action::Plug => bracketed(&mut t, comm),
        Action::Unplug | Action::UnplugTimer => {
            // "[%s] %d"
            bracketed(&mut t, comm);
            t.byte(b' ');
            t.u64(ev.arg);
        }
        Action::Remap => {
            // "%llu + %u <- (%d,%d) %llu"
            let from = ctx.topo.dev(ev.from_dev);
            t.u64(ev.sector);
            t.lit(b" + ");
            t.u64(n);
            t.lit(b" <- (");
            t.u64(from.major as u64);
            t.byte(b',');
            t.u64(from.minor as u64);
            t.lit(b") ");
            t.u64(ev.arg);
        }
        Action::Split => {
            // "%llu / %llu [%s]"
            t.u64(ev.sector);
            t.lit(b" / ");
            t.u64(ev.arg);
            t.byte(b' ');
            bracketed(&mut t, comm);
        }
    }
    t.byte(b'\n');
    t.len()
}

/// "SECTOR + COUNT ", or "SECTOR " for an event without sectors.
#[inline]
fn sector_and_count(t: &mut Text, sector: u64, n: u64) {
    t.u64(sector);
    if n != 0 {
        t.lit(b" + ");
        t.u64(n);
    }
    t.byte(b' ');
}

#[inline]
fn bracketed(t: &mut Text, text: &[u8]) {
    t.byte(b'[');
    t.bytes(text);
    t.byte(b']');
}

/// An event of the instant being written, its line ready.
struct Pending {
    ev: Event,
    cpu: u32,
    line: Vec<u8>,
}

impl<W: Write> BlkparseWriter<W> {
    /// The events of one instant, counted in the summary and written in
    /// the order they happened. blkparse reading a run's per-CPU files
    /// (`do_file`) merges one stream per device and CPU by time, a stream
    /// keeping the turn while its next event is no later than the others'
    /// (`ms_resort`): for an instant with events on several CPUs its order,
    /// and so its depth counts, can differ (trace replay relies on the
    /// order events happened, which is kept).
    fn flush_pending(&mut self) -> io::Result<()> {
        let mut batch = std::mem::take(&mut self.pending);
        for p in &batch {
            self.summary.add_known(&p.ev, p.cpu);
            self.out.write_all(&p.line)?;
        }
        batch.clear();
        self.pending = batch;
        Ok(())
    }
}

impl<W: Write> TraceSink for BlkparseWriter<W> {
    fn event(&mut self, ev: &Event, ctx: &TraceCtx) -> io::Result<()> {
        let cpu = self.cpus.cpu(ev, ctx);
        let seq = self.next_seq(ev.dev, cpu);
        if self.pending.first().is_some_and(|p| p.ev.time != ev.time) {
            self.flush_pending()?;
        }
        self.summary.touch(ev.dev, ctx);
        let n = format_line(ev, cpu, seq, ctx, &mut self.line);
        self.pending.push(Pending { ev: *ev, cpu, line: self.line[..n].to_vec() });
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.flush_pending()?;
        self.out.write_all(self.summary.text().as_bytes())?;
        self.out.flush()
    }
}
