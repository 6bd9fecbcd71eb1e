//! NVMe native multipath (drivers/nvme/host/multipath.c): the bio-based
//! head device (`nvme0n1`) over one namespace seen through several
//! controllers, each path a request-based disk of its own (`nvme0c0n1`,
//! `nvme0c1n1`, hidden in the kernel).
//!
//! `nvme_ns_head_submit_bio` splits a bio to the head's limits, picks a
//! path (`nvme_find_path`) and sends the bio itself there: `bio_set_dev`,
//! a remap trace from the head, `submit_bio_noacct` (no new 'Q': the bio
//! was queued on the head). Paths are chosen by the subsystem's `iopolicy`:
//!
//! * `numa` (default): the current path while it is optimized, else the
//!   nearest optimized path, else the nearest non-optimized one
//!   (`__nvme_find_path`); the model has one NUMA node, so the first
//!   usable path in list order;
//! * `round-robin`: the next usable path after the current one, optimized
//!   before non-optimized, the current one if nothing else is
//!   (`nvme_round_robin_path`);
//! * `queue-depth` (6.11+, switch `nvme_iopolicy_queue_depth`): the
//!   optimized path whose controller has the fewest active requests
//!   (`ctrl->nr_active`), stopping at an idle one, else the same among
//!   non-optimized paths (`nvme_queue_depth_path`).
//!
//! A path's ANA state decides whether it can be used: optimized and
//! non-optimized paths can, inaccessible, persistent-loss and change ones
//! cannot. With no usable path the kernel parks the bio on the head's
//! requeue list until a path comes back (or fails it when no controller is
//! live); the model has no ANA transitions during a run and fails it.
//!
//! Failover: a scenario may take a path's controller down at a time
//! (`[disks.X.multipath] fail`). From then on the path is disabled
//! (`nvme_path_is_disabled`: its controller is not live) and stops being
//! the current path (`nvme_mpath_clear_ctrl_paths`). A request the path's
//! queue issues after that fails at once with a host path error
//! (`nvme_fail_nonready_command`), and one in the device then ends with
//! one when it completes; either way `nvme_complete_rq` decides on
//! failover (`nvme_decide_disposition`: an `REQ_NVME_MPATH` request with a
//! path error) and `nvme_failover_req` steals its bios onto the head's
//! requeue list (their device the head again), ends the request with
//! status 0 and kicks the head's requeue work on kblockd, which
//! resubmits each bio to the head (`nvme_requeue_work`): a new path is
//! chosen and the bio remapped there ('A'; no second 'Q').

use crate::bio::BioId;
use crate::genhd::DevId;
use crate::mq::RequestQueue;
use crate::submit::{BioDriver, BlockCore, DriverSubmit, SimEvent, EIO, KWORKER};

/// The status a request failed over ends with: 0 (`blk_mq_end_request(req,
/// 0)` after its bios were stolen). Kept in `Request::error` until then as
/// this marker, which no errno takes.
pub const FAILED_OVER: i32 = i32::MIN;

/// The scenario's path failures and what failover has in hand, shared by
/// the heads and the paths' queues.
#[derive(Clone, Debug, Default)]
pub struct Failover {
    /// Each path disk with its head.
    pub head_of: Vec<(DevId, DevId)>,
    /// Path disks whose controller is down.
    pub down: Vec<DevId>,
    /// `head->requeue_list`: (head, bio) stolen from failed requests.
    pub requeue: Vec<(DevId, BioId)>,
}

impl Failover {
    pub fn is_down(&self, dev: DevId) -> bool {
        self.down.contains(&dev)
    }

    fn head(&self, path: DevId) -> Option<DevId> {
        self.head_of.iter().find(|&&(p, _)| p == path).map(|&(_, h)| h)
    }
}

/// Whether a request about to be issued on `dev` meets a controller that
/// is down (`nvme_check_ready` in `nvme_queue_rq`).
pub fn path_is_down(core: &BlockCore, dev: DevId) -> bool {
    core.mpath.as_deref().is_some_and(|f| f.is_down(dev))
}

/// `nvme_failover_req` for a request ending on a path whose controller is
/// down: its bios go back to the head's requeue list, the request ends
/// with status 0 ([`FAILED_OVER`] until then) and the head's requeue work
/// is kicked. False (nothing done) on a live path or a disk without a head.
pub fn nvme_failover_req(q: &mut RequestQueue, core: &mut BlockCore, id: u32) -> bool {
    let Some(f) = core.mpath.as_deref() else { return false };
    let Some(head) = f.head(q.dev).filter(|_| f.is_down(q.dev)) else { return false };
    let rq = q.rqs.get_mut(id);
    rq.error = FAILED_OVER;
    // blk_steal_bios: the chain leaves the request, each bio on the head.
    let mut next = Some(rq.bio);
    let mut stolen = Vec::new();
    while let Some(bio) = next {
        let b = core.bio_mut(bio);
        next = b.bi_next.take();
        b.dev = head;
        b.in_request = false;
        stolen.push((head, bio));
    }
    core.mpath.as_deref_mut().expect("checked").requeue.extend(stolen);
    core.schedule(core.now, SimEvent::DriverWork { dev: head });
    true
}

/// The subsystem's `iopolicy` (`/sys/class/nvme-subsystem/*/iopolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoPolicy {
    Numa,
    RoundRobin,
    QueueDepth,
}

impl IoPolicy {
    /// `nvme_subsys_iopolicy_store`'s names; `queue-depth` only where the
    /// profile has it.
    pub fn parse(s: &str, queue_depth: bool) -> Result<IoPolicy, String> {
        match s {
            "numa" => Ok(IoPolicy::Numa),
            "round-robin" => Ok(IoPolicy::RoundRobin),
            "queue-depth" if queue_depth => Ok(IoPolicy::QueueDepth),
            "queue-depth" => Err("queue-depth is a 6.11+ iopolicy (this profile has numa and round-robin)".into()),
            _ => Err(format!("'{s}' is not an iopolicy (numa, round-robin{})", if queue_depth { ", queue-depth" } else { "" })),
        }
    }
}

/// A path's Asymmetric Namespace Access state (`ns->ana_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnaState {
    Optimized,
    NonOptimized,
    Inaccessible,
    PersistentLoss,
    Change,
}

impl AnaState {
    /// The names `/sys/block/nvmeXcYnZ/ana_state` prints.
    pub fn parse(s: &str) -> Option<AnaState> {
        Some(match s {
            "optimized" => AnaState::Optimized,
            "non-optimized" => AnaState::NonOptimized,
            "inaccessible" => AnaState::Inaccessible,
            "persistent-loss" => AnaState::PersistentLoss,
            "change" => AnaState::Change,
            _ => return None,
        })
    }
}

/// One path: the controller's namespace disk, its ANA state, and whether
/// its controller is live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NsPath {
    pub dev: DevId,
    pub ana: AnaState,
    pub live: bool,
}

impl NsPath {
    pub fn new(dev: DevId, ana: AnaState) -> NsPath {
        NsPath { dev, ana, live: true }
    }

    /// The state path selection sees: a disabled path
    /// (`nvme_path_is_disabled`) is skipped as an unusable ANA state is.
    fn state(&self) -> AnaState {
        if self.live {
            self.ana
        } else {
            AnaState::Inaccessible
        }
    }
}

/// `struct nvme_ns_head`: the paths in list order, the policy and
/// `current_path` (one NUMA node); the scenario's path failures, by time,
/// still to come.
#[derive(Clone, Debug)]
pub struct NsHead {
    pub paths: Vec<NsPath>,
    pub iopolicy: IoPolicy,
    current: Option<usize>,
    /// (time ns, index in `paths`) of each path failure not yet applied.
    fails: Vec<(u64, usize)>,
}

impl NsHead {
    /// A head that went live: adding its disk scanned its partitions, one
    /// read through the head, which made the first usable path current
    /// (`__nvme_find_path`). `cleared`: setting the iopolicy since then
    /// cleared it again (`nvme_subsys_iopolicy_update`, 6.12; switch
    /// `nvme_iopolicy_clears_path`).
    pub fn new(paths: Vec<NsPath>, iopolicy: IoPolicy, cleared: bool) -> NsHead {
        let mut h = NsHead { paths, iopolicy, current: None, fails: Vec::new() };
        if !cleared {
            h.__nvme_find_path();
        }
        h
    }

    /// Take the path at index `path` of the list down at `at_ns`.
    pub fn fail_path_at(&mut self, path: usize, at_ns: u64) {
        self.fails.push((at_ns, path));
    }

    /// The controller of path `i` goes down: the path is disabled and no
    /// longer current (`nvme_mpath_clear_ctrl_paths`).
    fn path_down(&mut self, core: &mut BlockCore, i: usize) {
        self.paths[i].live = false;
        if self.current == Some(i) {
            self.current = None;
        }
        if let Some(f) = core.mpath.as_deref_mut() {
            f.down.push(self.paths[i].dev);
        }
    }

    /// `nvme_find_path`: the index of the path to use, given each path's
    /// controller's active requests (`depth`, read by queue-depth only).
    pub fn nvme_find_path(&mut self, depth: impl Fn(DevId) -> u32) -> Option<usize> {
        match self.iopolicy {
            IoPolicy::QueueDepth => self.nvme_queue_depth_path(depth),
            IoPolicy::RoundRobin => self.nvme_round_robin_path(),
            IoPolicy::Numa => self.nvme_numa_path(),
        }
    }

    /// `nvme_numa_path`: the current path while it is optimized.
    fn nvme_numa_path(&mut self) -> Option<usize> {
        match self.current {
            Some(c) if self.paths[c].state() == AnaState::Optimized => Some(c),
            _ => self.__nvme_find_path(),
        }
    }

    /// `__nvme_find_path` on one node (every distance `LOCAL_DISTANCE`):
    /// the first optimized path, else the first non-optimized one.
    fn __nvme_find_path(&mut self) -> Option<usize> {
        let first = |st: AnaState| self.paths.iter().position(|p| p.state() == st);
        let found = first(AnaState::Optimized).or_else(|| first(AnaState::NonOptimized));
        if found.is_some() {
            self.current = found;
        }
        found
    }

    /// `nvme_round_robin_path`.
    fn nvme_round_robin_path(&mut self) -> Option<usize> {
        let Some(old) = self.current else { return self.__nvme_find_path() };
        let n = self.paths.len();
        let usable = |a: AnaState| matches!(a, AnaState::Optimized | AnaState::NonOptimized);
        if n == 1 {
            return usable(self.paths[old].state()).then_some(old);
        }
        let mut found = None;
        for i in (1..n).map(|k| (old + k) % n) {
            match self.paths[i].state() {
                AnaState::Optimized => {
                    self.current = Some(i);
                    return Some(i);
                }
                AnaState::NonOptimized => found = Some(i),
                _ => {}
            }
        }
        let old_ana = self.paths[old].state();
        if old_ana == AnaState::Optimized || (found.is_none() && old_ana == AnaState::NonOptimized) {
            return Some(old);
        }
        if found.is_some() {
            self.current = found;
        }
        found
    }

    /// `nvme_queue_depth_path`.
    fn nvme_queue_depth_path(&self, depth: impl Fn(DevId) -> u32) -> Option<usize> {
        let (mut best_opt, mut best_nonopt) = (None, None);
        let (mut min_opt, mut min_nonopt) = (u32::MAX, u32::MAX);
        for (i, p) in self.paths.iter().enumerate() {
            let d = depth(p.dev);
            match p.state() {
                AnaState::Optimized if d < min_opt => (min_opt, best_opt) = (d, Some(i)),
                AnaState::NonOptimized if d < min_nonopt => (min_nonopt, best_nonopt) = (d, Some(i)),
                _ => {}
            }
            if min_opt == 0 {
                return best_opt;
            }
        }
        best_opt.or(best_nonopt)
    }
}

impl NsHead {
    /// The path for `bio` (on the head), the bio moved there; `None` (the
    /// bio failed) when no path is usable.
    fn route(&mut self, core: &mut BlockCore, bio: BioId) -> Option<(DevId, u64)> {
        let stats = &core.stats;
        let Some(i) = self.nvme_find_path(|dev| stats[dev as usize].disk.in_driver as u32) else {
            core.bio_io_error(bio, EIO);
            return None;
        };
        let b = core.bio_mut(bio);
        let (head, sector) = (b.dev, b.iter.sector);
        b.dev = self.paths[i].dev;
        // BIO_REMAPPED: the path's end-of-device check is skipped.
        b.remapped = true;
        Some((head, sector))
    }
}

impl BioDriver for NsHead {
    /// `nvme_ns_head_submit_bio`.
    fn submit_bio(&mut self, core: &mut BlockCore, bio: BioId) {
        let Some((bio, _)) = core.bio_split_to_limits(bio) else { return };
        let Some((head, sector)) = self.route(core, bio) else { return };
        core.trace_bio_remap(bio, head, sector);
        core.submit_bio_noacct(bio);
    }

    /// Path failures now due, then `nvme_requeue_work` (kblockd): each bio
    /// on the requeue list of this head goes to a path again, submitted by
    /// kblockd's worker after its remap.
    fn work_due(&mut self, core: &mut BlockCore, out: &mut Vec<DriverSubmit>) {
        let now = core.now;
        while let Some(k) = self.fails.iter().position(|&(at, _)| at <= now) {
            let (_, i) = self.fails.remove(k);
            self.path_down(core, i);
        }
        let Some(f) = core.mpath.as_deref_mut() else { return };
        let Some(head) = self.paths.first().and_then(|p| f.head(p.dev)) else { return };
        let mut mine = Vec::new();
        f.requeue.retain(|&(h, bio)| if h == head { mine.push(bio); false } else { true });
        for bio in mine {
            if let Some((from_dev, from_sector)) = self.route(core, bio) {
                out.push(DriverSubmit { task: KWORKER, bio, from_dev, from_sector });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(states: &[AnaState], policy: IoPolicy) -> NsHead {
        NsHead::new(states.iter().enumerate().map(|(i, &ana)| NsPath::new(i as DevId, ana)).collect(), policy, false)
    }

    use AnaState::*;

    #[test]
    fn numa_keeps_the_first_optimized_path() {
        // Paths 0 non-optimized, 1 optimized, 2 optimized: the first optimized (1), every time.
        let mut h = head(&[NonOptimized, Optimized, Optimized], IoPolicy::Numa);
        assert_eq!((0..3).map(|_| h.nvme_find_path(|_| 0)).collect::<Vec<_>>(), [Some(1); 3]);
        // Path 1 goes inaccessible: the search runs again and finds 2.
        h.paths[1].ana = Inaccessible;
        assert_eq!(h.nvme_find_path(|_| 0), Some(2));
        // Only non-optimized left: the fallback, 0.
        h.paths[2].ana = Change;
        assert_eq!(h.nvme_find_path(|_| 0), Some(0));
        h.paths[0].ana = PersistentLoss;
        assert_eq!(h.nvme_find_path(|_| 0), None);
    }

    #[test]
    fn round_robin_rotates_over_optimized_paths() {
        // Three optimized paths: the partition scan made 0 current, so 1, 2, 0, 1, 2.
        let mut h = head(&[Optimized, Optimized, Optimized], IoPolicy::RoundRobin);
        let picks: Vec<_> = (0..5).map(|_| h.nvme_find_path(|_| 0).unwrap()).collect();
        assert_eq!(picks, [1, 2, 0, 1, 2]);
        // Path 2 non-optimized: after 1 the loop finds 2 (non-opt, kept) then 0 (optimized): 0; then 1.
        let mut h = head(&[Optimized, Optimized, NonOptimized], IoPolicy::RoundRobin);
        let picks: Vec<_> = (0..4).map(|_| h.nvme_find_path(|_| 0).unwrap()).collect();
        assert_eq!(picks, [1, 0, 1, 0]);
        // The current path cleared (6.12's iopolicy change): the first optimized path first.
        let mut h = NsHead::new(vec![NsPath::new(0, Optimized), NsPath::new(1, Optimized)], IoPolicy::RoundRobin, true);
        assert_eq!((0..3).map(|_| h.nvme_find_path(|_| 0).unwrap()).collect::<Vec<_>>(), [0, 1, 0]);
        // One optimized path among non-optimized ones: no other optimized, current optimized: stays.
        let mut h = head(&[NonOptimized, Optimized, NonOptimized], IoPolicy::RoundRobin);
        assert_eq!((0..3).map(|_| h.nvme_find_path(|_| 0).unwrap()).collect::<Vec<_>>(), [1, 1, 1]);
    }

    #[test]
    fn a_disabled_path_is_skipped_like_an_unusable_one() {
        // Round-robin over three optimized paths, current 0: 1 would be
        // next; with 1's controller down (nvme_path_is_disabled) the loop
        // skips it to 2, then 0, then 2.
        let mut h = head(&[Optimized, Optimized, Optimized], IoPolicy::RoundRobin);
        h.paths[1].live = false;
        let picks: Vec<_> = (0..3).map(|_| h.nvme_find_path(|_| 0).unwrap()).collect();
        assert_eq!(picks, [2, 0, 2]);
        // numa: current 0 disabled is not optimized any more: the first live optimized, 2.
        let mut h = head(&[Optimized, Optimized, Optimized], IoPolicy::Numa);
        h.paths[0].live = false;
        h.paths[1].live = false;
        assert_eq!(h.nvme_find_path(|_| 0), Some(2));
        // queue-depth: a disabled idle path loses to a busy live one.
        let mut h = head(&[Optimized, Optimized], IoPolicy::QueueDepth);
        h.paths[0].live = false;
        assert_eq!(h.nvme_find_path(|d| [0u32, 7][d as usize]), Some(1));
    }

    #[test]
    fn queue_depth_takes_the_least_busy_optimized_path() {
        let h = head(&[Optimized, Optimized, NonOptimized], IoPolicy::QueueDepth);
        // Depths 5, 3, 0: the non-optimized idle path loses to optimized path 1 (3 < 5).
        let depths = [5u32, 3, 0];
        assert_eq!(h.clone().nvme_find_path(|d| depths[d as usize]), Some(1));
        // Path 0 idle: taken at once.
        assert_eq!(h.clone().nvme_find_path(|d| [0u32, 0, 0][d as usize]), Some(0));
        // No optimized path: the least busy non-optimized.
        let h = head(&[NonOptimized, Inaccessible, NonOptimized], IoPolicy::QueueDepth);
        assert_eq!(h.clone().nvme_find_path(|d| [4u32, 0, 2][d as usize]), Some(2));
    }

    #[test]
    fn policy_names_per_profile() {
        assert_eq!(IoPolicy::parse("round-robin", false), Ok(IoPolicy::RoundRobin));
        assert!(IoPolicy::parse("queue-depth", false).unwrap_err().contains("6.11"));
        assert_eq!(IoPolicy::parse("queue-depth", true), Ok(IoPolicy::QueueDepth));
        assert!(IoPolicy::parse("rr", true).is_err());
        assert_eq!(AnaState::parse("non-optimized"), Some(NonOptimized));
    }
}
