//! The events a run keeps for the Python API, compactly: each event is a
//! few bytes of a byte stream (about 8-14, never the 56 of an [`Event`]),
//! decoded into one column at a time when Python asks for it.
//!
//! What repeats from event to event (device, task, action, rwbs, error,
//! source device) is one "kind", numbered the first time it is seen; an
//! event is then its kind's number, its time as the difference from the
//! previous event's, its sector as the difference from the previous sector
//! on the same device, its bytes, and its argument when it has one (X, A
//! and U), each as a LEB128 varint (signed differences zigzag-coded).
//! The stream is kept in chunks of [`CHUNK`] bytes, so it grows without
//! copying and ends at most one chunk past what it holds.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::{rwbs_of, Action, Event};
use crate::bio::Op;

/// Bytes per chunk of the stream.
const CHUNK: usize = 1 << 20;
/// The most one event takes: five varints, two of them 32-bit.
const MAX_EVENT: usize = 5 + 10 + 10 + 5 + 10;

/// Which events a store keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every event (`blkstack.run(events=True)`).
    All,
    /// The issued requests only ('D'; `events=False` still gives requests).
    Issues,
}

/// What events of one kind share.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    pub dev: u32,
    pub task: u32,
    pub action: Action,
    /// Into [`EventStore::rwbs_names`].
    pub rwbs: u16,
    pub error: i32,
    pub from_dev: u32,
    has_arg: bool,
}

/// The interning key of a kind: the rwbs letters come from (op, flags,
/// whether the event carries data), or are the trace's own (`trace_rwbs`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct KindKey {
    dev: u32,
    task: u32,
    from_dev: u32,
    error: i32,
    flags: u32,
    trace_rwbs: u32,
    op: Op,
    action: Action,
    nodata: bool,
    has_arg: bool,
}

/// Multiply-rotate hashing of the few words of a [`KindKey`]: the kind
/// is looked up once per event, and SipHash would cost more than the
/// encoding itself.
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u64(n as u32 as u64);
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(n as u64);
    }

    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
}

/// One decoded event, as the columns hold it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub kind: u32,
    pub time: u64,
    pub sector: u64,
    pub bytes: u32,
    pub arg: u64,
}

/// A column of [`EventStore::fill`]: its name (as Python knows it) and
/// the width of one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    TimeNs,
    Dev,
    Action,
    Rwbs,
    Sector,
    Bytes,
    NrSectors,
    Task,
    Error,
    Arg,
    FromDev,
    /// Issued requests only: the request's number on its device, from 0.
    Seq,
}

impl Column {
    pub const ALL: [Column; 12] = [
        Column::TimeNs,
        Column::Dev,
        Column::Action,
        Column::Rwbs,
        Column::Sector,
        Column::Bytes,
        Column::NrSectors,
        Column::Task,
        Column::Error,
        Column::Arg,
        Column::FromDev,
        Column::Seq,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Column::TimeNs => "time_ns",
            Column::Dev => "dev",
            Column::Action => "action",
            Column::Rwbs => "rwbs",
            Column::Sector => "sector",
            Column::Bytes => "bytes",
            Column::NrSectors => "nr_sectors",
            Column::Task => "task",
            Column::Error => "error",
            Column::Arg => "arg",
            Column::FromDev => "from_dev",
            Column::Seq => "seq",
        }
    }

    pub fn parse(name: &str) -> Option<Column> {
        Column::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Bytes per entry (little-endian u8/u16/u32/u64, i32 for errors, i64
    /// for seq).
    pub fn width(self) -> usize {
        match self {
            Column::Action => 1,
            Column::Rwbs => 2,
            Column::Dev | Column::Bytes | Column::NrSectors | Column::Task | Column::Error | Column::FromDev => 4,
            Column::TimeNs | Column::Sector | Column::Arg | Column::Seq => 8,
        }
    }
}

/// The compact event log (see the module documentation).
pub struct EventStore {
    keep: Keep,
    chunks: Vec<Vec<u8>>,
    kinds: Vec<Kind>,
    index: HashMap<KindKey, u32, BuildHasherDefault<WordHasher>>,
    /// Distinct rwbs strings, by code.
    pub rwbs_names: Vec<String>,
    rwbs_index: HashMap<String, u16>,
    /// Events kept, and of them issues ('D').
    len: usize,
    issues: usize,
    /// The encoder's state: the last time, and the last sector per device.
    last_time: u64,
    last_sector: Vec<u64>,
}

impl EventStore {
    pub fn new(keep: Keep) -> Self {
        EventStore {
            keep,
            chunks: Vec::new(),
            kinds: Vec::new(),
            index: HashMap::default(),
            rwbs_names: Vec::new(),
            rwbs_index: HashMap::new(),
            len: 0,
            issues: 0,
            last_time: 0,
            last_sector: Vec::new(),
        }
    }

    /// A store of the events of a parsed trace that *keep* keeps, each
    /// with the rwbs string the trace printed: `rwbs[i]` into `names`.
    pub fn from_trace(keep: Keep, events: &[Event], rwbs: &[u16], names: &[String]) -> Self {
        let mut s = EventStore::new(keep);
        for (ev, code) in events.iter().zip(rwbs) {
            if keep == Keep::Issues && ev.action != Action::Issue {
                continue;
            }
            let trace_rwbs = s.rwbs_code(&names[*code as usize]) as u32;
            s.push_as(ev, trace_rwbs);
        }
        s
    }

    pub fn keep(&self) -> Keep {
        self.keep
    }

    /// Events kept.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Issued requests ('D') kept.
    pub fn issues(&self) -> usize {
        self.issues
    }

    pub fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// Bytes the stream takes (for the memory figures).
    pub fn stream_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    /// Keep *ev* (when the store keeps its kind of event).
    #[inline]
    pub fn push(&mut self, ev: &Event) {
        if self.keep == Keep::Issues && ev.action != Action::Issue {
            return;
        }
        self.push_as(ev, u32::MAX);
    }

    fn push_as(&mut self, ev: &Event, trace_rwbs: u32) {
        let kind = self.kind_of(ev, trace_rwbs);
        let dev = ev.dev as usize;
        if self.last_sector.len() <= dev {
            self.last_sector.resize(dev + 1, 0);
        }
        let has_arg = self.kinds[kind as usize].has_arg;
        let dt = zigzag(ev.time.wrapping_sub(self.last_time));
        let ds = zigzag(ev.sector.wrapping_sub(self.last_sector[dev]));
        self.last_time = ev.time;
        self.last_sector[dev] = ev.sector;
        let out = self.room();
        put_varint(out, kind as u64);
        put_varint(out, dt);
        put_varint(out, ds);
        put_varint(out, ev.bytes as u64);
        if has_arg {
            put_varint(out, ev.arg);
        }
        self.len += 1;
        self.issues += (ev.action == Action::Issue) as usize;
    }

    /// The chunk with room for one more event.
    fn room(&mut self) -> &mut Vec<u8> {
        if self.chunks.last().map_or(true, |c| c.len() + MAX_EVENT > CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        self.chunks.last_mut().expect("a chunk was just pushed")
    }

    /// The number of *ev*'s kind, numbering it when it is new.
    #[inline]
    fn kind_of(&mut self, ev: &Event, trace_rwbs: u32) -> u32 {
        let key = KindKey {
            dev: ev.dev,
            task: ev.task,
            from_dev: ev.from_dev,
            error: ev.error,
            flags: if trace_rwbs == u32::MAX { ev.flags } else { 0 },
            trace_rwbs,
            op: if trace_rwbs == u32::MAX { ev.op } else { Op::Read },
            action: ev.action,
            nodata: trace_rwbs == u32::MAX && ev.bytes == 0,
            has_arg: ev.arg != 0,
        };
        if let Some(&k) = self.index.get(&key) {
            return k;
        }
        self.new_kind(key, ev)
    }

    #[cold]
    fn new_kind(&mut self, key: KindKey, ev: &Event) -> u32 {
        let rwbs = if key.trace_rwbs == u32::MAX {
            let letters = rwbs_of(ev.op, ev.flags, ev.bytes);
            self.rwbs_code(letters.as_str())
        } else {
            key.trace_rwbs as u16
        };
        let k = self.kinds.len() as u32;
        self.kinds.push(Kind { dev: ev.dev, task: ev.task, action: ev.action, rwbs, error: ev.error, from_dev: ev.from_dev, has_arg: key.has_arg });
        self.index.insert(key, k);
        k
    }

    fn rwbs_code(&mut self, s: &str) -> u16 {
        if let Some(&c) = self.rwbs_index.get(s) {
            return c;
        }
        let c = self.rwbs_names.len() as u16;
        self.rwbs_names.push(s.to_string());
        self.rwbs_index.insert(s.to_string(), c);
        c
    }

    /// Every event kept, in order.
    pub fn for_each(&self, mut f: impl FnMut(&Decoded)) {
        let mut d = Decoded::default();
        let mut last_sector = vec![0u64; self.last_sector.len()];
        for chunk in &self.chunks {
            let mut at = 0;
            while at < chunk.len() {
                d.kind = get_varint(chunk, &mut at) as u32;
                let kind = &self.kinds[d.kind as usize];
                d.time = d.time.wrapping_add(unzigzag(get_varint(chunk, &mut at)));
                let last = &mut last_sector[kind.dev as usize];
                d.sector = last.wrapping_add(unzigzag(get_varint(chunk, &mut at)));
                *last = d.sector;
                d.bytes = get_varint(chunk, &mut at) as u32;
                d.arg = if kind.has_arg { get_varint(chunk, &mut at) } else { 0 };
                f(&d);
            }
        }
    }

    /// The entries of each column (little-endian) into its buffer, which
    /// holds `width` bytes for each event kept, or with *issues_only* for
    /// each issued request: one pass over the stream for all of them.
    pub fn fill(&self, columns: &mut [(Column, &mut [u8])], issues_only: bool) {
        let mut seq = vec![0i64; self.last_sector.len()];
        let mut i = 0;
        self.for_each(|d| {
            let kind = &self.kinds[d.kind as usize];
            if issues_only && kind.action != Action::Issue {
                return;
            }
            for (column, out) in columns.iter_mut() {
                let w = column.width();
                put_entry(*column, d, kind, &mut seq, &mut out[i * w..(i + 1) * w]);
            }
            i += 1;
        });
    }

    /// How many entries [`EventStore::fill`] writes.
    pub fn rows(&self, issues_only: bool) -> usize {
        if issues_only {
            self.issues
        } else {
            self.len
        }
    }
}

/// One event's entry of *column* into *slot*.
#[inline]
fn put_entry(column: Column, d: &Decoded, kind: &Kind, seq: &mut [i64], slot: &mut [u8]) {
    match column {
        Column::TimeNs => slot.copy_from_slice(&d.time.to_le_bytes()),
        Column::Dev => slot.copy_from_slice(&kind.dev.to_le_bytes()),
        Column::Action => slot[0] = kind.action as u8,
        Column::Rwbs => slot.copy_from_slice(&kind.rwbs.to_le_bytes()),
        Column::Sector => slot.copy_from_slice(&d.sector.to_le_bytes()),
        Column::Bytes => slot.copy_from_slice(&d.bytes.to_le_bytes()),
        Column::NrSectors => slot.copy_from_slice(&(d.bytes >> 9).to_le_bytes()),
        Column::Task => slot.copy_from_slice(&kind.task.to_le_bytes()),
        Column::Error => slot.copy_from_slice(&kind.error.to_le_bytes()),
        Column::Arg => slot.copy_from_slice(&d.arg.to_le_bytes()),
        Column::FromDev => slot.copy_from_slice(&kind.from_dev.to_le_bytes()),
        Column::Seq => {
            let n = &mut seq[kind.dev as usize];
            slot.copy_from_slice(&n.to_le_bytes());
            *n += 1;
        }
    }
}

#[inline]
fn zigzag(delta: u64) -> u64 {
    let v = delta as i64;
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(z: u64) -> u64 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn get_varint(buf: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = buf[*at];
        *at += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bio::req;

    fn ev(time: u64, dev: u32, action: Action, op: Op, sector: u64, bytes: u32, arg: u64) -> Event {
        Event { time, dev, action, op, flags: 0, sector, bytes, task: 1, error: 0, arg, from_dev: 0 }
    }

    fn column<T: Copy>(s: &EventStore, c: Column, issues_only: bool, from: fn(&[u8]) -> T) -> Vec<T> {
        let mut out = vec![0u8; s.rows(issues_only) * c.width()];
        s.fill(&mut [(c, &mut out)], issues_only);
        out.chunks(c.width()).map(from).collect()
    }

    fn u64s(b: &[u8]) -> u64 {
        u64::from_le_bytes(b.try_into().unwrap())
    }

    #[test]
    fn every_field_comes_back_as_it_went_in() {
        // Times going back (another CPU's clock), sectors far apart on two
        // devices, a remap with its source, an error, a zero-byte flush.
        let mut events = vec![
            ev(1_000, 0, Action::Queue, Op::Write, 1 << 40, 524_288, 0),
            ev(900, 1, Action::Remap, Op::Write, 8, 4096, (1 << 40) + 8),
            ev(5_000_000_000, 1, Action::Issue, Op::Read, 0, 4096, 0),
            ev(5_000_000_001, 0, Action::Issue, Op::Flush, 0, 0, 0),
        ];
        events[1].from_dev = 0;
        events[2].error = -5;
        events[3].flags = req::PREFLUSH;
        let mut s = EventStore::new(Keep::All);
        for e in &events {
            s.push(e);
        }
        let mut back = Vec::new();
        s.for_each(|d| {
            let k = s.kinds()[d.kind as usize];
            back.push((d.time, k.dev, k.action, d.sector, d.bytes, k.error, d.arg, s.rwbs_names[k.rwbs as usize].clone()));
        });
        let want: Vec<_> = events
            .iter()
            .map(|e| (e.time, e.dev, e.action, e.sector, e.bytes, e.error, e.arg, crate::trace::rwbs(e.op, e.flags, e.bytes)))
            .collect();
        assert_eq!(back, want);
        // The flush with no data is blkparse's "FN".
        assert_eq!(want[3].7, "FN");
    }

    #[test]
    fn issues_only_keeps_the_requests_and_numbers_them_per_device() {
        let mut s = EventStore::new(Keep::Issues);
        for (i, dev) in [0u32, 1, 0, 0].into_iter().enumerate() {
            s.push(&ev(i as u64, dev, Action::Queue, Op::Write, 0, 4096, 0));
            s.push(&ev(i as u64 + 10, dev, Action::Issue, Op::Write, 8 * i as u64, 4096, 0));
        }
        assert_eq!((s.len(), s.issues()), (4, 4));
        // Device 0 issues its 0th, 1st and 2nd; device 1 its 0th.
        assert_eq!(column(&s, Column::Seq, true, |b| i64::from_le_bytes(b.try_into().unwrap())), vec![0, 0, 1, 2]);
        assert_eq!(column(&s, Column::Sector, true, u64s), vec![0, 8, 16, 24]);
    }

    #[test]
    fn an_event_takes_a_few_bytes() {
        // 4 KiB writes queued and issued in order on one disk: kind (1
        // byte), time step 1000 (2), sector step 8 (1), 4096 bytes (2).
        let mut s = EventStore::new(Keep::All);
        for i in 0..1000u64 {
            s.push(&ev(i * 1000, 0, Action::Queue, Op::Write, i * 8, 4096, 0));
        }
        assert_eq!(s.stream_bytes(), 1 + 1 + 1 + 2 + 999 * 6);
    }
}
