//! Block-core spec §2.4's worked example through the real raid5 driver:
//! a 2 MiB read on a raid5 with `max_sectors_kb` 1024 and 512 KiB chunks.
//! md_submit_bio splits at 1 MiB; chunk_aligned_read takes one chunk per
//! call and resubmits the rest. The member bios go out in md order
//! 0, 1M, 1536k, 512k when remainders go to the tail of
//! `current->bio_list` (≤6.17) and 0, 512k, 1M, 1536k at its head (6.18+).
//! (tests/stacked_order.rs shows the same with a test double.)

mod common;

use blkstack::trace::Action;

/// 5 members (4 data disks), left-symmetric: row 0 has parity on member 4
/// and chunks 0-3 on members 0-3, so the k-th 512 KiB of the read is on
/// member k at member sector 0 (+ data offset 2048).
fn scenario(kernel: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n");
    for d in ["sda", "sdb", "sdc", "sdd", "sde"] {
        s += &format!("[disks.{d}]\nkind = \"sata\"\nsize = \"64MiB\"\n");
    }
    s + "[md.md0]\nlevel = 5\nchunk = \"512KiB\"\ndata_offset = 2048\nmembers = [\"sda\", \"sdb\", \"sdc\", \"sdd\", \"sde\"]\n\
         [md.md0.queue]\nmax_sectors_kb = 1024\n\
         [workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"2MiB\"\n"
}

/// (md sector, member) of each member bio, in the order md remapped them.
fn member_order(kernel: &str, sets: &[&str]) -> Vec<(u64, String)> {
    let (e, ev) = common::run_events(&scenario(kernel), sets);
    assert_eq!(e.core.check.failure_report(), None);
    let md0 = e.core.topo.by_name("md0").unwrap();
    ev.iter()
        .filter(|x| x.action == Action::Remap && x.from_dev == md0)
        .map(|x| {
            // Each member bio is one whole chunk at member sector 0 + 2048.
            assert_eq!((x.sector, x.sectors()), (2048, 1024));
            (x.arg, e.core.topo.dev(x.dev).name.clone())
        })
        .collect()
}

fn order(v: &[(u64, String)]) -> Vec<u64> {
    v.iter().map(|x| x.0).collect()
}

#[test]
fn tail_insertion_gives_0_1m_1536k_512k() {
    // 6.12: md max_sectors 1 MiB (raid5's max_hw), remainders at the tail.
    let got = member_order("6.12", &[]);
    assert_eq!(order(&got), vec![0, 2048, 3072, 1024]);
    let members: Vec<&str> = got.iter().map(|x| x.1.as_str()).collect();
    assert_eq!(members, vec!["sda", "sdc", "sdd", "sdb"]);
    assert_eq!(order(&member_order("6.1", &[])), vec![0, 2048, 3072, 1024]);
}

#[test]
fn head_insertion_gives_0_512k_1m_1536k() {
    // 7.2: remainders at the head. (Its raid5 chunk_sectors is the 2 MiB data stripe, which the read
    // does not cross; the sysfs write keeps max_sectors at 1 MiB.)
    assert_eq!(order(&member_order("7.2", &[])), vec![0, 1024, 2048, 3072]);
    // The switch alone on 6.12 does the same.
    assert_eq!(order(&member_order("6.12", &["behaviour.split_remainder=head"])), vec![0, 1024, 2048, 3072]);
}

#[test]
fn md_sees_one_queue_and_three_splits_and_four_accounted_reads() {
    // One 'Q' for the 2 MiB bio; splits: 1 at max_sectors + 2 chunk splits (6.12 traces md's own);
    // md accounts one read per chunk piece it maps (md_account_bio): 4 reads of 1024 sectors.
    let (e, ev) = common::run_events(&scenario("6.12"), &[]);
    let md0 = e.core.topo.by_name("md0").unwrap();
    let count = |a: Action| ev.iter().filter(|x| x.dev == md0 && x.action == a).count();
    assert_eq!((count(Action::Queue), count(Action::Split)), (1, 3));
    let d = e.core.diskstats(md0);
    assert_eq!((d[0], d[2]), (4, 4096));
    assert_eq!(e.core.live_bios(), 0);
}

#[test]
fn md_accounting_per_version() {
    // /proc/diskstats reads and sectors read of md0 for the 2 MiB read.
    let stats = |sets: &[&str]| {
        let (e, _) = common::run_events(&scenario("6.12"), sets);
        let d = e.core.diskstats(e.core.topo.by_name("md0").unwrap());
        (d[0], d[2])
    };
    // 5.14+: each chunk piece raid5 maps is accounted: 4 reads of 1024.
    assert_eq!(stats(&[]), (4, 4096));
    // 5.9-5.13: each bio md_submit_bio passes on, once (a remainder md gets back is the same bio):
    // the two 1 MiB halves.
    assert_eq!(stats(&["behaviour.md_accounting=submit_bio"]), (2, 4096));
    // <=5.8: every pass through md_make_request counts the bio as it is then: the 1 MiB front, its
    // 512 KiB remainder back from chunk_aligned_read, the second 1 MiB, its 512 KiB remainder:
    // 4 reads, 2048 + 1024 + 2048 + 1024 = 6144 sectors.
    assert_eq!(stats(&["behaviour.md_accounting=inline"]), (4, 6144));
}
