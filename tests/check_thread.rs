//! The checks on a thread of their own find what they find inline: the
//! same run with the checks moved to their thread at the first hook and
//! kept on the engine's thread throughout gives the same report, word for
//! word, and the same counts.

use blkstack::check::layout::Layout;
use blkstack::engine::Engine;
use blkstack::md::personality::{MdMember, Personality};
use blkstack::scenario;

/// md0: raid10 near 2 over four NVMe disks (64 KiB chunks), written with
/// 1 MiB O_DIRECT writes then read back, then discarded whole: writes,
/// reads and a stacked discard, a few thousand hooks.
const RAID10: &str = r#"
kernel = "6.12"
[disks.nvme0n1]
kind = "nvme"
size = "64MiB"
[disks.nvme1n1]
kind = "nvme"
size = "64MiB"
[disks.nvme2n1]
kind = "nvme"
size = "64MiB"
[disks.nvme3n1]
kind = "nvme"
size = "64MiB"
[md.md0]
level = 10
layout = "n2"
chunk = "64KiB"
members = ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
[[steps]]
type = "dd"
if = "/dev/zero"
of = "/dev/md0"
bs = "1M"
count = 48
oflag = "direct"
[[steps]]
type = "dd"
if = "/dev/md0"
of = "/dev/null"
bs = "1M"
count = 48
iflag = "direct"
[[steps]]
type = "blkdiscard"
device = "/dev/md0"
"#;

/// Build the scenario; `wrong`: check md0 against a raid1 of its members
/// (every sector on all four at its own offset), which raid10's two
/// copies of each chunk, at other offsets, break at every write, read and
/// discard; `oracle`: the integrity oracle too. `after`: hooks before the
/// checks move to their thread.
fn run(wrong: bool, oracle: bool, after: u64) -> Engine {
    let sc = scenario::load("raid10.toml", RAID10, None, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut e = sc.build();
    if wrong {
        let md = e.core.topo.by_name("md0").expect("md0");
        let members = (0..4).map(|i| MdMember { dev: e.core.topo.by_name(&format!("nvme{i}n1")).expect("member"), data_offset: 0 }).collect();
        e.core.check.set_layout(md, Layout::Md { pers: Personality::Raid1 { sectors: 1 << 17 }, members });
    }
    if oracle {
        e.core.check.enable_oracle();
    }
    e.core.check_thread_after = after;
    e.run();
    e
}

/// Report, violations, roots checked and unchecked.
fn findings(e: &Engine) -> (Option<String>, u64, u64, u64) {
    let c = &e.core.check;
    (c.failure_report(), c.violation_count, c.roots_checked, c.roots_unchecked)
}

#[test]
fn a_thread_finds_what_the_engine_thread_finds() {
    for (wrong, oracle) in [(false, false), (true, false), (false, true), (true, true)] {
        let (inline, threaded) = (findings(&run(wrong, oracle, u64::MAX)), findings(&run(wrong, oracle, 0)));
        assert_eq!(threaded, inline, "wrong layout {wrong}, oracle {oracle}");
        // 48 writes, 48 reads and one discard, each a root checked.
        assert_eq!(inline.2, 97, "wrong layout {wrong}, oracle {oracle}");
        // The right layout passes; the wrong one fails.
        assert_eq!(inline.1 > 0, wrong, "{:?}", inline.0);
    }
}
