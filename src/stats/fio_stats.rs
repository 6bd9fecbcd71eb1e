//! What fio counts for one job while it runs (`struct thread_stat` and
//! the io_u.c/ioengines.c accounting that fills it), kept by the engine
//! for every job and read by fio's report ([`super::fio`]):
//!
//! * per direction: submission latency (`slat`, the io_submit call of an
//!   asynchronous engine), completion latency (`clat`, from the issue)
//!   and total latency (`lat`, from the unit's start) — `account_io_completion`;
//!   a synchronous engine (psync) issues before the system call, so its
//!   clat covers the call and it has no slat;
//! * the latency distribution in fio's buckets (`io_u_mark_latency`, of
//!   clat), the queue depth at each submission (`io_u_mark_depth`), I/Os per
//!   submit and per reap (`io_u_mark_submit`/`io_u_mark_complete`), I/Os
//!   issued per direction with fsyncs fourth (`total_io_u`);
//! * bytes and I/Os completed per `bw_avg_time` (500 ms) window from the
//!   job's start: the bandwidth and IOPS samples (`__add_samples`);
//! * the job's CPU usage (`update_rusage_stat`, [`Rusage`]): with the host
//!   CPU model on ([`crate::host_cpu`]), the model's estimate of it.

use super::clat::LatStat;

/// fio's default `bw_avg_time` and `iops_avg_time`, in ns.
pub const AVG_TIME_NS: u64 = 500_000_000;

/// Counts of one job (fio's `thread_stat` fields the report prints).
#[derive(Clone, Debug)]
pub struct FioStats {
    /// The engine submits asynchronously (libaio, io_uring): slat is
    /// recorded and clat starts when the submission returns.
    pub async_engine: bool,
    pub slat: [LatStat; 3],
    pub lat: [LatStat; 3],
    /// `io_u_lat_n`, `io_u_lat_u`, `io_u_lat_m`.
    pub lat_n: [u64; 10],
    pub lat_u: [u64; 10],
    pub lat_m: [u64; 12],
    /// `io_u_map`, `io_u_submit`, `io_u_complete`.
    pub depth: [u64; 7],
    pub submit: [u64; 7],
    pub complete: [u64; 7],
    pub total_submit: u64,
    pub total_complete: u64,
    /// `total_io_u`: reads, writes, trims, syncs issued.
    pub total_io_u: [u64; 4],
    /// When the job's counted I/O began (`td->start`, after `ramp_time`).
    pub start_ns: Option<u64>,
    /// Bytes (0..3) and I/Os (3..6) completed per direction in each
    /// [`AVG_TIME_NS`] window from `start_ns`.
    pub windows: Vec<[u64; 6]>,
    /// Kernel CPU time the host CPU model charged to the job's task
    /// (its system calls, bios, requests: [`crate::host_cpu`]), and the
    /// times it ran again after sleeping (for an I/O, a tag, its CPU).
    pub sys_ns: u64,
    pub wakeups: u64,
}

impl Default for FioStats {
    fn default() -> Self {
        let summary = || [LatStat::summary_only(), LatStat::summary_only(), LatStat::summary_only()];
        FioStats {
            async_engine: false,
            slat: summary(),
            lat: summary(),
            lat_n: [0; 10],
            lat_u: [0; 10],
            lat_m: [0; 12],
            depth: [0; 7],
            submit: [0; 7],
            complete: [0; 7],
            total_submit: 0,
            total_complete: 0,
            total_io_u: [0; 4],
            start_ns: None,
            windows: Vec::new(),
            sys_ns: 0,
            wakeups: 0,
        }
    }
}

/// `io_u_mark_depth`'s bucket of a queue depth: 1, 2–3, 4–7, 8–15,
/// 16–31, 32–63, 64 and more.
pub fn depth_bucket(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// `__io_u_mark_map`'s bucket of a count: 0, 1–4, 5–8, 9–16, 17–32,
/// 33–64, more.
pub fn map_bucket(nr: u32) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// The bucket of `io_u_mark_lat_nsec`/`_usec` (a value below 1000) and of
/// `io_u_mark_lat_msec` (12 buckets, the last 2000 and more).
fn lat_bucket(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        750..=999 => 9,
        1000..=1999 => 10,
        _ => 11,
    }
}

impl FioStats {
    /// `io_u_mark_latency`: in ns below 1 µs, in µs below 1 ms, else in ms.
    fn mark_latency(&mut self, ns: u64) {
        if ns < 1000 {
            self.lat_n[lat_bucket(ns)] += 1;
        } else if ns < 1_000_000 {
            self.lat_u[lat_bucket(ns / 1000)] += 1;
        } else {
            self.lat_m[lat_bucket(ns / 1_000_000)] += 1;
        }
    }

    /// A submission of `counted` fio I/Os (kind read, write, trim or sync)
    /// leaving `depth` units in flight, after `reaped` completions were
    /// reaped since the last one. An asynchronous engine marks the depth
    /// once for the batch (`td_io_commit`), one io_submit and the reap
    /// that came before it; a synchronous one marks each I/O as one submit
    /// and one completion (`td_io_queue` without `->commit`).
    pub fn submitted(&mut self, counted: u32, depth: u32, reaped: u32, now: u64) {
        if counted == 0 {
            return;
        }
        self.start_ns.get_or_insert(now);
        self.depth[depth_bucket(depth)] += counted as u64;
        if self.async_engine {
            self.submit[map_bucket(counted)] += 1;
            self.total_submit += 1;
            if reaped > 0 {
                self.complete[map_bucket(reaped)] += 1;
                self.total_complete += 1;
            }
        } else {
            self.submit[map_bucket(1)] += counted as u64;
            self.complete[map_bucket(1)] += counted as u64;
            self.total_submit += counted as u64;
            self.total_complete += counted as u64;
        }
    }

    /// A unit of direction `k` (0..3: read, write, trim; 3: sync) issued:
    /// `total_io_u`.
    pub fn issued(&mut self, k: usize) {
        self.total_io_u[k] += 1;
    }

    /// A unit of kind `k` completed at `now`: it started at `start` and its
    /// submission returned at `issued`. Returns the completion latency to
    /// record as clat (sync: its whole latency).
    pub fn completed(&mut self, k: usize, start: u64, issued: u64, now: u64, bytes: u64) -> u64 {
        let lat = now - start;
        if k == 3 {
            return lat;
        }
        let clat = if self.async_engine {
            self.slat[k].add(issued.saturating_sub(start));
            now.saturating_sub(issued.max(start))
        } else {
            lat
        };
        self.lat[k].add(lat);
        self.mark_latency(clat);
        let w = (now.saturating_sub(self.start_ns.unwrap_or(0)) / AVG_TIME_NS) as usize;
        if self.windows.len() <= w {
            self.windows.resize(w + 1, [0; 6]);
        }
        self.windows[w][k] += bytes;
        self.windows[w][3 + k] += 1;
        clat
    }

    /// Fold another clone's counts in (`sum_thread_stats`), windows
    /// excepted: fio keeps each clone's bandwidth samples and sums the
    /// sample series ([`super::fio`] merges them).
    pub fn merge(&mut self, o: &FioStats) {
        for d in 0..3 {
            self.slat[d].merge(&o.slat[d]);
            self.lat[d].merge(&o.lat[d]);
        }
        let add = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        add(&mut self.lat_n, &o.lat_n);
        add(&mut self.lat_u, &o.lat_u);
        add(&mut self.lat_m, &o.lat_m);
        add(&mut self.depth, &o.depth);
        add(&mut self.submit, &o.submit);
        add(&mut self.complete, &o.complete);
        add(&mut self.total_io_u, &o.total_io_u);
        self.total_submit += o.total_submit;
        self.total_complete += o.total_complete;
    }

    /// The job ran on its CPU and charged it `ns` of kernel time.
    pub fn ran(&mut self, ns: u64) {
        if ns > 0 {
            self.sys_ns += ns;
            self.wakeups += 1;
        }
    }
}

/// fio's `cpu` line: what `getrusage(RUSAGE_THREAD)` said of the job
/// (`update_rusage_stat`: user and system time as whole milliseconds,
/// voluntary and involuntary context switches, page faults), as shares of
/// its run time (`show_thread_status_normal`: `100 * sys_time /
/// total_run_time`). A group sums its jobs' figures and run times
/// (`sum_thread_stats`).
///
/// The model knows only the kernel's part of the block path: with the
/// host CPU model on, `sys` is the CPU time charged to the job's task and
/// `ctx` the times the task went to sleep and was woken (each I/O a psync
/// job waits for, each `io_getevents` that waits). fio's own user time, its
/// page faults and the rest of the kernel's work are not modelled: `usr`,
/// `majf` and `minf` stay 0, and every figure is 0 without the model.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rusage {
    pub usr_ms: u64,
    pub sys_ms: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// `total_run_time`, in ms.
    pub run_ms: u64,
}

impl Rusage {
    /// One job's figures over its run time `run_ms`.
    pub fn of_job(fio: &FioStats, run_ms: u64) -> Self {
        // mtime_since_tv: the difference in whole milliseconds.
        Rusage { sys_ms: fio.sys_ns / 1_000_000, ctx: fio.wakeups, run_ms, ..Rusage::default() }
    }

    /// `sum_thread_stats`.
    pub fn add(&mut self, o: &Rusage) {
        self.usr_ms += o.usr_ms;
        self.sys_ms += o.sys_ms;
        self.ctx += o.ctx;
        self.majf += o.majf;
        self.minf += o.minf;
        self.run_ms += o.run_ms;
    }

    /// `usr_cpu` and `sys_cpu`, in percent (0 without a run time).
    pub fn cpu_pct(&self) -> (f64, f64) {
        if self.run_ms == 0 {
            return (0.0, 0.0);
        }
        let run = self.run_ms as f64;
        (self.usr_ms as f64 * 100.0 / run, self.sys_ms as f64 * 100.0 / run)
    }

    /// The `cpu` line of fio's report.
    pub fn text(&self) -> String {
        let (usr, sys) = self.cpu_pct();
        format!("  cpu          : usr={usr:.2}%, sys={sys:.2}%, ctx={}, majf={}, minf={}\n", self.ctx, self.majf, self.minf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_fio_switches() {
        // io_u_mark_depth: 1 → 0, 3 → "2", 8 → "8", 64 → ">=64".
        assert_eq!([depth_bucket(1), depth_bucket(3), depth_bucket(8), depth_bucket(64)], [0, 1, 3, 6]);
        // __io_u_mark_map: 0 → "0", 4 → "4", 5 → "8", 65 → ">=64".
        assert_eq!([map_bucket(0), map_bucket(4), map_bucket(5), map_bucket(65)], [0, 1, 2, 6]);
    }

    #[test]
    fn latency_goes_to_its_unit_bucket() {
        let mut s = FioStats::default();
        // 44 µs clat: usec bucket "50" (20..49); 1.5 ms: msec bucket "2"
        // (0..1 ms); 750 ns: nsec bucket "1000" (750..999).
        s.completed(0, 0, 0, 44_000, 4096);
        s.completed(0, 0, 0, 1_500_000, 4096);
        s.completed(0, 0, 0, 750, 4096);
        assert_eq!(s.lat_u[4], 1);
        assert_eq!(s.lat_m[0], 1);
        assert_eq!(s.lat_n[9], 1);
        // All three completed in the first 500 ms window: 3 reads, 12 KiB.
        assert_eq!(s.windows, vec![[12288, 0, 0, 3, 0, 0]]);
    }

    #[test]
    fn cpu_line_is_whole_milliseconds_over_the_run_time() {
        // 2.7 ms of kernel time over 10 runs on the CPU: mtime_since_tv
        // keeps 2 ms; over a 40 ms run that is 100 * 2 / 40 = 5.00%.
        let mut s = FioStats::default();
        for _ in 0..10 {
            s.ran(270_000);
        }
        s.ran(0); // woken with nothing to do: no switch counted
        let r = Rusage::of_job(&s, 40);
        assert_eq!((r.sys_ms, r.ctx), (2, 10));
        assert_eq!(r.text(), "  cpu          : usr=0.00%, sys=5.00%, ctx=10, majf=0, minf=0\n");
        // A group: 2 + 3 ms over 40 + 60 ms of run time = 5.00%.
        let mut g = r;
        g.add(&Rusage { sys_ms: 3, ctx: 4, run_ms: 60, ..Rusage::default() });
        assert_eq!(g.cpu_pct(), (0.0, 5.0));
        assert_eq!(g.ctx, 14);
        // No run time: fio prints zeros.
        assert_eq!(Rusage::default().cpu_pct(), (0.0, 0.0));
    }

    #[test]
    fn async_engine_splits_slat_and_clat() {
        let mut s = FioStats { async_engine: true, ..FioStats::default() };
        // Started at 100, io_submit returned at 130, completed at 1130:
        // slat 30, clat 1000, lat 1030.
        assert_eq!(s.completed(1, 100, 130, 1130, 4096), 1000);
        assert_eq!((s.slat[1].min, s.lat[1].min), (30, 1030));
    }
}
