//! fio workloads end to end: job text, job file and command-line options
//! give the same run; errors and warnings; the I/O shapes fio's options
//! ask for, checked on the events.

mod common;

use blkstack::engine::Engine;
use blkstack::scenario;
use blkstack::trace::{rwbs, Action, Event};
use serde_json::Value;

/// Seed 001's benchmark (fio --time_based --name=benchmark --size=50G
/// --rw=randwrite --runtime=60 --filename=/dev/nvme1n1 --ioengine=psync
/// --randrepeat=0 --iodepth=1 --fsync=64 --invalidate=1 --verify=0
/// --verify_fatal=0 --blocksize=4k --numjobs=4 --group_reporting), with a
/// 20 ms runtime.
const SEED_001_ARGS: &[&str] = &[
    "--time_based",
    "--name=benchmark",
    "--size=50G",
    "--rw=randwrite",
    "--runtime=20ms",
    "--filename=/dev/nvme1n1",
    "--ioengine=psync",
    "--randrepeat=0",
    "--iodepth=1",
    "--fsync=64",
    "--invalidate=1",
    "--verify=0",
    "--verify_fatal=0",
    "--blocksize=4k",
    "--numjobs=4",
    "--group_reporting",
];

const SEED_001_JOB: &str = "\
[global]
time_based

[benchmark]
size=50G
rw=randwrite
runtime=20ms
filename=/dev/nvme1n1
ioengine=psync
randrepeat=0
iodepth=1
fsync=64
invalidate=1
verify=0
verify_fatal=0
blocksize=4k
numjobs=4
group_reporting
";

const NVME: &str = "seed = 1\n[disks.nvme1n1]\nkind = \"nvme\"\nsize = \"64GiB\"\n";

fn with_job(job: &str) -> String {
    format!("{NVME}[workload]\ntype = \"fio\"\njob = \"\"\"\n{job}\"\"\"\n")
}

fn with_args(args: &[&str]) -> String {
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    format!("{NVME}[workload]\ntype = \"fio\"\nargs = [{}]\n", quoted.join(", "))
}

/// Run `text` (named `file`): the engine, its events and the fio JSON.
fn run(file: &str, text: &str) -> (Engine, Vec<Event>, Value, Vec<String>) {
    let sc = scenario::load(file, text, None, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = sc.build();
    engine.core.tracer.keep_log();
    engine.run();
    let events = engine.core.tracer.log.take().unwrap().events;
    let (fio, _) = blkstack::stats::fio::report(sc.workload.fio.as_ref().unwrap(), &engine);
    (engine, events, fio, sc.workload.warnings.clone())
}

/// (time, sector, sectors, rwbs) of `action` events on `dev`.
fn stream(engine: &Engine, events: &[Event], dev: &str, action: Action) -> Vec<(u64, u64, u32, String)> {
    let id = engine.core.topo.by_name(dev).unwrap();
    events.iter().filter(|e| e.dev == id && e.action == action).map(|e| (e.time, e.sector, e.sectors(), rwbs(e.op, e.flags, e.bytes))).collect()
}

#[test]
fn seed_001_job_file_and_options_give_the_same_run() {
    let (e1, ev1, fio1, w1) = run("f.toml", &with_job(SEED_001_JOB));
    let (e2, ev2, fio2, w2) = run("f.toml", &with_args(SEED_001_ARGS));
    let d1 = stream(&e1, &ev1, "nvme1n1", Action::Issue);
    assert_eq!(d1, stream(&e2, &ev2, "nvme1n1", Action::Issue));
    assert_eq!(fio1, fio2);
    // The job is buffered (no direct=1): writes dirty pages; every 64th
    // write of each of the 4 clones fsyncs — writeback of the dirty pages
    // (64 GiB is a multiple of 4096, so 4 KiB buffers: one bio per page),
    // then a flush.
    let job = &fio1["jobs"][0];
    // group_reporting: the 4 clones are one entry, as fio's JSON has them.
    assert_eq!(fio1["jobs"].as_array().unwrap().len(), 1);
    let writes = job["write"]["total_ios"].as_u64().unwrap();
    let syncs = job["sync"]["total_ios"].as_u64().unwrap();
    assert!(writes >= 64 * 4, "{writes} writes");
    // Each clone fsyncs after every 64 writes: at least ⌊writes/64⌋ − 4
    // (each clone's remainder below 64) of them, at most ⌊writes/64⌋.
    assert!(syncs <= writes / 64 && syncs + 4 >= writes / 64, "{syncs} fsyncs for {writes} writes");
    // Each fsync queues one empty REQ_PREFLUSH write ("FWS"); the flush
    // machinery issues flush requests for them (REQ_OP_FLUSH, "FN" in
    // blkparse): one at a time, each serving every fsync pending when it
    // is issued — at most one per clone, so at least ⌈syncs/4⌉ of them.
    let q = stream(&e1, &ev1, "nvme1n1", Action::Queue);
    assert_eq!(q.iter().filter(|d| d.3 == "FWS").count() as u64, syncs);
    let flushes = d1.iter().filter(|d| d.3 == "FN").count() as u64;
    assert!(flushes <= syncs && flushes >= syncs.div_ceil(4), "{flushes} flushes for {syncs} fsyncs");
    assert!(d1.iter().all(|d| d.3 != "FWS"), "the empty flush writes are never issued");
    // Nothing is submitted after the 20 ms runtime; the last I/O completes
    // shortly after.
    assert!(q.iter().all(|x| x.0 < 20_000_000 + 5_000_000));
    // verify and verify_fatal are cosmetic: warnings, named by line or
    // argument. The job's line 1 is scenario line 8, so its lines 14 and 15
    // are 21 and 22.
    assert_eq!(w1, ["f.toml:21: workload.job: verify: ignored: it does not change the I/O", "f.toml:22: workload.job: verify_fatal: ignored: it does not change the I/O"]);
    assert_eq!(w2.len(), 2);
    assert!(w2[0].starts_with("command line argument 12: verify"), "{w2:?}");
}

#[test]
fn a_job_file_next_to_the_scenario_reads_the_same() {
    let dir = std::env::temp_dir().join(format!("blkstack-fio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("seed001.fio"), SEED_001_JOB).unwrap();
    let path = dir.join("s.toml");
    let text = format!("{NVME}[workload]\ntype = \"fio\"\njobfile = \"seed001.fio\"\n");
    let (e1, ev1, fio1, _) = run(path.to_str().unwrap(), &text);
    let (e2, ev2, fio2, _) = run("f.toml", &with_job(SEED_001_JOB));
    assert_eq!(stream(&e1, &ev1, "nvme1n1", Action::Issue), stream(&e2, &ev2, "nvme1n1", Action::Issue));
    assert_eq!(fio1, fio2);
    // A bad line in the file is reported at the file's line.
    std::fs::write(dir.join("seed001.fio"), "[j]\nrw=randwrite\nrate_iops_min=100\n").unwrap();
    let e = scenario::load(path.to_str().unwrap(), &text, None, &[]).unwrap_err().to_string();
    assert!(e.contains(&format!("workload.jobfile: {}:3: rate_iops_min:", dir.join("seed001.fio").display())), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn load_err(text: &str) -> String {
    scenario::load("f.toml", text, None, &[]).unwrap_err().to_string()
}

#[test]
fn shape_changing_options_fail_and_name_the_line() {
    // rate_iops_min changes what fio does when it falls behind: not
    // modelled, refused at the scenario line holding the job's line 3 (job
    // starts on line 8).
    let e = load_err(&with_job("[j]\nrw=randwrite\nrate_iops_min=100\n"));
    assert!(e.starts_with("f.toml:10: workload.job: rate_iops_min: "), "{e}");
    let e = load_err(&with_job("[j]\nblocksise=4k\n"));
    assert!(e.starts_with("f.toml:9: workload.job: blocksise: "), "{e}");
    let e = load_err(&with_args(&["--name=j", "--rw=randwrit"]));
    assert!(e.starts_with("f.toml:7: workload.args: command line argument 2: rw: "), "{e}");
    let e = load_err(&with_job("[j]\nrw=randread\n"));
    assert!(e.contains("buffered reads through the page cache are not modelled: set direct=1"), "{e}");
    let e = load_err(&with_job("[j]\nrw=read\ndirect=1\nbs=1000\n"));
    assert!(e.contains("read block sizes, blockalign and offset must be multiples of nvme1n1's logical block size (512): the kernel fails with EINVAL"), "{e}");
    let e = load_err(&with_job("[j]\nrw=write\nfilename=/dev/sdz\n"));
    assert!(e.contains("filename=/dev/sdz is not a scenario device (nvme1n1)"), "{e}");
    let e = load_err(&with_job("[j]\nrw=write\ntime_based\n"));
    assert!(e.contains("time_based needs a runtime"), "{e}");
    let e = load_err(&format!("{NVME}[workload]\ntype = \"fio\"\n"));
    assert!(e.contains("give the fio job one way"), "{e}");
}

/// A 1 GiB + 2 KiB SATA disk: `set_init_blocksize` gives 2 KiB buffers.
const SDA_2K: &str = "[disks.sda]\nkind = \"sata\"\nsize = 1073743872\n";

#[test]
fn writeback_of_64_random_pages_with_2k_blocks() {
    // 64 buffered 4 KiB random writes (the random map gives 64 distinct
    // pages), then end_fsync: write_cache_pages visits the dirty pages in
    // index order; each page has two 2 KiB buffers, one bio each: 128 bios
    // of 4 sectors, ascending, "WS" (WB_SYNC_ALL), all in the writeback
    // plug; then the flush.
    let text = format!("{SDA_2K}[workload]\ntype = \"fio\"\njob = \"\"\"\n[wb]\nfilename=/dev/sda\nrw=randwrite\nbs=4k\nnumber_ios=64\nend_fsync=1\n\"\"\"\n");
    let (engine, events, _, _) = run("f.toml", &text);
    let q = stream(&engine, &events, "sda", Action::Queue);
    let (writes, rest) = q.split_at(128);
    assert!(writes.iter().all(|w| w.2 == 4 && w.3 == "WS"), "{writes:?}");
    assert!(writes.windows(2).all(|p| p[0].1 < p[1].1), "ascending sectors");
    // Buffers of one page are adjacent: sector 8p and 8p + 4.
    assert!(writes.chunks(2).all(|p| p[0].1 % 8 == 0 && p[1].1 == p[0].1 + 4));
    assert_eq!(rest.iter().map(|x| (x.2, x.3.as_str())).collect::<Vec<_>>(), [(0, "FWS")]);
    // One plug around them: the first plug event ('P') comes right after the
    // first bio (it is traced when the first request enters the plug) and the
    // last unplug ('U') after the last bio, before the flush.
    let id = engine.core.topo.by_name("sda").unwrap();
    let pos = |pred: &dyn Fn(&Event) -> bool| events.iter().position(pred).unwrap();
    let first_q = pos(&|e| e.dev == id && e.action == Action::Queue);
    let first_p = pos(&|e| e.action == Action::Plug);
    let last_w = events.iter().rposition(|e| e.dev == id && e.action == Action::Queue && e.bytes == 2048).unwrap();
    let flush_q = pos(&|e| e.dev == id && e.action == Action::Queue && e.bytes == 0);
    let last_u = events[..flush_q].iter().rposition(|e| e.action == Action::Unplug).unwrap();
    assert!(first_q < first_p && first_p < first_q + 4 && last_w < last_u);
    // The plug merged each page's two buffers: 64 write requests.
    let d: Vec<_> = stream(&engine, &events, "sda", Action::Issue).into_iter().filter(|d| d.3 == "WS").collect();
    assert_eq!(d.len(), 64);
    assert!(d.iter().all(|r| r.2 == 8));
}

#[test]
fn the_random_map_visits_each_block_once() {
    // 1 MiB region of 256 blocks, randread: 256 I/Os, every block once.
    let text = with_job("[j]\nrw=randread\ndirect=1\nsize=1M\nbs=4k\n");
    let (engine, events, fio, _) = run("f.toml", &text);
    let mut q: Vec<u64> = stream(&engine, &events, "nvme1n1", Action::Queue).iter().map(|x| x.1).collect();
    assert_eq!(q.len(), 256);
    assert!(q.windows(2).any(|w| w[0] > w[1]), "random order");
    q.sort_unstable();
    assert_eq!(q, (0..256).map(|b| b * 8).collect::<Vec<_>>());
    assert_eq!(fio["jobs"][0]["read"]["io_bytes"], 1 << 20);
    assert!(fio["jobs"][0]["read"]["clat_ns"]["p50"].as_u64().unwrap() > 0);
}

#[test]
fn rwmixread_splits_directions() {
    // 1000 randrw I/Os with rwmixread=70: reads ~ Bin(1000, 0.7), mean 700,
    // sd √210 ≈ 14.5; ± 4 sd → 642..758.
    let text = with_job("[j]\nrw=randrw\nrwmixread=70\ndirect=1\nnumber_ios=1000\nnorandommap\n");
    let (_, _, fio, _) = run("f.toml", &text);
    let reads = fio["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert_eq!(reads + fio["jobs"][0]["write"]["total_ios"].as_u64().unwrap(), 1000);
    assert!((642..=758).contains(&reads), "{reads}");
}

#[test]
fn libaio_batches_submit_in_a_plug() {
    // iodepth 8, iodepth_batch_submit 8: io_submit of 8 iocbs at a time,
    // inside a plug (more than AIO_PLUG_THRESHOLD = 2): 64 reads of 4 KiB
    // in 8 submissions; the sequential reads merge in the plug.
    let text = with_job("[j]\nrw=read\ndirect=1\nioengine=libaio\niodepth=8\niodepth_batch_submit=8\niodepth_batch_complete_min=8\nsize=256k\nbs=4k\n");
    let (engine, events, fio, _) = run("f.toml", &text);
    let q = stream(&engine, &events, "nvme1n1", Action::Queue);
    assert_eq!(q.len(), 64);
    assert_eq!(q.iter().map(|x| x.1).collect::<Vec<_>>(), (0..64).map(|b| b * 8).collect::<Vec<_>>());
    // Each batch of 8 is queued at one instant; batches wait for all 8
    // completions (iodepth_batch_complete_min = 8): 8 distinct times.
    let mut times: Vec<u64> = q.iter().map(|x| x.0).collect();
    times.dedup();
    assert_eq!(times.len(), 8);
    assert_eq!(fio["jobs"][0]["read"]["total_ios"], 64);
}

#[test]
fn trim_jobs_issue_blkdiscard_per_io() {
    // rw=trim, bs=1M over 4 MiB: four BLKDISCARD calls, each one bio made
    // REQ_SYNC by submit_bio_wait ("DS").
    let text = with_job("[j]\nrw=trim\nsize=4M\nbs=1M\n");
    let (engine, events, fio, _) = run("f.toml", &text);
    let q = stream(&engine, &events, "nvme1n1", Action::Queue);
    assert_eq!(q.iter().map(|x| (x.1, x.2, x.3.as_str())).collect::<Vec<_>>(), [(0, 2048, "DS"), (2048, 2048, "DS"), (4096, 2048, "DS"), (6144, 2048, "DS")]);
    assert_eq!(fio["jobs"][0]["trim"]["total_ios"], 4);
}

#[test]
fn zbd_writes_go_to_write_pointers() {
    // A host-managed disk with 1 MiB zones; 4 zones, random 64 KiB writes:
    // every write lands at its zone's write pointer, so per zone the writes
    // are contiguous from the zone start.
    let text = "[disks.sda]\nkind = \"sata\"\nsize = \"64MiB\"\n[disks.sda.queue]\nzoned = \"host-managed\"\nchunk_sectors = 2048\n\
                [workload]\ntype = \"fio\"\njob = \"\"\"\n[z]\nzonemode=zbd\nrw=randwrite\ndirect=1\nsize=4z\nbs=64k\nnumber_ios=40\n\"\"\"\n";
    let (engine, events, _, _) = run("f.toml", text);
    let q = stream(&engine, &events, "sda", Action::Queue);
    assert_eq!(q.len(), 40);
    let mut next = [0u64; 4];
    for (_, sector, n, _) in &q {
        let z = (sector / 2048) as usize;
        assert_eq!(*sector, z as u64 * 2048 + next[z], "write at the write pointer");
        next[z] += *n as u64;
    }
    // 40 × 64 KiB = 2.5 MiB < 4 zones: no zone overflows.
    assert!(next.iter().all(|&n| n <= 2048));
}

#[test]
fn disk_stats_of_an_md_array_show_its_members() {
    // fio's disk list: md0, then its members; md0's line carries the
    // members' averages (aggr*) — raid1 writes both copies, so each member
    // did as many writes as md0 — and is indented two more spaces.
    let text = "[disks.sdb]\nkind = \"sata\"\nsize = \"1GiB\"\n[disks.sdc]\nkind = \"sata\"\nsize = \"1GiB\"\n[md.md0]\nlevel = 1\nmembers = [\"sdb\", \"sdc\"]\n\
                [workload]\ntype = \"fio\"\njob = \"\"\"\n[w]\nrw=write\ndirect=1\nbs=64k\nsize=4M\n\"\"\"\n";
    let sc = scenario::load("f.toml", text, None, &[]).unwrap();
    let mut engine = sc.build();
    engine.run();
    let (fio, report) = blkstack::stats::fio::report(sc.workload.fio.as_ref().unwrap(), &engine);
    let disk = report.split("Disk stats (read/write):\n").nth(1).unwrap();
    let lines: Vec<&str> = disk.lines().collect();
    // No filename: the job runs on the top of the stack, md0. 4 MiB / 64 KiB = 64 writes.
    assert!(lines[0].starts_with("    md0: ios=0/64, merge=0/0, ticks=0/"), "{disk}");
    assert!(lines[0].contains(", aggrios=0/64, aggrmerge=0/0, aggrticks=0/"), "{disk}");
    assert!(lines[1].starts_with("  sdb: ios=0/64") && lines[2].starts_with("  sdc: ios=0/64"), "{disk}");
    assert_eq!(fio["disk_util"][0]["aggr_write_ios"], 64);
}

/// Sizes (sectors) and sectors of the bios queued on nvme1n1.
fn queued(job: &str) -> Vec<(u64, u32)> {
    let (engine, events, _, _) = run("f.toml", &with_job(job));
    stream(&engine, &events, "nvme1n1", Action::Queue).into_iter().map(|q| (q.1, q.2)).collect()
}

#[test]
fn block_size_ranges_and_splits() {
    // bsrange=4k-16k: uniform in [4096, 16384] aligned down to 4096, so 4,
    // 8, 12 or 16 KiB (8 to 32 sectors, in steps of 8).
    let q = queued("[j]\nrw=randwrite\ndirect=1\nbsrange=4k-16k\nnumber_ios=200\nnorandommap\n");
    assert_eq!(q.len(), 200);
    assert!(q.iter().all(|b| b.1 % 8 == 0 && (8..=32).contains(&b.1)));
    // bssplit=4k/75:64k/25: 64 KiB I/Os ~ Bin(400, 0.25): mean 100, sd √75 ≈
    // 8.7, ± 4 sd → 66..134. Random offsets are aligned to the smallest
    // size (blockalign defaults to min_bs).
    let q = queued("[j]\nrw=randwrite\ndirect=1\nbssplit=4k/75:64k/25\nnumber_ios=400\nnorandommap\n");
    let big = q.iter().filter(|b| b.1 == 128).count();
    assert!(q.iter().all(|b| b.1 == 8 || b.1 == 128) && (66..=134).contains(&big), "{big}");
    assert!(q.iter().all(|b| b.0 % 8 == 0));
    // blockalign=64k: every offset a multiple of 128 sectors.
    let q = queued("[j]\nrw=randread\ndirect=1\nbs=4k\nblockalign=64k\nnumber_ios=100\nnorandommap\n");
    assert!(q.iter().all(|b| b.0 % 128 == 0));
}

#[test]
fn zipf_concentrates_on_one_range() {
    // zipf:1.2 over 4 MiB / 4 KiB = 1024 ranges: the hottest range takes
    // 1/ζ(1024, 1.2) of the I/Os. ζ(1024, 1.2) = Σ i^-1.2 ≈ 4.342, so 23.0 %:
    // of 1000 I/Os ~ Bin(1000, 0.2303), mean 230, sd 13.3, ± 4 sd → 177..283.
    let q = queued("[j]\nrw=randread\ndirect=1\nsize=4M\nbs=4k\nnumber_ios=1000\nrandom_distribution=zipf:1.2\n");
    let mut counts = std::collections::HashMap::new();
    for b in &q {
        *counts.entry(b.0).or_insert(0u32) += 1;
    }
    let hottest = *counts.values().max().unwrap();
    assert!((177..=283).contains(&hottest), "{hottest}");
    assert!(q.iter().all(|b| b.0 < 8192), "inside the 4 MiB region");
}

#[test]
fn offset_and_size_place_the_region() {
    // offset=1M size=1M, sequential 64 KiB writes: sectors 2048..4096, 16 I/Os.
    let q = queued("[j]\nrw=write\ndirect=1\noffset=1M\nsize=1M\nbs=64k\n");
    assert_eq!(q, (0..16).map(|i| (2048 + 128 * i, 128)).collect::<Vec<_>>());
    // offset=50% of 64 GiB = 32 GiB (sector 67,108,864); io_size=256k: 4 I/Os.
    let q = queued("[j]\nrw=write\ndirect=1\noffset=50%\nio_size=256k\nbs=64k\n");
    assert_eq!(q.first(), Some(&(67_108_864, 128)));
    assert_eq!(q.len(), 4);
}

#[test]
fn startdelay_holds_a_job_back() {
    // Two 16-read jobs on one disk; the second has startdelay=20ms (fio
    // forks it once 20 ms have passed): its first read is queued at 20 ms,
    // the first job's at 0.
    let (_, ev, _, _) = run("f.toml", &with_args(&["--name=a", "--rw=read", "--bs=4k", "--direct=1", "--size=64k", "--filename=/dev/nvme1n1", "--name=b", "--startdelay=20ms", "--rw=read", "--offset=1M", "--bs=4k", "--direct=1", "--size=64k", "--filename=/dev/nvme1n1"]));
    let first = |b: bool| ev.iter().filter(|e| e.action == Action::Queue && (e.sector >= 2048) == b).map(|e| e.time).min().unwrap();
    assert_eq!((first(false), first(true)), (0, 20_000_000));
}

#[test]
fn rate_iops_thinktime_ramp_and_stonewall_pace_the_jobs() {
    // rate_iops=1000: the n-th read (from 0) is not issued before n ms
    // from the job's start (usec_for_io: n × 4096 B / (1000 × 4096 B/s)).
    // runtime=100ms: reads at 0, 1, ..., 99 ms, none at 100 ms: 100 reads.
    let (_, ev, fio, _) = run("f.toml", &with_args(&["--name=r", "--rw=read", "--bs=4k", "--direct=1", "--size=1M", "--time_based", "--runtime=100ms", "--rate_iops=1000", "--filename=/dev/nvme1n1"]));
    assert_eq!(fio["jobs"][0]["read"]["total_ios"], 100);
    let q: Vec<u64> = ev.iter().filter(|e| e.action == Action::Queue).map(|e| e.time).collect();
    assert_eq!(q.len(), 100);
    assert!(q.iter().enumerate().all(|(n, &t)| t >= n as u64 * 1_000_000), "{q:?}");
    // A second job behind a stonewall starts when the first has finished:
    // its first I/O comes after the first job's last completion, and it is
    // reported in group 1.
    let (e, ev, fio, _) = run("f.toml", &with_args(&["--name=a", "--rw=write", "--bs=4k", "--direct=1", "--size=64k", "--filename=/dev/nvme1n1", "--name=b", "--stonewall", "--rw=read", "--bs=4k", "--direct=1", "--size=64k", "--filename=/dev/nvme1n1"]));
    let a_last = e.jobs[0].stats.last_complete_ns;
    let b_first = ev.iter().filter(|x| x.action == Action::Queue && x.op == blkstack::bio::Op::Read).map(|x| x.time).min().unwrap();
    assert!(b_first >= a_last, "{b_first} < {a_last}");
    assert_eq!((fio["jobs"][0]["groupid"].as_u64(), fio["jobs"][1]["groupid"].as_u64()), (Some(0), Some(1)));
    // thinktime=1000 µs after each psync read of a 16-read job: each read
    // waits for the one before to complete, then 1 ms; 16 reads take at
    // least 15 ms. ramp_time=5ms: the reads of the first 5 ms count in no
    // statistic, and the job then reads its 64 KiB (16 reads) again.
    let (_, _, fio, _) = run("f.toml", &with_args(&["--name=t", "--rw=read", "--bs=4k", "--direct=1", "--size=64k", "--thinktime=1000", "--ramp_time=5ms", "--filename=/dev/nvme1n1"]));
    let job = &fio["jobs"][0];
    assert_eq!(job["read"]["total_ios"], 16);
    assert!(job["job_runtime"].as_u64().unwrap() >= 15, "{job}");
}
