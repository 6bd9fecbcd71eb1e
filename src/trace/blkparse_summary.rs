//! blkparse's closing summary (`show_device_and_cpu_stats` and
//! `dump_io_stats` in blkparse.c, blktrace 1.2.0): per device, one block per
//! CPU that recorded events, a `Total` block when more than one did, then
//! the throughput, the event count and the sequence skips.
//!
//! blkparse counts what it reads back from the binary records, so the
//! counting here follows the action word blkstack's binary writer gives each
//! event ([`super::blktrace::action_word`]): the direction is the WRITE
//! category bit (a flush or a read is a "read"), every record is an "entry"
//! (each carries its direction's category, `ddir_act`), and
//! sizes are `bytes >> 10` per event, truncated one event at a time.
//! Counting is plain integers per event; text is formatted once, at the end.
//!
//! Numbers are printed as blkparse prints them in the C locale (its `%'`
//! grouping adds thousands separators only under a locale that has them).

use std::fmt::Write as _;

use super::{Action, Event, TraceCtx};
use crate::genhd::DevId;

/// `struct io_stats`, the fields the summary prints; `[read, write]`.
#[derive(Clone, Copy, Default)]
struct IoStats {
    queued: [u64; 2],
    queued_kb: [u64; 2],
    issued: [u64; 2],
    issued_kb: [u64; 2],
    requeued: [u64; 2],
    completed: [u64; 2],
    completed_kb: [u64; 2],
    merged: [u64; 2],
    merged_kb: [u64; 2],
    io_unplugs: u64,
    timer_unplugs: u64,
}

impl IoStats {
    /// The per-CPU figures summed, as blkparse's `total`.
    fn add(&mut self, o: &IoStats) {
        for w in 0..2 {
            self.queued[w] += o.queued[w];
            self.queued_kb[w] += o.queued_kb[w];
            self.issued[w] += o.issued[w];
            self.issued_kb[w] = self.issued_kb[w].wrapping_add(o.issued_kb[w]);
            self.requeued[w] += o.requeued[w];
            self.completed[w] += o.completed[w];
            self.completed_kb[w] += o.completed_kb[w];
            self.merged[w] += o.merged[w];
            self.merged_kb[w] += o.merged_kb[w];
        }
        self.io_unplugs += o.io_unplugs;
        self.timer_unplugs += o.timer_unplugs;
    }
}

/// `struct per_cpu_info`: its event count (`nelems`) and figures.
#[derive(Clone, Copy, Default)]
struct CpuStats {
    nelems: u64,
    ios: IoStats,
}

/// `struct per_dev_info`.
struct DevStats {
    name: String,
    cpus: Vec<CpuStats>,
    /// Events accounted (`dump_trace`): those with a category bit.
    events: u64,
    first_reported: u64,
    last_reported: u64,
    cur_depth: [u32; 2],
    max_depth: [u32; 2],
}


/// The counts behind blkparse's closing summary, fed event by event.
#[derive(Default)]
pub struct BlkparseSummary {
    devs: Vec<DevStats>,
    /// By device id: the index into `devs` plus one (0: not seen yet).
    index: Vec<u32>,
}

impl BlkparseSummary {
    /// Account one event (`show_entries_rb`, `dump_trace`, `dump_trace_fs`).
    #[inline]
    /// `cpu`: the CPU the event was recorded on ([`super::cpu`]).
    pub fn add(&mut self, ev: &Event, cpu: u32, ctx: &TraceCtx) {
        self.touch(ev.dev, ctx);
        self.add_known(ev, cpu);
    }

    /// Note device `id` (its figures start at its first event).
    #[inline]
    pub fn touch(&mut self, id: DevId, ctx: &TraceCtx) {
        self.dev(id, ctx);
    }

    /// [`BlkparseSummary::add`] for a device already noted.
    #[inline]
    pub fn add_known(&mut self, ev: &Event, cpu: u32) {
        let n = self.index[ev.dev as usize] as usize;
        let d = &mut self.devs[n - 1];
        // check_time: the last event read, accounted or not.
        d.last_reported = d.last_reported.max(ev.time);
        let cpu = cpu as usize;
        if d.cpus.len() <= cpu {
            d.cpus.resize(cpu + 1, CpuStats::default());
        }
        d.cpus[cpu].nelems += 1;
        // dump_trace runs for records with any category bit (act_mask -1):
        // every record has one, its direction's (`ddir_act`).
        if d.events == 0 || ev.time < d.first_reported {
            d.first_reported = ev.time;
        }
        d.events += 1;
        // The record's WRITE category, which the writer sets from the op.
        let w = usize::from(ev.op.is_write());
        dump_trace_fs(d, cpu, ev, w);
    }

    #[inline]
    fn dev(&mut self, id: DevId, ctx: &TraceCtx) -> &mut DevStats {
        let i = id as usize;
        match self.index.get(i) {
            Some(&n) if n != 0 => &mut self.devs[n as usize - 1],
            _ => self.new_dev(id, ctx),
        }
    }

    /// A device's first event: its figures start.
    #[cold]
    fn new_dev(&mut self, id: DevId, ctx: &TraceCtx) -> &mut DevStats {
        let i = id as usize;
        if self.index.len() <= i {
            self.index.resize(i + 1, 0);
        }
        self.devs.push(DevStats {
            name: ctx.topo.dev(id).name.clone(),
            // CPU 0's slot from the start: every event lands there.
            cpus: vec![CpuStats::default()],
            events: 0,
            first_reported: 0,
            last_reported: 0,
            cur_depth: [0; 2],
            max_depth: [0; 2],
        });
        self.index[i] = self.devs.len() as u32;
        self.devs.last_mut().expect("just pushed")
    }

    /// The summary's text, devices in the order their first event came
    /// (as blkparse meets devices reading one stream).
    pub fn text(&self) -> String {
        let mut s = String::new();
        for (i, d) in self.devs.iter().enumerate() {
            if i > 0 {
                s.push('\n');
            }
            show_device(&mut s, d);
        }
        s
    }
}

/// The counters `dump_trace_fs` moves for one accounted event.
#[inline]
fn dump_trace_fs(d: &mut DevStats, cpu: usize, ev: &Event, w: usize) {
    let kb = u64::from(ev.bytes >> 10);
    let ios = &mut d.cpus[cpu].ios;
    match ev.action {
        Action::Queue => {
            ios.queued[w] += 1;
            ios.queued_kb[w] += kb;
        }
        Action::BackMerge | Action::FrontMerge => {
            ios.merged[w] += 1;
            ios.merged_kb[w] += kb;
        }
        Action::Requeue => {
            // "can happen if we miss traces, don't let it go below zero"
            d.cur_depth[w] = d.cur_depth[w].saturating_sub(1);
            ios.requeued[w] += 1;
            ios.issued_kb[w] = ios.issued_kb[w].wrapping_sub(kb);
        }
        Action::Issue => {
            ios.issued[w] += 1;
            ios.issued_kb[w] = ios.issued_kb[w].wrapping_add(kb);
            d.cur_depth[w] += 1;
            d.max_depth[w] = d.max_depth[w].max(d.cur_depth[w]);
        }
        Action::Complete => {
            d.cur_depth[w] = d.cur_depth[w].saturating_sub(1);
            ios.completed[w] += 1;
            ios.completed_kb[w] += kb;
        }
        Action::Unplug => ios.io_unplugs += 1,
        Action::UnplugTimer => ios.timer_unplugs += 1,
        Action::Split | Action::Remap | Action::GetRq | Action::Insert | Action::Plug => {}
    }
}

/// One device's part (`show_device_and_cpu_stats`).
fn show_device(s: &mut String, d: &DevStats) {
    let mut total = IoStats::default();
    let mut cpus = 0;
    for (j, c) in d.cpus.iter().enumerate() {
        if c.nelems == 0 {
            continue;
        }
        total.add(&c.ios);
        dump_io_stats(s, &format!("CPU{j} ({}):", d.name), &c.ios, Some(d.max_depth));
        cpus += 1;
    }
    if cpus > 1 {
        s.push('\n');
        dump_io_stats(s, &format!("Total ({}):", d.name), &total, None);
    }
    // Completed KiB over the whole milliseconds between the first accounted
    // event and the last one read, both integer divisions.
    let msec = (d.last_reported - d.first_reported) / 1_000_000;
    let rate = |kb: u64| (1000 * kb).checked_div(msec).unwrap_or(0);
    let (r, w) = (rate(total.completed_kb[0]), rate(total.completed_kb[1]));
    let _ = writeln!(s, "\nThroughput (R/W): {r}KiB/s / {w}KiB/s");
    let _ = writeln!(s, "Events ({}): {} entries", d.name, d.events);
    // blkstack's sequences have no gaps: no skips, a 0.0 % ratio.
    let _ = writeln!(s, "Skips: 0 forward (0 - {:5.1}%)", 0.0);
}

/// One block of figures (`dump_io_stats`); the depths only for a CPU's.
fn dump_io_stats(s: &mut String, title: &str, ios: &IoStats, depth: Option<[u32; 2]>) {
    let pair = |n: &[u64; 2], kb: &[u64; 2], w: usize| format!("{}, {}iB", size_cnv(n[w], false), size_cnv(kb[w], true));
    let _ = writeln!(s, "{title}");
    let _ = writeln!(s, " Reads Queued:    {}\t Writes Queued:    {}", pair(&ios.queued, &ios.queued_kb, 0), pair(&ios.queued, &ios.queued_kb, 1));
    let _ = writeln!(s, " Read Dispatches: {}\t Write Dispatches: {}", pair(&ios.issued, &ios.issued_kb, 0), pair(&ios.issued, &ios.issued_kb, 1));
    let _ = writeln!(s, " Reads Requeued:  {}\t\t Writes Requeued:  {}", size_cnv(ios.requeued[0], false), size_cnv(ios.requeued[1], false));
    let _ = writeln!(s, " Reads Completed: {}\t Writes Completed: {}", pair(&ios.completed, &ios.completed_kb, 0), pair(&ios.completed, &ios.completed_kb, 1));
    let _ = writeln!(s, " Read Merges:     {}\t Write Merges:     {}", pair(&ios.merged, &ios.merged_kb, 0), pair(&ios.merged, &ios.merged_kb, 1));
    if let Some([r, w]) = depth {
        let _ = writeln!(s, " Read depth:      {r:8}{:8}\t Write depth:      {w:8}", ' ');
    }
    let _ = writeln!(s, " IO unplugs:      {:8}{:8}\t Timer unplugs:    {:8}", ios.io_unplugs, ' ', ios.timer_unplugs);
}

/// blkparse's `size_cnv`: above a million, divide by 1000 and step the
/// suffix (none, K, M, G, P; KiB figures start at K). A count's empty
/// suffix is a NUL that ends the string, so it prints nothing.
fn size_cnv(mut num: u64, in_kb: bool) -> String {
    const SUFFIX: [&str; 5] = ["", "K", "M", "G", "P"];
    let mut i = usize::from(in_kb);
    while num > 1_000_000 && i < SUFFIX.len() - 1 {
        i += 1;
        num /= 1000;
    }
    format!("{num:8}{}", SUFFIX[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_cnv_steps_past_a_million() {
        // "%'8Lu%c": 4 fits in 8 columns; 1,000,001 counts become 1000K;
        // 2,500,000 KiB becomes 2500 MiB.
        assert_eq!(size_cnv(4, false), "       4");
        assert_eq!(size_cnv(1_000_001, false), "    1000K");
        assert_eq!(size_cnv(1_000_000, true), " 1000000K");
        assert_eq!(size_cnv(2_500_000, true), "    2500M");
    }

    fn dev_with(cpus: Vec<CpuStats>, first: u64, last: u64) -> DevStats {
        DevStats { name: "sda".into(), cpus, events: 4, first_reported: first, last_reported: last, cur_depth: [0; 2], max_depth: [2, 1] }
    }

    #[test]
    fn two_cpus_get_a_total_block_and_the_throughput_of_both() {
        // CPU0 completed 1024 KiB of reads, CPU1 512 KiB of writes; CPU2
        // recorded nothing (no block). The span is 2.5 ms, whole ms 2:
        // 1000 * 1024 / 2 = 512000 and 1000 * 512 / 2 = 256000 KiB/s.
        let mut a = CpuStats { nelems: 3, ..Default::default() };
        a.ios.completed = [1, 0];
        a.ios.completed_kb = [1024, 0];
        let mut b = CpuStats { nelems: 1, ..Default::default() };
        b.ios.completed = [0, 1];
        b.ios.completed_kb = [0, 512];
        let mut s = String::new();
        show_device(&mut s, &dev_with(vec![a, b, CpuStats::default()], 1_000_000, 3_500_000));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.iter().filter(|l| l.starts_with("CPU")).count(), 2);
        let total = lines.iter().position(|l| *l == "Total (sda):").expect("a Total block");
        assert_eq!(lines[total - 1], "");
        assert_eq!(lines[total + 4], " Reads Completed:        1,     1024KiB\t Writes Completed:        1,      512KiB");
        // The Total block has no depth line: the unplugs follow the merges.
        assert!(lines[total + 6].starts_with(" IO unplugs:"));
        assert_eq!(lines[total + 7], "");
        assert_eq!(lines[total + 8], "Throughput (R/W): 512000KiB/s / 256000KiB/s");
        assert_eq!(lines[total + 9], "Events (sda): 4 entries");
        // A CPU block carries the device's depths, "%'8u%8c".
        assert_eq!(lines[6], " Read depth:             2        \t Write depth:             1");
    }

    #[test]
    fn under_a_millisecond_the_throughput_is_zero() {
        let mut a = CpuStats { nelems: 1, ..Default::default() };
        a.ios.completed_kb = [4, 0];
        let mut s = String::new();
        show_device(&mut s, &dev_with(vec![a], 0, 999_999));
        assert!(s.contains("\nThroughput (R/W): 0KiB/s / 0KiB/s\n"), "{s}");
    }
}
