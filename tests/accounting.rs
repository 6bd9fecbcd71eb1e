//! /proc/diskstats and iostat figures of whole runs, recomputed by hand.

use std::sync::atomic::{AtomicUsize, Ordering};

use blkstack::run::{run_file, RunOptions};
use serde_json::Value;

static RUNS: AtomicUsize = AtomicUsize::new(0);

fn run(text: &str, interval: Option<f64>) -> Value {
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("blkstack-acct-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    let v = run_file(path.to_str().unwrap(), &RunOptions { interval, ..Default::default() }).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    v
}

/// Four synchronous 64 KiB direct reads on a disk whose every read takes
/// 10 ms + 64 KiB at 6,553,600 B/s (10 ms) = 20 ms.
const SLOW_READS: &str = r#"
kernel = "6.12"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.model]
read_latency_us = 10000
bandwidth = 6553600
[workload]
type = "dd"
if = "/dev/sda"
of = "/dev/null"
bs = "64k"
count = 4
iflag = "direct"
"#;

#[test]
fn diskstats_of_four_20ms_reads() {
    // The reads run back to back from 0 to 80 ms. Fields: 4 reads, no
    // merges, 4 × 128 = 512 sectors, 4 × 20 = 80 ms reading; nothing in
    // flight at the end; io_ticks: busy 0–80 ms = 20 jiffies at HZ 250 =
    // 80 ms; time_in_queue = the latencies' sum = 80 ms.
    let v = run(SLOW_READS, None);
    let sda = &v["devices"]["sda"];
    let f: Vec<u64> = sda["diskstats"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    assert_eq!(f, vec![4, 0, 512, 80, 0, 0, 0, 0, 0, 80, 80, 0, 0, 0, 0, 0, 0]);
    assert_eq!(v["sim_time_ns"], 80_000_000);
    // iostat over 0.08 s: r/s 4 / 0.08 = 50; rkB/s 256 KiB / 0.08 s = 3200;
    // r_await 80 ms / 4 = 20; rareq-sz 512 / 4 / 2 = 64 kB; aqu-sz
    // 80 ms / 0.08 s / 1000 = 1.00; %util 80 ms / 0.08 s / 10 = 100.
    let io = &sda["iostat"];
    for (k, want) in [("r/s", 50.0), ("rkB/s", 3200.0), ("r_await", 20.0), ("rareq-sz", 64.0), ("aqu-sz", 1.0), ("%util", 100.0), ("w/s", 0.0)] {
        let got = io[k].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{k}: {got} != {want}");
    }
    let text = v["reports"]["iostat"].as_str().unwrap();
    let row = text.lines().nth(1).unwrap();
    assert!(row.starts_with("sda             50.00   3200.00     0.00   0.00   20.00    64.00"), "{row}");
}

#[test]
fn interval_reports_split_the_run() {
    // Samples every 40 ms: the first interval holds reads 1 and 2, the
    // second reads 3 and 4 — 50 r/s and 100% busy in each.
    let v = run(SLOW_READS, Some(0.04));
    let iv = v["iostat_intervals"].as_array().unwrap();
    assert_eq!(iv.len(), 2);
    for i in iv {
        assert_eq!(i["devices"]["sda"]["r/s"], 50.0);
        assert_eq!(i["devices"]["sda"]["%util"], 100.0);
    }
}

#[test]
fn littles_law_on_a_closed_loop() {
    // 8 writes always in flight (iodepth 8, a new one as each completes)
    // on the 180K-IOPS NVMe: the device holds 8 requests at every moment, so
    // the queue length iostat derives, aqu-sz = time_in_queue / elapsed,
    // must be 8, and equal w/s × w_await (Little's law, L = λW). The disk is
    // never idle: %util 100, less the part of a jiffy (4 ms at HZ 250) the
    // kernel's io_ticks cannot see at the end of the 222 ms run.
    let bios = "[[workload.bio]]\nop = \"write\"\nsector = 0\nsize = 4096\nrepeat = 40000\nstride = 64\n";
    let text = format!(
        "[disks.nvme0n1]\nkind = \"nvme\"\nsize = \"8GiB\"\n[disks.nvme0n1.model]\npreset = \"nvme-180k\"\n[workload]\ntype = \"bios\"\ndevice = \"nvme0n1\"\niodepth = 8\n{bios}"
    );
    let v = run(&text, None);
    let io = &v["devices"]["nvme0n1"]["iostat"];
    let (wps, wawait, aqu, util) = (io["w/s"].as_f64().unwrap(), io["w_await"].as_f64().unwrap(), io["aqu-sz"].as_f64().unwrap(), io["%util"].as_f64().unwrap());
    assert!((aqu - wps * wawait / 1000.0).abs() / aqu < 0.01, "aqu {aqu} vs {wps} x {wawait}");
    assert!((aqu - 8.0).abs() < 0.1, "aqu-sz {aqu}");
    assert!(util > 98.0, "%util {util}");
}

#[test]
fn device_files_are_written_in_place() {
    // `--trace /dev/null` must write to the device, not rename a temporary
    // file over the device node.
    let dir = std::env::temp_dir().join(format!("blkstack-devnull-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, SLOW_READS).unwrap();
    let opts = RunOptions { trace: Some(blkstack::run::Output::File("/dev/null".into())), ..Default::default() };
    run_file(path.to_str().unwrap(), &opts).unwrap();
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    std::fs::remove_dir_all(&dir).unwrap();
}
