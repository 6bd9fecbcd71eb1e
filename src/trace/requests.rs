//! The issued-request list: one CSV row per 'D' event, in issue order,
//! `device,seq,time_ns,rwbs,sector,nr_sectors`; `seq` counts from 0 per device.

use std::io::{self, Write};

use super::text::{Text, NUMBER_MAX, PAD_MAX};
use super::{rwbs_of, Action, Event, TraceCtx, TraceSink};

pub const HEADER: &str = "device,seq,time_ns,rwbs,sector,nr_sectors";

pub struct RequestsCsv<W: Write> {
    out: W,
    seq: Vec<u64>,
    header_written: bool,
    /// The row being formatted, reused from row to row.
    line: Vec<u8>,
}

impl<W: Write> RequestsCsv<W> {
    pub fn new(out: W) -> Self {
        RequestsCsv { out, seq: Vec::new(), header_written: false, line: Vec::new() }
    }

    fn header(&mut self) -> io::Result<()> {
        if !self.header_written {
            writeln!(self.out, "{HEADER}")?;
            self.header_written = true;
        }
        Ok(())
    }
}

/// One row, its newline included, at the start of `buf` (grown to fit);
/// returns its length. By hand, not through `core::fmt`, as the blkparse
/// lines are ([`super::blkparse::format_line`]).
fn format_row(ev: &Event, seq: u64, name: &[u8], buf: &mut Vec<u8>) -> usize {
    Text::room(buf, name.len() + 5 * NUMBER_MAX + 16 + PAD_MAX);
    let mut t = Text::new(buf);
    t.bytes(name);
    t.byte(b',');
    t.u64(seq);
    t.byte(b',');
    t.u64(ev.time);
    t.byte(b',');
    t.bytes(rwbs_of(ev.op, ev.flags, ev.bytes).as_bytes());
    t.byte(b',');
    t.u64(ev.sector);
    t.byte(b',');
    t.u64(ev.sectors() as u64);
    t.byte(b'\n');
    t.len()
}

impl<W: Write> TraceSink for RequestsCsv<W> {
    fn event(&mut self, ev: &Event, ctx: &TraceCtx) -> io::Result<()> {
        self.header()?;
        if ev.action != Action::Issue {
            return Ok(());
        }
        let i = ev.dev as usize;
        if self.seq.len() <= i {
            self.seq.resize(i + 1, 0);
        }
        let seq = self.seq[i];
        self.seq[i] += 1;
        let name = ctx.topo.dev(ev.dev).name.as_bytes();
        let n = format_row(ev, seq, name, &mut self.line);
        self.out.write_all(&self.line[..n])
    }

    fn finish(&mut self) -> io::Result<()> {
        self.header()?;
        self.out.flush()
    }
}
