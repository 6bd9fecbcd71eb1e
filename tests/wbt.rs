//! Writeback throttling end to end (src/rq_qos/wbt.rs): the depths a
//! buffered write flood reaches on a disk, and a reader beside it.

mod common;

use blkstack::bio::Op;
use blkstack::trace::{Action, Event};
use common::run_events;

/// A 1 GiB virtio disk (write-back cache, rotational: wbt's default target
/// 75 ms, mq-deadline with nr_requests 2 × min(256, 128) = 256, so
/// max_depth min(16, 256) = 16, wb_normal 8, wb_background 4).
const VDA: &str = "seed = 1\n[disks.vda]\nkind = \"virtio\"\nsize = \"1GiB\"\n";

/// The most write requests in flight on the disk at once, from the issue
/// ('D') and completion ('C') events, over the events `pick` keeps.
fn max_writes_in_flight(events: &[Event], pick: impl Fn(&Event) -> bool) -> u32 {
    let (mut now, mut max) = (0i64, 0i64);
    for e in events.iter().filter(|e| e.op == Op::Write && e.bytes > 0 && pick(e)) {
        match e.action {
            Action::Issue => now += 1,
            Action::Complete => now -= 1,
            _ => continue,
        }
        max = max.max(now);
    }
    max as u32
}

fn dd_flood(extra: &str) -> String {
    format!("{VDA}[workload]\ntype = \"dd\"\nif = \"/dev/zero\"\nof = \"/dev/vda\"\nbs = \"1M\"\ncount = 16\ndirty_background_bytes = \"8MiB\"\n{extra}")
}

#[test]
fn background_writeback_is_held_to_the_background_limit() {
    // 16 MiB through the page cache, background threshold 8 MiB: the 9th
    // MiB starts a background pass over 9 MiB (REQ_BACKGROUND: limit
    // wb_background 4); the close writes the last 7 MiB back WB_SYNC_ALL
    // (REQ_SYNC: limit max_depth 16). The plug merges the 4 KiB buffers
    // into requests of 254 segments (1016 KiB): 9 MiB = 9216 KiB is 10
    // requests, more than the background limit, so 4 are in flight at
    // most; 7 MiB = 7168 KiB is 8 requests, below max_depth: all 8 at once.
    let (_, events) = run_events(&dd_flood(""), &[]);
    let background = max_writes_in_flight(&events, |e| e.flags & blkstack::bio::req::SYNC == 0);
    let sync = max_writes_in_flight(&events, |e| e.flags & blkstack::bio::req::SYNC != 0);
    assert_eq!((background, sync), (4, 8));
    // Without wbt the pass goes out as the plug flushes it.
    let (_, events) = run_events(&dd_flood(""), &["disks.vda.queue.wbt_lat_usec=0"]);
    assert!(max_writes_in_flight(&events, |_| true) > 4);
}

/// A buffered fio writer beside a random reader on `kind`, with `sets`:
/// the reader's mean completion latency in ns.
fn reader_latency(kind: &str, sets: &[&str]) -> f64 {
    let text = format!(
        "seed = 1\n[disks.d0]\nkind = \"{kind}\"\nsize = \"8GiB\"\n[workload]\ntype = \"fio\"\ndirty_background_bytes = \"4MiB\"\njob = \"\"\"\n\
[global]\nfilename=/dev/d0\nruntime=1s\ntime_based\n\
[writer]\nrw=write\nbs=1M\nsize=4G\n\
[reader]\nrw=randread\nbs=4k\ndirect=1\noffset=4G\nsize=4G\n\"\"\"\n"
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = blkstack::scenario::load("w.toml", &text, None, &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = sc.build();
    engine.run();
    let (fio, _) = blkstack::stats::fio::report(sc.workload.fio.as_ref().unwrap(), &engine);
    fio["jobs"][1]["read"]["clat_ns"]["mean"].as_f64().unwrap()
}

#[test]
fn a_reader_beside_a_write_flood_waits_less_with_wbt() {
    // The reader's 4 KiB reads queue behind the writer's 1 MiB writeback
    // requests: wbt holds those to wb_background (4) in flight (background
    // writeback, and a read within 100 ms), without it the plug's batches
    // go out whole.
    let on = reader_latency("virtio", &[]);
    let off = reader_latency("virtio", &["disks.d0.queue.wbt_lat_usec=0"]);
    eprintln!("reader mean clat: {on:.0} ns with wbt, {off:.0} ns without");
    assert!(on < off, "reader mean latency {on} ns with wbt, {off} ns without");
}

/// The most writes in flight when 24 scattered 4 KiB writes with `flags`
/// are submitted at once (iodepth 24, no plug) on the virtio disk.
fn depth_for(flags: &str) -> u32 {
    let bios: String = (0..24).map(|i| format!("[[workload.bio]]\nop = \"write\"\nflags = [{flags}]\nsector = {}\nsize = \"4KiB\"\n", 1000 * i)).collect();
    let text = format!("{VDA}[workload]\ntype = \"bios\"\ndevice = \"vda\"\niodepth = 24\n{bios}");
    let (_, events) = run_events(&text, &[]);
    max_writes_in_flight(&events, |_| true)
}

#[test]
fn each_kind_of_write_gets_its_limit() {
    // Step 0 on nr_requests 256: max_depth 16, wb_normal 8, wb_background
    // 4; no read anywhere, so close_io never lowers a plain write. With the
    // write cache a sleeper waits for the drain, so each limit is reached
    // exactly. O_DIRECT writes (sync + idle) are not counted: all 24.
    let got = ["", "\"background\"", "\"sync\"", "\"sync\", \"idle\""].map(depth_for);
    assert_eq!(got, [8, 4, 16, 24]);
}
