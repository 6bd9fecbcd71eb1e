//! raid10's `head_position` in `read_balance`: a member's head is where its
//! last completed I/O ended (`update_head_pos`), also when the member was
//! idle the last time a read was balanced onto it. Worked by hand on the
//! shape of the randomized run's random-1-085 on 6.1 (validate/found), where
//! the guest sent a read's later chunks to the mirror whose head was closer.

mod common;

/// raid10 near-2 over four rotational virtio disks, 32 KiB chunks. Step 1
/// reads md chunks 20..23 (128 KiB at 640 KiB), step 2 chunks 24..29
/// (192 KiB at 768 KiB), both O_DIRECT.
const N2_TWO_READS: &str = r#"kernel = "6.1"
[disks.vda]
kind = "virtio"
size = "256MiB"
[disks.vdb]
kind = "virtio"
size = "256MiB"
[disks.vdc]
kind = "virtio"
size = "256MiB"
[disks.vdd]
kind = "virtio"
size = "256MiB"
[md.md0]
level = 10
layout = "n2"
chunk = "32KiB"
members = ["vda", "vdb", "vdc", "vdd"]
[[steps]]
type = "dd"
if = "/dev/md0"
of = "/dev/null"
bs = "128K"
count = 1
skip = 5
iflag = "direct"
[[steps]]
type = "dd"
if = "/dev/md0"
of = "/dev/null"
bs = "192K"
count = 1
skip = 4
iflag = "direct"
"#;

#[test]
fn raid10_near_balances_busy_mirrors_by_their_last_completed_end() {
    // Chunks are 64 sectors; near-2 over four disks puts chunk c on the
    // pair (vda, vdb) when c is even, (vdc, vdd) when odd, at member
    // address (c / 2) * 64. For each copy in slot order read_balance takes
    // an idle member at once (distance 0), else the closest head, ties to
    // the first slot. Only the first pair is followed here.
    //   Step 1: c20 (addr 640): vda idle → vda.  c22 (addr 704): vda busy,
    //           vdb idle → vdb. Both complete: heads vda 704, vdb 768.
    //   Step 2: c24 (addr 768): vda idle → vda.  c26 (addr 832): vda busy,
    //           vdb idle → vdb.  c28 (addr 896): both busy; vda's head 704
    //           is 192 away, vdb's 768 is 128 away → vdb.
    // A head that stayed at 0 on the member balanced while idle (vdb in
    // both steps) makes c28 a tie at 896, taken by the first slot, vda.
    let (e, ev) = common::run_events(N2_TWO_READS, &[]);
    let (vda, vdb) = (e.core.topo.by_name("vda").unwrap(), e.core.topo.by_name("vdb").unwrap());
    let member_of = |chunk: u64| common::remapped_to(&e, &ev, "md0", chunk * 64);
    assert_eq!([20, 22, 24, 26, 28].map(member_of), [vda, vdb, vda, vdb, vdb]);
}
