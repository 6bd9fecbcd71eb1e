//! kyber (block/kyber-iosched.c) through the whole request path: domain
//! batches in the issued order, merges in the software context's list,
//! the async depth per profile, and the scenario's iosched keys. Each test
//! shows its working.

mod common;

use blkstack::trace::{Action, Event};
use common::run_events;

/// A kyber disk and a bios workload; writeback throttling is off, since it
/// would hold the plain (async) writes before kyber sees them.
fn scenario(kernel: &str, queue: &str, workload: &str, bios: &[(char, u64)]) -> String {
    let bios: String = bios
        .iter()
        .map(|&(op, sector)| format!("[[workload.bio]]\nop = \"{}\"\nsector = {sector}\nsize = 4096\n", if op == 'R' { "read" } else { "write" }))
        .collect();
    format!(
        "kernel = \"{kernel}\"\n[disks.vda]\nkind = \"virtio\"\nsize = \"64GiB\"\n[disks.vda.queue]\nscheduler = \"kyber\"\nwbt_lat_usec = 0\n{queue}\n[workload]\ntype = \"bios\"\ndevice = \"vda\"\n{workload}\n{bios}"
    )
}

fn ops(ev: &[Event], action: Action) -> String {
    ev.iter().filter(|e| e.action == action).map(|e| if e.op.is_write() { 'W' } else { 'R' }).collect()
}

#[test]
fn one_plugged_batch_leaves_in_domain_batches() {
    // 20 reads and 10 writes, 4 KiB each, never adjacent, in one plug (30
    // requests: under BLK_MAX_REQUEST_COUNT, none 128 KiB). The unplug
    // inserts all 30 into kyber's lists, then the queue runs with tags to
    // spare: READ first for kyber_batch_size 16, WRITE for 8, nothing in
    // DISCARD or OTHER, READ's last 4, then WRITE's last 2.
    let mut bios: Vec<(char, u64)> = (0..20).map(|i| ('R', i * 64)).collect();
    bios.extend((0..10).map(|i| ('W', 100_000 + i * 64)));
    for kernel in ["6.1", "6.12"] {
        let text = scenario(kernel, "", "iodepth = 30\nbatch = 30\nplug = true", &bios);
        let (_, ev) = run_events(&text, &[]);
        let want = format!("{}{}{}{}", "R".repeat(16), "W".repeat(8), "R".repeat(4), "W".repeat(2));
        assert_eq!(ops(&ev, Action::Issue), want, "{kernel}");
        assert_eq!(ops(&ev, Action::Insert).len(), 30, "{kernel}: every request is inserted ('I')");
    }
}

#[test]
fn a_bio_merges_into_a_request_still_in_the_software_queue() {
    // queue_depth 1 (nr_requests 64, so scheduler tags are plenty): the
    // first write (sector 0) takes the only driver tag.
    // Without a read ahead of the driver (sched_dispatch_ahead off), the
    // second (sector 1000) waits in the WRITE list of the software
    // context; the third (1008, right behind it) back-merges into it there
    // (kyber_bio_merge → blk_bio_list_merge). Two requests reach the disk.
    let bios = [('W', 0), ('W', 1000), ('W', 1008)];
    let text = scenario("6.12", "queue_depth = 1\nnr_requests = 64", "iodepth = 3", &bios);
    let issued = |sets: &[&str]| {
        let (e, ev) = run_events(&text, sets);
        let issued: Vec<(u64, u32)> = ev.iter().filter(|e| e.action == Action::Issue).map(|e| (e.sector, e.sectors())).collect();
        (issued, e.core.stats[0].disk.merges[1])
    };
    assert_eq!(issued(&["behaviour.sched_dispatch_ahead=false"]), (vec![(0, 8), (1000, 8 * 2)], 1));
    // 6.12's __blk_mq_do_dispatch_sched asks kyber before the driver tag
    // (virtio-blk has no dispatch budget): the second write leaves kyber at
    // its insertion's queue run and waits in hctx->dispatch, where no bio
    // merges, so the third is a request of its own.
    assert_eq!(issued(&[]), (vec![(0, 8), (1000, 8), (1008, 8)], 0));
}

#[test]
fn iosched_keys_belong_to_kyber() {
    let base = "kernel = \"6.12\"\n[disks.vda]\nkind = \"virtio\"\nsize = \"1GiB\"\n[disks.vda.queue]\n";
    let wl = "[workload]\ntype = \"bios\"\ndevice = \"vda\"\n[[workload.bio]]\nop = \"read\"\nsector = 0\nsize = 4096\n";
    let load = |q: &str| blkstack::scenario::load("s.toml", &format!("{base}{q}{wl}"), None, &[]).map(|_| ()).map_err(|e| e.to_string());
    assert!(load("scheduler = \"kyber\"\n[disks.vda.queue.iosched]\nread_lat_nsec = 1000000\nwrite_lat_nsec = 5000000\n").is_ok());
    let e = load("[disks.vda.queue.iosched]\nread_lat_nsec = 1000000\n").unwrap_err();
    assert!(e.contains("disks.vda.queue.iosched.read_lat_nsec") && e.contains("this queue's scheduler is mq-deadline"), "{e}");
    let e = load("scheduler = \"kyber\"\n[disks.vda.queue.iosched]\nfifo_batch = 8\n").unwrap_err();
    assert!(e.contains("fifo_batch"), "{e}");
    let e = load("scheduler = \"bfq\"\n[disks.vda.queue.iosched]\nread_lat_nsec = 1000000\n").unwrap_err();
    assert!(e.contains("this queue's scheduler is bfq"), "{e}");
}

#[test]
fn async_writes_hold_at_most_async_depth_scheduler_tags() {
    // nr_requests 10, one driver tag, ten scattered async writes at depth
    // 10: allocations stop at kyber's async depth, counted per sbitmap
    // word on 6.1 (five words of 2 bits, 1 each: 5) and over the whole map
    // on 6.12 (75% of 10 = 7; see kyber_async_depth's unit test). 'G'
    // events before the first completion show it.
    let bios: Vec<(char, u64)> = (0..10).map(|i| ('W', i * 64)).collect();
    for (kernel, want) in [("6.1", 5), ("6.12", 7)] {
        let text = scenario(kernel, "queue_depth = 1\nnr_requests = 10", "iodepth = 10", &bios);
        let (_, ev) = run_events(&text, &[]);
        let first_done = ev.iter().find(|e| e.action == Action::Complete).expect("a completion").time;
        let early = ev.iter().filter(|e| e.action == Action::GetRq && e.time < first_done).count();
        assert_eq!(early, want, "{kernel}");
    }
}
