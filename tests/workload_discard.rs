//! The discard tools end to end: what reaches the top of the stack ('Q')
//! for blkdiscard, mkfs.xfs and fstrim, per `discard_chopping`.

mod common;

use blkstack::scenario;
use blkstack::trace::{rwbs, Action, Event};
use common::run_events;

/// (sector, sectors, rwbs) of the bios queued on `dev`.
fn queued(text: &str, sets: &[&str], dev: &str) -> Vec<(u64, u32, String)> {
    let (engine, events) = run_events(text, sets);
    let id = engine.core.topo.by_name(dev).unwrap();
    let q = |e: &&Event| e.dev == id && e.action == Action::Queue;
    events.iter().filter(q).map(|e| (e.sector, e.sectors(), rwbs(e.op, e.flags, e.bytes))).collect()
}

fn q(sector: u64, n: u32, r: &str) -> (u64, u32, String) {
    (sector, n, r.to_string())
}

/// An 8 GiB NVMe namespace with 4 KiB discard granularity.
const NVME: &str = r#"
[disks.nvme0n1]
kind = "nvme"
size = "8GiB"
[disks.nvme0n1.queue]
discard_granularity = 4096
"#;

#[test]
fn blkdiscard_whole_device_per_chopping() {
    let text = format!("{NVME}[workload]\ntype = \"blkdiscard\"\ndevice = \"/dev/nvme0n1\"\n");
    // 6.1+ bio_discard_limit: round_down(UINT_MAX, 4096) = 4,294,963,200
    // bytes = 8,388,600 sectors per bio; 8 GiB = 16,777,216 sectors =
    // 2 × 8,388,600 + 16. One call: one plug, the last bio REQ_SYNC
    // (submit_bio_wait): "D", "D", "DS".
    let want = vec![q(0, 8_388_600, "D"), q(8_388_600, 8_388_600, "D"), q(16_777_200, 16, "DS")];
    assert_eq!(queued(&text, &["kernel=6.12"], "nvme0n1"), want);
    // 4.19-5.9 (allowed_max_sectors): round_down(UINT_MAX, 512) >> 9 =
    // 8,388,607 sectors per bio: 2 × 8,388,607 + 2.
    let want = vec![q(0, 8_388_607, "D"), q(8_388_607, 8_388_607, "D"), q(16_777_214, 2, "DS")];
    assert_eq!(queued(&text, &["behaviour.discard_chopping=allowed_max_sectors"], "nvme0n1"), want);
}

#[test]
fn blkdiscard_steps_are_separate_calls() {
    // 12 MiB from 4 MiB in 5 MiB steps: calls of 5, 5, 2 MiB, each one bio
    // ending the call, so each is "DS".
    let text = format!("{NVME}[workload]\ntype = \"blkdiscard\"\ndevice = \"nvme0n1\"\noffset = \"4MiB\"\nlength = \"12MiB\"\nstep = \"5MiB\"\n");
    let want = vec![q(8192, 10_240, "DS"), q(18_432, 10_240, "DS"), q(28_672, 4096, "DS")];
    assert_eq!(queued(&text, &[], "nvme0n1"), want);
}

#[test]
fn mkfs_xfs_steps_by_xfsprogs_version() {
    let text = r#"
[disks.sda]
kind = "sata"
size = "5GiB"
[disks.sda.queue]
discard_granularity = 4096
[workload]
type = "mkfs.xfs"
device = "/dev/sda"
"#;
    // xfsprogs >= 5.5: 2 GiB steps = 4,194,304 sectors, one bio each (below
    // 8,388,600): 2, 2 and 1 GiB calls.
    let want = vec![q(0, 4_194_304, "DS"), q(4_194_304, 4_194_304, "DS"), q(8_388_608, 2_097_152, "DS")];
    let got = queued(text, &[], "sda");
    assert_eq!(got[..3], want);
    // Then the log is zeroed: 5 GiB / 2048 = 2.5 MiB, raised to the 64 MiB
    // floor, at the middle (2.5 GiB = sector 5,242,880). sata has no write
    // zeroes (libata's no_write_same), so blkdev_issue_zeroout writes the
    // zero page: 64 bios of 256 pages (2048 sectors), the last "WS".
    let log: Vec<_> = (0..64).map(|i| q(5_242_880 + i * 2048, 2048, if i == 63 { "WS" } else { "W" })).collect();
    assert_eq!(got[3..], log);
    // Older: one BLKDISCARD of 10,485,760 sectors = 8,388,600 + 2,097,160.
    let want = vec![q(0, 8_388_600, "D"), q(8_388_600, 2_097_160, "DS")];
    assert_eq!(queued(text, &["workload.xfsprogs=5.4.0"], "sda")[..2], want);
}

#[test]
fn mkfs_xfs_log_size_follows_xfsprogs() {
    use blkstack::scenario::workload_discard::mkfs_xfs_log;
    const MIB: u64 = 1 << 20;
    // Under 300 MiB: the computed minimum log, not modelled.
    assert_eq!(mkfs_xfs_log(299 * MIB), None);
    // 1 TiB: 1 TiB / 2048 = 512 MiB, at 512 GiB.
    assert_eq!(mkfs_xfs_log(1 << 40), Some((512 << 30, 512 * MIB)));
    // 8 TiB: 4 GiB by the ratio, capped at XFS_MAX_LOG_BYTES = 2 GiB - 10 MiB.
    assert_eq!(mkfs_xfs_log(8 << 40), Some((4 << 40, 2038 * MIB)));
}

#[test]
fn fstrim_discards_each_extent_through_the_partition() {
    let text = r#"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.queue]
discard_granularity = 4096
[disks.sda.partitions.sda1]
start = 2048
size = "512MiB"
[workload]
type = "fstrim"
device = "/dev/sda1"
extents = [[16, 8], [40, 4], ["1MiB", "1MiB"]]
"#;
    // [40, 44) is 2 KiB, below the 4 KiB granularity: ext4 skips it. The
    // others are remapped by the partition start 2048: 2064 and 4096.
    let want = vec![q(2064, 8, "DS"), q(4096, 2048, "DS")];
    assert_eq!(queued(text, &[], "sda"), want);
}

#[test]
fn generated_free_space_is_deterministic_and_inside_the_device() {
    let text = r#"
seed = 7
[disks.sda]
kind = "sata"
size = "1GiB"
[workload]
type = "fstrim"
device = "sda"
free_space = { extents = 16, min = "4KiB", max = "64KiB" }
"#;
    let a = queued(text, &[], "sda");
    assert_eq!(a, queued(text, &[], "sda"));
    assert_eq!(a.len(), 16);
    // One extent per 64 MiB slice (1 GiB / 16 = 131,072 sectors), 8 to 128 sectors.
    for (i, (s, n, _)) in a.iter().enumerate() {
        assert!(*s >= i as u64 * 131_072 && s + *n as u64 <= (i as u64 + 1) * 131_072, "{i}: {s} + {n}");
        assert!((8..=128).contains(n) && n % 8 == 0);
    }
}

fn load_err(text: &str) -> String {
    scenario::load("d.toml", text, None, &[]).unwrap_err().to_string()
}

#[test]
fn refusals_name_the_key() {
    let e = load_err("[disks.sda]\nkind = \"hdd\"\nsize = \"1GiB\"\n[workload]\ntype = \"blkdiscard\"\ndevice = \"sda\"\n");
    assert!(e.starts_with("d.toml:6: workload.device: BLKDISCARD of 1073741824 bytes at 0: the device does not support it"), "{e}");
    let e = load_err(&format!("{NVME}[workload]\ntype = \"blkdiscard\"\ndevice = \"nvme0n1\"\nlength = \"9GiB\"\n"));
    assert!(e.starts_with("d.toml:10: workload.length: 0 + 9663676416 passes the end of nvme0n1"), "{e}");
    let e = load_err(&format!("{NVME}[workload]\ntype = \"fstrim\"\ndevice = \"nvme0n1\"\nextents = [[0, 8], [4, 8]]\n"));
    assert!(e.starts_with("d.toml:10: workload.extents: entry 2: overlaps the extent on line 1"), "{e}");
    let e = load_err(&format!("{NVME}[workload]\ntype = \"fstrim\"\ndevice = \"nvme0n1\"\n"));
    assert!(e.contains("give the free extents one way"), "{e}");
}

#[test]
fn extents_file_errors_carry_its_line() {
    let dir = std::env::temp_dir().join(format!("blkstack-extents-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("free.txt"), "# free\n0 8\n16\n").unwrap();
    let path = dir.join("s.toml");
    let text = format!("{NVME}[workload]\ntype = \"fstrim\"\ndevice = \"nvme0n1\"\nextents_file = \"free.txt\"\n");
    let e = scenario::load(path.to_str().unwrap(), &text, None, &[]).unwrap_err().to_string();
    let want = format!("workload.extents_file: {}:3: expected 'start length', found 1 field(s)", dir.join("free.txt").display());
    assert!(e.ends_with(&want), "{e}");
    std::fs::write(dir.join("free.txt"), "0 8\n16 8\n").unwrap();
    assert!(scenario::load(path.to_str().unwrap(), &text, None, &[]).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}
