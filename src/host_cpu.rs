//! Host CPU time of the block path (`[host] cpu = "CLASS"`).
//!
//! Without this model submission takes no simulated time: a job's bios are
//! queued, get their requests and are issued at the instant it submits,
//! and a completion ends its bios at the instant the device finishes. With
//! it, each kernel operation of the submitting task and of the completing
//! CPU costs CPU time, charged where the kernel does the work:
//!
//! * the submitting task, per system call (`io_submit`, `io_getevents`,
//!   `pread`: entry and exit), per I/O unit (`aio_read` → `blkdev_read_iter`
//!   → `blkdev_direct_IO`: the kiocb and the dio), per bio
//!   (`bio_alloc_bioset`, `bio_iov_iter_get_pages`), per page pinned
//!   (`pin_user_pages_fast` through `iov_iter_extract_pages`), per bio
//!   through `submit_bio_noacct`, per split (`bio_split`), per merge
//!   attempt (the plug's candidate, the scheduler's hash/tree or the
//!   software queue), per request (`blk_mq_get_new_requests`: a tag and
//!   the request), per request handed to the driver (`->queue_rq`: the
//!   doorbell included), per plug flush (`blk_mq_flush_plug_list`), per
//!   completion event reaped (`aio_complete`'s event copied out by
//!   `io_getevents`);
//! * the completing CPU (the submitter's: blk-mq completes a request on
//!   the CPU that issued it, by irq affinity or IPI, `blk_mq_complete_need_ipi`),
//!   per interrupt (hard irq entry and exit, softirq or IPI), per request
//!   (`blk_mq_end_request`: accounting, tag freed) and per bio (`bio_endio`).
//!   Completions that reach a CPU while it is still in a completion
//!   interrupt are handled by that interrupt (nvme_irq and virtblk_done
//!   drain every completion posted by the time they look): batched
//!   completion costs one interrupt, as in the kernel.
//!
//! Each CPU has a clock: the time it is busy until. A job runs on CPU
//! `job % cpus` (every job on a CPU of its own when the scenario gives no
//! `cpus`); it starts a submission only when its CPU is free, and the
//! events of the submission (Q, G, I, D and the device's start) come at the
//! CPU time spent so far in it, so btt's Q2G, G2I and I2D are no longer 0.
//! A completion is handled when the completing CPU is free, and its bios
//! end after the interrupt's work. The request stream is what the kernel
//! would produce at those times: the model only delays.
//!
//! The costs per CPU class are in [`CpuCosts::class`], with their sources.

/// CPU time per operation, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuCosts {
    /// A system call's entry and exit (`io_submit`, `io_getevents`, `pread`).
    pub syscall: u32,
    /// One I/O unit set up: kiocb, `blkdev_direct_IO`'s dio.
    pub unit: u32,
    /// One bio allocated and filled (`bio_alloc_bioset`, one
    /// `iov_iter_extract_pages` call).
    pub bio_alloc: u32,
    /// One user page pinned and added to a bio.
    pub page: u32,
    /// One bio through `submit_bio_noacct` (checks, `__submit_bio`).
    pub submit_bio: u32,
    /// One `bio_split` (the clone, `bio_chain`, resubmission).
    pub split: u32,
    /// One merge attempt (plug candidate, scheduler, software queue).
    pub merge_attempt: u32,
    /// One request allocated: tag, `blk_mq_rq_ctx_init`.
    pub get_tag: u32,
    /// One request handed to the driver (`->queue_rq`, doorbell).
    pub queue_rq: u32,
    /// One `blk_mq_flush_plug_list`.
    pub flush_plug: u32,
    /// One completion interrupt: irq entry/exit, softirq or IPI.
    pub irq: u32,
    /// One request ended (`blk_mq_end_request`).
    pub complete_rq: u32,
    /// One bio ended (`bio_endio`, the dio's end_io).
    pub bio_endio: u32,
    /// One completion event reaped by the submitter (`aio_complete`,
    /// `io_getevents`' copy-out).
    pub unit_complete: u32,
}

/// The CPU classes `[host] cpu` names, for error messages and docs.
pub const CLASSES: &[&str] = &["none", "server", "vm", "tcg"];

impl CpuCosts {
    /// The costs of a CPU class; `None` for "none" and unknown names.
    ///
    /// `server`: a current x86 server core on bare metal. Anchored on Jens
    /// Axboe's "io_uring and Optane2" (linux-block and io-uring lists,
    /// 2020-08-21): 5.9-rc1, one core, t/io_uring, 512-byte random
    /// O_DIRECT reads, polled, registered buffers and files, 2.58M IOPS at
    /// depth 128 — 388 ns per I/O for the whole path, user space included,
    /// with submission and completion batched and no interrupt. These
    /// costs give 403 ns for that path (one page, one bio, one request,
    /// one merge attempt, the system calls amortised over batches of 32, no
    /// irq). How the total divides between the operations is not in that
    /// measurement: the shares follow where `perf` profiles of the path
    /// usually put the time (request allocation and the driver's
    /// `queue_rq` the largest submission items, page pinning per page); an
    /// interrupt-driven completion (hard irq, softirq or IPI) costs about a
    /// microsecond, the usual figure for the round trip of an MSI-X
    /// interrupt on bare metal (assumed).
    ///
    /// `vm`: a guest vCPU of a KVM virtual machine, as in seed 003's ublk
    /// test. Each operation costs 3.53× the server's: the factor at which
    /// that test's *before* figure comes out of the model
    /// (`ublk-null-cpu.toml`: Ming Lei's null ublk disk in a VM, 2 fio
    /// jobs of 64 KiB random reads at depth 64 in batches of 64, 20 GB/s,
    /// that is 6.55 µs of CPU per I/O on each job's CPU, with four 16 KiB
    /// requests per I/O: rublk's 16 KiB I/O buffer caps max_sectors). The factor carries what a guest adds to bare
    /// metal (VM exits on doorbells and interrupts) and, in that test,
    /// ublk's round trip through its user-space server, which the model
    /// has no operation of its own for; so for a plain virtio guest it is
    /// an upper figure. The after figure was not used.
    ///
    /// `tcg`: the one vCPU of a qemu guest under TCG (`-accel tcg -cpu
    /// max`), as `blkstack validate` boots it. Measured with
    /// bench/tcg_times.py on the guests' own traces of the validation
    /// suite on 6.12 (medians of the gaps between one task's tracepoints;
    /// the throttled bfq and io.max runs left out): Q→G 9 µs
    /// (`submit_bio_ns` and one merge attempt), G→I 7 µs (the request),
    /// I→D 8 µs (`queue_rq`), an array piece's X→A 27 µs (the split and
    /// the personality's clone), a member's C to its bio's C 6 µs (request
    /// and bio ended), a dd read's C to its next Q 59 µs (the event
    /// reaped, the system call, its dio and bio). The interrupt's entry is
    /// not traced (block_rq_complete runs inside it): an assumed 5 µs.
    /// These are the guest's speed on a host busy with other guests and
    /// builds; runs on a busier host took three to four times as long
    /// (docs/validation.md C).
    pub fn class(name: &str) -> Option<CpuCosts> {
        let server = CpuCosts {
            syscall: 100,
            unit: 60,
            bio_alloc: 40,
            page: 15,
            submit_bio: 30,
            split: 60,
            merge_attempt: 15,
            get_tag: 40,
            queue_rq: 80,
            flush_plug: 30,
            irq: 1000,
            complete_rq: 60,
            bio_endio: 20,
            unit_complete: 50,
        };
        match name {
            "server" => Some(server),
            "vm" => Some(server.scaled(3.53)),
            "tcg" => Some(CpuCosts {
                syscall: 26_000,
                unit: 12_000,
                bio_alloc: 10_000,
                page: 1_000,
                submit_bio: 7_000,
                split: 27_000,
                merge_attempt: 2_000,
                get_tag: 7_000,
                queue_rq: 8_000,
                flush_plug: 5_000,
                irq: 5_000,
                complete_rq: 4_000,
                bio_endio: 2_000,
                unit_complete: 10_000,
            }),
            _ => None,
        }
    }

    /// Every cost times `f` (rounded to the nanosecond).
    pub fn scaled(&self, f: f64) -> CpuCosts {
        let s = |x: u32| (x as f64 * f).round() as u32;
        CpuCosts {
            syscall: s(self.syscall),
            unit: s(self.unit),
            bio_alloc: s(self.bio_alloc),
            page: s(self.page),
            submit_bio: s(self.submit_bio),
            split: s(self.split),
            merge_attempt: s(self.merge_attempt),
            get_tag: s(self.get_tag),
            queue_rq: s(self.queue_rq),
            flush_plug: s(self.flush_plug),
            irq: s(self.irq),
            complete_rq: s(self.complete_rq),
            bio_endio: s(self.bio_endio),
            unit_complete: s(self.unit_complete),
        }
    }
}

/// The host CPU model of a run: the costs, each CPU's clock, and the CPU
/// time the code running now has spent since the event it handles.
#[derive(Clone, Debug, Default)]
pub struct HostCpu {
    /// `None`: the model is off (every charge is a no-op).
    pub costs: Option<CpuCosts>,
    /// `cpus` of the scenario: jobs share this many CPUs (`None`: each job
    /// has its own).
    pub cpus: Option<u32>,
    /// Per CPU: the time it is busy until.
    busy_until: Vec<u64>,
    /// Per CPU: the time its completion interrupt under way ends.
    irq_until: Vec<u64>,
    /// The CPU the running code is on.
    pub cur: usize,
    /// CPU time spent by the running code since `now`.
    pub skew: u64,
}

impl HostCpu {
    pub fn new(costs: Option<CpuCosts>, cpus: Option<u32>) -> Self {
        HostCpu { costs, cpus, ..HostCpu::default() }
    }

    #[inline(always)]
    pub fn on(&self) -> bool {
        self.costs.is_some()
    }

    /// The CPU of job `j`.
    pub fn cpu_of_job(&self, j: usize) -> usize {
        self.cpus.map_or(j, |c| j % c.max(1) as usize)
    }

    fn grow(&mut self, cpu: usize) {
        if self.busy_until.len() <= cpu {
            self.busy_until.resize(cpu + 1, 0);
            self.irq_until.resize(cpu + 1, 0);
        }
    }

    /// Run on `cpu` from `now`: the time spent so far is what the CPU still
    /// has to do before it gets there. Returns the CPU left (for [`leave`]).
    ///
    /// [`leave`]: HostCpu::leave
    pub fn enter(&mut self, cpu: usize, now: u64) -> usize {
        self.commit(now);
        let prev = self.cur;
        self.grow(cpu);
        self.cur = cpu;
        self.skew = self.busy_until[cpu].saturating_sub(now);
        prev
    }

    /// Back on `prev` (from [`HostCpu::enter`]), the time spent here kept.
    pub fn leave(&mut self, prev: usize, now: u64) {
        self.commit(now);
        self.grow(prev);
        self.cur = prev;
        self.skew = self.busy_until[prev].saturating_sub(now);
    }

    /// Between events no code runs: the next handler starts afresh.
    #[inline(always)]
    pub fn idle(&mut self) {
        self.skew = 0;
    }

    /// The running CPU is busy until `now + skew`.
    fn commit(&mut self, now: u64) {
        if self.costs.is_none() {
            return;
        }
        self.grow(self.cur);
        let t = now + self.skew;
        if t > self.busy_until[self.cur] {
            self.busy_until[self.cur] = t;
        }
    }

    /// When a completion the device finished at `at` is handled on `cpu`
    /// and its bios end: after the work the CPU has, then an interrupt
    /// (unless one under way takes it), the request and its `bios`.
    pub fn completion_done(&mut self, cpu: usize, at: u64, bios: u32) -> u64 {
        let Some(c) = self.costs else { return at };
        self.grow(cpu);
        let in_irq = at <= self.irq_until[cpu];
        let start = at.max(self.busy_until[cpu]);
        let cost = if in_irq { 0 } else { c.irq as u64 } + c.complete_rq as u64 + c.bio_endio as u64 * bios as u64;
        let done = start + cost;
        self.busy_until[cpu] = done;
        self.irq_until[cpu] = done;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_costs_match_the_polled_io_uring_figure() {
        // 2.58M IOPS per core: 1e9 / 2.58e6 = 387.6 ns per I/O. The path of
        // one 512-byte polled read: a unit, a bio with one page, one bio
        // through submit_bio, one plug merge attempt, a request, queue_rq,
        // request and bio ended, the event reaped, two system calls per
        // batch of 32 and one plug flush per batch: 60 + 40 + 15 + 30 + 15 +
        // 40 + 80 + 60 + 20 + 50 + (2·100 + 30) / 32 = 410 + 7.2 = 417 ns,
        // within 8% of 388.
        let c = CpuCosts::class("server").unwrap();
        let per_io = (c.unit + c.bio_alloc + c.page + c.submit_bio + c.merge_attempt + c.get_tag + c.queue_rq + c.complete_rq + c.bio_endio + c.unit_complete) as f64
            + (2 * c.syscall + c.flush_plug) as f64 / 32.0;
        assert!((per_io - 417.2).abs() < 0.1, "{per_io}");
        assert!((per_io / 387.6 - 1.0).abs() < 0.08);
    }

    #[test]
    fn a_cpu_busy_with_a_submission_delays_the_completion() {
        let mut h = HostCpu::new(CpuCosts::class("server"), Some(1));
        let prev = h.enter(0, 1_000);
        h.skew += 5_000; // a submission of 5 µs
        h.leave(prev, 1_000);
        // Device done at 2 µs: handled at 6 µs, 1 µs irq + 60 ns + 20 ns.
        assert_eq!(h.completion_done(0, 2_000, 1), 6_000 + 1_080);
        // One more done while that interrupt runs: no new irq.
        assert_eq!(h.completion_done(0, 7_000, 1), 7_080 + 80);
    }

    #[test]
    fn tcg_costs_add_up_to_the_guests_gaps() {
        // The 6.12 guest traces' medians (bench/tcg_times.py, suite runs):
        // Q→G 9 µs = submit_bio 7 + one merge attempt 2; G→I 7 µs =
        // get_tag; I→D 8 µs = queue_rq; an array piece's X→A 27 µs = split;
        // C of the member to C of the bio 6 µs = complete_rq 4 + bio_endio
        // 2. A 4 KiB dd read's C to its next Q, 59 µs: the event reaped 10
        // + pread's entry and exit 26 + unit 12 + bio 10 + one page 1 = 59.
        let c = CpuCosts::class("tcg").unwrap();
        assert_eq!(c.submit_bio + c.merge_attempt, 9_000);
        assert_eq!(c.get_tag, 7_000);
        assert_eq!(c.queue_rq, 8_000);
        assert_eq!(c.split, 27_000);
        assert_eq!(c.complete_rq + c.bio_endio, 6_000);
        assert_eq!(c.unit_complete + c.syscall + c.unit + c.bio_alloc + c.page, 59_000);
        assert!(CLASSES.contains(&"tcg"));
    }

    #[test]
    fn off_charges_nothing() {
        let mut h = HostCpu::new(None, None);
        assert_eq!(h.completion_done(0, 2_000, 4), 2_000);
        assert!(!h.on());
    }
}
