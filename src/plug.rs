//! `struct blk_plug` (block/blk-core.c `blk_start_plug`, block/blk-mq.c
//! `blk_add_rq_to_plug`, `blk_attempt_plug_merge`).
//!
//! A task's plug holds requests it allocated until the plug is flushed.
//! Two version switches decide the order the list keeps (newest or oldest
//! first) and which single request a new bio may plug-merge with; flushing
//! lives in [`crate::mq`] because it dispatches into the queues.

use std::collections::VecDeque;

use crate::profile::{PlugAdd, PlugMerge};

/// A request in a plug: (queue index, request slot).
pub type RqRef = (u32, u32);

#[derive(Clone, Debug, Default)]
pub struct Plug {
    /// `mq_list`: front = list head. Changed only through the methods
    /// below, which keep `tail` with it.
    list: VecDeque<RqRef>,
    /// `mq_list.tail` (`struct rq_list` keeps a tail pointer): the request
    /// `blk_attempt_plug_merge` tries first (961296e89dc3, 6.16 and
    /// 6.12.35), read once per bio, where a ring's back is an index
    /// computed each time.
    tail: Option<RqRef>,
    /// `rq_count` (reset at the start of a flush, before the list empties).
    pub rq_count: u32,
    /// Never reset by a flush: they stay until the plug ends.
    pub multiple_queues: bool,
    pub has_elevator: bool,
}

impl Plug {
    /// A plug started with `list`, an empty list whose buffer is reused.
    pub fn with_list(list: VecDeque<RqRef>) -> Plug {
        debug_assert!(list.is_empty());
        Plug { list, ..Plug::default() }
    }

    /// `rq_list_peek`: the list head, the reference request of
    /// `blk_add_rq_to_plug` (newest under head-add, oldest under tail-add).
    pub fn peek(&self) -> Option<RqRef> {
        self.list.front().copied()
    }

    /// The list's tail: the newest request under tail-add, the oldest
    /// under head-add.
    #[inline(always)]
    pub fn tail(&self) -> Option<RqRef> {
        self.tail
    }

    /// The requests, head first.
    pub fn list(&self) -> &VecDeque<RqRef> {
        &self.list
    }

    /// The whole list, taken for a flush (`rq_list` moved out of the plug).
    pub fn take_list(&mut self) -> VecDeque<RqRef> {
        self.tail = None;
        std::mem::take(&mut self.list)
    }

    /// An emptied list's buffer back into a plug whose list is empty.
    pub fn restore_list(&mut self, list: VecDeque<RqRef>) {
        debug_assert!(list.is_empty());
        if self.list.is_empty() {
            self.list = list;
        }
    }

    /// The list's buffer, for the next plug.
    pub fn into_list(self) -> VecDeque<RqRef> {
        self.list
    }

    /// The list's only request, taken (`rq_list_pop` of a list of one).
    pub fn pop_only(&mut self) -> Option<RqRef> {
        debug_assert!(self.list.len() <= 1);
        self.tail = None;
        self.list.pop_front()
    }

    /// `blk_plug_max_rq_count`.
    pub fn max_rq_count(&self, base: u32) -> u32 {
        if self.multiple_queues {
            base * 2
        } else {
            base
        }
    }

    /// Insert a request (the rest of `blk_add_rq_to_plug`).
    pub fn add(&mut self, rq: RqRef, how: PlugAdd, has_elevator: bool) {
        if let Some((q, _)) = self.peek() {
            if q != rq.0 {
                self.multiple_queues = true;
            }
        }
        self.has_elevator |= has_elevator;
        match how {
            PlugAdd::Head => {
                // The first request added stays the tail.
                if self.list.is_empty() {
                    self.tail = Some(rq);
                }
                self.list.push_front(rq)
            }
            PlugAdd::Tail => {
                self.tail = Some(rq);
                self.list.push_back(rq)
            }
        }
        self.rq_count += 1;
    }

    /// The one request `blk_attempt_plug_merge` tries for a bio of queue `q`.
    #[inline(always)]
    pub fn merge_candidate(&self, q: u32, rule: PlugMerge) -> Option<RqRef> {
        match rule {
            PlugMerge::FirstFromHead => {
                // A plug of one queue: its head or nothing (6.1 only keeps
                // walking past other queues' requests when the plug holds
                // several queues).
                if !self.multiple_queues {
                    return self.list.front().copied().filter(|r| r.0 == q);
                }
                self.first_of_queue(q)
            }
            PlugMerge::TailThenFirstFromHead => match self.tail {
                Some(t) if t.0 == q => Some(t),
                Some(_) if self.multiple_queues => self.first_of_queue(q),
                _ => None,
            },
            // The first the walk tries (blk_attempt_plug_merge_walk in
            // mq.rs goes on to the others).
            PlugMerge::EveryFromTail => self.list.iter().rev().find(|r| r.0 == q).copied(),
        }
    }

    /// The request of queue `q` nearest the head, in a plug of several
    /// queues (out of line: a plug of one queue never walks).
    #[inline(never)]
    fn first_of_queue(&self, q: u32) -> Option<RqRef> {
        self.list.iter().find(|r| r.0 == q).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plug(how: PlugAdd, rqs: &[RqRef]) -> Plug {
        let mut p = Plug::default();
        for &r in rqs {
            p.add(r, how, false);
        }
        p
    }

    #[test]
    fn candidate_per_version() {
        // Requests 1, 2, 3 of queue 0 added in that order.
        let rqs = [(0, 1), (0, 2), (0, 3)];
        // 6.1: head-add, first from head = the newest.
        assert_eq!(plug(PlugAdd::Head, &rqs).merge_candidate(0, PlugMerge::FirstFromHead), Some((0, 3)));
        // 6.13-6.15: tail-add, first from head = the oldest (seed 001).
        assert_eq!(plug(PlugAdd::Tail, &rqs).merge_candidate(0, PlugMerge::FirstFromHead), Some((0, 1)));
        // 6.16+: the tail = the newest again.
        assert_eq!(plug(PlugAdd::Tail, &rqs).merge_candidate(0, PlugMerge::TailThenFirstFromHead), Some((0, 3)));
    }

    #[test]
    fn other_queue_at_the_tail() {
        // Queue 0 then queue 1: the tail is queue 1's, so a queue-0 bio
        // falls back to the oldest queue-0 request (several queues).
        let p = plug(PlugAdd::Tail, &[(0, 1), (0, 2), (1, 7)]);
        assert!(p.multiple_queues);
        assert_eq!(p.merge_candidate(0, PlugMerge::TailThenFirstFromHead), Some((0, 1)));
        assert_eq!(p.merge_candidate(2, PlugMerge::TailThenFirstFromHead), None);
    }
}
