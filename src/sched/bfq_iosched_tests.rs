//! Hand-worked runs of bfq's queue selection. Times in ns; the device
//! serves one request at a time in 1 ms unless a test says otherwise.

use super::*;

const MS: u64 = 1_000_000;

fn rq(sector: u64, sectors: u32) -> BfqRq {
    BfqRq { sector, sectors, sync: true, meta: false, fifo_time: 0, queue: 0 }
}

fn bfq(slice_idle_ms: u64, low_latency: bool) -> Bfq {
    let mut p = BfqParams::default();
    p.set("slice_idle", slice_idle_ms).unwrap();
    p.low_latency = low_latency;
    Bfq::new(p, true, 1)
}

const BE4: Ioprio = Ioprio { class: IoprioClass::Be, level: 4 };

/// A sequential reader (task 1, 256-sector reads one at a time, the next
/// 0.1 ms after each completion) beside one random read of task 2 queued
/// at once. Returns the task of each dispatch, up to `n`.
fn seq_vs_one_random(b: &mut Bfq, n: usize) -> Vec<u32> {
    let mut order = Vec::new();
    let mut now = 0;
    b.insert(1, 1, BE4, 0, rq(0, 256), now);
    let first = b.dispatch(now).unwrap();
    order.push(b.queues[b.rq(first).unwrap().queue].task);
    b.insert(1000, 2, BE4, 0, rq(5_000_000, 8), now);
    let mut inflight = vec![first];
    let mut next_id = 2;
    while order.len() < n {
        if let Some(id) = b.dispatch(now) {
            order.push(b.queues[b.rq(id).unwrap().queue].task);
            inflight.push(id);
            continue;
        }
        let Some(done) = inflight.first().copied() else { break };
        inflight.remove(0);
        now += MS;
        let task = b.queues[b.rq(done).unwrap().queue].task;
        b.completed(done, now);
        if task == 1 {
            now += MS / 10;
            if let Some(t) = b.idle_timer.filter(|&t| t <= now) {
                b.idle_timer_fired(t);
            }
            b.insert(next_id, 1, BE4, 0, rq(256 * next_id as u64, 256), now);
            next_id += 1;
        }
    }
    order
}

#[test]
fn idling_keeps_the_sequential_reader_for_its_budget() {
    // low_latency off, slice_idle 8 ms, rotational: the sequential reader
    // is not seeky, I/O bound and has a short think time, so idling boosts
    // throughput (bfq_better_to_idle) and the random read waits. Its first
    // budget is max_budget = 2·16384/3 = 10922 sectors: 42 reads of 256
    // (10752) fit, the 43rd (256 > 170 left) expires the queue
    // (BUDGET_EXHAUSTED) after 42 · 1.1 ms, well inside the 124 ms
    // timeout. Then the random read goes.
    let mut b = bfq(8, false);
    let order = seq_vs_one_random(&mut b, 44);
    assert!(order[..42].iter().all(|&t| t == 1), "{order:?}");
    assert_eq!(order[42], 2);
}

#[test]
fn without_idling_the_random_read_goes_second() {
    // slice_idle 0: bfq_better_to_idle is false, so once the reader's
    // only request is in the driver its queue expires (NO_MORE_REQUESTS)
    // and the random reader's queue is selected.
    let mut b = bfq(0, false);
    let order = seq_vs_one_random(&mut b, 3);
    assert_eq!(order, vec![1, 2, 1]);
}

#[test]
fn weight_raising_makes_the_scenario_symmetric() {
    // low_latency on: both new queues are interactive (idle for long:
    // budget_timeout long ago) and raised ×30 with budget min(10922,
    // 2·512). With both raised, idling boosts nothing (wr_busy_queues > 0)
    // and two busy queues need no idling for guarantees, so the random
    // read arriving preempts the reader's empty in-service queue.
    let mut b = bfq(8, true);
    let order = seq_vs_one_random(&mut b, 3);
    assert_eq!(order, vec![1, 2, 1]);
    assert_eq!(b.queues[0].wr_coeff, 30);
    assert_eq!(b.queues[1].wr_coeff, 30);
}

#[test]
fn higher_weight_is_served_first() {
    // Both activated at vtime 0 with budget 10922: finish 10922·2^22/40
    // for level 4 and 10922·2^22/80 for level 0, which becomes the next
    // in service though it arrived second.
    let mut b = bfq(8, false);
    b.insert(1, 1, BE4, 0, rq(0, 8), 0);
    b.insert(2, 2, Ioprio { class: IoprioClass::Be, level: 0 }, 0, rq(1 << 20, 8), 0);
    assert_eq!(b.dispatch(0), Some(2));
}

#[test]
fn rt_class_preempts_be() {
    // An RT queue becoming busy is of a higher class than the in-service
    // BE queue (bfq_bfqq_higher_class_or_weight): the BE queue expires
    // (PREEMPTED, requeued since it still has a request) and RT goes next.
    let mut b = bfq(8, false);
    b.insert(1, 1, BE4, 0, rq(0, 8), 0);
    b.insert(2, 1, BE4, 0, rq(8, 8), 0);
    assert_eq!(b.dispatch(0), Some(1));
    b.insert(3, 2, Ioprio { class: IoprioClass::Rt, level: 4 }, 0, rq(1 << 20, 8), 0);
    assert_eq!(b.in_service, None);
    assert_eq!(b.dispatch(0), Some(3));
}

#[test]
fn async_writes_charged_three_times() {
    // An async queue's request of 8 sectors costs 3·8 = 24 of its budget
    // (bfq_async_charge_factor) when nothing is raised or asymmetric.
    let mut b = bfq(8, false);
    let mut w = rq(0, 8);
    w.sync = false;
    b.insert(1, 1, BE4, 0, w, 0);
    assert_eq!(b.dispatch(0), Some(1));
    assert_eq!(b.wf2q.ents[0].service, 24);
}

#[test]
fn idle_timer_expires_a_queue_that_stays_empty() {
    // The reader's request completes at 1 ms: it must idle, so the timer
    // is armed for 1 + 8 ms; nothing arrives, the timer fires and the
    // queue expires (TOO_IDLE), letting the random read go.
    let mut b = bfq(8, false);
    b.insert(1, 1, BE4, 0, rq(0, 256), 0);
    assert_eq!(b.dispatch(0), Some(1));
    b.insert(2, 2, BE4, 0, rq(5_000_000, 8), 0);
    assert_eq!(b.dispatch(0), None);
    b.completed(1, MS);
    assert_eq!(b.idle_timer, Some(9 * MS));
    assert_eq!(b.dispatch(2 * MS), None);
    b.idle_timer_fired(9 * MS);
    assert_eq!(b.dispatch(9 * MS), Some(2));
}

#[test]
fn nearest_request_first_within_a_queue() {
    // Last position 0 after nothing dispatched: of 100 and 50 (both
    // ahead) the nearer, 50, is the queue's next request; then 100.
    let mut b = bfq(8, false);
    b.insert(1, 1, BE4, 0, rq(100, 8), 0);
    b.insert(2, 1, BE4, 0, rq(50, 8), 0);
    assert_eq!(b.dispatch(0), Some(2));
    assert_eq!(b.dispatch(0), Some(1));
}

