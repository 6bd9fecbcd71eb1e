//! A `bios` entry's `syscall` flag: the flags the system call it stands for
//! gives its bio, per kernel (src/source/bios.rs `syscall_flags`).

mod common;

use blkstack::bio::req;
use blkstack::trace::{rwbs, Action};

/// One virtio disk, the workload's entries `bios` at `iodepth`.
fn scenario(kernel: &str, iodepth: u32, bios: &str) -> String {
    format!(
        "kernel = \"{kernel}\"\n[disks.vda]\nkind = \"virtio\"\nsize = \"256MiB\"\n\
         [workload]\ntype = \"bios\"\ndevice = \"vda\"\niodepth = {iodepth}\n{bios}"
    )
}

fn entry(op: &str, sector: u64, size: &str) -> String {
    format!("[[workload.bio]]\nop = \"{op}\"\nflags = [\"syscall\"]\nsector = {sector}\nsize = \"{size}\"\n")
}

/// (RWBS, flags) of each bio queued ('Q') on vda, in order.
fn queued(text: &str) -> Vec<(String, u32)> {
    let (e, ev) = common::run_events(text, &[]);
    let vda = e.core.topo.by_name("vda").unwrap();
    ev.iter().filter(|x| x.dev == vda && x.action == Action::Queue).map(|x| (rwbs(x.op, x.flags, x.bytes), x.flags)).collect()
}

#[test]
fn a_synchronous_direct_read_is_sync_from_5_16_only() {
    // A 64 KiB read at iodepth 1 is a pread of 16 pages: the simple path,
    // __blkdev_direct_IO_simple. 5.10 submits its bio with submit_bio and
    // sleeps itself: "R". From 5.16 it ends in submit_bio_wait, which sets
    // REQ_SYNC: "RS" on 6.1, 6.12 and 7.2.
    let read = entry("read", 2048, "64KiB");
    assert_eq!(queued(&scenario("5.10", 1, &read))[0].0, "R");
    for k in ["6.1", "6.12", "7.2"] {
        assert_eq!(queued(&scenario(k, 1, &read))[0].0, "RS", "{k}");
    }
    // 2 MiB is 512 pages, more than BIO_MAX_VECS (256): the multi-bio path
    // (__blkdev_direct_IO), which waits on its own and adds nothing.
    assert_eq!(queued(&scenario("6.12", 1, &entry("read", 2048, "2MiB")))[0].0, "R");
    // Above iodepth 1 the entries are AIO reads: nothing either.
    let two = entry("read", 2048, "4KiB") + &entry("read", 4096, "4KiB");
    assert!(queued(&scenario("6.12", 2, &two)).iter().all(|q| q.0 == "R"));
}

#[test]
fn writes_and_ioctls_carry_their_system_calls_flags() {
    // pwritev2 with O_DIRECT: dio_bio_write_op's REQ_SYNC | REQ_IDLE on
    // every kernel; BLKDISCARD ends in submit_bio_wait (REQ_SYNC);
    // BLKZEROOUT too, with BLKDEV_ZERO_NOUNMAP (REQ_NOUNMAP).
    let bios = entry("write", 2048, "4KiB") + &entry("discard", 8192, "64KiB") + &entry("write_zeroes", 16384, "64KiB");
    for k in ["5.10", "6.1", "7.2"] {
        let q = queued(&scenario(k, 1, &bios));
        assert_eq!(q.len(), 3, "{k}: {q:?}");
        assert_eq!(q[0].0, "WS", "{k}");
        assert_eq!(q[0].1 & (req::SYNC | req::IDLE), req::SYNC | req::IDLE, "{k}");
        assert_eq!(q[1].0, "DS", "{k}");
        assert_eq!(q[2].1 & (req::SYNC | req::NOUNMAP), req::SYNC | req::NOUNMAP, "{k}");
    }
}

#[test]
fn without_syscall_the_flags_are_the_entrys_own() {
    // The same read given flags = ["sync"] is "RS" on 5.10 too: a REQ_*
    // flag is the bio's on every kernel.
    let read = "[[workload.bio]]\nop = \"read\"\nflags = [\"sync\"]\nsector = 2048\nsize = \"64KiB\"\n";
    assert_eq!(queued(&scenario("5.10", 1, read))[0].0, "RS");
}

#[test]
fn syscall_on_a_zone_append_is_refused() {
    let text = scenario("6.12", 1, &entry("zone_append", 0, "4KiB"));
    let err = blkstack::scenario::load("s.toml", &text, None, &[]).err().expect("refused").to_string();
    assert!(err.contains("workload.bio[0].flags: 'syscall': no system call submits a zone append"), "{err}");
}
