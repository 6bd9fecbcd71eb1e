//! The flush state machine (src/flush.rs, block/blk-flush.c): REQ_FUA and
//! REQ_PREFLUSH writes on disks with a volatile write cache, with and
//! without FUA support, per version. Each test shows its working.

mod common;

use blkstack::stats::diskstats::{FLUSH, WRITE};
use blkstack::trace::{rwbs, Action, Event};
use common::run_events;

/// dd of one 192 KiB O_DIRECT | O_DSYNC write at sector 0 onto `kind`,
/// max_sectors_kb 64, no scheduler.
fn dd_dsync(kernel: &str, kind: &str, extra_queue: &str) -> String {
    format!(
        "kernel = \"{kernel}\"\n[disks.d0]\nkind = \"{kind}\"\nsize = \"1GiB\"\n[disks.d0.queue]\nmax_sectors_kb = 64\nscheduler = \"none\"\n{extra_queue}\n\
         [workload]\ntype = \"dd\"\nif = \"/dev/zero\"\nof = \"/dev/d0\"\nbs = \"192k\"\ncount = 1\noflag = \"direct,dsync\"\n"
    )
}

/// (rwbs, sector, sectors, task comm) of `action` events on d0.
fn events(e: &blkstack::engine::Engine, ev: &[Event], action: Action) -> Vec<(String, u64, u32, String)> {
    let id = e.core.topo.by_name("d0").unwrap();
    ev.iter()
        .filter(|x| x.dev == id && x.action == action)
        .map(|x| (rwbs(x.op, x.flags, x.bytes), x.sector, x.sectors(), e.core.tasks[x.task as usize].comm.clone()))
        .collect()
}

fn ops(v: &[(String, u64, u32, String)]) -> Vec<(&str, u64, u32)> {
    v.iter().map(|x| (x.0.as_str(), x.1, x.2)).collect()
}

#[test]
fn fua_without_fua_support_is_a_write_then_one_flush() {
    // virtio-blk: write cache "write back", fua 0. The WFS bio 0 + 384 is
    // split into three 128-sector requests; blk_flush_policy gives each
    // DATA | POSTFLUSH, so each loses REQ_FUA and keeps REQ_SYNC: "WS".
    // All three are in flight at once; as each completes it waits for a
    // post-flush, and blk_kick_flush holds the flush back while data of a
    // sequence is in flight (C2): one flush request ("FN" in blkparse:
    // REQ_OP_FLUSH | REQ_PREFLUSH) after the third. Its completion ends the
    // three requests (C with 0 bytes left). Then dd's O_DSYNC
    // generic_write_sync → blkdev_fsync: an empty REQ_PREFLUSH write
    // (policy PREFLUSH) that is never issued itself: a second flush.
    for kernel in ["6.1", "6.12"] {
        let (e, ev) = run_events(&dd_dsync(kernel, "virtio", ""), &[]);
        let d = events(&e, &ev, Action::Issue);
        assert_eq!(ops(&d), [("WS", 0, 128), ("WS", 128, 128), ("WS", 256, 128), ("FN", 0, 0), ("FN", 0, 0)], "{kernel}");
        // Up to 6.4 the data goes through the requeue list, kblockd issues
        // it; from 6.5 the normal path (6.12's own plug per __submit_bio,
        // flushed by dd itself). Flushes are always kblockd's.
        let data_by = if kernel == "6.1" { "kworker/0:1H" } else { "dd" };
        assert!(d[..3].iter().all(|x| x.3 == data_by), "{kernel}: {d:?}");
        assert!(d[3..].iter().all(|x| x.3 == "kworker/0:1H"), "{kernel}");
        // Each data request completes twice: its data (128 sectors), then
        // the sequence's end (0 sectors left) after the flush.
        let c = events(&e, &ev, Action::Complete);
        let data_done: Vec<u32> = c.iter().filter(|x| x.0 == "WS").map(|x| x.2).collect();
        assert_eq!(data_done, [128, 128, 128, 0, 0, 0, 0], "{kernel}: the fsync's empty write ends too");
        // diskstats: the four write requests (three data, one empty) are
        // writes of 384 sectors; the two flush requests are flushes.
        let s = &e.core.stats[0].disk;
        assert_eq!((s.ios[WRITE], s.sectors[WRITE], s.ios[FLUSH]), (4, 384, 2), "{kernel}");
    }
}

#[test]
fn fua_on_a_fua_disk_needs_no_flush() {
    // nvme: write back and fua 1: policy DATA only, the requests keep
    // REQ_FUA ("WFS") and no flush follows them; only the fsync's empty
    // write needs one.
    for kernel in ["6.1", "6.12"] {
        let (e, ev) = run_events(&dd_dsync(kernel, "nvme", ""), &[]);
        let d = events(&e, &ev, Action::Issue);
        assert_eq!(ops(&d), [("WFS", 0, 128), ("WFS", 128, 128), ("WFS", 256, 128), ("FN", 0, 0)], "{kernel}");
    }
}

#[test]
fn write_through_strips_the_flags_and_completes_the_empty_flush_at_once() {
    // write_cache "write through": submit_bio_noacct drops REQ_FUA and
    // REQ_PREFLUSH; the data is plain "WS", the empty flush bio ends
    // before it is queued: no flush at all.
    let (e, ev) = run_events(&dd_dsync("6.12", "virtio", "write_cache = \"write through\""), &[]);
    assert_eq!(ops(&events(&e, &ev, Action::Issue)), [("WS", 0, 128), ("WS", 128, 128), ("WS", 256, 128)]);
    assert_eq!(e.core.stats[0].disk.ios[FLUSH], 0);
}

#[test]
fn a_flush_in_flight_makes_later_ones_wait_and_share_the_next() {
    // Four empty flushes from four writers at once on virtio (6.12): the
    // first is pending alone and issued at once (nothing in flight, C1
    // holds); the next three find a flush in flight and wait together;
    // when it completes they move to the next flush: two flush requests.
    let mut text = String::from("kernel = \"6.12\"\n[disks.d0]\nkind = \"virtio\"\nsize = \"1GiB\"\n[workload]\ntype = \"bios\"\ndevice = \"d0\"\niodepth = 4\n");
    text.push_str("[[workload.bio]]\nop = \"flush\"\nflags = [\"sync\"]\nsector = 0\nrepeat = 4\nstride = 0\n");
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(ops(&events(&e, &ev, Action::Issue)), [("FN", 0, 0), ("FN", 0, 0)]);
    assert_eq!(events(&e, &ev, Action::Queue).len(), 4);
    let s = &e.core.stats[0].disk;
    assert_eq!((s.ios[WRITE], s.ios[FLUSH]), (4, 2));
}
