//! A state on a thread of its own, fed by the engine's thread in batches:
//! an observer that is a function of the messages it hears, in order
//! (the checks, the analysis), costs the engine a copy of each message
//! instead of its work. The batches arrive in order, so the state the
//! thread gives back is the one the messages would have built inline.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::critical_path::Follower;

/// Messages per batch: the engine's thread sends a batch (and takes an
/// empty one back) once per this many.
const BATCH: usize = 4096;
/// Batches on their way at most: the engine waits when the worker is this
/// far behind, so the memory held stays bounded.
const IN_FLIGHT: usize = 8;

/// The engine's end of a state `S` that a thread updates with messages `M`.
pub struct Worker<S, M> {
    batch: Vec<M>,
    full: Option<SyncSender<Vec<M>>>,
    empty: Receiver<Vec<M>>,
    handle: Option<JoinHandle<S>>,
}

impl<S: Send + Default + 'static, M: Send + 'static> Worker<S, M> {
    /// Move `state` onto a new thread called `name`, where `apply` takes
    /// each batch; `Err` gives the state back when no thread can be
    /// started.
    pub fn start(state: S, name: &str, apply: fn(&mut S, &[M])) -> Result<Self, S> {
        let (full, full_rx) = sync_channel::<Vec<M>>(IN_FLIGHT);
        let (empty_tx, empty) = sync_channel::<Vec<M>>(IN_FLIGHT + 1);
        // The state goes over once the thread runs: a failed spawn drops
        // its closure, and the state with it, had the closure taken it.
        let (give, taken) = std::sync::mpsc::channel::<S>();
        let mut follower = Follower::of_this_run();
        let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
            let Ok(mut state) = taken.recv() else { return S::default() };
            for mut batch in full_rx {
                follower.follow();
                apply(&mut state, &batch);
                batch.clear();
                let _ = empty_tx.try_send(batch);
            }
            state
        });
        let Ok(handle) = spawned else { return Err(state) };
        if let Err(e) = give.send(state) {
            return Err(e.0);
        }
        Ok(Worker { batch: Vec::with_capacity(BATCH), full: Some(full), empty, handle: Some(handle) })
    }

    /// Inline: every event of a plain run comes through here (the call
    /// cost about as much as the copy on merge4k, callgrind).
    #[inline(always)]
    pub fn push(&mut self, m: M) {
        self.batch.push(m);
        if self.batch.len() == BATCH {
            self.send();
        }
    }

    #[inline(never)]
    fn send(&mut self) {
        let next = self.empty.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batch, next);
        if let Some(full) = &self.full {
            // The thread ends only when this end hangs up, or by a panic,
            // which `finish` passes on.
            let _ = full.send(batch);
        }
    }

    /// Hand over what is left, wait for the thread, and give back the
    /// state every message built.
    pub fn finish(mut self) -> S {
        if !self.batch.is_empty() {
            self.send();
        }
        self.full = None;
        let handle = self.handle.take().expect("finished once");
        match handle.join() {
            Ok(s) => s,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_arrive_in_order_and_the_state_comes_back() {
        // 10,000 messages (two full batches of 4,096 and a partial one of
        // 1,808) appended in order: the state is 0..10,000.
        let mut w = Worker::start(Vec::<u32>::new(), "test-worker", |s: &mut Vec<u32>, b: &[u32]| s.extend_from_slice(b)).ok().expect("a thread");
        for i in 0..10_000 {
            w.push(i);
        }
        let got = w.finish();
        assert_eq!(got.len(), 10_000);
        assert!(got.iter().enumerate().all(|(i, &v)| v == i as u32));
    }
}
