//! Service times worked out by hand from each model's parameters.

use super::*;

/// A device simple enough to work out by hand: one command at a time,
/// 100 µs to read from the media, 10 µs from the read-ahead buffer (one
/// tracked stream), 5 µs of command overhead, 1 GB/s (64 KiB = 65,536 ns).
fn small_device() -> ServiceModel {
    ServiceModel {
        read_latency_ns: 100_000,
        seq_read_latency_ns: 10_000,
        streams: 1,
        command_overhead_ns: 5_000,
        bandwidth: 1_000_000_000,
        write_bandwidth: 1_000_000_000,
        iops: 0,
        parallelism: 1,
        ..ServiceModel::preset("nvme").unwrap()
    }
}

#[test]
fn iops_cap_spaces_commands() {
    // 180K IOPS: one command every 5,555 ns; 64 slots and 30 µs writes
    // never bind, nor does the 4 KiB transfer at 808,775,652 B/s (5,064 ns,
    // under 5,555), so 1000 back-to-back 4 KiB writes take 999 × 5,555 ns
    // plus the last one's 30 µs + 5,064 ns (4096 × 10^9 / 808,775,652 =
    // 5,064.4, rounded down).
    let mut d = DiskModel::new(ServiceModel::preset("nvme-180k").unwrap(), 1 << 30);
    let mut last = 0;
    for i in 0..1000 {
        last = d.service(0, Op::Write, i * 8, 4096, false);
    }
    assert_eq!(last, 999 * 5_555 + 30_000 + 5_064);
}

#[test]
fn a_read_that_continues_the_stream_skips_the_media_access() {
    // The first 64 KiB read misses: 100 µs, then 5 µs + 65,536 ns on the
    // path: done at 170,536. The second, issued at 0 too, waits for the
    // one slot; it starts where the first ended, so it was read ahead:
    // 10 µs + 70,536 ns → 251,072.
    let mut d = DiskModel::new(small_device(), 1 << 30);
    assert_eq!(d.service(0, Op::Read, 0, 65536, false), 170_536);
    assert_eq!(d.service(0, Op::Read, 128, 65536, false), 251_072);
    // The same two reads, the second elsewhere: 100 µs again → 341,072.
    let mut d = DiskModel::new(small_device(), 1 << 30);
    assert_eq!(d.service(0, Op::Read, 0, 65536, false), 170_536);
    assert_eq!(d.service(0, Op::Read, 1000, 65536, false), 341_072);
}

#[test]
fn disorder_defeats_the_read_ahead() {
    // Four 64 KiB reads of one range. In order: one miss and three hits,
    // 100 + 3 × 10 µs of access and 4 × 70,536 ns on the path = 412,144.
    // Out of order (0, 256, 128, 384): each starts away from where the
    // previous one ended, so all four miss: 400 µs + 282,144 = 682,144.
    let run = |order: [u64; 4]| {
        let mut d = DiskModel::new(small_device(), 1 << 30);
        order.iter().map(|&s| d.service(0, Op::Read, s, 65536, false)).max().unwrap()
    };
    assert_eq!(run([0, 128, 256, 384]), 412_144);
    assert_eq!(run([0, 256, 128, 384]), 682_144);
}

#[test]
fn more_smaller_requests_cost_more() {
    // 256 KiB as one request or as 64 reads of 4 KiB, all from the
    // read-ahead buffer after the first (10 µs each, overlapping nothing on
    // one slot). One: 100 µs + 5 µs + 262,144 ns = 367,144. Sixty-four:
    // 100 µs + 63 × 10 µs + 64 × (5,000 + 4,096) ns = 1,312,144.
    let mut d = DiskModel::new(small_device(), 1 << 30);
    assert_eq!(d.service(0, Op::Read, 0, 262_144, false), 367_144);
    let mut d = DiskModel::new(small_device(), 1 << 30);
    let last = (0..64).map(|i| d.service(0, Op::Read, i * 8, 4096, false)).max().unwrap();
    assert_eq!(last, 1_312_144);
}

#[test]
fn parallel_slots_bound_small_random_reads() {
    // 4 slots, 100 µs media reads, no overhead, 1 GB/s: eight random 4 KiB
    // reads at t=0. The first four are ready at 100 µs and leave the path
    // one after another (4,096 ns each): 104,096 ... 116,384. Their slots
    // free then; the next four are ready 100 µs later each: the last at
    // 216,384 + 4,096 = 220,480 — two rounds of the access time, as
    // `parallelism / latency` IOPS says.
    let m = ServiceModel { parallelism: 4, command_overhead_ns: 0, streams: 0, ..small_device() };
    let mut d = DiskModel::new(m, 1 << 30);
    let done: Vec<u64> = (0..8).map(|i| d.service(0, Op::Read, i * 10_000, 4096, false)).collect();
    assert_eq!(done[..4], [104_096, 108_192, 112_288, 116_384]);
    assert_eq!(done[7], 220_480);
}

#[test]
fn writes_complete_from_the_cache_until_it_is_full() {
    // 1 GB/s interface, 20 µs write latency, no IOPS cap, 256 KiB cache draining at
    // 250 MB/s (64 KiB in 262,144 ns; the full cache in 1,048,576 ns).
    // Four 64 KiB writes issued together go over the path at 20 µs +
    // 65,536 ns, 65,536 ns apart (64 slots): in the cache at 85,536,
    // 151,072, 216,608, 282,144; the media is then 4 × 262,144 = 1,048,576
    // ns behind the first's arrival, which fits: each completes on arrival.
    // The fifth arrives at 347,680 with the media done at 85,536 +
    // 5 × 262,144 = 1,396,256: it waits until a full cache is left,
    // 1,396,256 − 1,048,576 = 347,680 — just fits. The sixth (413,216)
    // waits for 1,658,400 − 1,048,576 = 609,824: media speed.
    let m = ServiceModel {
        write_latency_ns: 20_000,
        write_bandwidth: 1_000_000_000,
        write_cache_bytes: 256 << 10,
        media_write_bandwidth: 250_000_000,
        iops: 0,
        ..ServiceModel::preset("nvme").unwrap()
    };
    let mut d = DiskModel::new(m, 1 << 30);
    let done: Vec<u64> = (0..6).map(|i| d.service(0, Op::Write, i * 128, 65536, false)).collect();
    assert_eq!(done, [85_536, 151_072, 216_608, 282_144, 347_680, 609_824]);
    // A flush then waits for the media (1,658,400) and its own 500 µs.
    assert_eq!(d.service(0, Op::Flush, 0, 0, false), 2_158_400);
    // A FUA write after it: the flush held the path until 2,158,400, so
    // the write is in the cache at 2,223,936 and on the media 262,144 ns
    // later, behind nothing.
    assert_eq!(d.service(0, Op::Write, 4096, 65536, true), 2_223_936 + 262_144);
}

#[test]
fn sequential_hdd_reads_skip_seek_and_rotation() {
    let mut d = DiskModel::new(ServiceModel::preset("hdd-7200").unwrap(), 1 << 30);
    // First read at sector 0 from head 0: 100 µs + 64 KiB at 200 MB/s (327,680 ns).
    let t1 = d.service(0, Op::Read, 0, 65536, false);
    assert_eq!(t1, 100_000 + 327_680);
    // The next one continues where the head is: no positioning.
    let t2 = d.service(t1, Op::Read, 128, 65536, false);
    assert_eq!(t2 - t1, 100_000 + 327_680);
    // A jump pays a seek plus half a turn (4,166,666 ns at 7200 rpm).
    let t3 = d.service(t2, Op::Read, 1 << 29, 4096, false);
    assert!(t3 - t2 > 800_000 + 4_166_666);
}

#[test]
fn hp97560_random_read_costs_its_published_seek() {
    // Ruemmler and Wilkes' HP 97560 (1962 cylinders of 19 × 72 sectors):
    // from cylinder 0 to 100 is a 7.24 ms seek, plus half a turn at 4002
    // rpm (7,496,251 ns), 2.2 ms of controller overhead and one 4 KiB
    // block at 2.459 MB/s (1,665,717 ns).
    let cap = 1962 * 19 * 72;
    let mut d = DiskModel::new(ServiceModel::preset("hp97560").unwrap(), cap);
    let first = d.service(0, Op::Read, 0, 4096, false);
    assert_eq!(first, 2_200_000 + 1_665_717);
    let t = d.service(first, Op::Read, 100 * 19 * 72, 4096, false);
    assert_eq!(t - first, 7_240_000 + 7_496_251 + 2_200_000 + 1_665_717);
}

#[test]
fn sas_ssd_serves_continuations_from_read_ahead() {
    // The sas-ssd preset (seed 000's members): 211 µs per media read, one
    // at a time, 0 from the read-ahead of its one stream, 1.2 GB/s (64 KiB
    // in 54,613 ns). Two sequential 64 KiB reads: 211,000 + 54,613 =
    // 265,613, then 265,613 + 54,613 = 320,226. The second elsewhere waits
    // for the media again: 265,613 + 211,000 + 54,613 = 531,226.
    let m = ServiceModel::preset("sas-ssd").unwrap();
    let mut d = DiskModel::new(m.clone(), 1 << 30);
    assert_eq!(d.service(0, Op::Read, 0, 65536, false), 265_613);
    assert_eq!(d.service(0, Op::Read, 128, 65536, false), 320_226);
    let mut d = DiskModel::new(m, 1 << 30);
    assert_eq!(d.service(0, Op::Read, 0, 65536, false), 265_613);
    assert_eq!(d.service(0, Op::Read, 4096, 65536, false), 531_226);
}

/// A virtual disk that posts completions in batches: 10 µs access, 2 µs
/// of command overhead, 1 GB/s (4 KiB = 4,096 ns), four commands at once.
fn batched_device() -> ServiceModel {
    ServiceModel {
        read_latency_ns: 10_000,
        seq_read_latency_ns: 10_000,
        streams: 0,
        command_overhead_ns: 2_000,
        bandwidth: 1_000_000_000,
        iops: 0,
        parallelism: 4,
        batch_completions: true,
        ..ServiceModel::preset("nvme").unwrap()
    }
}

#[test]
fn a_batch_completes_when_its_last_command_does() {
    // Four 4 KiB reads at t=0 wait their 10 µs together, then take the
    // path one after another for 6,096 ns each: they finish at 16,096,
    // 22,192, 28,288 and 34,384, and are all posted at 34,384.
    let mut d = DiskModel::new(batched_device(), 1 << 30);
    let done: Vec<u64> = (0..4).map(|i| d.service(0, Op::Read, 1000 * i, 4096, false)).collect();
    assert_eq!(done, [16_096, 22_192, 28_288, 34_384]);
    for &t in &done[..3] {
        assert_eq!(d.batch_posted_at(t), Some(34_384));
    }
    assert_eq!(d.batch_posted_at(34_384), None);
    // The next batch, one read at 40,000 on an idle device: 10 µs +
    // 6,096 ns, posted when it finishes (56,096).
    assert_eq!(d.service(40_000, Op::Read, 9000, 4096, false), 56_096);
    assert_eq!(d.batch_posted_at(56_096), None);
}

#[test]
fn a_command_arriving_during_a_batch_extends_it() {
    // Two reads at t=0 finish at 16,096 and 22,192. A third arrives at
    // 20,000 while the device is busy: ready at 30,000, it finishes at
    // 36,096, and the first two wait for it: both posted at 36,096.
    let mut d = DiskModel::new(batched_device(), 1 << 30);
    assert_eq!(d.service(0, Op::Read, 0, 4096, false), 16_096);
    assert_eq!(d.service(0, Op::Read, 1000, 4096, false), 22_192);
    assert_eq!(d.service(20_000, Op::Read, 2000, 4096, false), 36_096);
    assert_eq!(d.batch_posted_at(16_096), Some(36_096));
    assert_eq!(d.batch_posted_at(22_192), Some(36_096));
}

#[test]
fn a_command_arriving_as_a_batch_ends_opens_the_next() {
    // Two reads at t=0 finish at 16,096 and 22,192. A read issued at
    // 22,192, as the batch ends, opens a new batch (done 22,192 + 16,096
    // = 38,288): the first read is posted at 22,192 all the same, and
    // the new one when it finishes.
    let mut d = DiskModel::new(batched_device(), 1 << 30);
    assert_eq!(d.service(0, Op::Read, 0, 4096, false), 16_096);
    assert_eq!(d.service(0, Op::Read, 1000, 4096, false), 22_192);
    assert_eq!(d.batch_posted_at(16_096), Some(22_192));
    assert_eq!(d.service(22_192, Op::Read, 2000, 4096, false), 38_288);
    assert_eq!(d.batch_posted_at(22_192), None);
    assert_eq!(d.batch_posted_at(38_288), None);
}

#[test]
fn without_batching_every_completion_is_posted_when_it_finishes() {
    let m = ServiceModel { batch_completions: false, ..batched_device() };
    let mut d = DiskModel::new(m, 1 << 30);
    let first = d.service(0, Op::Read, 0, 4096, false);
    d.service(0, Op::Read, 1000, 4096, false);
    assert_eq!(d.batch_posted_at(first), None);
}
