//! 5.10's md raid1/raid10 writes (switch `md_plug_writes`, src/md/personality.rs
//! `md_submit_write`): member writes wait on md's plug callback; the
//! submitter sleeps in its plug, so `raid10_unplug` runs from the scheduler
//! and hands the list to raid10d, which submits it in its own plug, where a
//! member's pieces merge. Worked by hand on the validation suite's
//! raid10-f2 discard (docs/validation.md, known difference J).

mod common;

use blkstack::trace::{rwbs, Action};

/// raid10 far-2 over four 256 MiB virtio disks, 64 KiB chunks; one 1 MiB
/// discard at md sector 8192.
fn f2_discard(kernel: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n");
    for d in ["vda", "vdb", "vdc", "vdd"] {
        s += &format!("[disks.{d}]\nkind = \"virtio\"\nsize = \"256MiB\"\n");
    }
    s + "[md.md0]\nlevel = 10\nlayout = \"f2\"\nchunk = \"64KiB\"\nmembers = [\"vda\", \"vdb\", \"vdc\", \"vdd\"]\n\
         [workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"discard\"\nflags = [\"sync\"]\nsector = 8192\nsize = \"1MiB\"\n"
}

/// (rwbs, sector, sectors, task) of the requests issued to `dev`.
fn issued(e: &blkstack::engine::Engine, ev: &[blkstack::trace::Event], dev: &str) -> Vec<(String, u64, u32)> {
    let id = e.core.topo.by_name(dev).unwrap();
    ev.iter().filter(|x| x.dev == id && x.action == Action::Issue).map(|x| (rwbs(x.op, x.flags, x.bytes), x.sector, x.sectors())).collect()
}

#[test]
fn raid10d_submits_5_10_chunk_discards_together() {
    // 5.10 caps md raid10 discards at one chunk (128 sectors): the 2048
    // sectors become 16 chunk bios, chunks 64..79, each on the write path,
    // one discard per copy. f2 on 4 members: chunk c's first copy is on
    // member c mod 4 at row c/4 (rows 16..19: member sectors 2048..2560,
    // + 2048 data offset = 4096..4608); its far copy on member (c+1) mod 4,
    // a stride further (dev_sectors / 2 = (524288 − 2048) / 2 = 261120:
    // 265216..265728). Each member gets four 128-sector pieces of each
    // region. raid10d submits all 32 in its plug: each piece back-merges
    // into the one before it on that member, so every member issues
    // DS 4096 + 512 and DS 265216 + 512 (the 5.10 guest's DS 4096 + 512).
    let (e, ev) = common::run_events(&f2_discard("5.10"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    for m in ["vda", "vdb", "vdc", "vdd"] {
        let d = issued(&e, &ev, m);
        assert_eq!(d, [("DS".to_string(), 4096, 512), ("DS".to_string(), 265216, 512)], "{m}");
        let q: Vec<String> = ev.iter().filter(|x| x.dev == e.core.topo.by_name(m).unwrap() && x.action == Action::Queue)
            .map(|x| e.core.tasks[x.task as usize].comm.clone()).collect();
        assert_eq!(q.len(), 8, "{m}: four pieces of each copy");
        assert!(q.iter().all(|c| c == "md0_raid10"), "{m}: raid10d submits them");
    }
    // Without the plug callback (6.1.y+ without a bitmap) the submitter
    // queues each member piece itself, and md has no thread.
    let (e, ev) = common::run_events(&f2_discard("5.10"), &["behaviour.md_plug_writes=false"]);
    assert_eq!(e.core.check.failure_report(), None);
    assert!(!e.core.tasks.iter().any(|t| t.comm == "md0_raid10"));
    let vda = e.core.topo.by_name("vda").unwrap();
    assert!(ev.iter().filter(|x| x.dev == vda && x.action == Action::Queue).all(|x| e.core.tasks[x.task as usize].comm != "md0_raid10"));
}
