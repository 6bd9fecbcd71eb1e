//! md's `rdev->nr_pending` in raid10's `read_balance`: one reference per
//! array read sent to a member, whatever requests the member's reads merge
//! into. Worked by hand on the randomized run's scenario random-1-090.

mod common;

/// raid10 far-2 over sdb (sata), vdb (virtio), sdc (virtio-scsi), sda
/// (sata), 16 KiB chunks; one 2 MiB O_DIRECT read at md sector 0.
const F2_MIXED: &str = r#"kernel = "6.12"
[disks.sdb]
kind = "sata"
size = "256MiB"
[disks.sdb.queue]
max_sectors_kb = 64
[disks.vdb]
kind = "virtio"
size = "256MiB"
[disks.sdc]
kind = "virtio-scsi"
size = "256MiB"
[disks.sda]
kind = "sata"
size = "256MiB"
[md.md0]
level = 10
layout = "f2"
chunk = "16KiB"
members = ["sdb", "vdb", "sdc", "sda"]
[workload]
type = "dd"
if = "/dev/md0"
of = "/dev/null"
bs = "2M"
count = 1
iflag = "direct"
"#;

#[test]
fn raid10_far_nonrot_choice_counts_array_reads_not_requests() {
    // Chunks are 32 sectors; chunk c's first copy is on member c mod 4,
    // its far copy on member (c + 1) mod 4. sdb (0) and sda (3) are
    // non-rotational, vdb (1) and sdc (2) rotational, so read_balance takes
    // the non-rotational copy with the fewest reads pending (the first slot,
    // the near copy, on a tie), and with no non-rotational copy the lowest
    // address (the near one). Everything is sent before anything completes:
    //   c ≡ 0: sdb near; c ≡ 1: vdb near; c ≡ 2: sda (far, the only nonrot);
    //   c ≡ 3: sda (near) against sdb (far), by reads pending:
    //   c = 3:  sda 1 (2),                 sdb 1 (0)               → tie: sda
    //   c = 7:  sda 3 (2, 3, 6),           sdb 2 (0, 4)            → sdb
    //   c = 11: sda 4 (2, 3, 6, 10),       sdb 4 (0, 4, 7, 8)      → tie: sda
    //   c = 15: sda 6 (+ 11, 14),          sdb 5 (+ 12)            → sdb
    //   c = 19: sda 7 (+ 18),              sdb 7 (+ 15, 16)        → tie: sda
    //   c = 23: sda 9 (+ 19, 22),          sdb 8 (+ 20)            → sdb
    // (the 6.12 guest's choices). Counting requests instead, sda's far
    // reads 2, 6, 10 merge into one, and the choices drift.
    let (e, ev) = common::run_events(F2_MIXED, &[]);
    let (sda, sdb) = (e.core.topo.by_name("sda").unwrap(), e.core.topo.by_name("sdb").unwrap());
    let member_of = |chunk: u64| common::remapped_to(&e, &ev, "md0", chunk * 32);
    let got: Vec<bool> = [3u64, 7, 11, 15, 19, 23].iter().map(|&c| member_of(c) == sda).collect();
    assert_eq!(got, [true, false, true, false, true, false]);
    assert!([7u64, 15, 23].iter().all(|&c| member_of(c) == sdb));
    assert!([2u64, 6, 10].iter().all(|&c| member_of(c) == sda));
}
