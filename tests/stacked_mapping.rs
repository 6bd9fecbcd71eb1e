//! Where stacked devices put I/O, end to end: scenario files with md
//! arrays, dm tables and partitions, run through the real drivers, and the
//! member bios they queue ('Q' on each member disk, whole-disk sectors)
//! compared with positions worked out by hand from the kernel's layout
//! rules (the working is in each comment).
//!
//! Members are 64 MiB (131072 sectors) unless said otherwise, with
//! `data_offset = 2048`, so a member sector is the layout's sector + 2048.

mod common;

use blkstack::bio::Op;
use blkstack::engine::Engine;
use blkstack::trace::{Action, Event};

/// (op, sector, sectors) of the bios queued on `dev`, in order.
fn queued(e: &Engine, ev: &[Event], dev: &str) -> Vec<(Op, u64, u32)> {
    let id = e.core.topo.by_name(dev).unwrap();
    ev.iter().filter(|x| x.dev == id && x.action == Action::Queue).map(|x| (x.op, x.sector, x.sectors())).collect()
}

/// Run a scenario; the always-on conservation check must have passed.
fn run(text: &str, sets: &[&str]) -> (Engine, Vec<Event>) {
    let (e, ev) = common::run_events(text, sets);
    assert_eq!(e.core.check.failure_report(), None);
    assert!(e.core.check.roots_checked > 0, "the checks saw the bios");
    (e, ev)
}

fn disks(names: &[&str], size: &str) -> String {
    names.iter().map(|n| format!("[disks.{n}]\nkind = \"sata\"\nsize = \"{size}\"\n")).collect()
}

fn bios(device: &str, list: &[(&str, u64, u64)]) -> String {
    let mut s = format!("[workload]\ntype = \"bios\"\ndevice = \"{device}\"\niodepth = 1\n");
    for (op, sector, sectors) in list {
        s += &format!("[[workload.bio]]\nop = \"{op}\"\nsector = {sector}\nsize = \"{sectors}s\"\n");
    }
    s
}

/// A 4- or 5-member raid10 with 64 KiB chunks, one 16-sector write then
/// a read of it at array sector 648 (chunk 5, 8 sectors in).
fn raid10(layout: &str, n: usize) -> (Engine, Vec<Event>) {
    let names = ["sda", "sdb", "sdc", "sdd", "sde"];
    let members: Vec<String> = names[..n].iter().map(|m| format!("\"{m}\"")).collect();
    let text = format!(
        "kernel = \"6.12\"\n{}[md.md0]\nlevel = 10\nlayout = \"{layout}\"\nchunk = \"64KiB\"\ndata_offset = 2048\nmembers = [{}]\n{}",
        disks(&names[..n], "64MiB"),
        members.join(", "),
        bios("md0", &[("write", 648, 16), ("read", 648, 16)])
    );
    run(&text, &[])
}

/// (member, sector) pairs.
type Places = Vec<(&'static str, u64)>;

/// The members each copy of the 16 sectors at 648 went to, and where.
fn writes_and_read(e: &Engine, ev: &[Event], n: usize) -> (Places, Places) {
    let names = ["sda", "sdb", "sdc", "sdd", "sde"];
    let (mut w, mut r) = (Vec::new(), Vec::new());
    for name in &names[..n] {
        for (op, sector, sectors) in queued(e, ev, name) {
            assert_eq!(sectors, 16);
            match op {
                Op::Write => w.push((*name, sector)),
                Op::Read => r.push((*name, sector)),
                _ => panic!("unexpected {op:?}"),
            }
        }
    }
    (w, r)
}

#[test]
fn raid10_near_2_on_4_and_5_disks() {
    // n2, 4 disks: chunk 5 → c = 5·2 = 10, row 10/4 = 2, disk 10 mod 4 = 2; copies on disks 2 and 3 at
    // 2·128 + 8 = 264 → 2312. The read goes to the first copy (nothing read before).
    let (e, ev) = raid10("n2", 4);
    assert_eq!(writes_and_read(&e, &ev, 4), (vec![("sdc", 2312), ("sdd", 2312)], vec![("sdc", 2312)]));
    // n2, 5 disks (md(4): row 2 is chunks 5 5 6 6 7): c = 10, row 2, disk 0 → disks 0 and 1 at 264 → 2312.
    let (e, ev) = raid10("n2", 5);
    assert_eq!(writes_and_read(&e, &ev, 5), (vec![("sda", 2312), ("sdb", 2312)], vec![("sda", 2312)]));
}

#[test]
fn raid10_far_2_on_4_and_5_disks() {
    // Members 131072 − 2048 = 129024 sectors = 1008 chunks. calc_sectors, 4 disks: array chunks
    // 1008/2·4/1 = 2016, per member ⌈2016·2/4⌉ = 1008, stride 1008/2 chunks = 64512 sectors.
    // Chunk 5 → disk 5 mod 4 = 1, row 5/4 = 1 → 128 + 8 = 136 → 2184; far copy on disk 2 at
    // 136 + 64512 = 64648 → 66696.
    let (e, ev) = raid10("f2", 4);
    assert_eq!(writes_and_read(&e, &ev, 4), (vec![("sdb", 2184), ("sdc", 66696)], vec![("sdb", 2184)]));
    // 5 disks: array chunks 1008/2·5 = 2520, per member ⌈2520·2/5⌉ = 1008, stride again 64512.
    // Chunk 5 → disk 0, row 1 → 136 → 2184; far copy on disk 1 at 64648 → 66696.
    let (e, ev) = raid10("f2", 5);
    assert_eq!(writes_and_read(&e, &ev, 5), (vec![("sda", 2184), ("sdb", 66696)], vec![("sda", 2184)]));
}

#[test]
fn raid10_offset_2_on_4_and_5_disks() {
    // o2, 4 disks: chunk 5 → row (5/4)·2 = 2, disk 1 → 8 + 2·128 = 264 → 2312; the offset copy is on
    // the next disk one chunk (the stride) further: disk 2 at 392 → 2440.
    let (e, ev) = raid10("o2", 4);
    assert_eq!(writes_and_read(&e, &ev, 4), (vec![("sdb", 2312), ("sdc", 2440)], vec![("sdb", 2312)]));
    // 5 disks: row (5/5)·2 = 2, disk 0 → 264 → 2312; copy on disk 1 at 392 → 2440.
    let (e, ev) = raid10("o2", 5);
    assert_eq!(writes_and_read(&e, &ev, 5), (vec![("sda", 2312), ("sdb", 2440)], vec![("sda", 2312)]));
}

const EIGHT: [&str; 8] = ["sda", "sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh"];

fn raid5_8(work: &[(&str, u64, u64)]) -> (Engine, Vec<Event>) {
    let members: Vec<String> = EIGHT.iter().map(|m| format!("\"{m}\"")).collect();
    let text = format!(
        "kernel = \"6.12\"\n{}[md.md0]\nlevel = 5\nlayout = \"left-symmetric\"\nchunk = \"64KiB\"\ndata_offset = 2048\nmembers = [{}]\n{}",
        disks(&EIGHT, "64MiB"),
        members.join(", "),
        bios("md0", work)
    );
    run(&text, &[])
}

#[test]
fn raid5_left_symmetric_over_8_disks_reads() {
    // 7 data disks. Array chunk 9 (sector 1152) + 4: row 9/7 = 1, data index 2; parity 7 − 1 mod 8 = 6,
    // data from the member after parity: (6 + 1 + 2) mod 8 = 1 → sdb at 1·128 + 4 = 132 → 2180.
    // Chunk 16 (sector 2048): row 2, index 2, parity 5 → member 0 (sda) at 256 → 2304.
    let (e, ev) = raid5_8(&[("read", 1156, 16), ("read", 2048, 8)]);
    assert_eq!(queued(&e, &ev, "sdb"), vec![(Op::Read, 2180, 16)]);
    assert_eq!(queued(&e, &ev, "sda"), vec![(Op::Read, 2304, 8)]);
    for m in &EIGHT[2..] {
        assert_eq!(queued(&e, &ev, m), vec![], "{m}");
    }
}

#[test]
fn raid5_full_stripe_write_reads_nothing() {
    // Row 0 = array [0, 7·128 = 896): data on members 0-6, parity on 7. Every 4 KiB stripe_head is
    // fully overwritten: no pre-reads; each member gets its 16 units of [0, 128) → [2048, 2176), one
    // 8-sector write per stripe_head, in member-sector order (the walk starts at D1's first unit, whose
    // stripe_head is sector 0, and goes on in unit order).
    let (e, ev) = raid5_8(&[("write", 0, 896)]);
    for m in EIGHT {
        let q = queued(&e, &ev, m);
        let want: Vec<(Op, u64, u32)> = (0..16).map(|i| (Op::Write, 2048 + 8 * i, 8)).collect();
        assert_eq!(q, want, "{m}");
    }
}

#[test]
fn raid5_small_write_is_read_modify_write() {
    // 4 KiB at 0: D0 on sda, P on sdh. rmw needs D0 + P = 2 reads, rcw the other 6 data units → rmw:
    // read old data and parity, write both; ops_run_io goes from the highest slot down.
    let (e, ev) = raid5_8(&[("write", 0, 8)]);
    assert_eq!(queued(&e, &ev, "sdh"), vec![(Op::Read, 2048, 8), (Op::Write, 2048, 8)]);
    assert_eq!(queued(&e, &ev, "sda"), vec![(Op::Read, 2048, 8), (Op::Write, 2048, 8)]);
    let id = |n: &str| e.core.topo.by_name(n).unwrap();
    let order: Vec<(u32, Op)> = ev.iter().filter(|x| x.action == Action::Queue && x.dev != id("md0")).map(|x| (x.dev, x.op)).collect();
    assert_eq!(order, vec![(id("sdh"), Op::Read), (id("sda"), Op::Read), (id("sdh"), Op::Write), (id("sda"), Op::Write)]);
}

/// raid0 over a 64 MiB and a 128 MiB disk, 64 KiB chunks, data at 2048.
fn raid0_two_zones(kernel_sets: &[&str], work: &[(&str, u64, u64)]) -> (Engine, Vec<Event>) {
    let text = format!(
        "kernel = \"6.12\"\n{}{}[md.md0]\nlevel = 0\nchunk = \"64KiB\"\ndata_offset = 2048\nmembers = [\"sda\", \"sdb\"]\n{}",
        disks(&["sda"], "64MiB"),
        disks(&["sdb"], "128MiB"),
        bios("md0", work)
    );
    run(&text, kernel_sets)
}

#[test]
fn raid0_unequal_members_make_two_zones() {
    // Members: 129024 and 262144 − 2048 = 260096 sectors (1008 and 2032 chunks). Zone 0 stripes both to
    // 129024 → ends at 258048; zone 1 is sdb alone from its sector 129024 → ends at 258048 + 131072.
    // 130 = chunk 1 + 2 → member 1 (sdb), row 0 → 2 → 2050.
    // 258148 = zone 1 + 100 → sdb at zone start 129024 + 100 = 129124 → 131172.
    let (e, ev) = raid0_two_zones(&[], &[("write", 130, 8), ("write", 258_148, 8)]);
    assert_eq!(e.core.topo.dev(e.core.topo.by_name("md0").unwrap()).nr_sectors, 389_120);
    assert_eq!(queued(&e, &ev, "sdb"), vec![(Op::Write, 2050, 8), (Op::Write, 131_172, 8)]);
    assert_eq!(queued(&e, &ev, "sda"), vec![]);
}

#[test]
fn raid0_split_across_the_zone_boundary_per_version() {
    // [258040, 258056) crosses the chunk (and zone) boundary at 258048 = 2016·128, split at 8.
    // Front: chunk 2015 (odd → sdb), row 2015/2 = 1007 → 1007·128 + 120 = 129016 → 131064.
    // Remainder: zone 1 offset 0 → sdb at 129024 → 131072.
    // 6.5+ (map_both): both mapped in raid0, the remainder first.
    let (e, ev) = raid0_two_zones(&[], &[("write", 258_040, 16)]);
    assert_eq!(queued(&e, &ev, "sdb"), vec![(Op::Write, 131_072, 8), (Op::Write, 131_064, 8)]);
    // ≤6.4 (remainder_to_md): the front is mapped, the remainder goes back to md and comes after.
    let (e, ev) = raid0_two_zones(&["behaviour.raid0_split=remainder_to_md"], &[("write", 258_040, 16)]);
    assert_eq!(queued(&e, &ev, "sdb"), vec![(Op::Write, 131_064, 8), (Op::Write, 131_072, 8)]);
}

#[test]
fn dm_stripe_over_3_devices() {
    // 3 stripes of 128-sector chunks; sdd's data starts at 2048. A 48-sector write at 1000:
    // chunk 7 (896..1023), 104 in → stripe 7 mod 3 = 1 (sdc), its chunk 7/3 = 2 → 256 + 104 = 360, and
    // dm-stripe's max_io_len stops the clone at the chunk end: 24 sectors. The rest [1024, 1048) is
    // resubmitted: chunk 8 → stripe 2 (sdd), its chunk 2 → 256 + 2048 = 2304, 24 sectors.
    let text = format!(
        "kernel = \"6.12\"\n{}[dm.st]\ntable = \"0 6144 striped 3 128 /dev/sdb 0 /dev/sdc 0 /dev/sdd 2048\"\n{}",
        disks(&["sdb", "sdc", "sdd"], "64MiB"),
        bios("st", &[("write", 1000, 48)])
    );
    let (e, ev) = run(&text, &[]);
    assert_eq!(queued(&e, &ev, "sdc"), vec![(Op::Write, 360, 24)]);
    assert_eq!(queued(&e, &ev, "sdd"), vec![(Op::Write, 2304, 24)]);
    // The split dm traces is of the remainder itself: 1024 + 24.
    assert_eq!(common::on(&e, &ev, "st", Action::Split), vec![(1024, 24)]);
    // dm-stripe numbers 253:0.
    let st = e.core.topo.dev(e.core.topo.by_name("st").unwrap());
    assert_eq!((st.major, st.minor), (253, 0));
}

#[test]
fn partition_at_2048_under_dm_linear_and_md_raid1() {
    // dm-linear on sda1 (start 2048): dm sector 100 → sda1 sector 100 ('A' from the dm device), then
    // the partition remap → sda 2148 ('A' from sda1).
    let text = format!(
        "kernel = \"6.12\"\n[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\n[disks.sda.partitions.sda1]\nstart = 2048\nsize = \"64MiB\"\n\
         [dm.lv]\ntable = \"0 131072 linear /dev/sda1 0\"\n{}",
        bios("lv", &[("write", 100, 8)])
    );
    let (e, ev) = run(&text, &[]);
    assert_eq!(queued(&e, &ev, "sda"), vec![(Op::Write, 2148, 8)]);
    let id = |n: &str| e.core.topo.by_name(n).unwrap();
    let remaps: Vec<(u64, u32, u64)> = ev.iter().filter(|x| x.action == Action::Remap).map(|x| (x.sector, x.from_dev, x.arg)).collect();
    assert_eq!(remaps, vec![(100, id("lv"), 100), (2148, id("sda1"), 100)]);
    // raid1 over sda1 (start 2048) and sdb1 (start 4096), data offset 2048: array sector 10 →
    // sda 2048 + 2048 + 10 = 4106, sdb 4096 + 2048 + 10 = 6154.
    let text = format!(
        "kernel = \"6.12\"\n[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\n[disks.sda.partitions.sda1]\nstart = 2048\nsize = \"64MiB\"\n\
         [disks.sdb]\nkind = \"sata\"\nsize = \"1GiB\"\n[disks.sdb.partitions.sdb1]\nstart = 4096\nsize = \"64MiB\"\n\
         [md.md1]\nlevel = 1\ndata_offset = 2048\nmembers = [\"sda1\", \"sdb1\"]\n{}",
        bios("md1", &[("write", 10, 8)])
    );
    let (e, ev) = run(&text, &[]);
    assert_eq!(queued(&e, &ev, "sda"), vec![(Op::Write, 4106, 8)]);
    assert_eq!(queued(&e, &ev, "sdb"), vec![(Op::Write, 6154, 8)]);
    let md1 = e.core.topo.dev(e.core.topo.by_name("md1").unwrap());
    assert_eq!((md1.major, md1.minor), (9, 1));
}

#[test]
fn md_on_dm_and_default_data_offset() {
    // mdadm ≥ 4.1, 1.2 metadata on 2 GiB members: data at sector 6144 (superblock.rs works it out).
    // raid1 of two dm-linear devices over sdb and sdc (offset 0): array sector 0 → each dm device at
    // 6144 → sdb and sdc at 6144.
    let text = format!(
        "kernel = \"6.1\"\n{}[md.md0]\nlevel = 1\nmembers = [\"l1\", \"l2\"]\n\
         [dm.l1]\ntable = \"0 4194304 linear /dev/sdb 0\"\n[dm.l2]\ntable = \"0 4194304 linear /dev/sdc 0\"\n{}",
        disks(&["sdb", "sdc"], "2GiB"),
        bios("md0", &[("write", 0, 8)])
    );
    let (e, ev) = run(&text, &[]);
    assert_eq!(queued(&e, &ev, "sdb"), vec![(Op::Write, 6144, 8)]);
    assert_eq!(queued(&e, &ev, "sdc"), vec![(Op::Write, 6144, 8)]);
    // The dm devices come first (md0 is built on them) and number 253:0 and 253:1.
    let minor = |n: &str| e.core.topo.dev(e.core.topo.by_name(n).unwrap()).minor;
    assert_eq!((minor("l1"), minor("l2")), (0, 1));
}

#[test]
fn flushes_reach_every_member() {
    // md_flush_request and dm's __send_empty_flush: an empty REQ_PREFLUSH write to every member
    // (disks of kind sata have a volatile cache, so it is queued: 'Q' of 0 sectors).
    let text = format!(
        "kernel = \"6.12\"\n{}[md.md0]\nlevel = 1\ndata_offset = 2048\nmembers = [\"sda\", \"sdb\"]\n\
         [dm.st]\ntable = \"0 2048 striped 2 8 /dev/sdc 0 /dev/sdd 0\"\n\
         [workload]\ntype = \"bios\"\niodepth = 1\n[[workload.bio]]\ndevice = \"md0\"\nop = \"flush\"\nsector = 0\n\
         [[workload.bio]]\ndevice = \"st\"\nop = \"flush\"\nsector = 0\n",
        disks(&["sda", "sdb", "sdc", "sdd"], "64MiB")
    );
    let (e, ev) = run(&text, &[]);
    for m in ["sda", "sdb", "sdc", "sdd"] {
        assert_eq!(queued(&e, &ev, m), vec![(Op::Write, 0, 0)], "{m}");
    }
}
