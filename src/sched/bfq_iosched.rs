//! bfq's request scheduling (block/bfq-iosched.c): queues per process,
//! which queue is in service and for how long, budgets, idling, weight
//! raising and injection.
//!
//! One queue is in service at a time and dispatches its requests (nearest
//! first) until its budget (sectors) is used up, its budget timeout
//! (`timeout_sync`, 125 ms) passes, or it runs empty. An empty sync queue
//! keeps the device to itself for `slice_idle` when idling pays
//! (`bfq_better_to_idle`: a sequential I/O-bound queue on a rotational
//! disk, or an asymmetric scenario whose guarantees need it); otherwise it
//! expires and B-WF2Q+ ([`super::bfq_wf2q`]) picks the next queue. A queue
//! that expired for lack of requests and gets one back in time keeps its
//! slot (`non_blocking_wait_rq`) and may preempt the queue in service.
//! With `low_latency` a new queue of an interactive process is weight
//! raised (×30 for `bfq_wr_duration`), a soft real-time one ×3000.
//!
//! Left out: the peak-rate estimator (the maximum budget stays at
//! `bfq_default_max_budget` unless `max_budget` is set, and
//! `bfq_wr_duration` at its starting estimate), large-burst detection,
//! waker/wakee detection, merging of queues close in sector (queues of
//! processes started together merge: [`super::bfq_coop`]), the injection limit
//! measurements (the limit is its reset value), actuators, group
//! hierarchies (every queue in the root group).

use std::collections::{BTreeMap, HashMap};

use super::bfq_ioprio::{Ioprio, IoprioClass};
use super::bfq_params::*;
use super::bfq_queue::{bfq_choose_req, BfqQueue, BfqRq, SeekCost, BFQQ_SECT_THR_NONROT, LONG_AGO};
use super::bfq_wf2q::{Entity, Wf2q};
use crate::stats::diskstats::jiffies;

/// `enum bfqq_expiration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiration {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

/// Whether a queue belongs to a task's sync I/O or to the shared async
/// queue of an ioprio (`bfq_async_queue_prio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum QueueKey {
    Sync(u32),
    /// The async queue of an ioprio in a cgroup.
    Async(Ioprio, u32),
}

impl QueueKey {
    pub(super) fn of(task: u32, sync: bool, ioprio: Ioprio, group: u32) -> Self {
        if sync {
            QueueKey::Sync(task)
        } else {
            QueueKey::Async(ioprio, group)
        }
    }
}

/// `struct bfq_data`.
pub struct Bfq {
    pub p: BfqParams,
    pub rotational: bool,
    /// Groups with pending requests above which the scenario counts as
    /// asymmetric (profile switch `bfq_groups_asymmetric_above`).
    pub groups_asymmetric_above: u32,
    /// Queues of processes started together merge (profile switch
    /// `bfq_stable_merge`).
    pub stable_merge: bool,
    pub wf2q: Wf2q,
    pub queues: Vec<BfqQueue>,
    pub(super) by_key: HashMap<QueueKey, usize>,
    pub(super) rqs: HashMap<u32, BfqRq>,
    /// Queue of each request in the driver.
    pub(super) in_driver: HashMap<u32, usize>,
    queued: u32,
    tot_rq_in_driver: u32,
    busy_queues: [u32; 3],
    pub(super) wr_busy_queues: u32,
    /// `queue_weights_tree`: weight → queues counted.
    weights: BTreeMap<u64, u32>,
    pub in_service: Option<usize>,
    pub(super) last_position: u64,
    /// -1 until detected, then 0 or 1.
    pub(super) hw_tag: i32,
    max_rq_in_driver: u32,
    hw_tag_samples: u32,
    budgets_assigned: i64,
    bfq_max_budget: i64,
    last_budget_start: u64,
    last_idling_start: u64,
    /// Order in which queues became busy, the most recent last
    /// (`active_list`, which `list_add` fills at its head).
    active_order: Vec<usize>,
    /// The idle slice timer's expiry, ns.
    pub idle_timer: Option<u64>,
    /// `last_bfqq_created` of each group (the root group's is `bfqd`'s).
    pub(super) last_bfqq_created: HashMap<u32, usize>,
}

fn jif(now_ns: u64) -> i64 {
    jiffies(now_ns) as i64
}

impl Bfq {
    /// `bfq_init_queue`.
    pub fn new(p: BfqParams, rotational: bool, groups_asymmetric_above: u32) -> Self {
        Bfq {
            p,
            rotational,
            groups_asymmetric_above,
            stable_merge: true,
            wf2q: Wf2q::default(),
            queues: Vec::new(),
            by_key: HashMap::new(),
            rqs: HashMap::new(),
            in_driver: HashMap::new(),
            queued: 0,
            tot_rq_in_driver: 0,
            busy_queues: [0; 3],
            wr_busy_queues: 0,
            weights: BTreeMap::new(),
            in_service: None,
            last_position: 0,
            hw_tag: -1,
            max_rq_in_driver: 0,
            hw_tag_samples: 0,
            budgets_assigned: 0,
            bfq_max_budget: if p.max_budget > 0 { p.max_budget } else { BFQ_DEFAULT_MAX_BUDGET },
            last_budget_start: 0,
            last_idling_start: 0,
            active_order: Vec::new(),
            idle_timer: None,
            last_bfqq_created: HashMap::new(),
        }
    }

    /// `bfq_has_work`.
    pub fn has_work(&self) -> bool {
        self.queued > 0
    }

    pub fn queued(&self) -> usize {
        self.queued as usize
    }

    pub fn rq(&self, id: u32) -> Option<&BfqRq> {
        self.rqs.get(&id)
    }

    pub fn wr_busy_queues(&self) -> u32 {
        self.wr_busy_queues
    }

    fn tot_busy_queues(&self) -> u32 {
        self.busy_queues.iter().sum()
    }

    /// `bfq_max_budget`.
    fn max_budget(&self) -> i64 {
        if self.budgets_assigned < BFQ_STATS_MIN_BUDGETS {
            BFQ_DEFAULT_MAX_BUDGET
        } else {
            self.bfq_max_budget
        }
    }

    /// `bfq_min_budget`.
    fn min_budget(&self) -> i64 {
        self.max_budget() / 32
    }

    /// `bfq_wr_duration` at the peak rate bfq starts from (2/3 of
    /// `ref_rate`): `ref_wr_duration` · 3/2, 7 s · 1.5 rotational and
    /// 2.5 s · 1.5 non-rotational, in jiffies.
    fn wr_duration(&self) -> i64 {
        let (rate, dur) = if self.rotational { (14000, ms_to_jiffies(7000)) } else { (33000, ms_to_jiffies(2500)) };
        (rate * dur / (rate * 2 / 3)).clamp(ms_to_jiffies(3000), ms_to_jiffies(25000))
    }

    fn wr_rt_max_time(&self) -> i64 {
        ms_to_jiffies(300)
    }

    fn wr_min_idle_time(&self) -> i64 {
        ms_to_jiffies(2000)
    }

    fn budget_left(&self, q: usize) -> i64 {
        let e = &self.wf2q.ents[q];
        e.budget - e.service
    }

    /// `bfq_get_queue` / `bfq_init_bfqq`: the task's sync queue, or the
    /// async queue of its ioprio.
    pub fn get_queue(&mut self, task: u32, sync: bool, ioprio: Ioprio, group: u32, now_ns: u64) -> usize {
        let key = QueueKey::of(task, sync, ioprio, group);
        if let Some(&q) = self.by_key.get(&key) {
            return q;
        }
        let mb = self.max_budget();
        let q = self.queues.len();
        self.queues.push(BfqQueue::new(task, sync, ioprio, now_ns, jif(now_ns), mb));
        self.queues[q].group = group;
        let mut e = Entity::new(ioprio.weight(), ioprio.class.idx());
        e.prio_changed = true;
        self.wf2q.add_entity(e);
        self.by_key.insert(key, q);
        if sync && self.stable_merge {
            return self.do_or_sched_stable_merge(q, task);
        }
        q
    }

    /// `bfq_asymmetric_scenario`: queues of different weights, several
    /// classes busy, or more groups with pending requests than the switch
    /// allows (none here: every queue is in the root group).
    fn asymmetric_scenario(&self, q: Option<usize>) -> bool {
        let smallest = q.is_some_and(|q| {
            self.queues[q].in_weights_tree && self.weights.keys().next() == Some(&self.wf2q.ents[q].weight)
        });
        let varied = !smallest && self.weights.len() > 1;
        let b = &self.busy_queues;
        let classes = (b[0] > 0) as u32 + (b[1] > 0) as u32 + (b[2] > 0) as u32;
        varied || classes > 1 || self.groups_with_pending_reqs() > self.groups_asymmetric_above
    }

    /// `num_groups_with_pending_reqs`: cgroups other than the root whose
    /// queues have requests queued or in the driver.
    fn groups_with_pending_reqs(&self) -> u32 {
        let mut groups: Vec<u32> = self.queues.iter().filter(|q| q.group != 0 && (q.busy || q.dispatched > 0)).map(|q| q.group).collect();
        groups.sort_unstable();
        groups.dedup();
        groups.len() as u32
    }

    fn weights_tree_add(&mut self, q: usize) {
        if !self.queues[q].in_weights_tree {
            self.queues[q].in_weights_tree = true;
            *self.weights.entry(self.wf2q.ents[q].weight).or_default() += 1;
        }
    }

    fn weights_tree_remove(&mut self, q: usize) {
        if std::mem::take(&mut self.queues[q].in_weights_tree) {
            let w = self.wf2q.ents[q].weight;
            if let Some(c) = self.weights.get_mut(&w) {
                *c -= 1;
                if *c == 0 {
                    self.weights.remove(&w);
                }
            }
        }
    }

    /// Run a weight update of the entity with its weight counter kept
    /// right: a changed weight leaves its counter and joins the new one
    /// unless weight raised (`__bfq_entity_update_weight_prio`).
    fn with_weight_counter(&mut self, q: usize, f: impl FnOnce(&mut Wf2q)) {
        let prev = self.wf2q.ents[q].weight;
        let counted = self.queues[q].in_weights_tree;
        self.weights_tree_remove(q);
        f(&mut self.wf2q);
        let changed = self.wf2q.ents[q].weight != prev;
        if (counted && !changed) || (changed && self.queues[q].wr_coeff == 1) {
            self.weights_tree_add(q);
        }
    }

    fn update_weight_prio(&mut self, q: usize, update_class_too: bool) {
        self.with_weight_counter(q, |w| w.update_weight_prio(q, update_class_too));
    }

    /// Set a queue's weight-raising coefficient; the entity's weight
    /// follows at its next update (`prio_changed`).
    pub(super) fn set_wr_coeff(&mut self, q: usize, coeff: u64) {
        self.queues[q].wr_coeff = coeff;
        self.wf2q.ents[q].wr_coeff = coeff;
    }

    fn activate_requeue(&mut self, q: usize, nbwr: bool, expiration: bool, now_ns: u64) {
        self.with_weight_counter(q, |w| w.activate_requeue(q, nbwr, expiration, jif(now_ns)));
    }

    /// `bfq_add_bfqq_busy`.
    fn add_bfqq_busy(&mut self, q: usize, now_ns: u64) {
        let nbwr = self.queues[q].non_blocking_wait_rq;
        self.activate_requeue(q, nbwr, false, now_ns);
        let bq = &mut self.queues[q];
        bq.busy = true;
        self.busy_queues[bq.ioprio.class.idx()] += 1;
        if bq.dispatched == 0 && bq.wr_coeff == 1 {
            self.weights_tree_add(q);
        }
        if self.queues[q].wr_coeff > 1 {
            self.wr_busy_queues += 1;
        }
        self.active_order.retain(|&x| x != q);
        self.active_order.push(q);
    }

    /// `bfq_del_bfqq_busy`.
    fn del_bfqq_busy(&mut self, q: usize, expiration: bool, now_ns: u64) {
        let bq = &mut self.queues[q];
        bq.busy = false;
        self.busy_queues[bq.ioprio.class.idx()] -= 1;
        if bq.wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
        self.wf2q.deactivate(q, true, expiration, jif(now_ns));
        if self.queues[q].dispatched == 0 {
            self.weights_tree_remove(q);
        }
        self.active_order.retain(|&x| x != q);
    }

    /// `bfq_serv_to_charge`: async requests cost three times their size
    /// unless weight raised or the scenario is asymmetric.
    fn serv_to_charge(&self, rq: u32, q: usize) -> i64 {
        let s = self.rqs[&rq].sectors as i64;
        if self.queues[q].sync || self.queues[q].wr_coeff > 1 || self.asymmetric_scenario(Some(q)) {
            s
        } else {
            s * BFQ_ASYNC_CHARGE_FACTOR
        }
    }

    fn seek_cost(&self) -> SeekCost {
        SeekCost { back_max: self.p.back_seek_max * 2, back_penalty: self.p.back_seek_penalty }
    }

    pub(super) fn choose(&self, a: Option<u32>, b: Option<u32>, last: u64) -> Option<u32> {
        let get = |x: Option<u32>| x.map(|id| (id, self.rqs[&id]));
        bfq_choose_req(get(a), get(b), last, self.seek_cost())
    }

    /// `bfq_check_fifo`: once per service slot, the oldest request if its
    /// deadline passed.
    fn check_fifo(&mut self, q: usize, last: u32, now_ns: u64) -> Option<u32> {
        let bq = &mut self.queues[q];
        if bq.fifo_expire {
            return None;
        }
        bq.fifo_expire = true;
        let head = *bq.fifo.front()?;
        (head != last && now_ns >= self.rqs[&head].fifo_time).then_some(head)
    }

    /// `bfq_find_next_rq`: after `last` leaves, the expired FIFO head or the
    /// better of its neighbours in sector order (wrapping to the first).
    fn find_next_rq(&mut self, q: usize, last: u32, now_ns: u64) -> Option<u32> {
        if let Some(r) = self.check_fifo(q, last, now_ns) {
            return Some(r);
        }
        let key = (self.rqs[&last].sector, last);
        let sort = &self.queues[q].sort;
        let prev = sort.range(..key).next_back().map(|&(_, id)| id);
        let next = sort
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
            .next()
            .or_else(|| sort.iter().next().filter(|&&(_, id)| id != last))
            .map(|&(_, id)| id);
        self.choose(next, prev, key.0)
    }

    /// `bfq_updated_next_req`: a queue waiting for service gets the budget
    /// its new next request needs.
    pub(super) fn updated_next_req(&mut self, q: usize, now_ns: u64) {
        let Some(next) = self.queues[q].next_rq else { return };
        if Some(q) == self.in_service {
            return;
        }
        let e = &self.wf2q.ents[q];
        let new_budget = self.queues[q].max_budget.max(self.serv_to_charge(next, q)).max(e.service);
        if e.budget != new_budget {
            self.wf2q.ents[q].budget = new_budget;
            if self.wf2q.is_active(q) {
                self.activate_requeue(q, false, false, now_ns);
            }
        }
    }

    /// `bfq_remove_request`.
    pub(super) fn remove_request(&mut self, id: u32, now_ns: u64) {
        let r = self.rqs[&id];
        let q = r.queue;
        if self.queues[q].next_rq == Some(id) {
            self.queues[q].next_rq = self.find_next_rq(q, id, now_ns);
            self.updated_next_req(q, now_ns);
        }
        let bq = &mut self.queues[q];
        bq.fifo.retain(|&x| x != id);
        bq.queued[r.sync as usize] -= 1;
        self.queued -= 1;
        bq.sort.remove(&(r.sector, id));
        if bq.sort.is_empty() {
            bq.next_rq = None;
            if bq.busy && Some(q) != self.in_service {
                self.del_bfqq_busy(q, false, now_ns);
                let e = &mut self.wf2q.ents[q];
                e.budget = 0;
                e.service = 0;
            }
        }
    }

    /// `bfq_bfqq_update_budg_for_activation`: a queue that waited for this
    /// request without blocking and came back in time keeps the rest of its
    /// budget and asks to preempt; any other gets a fresh budget.
    fn update_budg_for_activation(&mut self, q: usize, arrived_in_time: bool) -> bool {
        let left = self.budget_left(q);
        let max_budget = self.queues[q].max_budget;
        if self.queues[q].non_blocking_wait_rq && arrived_in_time && left > 0 {
            let e = &mut self.wf2q.ents[q];
            e.budget = left.min(max_budget);
            e.service = 0;
            return true;
        }
        let charge = self.queues[q].next_rq.map_or(0, |n| self.serv_to_charge(n, q));
        let e = &mut self.wf2q.ents[q];
        e.service = 0;
        e.budget = max_budget.max(charge);
        self.queues[q].non_blocking_wait_rq = false;
        false
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival`.
    fn update_wr_on_rq_arrival(&mut self, q: usize, old_wr: u64, wr_or_deserves: bool, interactive: bool, soft_rt: bool, now_j: i64) {
        let (dur, rt, min_budget) = (self.wr_duration(), self.wr_rt_max_time(), self.min_budget());
        if old_wr == 1 && wr_or_deserves {
            if interactive {
                self.queues[q].service_from_wr = 0;
                self.set_wr_coeff(q, BFQ_WR_COEFF);
                self.queues[q].wr_cur_max_time = dur;
            } else {
                self.queues[q].wr_start_at_switch_to_srt = LONG_AGO;
                self.set_wr_coeff(q, BFQ_WR_COEFF * BFQ_SOFTRT_WEIGHT_FACTOR);
                self.queues[q].wr_cur_max_time = rt;
            }
            let e = &mut self.wf2q.ents[q];
            e.budget = e.budget.min(2 * min_budget);
        } else if old_wr > 1 {
            if interactive {
                self.set_wr_coeff(q, BFQ_WR_COEFF);
                self.queues[q].wr_cur_max_time = dur;
            } else if soft_rt {
                if self.queues[q].wr_cur_max_time != rt {
                    self.queues[q].wr_start_at_switch_to_srt = self.queues[q].last_wr_start_finish;
                    self.queues[q].wr_cur_max_time = rt;
                    self.set_wr_coeff(q, BFQ_WR_COEFF * BFQ_SOFTRT_WEIGHT_FACTOR);
                }
                self.queues[q].last_wr_start_finish = now_j;
            }
        }
    }

    /// `bfq_bfqq_higher_class_or_weight`.
    fn higher_class_or_weight(&self, q: usize, s: usize) -> bool {
        let (a, b) = (&self.queues[q], &self.queues[s]);
        a.ioprio.class < b.ioprio.class || self.wf2q.ents[q].weight > self.wf2q.ents[s].weight
    }

    /// `bfq_bfqq_softrt_next_start`.
    fn softrt_next_start(&self, q: usize, now_j: i64) -> i64 {
        let bq = &self.queues[q];
        let hz = crate::profile::HZ as i64;
        bq.soft_rt_next_start
            .max(bq.last_idle_bklogged + hz * bq.service_from_backlogged / BFQ_WR_MAX_SOFTRT_RATE)
            .max(now_j + jiffies(self.p.slice_idle_ns) as i64 + 4)
    }

    /// `bfq_bfqq_handle_idle_busy_switch`: a queue gets its first request
    /// after being empty.
    fn handle_idle_busy_switch(&mut self, q: usize, old_wr: u64, now_ns: u64) -> bool {
        let now_j = jif(now_ns);
        let bq = &self.queues[q];
        let idle_for_long_time = bq.dispatched == 0 && bq.budget_timeout + self.wr_min_idle_time() < now_j;
        let arrived_in_time = now_ns <= bq.ttime.last_end_request + 3 * self.p.slice_idle_ns;
        let default_weight = self.wf2q.ents[q].new_weight == 40;
        let soft_rt = !bq.totally_seeky() && bq.soft_rt_next_start < now_j && bq.dispatched == 0 && default_weight;
        let interactive = idle_for_long_time && default_weight;
        let wr_or_deserves = self.p.low_latency && (bq.wr_coeff > 1 || (bq.sync && (interactive || soft_rt)));
        let wants_to_preempt = self.update_budg_for_activation(q, arrived_in_time);
        self.queues[q].just_created = false;
        if self.p.low_latency && self.queues[q].split_time + self.wr_min_idle_time() < now_j {
            self.update_wr_on_rq_arrival(q, old_wr, wr_or_deserves, interactive, soft_rt, now_j);
            if old_wr != self.queues[q].wr_coeff {
                self.wf2q.ents[q].prio_changed = true;
            }
        }
        let bq = &mut self.queues[q];
        bq.last_idle_bklogged = now_j;
        bq.service_from_backlogged = 0;
        bq.softrt_update = false;
        self.add_bfqq_busy(q, now_ns);
        if let Some(s) = self.in_service {
            let preempt = (wants_to_preempt && self.queues[q].wr_coeff >= self.queues[s].wr_coeff)
                || self.higher_class_or_weight(q, s)
                || !self.better_to_idle(s);
            if preempt && self.wf2q.next_may_preempt() {
                self.expire(s, false, Expiration::Preempted, now_ns);
            }
        }
        interactive
    }

    /// `bfq_add_request`.
    fn add_request(&mut self, id: u32, now_ns: u64) {
        let r = self.rqs[&id];
        let q = r.queue;
        let now_j = jif(now_ns);
        let old_wr = self.queues[q].wr_coeff;
        self.queues[q].queued[r.sync as usize] += 1;
        self.queued += 1;
        if self.queues[q].sync {
            self.queues[q].update_io_intensity(now_ns);
        }
        self.queues[q].sort.insert((r.sector, id));
        let prev = self.queues[q].next_rq;
        self.queues[q].next_rq = self.choose(prev, Some(id), self.last_position);
        let mut interactive = false;
        if !self.queues[q].busy {
            interactive = self.handle_idle_busy_switch(q, old_wr, now_ns);
        } else {
            if self.p.low_latency
                && old_wr == 1
                && !r.sync
                && self.queues[q].last_wr_start_finish + ms_to_jiffies(500) < now_j
            {
                self.set_wr_coeff(q, BFQ_WR_COEFF);
                self.queues[q].wr_cur_max_time = self.wr_duration();
                self.wr_busy_queues += 1;
                self.wf2q.ents[q].prio_changed = true;
            }
            if prev != self.queues[q].next_rq {
                self.updated_next_req(q, now_ns);
            }
        }
        if self.p.low_latency && (old_wr == 1 || self.queues[q].wr_coeff == 1 || interactive) {
            self.queues[q].last_wr_start_finish = now_j;
        }
    }

    /// `bfq_update_has_short_ttime`: the think time is short unless the
    /// mean (once over 80 samples) exceeds half of `slice_idle`.
    fn update_has_short_ttime(&mut self, q: usize, now_ns: u64) {
        let bq = &mut self.queues[q];
        if !bq.sync || bq.ioprio.class == IoprioClass::Idle || self.p.slice_idle_ns == 0 {
            return;
        }
        if bq.split_time + ms_to_jiffies(2000) >= jif(now_ns) {
            return;
        }
        bq.has_short_ttime = !(bq.ttime.samples > 80 && bq.ttime.mean > self.p.slice_idle_ns >> 1);
    }

    /// `bfq_rq_enqueued`: a request for the queue we idle for ends the
    /// wait (unless it is small and more may follow), or the queue's slot
    /// if its budget timed out.
    fn rq_enqueued(&mut self, id: u32, now_ns: u64) {
        let r = self.rqs[&id];
        let q = r.queue;
        self.queues[q].last_request_pos = r.sector + r.sectors as u64;
        if Some(q) == self.in_service && self.queues[q].wait_request {
            let small = self.queues[q].queued[r.sync as usize] == 1 && r.sectors < 32;
            let timed_out = self.budget_timed_out(q, now_ns);
            if small && self.idling_boosts_thr_without_issues(q) && !timed_out {
                return;
            }
            self.queues[q].wait_request = false;
            self.idle_timer = None;
            if timed_out {
                self.expire(q, false, Expiration::BudgetTimeout, now_ns);
            }
        }
    }

    /// `bfq_insert_request` for a request of `task` (its ioprio) that
    /// found no merge.
    pub fn insert(&mut self, id: u32, task: u32, ioprio: Ioprio, group: u32, mut r: BfqRq, now_ns: u64) {
        let q = self.get_queue(task, r.sync, ioprio, group, now_ns);
        let q = self.queue_after_merge(task, q, jif(now_ns));
        r.queue = q;
        r.fifo_time = now_ns + self.p.fifo_expire_ns[r.sync as usize];
        self.rqs.insert(id, r);
        self.queues[q].update_io_thinktime(now_ns, self.p.slice_idle_ns);
        self.update_has_short_ttime(q, now_ns);
        self.queues[q].update_io_seektime(&r, self.rotational);
        self.add_request(id, now_ns);
        self.queues[q].fifo.push_back(id);
        self.rq_enqueued(id, now_ns);
    }

    fn budget_timed_out(&self, q: usize, now_ns: u64) -> bool {
        self.queues[q].budget_timeout <= jif(now_ns)
    }

    /// `bfq_may_expire_for_budg_timeout`.
    fn may_expire_for_budg_timeout(&self, q: usize, now_ns: u64) -> bool {
        (!self.queues[q].wait_request || self.budget_left(q) >= self.wf2q.ents[q].budget / 3)
            && self.budget_timed_out(q, now_ns)
    }

    /// `idling_boosts_thr_without_issues`: idling helps throughput on a
    /// rotational disk without command queueing, or for a sequential,
    /// I/O-bound queue with short think time (rotational, or no queueing);
    /// never while any queue is weight raised.
    pub(super) fn idling_boosts_thr_without_issues(&self, q: usize) -> bool {
        let bq = &self.queues[q];
        if bq.merged_away {
            // No point in idling for a queue that gets no requests any longer.
            return false;
        }
        let rot_without_queueing = self.rotational && self.hw_tag == 0;
        let seq_io_bound = !bq.seeky() && bq.io_bound && bq.has_short_ttime;
        let boosts = rot_without_queueing || ((self.rotational || self.hw_tag == 0) && seq_io_bound);
        boosts && self.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees`.
    fn idling_needed_for_service_guarantees(&self, q: usize) -> bool {
        let bq = &self.queues[q];
        if bq.merged_away {
            return false;
        }
        let tot = self.tot_busy_queues();
        (bq.wr_coeff > 1 && (self.wr_busy_queues < tot || self.tot_rq_in_driver >= bq.dispatched + 4))
            || self.asymmetric_scenario(Some(q))
            || tot == 1
    }

    /// `bfq_better_to_idle`.
    pub(super) fn better_to_idle(&self, q: usize) -> bool {
        if self.p.strict_guarantees {
            return true;
        }
        let bq = &self.queues[q];
        if self.p.slice_idle_ns == 0 || !bq.sync || bq.ioprio.class == IoprioClass::Idle {
            return false;
        }
        self.idling_boosts_thr_without_issues(q) || self.idling_needed_for_service_guarantees(q)
    }

    /// `bfq_bfqq_must_idle`.
    fn must_idle(&self, q: usize) -> bool {
        self.queues[q].sort.is_empty() && self.better_to_idle(q)
    }

    /// `bfq_bfqq_is_slow`: (slow, elapsed ms of the slot).
    fn is_slow(&self, q: usize, compensate: bool, now_ns: u64) -> (bool, i64) {
        if !self.queues[q].sync {
            return (false, 0);
        }
        let mut slow = self.queues[q].seeky();
        let end = if compensate { self.last_idling_start } else { now_ns };
        let delta_us = end.saturating_sub(self.last_budget_start) / 1000;
        if delta_us < 1000 {
            let ms = if self.rotational { self.p.slice_idle_ns / 1_000_000 } else { BFQ_MIN_TT / 1_000_000 };
            return (slow, ms as i64);
        }
        if delta_us > 20000 {
            slow = self.wf2q.ents[q].service < self.bfq_max_budget / 2;
        }
        (slow, (delta_us / 1000) as i64)
    }

    /// `bfq_bfqq_served`.
    fn served(&mut self, q: usize, s: i64) {
        let bq = &mut self.queues[q];
        if bq.wr_coeff > 1 {
            bq.service_from_wr += s;
        }
        bq.service_from_backlogged += s;
        self.wf2q.served(q, s);
    }

    /// `bfq_bfqq_charge_time`: a slow queue pays for the time it held the
    /// device as if it had been served at the maximum budget's rate.
    fn charge_time(&mut self, q: usize, time_ms: i64) {
        let timeout_ms = jiffies_to_ms(self.p.timeout);
        let bounded = time_ms.min(timeout_ms);
        let for_time = self.bfq_max_budget * bounded / timeout_ms.max(1);
        let e = &mut self.wf2q.ents[q];
        let tot = for_time.max(e.service);
        if tot > e.budget {
            e.budget = tot;
        }
        let extra = (tot - e.service).max(0);
        self.served(q, extra);
    }

    /// `__bfq_bfqq_recalc_budget`: the next budget of a sync queue grows
    /// when it used its budget or slot, shrinks to what it used when it ran
    /// empty; async queues always get the maximum.
    fn recalc_budget(&mut self, q: usize, reason: Expiration) {
        let min_budget = self.min_budget();
        let bq = &self.queues[q];
        let mut budget = if bq.wr_coeff == 1 { bq.max_budget } else { 2 * min_budget };
        if bq.sync && bq.wr_coeff == 1 {
            budget = match reason {
                Expiration::TooIdle if bq.dispatched > 0 => (budget * 2).min(self.bfq_max_budget),
                Expiration::TooIdle if budget > 5 * min_budget => budget - 4 * min_budget,
                Expiration::TooIdle => min_budget,
                Expiration::BudgetTimeout => (budget * 2).min(self.bfq_max_budget),
                Expiration::BudgetExhausted => (budget * 4).min(self.bfq_max_budget),
                Expiration::NoMoreRequests => self.wf2q.ents[q].service.max(min_budget),
                Expiration::Preempted => return,
            };
        } else if !bq.sync {
            budget = self.bfq_max_budget;
        }
        self.queues[q].max_budget = budget;
        if self.budgets_assigned >= BFQ_STATS_MIN_BUDGETS && self.p.max_budget == 0 {
            self.queues[q].max_budget = budget.min(self.bfq_max_budget);
        }
        if let Some(next) = self.queues[q].next_rq {
            let charge = self.serv_to_charge(next, q);
            self.wf2q.ents[q].budget = self.queues[q].max_budget.max(charge);
        }
    }

    /// `__bfq_bfqd_reset_in_service`.
    fn reset_in_service(&mut self) {
        if let Some(q) = self.in_service.take() {
            self.queues[q].wait_request = false;
        }
        self.idle_timer = None;
        self.wf2q.in_service = None;
    }

    /// `bfq_bfqq_expire`.
    pub fn expire(&mut self, q: usize, compensate: bool, reason: Expiration, now_ns: u64) {
        let now_j = jif(now_ns);

        let (slow, delta) = self.is_slow(q, compensate, now_ns);
        let e = &self.wf2q.ents[q];
        if self.queues[q].wr_coeff == 1
            && (slow || (reason == Expiration::BudgetTimeout && e.budget - e.service >= e.budget / 3))
        {
            self.charge_time(q, delta);
        }
        if self.p.low_latency && self.queues[q].wr_coeff == 1 {
            self.queues[q].last_wr_start_finish = now_j;
        }
        if self.p.low_latency && self.queues[q].sort.is_empty() {
            if self.queues[q].dispatched == 0 {
                self.queues[q].soft_rt_next_start = self.softrt_next_start(q, now_j);
            } else {
                self.queues[q].softrt_update = true;
            }
        }
        self.recalc_budget(q, reason);
        // __bfq_bfqq_expire
        if self.queues[q].sort.is_empty()
            && !(reason == Expiration::Preempted && self.idling_needed_for_service_guarantees(q))
        {
            if self.queues[q].dispatched == 0 {
                self.queues[q].budget_timeout = now_j;
            }
            self.del_bfqq_busy(q, true, now_ns);
        } else {
            self.activate_requeue(q, false, true, now_ns);
        }
        self.reset_in_service();
        if !self.queues[q].busy && reason != Expiration::BudgetTimeout && reason != Expiration::BudgetExhausted {
            self.queues[q].non_blocking_wait_rq = true;
        } else {
            self.wf2q.ents[q].service = 0;
        }
    }

    /// `__bfq_set_in_service_queue` and `bfq_set_budget_timeout`.
    fn set_in_service_queue(&mut self, now_ns: u64) -> Option<usize> {
        let q = self.wf2q.get_next_queue(jif(now_ns))?;
        self.queues[q].fifo_expire = false;
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        let coeff = if self.queues[q].wr_cur_max_time == self.wr_rt_max_time() {
            1
        } else {
            (self.wf2q.ents[q].weight / self.wf2q.ents[q].orig_weight.max(1)) as i64
        };
        self.last_budget_start = now_ns;
        self.queues[q].budget_timeout = jif(now_ns) + self.p.timeout * coeff;

        self.in_service = Some(q);
        Some(q)
    }

    /// `bfq_choose_bfqq_for_injection`: while idling for the in-service
    /// queue, a queue whose next request fits its budget, the most recently
    /// activated first, if fewer requests are in the driver than the
    /// injection limit (1 for a queue without short think time, else 0).
    fn choose_for_injection(&self, s: usize) -> Option<usize> {
        let sq = &self.queues[s];
        let always = sq.wr_coeff == 1 || !sq.has_short_ttime;
        let limit = (!sq.has_short_ttime) as u32;
        if self.tot_rq_in_driver >= limit {
            return None;
        }
        self.active_order.iter().rev().copied().find(|&q| {
            let bq = &self.queues[q];
            let Some(next) = bq.next_rq else { return false };
            (always || bq.wr_coeff > 1)
                && self.serv_to_charge(next, q) <= self.budget_left(q)
                && !(!self.rotational && self.rqs[&next].sectors >= BFQQ_SECT_THR_NONROT && self.tot_rq_in_driver >= 1)
        })
    }

    /// `bfq_select_queue`: keep the in-service queue while it has budget and
    /// requests (or idling for it pays), else expire it and take the next.
    fn select_queue(&mut self, now_ns: u64) -> Option<usize> {
        let mut cur = self.in_service;
        if let Some(q) = cur {
            if self.may_expire_for_budg_timeout(q, now_ns) && !self.must_idle(q) {
                self.expire(q, false, Expiration::BudgetTimeout, now_ns);
                cur = None;
            }
        }
        loop {
            let q = match cur {
                Some(q) => q,
                None => self.set_in_service_queue(now_ns)?,
            };
            if let Some(next) = self.queues[q].next_rq {
                if self.serv_to_charge(next, q) > self.budget_left(q) {
                    self.expire(q, false, Expiration::BudgetExhausted, now_ns);
                    cur = None;
                    continue;
                }
                if std::mem::take(&mut self.queues[q].wait_request) {
                    self.idle_timer = None;
                }
                return Some(q);
            }
            if self.queues[q].wait_request || (self.queues[q].dispatched != 0 && self.better_to_idle(q)) {
                let bq = &self.queues[q];
                if !self.idling_boosts_thr_without_issues(q)
                    && (bq.wr_coeff == 1 || self.wr_busy_queues > 1 || !bq.has_short_ttime)
                {
                    return self.choose_for_injection(q);
                }
                return None;
            }
            self.expire(q, false, Expiration::NoMoreRequests, now_ns);
            cur = None;
        }
    }

    /// `bfq_update_wr_data`: weight raising ends when its time is up or an
    /// interactive queue was served `max_service_from_wr`.
    pub(super) fn update_wr_data(&mut self, q: usize, now_j: i64) {
        let rt = self.wr_rt_max_time();
        let bq = &self.queues[q];
        if bq.wr_coeff > 1 {
            if bq.last_wr_start_finish + bq.wr_cur_max_time < now_j {
                if bq.wr_cur_max_time != rt || bq.wr_start_at_switch_to_srt + self.wr_duration() < now_j {
                    self.end_wr(q, now_j);
                } else {
                    // switch_back_to_interactive_wr
                    self.set_wr_coeff(q, BFQ_WR_COEFF);
                    self.queues[q].wr_cur_max_time = self.wr_duration();
                    self.queues[q].last_wr_start_finish = self.queues[q].wr_start_at_switch_to_srt;
                    self.wf2q.ents[q].prio_changed = true;
                }
            }
            let bq = &self.queues[q];
            if bq.wr_coeff > 1 && bq.wr_cur_max_time != rt && bq.service_from_wr > MAX_SERVICE_FROM_WR {
                self.end_wr(q, now_j);
            }
        }
        let e = &self.wf2q.ents[q];
        if (e.weight > e.orig_weight) != (self.queues[q].wr_coeff > 1) {
            self.update_weight_prio(q, false);
        }
    }

    /// `bfq_bfqq_end_wr`.
    fn end_wr(&mut self, q: usize, now_j: i64) {
        if self.queues[q].busy {
            self.wr_busy_queues -= 1;
        }
        self.set_wr_coeff(q, 1);
        self.queues[q].wr_cur_max_time = 0;
        self.queues[q].last_wr_start_finish = now_j;
        self.wf2q.ents[q].prio_changed = true;
    }

    /// `__bfq_dispatch_request`: the next request to issue, if any; `None`
    /// while idling for the in-service queue (`idle_timer` says until when).
    pub fn dispatch(&mut self, now_ns: u64) -> Option<u32> {
        if self.tot_busy_queues() == 0 || (self.p.strict_guarantees && self.tot_rq_in_driver > 0) {
            return None;
        }
        let q = self.select_queue(now_ns)?;
        let id = self.queues[q].next_rq?;
        let charge = self.serv_to_charge(id, q);
        self.served(q, charge);
        // bfq_dispatch_remove
        self.queues[q].dispatched += 1;
        let r = self.rqs[&id];
        self.last_position = r.sector + r.sectors as u64;
        self.remove_request(id, now_ns);
        self.in_driver.insert(id, q);
        self.tot_rq_in_driver += 1;
        if Some(q) == self.in_service {
            self.update_wr_data(q, jif(now_ns));
            if self.tot_busy_queues() > 1 && self.queues[q].ioprio.class == IoprioClass::Idle {
                self.expire(q, false, Expiration::BudgetExhausted, now_ns);
            }
        }
        Some(id)
    }

    /// `bfq_update_hw_tag`: command queueing is detected once more than
    /// three requests were in the driver over 32 samples.
    fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.tot_rq_in_driver);
        if self.hw_tag == 1 || self.tot_rq_in_driver + self.queued <= BFQ_HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(q) = self.in_service {
            let bq = &self.queues[q];
            if bq.has_short_ttime
                && bq.dispatched + bq.queued[0] + bq.queued[1] < BFQ_HW_QUEUE_THRESHOLD
                && self.tot_rq_in_driver < BFQ_HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= BFQ_HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = (self.max_rq_in_driver > BFQ_HW_QUEUE_THRESHOLD) as i32;
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
    }

    /// `bfq_arm_slice_timer`: idle `slice_idle` (at most `BFQ_MIN_TT` for a
    /// seeky queue in a symmetric scenario, at least 20 ms for a weight
    /// raised one).
    fn arm_slice_timer(&mut self, q: usize, now_ns: u64) {
        self.queues[q].wait_request = true;
        let mut sl = self.p.slice_idle_ns;
        if self.queues[q].seeky() && self.queues[q].wr_coeff == 1 && !self.asymmetric_scenario(Some(q)) {
            sl = sl.min(BFQ_MIN_TT);
        } else if self.queues[q].wr_coeff > 1 {
            sl = sl.max(20_000_000);
        }
        self.last_idling_start = now_ns;
        self.idle_timer = Some(now_ns + sl);
    }

    /// `bfq_completed_request` (from `bfq_finish_requeue_request`).
    pub fn completed(&mut self, id: u32, now_ns: u64) {
        let Some(q) = self.in_driver.remove(&id) else { return };
        self.rqs.remove(&id);
        self.update_hw_tag();
        self.tot_rq_in_driver -= 1;
        self.queues[q].dispatched -= 1;
        let now_j = jif(now_ns);
        if self.queues[q].dispatched == 0 && !self.queues[q].busy {
            self.queues[q].budget_timeout = now_j;
            self.weights_tree_remove(q);
        }
        self.queues[q].ttime.last_end_request = now_ns;
        let bq = &self.queues[q];
        if bq.softrt_update && bq.dispatched == 0 && bq.sort.is_empty() && bq.wr_coeff != BFQ_WR_COEFF {
            self.queues[q].soft_rt_next_start = self.softrt_next_start(q, now_j);
        }
        if self.in_service == Some(q) {
            if self.must_idle(q) {
                if self.queues[q].dispatched == 0 {
                    self.arm_slice_timer(q, now_ns);
                }
            } else if self.may_expire_for_budg_timeout(q, now_ns) {
                self.expire(q, false, Expiration::BudgetTimeout, now_ns);
            } else if self.queues[q].sort.is_empty() && (self.queues[q].dispatched == 0 || !self.better_to_idle(q)) {
                self.expire(q, false, Expiration::NoMoreRequests, now_ns);
            }
        }
    }

    /// `bfq_idle_slice_timer_body`: idling ended without a request.
    pub fn idle_timer_fired(&mut self, now_ns: u64) {
        self.idle_timer = None;
        let Some(q) = self.in_service else { return };
        self.queues[q].wait_request = false;
        let reason = if self.budget_timed_out(q, now_ns) {
            Expiration::BudgetTimeout
        } else if self.queues[q].queued == [0, 0] {
            Expiration::TooIdle
        } else {
            return;
        };
        self.expire(q, true, reason, now_ns);
    }
}

#[cfg(test)]
#[path = "bfq_iosched_tests.rs"]
mod tests;
