//! A text trace read on a thread of its own: the reader parses lines
//! ([`LineReader`]) into batches of records while the caller's thread
//! consumes the batch before, so that parsing and what is done with the
//! records (`blkstack stats`' accounting) take a core each. The batches
//! go through a bounded channel and come back empty to be filled again:
//! memory holds a few batches, whatever the trace's length, and the
//! records' strings (RWBS, task names) keep their allocations.
//!
//! The caller sees the lines as [`super::parse::TraceLines`] would give
//! them, in the same order; a read error ends the lines with that error
//! after the lines read before it. With one core to run on, the lines are
//! read on the caller's thread: two threads would take turns on it.

use std::io::{self, BufRead};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};

use super::parse::{BadLine, Line, LineReader, TraceAction, TraceRecord};

/// Lines per batch: large enough that handing a batch over costs little
/// per line, small enough that the batches in flight stay in the caches.
const BATCH_LINES: usize = 2048;

/// Full batches waiting for the consumer, beyond the one it holds.
const QUEUED: usize = 2;

/// One line of a batch; a record's fields are in [`Batch::records`], a
/// bad line's (rare) in a box of its own, to keep the kinds small.
enum Kind {
    Record,
    Skipped,
    Bad(Box<BadLine>),
}

/// Lines read, in order, and the records among them.
#[derive(Default)]
struct Batch {
    lines: Vec<Kind>,
    /// Slots for records; the first `used` hold this batch's.
    records: Vec<TraceRecord>,
    used: usize,
}

impl Batch {
    fn clear(&mut self) {
        self.lines.clear();
        self.used = 0;
    }

    /// The slot the next record is read into.
    fn slot(&mut self) -> &mut TraceRecord {
        if self.used == self.records.len() {
            self.records.push(TraceRecord::blank(TraceAction::Message));
        }
        &mut self.records[self.used]
    }

    fn push(&mut self, line: Line<()>) {
        self.lines.push(match line {
            Line::Record(()) => {
                self.used += 1;
                Kind::Record
            }
            Line::Skipped => Kind::Skipped,
            Line::Bad(b) => Kind::Bad(Box::new(b)),
        });
    }

    /// Each line to `f`, emptying the batch.
    fn replay(&mut self, f: &mut impl FnMut(Line<&TraceRecord>)) {
        let mut records = self.records.iter();
        for kind in self.lines.drain(..) {
            match kind {
                Kind::Record => {
                    if let Some(r) = records.next() {
                        f(Line::Record(r));
                    }
                }
                Kind::Skipped => f(Line::Skipped),
                Kind::Bad(b) => f(Line::Bad(*b)),
            }
        }
        self.used = 0;
    }
}

/// Every line of the text trace `src`, in order, to `f`, read on a second
/// thread when there is a second core.
pub fn for_each_line<R: BufRead + Send>(src: R, f: impl FnMut(Line<&TraceRecord>)) -> io::Result<()> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return for_each_line_here(src, f);
    }
    for_each_line_beside(src, f)
}

/// [`for_each_line`] with the lines read on a second thread.
fn for_each_line_beside<R: BufRead + Send>(src: R, mut f: impl FnMut(Line<&TraceRecord>)) -> io::Result<()> {
    let (full_tx, full_rx) = sync_channel::<io::Result<Batch>>(QUEUED);
    let (empty_tx, empty_rx) = channel::<Batch>();
    std::thread::scope(|s| {
        s.spawn(move || read_batches(src, full_tx, empty_rx));
        // The receiver is consumed here: an early return drops it, and a
        // reader waiting to hand over a batch then stops.
        for batch in full_rx {
            let mut batch = batch?;
            batch.replay(&mut f);
            // (A reader that has stopped takes no more batches back.)
            let _ = empty_tx.send(batch);
        }
        Ok(())
    })
}

/// [`for_each_line`] on the caller's thread.
fn for_each_line_here<R: BufRead>(src: R, mut f: impl FnMut(Line<&TraceRecord>)) -> io::Result<()> {
    let mut lines = super::parse::TraceLines::new(src);
    while let Some(line) = lines.next_line() {
        f(line?);
    }
    Ok(())
}

/// The reader thread: fill batches (one handed back, or a new one) and
/// hand them over until the trace ends, a read fails (the error is handed
/// over last) or the consumer has gone.
fn read_batches<R: BufRead>(src: R, full: SyncSender<io::Result<Batch>>, empty: Receiver<Batch>) {
    let mut reader = LineReader::new(src);
    loop {
        let mut batch = empty.try_recv().unwrap_or_default();
        batch.clear();
        let end = fill(&mut reader, &mut batch);
        if !batch.lines.is_empty() && full.send(Ok(batch)).is_err() {
            return;
        }
        match end {
            None => {}
            Some(Ok(())) => return,
            Some(Err(e)) => {
                let _ = full.send(Err(e));
                return;
            }
        }
    }
}

/// Read up to [`BATCH_LINES`] lines into `batch`: `None` when it is full
/// and lines may follow, else how the trace ended.
fn fill<R: BufRead>(reader: &mut LineReader<R>, batch: &mut Batch) -> Option<io::Result<()>> {
    while batch.lines.len() < BATCH_LINES {
        match reader.next_into(batch.slot()) {
            None => return Some(Ok(())),
            Some(Err(e)) => return Some(Err(e)),
            Some(Ok(line)) => batch.push(line),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `f` is given, in order, as text: a record by its line number,
    /// sector and task, a skipped line, a bad line by its number.
    fn seen(read: impl FnOnce(&mut dyn FnMut(Line<&TraceRecord>)) -> io::Result<()>) -> (Vec<String>, Option<String>) {
        let mut out = Vec::new();
        let end = read(&mut |line| {
            out.push(match line {
                Line::Record(r) => format!("{} {:?} {:?}", r.line, r.sector, r.comm),
                Line::Skipped => "skipped".into(),
                Line::Bad(b) => format!("bad {}", b.line),
            })
        });
        (out, end.err().map(|e| e.to_string()))
    }

    /// A trace of `n` lines: records in the fast reader's shape, one in
    /// the general reader's (`-t`'s elapsed field), blank lines and lines
    /// that do not parse, so that every kind falls in several batches and
    /// across their edges.
    fn trace(n: usize) -> String {
        (0..n)
            .map(|i| match i % 7 {
                3 => "\n".to_string(),
                5 if i % 3 == 0 => format!("  8,0    0 {i} 0.{i:09} 1  D  R {i} + 8 (12) [t{}]\n", i % 4),
                6 if i % 5 == 0 => format!("  8,0    0 {i} what\n"),
                _ => format!("  8,0    0 {i} 0.{i:09} 1  D  R {i} + 8 [t{}]\n", i % 4),
            })
            .collect()
    }

    #[test]
    fn lines_come_in_the_order_and_form_the_reader_gives_them() {
        // Lengths either side of a batch's edge and over several batches.
        for n in [0, 1, BATCH_LINES - 1, BATCH_LINES, BATCH_LINES + 1, 3 * BATCH_LINES + 17] {
            let text = trace(n);
            let want = seen(|f| for_each_line_here(text.as_bytes(), f));
            assert_eq!(want.0.len(), n);
            assert_eq!(seen(|f| for_each_line_beside(text.as_bytes(), f)), want, "{n} lines");
        }
    }

    /// A source whose reads fail once `ok` bytes are read.
    struct FailsAfter<'a> {
        text: &'a [u8],
        ok: usize,
    }

    impl io::Read for FailsAfter<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.ok == 0 {
                return Err(io::Error::other("device gone"));
            }
            let n = buf.len().min(self.ok).min(self.text.len());
            buf[..n].copy_from_slice(&self.text[..n]);
            (self.text, self.ok) = (&self.text[n..], self.ok - n);
            Ok(n)
        }
    }

    #[test]
    fn a_read_error_ends_the_lines_after_those_read_before_it() {
        // The error comes in the third batch: the lines before it are
        // given, as the reader on this thread gives them, then the error.
        let text = trace(3 * BATCH_LINES);
        let ok = text.len() * 5 / 6;
        let here = seen(|f| for_each_line_here(io::BufReader::with_capacity(4096, FailsAfter { text: text.as_bytes(), ok }), f));
        let beside = seen(|f| for_each_line_beside(io::BufReader::with_capacity(4096, FailsAfter { text: text.as_bytes(), ok }), f));
        assert_eq!(here.1.as_deref(), Some("device gone"));
        assert!(here.0.len() > 2 * BATCH_LINES && here.0.len() < 3 * BATCH_LINES, "{}", here.0.len());
        assert_eq!(beside, here);
    }

    #[test]
    fn a_consumer_that_stops_early_stops_the_reader() {
        // The consumer's thread panics at the first line: the reader,
        // waiting to hand over its next batch, ends instead of hanging.
        let text = trace(10 * BATCH_LINES);
        let stopped = std::panic::catch_unwind(|| for_each_line_beside(text.as_bytes(), |_| panic!("consumer stops")));
        assert!(stopped.is_err());
    }
}
