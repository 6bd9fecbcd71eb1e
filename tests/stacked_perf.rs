//! The full-size raid10 discard of spec §4.4: a BLKDISCARD of a 4 × 1.9 TB
//! near-2 array, on ≤5.12 (one md bio per 512 KiB chunk, about 7.2
//! million) and on 5.13+ (one discard per member range). Ignored by
//! default — it measures, it does not test speed; run it with
//!
//! ```text
//! cargo test --release --test stacked_perf -- --ignored --nocapture
//! ```
//!
//! The array: members of 3710937500 sectors with data at 264192 (see
//! stacked_discard.rs) leave 3710673308 sectors, 3623704 whole chunks;
//! near-2 over 4 members gives 3623704·4/2 chunks = 7421345792 sectors. The
//! discard is cut as 4.19–5.9's `__blkdev_issue_discard` would for a
//! 512 KiB granularity: 884 bios of 8387584 sectors (8191 chunks, the
//! largest whole number of chunks under UINT_MAX bytes) and one of the
//! remaining 6721536.

use std::time::Instant;

const ARRAY: u64 = 7_421_345_792;
const ROOT: u64 = 8_387_584;

fn scenario(kernel: &str, mode: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n[behaviour]\nraid10_discard = \"{mode}\"\n");
    for d in ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"] {
        s += &format!("[disks.{d}]\nkind = \"nvme\"\nsize = \"1.9TB\"\n");
    }
    s += "[md.md0]\nlevel = 10\nmembers = [\"nvme0n1\", \"nvme1n1\", \"nvme2n1\", \"nvme3n1\"]\n";
    s += "[workload]\ntype = \"bios\"\ndevice = \"md0\"\niodepth = 1\n";
    s += &format!("[[workload.bio]]\nop = \"discard\"\nsector = 0\nsize = \"{ROOT}s\"\nrepeat = 884\n");
    s += &format!("[[workload.bio]]\nop = \"discard\"\nsector = {}\nsize = \"{}s\"\n", 884 * ROOT, ARRAY - 884 * ROOT);
    s
}

fn cpu_seconds() -> f64 {
    // utime of this process from /proc/self/stat (fields 14 and 15 are utime, stime in ticks).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn run(kernel: &str, mode: &str) -> blkstack::engine::Engine {
    let sc = blkstack::scenario::load("perf.toml", &scenario(kernel, mode), None, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut e = sc.build();
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let st = e.run();
    let md = e.core.topo.by_name("md0").unwrap();
    let member_requests: u64 = (0..4).map(|i| e.core.stats[e.core.topo.by_name(&format!("nvme{i}n1")).unwrap() as usize].issued).sum();
    println!(
        "{kernel} {mode}: wall {:.2} s, cpu {:.2} s, {} bios ({} md bios, {} member requests), peak {} live bios, {:.1} s simulated",
        wall.elapsed().as_secs_f64(),
        cpu_seconds() - cpu,
        st.bios,
        e.core.stats[md as usize].splits + 885,
        member_requests,
        st.peak_live_bios,
        st.sim_time_ns as f64 / 1e9
    );
    assert_eq!(e.core.check.failure_report(), None);
    assert_eq!(e.core.topo.dev(md).nr_sectors, ARRAY);
    e
}

#[test]
#[ignore]
fn full_size_raid10_discard_old_behaviour() {
    // One md bio per chunk: 7421345792 / 1024 = 7247408; 885 came from the workload, the rest are
    // md's splits. Two copies each: 3623704 member discards per member.
    let e = run("6.1", "chunk_limited");
    let md = e.core.topo.by_name("md0").unwrap();
    assert_eq!(e.core.stats[md as usize].splits, 7_247_408 - 885);
    let m = e.core.topo.by_name("nvme2n1").unwrap();
    assert_eq!(e.core.stats[m as usize].queued, 3_623_704);
}

#[test]
#[ignore]
fn full_size_raid10_discard_new_behaviour() {
    // Stripe = 4/2 · 1024 = 2048. 8387584 = 4095·2048 + 1024, so root r starts 1024 into a stripe when
    // r is odd (a one-chunk head) and ends 1024 into one when r is even (a one-chunk tail); the last root
    // (r = 884) starts on a stripe and ends at the array end, a whole stripe. So 884 one-chunk fragments,
    // each split off ('X') and sent the write path (2 copies), and 885 middles of one discard per member:
    // 885·4 + 884·2 = 5308 member discards.
    let e = run("6.12", "whole_range");
    let md = e.core.topo.by_name("md0").unwrap();
    assert_eq!(e.core.stats[md as usize].splits, 884);
    let queued: u64 = (0..4).map(|i| e.core.stats[e.core.topo.by_name(&format!("nvme{i}n1")).unwrap() as usize].queued).sum();
    assert_eq!(queued, 5308);
}
