//! Runs that share a process's processors, the longest first.
//!
//! When several runs go on at once (`blkstack seeds`, `compare` and sweeps
//! run theirs on threads), all of them finish only when the longest does.
//! With more threads than processors (each run has its engine and may have
//! an analysis and a check thread), the host's fair sharing slows that run
//! as much as the short ones. So a run that has had much less processor
//! time than another lowers its own threads' priority (their nice value),
//! and the host then gives the other run the processors first. No
//! simulated figure changes: priority only orders the host's threads.
//!
//! Two measures stand for the work a run has left. The first is the
//! processor time it has had: run lengths are far apart (seed 002's runs
//! take seconds, most others milliseconds), a run that has already run
//! long is the likely long one, and `blkstack seeds` starts its slow seeds
//! first. Runs that start together keep sharing until one pulls well
//! ahead. The second tells apart long runs that started together: the
//! processor time so far scaled by the share of the workload its sources
//! still have to hand out ([`crate::engine::Progress::done`]). It counts
//! only after half a second, as that share can be coarse: a discard tool
//! hands out a whole call at once, and seed 002's fstrim reads a quarter
//! done after 1% of its work.
//!
//! Raising one's nice value needs no privilege, but lowering it back does.
//! A run yields for good, then, and its threads end with it: each run's
//! engine gets a thread of its own ([`run_on_own_thread`]), and its
//! analysis and check threads follow the run ([`Follower`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A run yields to one that has had more than this many times its
/// processor time ...
pub const LONGER: f64 = 2.0;
/// ... and at least this many seconds more: runs that start together,
/// whose first ticks come at slightly different times, do not yield. The
/// same holds for the estimates of work left.
pub const LEAD_S: f64 = 0.5;
/// Processor seconds an engine runs before its estimate of work left
/// counts (see the module's comment).
pub const ESTIMATE_AFTER_S: f64 = 0.5;
/// The nice value of a run that yielded: the host's scheduler weighs a
/// nice-10 thread at about a tenth of a nice-0 one (sched_prio_to_weight).
const YIELD_NICE: i32 = 10;
/// The engine thread's stack: what a process's main thread has (8 MiB),
/// where the engine used to run, rather than a spawned thread's 2 MiB.
const ENGINE_STACK: usize = 8 << 20;

/// Every run in progress: (run, where it stands).
static BOARD: Mutex<Vec<(u64, Standing)>> = Mutex::new(Vec::new());
static NEXT_RUN: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The yield flag of the run whose engine is on this thread, for the
    /// threads it starts.
    static RUN_YIELDED: std::cell::RefCell<Option<Arc<AtomicBool>>> = const { std::cell::RefCell::new(None) };
}

/// Where a run stands: its engine's processor seconds so far, and its
/// estimate of those still to come ([`work_left`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Standing {
    pub cpu_s: f64,
    pub left_s: Option<f64>,
}

/// True when a run standing at `mine` should yield to one of the `others`:
/// one that has had far more processor time, or has far more work left.
pub fn should_yield(mine: Standing, others: impl IntoIterator<Item = Standing>) -> bool {
    let far_more = |theirs: f64, mine: f64| theirs > LONGER * mine && theirs - mine >= LEAD_S;
    others.into_iter().any(|theirs| {
        far_more(theirs.cpu_s, mine.cpu_s) || matches!((theirs.left_s, mine.left_s), (Some(t), Some(m)) if far_more(t, m))
    })
}

/// Processor seconds still to come for an engine that had `cpu_s` to hand
/// out the share `done` of its workload; None before the estimate counts.
pub fn work_left(cpu_s: f64, done: Option<f64>) -> Option<f64> {
    let done = done?;
    (cpu_s >= ESTIMATE_AFTER_S && done > 0.0).then(|| cpu_s * (1.0 - done.min(1.0)) / done)
}

/// A run's place on the board, held by its engine thread.
pub struct Seat {
    run: u64,
    yielded: Arc<AtomicBool>,
}

impl Seat {
    fn take() -> Seat {
        let yielded = Arc::new(AtomicBool::new(false));
        RUN_YIELDED.with(|r| *r.borrow_mut() = Some(yielded.clone()));
        Seat { run: NEXT_RUN.fetch_add(1, Ordering::Relaxed), yielded }
    }

    /// At the engine's tick, with the share of the workload handed out:
    /// publish where this run stands and yield if another is far ahead.
    pub fn tick(&self, done: Option<f64>) {
        let Some(cpu_s) = thread_cpu_s() else { return };
        let mine = Standing { cpu_s, left_s: work_left(cpu_s, done) };
        let mut board = BOARD.lock().unwrap_or_else(|e| e.into_inner());
        match board.iter_mut().find(|(run, _)| *run == self.run) {
            Some(entry) => entry.1 = mine,
            None => board.push((self.run, mine)),
        }
        let others = board.iter().filter(|(run, _)| *run != self.run).map(|&(_, s)| s);
        if !self.yielded.load(Ordering::Relaxed) && should_yield(mine, others) {
            self.yielded.store(true, Ordering::Relaxed);
            lower_priority();
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        BOARD.lock().unwrap_or_else(|e| e.into_inner()).retain(|(run, _)| *run != self.run);
        RUN_YIELDED.with(|r| *r.borrow_mut() = None);
    }
}

/// Run `f` (a whole run's engine) on a thread of its own with a seat on
/// the board, calling `wait` on the calling thread every `every` until it
/// ends (Python's signals are seen there: its handlers run on the main
/// thread only). Without a thread, `f` runs on the caller, seatless.
/// A panic in `f` goes on to the caller.
pub fn run_on_own_thread<T: Send>(f: impl FnOnce(Option<&Seat>) -> T + Send, every: Duration, mut wait: impl FnMut()) -> T {
    let (ended, ending) = std::sync::mpsc::channel::<()>();
    // Either the new thread or, if none starts, the caller takes `f`.
    let f = Mutex::new(Some(f));
    let take = || f.lock().unwrap_or_else(|e| e.into_inner()).take().expect("run once");
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new().name("blkstack-engine".into()).stack_size(ENGINE_STACK).spawn_scoped(s, || {
            let _ended = ended; // hung up when `f` returns or unwinds
            let seat = Seat::take();
            take()(Some(&seat))
        });
        let Ok(handle) = spawned else { return take()(None) };
        while let Err(RecvTimeoutError::Timeout) = ending.recv_timeout(every) {
            wait();
        }
        handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// A thread a run starts (analysis, checks) lowers its own priority once
/// the run has yielded: it looks at the run's flag between two batches.
pub struct Follower {
    yielded: Option<Arc<AtomicBool>>,
    lowered: bool,
}

impl Follower {
    /// On the run's engine thread, before starting the thread that follows.
    pub fn of_this_run() -> Follower {
        Follower { yielded: RUN_YIELDED.with(|r| r.borrow().clone()), lowered: false }
    }

    /// On the following thread.
    pub fn follow(&mut self) {
        if !self.lowered && self.yielded.as_ref().is_some_and(|y| y.load(Ordering::Relaxed)) {
            self.lowered = true;
            lower_priority();
        }
    }
}

/// The calling thread's nice value up to [`YIELD_NICE`]. On Linux a
/// thread has a nice value of its own: `setpriority(PRIO_PROCESS, 0, ..)`
/// sets the caller's only. Failure leaves the priority as it was.
#[cfg(target_os = "linux")]
fn lower_priority() {
    use std::os::raw::{c_int, c_uint};
    extern "C" {
        fn getpriority(which: c_int, who: c_uint) -> c_int;
        fn setpriority(which: c_int, who: c_uint, prio: c_int) -> c_int;
    }
    const PRIO_PROCESS: c_int = 0;
    // SAFETY: plain system calls on the calling thread, no memory passed.
    unsafe {
        if getpriority(PRIO_PROCESS, 0) < YIELD_NICE {
            setpriority(PRIO_PROCESS, 0, YIELD_NICE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// The calling thread's processor time in seconds.
#[cfg(target_os = "linux")]
pub fn thread_cpu_s() -> Option<f64> {
    use std::os::raw::{c_int, c_long};
    #[repr(C)]
    struct Timespec {
        sec: c_long,
        nsec: c_long,
    }
    extern "C" {
        fn clock_gettime(clock: c_int, tp: *mut Timespec) -> c_int;
    }
    const CLOCK_THREAD_CPUTIME_ID: c_int = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `t` is.
    let ok = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then(|| t.sec as f64 + t.nsec as f64 * 1e-9)
}

#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_s() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(cpu_s: f64, left_s: Option<f64>) -> Standing {
        Standing { cpu_s, left_s }
    }

    #[test]
    fn a_run_yields_to_one_with_twice_its_time_and_half_a_second_more() {
        assert!(should_yield(at(0.0, None), [at(0.5, None)]));
        assert!(should_yield(at(1.0, None), [at(2.5, None)]));
        // Twice as much but not half a second more: runs that started
        // together, seen at slightly different moments.
        assert!(!should_yield(at(0.01, None), [at(0.3, None)]));
        // Half a second more but not twice as much.
        assert!(!should_yield(at(1.0, None), [at(1.9, None)]));
        assert!(!should_yield(at(1.0, None), [at(0.5, None), at(1.9, None)]));
        assert!(!should_yield(at(1.0, None), []));
    }

    #[test]
    fn a_run_yields_to_one_with_far_more_work_left_when_both_estimate() {
        // Seed 002 on 5.8: mkfs and fstrim start together; at 1.2 s each,
        // mkfs is 44% done (1.5 s left), fstrim a quarter (3.6 s left).
        assert!(should_yield(at(1.2, Some(1.5)), [at(1.2, Some(3.6))]));
        assert!(!should_yield(at(1.2, Some(3.6)), [at(1.2, Some(1.5))]));
        // Not when either has no estimate, or by less than twice.
        assert!(!should_yield(at(1.2, None), [at(1.2, Some(3.6))]));
        assert!(!should_yield(at(1.2, Some(1.5)), [at(1.2, None)]));
        assert!(!should_yield(at(1.2, Some(1.5)), [at(1.2, Some(2.9))]));
    }

    #[test]
    fn work_left_scales_the_time_spent_by_the_share_still_to_come() {
        // A quarter handed out in 1 s: three quarters take 3 s more.
        assert_eq!(work_left(1.0, Some(0.25)), Some(3.0));
        assert_eq!(work_left(2.0, Some(1.0)), Some(0.0));
        // No share known, nothing handed out yet, or too short a sample.
        assert_eq!(work_left(1.0, None), None);
        assert_eq!(work_left(1.0, Some(0.0)), None);
        assert_eq!(work_left(0.4, Some(0.5)), None);
    }

    #[test]
    fn the_run_thread_gives_back_its_value_and_panics() {
        let every = Duration::from_secs(1);
        assert!(run_on_own_thread(|seat| seat.is_some(), every, || ()));
        let panicked = std::panic::catch_unwind(|| run_on_own_thread(|_| -> u8 { panic!("in the run") }, every, || ()));
        assert!(panicked.is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_threads_a_run_starts_follow_it_when_it_yields() {
        extern "C" {
            fn getpriority(which: std::os::raw::c_int, who: std::os::raw::c_uint) -> std::os::raw::c_int;
        }
        // SAFETY: a plain system call about the calling thread.
        let own_nice = || unsafe { getpriority(0, 0) };
        let (engine, follower) = run_on_own_thread(
            |seat| {
                let seat = seat.expect("a thread of its own");
                // A thread the run started before it yields (an analysis
                // thread), which looks at the flag after the yield.
                let mut follower = Follower::of_this_run();
                let (go, wait) = std::sync::mpsc::channel::<()>();
                let (ready, started) = std::sync::mpsc::channel::<()>();
                let thread = std::thread::spawn(move || {
                    follower.follow();
                    let before = own_nice();
                    ready.send(()).unwrap();
                    wait.recv().unwrap();
                    follower.follow();
                    (before, own_nice())
                });
                let before = own_nice();
                started.recv().unwrap();
                seat.yielded.store(true, Ordering::Relaxed);
                lower_priority();
                go.send(()).unwrap();
                ((before, own_nice()), thread.join().unwrap())
            },
            Duration::from_secs(1),
            || (),
        );
        // Both at the nice value they started with until the run yields,
        // then at YIELD_NICE (a test run at another nice value below it
        // starts there).
        assert!(engine.0 < YIELD_NICE && follower.0 == engine.0);
        assert_eq!((engine.1, follower.1), (YIELD_NICE, YIELD_NICE));
        // The caller's own priority is untouched.
        assert_eq!(own_nice(), engine.0);
    }
}
