//! The always-on [`Analysis`] on a thread of its own, fed by the engine's
//! thread: a long run's analysis then costs the engine a copy of each
//! event into a batch instead of the work per event. The analysis is a
//! function of the event sequence alone and the batches arrive in order, so
//! its figures are those of the analysis run inline.

use super::analysis::{Analysis, EventBrief};
use crate::genhd::DevId;
use crate::trace::Event;
use crate::worker::Worker;

/// What the engine hands the analysis, in the order it happened.
#[derive(Clone, Copy, Debug)]
enum Msg {
    Event(EventBrief),
    /// [`Analysis::untraced_merge`].
    UntracedMerge(DevId, u64),
}

/// The engine's end of an analysis running on its own thread.
pub struct AnalysisThread {
    worker: Worker<Analysis, Msg>,
}

impl AnalysisThread {
    /// Move `analysis` onto a new thread; `Err` gives it back when no
    /// thread can be started.
    pub fn start(analysis: Analysis) -> Result<Self, Analysis> {
        Worker::start(analysis, "blkstack-analysis", apply).map(|worker| AnalysisThread { worker })
    }

    /// Inline: out of line, its call and the event it takes by reference
    /// cost about as much as the copy (callgrind, merge4k).
    #[inline(always)]
    pub fn add(&mut self, ev: &Event) {
        self.worker.push(Msg::Event(EventBrief::of(ev)));
    }

    pub fn untraced_merge(&mut self, dev: DevId, sector: u64) {
        self.worker.push(Msg::UntracedMerge(dev, sector));
    }

    /// Hand over what is left, wait for the thread, and give back the
    /// analysis of every event.
    pub fn finish(self) -> Analysis {
        self.worker.finish()
    }
}

fn apply(analysis: &mut Analysis, batch: &[Msg]) {
    for m in batch {
        match *m {
            Msg::Event(ref ev) => analysis.add_inlined(ev),
            Msg::UntracedMerge(dev, sector) => analysis.untraced_merge(dev, sector),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Action;

    fn ev(time: u64, action: Action, sector: u64) -> Event {
        Event { time, dev: 0, action, op: crate::bio::Op::Write, flags: 0, sector, bytes: 4096, task: 0, error: 0, arg: 0, from_dev: 0 }
    }

    #[test]
    fn thread_gives_the_inline_figures() {
        // 3,000 requests of Q G D C (12,000 events: batches of 4,096 and
        // a partial one) and an untraced merge between them; each request
        // i at sector 8i, Q at 10i, G +1, D +3, C +10: Q2G 1, D2C 7,
        // Q2C 10 for each, seek 0 after the first. Inline and on the
        // thread, the same figures.
        let events: Vec<Event> = (0..3000u64)
            .flat_map(|i| {
                let t = 10 * i;
                [ev(t, Action::Queue, 8 * i), ev(t + 1, Action::GetRq, 8 * i), ev(t + 3, Action::Issue, 8 * i), ev(t + 10, Action::Complete, 8 * i)]
            })
            .collect();
        let mut inline = Analysis::default();
        let mut thread = AnalysisThread::start(Analysis::default()).ok().expect("a thread");
        for (i, e) in events.iter().enumerate() {
            inline.add(e);
            thread.add(e);
            if i == 5000 {
                inline.untraced_merge(0, 8);
                thread.untraced_merge(0, 8);
            }
        }
        let threaded = thread.finish();
        let (a, b) = (&inline.devices[0], &threaded.devices[0]);
        assert_eq!((a.stages, a.n_q, a.n_d), (b.stages, b.n_q, b.n_d));
        assert_eq!((&a.seek, &a.sizes, &a.blks), (&b.seek, &b.sizes, &b.blks));
        assert_eq!((b.n_q, b.stages[1].min, b.stages[1].max, b.stages[5].total), (3000, 1, 1, 7 * 3000));
        assert_eq!((b.stages[6].n, b.stages[6].min, b.seek.zero), (3000, 10, 2999));
    }
}
