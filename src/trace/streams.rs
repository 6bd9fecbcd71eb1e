//! A trace as `blkstack diff` compares it: per device and record kind, the
//! stream of its records in order, each kept as the few fields the
//! comparison reads (line, RWBS, sector, sectors, split point), about 32
//! bytes a record. Read line by line ([`read_trace_lines`]).

use std::collections::HashMap;

use super::blktrace::read_trace_lines;
use super::parse::{BadLine, Extra, Line, TraceAction};

/// "No value" in the u64 columns (no sector printed, not a split).
pub const ABSENT: u64 = u64::MAX;

/// The records of one device and kind, as columns.
#[derive(Default)]
pub struct Stream {
    /// The device's index in [`TraceStreams::devices`].
    pub dev: u32,
    pub action: &'static str,
    pub line: Vec<u64>,
    /// Index into [`TraceStreams::rwbs`].
    pub rwbs: Vec<u32>,
    pub sector: Vec<u64>,
    pub nr_sectors: Vec<u32>,
    /// X: the remainder's first sector; else [`ABSENT`].
    pub split: Vec<u64>,
}

#[derive(Default)]
pub struct TraceStreams {
    /// "maj,min", and "" (first) for records that name no device.
    pub devices: Vec<String>,
    pub rwbs: Vec<String>,
    /// In order of each stream's first record.
    pub streams: Vec<Stream>,
    /// Records read.
    pub count: usize,
    pub skipped: usize,
    pub bad: Vec<BadLine>,
}

/// Read the trace at `path` into streams.
pub fn read_streams(path: &str) -> std::io::Result<TraceStreams> {
    let mut t = TraceStreams { devices: vec![String::new()], ..Default::default() };
    let mut dev_ids: HashMap<String, u32> = HashMap::new();
    let mut rwbs_ids: HashMap<String, u32> = HashMap::new();
    let mut stream_ids: HashMap<(u32, TraceAction), usize> = HashMap::new();
    read_trace_lines(path, |line| {
        let r = match line {
            Line::Record(r) => r,
            Line::Skipped => return t.skipped += 1,
            Line::Bad(b) => return t.bad.push(b),
        };
        t.count += 1;
        let dev = match r.dev {
            None => 0,
            Some(d) => {
                let name = d.to_string();
                let next = t.devices.len() as u32;
                *dev_ids.entry(name).or_insert_with_key(|n| {
                    t.devices.push(n.clone());
                    next
                })
            }
        };
        let rwbs = match rwbs_ids.get(&r.rwbs) {
            Some(&i) => i,
            None => {
                let i = t.rwbs.len() as u32;
                t.rwbs.push(r.rwbs.clone());
                rwbs_ids.insert(r.rwbs.clone(), i);
                i
            }
        };
        let next = t.streams.len();
        let s = *stream_ids.entry((dev, r.action)).or_insert_with(|| {
            t.streams.push(Stream { dev, action: r.action.name(), ..Default::default() });
            next
        });
        let s = &mut t.streams[s];
        s.line.push(r.line as u64);
        s.rwbs.push(rwbs);
        s.sector.push(r.sector.unwrap_or(ABSENT));
        s.nr_sectors.push(r.nr_sectors);
        s.split.push(match (r.action, &r.extra) {
            (TraceAction::Model(super::Action::Split), Extra::Split { new_sector }) => *new_sector,
            _ => ABSENT,
        });
    })?;
    Ok(t)
}

/// What an event is compared by: its RWBS (an id common to both sides),
/// then, for a split, its sector and where it splits (a split carries no
/// size); else its sector and size, the sector only with data (blkparse
/// prints none for a flush, the tracepoints 0 or -1).
pub fn event_key(rwbs: u32, sector: u64, nr_sectors: u32, split: u64) -> (u32, u64, u64) {
    if split != ABSENT {
        (rwbs, sector, 1 << 63 | split)
    } else {
        (rwbs, if nr_sectors != 0 { sector } else { ABSENT }, nr_sectors as u64)
    }
}

/// Dense ids for the keys of two streams, common to both.
pub fn key_ids(a: impl Iterator<Item = (u32, u64, u64)>, b: impl Iterator<Item = (u32, u64, u64)>) -> (Vec<u32>, Vec<u32>, usize) {
    let mut ids: HashMap<(u32, u64, u64), u32> = HashMap::new();
    let mut intern = |k| {
        let next = ids.len() as u32;
        *ids.entry(k).or_insert(next)
    };
    let a: Vec<u32> = a.map(&mut intern).collect();
    let b: Vec<u32> = b.map(&mut intern).collect();
    (a, b, ids.len())
}
