//! dd through the page cache and with O_SYNC / conv=fsync: the bios queued
//! on the disk ('Q'), worked out from the kernel paths in
//! src/source/pagecache.rs.

mod common;

use blkstack::trace::{rwbs, Action, Event};
use common::run_events;

/// A 1 GiB SATA disk: 1 GiB is a multiple of 4096, so `set_init_blocksize`
/// gives 4 KiB buffers (one bio of 8 sectors per page).
fn dd(extra: &str) -> String {
    format!("[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\n[workload]\ntype = \"dd\"\nif = \"/dev/zero\"\nof = \"/dev/sda\"\n{extra}\n")
}

/// (sector, sectors, rwbs) of the bios queued on sda.
fn queued(text: &str, sets: &[&str]) -> Vec<(u64, u32, String)> {
    let (engine, events) = run_events(text, sets);
    let id = engine.core.topo.by_name("sda").unwrap();
    let q = |e: &&Event| e.dev == id && e.action == Action::Queue;
    events.iter().filter(q).map(|e| (e.sector, e.sectors(), rwbs(e.op, e.flags, e.bytes))).collect()
}

fn pages(first: u64, n: u64, r: &str) -> Vec<(u64, u32, String)> {
    (first..first + n).map(|p| (p * 8, 8, r.to_string())).collect()
}

fn flush() -> (u64, u32, String) {
    (0, 0, "FWS".to_string())
}

#[test]
fn buffered_write_is_written_back_at_close() {
    // 4 × 8 KiB dirty pages 0-7; closing the device (sync_blockdev) writes
    // them back, WB_SYNC_ALL (REQ_SYNC), one bio per 4 KiB buffer, no flush.
    assert_eq!(queued(&dd("bs = \"8k\"\ncount = 4"), &[]), pages(0, 8, "WS"));
}

#[test]
fn conv_fsync_writes_back_then_flushes() {
    // blkdev_fsync: writeback of pages 0-7, then blkdev_issue_flush (an
    // empty PREFLUSH write, REQ_SYNC from submit_bio_wait); nothing is left
    // for the close.
    let mut want = pages(0, 8, "WS");
    want.push(flush());
    assert_eq!(queued(&dd("bs = \"8k\"\ncount = 4\nconv = \"fsync\""), &[]), want);
    // O_DIRECT writes (REQ_SYNC), then the fsync's flush alone.
    let want = vec![(0, 16, "WS".to_string()), (16, 16, "WS".to_string()), flush()];
    assert_eq!(queued(&dd("bs = \"8k\"\ncount = 2\noflag = \"direct\"\nconv = \"fdatasync\""), &[]), want);
}

#[test]
fn o_sync_flushes_after_every_write() {
    // Buffered O_SYNC: generic_write_sync after each write — the written
    // range (two pages), then a flush.
    let mut want = pages(0, 2, "WS");
    want.push(flush());
    want.extend(pages(2, 2, "WS"));
    want.push(flush());
    assert_eq!(queued(&dd("bs = \"8k\"\ncount = 2\noflag = \"sync\""), &[]), want);
    // O_DIRECT | O_SYNC: dio_bio_write_op adds REQ_FUA; generic_write_sync
    // still calls blkdev_fsync, whose flush follows (nothing to write back).
    assert_eq!(queued(&dd("bs = \"8k\"\ncount = 1\noflag = \"direct,sync\""), &[]), vec![(0, 16, "WFS".to_string()), flush()]);
}

#[test]
fn background_writeback_past_the_dirty_threshold() {
    // 4 KiB writes, threshold 16 KiB: the 5th dirty page (20 KiB > 16 KiB)
    // starts a background pass over pages 0-4 (WB_SYNC_NONE: "W"); pages
    // 5-7 are written at close ("WS").
    let text = dd("bs = \"4k\"\ncount = 8\ndirty_background_bytes = 16384");
    let mut want = pages(0, 5, "W");
    want.extend(pages(5, 3, "WS"));
    assert_eq!(queued(&text, &[]), want);
}

#[test]
fn soft_block_size_from_the_device_size_or_the_key() {
    // 1 GiB + 2 KiB = 2^11 × 524,289 bytes: set_init_blocksize stops at
    // 2 KiB, so each page is two bios of 4 sectors.
    let text = dd("bs = \"4k\"\ncount = 1").replace("size = \"1GiB\"", "size = 1073743872");
    assert_eq!(queued(&text, &[]), vec![(0, 4, "WS".to_string()), (4, 4, "WS".to_string())]);
    // blockdev --setbsz 1024: four bios of 2 sectors.
    let q = queued(&dd("bs = \"4k\"\ncount = 1\nblocksize = 1024"), &[]);
    assert_eq!(q.iter().map(|b| (b.0, b.1)).collect::<Vec<_>>(), [(0, 2), (2, 2), (4, 2), (6, 2)]);
    // A partial write of a 4 KiB buffer reads it first: bs=512 at 0.
    let q = queued(&dd("bs = 512\ncount = 1"), &[]);
    assert_eq!(q, vec![(0, 8, "R".to_string()), (0, 8, "WS".to_string())]);
}

#[test]
fn bad_block_size_is_refused() {
    let e = blkstack::scenario::load("d.toml", &dd("bs = \"4k\"\ncount = 1\nblocksize = 3000"), None, &[]).unwrap_err().to_string();
    assert!(e.starts_with("d.toml:10: workload.blocksize: 3000 is not a power of two"), "{e}");
    let e = blkstack::scenario::load("d.toml", &dd("bs = \"4k\"\ncount = 1\nconv = \"ucase\""), None, &[]).unwrap_err().to_string();
    assert!(e.contains("workload.conv: unsupported conversion 'ucase'"), "{e}");
}
