//! The request layer — plugging, merging, mq-deadline, tags, device timing —
//! checked against values worked out by hand from the kernel's rules
//! (block/blk-mq.c, blk-merge.c, mq-deadline.c). Each test shows its working.

mod common;

use blkstack::trace::{Action, Event};
use common::{issued, on, run_events};

/// A scenario with one disk and a list of bios. Writeback throttling is
/// off (`wbt_lat_usec = 0`): its plain writes would otherwise be held to
/// wbt's limits (tests/wbt.rs), and these tests look at the rules below it.
fn scenario(kernel: &str, kind: &str, queue: &str, model: &str, workload: &str, bios: &[String]) -> String {
    format!(
        "kernel = \"{kernel}\"\n[disks.d0]\nkind = \"{kind}\"\nsize = \"64GiB\"\n[disks.d0.queue]\nwbt_lat_usec = 0\n{queue}\n[disks.d0.model]\n{model}\n[workload]\ntype = \"bios\"\ndevice = \"d0\"\n{workload}\n{}",
        bios.join("")
    )
}

fn write(sector: u64, bytes: u32) -> String {
    format!("[[workload.bio]]\nop = \"write\"\nsector = {sector}\nsize = {bytes}\n")
}

/// Seed 001's writeback: 32 dirty 4 KiB pages at scattered, never adjacent
/// places (page i at sector 16 × (919·i mod 1000), distinct since 919 is
/// prime to 1000), written back in ascending order, each page as two
/// contiguous 2 KiB bios (2 KiB buffer heads), all in one plug.
fn writeback_pairs() -> Vec<String> {
    let mut pages: Vec<u64> = (0..32).map(|i| 16 * ((919 * i) % 1000)).collect();
    pages.sort();
    pages.iter().flat_map(|&s| [write(s, 2048), write(s + 4, 2048)]).collect()
}

fn plugged_batch(n: usize) -> String {
    format!("iodepth = {n}\nbatch = {n}\nplug = true")
}

fn count(ev: &[Event], a: Action) -> usize {
    ev.iter().filter(|e| e.action == a).count()
}

#[test]
fn writeback_pairs_merge_under_61_and_the_tail_fix() {
    // 6.1: head-add plug, the merge candidate is the newest request: each
    // second 2 KiB bio back-merges into the request its first bio just made.
    // 6.12.117 (tail-add with the tail-first fix of 6.12.35): the tail is
    // that same newest request. 32 requests of 8 sectors either way, one
    // plug merge per page, 64 attempts (every bio tries).
    for kernel in ["6.1", "6.12"] {
        let text = scenario(kernel, "nvme", "", "", &plugged_batch(64), &writeback_pairs());
        let (e, ev) = run_events(&text, &[]);
        let d = issued(&e, &ev, "d0");
        assert_eq!(d.len(), 32, "{kernel}");
        assert!(d.iter().all(|&(_, n)| n == 8), "{kernel}: {d:?}");
        let s = &e.core.stats[0];
        assert_eq!((s.plug_merge_attempts, s.plug_merges), (64, 32), "{kernel}");
        assert_eq!(count(&ev, Action::BackMerge), 32);
        assert_eq!(s.disk.merges[1], 32, "diskstats counts each bio merge");
    }
}

#[test]
fn writeback_pairs_do_not_merge_under_the_6_15_rule() {
    // 6.13–6.15 and 6.12.25–.34: tail add, but the candidate is still the
    // first request from the head — now the OLDEST. Page 1's second bio
    // meets page 1's request (the only one) and merges; from page 2 on, every
    // second bio is compared with page 1's request and fails. That is one
    // merge per plug — "only the very first pair in each plug merges".
    // Requests: 1 + 2 × 31 = 63. The 33rd new request (page 17's second
    // half) finds 32 in the plug and flushes it first; from then on the
    // oldest request is always a second half, so nothing else merges.
    let text = scenario("6.15", "nvme", "", "", &plugged_batch(64), &writeback_pairs());
    let (e, ev) = run_events(&text, &[]);
    let d = issued(&e, &ev, "d0");
    assert_eq!(d.len(), 63);
    assert_eq!(d.iter().filter(|&&(_, n)| n == 8).count(), 1);
    assert_eq!(d.iter().filter(|&&(_, n)| n == 4).count(), 62);
    let s = &e.core.stats[0];
    assert_eq!((s.plug_merge_attempts, s.plug_merges), (64, 1));
    // Two plug batches: U with 32 requests, then 31 at the end.
    let u: Vec<u64> = ev.iter().filter(|x| x.action == Action::Unplug).map(|x| x.arg).collect();
    assert_eq!(u, vec![32, 31]);
}

#[test]
fn nomerges_2_merges_nothing() {
    // nomerges = 2: blk_mq_submit_bio skips every merge attempt (none is
    // even counted), so the 64 bios become 64 requests; the plug flushes at
    // 32 requests (the size flush is off with nomerges = 2, the count stays).
    let text = scenario("6.1", "nvme", "nomerges = 2", "", &plugged_batch(64), &writeback_pairs());
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "d0").len(), 64);
    assert_eq!(e.core.stats[0].plug_merge_attempts, 0);
    assert_eq!(e.core.stats[0].disk.merges, [0; 4]);
}

#[test]
fn plug_flushes_early_at_32_requests() {
    // 40 scattered 4 KiB writes in one plug (6.12: 'U' on the direct path).
    // Adding the 33rd request finds rq_count 32: the plug is flushed first
    // (U 32) and a new one starts (P); the last 8 go at blk_finish_plug.
    let bios: Vec<String> = (0..40).map(|i| write(100 * i, 4096)).collect();
    let text = scenario("6.12", "nvme", "", "", &plugged_batch(40), &bios);
    let (_, ev) = run_events(&text, &[]);
    let u: Vec<u64> = ev.iter().filter(|x| x.action == Action::Unplug).map(|x| x.arg).collect();
    assert_eq!(u, vec![32, 8]);
    assert_eq!(count(&ev, Action::Plug), 2);
}

#[test]
fn plug_flushes_early_at_128k() {
    // 32 contiguous 4 KiB writes merge into one 128 KiB request; the 33rd
    // bio is elsewhere and needs a new request. The reference request (the
    // head: under tail-add the oldest, this one) has reached
    // BLK_PLUG_FLUSH_SIZE, so the plug is flushed before the new request is
    // added: U 1, P, and the last request goes at blk_finish_plug (U 1).
    let mut bios: Vec<String> = (0..32).map(|i| write(8 * i, 4096)).collect();
    bios.push(write(10_000, 4096));
    let text = scenario("6.12", "nvme", "", "", &plugged_batch(33), &bios);
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "d0"), vec![(0, 256), (10_000, 8)]);
    let u: Vec<u64> = ev.iter().filter(|x| x.action == Action::Unplug).map(|x| x.arg).collect();
    assert_eq!(u, vec![1, 1]);
    // With the size flush disabled the request stays in the plug and the
    // single flush carries both.
    let (_, ev) = run_events(&text, &["behaviour.plug_flush_size=0"]);
    let u: Vec<u64> = ev.iter().filter(|x| x.action == Action::Unplug).map(|x| x.arg).collect();
    assert_eq!(u, vec![2]);
}

#[test]
fn plugged_sequential_writes_capped_by_max_sectors_under_mq_deadline() {
    // 64 sequential 4 KiB writes in one plug on a SATA disk (mq-deadline),
    // max_sectors_kb 64 (128 sectors). Plug merges grow the newest request
    // to 16 bios; the 17th fails ll_back_merge_fn (size) — the request is
    // marked REQ_NOMERGE — and the scheduler has nothing yet, so it starts a
    // new request. Four requests of 128 sectors, inserted at unplug (no
    // insert merge: each predecessor is NOMERGE) and issued in sector order.
    let bios: Vec<String> = (0..64).map(|i| write(8 * i, 4096)).collect();
    let text = scenario("6.1", "sata", "max_sectors_kb = 64", "", &plugged_batch(64), &bios);
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "d0"), vec![(0, 128), (128, 128), (256, 128), (384, 128)]);
    assert_eq!(count(&ev, Action::Insert), 4);
    assert_eq!(e.core.stats[0].disk.merges[1], 60);
}

#[test]
fn mq_deadline_merges_behind_a_busy_device() {
    // queue_depth 1, nr_requests 64, no plug (6.1), 64 sequential 4 KiB
    // writes all submitted at once. Bio 1 gets a request that is issued at
    // once and takes the only driver tag. Bio 2 finds nothing to merge with
    // (the dispatched request left the scheduler) and is inserted; it
    // becomes last_merge. Bios 3–17 back-merge into it (128 sectors). Bio 18
    // fails for size — the request turns NOMERGE and leaves last_merge — and
    // becomes a new request, which the next 15 join; and so on. Issued one
    // at a time as the device frees: 8, 128, 128, 128, and 120 (bios 50–64).
    let bios = vec![format!("{}repeat = 64\n", write(0, 4096))];
    let q = "max_sectors_kb = 64\nqueue_depth = 1\nnr_requests = 64";
    let text = scenario("6.1", "sata", q, "", "iodepth = 64", &bios);
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "d0"), vec![(0, 8), (8, 128), (136, 128), (264, 128), (392, 120)]);
    assert_eq!(e.core.stats[0].disk.merges[1], 59);
}

#[test]
fn mq_deadline_dispatches_in_sector_order() {
    // queue_depth 1: the first write (sector 800) is issued at once; 100,
    // 500 and 300 wait. Nothing lies at or above 800, so the FIFO head (100)
    // starts the next batch, then the sort order continues upward: 300, 500.
    let bios: Vec<String> = [800, 100, 500, 300].iter().map(|&s| write(s, 4096)).collect();
    let text = scenario("6.1", "sata", "queue_depth = 1\nnr_requests = 64", "", "iodepth = 4", &bios);
    let (e, ev) = run_events(&text, &[]);
    let order: Vec<u64> = issued(&e, &ev, "d0").iter().map(|x| x.0).collect();
    assert_eq!(order, vec![800, 100, 300, 500]);
}

#[test]
fn mq_deadline_continues_from_next_rq_until_6_4_and_from_the_position_after() {
    // queue_depth 1, three single-write submissions at once: 100 is
    // inserted alone and issued at once (the only driver tag); 800 and 500
    // are inserted behind it. When 100 completes:
    // * 6.1 (next_rq): 100's dispatch set next_rq[WRITE] to the request
    //   after it in sector order *then*, none; so the batch restarts from
    //   the FIFO head, 800, whose successor is again none: FIFO, 500.
    // * 6.12 (83c46ed67557, latest_pos): the lowest request at or above 100
    //   is 500, then at or above 500, 800.
    let bios: Vec<String> = [100, 800, 500].iter().map(|&s| write(s, 4096)).collect();
    let order = |kernel: &str, sets: &[&str]| -> Vec<u64> {
        let text = scenario(kernel, "sata", "queue_depth = 1\nnr_requests = 64", "", "iodepth = 3\nbatch = 1", &bios);
        let (e, ev) = run_events(&text, sets);
        issued(&e, &ev, "d0").iter().map(|x| x.0).collect()
    };
    assert_eq!(order("6.1", &[]), vec![100, 800, 500]);
    assert_eq!(order("6.12", &[]), vec![100, 500, 800]);
    assert_eq!(order("6.1", &["behaviour.dd_next=latest_pos"]), vec![100, 500, 800]);
}

#[test]
fn discard_ranges_merge_up_to_max_discard_segments() {
    // NVMe with max_discard_segments 2: any discard merges into a discard
    // request (no contiguity) while it has fewer than 2 ranges. The second
    // range joins the first request (2 segments, 16 + 24 sectors); the third
    // is refused (segments full) and gets its own request.
    let d = |s: u64, n: u64| format!("[[workload.bio]]\nop = \"discard\"\nsector = {s}\nsize = \"{n}s\"\n");
    let bios = vec![d(1000, 16), d(5000, 24), d(9000, 8)];
    let text = scenario("6.12", "nvme", "max_discard_segments = 2", "", &plugged_batch(3), &bios);
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "d0"), vec![(1000, 40), (9000, 8)]);
    assert_eq!(e.core.stats[0].disk.merges[2], 1, "counted as a discard merge");
    assert_eq!(count(&ev, Action::BackMerge), 0, "discard merges are not traced");
}

#[test]
fn tag_starved_submitter_sleeps_until_a_completion() {
    // NVMe without scheduler, queue_depth 2 (so nr_requests 2): two tags. Four 4 KiB writes
    // submitted back to back at t = 0 (no plug). The generic NVMe model:
    // 20 µs per write, 4096 B at 3 GB/s = 1,365 ns on the shared bus, 800K
    // IOPS = a command every 1,250 ns.
    //   R1: admitted 0, ready 20,000, done 21,365.
    //   R2: admitted 1,250, ready 21,250, bus busy until 21,365 → 22,730.
    // Bio 3 finds no tag and sleeps; R1's completion at 21,365 hands it the
    // tag: G at 21,365, issued then, done 21,365 + 20,000 + 1,365 = 42,730.
    // Bio 4 (submitted by the same task after it woke) sleeps until R2's
    // completion at 22,730: admitted 22,730 (next slot 22,615 has passed),
    // ready 42,730, bus free at 42,730 → done 44,095.
    let bios: Vec<String> = (0..4).map(|i| write(1000 * i, 4096)).collect();
    let text = scenario("6.1", "nvme", "queue_depth = 2", "", "iodepth = 4", &bios);
    let (e, ev) = run_events(&text, &[]);
    let times = |a: Action| -> Vec<u64> { ev.iter().filter(|x| x.action == a).map(|x| x.time).collect() };
    assert_eq!(times(Action::GetRq), vec![0, 0, 21_365, 22_730]);
    assert_eq!(times(Action::Complete), vec![21_365, 22_730, 42_730, 44_095]);
    assert_eq!(on(&e, &ev, "d0", Action::Queue).len(), 4);
}

#[test]
fn tag_starved_submitter_flushes_its_plug_from_schedule() {
    // The same four writes in one plug: bios 1 and 2 get the two tags and
    // sit in the plug. Bio 3 finds no tag: io_schedule() flushes the plug
    // with from_schedule — the list path, 'UT' with depth 2, each request
    // inserted ('I') into the software queue and issued by a kworker.
    let bios: Vec<String> = (0..4).map(|i| write(1000 * i, 4096)).collect();
    let text = scenario("6.1", "nvme", "queue_depth = 2", "", &plugged_batch(4), &bios);
    let (e, ev) = run_events(&text, &[]);
    let ut: Vec<u64> = ev.iter().filter(|x| x.action == Action::UnplugTimer).map(|x| x.arg).collect();
    assert_eq!(ut[0], 2);
    let first_d = ev.iter().find(|x| x.action == Action::Issue).unwrap();
    assert_eq!(e.core.tasks[first_d.task as usize].comm, "kworker/0:1H");
    assert_eq!(issued(&e, &ev, "d0").len(), 4);
}

/// Throughput of `n` scattered writes of `bytes` on the 180K-IOPS NVMe at
/// queue depth 64, in MiB/s of simulated time.
fn nvme_180k_mib_per_s(bytes: u32) -> f64 {
    let n = 20_000u64;
    let bios = vec![format!("{}repeat = {n}\nstride = 64\n", write(0, bytes))];
    let text = scenario("6.12", "nvme", "", "preset = \"nvme-180k\"", "iodepth = 64", &bios);
    let (e, _) = run_events(&text, &[]);
    (n * bytes as u64) as f64 / (1 << 20) as f64 / (e.core.now as f64 / 1e9)
}

#[test]
fn iops_capped_nvme_predicts_seed_001_bandwidths() {
    // The device admits one command per 1e9 / 180,000 = 5,555 ns; at depth
    // 64 with 30 µs writes nothing else binds. 2 KiB per command:
    // 2048 B / 5,555 ns = 351.6 MiB/s; 4 KiB: 703.2 MiB/s (the seed
    // measured 362 and 660 with fio's own overheads).
    let two = nvme_180k_mib_per_s(2048);
    let four = nvme_180k_mib_per_s(4096);
    assert!((two - 351.6).abs() < 3.0, "{two}");
    assert!((four - 703.2).abs() < 6.0, "{four}");
}

/// Sectors of 'D' and of 'C' events, in trace order.
fn d_and_c(ev: &[Event]) -> (Vec<u64>, Vec<u64>) {
    let of = |a: Action| ev.iter().filter(|x| x.action == a).map(|x| x.sector).collect();
    (of(Action::Issue), of(Action::Complete))
}

#[test]
fn plug_flush_order_per_version_and_path() {
    // Three scattered writes in one plug (block-core spec §4.3's table).
    // Same-size writes complete in the order the device received them.
    let bios: Vec<String> = [0, 1000, 2000].iter().map(|&s| write(s, 4096)).collect();
    let run = |kernel: &str, kind: &str, queue: &str| {
        let (_, ev) = run_events(&scenario(kernel, kind, queue, "", &plugged_batch(3), &bios), &[]);
        d_and_c(&ev)
    };
    // 6.1, nvme ->queue_rqs: the head-add plug holds newest first; the driver
    // starts them as it pops ('D' newest first) but pushes each at the head
    // of its submit list, so the device gets them oldest first.
    assert_eq!(run("6.1", "nvme", ""), (vec![2000, 1000, 0], vec![0, 1000, 2000]));
    // 6.12: tail-add, no reversal anywhere.
    assert_eq!(run("6.12", "nvme", ""), (vec![0, 1000, 2000], vec![0, 1000, 2000]));
    // 6.1, SCSI without ->queue_rqs, no scheduler: direct issue from the
    // head, newest first, and that is the device's order too.
    assert_eq!(run("6.1", "sata", "scheduler = \"none\""), (vec![2000, 1000, 0], vec![2000, 1000, 0]));
    // 6.1 with mq-deadline: the list path (list_add makes the batch oldest
    // first), inserted, then dispatched in sector order.
    assert_eq!(run("6.1", "sata", "").0, vec![0, 1000, 2000]);
}
