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
//!   ('X' at s+1024): A1 = [s, s+1024) goes on, the remainder
//!   A2 = [s+1024, s+2048) is resubmitted ('Q'): tail → [R, A2], head → [A2, R].
//! * tail: R is next. 256 pages: no crypto split; encrypted, cut at 512
//!   KiB: R1 = [s+2048, s+3072) goes on, R2 ('Q') at the tail → [A2, R2];
//!   then A2, then R2. Order reaching the zone: s, s+2048, s+1024, s+3072.
//! * head: A2 next, then R → R1, R2 at the head. Order s, s+1024, s+2048,
//!   s+3072.
//!
//! The bounce bios get no 'Q' of their own, and neither do their split
//! fronts A1 and R1 (a split front is traced only if its bio was): A1 and
//! R1 get no bio 'C' either; A2 and R2, resubmitted, do. The plaintext
//! bios do too: A inherits B's `BIO_TRACE_COMPLETION` through bio_split and
//! R is B, and blk_crypto_fallback_encrypt_endio ends each with bio_endio
//! outside any request. A's 'C' follows its bounce bio's last piece (A2);
//! R, A's chain parent, ends after both A and its own bounce bio (R2),
//! with the first error either carried.
//!
//! 6.12 (zone write plugging), tail, zone z starting at s = 8192·z; its
//! first bio B at s, its second B' at s+4096:
//! * A1 finds no plug for zone z: the new plug trusts it (WP 0), it passes
//!   (WP 1024), the zone is plugged and A1 becomes a request, issued ('G',
//!   'D'). R1, A2, R2 find the zone plugged: onto its bio list, in that
//!   order, no 'G'.
//! * A1 completes: the plug's work item (kworker) pops R1: 2048 ≠ WP 1024,
//!   -EIO (untraced: no 'C'; the error goes to R2, its chain parent). It
//!   pops A2: at the WP, WP 2048, a request, issued by the kworker.
//! * A2 completes: 'C' for A (s, 2048 sectors, no error). The work item
//!   pops R2: 3072 ≠ 2048, -EIO, 'C' at s+3072 [65531], then R's 'C' (s+2048,
//!   2048 sectors) with R1's error. B ends with it. The list is empty:
//!   unplugged.
//! * B' (s+4096): A1' finds the zone unplugged and fails the check (4096 ≠
//!   2048): -EIO, and the zone is marked NEED_WP_UPDATE (the bio counted as
//!   plugged), so R1', A2' (s+5120, 'C', then A' at s+4096), R2' (s+7168,
//!   'C', then R' at s+6144) fail too.
//!
//! Per zone 2 requests (A1, A2, in order) and 6 bios failed before the
//! device; over 8 zones 16 requests, 48 zone write errors, all 16 writes
//! fail, and every zone's writes came out of order.
//!
//! 7.2 (the fallback above the block layer, `crypto_fallback`): B itself is
//! never submitted. It is encrypted into two bounce bios E1 = [s, s+2048)
//! and E2 = [s+2048, s+4096) of 256 pages each, submitted one after the
//! other, each with a 'Q' and a submission loop of its own. E1 is cut at
//! 512 KiB ('X'): E1a = [s, s+1024) becomes a request (the zone's plug trusts
//! or matches it), its remainder E1b waits on the plug; then E2 is cut the
//! same way, E2a and E2b wait behind E1b. Each completion lets the plug's
//! work item issue the next, at the WP: s, s+1024, s+2048, s+3072, no
//! errors, whichever end of current->bio_list a remainder goes to (each
//! loop holds one remainder at a time). Per write 2 'Q' and 2 'X'.
//!
//! 6.1 (no zone write plugging, as 6.12 with the switch off): every piece
//! is issued in the order above and the device checks its WP. A1 ok (WP
//! 1024), R1 at 2048 ≠ 1024: EIO, A2 ok (WP 2048), R2 at 3072 ≠ 2048: EIO;
//! B's four pieces start at 4096, 6144, 5120, 7168, all ≠ 2048: EIO. Per
//! zone 2 ok and 6 EIO; over 8 zones 16 ok and 48 EIO. Under head every
//! piece starts at the WP: no errors either way.

mod common;

use blkstack::trace::Action;
use common::{issued, on, run_events};

const SCENARIO: &str = include_str!("../python/blkstack/scenarios/zoned-split-order.toml");

/// Per bio at s = 4096·k, the four issue offsets relative to s.
fn offsets(order: [u64; 4]) -> Vec<(u64, u32)> {
    (0..16u64).flat_map(|k| order.map(|o| (4096 * k + o, 1024))).collect()
}

fn sda(engine: &blkstack::engine::Engine) -> &blkstack::stats::DevStats {
    &engine.core.stats[engine.core.topo.by_name("sda").unwrap() as usize]
}

/// Per zone z, `offsets` from its start 8192·z, 1024 sectors each.
fn per_zone(offsets: &[u64]) -> Vec<(u64, u32)> {
    per_zone_sized(&offsets.iter().map(|&o| (o, 1024)).collect::<Vec<_>>())
}

/// Per zone z, (offset from its start 8192·z, sectors).
fn per_zone_sized(pieces: &[(u64, u32)]) -> Vec<(u64, u32)> {
    (0..8u64).flat_map(|z| pieces.iter().map(move |&(o, n)| (8192 * z + o, n))).collect()
}

/// (sector, sectors) of every 'C' that carries -EIO.
fn failed(events: &[blkstack::trace::Event]) -> Vec<(u64, u32)> {
    events.iter().filter(|e| e.action == Action::Complete && e.error == -5).map(|e| (e.sector, e.sectors())).collect()
}

#[test]
fn zone_write_plugging_holds_the_crypto_remainder_and_refuses_it() {
    let (engine, events) = run_events(SCENARIO, &[]);
    // Only A1 and A2 of each zone's first bio reach the device, in order;
    // A2 by the zone write plug's work item (the kworker, task 1).
    assert_eq!(issued(&engine, &events, "sda"), per_zone(&[0, 1024]));
    assert_eq!(on(&engine, &events, "sda", Action::GetRq), per_zone(&[0, 1024]));
    let by_kworker: Vec<(u64, u32)> = events.iter().filter(|e| e.action == Action::Issue && e.task == 1).map(|e| (e.sector, e.sectors())).collect();
    assert_eq!(by_kworker, per_zone(&[1024]));
    let s = sda(&engine);
    assert_eq!((s.zone_write_errors, s.zone_wplug_errors), (48, 48));
    assert_eq!(engine.jobs[0].errors, 16);
    // Failed bios with a 'Q' of their own, or their plaintext bio's: R2
    // then R, A2' then A', R2' then R' (R1, A1', R1' are untraced split
    // fronts of bounce bios).
    let plaintext = [(3072, 1024), (2048, 2048), (5120, 1024), (4096, 2048), (7168, 1024), (6144, 2048)];
    assert_eq!(failed(&events), per_zone_sized(&plaintext));
    // Nothing refused reached diskstats: 16 writes of 1024 sectors.
    let ds = engine.core.diskstats(engine.core.topo.by_name("sda").unwrap());
    assert_eq!((ds[4], ds[6]), (16, 16 * 1024));
    assert_eq!((s.zones_written, s.zones_out_of_order), (8, 8));
    // Splits: one crypto-fallback cut per bio (at s+2048) and two blk-merge
    // cuts (s+1024 and s+3072): 48 'X'; 'Q' for B, A2 and R2: 48.
    assert_eq!(on(&engine, &events, "sda", Action::Split).len(), 48);
    assert_eq!(on(&engine, &events, "sda", Action::Queue).len(), 48);
}

#[test]
fn without_zone_write_plugging_the_device_refuses_the_crypto_remainder() {
    // 6.12 with the switch off, and 6.1: the pre-plugging rule.
    let kernel_6_1 = SCENARIO.replace("kernel = \"6.12\"", "kernel = \"6.1\"");
    for (text, sets) in [(SCENARIO, &["behaviour.zone_write_plugging=false"][..]), (kernel_6_1.as_str(), &[][..])] {
        let (engine, events) = run_events(text, sets);
        assert_eq!(issued(&engine, &events, "sda"), offsets([0, 2048, 1024, 3072]));
        let s = sda(&engine);
        assert_eq!((s.zone_write_errors, s.zone_wplug_errors), (48, 0));
        assert_eq!(engine.jobs[0].errors, 16);
        // The failed requests complete with -EIO, in issue order: per zone
        // R1 and R2 of its first bio (then R, once A is done: A1 and A2
        // succeed a device latency later), then all four pieces of its
        // second, A' after A2', R' after R2'.
        let expected = [
            (2048, 1024), (3072, 1024), (2048, 2048),
            (4096, 1024), (6144, 1024), (5120, 1024), (4096, 2048), (7168, 1024), (6144, 2048),
        ];
        assert_eq!(failed(&events), per_zone_sized(&expected));
        assert_eq!((s.zones_written, s.zones_out_of_order), (8, 8));
    }
}

#[test]
fn head_issues_in_order_without_errors() {
    for sets in [&["behaviour.split_remainder=head"][..], &["behaviour.split_remainder=head", "behaviour.zone_write_plugging=false"]] {
        let (engine, events) = run_events(SCENARIO, sets);
        assert_eq!(issued(&engine, &events, "sda"), offsets([0, 1024, 2048, 3072]), "{sets:?}");
        let s = sda(&engine);
        assert_eq!((s.zone_write_errors, s.zones_out_of_order), (0, 0));
        assert_eq!(engine.jobs[0].errors, 0);
        assert!(events.iter().all(|e| e.error == 0));
    }
}

#[test]
fn above_the_block_layer_the_bounce_bios_reach_the_zone_in_order() {
    let kernel_7_2 = SCENARIO.replace("kernel = \"6.12\"", "kernel = \"7.2\"");
    let cases: [(&str, &[&str]); 4] = [
        (&kernel_7_2, &[]),
        (&kernel_7_2, &["behaviour.split_remainder=tail"]),
        (&kernel_7_2, &["behaviour.split_remainder=tail", "behaviour.zone_write_plugging=false"]),
        // 6.12 with 7.x's fallback, tail and all.
        (SCENARIO, &["behaviour.crypto_fallback=above_block_layer"]),
    ];
    for (text, sets) in cases {
        let (engine, events) = run_events(text, sets);
        assert_eq!(issued(&engine, &events, "sda"), offsets([0, 1024, 2048, 3072]), "{sets:?}");
        let s = sda(&engine);
        assert_eq!((s.zone_write_errors, s.zones_out_of_order, engine.jobs[0].errors), (0, 0, 0), "{sets:?}");
        assert!(events.iter().all(|e| e.error == 0));
        // 'Q' for the two bounce bios of each write, never the plaintext.
        let q: Vec<(u64, u32)> = (0..16u64).flat_map(|k| [(4096 * k, 2048), (4096 * k + 2048, 2048)]).collect();
        assert_eq!(on(&engine, &events, "sda", Action::Queue), q, "{sets:?}");
        assert_eq!(on(&engine, &events, "sda", Action::Split).len(), 32);
    }
    // 7.2 with the fallback back in __submit_bio and tail: 6.12's figures.
    let (engine, events) = run_events(&kernel_7_2, &["behaviour.split_remainder=tail", "behaviour.crypto_fallback=in_submit_bio"]);
    assert_eq!(issued(&engine, &events, "sda"), per_zone(&[0, 1024]));
    assert_eq!(sda(&engine).zone_write_errors, 48);
}

#[test]
fn without_the_crypt_context_there_is_one_split_per_512k_and_no_error() {
    // No crypto fallback: blk-merge alone cuts each 2 MiB bio three times,
    // each remainder the next piece: in order under tail too.
    let text = SCENARIO.replace("crypt = true", "crypt = false");
    let (engine, events) = run_events(&text, &[]);
    assert_eq!(issued(&engine, &events, "sda"), offsets([0, 1024, 2048, 3072]));
    assert_eq!(sda(&engine).zone_write_errors, 0);
}

#[test]
fn the_blkparse_completion_shows_the_errno_as_blktrace_stores_it() {
    // struct blk_io_trace's error is a __u16: -EIO prints as 65531. The
    // first failure traced: with zone write plugging R2's bio 'C', without
    // it R1's request 'C'.
    for (sets, want) in [(&[][..], "C   W 3072 + 1024 [65531]"), (&["behaviour.zone_write_plugging=false"][..], "C   W 2048 + 1024 [65531]")] {
        let (engine, events) = run_events(SCENARIO, sets);
        let ev = events.iter().find(|e| e.action == Action::Complete && e.error != 0).unwrap();
        let ctx = blkstack::trace::TraceCtx { topo: &engine.core.topo, tasks: &engine.core.tasks };
        let mut out = Vec::new();
        blkstack::trace::blkparse::format_event(ev, 1, &ctx, &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.trim_end().ends_with(want), "{line}");
    }
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
    // Under 7.2's fallback the plaintext bio is the root and only its
    // bounce bios are queued anywhere.
    let above = &["behaviour.crypto_fallback=above_block_layer"][..];
    for (text, sets) in [(md, &[][..]), (md, above), (SCENARIO, &["behaviour.split_remainder=head"][..]), (SCENARIO, above)] {
        let (engine, _) = run_events(text, sets);
        assert!(engine.core.check.violations.is_empty(), "{:?}", engine.core.check.violations);
        assert!(engine.core.check.roots_checked > 0);
    }
}

#[test]
fn bounce_bios_left_when_the_submitter_sleeps_follow_when_it_wakes() {
    // 7.2, an NVMe disk with 4 tags (queue_depth 4, no scheduler) and
    // max_sectors_kb 512; one 4 MiB crypt write: bounce bios E1..E4 of
    // 1 MiB, two 512 KiB requests each. E1 and E2 take the 4 tags at once;
    // E3's first piece finds none and the task sleeps with E4 not yet
    // submitted. Each completion frees a tag for the next piece, in order:
    // 8 requests in sector order, the last 4 issued after the first
    // completions; the write ends without error once all 8 are done.
    // (Writeback throttling is off: on 4 tags it would hold this plain
    // write to wb_normal, (4 + 1) / 2 = 2 requests, before the tags do.)
    let text = r#"kernel = "7.2"
[disks.nvme0n1]
kind = "nvme"
size = "1GiB"
[disks.nvme0n1.queue]
max_sectors_kb = 512
queue_depth = 4
scheduler = "none"
wbt_lat_usec = 0
[workload]
type = "bios"
device = "nvme0n1"
[[workload.bio]]
op = "write"
sector = 0
size = "4MiB"
crypt = true
"#;
    let (engine, events) = run_events(text, &[]);
    let want: Vec<(u64, u32)> = (0..8u64).map(|i| (1024 * i, 1024)).collect();
    assert_eq!(issued(&engine, &events, "nvme0n1"), want);
    let times: Vec<u64> = events.iter().filter(|e| e.action == Action::Issue).map(|e| e.time).collect();
    assert!(times[..4].iter().all(|&t| t == 0) && times[4..].iter().all(|&t| t > 0), "{times:?}");
    assert_eq!((engine.jobs[0].units_done, engine.jobs[0].errors), (1, 0));
    assert!(engine.core.check.violations.is_empty(), "{:?}", engine.core.check.violations);
    assert_eq!(engine.core.check.roots_checked, 1);
}
