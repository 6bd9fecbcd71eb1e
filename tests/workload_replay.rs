//! Trace replay: a blkparse trace blkstack wrote, replayed on the same
//! stack, gives the same requests ('D') at the same times.

use std::path::{Path, PathBuf};

use blkstack::run::{run_file, Output, RunOptions};
use blkstack::scenario;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blkstack-replay-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run `text` as `dir/name.toml`, writing its blkparse trace; return the trace.
fn traced(dir: &Path, name: &str, text: &str) -> String {
    let scen = dir.join(format!("{name}.toml"));
    std::fs::write(&scen, text).unwrap();
    let trace = dir.join(format!("{name}.trace"));
    let opts = RunOptions { trace: Some(Output::File(trace.clone())), ..Default::default() };
    run_file(scen.to_str().unwrap(), &opts).unwrap_or_else(|e| panic!("{e}"));
    std::fs::read_to_string(trace).unwrap()
}

/// The 'D' lines without their per-device sequence numbers: device, time,
/// pid, action, RWBS, sector + size.
fn issued(trace: &str) -> Vec<String> {
    trace
        .lines()
        .filter(|l| l.split_whitespace().nth(5) == Some("D"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {}", f[0], f[3], f[5..].join(" "))
        })
        .collect()
}

/// Replay `stack`'s workload from its own trace, with the same stack.
fn round_trip(name: &str, stack: &str, workload: &str, timing: &str) -> (Vec<String>, Vec<String>) {
    let dir = tmp(name);
    let original = traced(&dir, "orig", &format!("{stack}{workload}"));
    let replay = format!("{stack}[workload]\ntype = \"replay\"\ntrace = \"orig.trace\"\ntiming = \"{timing}\"\n");
    let again = traced(&dir, "replay", &replay);
    std::fs::remove_dir_all(&dir).unwrap();
    (issued(&original), issued(&again))
}

/// Replay `trace` (written as `dir/t.txt`) on `stack`, with `keys` added
/// to the workload; the engine and every event.
fn replay_events(dir: &Path, stack: &str, keys: &str, trace: &str) -> (blkstack::engine::Engine, Vec<blkstack::trace::Event>) {
    std::fs::write(dir.join("t.txt"), trace).unwrap();
    let scen = dir.join("s.toml");
    let sc = scenario::load(scen.to_str().unwrap(), &format!("{stack}[workload]\ntype = \"replay\"\ntrace = \"t.txt\"\n{keys}"), None, &[]).unwrap();
    let mut engine = sc.build();
    engine.core.tracer.keep_log();
    engine.run();
    let ev = engine.core.tracer.log.take().unwrap().events;
    (engine, ev)
}

const PARTITIONED: &str = r#"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.queue]
max_sectors_kb = 128
[disks.sda.partitions.sda1]
start = 2048
size = "512MiB"
"#;

#[test]
fn dd_through_a_partition_replays_to_the_same_requests() {
    // 2 MiB O_DIRECT writes: 512 pages, two bios per call inside a plug,
    // each split to 256 sectors; the trace shows them on sda after the
    // partition remap ('A'), replayed on sda1.
    let dd = "[workload]\ntype = \"dd\"\nif = \"/dev/zero\"\nof = \"/dev/sda1\"\nbs = \"2M\"\ncount = 4\noflag = \"direct\"\n";
    for kernel in ["6.1", "6.12", "7.2"] {
        let stack = format!("kernel = \"{kernel}\"\n{PARTITIONED}");
        let (orig, again) = round_trip(&format!("dd{kernel}"), &stack, dd, "original");
        assert_eq!(orig.len(), 4 * 16, "{kernel}: 8 MiB in 128 KiB requests");
        assert_eq!(orig, again, "{kernel}");
    }
}

const RAID1: &str = r#"
kernel = "6.12"
[disks.sdb]
kind = "sata"
size = "1GiB"
[disks.sdc]
kind = "sata"
size = "1GiB"
[md.md0]
level = 1
members = ["sdb", "sdc"]
"#;

#[test]
fn fio_on_md_replays_to_the_same_requests() {
    // libaio random writes, 4 in flight in batches of 2, on raid1: the
    // trace's md0 'Q's are the roots; the members' clones ('A' from 9,0)
    // are made again by md.
    let fio = "[workload]\ntype = \"fio\"\njob = \"\"\"\n[w]\nfilename=/dev/md0\nrw=randwrite\ndirect=1\nioengine=libaio\niodepth=4\niodepth_batch_submit=2\nbs=16k\nnumber_ios=200\n\"\"\"\n";
    let (orig, again) = round_trip("fio", RAID1, fio, "original");
    assert_eq!(orig.len(), 2 * 200);
    assert_eq!(orig, again);
}

#[test]
fn asap_timing_keeps_the_order() {
    let fio = "[workload]\ntype = \"fio\"\njob = \"\"\"\n[w]\nfilename=/dev/md0\nrw=randwrite\ndirect=1\nbs=8k\nnumber_ios=50\n\"\"\"\n";
    let (orig, again) = round_trip("asap", RAID1, fio, "asap");
    // psync: one I/O at a time, replayed one at a time: same requests, same times.
    assert_eq!(orig, again);
}

#[test]
fn malformed_traces_name_the_line() {
    let dir = tmp("bad");
    std::fs::write(dir.join("t.txt"), "  8,0    0        1     0.000000000  4242  Q   W 0 + 8 [dd]\n  8,0    0        2     0.00000000x  4242  Q   W 8 + 8 [dd]\n").unwrap();
    let scen = dir.join("s.toml");
    let text = format!("{PARTITIONED}[workload]\ntype = \"replay\"\ntrace = \"t.txt\"\n");
    let e = scenario::load(scen.to_str().unwrap(), &text, None, &[]).unwrap_err().to_string();
    assert!(e.contains(&format!("workload.trace: {}:2: ", dir.join("t.txt").display())), "{e}");
    // A device the scenario lacks.
    std::fs::write(dir.join("t.txt"), "  8,48   0        1     0.000000000  4242  Q   W 0 + 8 [dd]\n").unwrap();
    let e = scenario::load(scen.to_str().unwrap(), &text, None, &[]).unwrap_err().to_string();
    assert!(e.contains(":1: device 8,48 is not in the scenario (map it with device_map)"), "{e}");
    // ... mapped by hand, and a bio past the end of the device.
    let mapped = format!("{text}device_map = {{ \"8,48\" = \"sda1\" }}\n");
    assert!(scenario::load(scen.to_str().unwrap(), &mapped, None, &[]).is_ok());
    std::fs::write(dir.join("t.txt"), "  8,48   0        1     0.000000000  4242  Q   W 1048576 + 8 [dd]\n").unwrap();
    let e = scenario::load(scen.to_str().unwrap(), &mapped, None, &[]).unwrap_err().to_string();
    assert!(e.contains(":1: 1048576 + 8 passes the end of sda1 (1048576 sectors)"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ftrace_text_replays_with_its_timing() {
    // Two bios 100 µs apart in the kernel's tracepoint text (6.12 layout);
    // the replay submits them at 0 and 100 µs (times relative to the first
    // event), from the traced process.
    let dir = tmp("ftrace");
    let text = "\
# tracer: nop
             fio-4242    [001] ..... 100.000000: block_bio_queue: 8,1 W 0 + 8 [fio]
             fio-4242    [001] ..... 100.000100: block_bio_queue: 8,1 WS 8 + 8 [fio]
";
    let (engine, ev) = replay_events(&dir, PARTITIONED, "", text);
    let q: Vec<(u64, u64, u32)> = ev.iter().filter(|e| e.action == blkstack::trace::Action::Queue).map(|e| (e.time, e.sector, e.sectors())).collect();
    // 8,1 is sda1 (start 2048): Q on sda after the partition remap.
    assert_eq!(q, [(0, 2048, 8), (100_000, 2056, 8)]);
    assert_eq!(engine.core.tasks.last().map(|t| (t.pid, t.comm.as_str())), Some((4242, "fio")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn devices_map_by_name_through_the_traced_machines_table() {
    // Debian's 6.1 guest: virtio_blk got the dynamic major 252 (vda 252,0,
    // vdb 252,16: 16 minors a disk) and device-mapper 254; blkstack numbers
    // its virtio disks 254,0 and 254,16. With the guest's /proc/partitions
    // the trace's 252,16 is vdb and 252,0 vda by name, and 254,0 is dm-0,
    // which this scenario lacks (not blkstack's own 254,0, vda).
    let dir = tmp("names");
    let trace = "\
             fio-4242    [001] ..... 100.000000: block_bio_queue: 252,16 W 0 + 8 [fio]
             fio-4242    [001] ..... 100.000100: block_bio_queue: 252,0 W 8 + 8 [fio]
";
    std::fs::write(dir.join("partitions"), "major minor  #blocks  name\n\n 252        0    1048576 vda\n 252       16    1048576 vdb\n 254        0     524288 dm-0\n").unwrap();
    let disks = "[disks.vda]\nkind = \"virtio\"\nsize = \"1GiB\"\n[disks.vdb]\nkind = \"virtio\"\nsize = \"1GiB\"\n";
    let (engine, ev) = replay_events(&dir, disks, "device_names = \"partitions\"\n", trace);
    let scen = dir.join("s.toml");
    let text = format!("{disks}[workload]\ntype = \"replay\"\ntrace = \"t.txt\"\ndevice_names = \"partitions\"\n");
    let name = |d| engine.core.topo.dev(d).name.clone();
    let q: Vec<(String, u64)> = ev.iter().filter(|e| e.action == blkstack::trace::Action::Queue).map(|e| (name(e.dev), e.sector)).collect();
    assert_eq!(q, [("vdb".to_string(), 0), ("vda".to_string(), 8)]);
    // The table's dm-0 is not blkstack's 254,0 (vda).
    std::fs::write(dir.join("t.txt"), "  254,0    0        1     0.000000000  4242  Q   W 0 + 8 [dd]\n").unwrap();
    let e = scenario::load(scen.to_str().unwrap(), &text, None, &[]).unwrap_err().to_string();
    assert!(e.contains(":1: device 254,0 is not in the scenario (map it with device_map)"), "{e}");
    // A line of neither layout names the file, line and key.
    std::fs::write(dir.join("partitions"), "vda 252:0\nvdb\n").unwrap();
    let e = scenario::load(scen.to_str().unwrap(), &text, None, &[]).unwrap_err().to_string();
    assert!(e.contains(&format!("workload.device_names: {}:2: 'vdb' is neither", dir.join("partitions").display())), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_plugged_submission_replays_as_one_although_its_times_differ() {
    // A real trace stamps each bio of one plugged submission with its own
    // time: the plug ('P', traced when the first request enters it) follows
    // the first bio, and the submission ends at the unplug. The three bios
    // queued before the unplug are one submission, replayed at the first
    // one's time (0) inside a plug: 8 + 8 merges into the request at 0
    // (back merge in the plug), so two requests, 0 + 16 and 64 + 8. The bio
    // after the unplug is a submission of its own, at 100 µs.
    let dir = tmp("plugged");
    let trace = "\
  8,0    0        1     0.000000000  4242  Q   W 0 + 8 [fio]
  8,0    0        2     0.000001000  4242  G   W 0 + 8 [fio]
  8,0    0        3     0.000001500  4242  P   N [fio]
  8,0    0        4     0.000002000  4242  Q   W 8 + 8 [fio]
  8,0    0        5     0.000003000  4242  M   W 8 + 8 [fio]
  8,0    0        6     0.000004000  4242  Q   W 64 + 8 [fio]
  8,0    0        7     0.000005000  4242  G   W 64 + 8 [fio]
  8,0    0        8     0.000006000  4242  U   N [fio] 2
  8,0    0        9     0.000007000  4242  D   W 0 + 16 [fio]
  8,0    0       10     0.000008000  4242  D   W 64 + 8 [fio]
  8,0    0       11     0.000100000  4242  Q   W 128 + 8 [fio]
";
    let (_, ev) = replay_events(&dir, PARTITIONED, "", trace);
    let on = |a| ev.iter().filter(|e| e.action == a).map(|e| (e.time, e.sector, e.sectors())).collect::<Vec<_>>();
    use blkstack::trace::Action;
    assert_eq!(on(Action::Queue), [(0, 0, 8), (0, 8, 8), (0, 64, 8), (100_000, 128, 8)]);
    assert_eq!(on(Action::Plug).iter().filter(|p| p.0 == 0).count(), 1, "one plug for the three bios");
    let issued: Vec<(u64, u32)> = on(Action::Issue).into_iter().map(|x| (x.1, x.2)).collect();
    assert_eq!(issued, [(0, 16), (64, 8), (128, 8)]);
    std::fs::remove_dir_all(&dir).unwrap();
}
