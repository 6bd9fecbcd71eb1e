//! io.max (blk-throttle) end to end: fio jobs in a limited cgroup are held
//! to their limits, with bios released at the times worked out from the
//! kernel's slice rules (HZ 250: a jiffy is 4 ms, a slice 25 jiffies).

mod common;

use blkstack::trace::{Action, Event};

const MS: u64 = 1_000_000;

/// A 6.12 scenario: one fast NVMe disk, a cgroup with `io_max` on it and a
/// time-based psync fio job of `rw`/`bs` running in it for 2 s.
fn scenario(io_max: &str, rw: &str, bs: &str, kernel: &str) -> String {
    format!(
        r#"kernel = "{kernel}"
[disks.nvme0n1]
kind = "nvme"
size = "8GiB"
[cgroups.lim]
"io.max" = "nvme0n1 {io_max}"
[workload]
type = "fio"
cgroup = "lim"
job = """
[j]
filename=nvme0n1
rw={rw}
bs={bs}
direct=1
ioengine=psync
time_based
runtime=2
"""
"#
    )
}

/// Times of `action` on the disk.
fn times(events: &[Event], action: Action) -> Vec<u64> {
    events.iter().filter(|e| e.action == action).map(|e| e.time).collect()
}

#[test]
fn riops_1000_issues_100_reads_per_100_ms_slice() {
    // riops=1000: 1000 × 25 / 250 = 100 I/Os per slice. The first 100
    // reads of a slice pass at once (a few µs each); the 101st, at jiffy
    // j, waits max(25 − (j − slice_start), 250/1000 + 1) jiffies: to the
    // slice's end, where the timer releases it and the trim moves the
    // slice on by 100 I/Os. So every 100 ms window [k×100, (k+1)×100) ms
    // issues exactly 100 reads, the first released at k×100 ms sharp,
    // and the last one, submitted at ~1.9 s, goes at 2.000 s.
    for kernel in ["6.1", "6.12", "7.2"] {
        let (engine, events) = common::run_events(&scenario("riops=1000", "randread", "4k", kernel), &[]);
        let issued = times(&events, Action::Issue);
        for k in 0..20u64 {
            let n = issued.iter().filter(|&&t| t >= k * 100 * MS && t < (k + 1) * 100 * MS).count();
            assert_eq!(n, 100, "{kernel}: window {k}");
        }
        let queued = times(&events, Action::Queue);
        for k in 1..=20u64 {
            assert!(queued.contains(&(k * 100 * MS)), "{kernel}: a read released at {k}00 ms");
        }
        // Held to the limit within 2 %: 2001 reads in 2.000 s and a read.
        let units = engine.jobs[0].units_done as f64;
        let secs = engine.core.now as f64 / 1e9;
        let iops = units / secs;
        assert!((iops - 1000.0).abs() < 20.0, "{kernel}: {units} reads in {secs} s = {iops} IOPS");
    }
}

#[test]
fn rbps_10mib_issues_2_mib_per_200_ms() {
    // rbps=10485760: 1 MiB per 25-jiffy slice. Read 1 passes at 0; read 2,
    // at jiffy 0, is 1 MiB over: 1 MiB × 250 / 10 MiB = 25 jiffies, plus
    // the rounding of the elapsed 0 jiffies up to a slice, 25: released at
    // jiffy 50 (200 ms), when 2 MiB are allowed; the trim then takes both
    // slices (2 MiB) off, so read 3 passes at once and read 4 waits 50
    // jiffies again. Each 1 MiB read's 'Q' (its splits are charged no
    // bytes) comes at 0, then pairs at k × 200 ms sharp and just after.
    let (engine, events) = common::run_events(&scenario("rbps=10485760", "read", "1M", "6.12"), &[]);
    let queued = times(&events, Action::Queue);
    assert_eq!(queued[0], 0);
    for k in 1..=10u64 {
        assert_eq!(queued[2 * k as usize - 1], k * 200 * MS, "read {} released at {k}×200 ms", 2 * k);
        if k < 10 {
            let next = queued[2 * k as usize];
            assert!(next > k * 200 * MS && next < k * 200 * MS + 5 * MS, "read {} passes once read {} is done: {next}", 2 * k + 1, 2 * k);
        }
    }
    // 20 reads of 1 MiB (the last released at 2.000 s) in 2.00x s: 10 MiB/s
    // within 2 %.
    assert_eq!(queued.len(), 20);
    let mib_s = engine.jobs[0].units_done as f64 / (engine.core.now as f64 / 1e9);
    assert!((mib_s - 10.0).abs() < 0.2, "{mib_s} MiB/s");
}

#[test]
fn no_limits_no_throttle() {
    // A group whose io.max line lifts its only limit: no throttle at all,
    // and 50 ms of reads at the device's own pace, far above 1000 IOPS
    // (which would allow 50).
    let text = scenario("riops=max", "randread", "4k", "6.12").replace("runtime=2", "runtime=50ms");
    let (engine, _) = common::run_events(&text, &[]);
    assert!(engine.core.throtl.is_none());
    assert!(engine.jobs[0].units_done > 100, "{}", engine.jobs[0].units_done);
}

/// blktests throtl/002 and throtl/003 (the kernel's own tests of split
/// accounting): a 1 MiB direct write or read to a null_blk disk of
/// max_sectors 8 (4 KiB: 256 pieces) in a group with `limit`; the run
/// takes about a second. Returns the time of the last request.
fn blktests_throtl(limit: &str, op: &str, kernel: &str) -> u64 {
    let text = format!(
        r#"kernel = "{kernel}"
[disks.nullb0]
kind = "null_blk"
size = "1GiB"
[disks.nullb0.queue]
max_sectors_kb = 4
[cgroups.test]
"io.max" = "nullb0 {limit}"
[workload]
type = "bios"
device = "nullb0"
cgroup = "test"
[[workload.bio]]
op = "{op}"
sector = 0
size = "1MiB"
"#
    );
    let (_, events) = common::run_events(&text, &[]);
    let issued = times(&events, Action::Issue);
    assert_eq!(issued.len(), 256, "{limit} {op} {kernel}: 256 requests of 4 KiB");
    *issued.last().expect("issued")
}

#[test]
fn blktests_throtl_002_iops_counts_every_split_piece() {
    // wiops/riops=256: 256 × 25 / 250 = 25 I/Os per slice, and each of the
    // 256 pieces is one (the first bio, then each remainder as it is
    // resubmitted). 25 go at jiffy 0; the 26th waits to the slice's end
    // (jiffy 25, max(25, 250/256 + 1)), where the trim moves the slice on
    // by 25 I/Os: 25 per slice, the last 6 pieces at jiffy 250 = 1.000 s
    // (blktests expects 1 s).
    for kernel in ["6.1", "6.12", "7.2"] {
        assert_eq!(blktests_throtl("wiops=256", "write", kernel), 1000 * MS, "{kernel} write");
        assert_eq!(blktests_throtl("riops=256", "read", kernel), 1000 * MS, "{kernel} read");
    }
    // Up to 5.17 only the bio itself counted: one I/O, no wait (the
    // regression throtl/002 was written for).
    assert_eq!(blktests_throtl("wiops=256", "write", "5.13"), 0);
}

#[test]
fn blktests_throtl_003_bps_charges_a_split_bio_once() {
    // wbps/rbps=1 MiB/s: 104857 bytes per slice (104857.6 truncated). The
    // 1 MiB bio waits (1048576 − 104857) × 250 / 1048576 = 225 jiffies
    // (225.0001 truncated) plus the rounding of 0 elapsed jiffies to a
    // slice, 25: released at jiffy 250 (1.000 s), where 1 MiB is allowed;
    // its 255 remainders carry BIO_BPS_THROTTLED and pass uncharged, so
    // all 256 requests go at 1.000 s (blktests expects 1 s).
    for kernel in ["6.1", "6.12", "7.2"] {
        assert_eq!(blktests_throtl("wbps=1048576", "write", kernel), 1000 * MS, "{kernel} write");
        assert_eq!(blktests_throtl("rbps=1048576", "read", kernel), 1000 * MS, "{kernel} read");
    }
}
