//! blkparse's default text output (`process_default` in blkparse_fmt.c).
//!
//! Header `%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s ` — major,minor, CPU,
//! sequence, seconds.nanoseconds, pid, action, rwbs — then a tail that
//! depends on the action. The sequence number counts per traced device, as
//! blktrace's per-queue counter does; every event runs on CPU 0.

use std::io::{self, Write};

use super::{rwbs, Action, Event, TraceCtx, TraceSink};

pub struct BlkparseWriter<W: Write> {
    out: W,
    seq: Vec<u64>,
}

impl<W: Write> BlkparseWriter<W> {
    pub fn new(out: W) -> Self {
        BlkparseWriter { out, seq: Vec::new() }
    }

    fn next_seq(&mut self, dev: u32) -> u64 {
        let i = dev as usize;
        if self.seq.len() <= i {
            self.seq.resize(i + 1, 0);
        }
        self.seq[i] += 1;
        self.seq[i]
    }
}

/// Format one event as blkparse prints it (without the newline's writer).
pub fn format_event(ev: &Event, seq: u64, ctx: &TraceCtx, out: &mut impl Write) -> io::Result<()> {
    let d = ctx.topo.dev(ev.dev);
    let task = &ctx.tasks[ev.task as usize];
    let sec = ev.time / 1_000_000_000;
    let nsec = ev.time % 1_000_000_000;
    write!(
        out,
        "{:3},{:<3} {:2} {:8} {:5}.{:09} {:5} {:>2} {:>3} ",
        d.major,
        d.minor,
        0,
        seq,
        sec,
        nsec,
        task.pid,
        ev.action.letter(),
        rwbs(ev.op, ev.flags, ev.bytes)
    )?;
    let n = ev.sectors();
    match ev.action {
        Action::Complete | Action::Requeue => {
            // struct blk_io_trace keeps the errno in a __u16 and blkparse
            // prints that: -EIO shows as 65531.
            let error = ev.error as u16;
            if n != 0 {
                writeln!(out, "{} + {} [{}]", ev.sector, n, error)
            } else {
                writeln!(out, "{} [{}]", ev.sector, error)
            }
        }
        Action::Issue | Action::Insert | Action::Queue | Action::BackMerge | Action::FrontMerge | Action::GetRq => {
            if n != 0 {
                writeln!(out, "{} + {} [{}]", ev.sector, n, task.comm)
            } else {
                writeln!(out, "[{}]", task.comm)
            }
        }
        Action::Plug => writeln!(out, "[{}]", task.comm),
        Action::Unplug | Action::UnplugTimer => writeln!(out, "[{}] {}", task.comm, ev.arg),
        Action::Remap => {
            let from = ctx.topo.dev(ev.from_dev);
            writeln!(out, "{} + {} <- ({},{}) {}", ev.sector, n, from.major, from.minor, ev.arg)
        }
        Action::Split => writeln!(out, "{} / {} [{}]", ev.sector, ev.arg, task.comm),
    }
}

impl<W: Write> TraceSink for BlkparseWriter<W> {
    fn event(&mut self, ev: &Event, ctx: &TraceCtx) -> io::Result<()> {
        let seq = self.next_seq(ev.dev);
        format_event(ev, seq, ctx, &mut self.out)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
