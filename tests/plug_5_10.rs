//! 5.10's list-based plug (block/blk-mq.c and blk-merge.c of Debian's
//! 5.10.262), checked against values worked out by hand from its rules:
//! `blk_add_rq_to_plug` appends at the tail; `blk_attempt_plug_merge` walks
//! the list from the tail and tries every request of the bio's queue;
//! `blk_mq_submit_bio` measures the list tail (the newest request) against
//! `BLK_PLUG_FLUSH_SIZE`; `blk_mq_flush_plug_list` sorts a plug of more than
//! two requests of several queues with `plug_rq_cmp` (software queue,
//! hardware queue, sector) and inserts each queue's run in that order.

mod common;

use blkstack::bio::req;
use blkstack::trace::{Action, Event};
use common::{issued, run_events};

fn write(sector: u64, bytes: u32) -> String {
    format!("[[workload.bio]]\nop = \"write\"\nsector = {sector}\nsize = {bytes}\n")
}

/// One disk, every bio of the list submitted in one plug. Writeback
/// throttling is off: these plain writes would otherwise wait in wbt_wait
/// (the plug rules are what the tests look at).
fn one_disk(kernel: &str, bios: &[String]) -> String {
    let n = bios.len();
    format!(
        "kernel = \"{kernel}\"\n[disks.d0]\nkind = \"nvme\"\nsize = \"64GiB\"\n[disks.d0.queue]\nwbt_lat_usec = 0\n\
         [workload]\ntype = \"bios\"\ndevice = \"d0\"\niodepth = {n}\nbatch = {n}\nplug = true\n{}",
        bios.join("")
    )
}

fn unplugs(ev: &[Event]) -> Vec<u64> {
    ev.iter().filter(|x| x.action == Action::Unplug).map(|x| x.arg).collect()
}

#[test]
fn every_plugged_request_is_tried_for_a_merge() {
    // Writes of 8 sectors at 0, 1000, then 8 (which continues the first).
    // 5.10: the walk from the tail tries 1000 (no), then 0: a back merge,
    // so two requests, (0, 16) and (1000, 8).
    // 6.12: one-shot, the tail (1000) only; 6.1: the newest (1000) only:
    // three requests.
    let bios = [write(0, 4096), write(1000, 4096), write(8, 4096)];
    let (e, ev) = run_events(&one_disk("5.10", &bios), &[]);
    let mut d = issued(&e, &ev, "d0");
    d.sort();
    assert_eq!(d, vec![(0, 16), (1000, 8)]);
    assert_eq!(e.core.stats[0].plug_merges, 1);
    for kernel in ["6.1", "6.12"] {
        let (e, ev) = run_events(&one_disk(kernel, &bios), &[]);
        assert_eq!(issued(&e, &ev, "d0").len(), 3, "{kernel}");
        assert_eq!(e.core.stats[0].plug_merges, 0, "{kernel}");
    }
}

#[test]
fn plug_flush_size_is_measured_on_the_newest_request() {
    // 4 KiB at 10000, 128 KiB at 0, 4 KiB at 20000, 4 KiB at 30000.
    // 5.10 compares the list tail (the newest): adding the third request
    // finds the 128 KiB one there (131072 >= BLK_PLUG_FLUSH_SIZE), so the
    // plug is flushed with two requests (U 2); the fourth finds a 4 KiB
    // tail; blk_finish_plug flushes the last two (U 2).
    // 6.12 compares the head, the oldest under tail-add (4 KiB every time):
    // no early flush, one U of 4.
    let bios = [write(10000, 4096), write(0, 131072), write(20000, 4096), write(30000, 4096)];
    let (_, ev) = run_events(&one_disk("5.10", &bios), &[]);
    assert_eq!(unplugs(&ev), vec![2, 2]);
    let (_, ev) = run_events(&one_disk("6.12", &bios), &[]);
    assert_eq!(unplugs(&ev), vec![4]);
}

#[test]
fn plug_flushes_at_blk_max_request_count() {
    // 20 scattered 4 KiB writes (sector 100 i): 5.10.262 has
    // BLK_MAX_REQUEST_COUNT 32, so one U of 20; mainline 5.10's 16 flushes
    // the plug when the 17th request comes (U 16), then the last 4 (U 4).
    let bios: Vec<String> = (0..20).map(|i| write(100 * i, 4096)).collect();
    let (_, ev) = run_events(&one_disk("5.10", &bios), &[]);
    assert_eq!(unplugs(&ev), vec![20]);
    let (_, ev) = run_events(&one_disk("5.10", &bios), &["behaviour.plug_max_requests=16"]);
    assert_eq!(unplugs(&ev), vec![16, 4]);
}

/// dm-linear over two disks (a: lin 0-999, b: lin 1000-1999), 4 KiB
/// writes at the given lin sectors in one plug.
fn two_disks(kernel: &str, lin_sectors: &[u64]) -> String {
    let bios: Vec<String> = lin_sectors.iter().map(|&s| write(s, 4096)).collect();
    let n = bios.len();
    format!(
        "kernel = \"{kernel}\"\n[disks.a]\nkind = \"nvme\"\nsize = \"1GiB\"\n[disks.b]\nkind = \"nvme\"\nsize = \"1GiB\"\n\
         [dm.lin]\ntable = \"\"\"\n0 1000 linear /dev/a 0\n1000 1000 linear /dev/b 0\n\"\"\"\n\
         [workload]\ntype = \"bios\"\ndevice = \"lin\"\niodepth = {n}\nbatch = {n}\nplug = true\n{}",
        bios.join("")
    )
}

#[test]
fn a_plug_of_several_queues_is_sorted_at_flush() {
    // Requests in plug order (tail add): b 100, a 500, b 8, a 16. Several
    // queues and four requests: plug_rq_cmp sorts them by queue (a was
    // created first), then sector: a 16, a 500, b 8, b 100; each queue's
    // run is one batch (U 2, U 2) issued in that order.
    let lin = [1100, 500, 1008, 16];
    let (e, ev) = run_events(&two_disks("5.10", &lin), &[]);
    assert_eq!(issued(&e, &ev, "a"), vec![(16, 8), (500, 8)]);
    assert_eq!(issued(&e, &ev, "b"), vec![(8, 8), (100, 8)]);
    assert_eq!(unplugs(&ev), vec![2, 2]);
    // Unsorted (6.12's tail add, list kept in order): the head's queue
    // first, in plug order: b 100, b 8, then a 500, a 16.
    let (e, ev) = run_events(&two_disks("6.12", &lin), &[]);
    assert_eq!(issued(&e, &ev, "b"), vec![(100, 8), (8, 8)]);
    assert_eq!(issued(&e, &ev, "a"), vec![(500, 8), (16, 8)]);
    // Two requests are never sorted (rq_count > 2 is required): b 100, a 16
    // stay in plug order, b's batch first.
    let (e, ev) = run_events(&two_disks("5.10", &[1100, 16]), &[]);
    let first_b = ev.iter().position(|x| x.action == Action::Issue && x.dev == e.core.topo.by_name("b").unwrap());
    let first_a = ev.iter().position(|x| x.action == Action::Issue && x.dev == e.core.topo.by_name("a").unwrap());
    assert!(first_b < first_a);
}

#[test]
fn synchronous_direct_reads_are_not_req_sync_on_5_10() {
    // __blkdev_direct_IO_simple of 5.10 calls submit_bio and sleeps itself:
    // a 4 KiB O_DIRECT read stays REQ_OP_READ ("R"); 5.16+ submit_bio_wait
    // adds REQ_SYNC ("RS").
    let dd = |kernel: &str| {
        format!(
            "kernel = \"{kernel}\"\n[disks.d0]\nkind = \"virtio\"\nsize = \"1GiB\"\n\
             [workload]\ntype = \"dd\"\nif = \"/dev/d0\"\nof = \"/dev/null\"\nbs = \"4k\"\ncount = 1\niflag = \"direct\"\n"
        )
    };
    for (kernel, sync) in [("5.10", false), ("6.1", true)] {
        let (_, ev) = run_events(&dd(kernel), &[]);
        let d = ev.iter().find(|x| x.action == Action::Issue).expect("a request");
        assert_eq!(d.flags & req::SYNC != 0, sync, "{kernel}");
    }
}
