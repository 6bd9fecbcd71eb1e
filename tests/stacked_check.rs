//! The conservation check and the integrity oracle catch what they are
//! for: raid10's first whole-range discard (5.10-rc1, `whole_range_v1`)
//! on a write-discard-read workload, and deliberately broken drivers; the
//! correct behaviours pass the same workloads.

mod common;

use blkstack::bio::{req, BioId, Bvec, Op};
use blkstack::check::layout::Layout;
use blkstack::disk::ServiceModel;
use blkstack::engine::{Engine, EngineBuilder};
use blkstack::genhd::{DevId, DiskKind, Queue};
use blkstack::limits::{resolve, QueueAttrs, QueueLimits, SysfsWrites};
use blkstack::md::personality::{MdMember, Personality};
use blkstack::profile::profile;
use blkstack::scenario;
use blkstack::source::BioSpec;
use blkstack::submit::{BioDriver, BlockCore};

/// Load, build, turn the oracle on, run.
fn run_checked(text: &str, sets: &[&str]) -> Engine {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = scenario::load("check.toml", text, None, &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut e = sc.build();
    e.core.check.enable_oracle();
    e.run();
    e
}

/// Load, build, run with the conservation check alone (the oracle off):
/// a stacked discard is then followed run by run while its pieces
/// continue its reference runs.
fn run_conserved(text: &str, sets: &[&str]) -> Engine {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let mut e = scenario::load("check.toml", text, None, &sets).unwrap_or_else(|e| panic!("{e}")).build();
    e.run();
    e
}

fn report(e: &Engine) -> String {
    e.core.check.failure_report().unwrap_or_default()
}

/// Xiao Ni's case from the v2 cover letter: 2 members, near-2, 512 KiB
/// chunks, data at 2048. Write [65536, 81920), discard 8192 sectors from
/// 70968, then read [69632, 70968) — all before the discard. 6.12's md
/// splits the read at the chunk boundary 70656 (raid10 sets
/// `chunk_sectors`); the first piece goes to the first mirror, which is then
/// busy, so `read_balance` sends the second, [70656, 70968), to sdb.
const XIAO: &str = r#"
kernel = "6.12"
[disks.sda]
kind = "sata"
size = "64MiB"
[disks.sdb]
kind = "sata"
size = "64MiB"
[md.md0]
level = 10
layout = "n2"
chunk = "512KiB"
data_offset = 2048
members = ["sda", "sdb"]
[workload]
type = "bios"
device = "md0"
iodepth = 1
[[workload.bio]]
op = "write"
sector = 65536
size = "16384s"
[[workload.bio]]
op = "discard"
sector = 70968
size = "8192s"
[[workload.bio]]
op = "read"
sector = 69632
size = "1336s"
"#;

#[test]
fn raid10_v1_discard_is_caught() {
    // V1: stripe 2·1024, handled, not trimmed (near layout). Start 70968 = row 69 + 312: member 0 gets
    // [70968, 79160), member 1 (after the start member) the row start 69·1024 = 70656: 312 sectors of
    // live data before the range (sdb [72704, 73016) with the data offset). End: member 1 stops at
    // 77·1024 = 78848, 312 short (sdb [80896, 81208) keeps stale data: harmless, but not a discard
    // of the whole range).
    let e = run_checked(XIAO, &["behaviour.raid10_discard=v1-5.10rc1"]);
    let r = report(&e);
    // Conservation: the member discards are not the copies of the discarded range.
    assert!(r.contains("discard #2 of md0 [70968, 79160): sdb sectors [72704, 73016): discarded 1 time(s), expected none"), "{r}");
    assert!(r.contains("sdb sectors [80896, 81208): discarded 0 time(s), expected 1"), "{r}");
    // Oracle: the discard destroyed sectors it was not given...
    assert!(
        r.contains("discard #2 of md0 [70968, 79160) touched sdb sectors [72704, 73016), which hold no copy of the discarded range: [72704, 73016) holds md0 sectors [70656, 70968) from write #1 of md0 [65536, 81920)"),
        "{r}"
    );
    // ...and the read of those sectors, served from the second mirror, gets what the discard left.
    assert!(
        r.contains("read #3 of md0 sectors [70656, 70968) served from sdb sectors [72704, 73016), which hold what discard #2 of md0 [70968, 79160) left: destroyed by a discard of other sectors"),
        "{r}"
    );
}

#[test]
fn correct_raid10_discards_pass_the_same_workload() {
    for v in ["chunk_limited", "whole_range"] {
        let e = run_checked(XIAO, &[&format!("behaviour.raid10_discard={v}")]);
        assert_eq!(e.core.check.failure_report(), None, "{v}");
        assert_eq!((e.core.check.roots_checked, e.core.check.roots_unchecked), (3, 0), "{v}");
    }
}

#[test]
fn raid10_v1_on_four_disks_is_caught_and_v2_is_not() {
    // n2 on 4 disks, start 1000 (chunk 0 + 1000, members 0 and 1): V1 has 4-chunk stripes and no trim;
    // member 1 is after the start member and gets the row start 0 → 1000 sectors too early.
    let text = XIAO.replace("size = \"64MiB\"\n[md.md0]", "size = \"64MiB\"\n[disks.sdc]\nkind = \"sata\"\nsize = \"64MiB\"\n[disks.sdd]\nkind = \"sata\"\nsize = \"64MiB\"\n[md.md0]")
        .replace("members = [\"sda\", \"sdb\"]", "members = [\"sda\", \"sdb\", \"sdc\", \"sdd\"]")
        .replace("sector = 65536\nsize = \"16384s\"", "sector = 0\nsize = \"16384s\"")
        .replace("sector = 70968\nsize = \"8192s\"", "sector = 1000\nsize = \"8192s\"");
    let r = report(&run_checked(&text, &["behaviour.raid10_discard=whole_range_v1"]));
    assert!(r.contains("sdb sectors [2048, 3048): discarded 1 time(s), expected none"), "{r}");
    assert_eq!(run_checked(&text, &[]).core.check.failure_report(), None);
    // The conservation check alone says the same of both.
    let r = report(&run_conserved(&text, &["behaviour.raid10_discard=whole_range_v1"]));
    assert!(r.contains("sdb sectors [2048, 3048): discarded 1 time(s), expected none"), "{r}");
    let e = run_conserved(&text, &[]);
    assert_eq!(e.core.check.failure_report(), None);
    // Write, discard and read: each root checked.
    assert_eq!((e.core.check.roots_checked, e.core.check.roots_unchecked), (3, 0));
}

// ---- broken drivers --------------------------------------------------------

/// A "raid1" that forgets its second mirror on writes, or reads from it.
struct BrokenMirror {
    a: DevId,
    b: DevId,
    read_from_b: bool,
    skew: u64,
}

impl BioDriver for BrokenMirror {
    fn submit_bio(&mut self, core: &mut BlockCore, bio: BioId) {
        let (md, sector, op) = (core.bio(bio).dev, core.bio(bio).iter.sector, core.bio(bio).op);
        let to = if op == Op::Read && self.read_from_b { self.b } else { self.a };
        let clone = core.bio_alloc_clone(bio, to);
        core.bio_mut(clone).iter.sector = sector + self.skew;
        core.bio_chain(clone, bio);
        core.trace_bio_remap(clone, md, sector);
        core.submit_bio_noacct(clone);
        core.bio_endio(bio, 0);
    }
}

fn broken(read_from_b: bool, skew: u64, oracle: bool) -> Engine {
    let beh = profile("6.12").unwrap().behaviour;
    let mut b = EngineBuilder::new(beh.clone());
    let drv = DiskKind::Sata.driver_limits(&blkstack::profile::profile("6.12").unwrap().behaviour);
    let (limits, attrs) = resolve(&drv, &SysfsWrites::default(), beh.limits_model, beh.def_max_sectors_cap).unwrap();
    let q = Queue { limits, attrs: attrs.clone() };
    let a = b.add_disk("sda", DiskKind::Sata, 1 << 20, q.clone(), ServiceModel::for_kind(DiskKind::Sata));
    let bb = b.add_disk("sdb", DiskKind::Sata, 1 << 20, q, ServiceModel::for_kind(DiskKind::Sata));
    let md_q = Queue { limits: QueueLimits { max_sectors: 2048, max_hw_sectors: 2048, ..QueueLimits::stacking() }, attrs: QueueAttrs { scheduler: blkstack::limits::Elevator::None, ..attrs } };
    b.add_bio_device("md0", DiskKind::Md, 1 << 20, md_q, Box::new(BrokenMirror { a, b: bb, read_from_b, skew }));
    let mut e = b.build();
    let md = e.core.topo.by_name("md0").unwrap();
    // The reference: a raid1 of sda and sdb, data at 0.
    let members = vec![MdMember { dev: a, data_offset: 0 }, MdMember { dev: bb, data_offset: 0 }];
    e.core.check.set_layout(md, Layout::Md { pers: Personality::Raid1 { sectors: 1 << 20 }, members });
    if oracle {
        e.core.check.enable_oracle();
    }
    let task = e.add_task(100, "t");
    for (i, op) in [Op::Write, Op::Read].into_iter().enumerate() {
        let spec = BioSpec { dev: md, op, flags: req::SYNC, sector: 64, bvecs: vec![Bvec { phys: 1 << 32, len: 4096 }], size: 4096 };
        e.submit_root(task, spec, u32::MAX, i as u32);
        e.run_until_idle();
    }
    e
}

#[test]
fn conservation_catches_a_missed_mirror() {
    // The write reached sda [64, 72) only; sdb's copy was never written.
    let e = broken(false, 0, false);
    let r = report(&e);
    assert!(r.contains("write #1 of md0 [64, 72): sdb sectors [64, 72): written 0 time(s), expected 1"), "{r}");
    assert_eq!(e.core.check.violation_count, 1, "{r}");
}

#[test]
fn oracle_catches_the_missed_copy_and_the_stale_read() {
    let e = broken(true, 0, true);
    let r = report(&e);
    assert!(r.contains("write #1 of md0 [64, 72) completed, but sdb sectors [64, 72) (the copy of md0 sectors [64, 72)) still hold the data it held before the run: the write missed a copy"), "{r}");
    assert!(r.contains("read #2 of md0 sectors [64, 72) served from sdb sectors [64, 72), which hold the data it held before the run: stale: version 0 is older than write #1 (version 1), which completed"), "{r}");
}

#[test]
fn misplaced_data_is_caught_piece_by_piece() {
    // Everything 8 sectors off: the pages of md0 [64, 72) land on sda [72, 80).
    let r = report(&broken(false, 8, false));
    assert!(r.contains("write #1 of md0: sda sectors [72, 80) got its sectors [64, 72), which live at sda [64, 72), sdb [64, 72)"), "{r}");
}

#[test]
fn whole_range_discard_misses_far_copies_when_near_copies_do_not_divide_the_members() {
    // A finding, not a model fault: 5.13+'s raid10_handle_discard discards each far-copy region by
    // shifting every member's near-region range by the stride. Far copies sit near_copies members
    // further on, so that is right only when stripes are whole rows (near copies divide the members).
    // n2f2 on 5 members, chunk 4 KiB (8 sectors): stripe = (5/2 + 5 mod 2)·8 = 24 sectors; [0, 1944) is
    // 81 stripes, but it ends inside a row: 1944/8 = 243 chunks, 243·2 = 486 copies → row 97, member 1.
    // Member 0 gets near [0, 784) (rows 0-97) and, shifted, far [8192, 8976): but member 0's far row 97
    // holds the far copy of what member 3 holds in near row 97 — outside the range — while member 2's
    // far row 97 (a copy of member 0's near row 97, inside the range) is left alone.
    let mut text = String::from("kernel = \"6.12\"\n");
    for d in ["sda", "sdb", "sdc", "sdd", "sde"] {
        text += &format!("[disks.{d}]\nkind = \"nvme\"\nsize = \"8MiB\"\n");
    }
    text += "[md.md0]\nlevel = 10\nlayout = \"n2f2\"\nchunk = \"4KiB\"\ndata_offset = 0\nmembers = [\"sda\", \"sdb\", \"sdc\", \"sdd\", \"sde\"]\n";
    text += "[workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"discard\"\nsector = 0\nsize = \"1944s\"\n";
    // Members of 16384 sectors: calc_sectors gives 2048 chunks per member, stride 1024 chunks = 8192.
    let r = report(&run_checked(&text, &[]));
    assert!(r.contains("sda sectors [8968, 8976): discarded 1 time(s), expected none"), "{r}");
    assert!(r.contains("sdc sectors [8968, 8976): discarded 0 time(s), expected 1"), "{r}");
    // The chunk-limited write path (≤5.12) discards every copy itself.
    assert_eq!(run_checked(&text, &["behaviour.raid10_discard=chunk_limited"]).core.check.failure_report(), None);
    // The conservation check alone: the same two ranges; the chunk-limited
    // discard's pieces (each chunk's two copies, near and far) cover its
    // reference runs, a near and a far one per member.
    let r = report(&run_conserved(&text, &[]));
    assert!(r.contains("sda sectors [8968, 8976): discarded 1 time(s), expected none"), "{r}");
    assert!(r.contains("sdc sectors [8968, 8976): discarded 0 time(s), expected 1"), "{r}");
    let e = run_conserved(&text, &["behaviour.raid10_discard=chunk_limited"]);
    assert_eq!((e.core.check.failure_report(), e.core.check.roots_checked), (None, 1));
}
