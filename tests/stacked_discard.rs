//! Discards through md and dm, end to end: the limits a stacked device
//! reports (as `blkstack run --json` shows them) and the member discards
//! each kernel version issues, worked out by hand.
//!
//! The raid10 array is spec §4.4/4.5's: four NVMe members of 1.9 TB
//! (3710937500 sectors) that report discard_max_bytes 2199023255040
//! (0xFFFFFFFF sectors), near-2 layout, mdadm's 512 KiB chunk, 1.2 metadata.
//! mdadm puts the data at 264192 on them: headroom 128 MiB (262144 sectors
//! ·1024 is below the size, no halving), bitmap space 128 KiB (above
//! 200 GiB): 24 + 256 + 262144 = 262424, rounded up to a MiB.

mod common;

use blkstack::bio::Op;
use blkstack::run::{check_file, RunOptions};
use blkstack::trace::Action;

const DATA: u64 = 264_192;

fn raid10(kernel: &str, work: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n");
    for d in ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"] {
        s += &format!("[disks.{d}]\nkind = \"nvme\"\nsize = \"1.9TB\"\n");
    }
    s + "[md.md0]\nlevel = 10\nmembers = [\"nvme0n1\", \"nvme1n1\", \"nvme2n1\", \"nvme3n1\"]\n" + work
}

fn json_limits(text: &str, sets: &[&str]) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("blkstack-stacked-{}-{}", std::process::id(), sets.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("raid10.toml");
    std::fs::write(&path, text).unwrap();
    let opts = RunOptions { sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() };
    let v = check_file(path.to_str().unwrap(), &opts).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(&dir).unwrap();
    v["devices"]["md0"]["limits"].clone()
}

#[test]
fn json_reports_raid10_discard_max_bytes_per_version() {
    // ≤5.12: raid10_run caps both discard limits at the chunk, 1024 sectors = 524288 bytes.
    // 5.13+: no cap of its own, so the members' 0xFFFFFFFF sectors = 2199023255040 bytes.
    let text = raid10("6.12", "");
    let old = json_limits(&text, &["behaviour.raid10_discard=chunk_limited"]);
    assert_eq!((old["discard_max_bytes"].as_u64(), old["discard_max_hw_bytes"].as_u64()), (Some(524_288), Some(524_288)));
    let new = json_limits(&text, &[]);
    assert_eq!(new["discard_max_bytes"].as_u64(), Some(2_199_023_255_040));
    // io_opt a chunk per near-copy group: 512 KiB · 4/2.
    assert_eq!(new["optimal_io_size"].as_u64(), Some(1_048_576));
}

const DISCARD_64M: &str = "[workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"discard\"\nsector = 0\nsize = \"64MiB\"\n";

#[test]
fn old_raid10_discards_one_md_bio_per_chunk() {
    // 64 MiB = 128 chunks. md splits the discard to its 1024-sector limit (granularity 512 bytes):
    // 128 md bios (127 splits 'X'), each on the write path: chunk k goes to members 2k mod 4 and
    // 2k mod 4 + 1 at row k/2, so every member gets 64 discards of 1024 at rows 0..63.
    let (e, ev) = common::run_events(&raid10("6.1", DISCARD_64M), &["behaviour.raid10_discard=chunk_limited"]);
    assert_eq!(e.core.check.failure_report(), None);
    assert_eq!(common::on(&e, &ev, "md0", Action::Split).len(), 127);
    for m in ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"] {
        let q = common::on(&e, &ev, m, Action::Queue);
        let want: Vec<(u64, u32)> = (0..64).map(|row| (DATA + row * 1024, 1024)).collect();
        assert_eq!(q, want, "{m}");
    }
}

#[test]
fn new_raid10_discards_one_range_per_member() {
    // 5.13+: stripe = 4/2 data disks · 1024 = 2048; [0, 131072) is aligned. End: chunk 128 → 128·2 = 256
    // → row 64, disk 0, offset 65536. Every member: one discard [0, 65536) + 264192, the member's
    // own __blkdev_issue_discard leaving it whole (65536 < 8388607 sectors).
    let (e, ev) = common::run_events(&raid10("6.12", DISCARD_64M), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    assert_eq!(common::on(&e, &ev, "md0", Action::Split), vec![]);
    for m in ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"] {
        assert_eq!(common::on(&e, &ev, m, Action::Queue), vec![(DATA, 65_536)], "{m}");
    }
    // 7.2 still resubmits raid10's head and tail with submit_bio_noacct; this one has neither.
    let (e, ev) = common::run_events(&raid10("7.2", DISCARD_64M), &[]);
    assert_eq!(common::on(&e, &ev, "nvme3n1", Action::Queue), vec![(DATA, 65_536)]);
    assert_eq!(e.core.check.failure_report(), None);
}

#[test]
fn new_raid10_head_and_tail_take_the_write_path() {
    // [1000, 1000 + 8192): stripe 2048 → head [1000, 2048) (1048), tail from 8192 (1000), middle
    // [2048, 8192) → rows 1..4: every member [1024, 4096) + 264192. The head comes back to md, shorter
    // than two stripes: write path, cut at the chunk end 1024 → [1000, 1024) on members 0, 1 at 1000,
    // then [1024, 2048) (chunk 1) on members 2, 3 at row 0. The tail [8192, 9192) is chunk 8 → c = 16 →
    // row 4, members 0, 1 at 4096, 1000 sectors.
    let work = "[workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"discard\"\nsector = 1000\nsize = \"8192s\"\n";
    let (e, ev) = common::run_events(&raid10("6.12", work), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let q = |m: &str| {
        let mut v = common::on(&e, &ev, m, Action::Queue);
        v.sort();
        v
    };
    let d = DATA;
    assert_eq!(q("nvme0n1"), vec![(d + 1000, 24), (d + 1024, 3072), (d + 4096, 1000)]);
    assert_eq!(q("nvme1n1"), vec![(d + 1000, 24), (d + 1024, 3072), (d + 4096, 1000)]);
    assert_eq!(q("nvme2n1"), vec![(d, 1024), (d + 1024, 3072)]);
    assert_eq!(q("nvme3n1"), vec![(d, 1024), (d + 1024, 3072)]);
}

fn sata_array(level: &str, members: &[&str], extra: &str, work: &str) -> String {
    let mut s = String::from("kernel = \"6.12\"\n");
    for d in members {
        s += &format!("[disks.{d}]\nkind = \"sata\"\nsize = \"64MiB\"\n");
    }
    let list: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
    s + &format!("[md.md0]\nlevel = {level}\nchunk = \"64KiB\"\ndata_offset = 2048\nmembers = [{}]\n{extra}{work}", list.join(", "))
}

#[test]
fn raid0_discard_gives_each_member_one_range() {
    // 2 members, chunk 128, stripe 256. [100, 1600): start row 0, member 0, offset 100; end 1600 = row 6
    // (1536) + 64 → member 0, offset 64 + 6·128 = 832. Member 0: [100, 832); member 1 (after both
    // edges): [0, 768). 732 + 768 = 1500. Data at 2048.
    let work = "[workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"discard\"\nsector = 100\nsize = \"1500s\"\n";
    let (e, ev) = common::run_events(&sata_array("0", &["sda", "sdb"], "", work), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    assert_eq!(common::on(&e, &ev, "sda", Action::Queue), vec![(2148, 732)]);
    assert_eq!(common::on(&e, &ev, "sdb", Action::Queue), vec![(2048, 768)]);
}

#[test]
fn raid5_discard_only_with_devices_handle_discard_safely() {
    // 4 members, 3 data disks, chunk 128: data stripe 384 sectors; discard granularity
    // roundup_pow_of_two(3·64 KiB) = 256 KiB, which SATA's 65535·64 sectors allow.
    let work = "[workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"discard\"\nsector = 100\nsize = \"2000s\"\n";
    let members = ["sda", "sdb", "sdc", "sdd"];
    // Without the module parameter md has no discard: the bio fails (EOPNOTSUPP) at md.
    let (e, ev) = common::run_events(&sata_array("5", &members, "", work), &[]);
    assert_eq!(e.core.stats[e.core.topo.by_name("md0").unwrap() as usize].errors, 1);
    assert_eq!(common::on(&e, &ev, "sda", Action::Queue), vec![]);
    // With it: rounded in to whole stripes, rows ceil(100/384) = 1 to 2100/384 = 5 (exclusive): member
    // sectors [128, 640), one 8-sector discard per member per stripe_head: 64 each, highest member
    // first in each stripe_head.
    let (e, ev) = common::run_events(&sata_array("5", &members, "devices_handle_discard_safely = true\n", work), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    for m in members {
        let q = common::on(&e, &ev, m, Action::Queue);
        let want: Vec<(u64, u32)> = (0..64).map(|i| (2048 + 128 + 8 * i, 8)).collect();
        assert_eq!(q, want, "{m}");
    }
    let md0 = e.core.topo.by_name("md0").unwrap();
    let first: Vec<String> = ev.iter().filter(|x| x.action == Action::Queue && x.op == Op::Discard && x.dev != md0).take(4).map(|x| e.core.topo.dev(x.dev).name.clone()).collect();
    assert_eq!(first, vec!["sdd", "sdc", "sdb", "sda"]);
}

#[test]
fn dm_stripe_discard_clones_per_stripe() {
    // Spec example on 3 stripes of 128: [100, 1100) → stripe 0 [100, 384), stripe 1 [0, 384),
    // stripe 2 [0, 332) (+2048 on sdd).
    let mut s = String::from("kernel = \"6.12\"\n");
    for d in ["sdb", "sdc", "sdd"] {
        s += &format!("[disks.{d}]\nkind = \"sata\"\nsize = \"64MiB\"\n");
    }
    s += "[dm.st]\ntable = \"0 6144 striped 3 128 /dev/sdb 0 /dev/sdc 0 /dev/sdd 2048\"\n";
    s += "[workload]\ntype = \"bios\"\ndevice = \"st\"\n[[workload.bio]]\nop = \"discard\"\nsector = 100\nsize = \"1000s\"\n";
    let (e, ev) = common::run_events(&s, &[]);
    assert_eq!(e.core.check.failure_report(), None);
    assert_eq!(common::on(&e, &ev, "sdb", Action::Queue), vec![(100, 284)]);
    assert_eq!(common::on(&e, &ev, "sdc", Action::Queue), vec![(0, 384)]);
    assert_eq!(common::on(&e, &ev, "sdd", Action::Queue), vec![(2048, 332)]);
}
