//! `[validate] disk_latency_ms` (src/scenario/validate.rs): every disk is
//! a fixed-latency device, as `blkstack validate`'s slow disks are in the
//! guest (nbdkit's delay filter behind QEMU's NBD client, which keeps 16
//! requests in flight per disk). Times worked out by hand from that rule.

use blkstack::scenario;
use blkstack::trace::{Action, Event};

const MS: u64 = 1_000_000;

/// One virtio disk without a scheduler, `validate` and `workload` tables
/// appended as given.
fn scenario(validate: &str, workload: &str) -> String {
    format!(
        "seed = 1\n{validate}\n[disks.vda]\nkind = \"virtio\"\nsize = \"1GiB\"\n\
         [disks.vda.queue]\nscheduler = \"none\"\n{workload}"
    )
}

fn run(text: &str) -> Vec<Event> {
    let sc = scenario::load("v.toml", text, None, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = sc.build();
    engine.core.tracer.keep_log();
    engine.run();
    engine.core.tracer.log.take().unwrap().events
}

fn times(events: &[Event], action: Action) -> Vec<u64> {
    events.iter().filter(|e| e.action == action).map(|e| e.time).collect()
}

/// One 128 KiB O_DIRECT read at sector 0.
const ONE_READ: &str = "[workload]\ntype = \"bios\"\ndevice = \"vda\"\n\
     [[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"128KiB\"\n";

#[test]
fn a_lone_read_completes_exactly_the_latency_after_its_issue() {
    // Issued at 0 (no host CPU time), it takes one of the 16 free slots,
    // waits 20 ms and moves its data in no time: C at exactly 20 ms.
    let ev = run(&scenario("[validate]\ndisk_latency_ms = 20", ONE_READ));
    assert_eq!(times(&ev, Action::Issue), vec![0]);
    assert_eq!(times(&ev, Action::Complete), vec![20 * MS]);
    // The same for a write, 7 ms.
    let write = ONE_READ.replace("\"read\"", "\"write\"");
    let ev = run(&scenario("[validate]\ndisk_latency_ms = 7", &write));
    assert_eq!(times(&ev, Action::Complete), vec![7 * MS]);
}

#[test]
fn without_the_key_or_at_zero_the_disk_keeps_its_preset() {
    // The virtio preset: 60 µs access, then 128 KiB at 2 GB/s
    // (131072 · 10⁹ / 2·10⁹ = 65536 ns): C at 125536 ns.
    for validate in ["", "[validate]\ndisk_latency_ms = 0"] {
        let ev = run(&scenario(validate, ONE_READ));
        assert_eq!(times(&ev, Action::Complete), vec![60_000 + 65_536], "{validate:?}");
    }
}

#[test]
fn reads_beyond_sixteen_in_flight_are_served_in_waves_of_sixteen() {
    // 40 reads of 4 KiB, 8 sectors apart with 8 sectors between (no
    // merges), all submitted at 0 with 40 in flight: the device starts 16,
    // the next 16 as those end at 20 ms, the last 8 at 40 ms.
    let wl = "[workload]\ntype = \"bios\"\ndevice = \"vda\"\niodepth = 40\n\
              [[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"4KiB\"\nrepeat = 40\nstride = 16\n";
    let ev = run(&scenario("[validate]\ndisk_latency_ms = 20", wl));
    assert_eq!(times(&ev, Action::Issue), vec![0; 40]);
    let mut done = times(&ev, Action::Complete);
    done.sort_unstable();
    let want: Vec<u64> = [20 * MS; 16].into_iter().chain([40 * MS; 16]).chain([60 * MS; 8]).collect();
    assert_eq!(done, want);
}

#[test]
fn a_model_table_still_applies_its_iops_cap() {
    // iops = 10 admits a command every 100 ms (QEMU's throttling, before
    // the NBD client): two reads submitted together at 0 are admitted at 0
    // and 100 ms, and each ends 20 ms after its admission.
    let wl = "[workload]\ntype = \"bios\"\ndevice = \"vda\"\niodepth = 2\n\
              [[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"4KiB\"\nrepeat = 2\nstride = 16\n";
    let text = scenario("[validate]\ndisk_latency_ms = 20", wl).replace("[workload]", "[disks.vda.model]\niops = 10\n[workload]");
    let ev = run(&text);
    let mut done = times(&ev, Action::Complete);
    done.sort_unstable();
    assert_eq!(done, vec![20 * MS, 120 * MS]);
}

#[test]
fn bad_values_name_the_file_line_and_key() {
    for (value, msg) in [("-1", "negative"), ("20000", "at most 10000 ms"), ("\"20ms\"", "integer"), ("1.5", "integer")] {
        let text = scenario(&format!("[validate]\ndisk_latency_ms = {value}"), ONE_READ);
        let err = scenario::load("v.toml", &text, None, &[]).unwrap_err().to_string();
        assert!(err.starts_with("v.toml:3: validate.disk_latency_ms:"), "{err}");
        assert!(err.contains(msg), "{err}");
    }
    let text = scenario("[validate]\ndisk_latency = 20", ONE_READ);
    let err = scenario::load("v.toml", &text, None, &[]).unwrap_err().to_string();
    assert!(err.starts_with("v.toml:3: validate.disk_latency: unknown key"), "{err}");
}
