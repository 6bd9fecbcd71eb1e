//! The issued-request list: one CSV row per 'D' event, in issue order,
//! `device,seq,time_ns,rwbs,sector,nr_sectors`; `seq` counts from 0 per device.

use std::io::{self, Write};

use super::{rwbs, Action, Event, TraceCtx, TraceSink};

pub const HEADER: &str = "device,seq,time_ns,rwbs,sector,nr_sectors";

pub struct RequestsCsv<W: Write> {
    out: W,
    seq: Vec<u64>,
    header_written: bool,
}

impl<W: Write> RequestsCsv<W> {
    pub fn new(out: W) -> Self {
        RequestsCsv { out, seq: Vec::new(), header_written: false }
    }

    fn header(&mut self) -> io::Result<()> {
        if !self.header_written {
            writeln!(self.out, "{HEADER}")?;
            self.header_written = true;
        }
        Ok(())
    }
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
        let name = &ctx.topo.dev(ev.dev).name;
        writeln!(self.out, "{},{},{},{},{},{}", name, seq, ev.time, rwbs(ev.op, ev.flags, ev.bytes), ev.sector, ev.sectors())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.header()?;
        self.out.flush()
    }
}
