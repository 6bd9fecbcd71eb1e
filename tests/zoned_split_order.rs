//! Seed 000's zoned variant (python/blkstack/scenarios/zoned-split-order.toml):
//! 16 sequential 2 MiB writes with an inline-encryption context to a
//! host-managed disk with 4 MiB zones (8192 sectors) and max_sectors_kb 512.
//!
//! Worked by hand, for one 2 MiB bio B at sector s (4096 sectors, 512
//! pages in one physically contiguous bvec), inside one mq submission loop:
//! * `__submit_bio(B)`: the crypto fallback counts 256 single-page
//!   segments = 1 MiB, splits off the front A = [s, s+2048) ('X' at
//!   s+2048) and puts the rest R = [s+2048, s+4096) at the tail: list [R].
//!   A is encrypted into a bounce bio; blk_mq_submit_bio cuts it at 512 KiB
//!   ('X' at s+1024): A1 = [s, s+1024) becomes a request, the remainder
//!   A2 = [s+1024, s+2048) is resubmitted: tail → [R, A2], head → [A2, R].
//! * tail: R is next. 256 pages: no crypto split; encrypted, cut at 512
//!   KiB: R1 = [s+2048, s+3072) issued, R2 at the tail → [A2, R2]; then
//!   A2, then R2. Issue order s, s+2048, s+1024, s+3072.
//! * head: A2 is issued next, then R → R1 issued, R2 at the head, issued.
//!   Issue order s, s+1024, s+2048, s+3072.
//!
//! Write pointers under tail, zone z starting at 8192·z with bios at its
//! start and middle: A1 ok (WP 1024), R1 at 2048 ≠ 1024: EIO, A2 ok (WP
//! 2048), R2 at 3072 ≠ 2048: EIO; the second bio's four pieces start at
//! 4096, 6144, 5120, 7168, all ≠ 2048: EIO. Per zone 2 ok and 6 EIO; over
//! 8 zones 16 ok and 48 EIO, and every one of the 16 writes fails. Under
//! head every piece starts at the WP: no errors.

mod common;

use blkstack::trace::Action;
use common::{issued, on, run_events};

const SCENARIO: &str = include_str!("../python/blkstack/scenarios/zoned-split-order.toml");

/// Per bio at s = 4096·k, the four issue offsets relative to s.
fn offsets(order: [u64; 4]) -> Vec<(u64, u32)> {
    (0..16u64).flat_map(|k| order.map(|o| (4096 * k + o, 1024))).collect()
}

#[test]
fn tail_issues_the_crypto_remainder_first_and_the_zone_refuses_it() {
    let (engine, events) = run_events(SCENARIO, &[]);
    assert_eq!(issued(&engine, &events, "sda"), offsets([0, 2048, 1024, 3072]));
    let sda = engine.core.topo.by_name("sda").unwrap() as usize;
    assert_eq!(engine.core.stats[sda].zone_write_errors, 48);
    assert_eq!(engine.jobs[0].errors, 16);
    // The failed requests complete with -EIO, in issue order: per zone R1
    // and R2 of its first bio, then all four pieces of its second.
    let failed: Vec<u64> = events.iter().filter(|e| e.action == Action::Complete && e.error == -5).map(|e| e.sector).collect();
    let expected: Vec<u64> = (0..8u64).flat_map(|z| [2048, 3072, 4096, 6144, 5120, 7168].map(|o| 8192 * z + o)).collect();
    assert_eq!(failed, expected);
    // Splits: one crypto-fallback cut per bio (at s+2048) and two blk-merge
    // cuts (s+1024 and s+3072): 48 'X'.
    assert_eq!(on(&engine, &events, "sda", Action::Split).len(), 48);
}

#[test]
fn head_issues_in_order_without_errors() {
    let (engine, events) = run_events(SCENARIO, &["behaviour.split_remainder=head"]);
    assert_eq!(issued(&engine, &events, "sda"), offsets([0, 1024, 2048, 3072]));
    let sda = engine.core.topo.by_name("sda").unwrap() as usize;
    assert_eq!(engine.core.stats[sda].zone_write_errors, 0);
    assert_eq!(engine.jobs[0].errors, 0);
    assert!(events.iter().all(|e| e.error == 0));
}

#[test]
fn without_the_crypt_context_there_is_one_split_per_512k_and_no_error() {
    // No crypto fallback: blk-merge alone cuts each 2 MiB bio three times,
    // each remainder the next piece: in order under tail too.
    let text = SCENARIO.replace("crypt = true", "crypt = false");
    let (engine, events) = run_events(&text, &[]);
    assert_eq!(issued(&engine, &events, "sda"), offsets([0, 1024, 2048, 3072]));
    let sda = engine.core.topo.by_name("sda").unwrap() as usize;
    assert_eq!(engine.core.stats[sda].zone_write_errors, 0);
}

#[test]
fn the_blkparse_completion_shows_the_errno_as_blktrace_stores_it() {
    // struct blk_io_trace's error is a __u16: -EIO prints as 65531.
    let (engine, events) = run_events(SCENARIO, &[]);
    let ev = events.iter().find(|e| e.action == Action::Complete && e.error != 0).unwrap();
    let ctx = blkstack::trace::TraceCtx { topo: &engine.core.topo, tasks: &engine.core.tasks };
    let mut out = Vec::new();
    blkstack::trace::blkparse::format_event(ev, 1, &ctx, &mut out).unwrap();
    let line = String::from_utf8(out).unwrap();
    assert!(line.trim_end().ends_with("C   W 2048 + 1024 [65531]"), "{line}");
}

#[test]
fn crypt_writes_pass_the_checks_on_a_disk_and_through_md() {
    // The fallback runs in md0's __submit_bio too (blk_crypto_bio_prep is
    // first in every __submit_bio): there the bounce bio's pieces are the
    // first to reach the members, and conservation must see each sector
    // exactly once, as it must on the zoned disk above (checked without
    // errors under head).
    let md = r#"
[disks.sda]
kind = "nvme"
size = "1GiB"
[disks.sdb]
kind = "nvme"
size = "1GiB"
[md.md0]
level = 0
chunk = "64KiB"
members = ["sda", "sdb"]
[workload]
type = "bios"
device = "md0"
iodepth = 4
[[workload.bio]]
op = "write"
sector = 0
size = "3MiB"
crypt = true
repeat = 8
"#;
    for (text, sets) in [(md, &[][..]), (SCENARIO, &["behaviour.split_remainder=head"][..])] {
        let (engine, _) = run_events(text, sets);
        assert!(engine.core.check.violations.is_empty(), "{:?}", engine.core.check.violations);
        assert!(engine.core.check.roots_checked > 0);
    }
}
