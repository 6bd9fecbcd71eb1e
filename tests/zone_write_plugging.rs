//! Zone write plugging (block/blk-zoned.c, 6.10+; switch
//! `zone_write_plugging`) on a host-managed SCSI disk with 4 MiB zones
//! (8192 sectors), no scheduler, kernel 6.12. Each test works its figures
//! out by hand from the rules in src/zoned.rs and names the 6.1 outcome
//! (the switch off: only the device checks the write pointer) beside it.

mod common;

use blkstack::trace::{Action, Event};
use common::{issued, run_events};

/// A zoned disk and a `bios` workload of `iodepth` with `extra` workload
/// lines and the `[[workload.bio]]` entries `bios`.
fn zoned(iodepth: u32, extra: &str, bios: &str) -> String {
    format!(
        r#"kernel = "6.12"
[disks.sda]
kind = "scsi"
size = "64MiB"
[disks.sda.queue]
zoned = "host-managed"
chunk_sectors = 8192
scheduler = "none"
[workload]
type = "bios"
device = "sda"
iodepth = {iodepth}
{extra}
{bios}"#
    )
}

/// One 4 KiB write at `sector`.
fn w(sector: u64) -> String {
    format!("[[workload.bio]]\nop = \"write\"\nsector = {sector}\nsize = 4096\n")
}

const OFF: &[&str] = &["behaviour.zone_write_plugging=false"];

fn stats(e: &blkstack::engine::Engine) -> &blkstack::stats::DevStats {
    &e.core.stats[e.core.topo.by_name("sda").unwrap() as usize]
}

/// (sector, sectors, error) of every 'C'.
fn completions(events: &[Event]) -> Vec<(u64, u32, i32)> {
    events.iter().filter(|e| e.action == Action::Complete).map(|e| (e.sector, e.sectors(), e.error)).collect()
}

#[test]
fn a_refused_write_makes_the_zone_refuse_every_later_one() {
    // One at a time: [0,8) creates zone 0's plug (WP 0), passes, WP 8.
    // [16,8) finds the zone unplugged and fails the check (16 ≠ 8): -EIO
    // before the device, and since the bio already counts as plugged its
    // end_io marks the zone NEED_WP_UPDATE. [8,8) is at the WP but fails
    // for that flag. One request; two zone write errors, both the plug's.
    let text = zoned(1, "", &[w(0), w(16), w(8)].concat());
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 8)]);
    let s = stats(&e);
    assert_eq!((s.zone_write_errors, s.zone_wplug_errors, e.jobs[0].errors), (2, 2, 2));
    // The refused bios were queued ('Q'): each gets its 'C' with -EIO, and
    // no 'G', 'I' or 'D'; diskstats counts the one write.
    assert_eq!(completions(&ev), vec![(0, 8, 0), (16, 8, -5), (8, 8, -5)]);
    assert_eq!(ev.iter().filter(|x| x.action == Action::GetRq).count(), 1);
    assert_eq!(e.core.diskstats(0)[4], 1);
    // 6.1: the device refuses [16,8) at issue and takes [8,8): one error,
    // three requests.
    let (e, ev) = run_events(&text, OFF);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 8), (16, 8), (8, 8)]);
    assert_eq!((stats(&e).zone_write_errors, stats(&e).zone_wplug_errors), (1, 0));
}

#[test]
fn a_device_error_aborts_the_plugged_writes() {
    // Three writes at once to empty zone 1 (8192), none at its start.
    // [8208,8) finds no plug: the new plug trusts it (WP 16), it passes,
    // WP 24, the zone is plugged, and it is issued. [8216,8) and [8224,8)
    // wait on the plug. The device's WP is 0: it refuses [8208,8); that
    // bio's end_io fails both plugged bios and marks the zone
    // NEED_WP_UPDATE, so [8192,8), at the device's WP, fails after them.
    let text = zoned(3, "", &[w(8208), w(8216), w(8224)].concat());
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(8208, 8)]);
    assert_eq!((stats(&e).zone_write_errors, stats(&e).zone_wplug_errors), (3, 2));
    // The request's 'C' first, then the aborted bios' in plug order.
    assert_eq!(completions(&ev), vec![(8208, 8, -5), (8216, 8, -5), (8224, 8, -5)]);
    let then = zoned(1, "", &[w(8208), w(8192)].concat());
    let (e, ev) = run_events(&then, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(8208, 8)]);
    assert_eq!((stats(&e).zone_write_errors, stats(&e).zone_wplug_errors), (2, 1));
    // 6.1: all three reach the device, which refuses all three (its WP
    // stays 0); [8192,8) then succeeds.
    let (e, _) = run_events(&text, OFF);
    assert_eq!((stats(&e).zone_write_errors, stats(&e).issued), (3, 3));
    let (e, _) = run_events(&then, OFF);
    assert_eq!((stats(&e).zone_write_errors, stats(&e).issued), (1, 2));
}

#[test]
fn plugged_writes_are_issued_one_at_a_time_and_merged_when_the_zone_unplugs() {
    // iodepth 3, no task plug; 6.12 gives each __submit_bio its own plug,
    // flushed at its end, so [0,8) is issued at once (zone 0 plugged, WP
    // 8). [8,8) and [16,8) wait on the zone's plug. When [0,8) completes
    // the plug's work item (a kworker) takes [8,8): at the WP, WP 16, a
    // request; blk_zone_write_plug_init_request merges [16,8), which
    // continues it (WP 24). Two requests: [0,8), then [8,16).
    let text = zoned(3, "", &[w(0), w(8), w(16)].concat());
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 8), (8, 16)]);
    assert_eq!(stats(&e).zone_write_errors, 0);
    // The second request is the kworker's: 'G', 'M' and 'D' by task 1.
    let kw: Vec<Action> = ev.iter().filter(|x| x.task == 1 && x.sector >= 8).map(|x| x.action).collect();
    assert_eq!(kw, vec![Action::GetRq, Action::BackMerge, Action::Issue]);
    // Without plugging the three are issued as they come: three requests.
    let (e, ev) = run_events(&text, OFF);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 8), (8, 8), (16, 8)]);
}

#[test]
fn back_merges_move_the_plugs_write_pointer() {
    // 16 sequential 4 KiB writes, 8 per plugged submission (iodepth 8).
    // First batch: [0,8) passes (WP 8) and is held in the task's plug;
    // the next seven back-merge into it, each moving the WP by 8: WP 64.
    // The second batch waits for the first to complete (iodepth); by then
    // the zone is unplugged, and [64,8) is at the WP. Two 32 KiB requests,
    // no errors: without the WP moving on merges [64,8) would fail.
    let bios: String = (0..16).map(|i| w(8 * i)).collect();
    let text = zoned(8, "batch = 8\nplug = true", &bios);
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 64), (64, 64)]);
    assert_eq!(stats(&e).zone_write_errors, 0);
}

#[test]
fn out_of_order_submission_is_counted_per_zone() {
    // Zone 0 gets [0,8), [16,8), [8,8): the third starts below the second,
    // so zone 0 is out of order. Zone 1 gets [8192,8), [8200,8): in order.
    // Counted where blk_mq_submit_bio receives the bios, under either rule.
    let text = zoned(1, "", &[w(0), w(16), w(8), w(8192), w(8200)].concat());
    for sets in [&[][..], OFF] {
        let (e, _) = run_events(&text, sets);
        assert_eq!((stats(&e).zones_written, stats(&e).zones_out_of_order), (2, 1), "{sets:?}");
    }
}

#[test]
fn a_full_zones_plug_is_freed_and_a_new_one_trusts_the_next_write() {
    // One zone written whole in 4 MiB (8192 sectors; max_sectors_kb 4096
    // keeps it one request): WP 8192, full, so the plug is freed when the
    // request ends. A write at 4096 then gets a fresh plug whose WP is
    // 4096: it passes and reaches the device, which refuses it (full).
    let text = zoned(1, "", "[[workload.bio]]\nop = \"write\"\nsector = 0\nsize = \"4MiB\"\n").replace(
        "scheduler = \"none\"",
        "scheduler = \"none\"\nmax_sectors_kb = 4096",
    ) + &w(4096);
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 8192), (4096, 8)]);
    assert_eq!((stats(&e).zone_write_errors, stats(&e).zone_wplug_errors), (1, 0));
}

#[test]
fn writes_to_conventional_zones_are_not_plugged() {
    // Zone 0 is conventional: three writes out of order at iodepth 3 are
    // all issued as they come, and the device takes them.
    let text = zoned(3, "", &[w(16), w(0), w(8)].concat()).replace("scheduler = \"none\"", "scheduler = \"none\"\nconventional_zones = 1");
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(16, 8), (0, 8), (8, 8)]);
    assert_eq!((stats(&e).zone_write_errors, stats(&e).zones_written), (0, 0));
}

#[test]
fn an_empty_write_passes_through_the_plug() {
    // A zero-length write at sector 0 (no flush flag, so it is plugged):
    // it straddles nothing, the new plug's WP is 0, the check passes and
    // leaves it at 0; the request ends and the plug (WP 0) is freed. Then
    // [0,8) gets a fresh plug and passes too. No error.
    let text = zoned(1, "", &format!("[[workload.bio]]\nop = \"write\"\nsector = 0\nsize = 0\n{}", w(0)));
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 0), (0, 8)]);
    assert_eq!(stats(&e).zone_write_errors, 0);
}
