//! B-WF2Q+, bfq's scheduling engine (block/bfq-wf2q.c), for the flat
//! hierarchy: every queue's entity sits in the root group's service tree of
//! its ioprio class.
//!
//! Each class has a virtual time and a tree of active entities ordered by
//! virtual finish time. An entity is eligible when its start is not after
//! the virtual time; the next one served is the eligible entity with the
//! smallest finish (ties: the one inserted first, as the rbtree puts an equal
//! key to the right). Serving `s` sectors advances the entity's service and
//! the class's virtual time by `s / wsum`; finish = start + budget / weight.
//! An entity that goes idle with its finish still ahead of the virtual time
//! waits in the idle tree (its weight stays in `wsum`) so that it cannot
//! restart earlier than that finish.

/// `WFQ_SERVICE_SHIFT`: fixed-point shift of virtual times.
pub const WFQ_SERVICE_SHIFT: u32 = 22;
/// `BFQ_IOPRIO_CLASSES`: RT, BE, IDLE service trees.
pub const BFQ_IOPRIO_CLASSES: usize = 3;
/// `BFQ_CL_IDLE_TIMEOUT` in jiffies (HZ / 5).
pub const BFQ_CL_IDLE_TIMEOUT: i64 = crate::profile::HZ as i64 / 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tree {
    None,
    Active,
    Idle,
}

/// `struct bfq_entity` of a queue.
#[derive(Clone, Debug)]
pub struct Entity {
    /// Weight in force: `orig_weight · wr_coeff`.
    pub weight: u64,
    pub orig_weight: u64,
    pub new_weight: u64,
    pub prio_changed: bool,
    /// Class index in force (0 RT, 1 BE, 2 IDLE) and the one pending.
    pub class: usize,
    pub new_class: usize,
    /// The queue's weight-raising coefficient (`bfqq->wr_coeff`).
    pub wr_coeff: u64,
    pub start: u64,
    pub finish: u64,
    pub budget: i64,
    pub service: i64,
    pub tree: Tree,
    /// `on_st_or_in_serv`: counted in its tree's `wsum`.
    pub on_st: bool,
    /// Insertion order, the tie-break among equal finish times.
    seq: u64,
}

impl Entity {
    pub fn new(weight: u64, class: usize) -> Self {
        Entity {
            weight,
            orig_weight: weight,
            new_weight: weight,
            prio_changed: false,
            class,
            new_class: class,
            wr_coeff: 1,
            start: 0,
            finish: 0,
            budget: 0,
            service: 0,
            tree: Tree::None,
            on_st: false,
            seq: 0,
        }
    }
}

/// `struct bfq_service_tree`.
#[derive(Clone, Debug, Default)]
pub struct ServiceTree {
    pub vtime: u64,
    pub wsum: u64,
    active: Vec<usize>,
    idle: Vec<usize>,
}

/// The root `struct bfq_sched_data` and the entities of every queue, by
/// queue index.
#[derive(Clone, Debug, Default)]
pub struct Wf2q {
    pub ents: Vec<Entity>,
    pub st: [ServiceTree; BFQ_IOPRIO_CLASSES],
    pub in_service: Option<usize>,
    pub next_in_service: Option<usize>,
    /// `bfq_class_idle_last_service`, jiffies.
    pub class_idle_last_service: i64,
    seq: u64,
}

/// `bfq_delta`: service mapped into virtual time.
pub fn bfq_delta(service: u64, weight: u64) -> u64 {
    (service << WFQ_SERVICE_SHIFT) / weight.max(1)
}

impl Wf2q {
    pub fn add_entity(&mut self, e: Entity) -> usize {
        self.ents.push(e);
        self.ents.len() - 1
    }

    /// `bfq_calc_finish`.
    fn calc_finish(&mut self, id: usize, service: i64) {
        let e = &mut self.ents[id];
        e.finish = e.start + bfq_delta(service.max(0) as u64, e.weight);
    }

    fn tree_of(&mut self, id: usize, t: Tree) -> &mut Vec<usize> {
        let c = self.ents[id].class;
        match t {
            Tree::Active => &mut self.st[c].active,
            _ => &mut self.st[c].idle,
        }
    }

    /// `bfq_insert` into the active or idle tree.
    fn insert(&mut self, id: usize, t: Tree) {
        self.seq += 1;
        self.ents[id].seq = self.seq;
        self.ents[id].tree = t;
        self.tree_of(id, t).push(id);
    }

    /// `bfq_extract` (and `bfq_active_extract` / `bfq_idle_extract`).
    fn extract(&mut self, id: usize) {
        let t = self.ents[id].tree;
        if t != Tree::None {
            self.tree_of(id, t).retain(|&x| x != id);
            self.ents[id].tree = Tree::None;
        }
    }

    /// `bfq_forget_entity`: out of `wsum`.
    fn forget_entity(&mut self, id: usize) {
        let e = &mut self.ents[id];
        e.on_st = false;
        self.st[e.class].wsum -= e.weight;
    }

    fn by_finish(&self, ids: &[usize]) -> Option<usize> {
        ids.iter().copied().min_by_key(|&i| (self.ents[i].finish, self.ents[i].seq))
    }

    /// `bfq_forget_idle`: with nothing active, the virtual time moves to the
    /// last idle finish; the first idle entity is dropped once the virtual
    /// time reached its finish.
    fn forget_idle(&mut self, c: usize) {
        let last = self.st[c].idle.iter().copied().max_by_key(|&i| (self.ents[i].finish, self.ents[i].seq));
        if let Some(l) = last {
            if self.st[c].active.is_empty() && self.ents[l].finish <= self.st[c].vtime {
                self.st[c].vtime = self.ents[l].finish;
            }
        }
        if let Some(f) = self.by_finish(&self.st[c].idle.clone()) {
            if self.ents[f].finish <= self.st[c].vtime {
                self.extract(f);
                self.forget_entity(f);
            }
        }
    }

    /// `__bfq_entity_update_weight_prio`: apply a pending weight or class
    /// change; the weight in force is `orig_weight · wr_coeff`.
    pub fn update_weight_prio(&mut self, id: usize, update_class_too: bool) {
        if !self.ents[id].prio_changed {
            return;
        }
        let old = self.ents[id].class;
        let e = &mut self.ents[id];
        self.st[old].wsum -= e.weight;
        e.orig_weight = e.new_weight.clamp(1, 1000);
        if update_class_too {
            e.class = e.new_class;
        }
        if e.class == e.new_class {
            e.prio_changed = false;
        }
        e.weight = e.orig_weight * e.wr_coeff;
        let new = e.class;
        self.st[new].wsum += e.weight;
        if new != old {
            self.ents[id].start = self.st[new].vtime;
        }
    }

    /// `bfq_update_fin_time_enqueue`: finish from the budget; a backshifted
    /// entity whose finish fell behind the virtual time is pushed up to it
    /// (by a `wr_coeff`-th of the gap when weight-raised).
    fn update_fin_time_enqueue(&mut self, id: usize, backshifted: bool) {
        self.update_weight_prio(id, true);
        let budget = self.ents[id].budget;
        self.calc_finish(id, budget);
        let vtime = self.st[self.ents[id].class].vtime;
        let e = &mut self.ents[id];
        if backshifted && vtime > e.finish {
            let delta = (vtime - e.finish) / e.wr_coeff.max(1);
            e.start += delta;
            e.finish += delta;
        }
        self.insert(id, Tree::Active);
    }

    /// `__bfq_activate_entity`: a true activation. An entity back from the
    /// idle tree starts no earlier than its old finish; one that waited for
    /// a request without blocking (`non_blocking_wait_rq`) may start at its
    /// old finish even behind the virtual time.
    fn activate_entity(&mut self, id: usize, non_blocking_wait_rq: bool) {
        let c = self.ents[id].class;
        let vtime = self.st[c].vtime;
        let (backshifted, min_vstart) = if non_blocking_wait_rq && vtime > self.ents[id].finish {
            (true, self.ents[id].finish)
        } else {
            (false, vtime)
        };
        if self.ents[id].tree == Tree::Idle {
            self.extract(id);
            let e = &mut self.ents[id];
            e.start = min_vstart.max(e.finish);
        } else {
            let e = &mut self.ents[id];
            e.start = min_vstart;
            e.on_st = true;
            self.st[c].wsum += e.weight;
        }
        self.update_fin_time_enqueue(id, backshifted);
    }

    /// `__bfq_requeue_entity`: the in-service entity restarts where its
    /// service ended; an active one is repositioned for a new budget.
    fn requeue_entity(&mut self, id: usize) {
        if self.in_service == Some(id) {
            let service = self.ents[id].service;
            self.calc_finish(id, service);
            self.ents[id].start = self.ents[id].finish;
        }
        self.extract(id);
        self.update_fin_time_enqueue(id, false);
    }

    /// `bfq_activate_requeue_entity`.
    pub fn activate_requeue(&mut self, id: usize, non_blocking_wait_rq: bool, expiration: bool, now_j: i64) {
        if self.in_service == Some(id) || self.ents[id].tree == Tree::Active {
            self.requeue_entity(id);
        } else {
            self.activate_entity(id, non_blocking_wait_rq);
        }
        self.update_next_in_service(Some(id), expiration, now_j);
    }

    /// `__bfq_deactivate_entity` and `bfq_deactivate_entity`.
    pub fn deactivate(&mut self, id: usize, ins_into_idle_tree: bool, expiration: bool, now_j: i64) {
        if !self.ents[id].on_st {
            return;
        }
        let service = self.ents[id].service;
        self.calc_finish(id, service);
        let in_service = self.in_service == Some(id);
        if in_service {
            self.in_service = None;
        } else {
            self.ents[id].service = 0;
        }
        self.extract(id);
        let vtime = self.st[self.ents[id].class].vtime;
        if !ins_into_idle_tree || self.ents[id].finish <= vtime {
            self.forget_entity(id);
        } else {
            self.insert(id, Tree::Idle);
        }
        if self.next_in_service == Some(id) {
            self.update_next_in_service(None, expiration, now_j);
        }
    }

    /// `bfq_bfqq_served`: charge `served` sectors.
    pub fn served(&mut self, id: usize, served: i64) {
        let c = self.ents[id].class;
        self.ents[id].service += served;
        let wsum = self.st[c].wsum;
        self.st[c].vtime += bfq_delta(served.max(0) as u64, wsum);
        self.forget_idle(c);
    }

    /// `__bfq_lookup_next_entity`: jump the virtual time to the smallest
    /// start when nothing is in service, then the eligible entity with the
    /// smallest finish.
    fn lookup_in_tree(&mut self, c: usize, in_service: bool) -> Option<usize> {
        let st = &self.st[c];
        let min_start = st.active.iter().map(|&i| self.ents[i].start).min()?;
        let new_vtime = min_start.max(st.vtime);
        if !in_service && new_vtime > st.vtime {
            self.st[c].vtime = new_vtime;
            self.forget_idle(c);
        }
        let eligible: Vec<usize> = self.st[c].active.iter().copied().filter(|&i| self.ents[i].start <= new_vtime).collect();
        self.by_finish(&eligible)
    }

    /// `bfq_lookup_next_entity`: RT, then BE, then IDLE, except that the
    /// idle class is served first once `BFQ_CL_IDLE_TIMEOUT` passed.
    fn lookup_next_entity(&mut self, expiration: bool, now_j: i64) -> Option<usize> {
        let mut first = 0;
        if self.class_idle_last_service + BFQ_CL_IDLE_TIMEOUT < now_j {
            if !self.st[2].active.is_empty() {
                first = 2;
            }
            self.class_idle_last_service = now_j;
        }
        let in_service = self.in_service.is_some() && !expiration;
        (first..BFQ_IOPRIO_CLASSES).find_map(|c| self.lookup_in_tree(c, in_service))
    }

    /// `bfq_update_next_in_service`: a newly activated entity replaces the
    /// cached next one without a lookup when it is in the same class,
    /// eligible and finishes earlier.
    pub fn update_next_in_service(&mut self, new: Option<usize>, expiration: bool, now_j: i64) {
        if let Some(n) = new.filter(|&n| Some(n) != self.next_in_service) {
            let without_lookup = match self.next_in_service {
                None => true,
                Some(cur) => {
                    let (ne, ce) = (&self.ents[n], &self.ents[cur]);
                    ne.class == ce.class && ne.start <= self.st[ne.class].vtime && ce.finish > ne.finish
                }
            };
            if without_lookup {
                self.next_in_service = Some(n);
                return;
            }
        }
        self.next_in_service = self.lookup_next_entity(expiration, now_j);
    }

    /// `next_queue_may_preempt`.
    pub fn next_may_preempt(&self) -> bool {
        self.next_in_service != self.in_service
    }

    /// `bfq_get_next_queue`: the cached next entity goes in service and
    /// leaves the active tree.
    pub fn get_next_queue(&mut self, now_j: i64) -> Option<usize> {
        let id = self.next_in_service?;
        self.in_service = Some(id);
        self.extract(id);
        self.update_next_in_service(None, false, now_j);
        Some(id)
    }

    pub fn is_active(&self, id: usize) -> bool {
        self.ents[id].tree == Tree::Active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1 << WFQ_SERVICE_SHIFT;

    fn two(w0: u64, w1: u64) -> Wf2q {
        let mut w = Wf2q::default();
        for wt in [w0, w1] {
            let id = w.add_entity(Entity::new(wt, 1));
            w.ents[id].budget = 1000;
        }
        w
    }

    #[test]
    fn activation_stamps_start_and_finish() {
        // Both start at vtime 0; finish = budget << 22 / weight:
        // 1000·2^22/100 = 10·2^22 and 1000·2^22/200 = 5·2^22.
        let mut w = two(100, 200);
        w.activate_requeue(0, false, false, 0);
        w.activate_requeue(1, false, false, 0);
        assert_eq!(w.ents[0].finish, 10 * S);
        assert_eq!(w.ents[1].finish, 5 * S);
        assert_eq!(w.st[1].wsum, 300);
        // Queue 1 finishes first: a new entity replaces the cached next one.
        assert_eq!(w.next_in_service, Some(1));
        assert_eq!(w.get_next_queue(0), Some(1));
    }

    #[test]
    fn service_advances_vtime_by_wsum() {
        // 300 sectors served with wsum 300 advance vtime by exactly 2^22.
        let mut w = two(100, 200);
        w.activate_requeue(0, false, false, 0);
        w.activate_requeue(1, false, false, 0);
        let q = w.get_next_queue(0).unwrap();
        w.served(q, 300);
        assert_eq!(w.st[1].vtime, S);
        assert_eq!(w.ents[1].service, 300);
    }

    #[test]
    fn requeue_restarts_at_service_end() {
        // Queue 1 (weight 200) served 400 sectors: finish = 0 + 400·2^22/200
        // = 2·2^22 becomes its start; new finish = 2 + 1000/200 = 7 (·2^22).
        // Queue 0 (finish 10) is eligible (start 0) but finishes later, so
        // 1 is next again after its requeue.
        let mut w = two(100, 200);
        w.activate_requeue(0, false, false, 0);
        w.activate_requeue(1, false, false, 0);
        let q = w.get_next_queue(0).unwrap();
        w.served(q, 400);
        w.activate_requeue(q, false, true, 0);
        w.in_service = None;
        assert_eq!(w.ents[1].start, 2 * S);
        assert_eq!(w.ents[1].finish, 7 * S);
        // vtime after 400 sectors with wsum 300 is 400/300·2^22 < 2·2^22, so
        // queue 1 (start 2·2^22) is not eligible: queue 0 is next.
        assert_eq!(w.next_in_service, Some(0));
    }

    #[test]
    fn idle_entity_restarts_no_earlier_than_its_finish() {
        // Queue 0 served 100 of its budget and went idle: finish =
        // 100·2^22/100 = 2^22 > vtime (100/300·2^22), so it waits in the
        // idle tree with its weight still in wsum; on reactivation it starts
        // at 2^22.
        let mut w = two(100, 200);
        w.ents[0].budget = 1000;
        w.activate_requeue(0, false, false, 0);
        w.next_in_service = Some(0);
        let q = w.get_next_queue(0).unwrap();
        assert_eq!(q, 0);
        w.activate_requeue(1, false, false, 0);
        w.served(0, 100);
        w.deactivate(0, true, true, 0);
        assert_eq!(w.ents[0].tree, Tree::Idle);
        assert_eq!(w.st[1].wsum, 300);
        w.ents[0].service = 0;
        w.activate_requeue(0, false, false, 0);
        assert_eq!(w.ents[0].start, S);
    }

    #[test]
    fn higher_class_first() {
        // An RT entity is chosen over a BE one whatever their finish.
        let mut w = Wf2q::default();
        let be = w.add_entity(Entity::new(100, 1));
        let rt = w.add_entity(Entity::new(10, 0));
        w.ents[be].budget = 10;
        w.ents[rt].budget = 100_000;
        w.activate_requeue(be, false, false, 0);
        w.activate_requeue(rt, false, false, 0);
        assert_eq!(w.get_next_queue(0), Some(rt));
    }
}
