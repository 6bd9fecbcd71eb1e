//! Bad scenarios are refused before anything runs, with one line naming the
//! file, the line and the key.

use blkstack::scenario::load;

const GOOD: &str = r#"kernel = "6.12"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.queue]
logical_block_size = 512
max_sectors_kb = 128
[workload]
type = "dd"
if = "/dev/sda"
of = "/dev/null"
bs = "1M"
count = 4
iflag = "direct"
"#;

fn err(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match load("s.toml", text, None, &sets) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_scenario_loads() {
    load("s.toml", GOOD, None, &[]).unwrap();
}

#[test]
fn malformed_toml() {
    let e = err(&GOOD.replace("count = 4", "count = = 4"), &[]);
    assert!(e.starts_with("s.toml:13: invalid TOML"), "{e}");
}

#[test]
fn unknown_key_with_suggestion() {
    let e = err(&GOOD.replace("max_sectors_kb = 128", "max_sector_kb = 128"), &[]);
    assert_eq!(e, "s.toml:7: disks.sda.queue.max_sector_kb: unknown key (did you mean 'max_sectors_kb'?)");
}

#[test]
fn wrong_type() {
    let e = err(&GOOD.replace("max_sectors_kb = 128", "max_sectors_kb = \"big\""), &[]);
    assert_eq!(e, "s.toml:7: disks.sda.queue.max_sectors_kb: expected a non-negative integer, found a string");
}

#[test]
fn max_sectors_kb_below_logical_block_size() {
    let t = GOOD.replace("logical_block_size = 512", "logical_block_size = 4096").replace("max_sectors_kb = 128", "max_sectors_kb = 2");
    let e = err(&t, &[]);
    assert_eq!(e, "s.toml:7: disks.sda.queue.max_sectors_kb: 2 is below the logical block size (4096 bytes) or one page (4 KiB)");
}

#[test]
fn non_power_of_two_block_size() {
    let e = err(&GOOD.replace("logical_block_size = 512", "logical_block_size = 1000"), &[]);
    assert_eq!(e, "s.toml:6: disks.sda.queue.logical_block_size: 1000 is not a power of two between 512 and 4096");
}

#[test]
fn max_sectors_kb_above_hw_in_61_only() {
    let t = GOOD.replace("max_sectors_kb = 128", "max_hw_sectors_kb = 64\nmax_sectors_kb = 128");
    let e = err(&t, &["kernel=6.1"]);
    assert!(e.contains("disks.sda.queue.max_sectors_kb: 128 exceeds max_hw_sectors_kb (64)"), "{e}");
    load("s.toml", &t, None, &[]).expect("6.12 clamps instead");
}

#[test]
fn io_beyond_device_end() {
    let e = err(&GOOD.replace("count = 4", "count = 2048"), &[]);
    assert_eq!(
        e,
        "s.toml:13: workload.count: dd would read 2147483648 bytes from offset 0 but sda ends at 1073741824: I/O beyond the end of the device"
    );
}

#[test]
fn unaligned_direct_io() {
    let e = err(&GOOD.replace("bs = \"1M\"", "bs = 1000"), &[]);
    assert_eq!(e, "s.toml:12: workload.bs: 1000 is not a multiple of sda's logical block size (512): O_DIRECT fails with EINVAL");
}

#[test]
fn buffered_dd_is_refused_clearly() {
    let e = err(&GOOD.replace("iflag = \"direct\"\n", ""), &[]);
    // Buffered writes go through the page cache; buffered reads are not modelled.
    assert!(e.contains("workload.iflag: buffered reads through the page cache are not modelled: add iflag=direct"), "{e}");
}

#[test]
fn unknown_set_key_and_bad_set_syntax() {
    let e = err(GOOD, &["disks.sda.queue.max_sectorz_kb=64"]);
    assert_eq!(e, "s.toml: --set disks.sda.queue.max_sectorz_kb: unknown key (did you mean 'max_sectors_kb'?)");
    let e = err(GOOD, &["workload.count"]);
    assert_eq!(e, "s.toml: --set workload.count: expected key=value");
    let e = err(GOOD, &["behaviour.split_remainder=middle"]);
    assert_eq!(e, "s.toml: --set behaviour.split_remainder: 'middle' is not one of tail|head");
}

#[test]
fn set_overrides_a_value() {
    let sc = load("s.toml", GOOD, None, &["disks.sda.queue.max_sectors_kb=64".into(), "behaviour.split_remainder=head".into()]).unwrap();
    assert_eq!(sc.disks[0].queue.limits.max_sectors, 128);
    assert_eq!(sc.beh.split_remainder, blkstack::profile::SplitRemainder::Head);
}

#[test]
fn unknown_kernel_and_kind() {
    let e = err(&GOOD.replace("kernel = \"6.12\"", "kernel = \"5.99\""), &[]);
    assert_eq!(e, "s.toml:1: kernel: unknown kernel profile '5.99' (known: 5.8, 5.10, 5.13, 6.1, 6.12, 6.15, 7.2)");
    let e = err(&GOOD.replace("kind = \"sata\"", "kind = \"floppy\""), &[]);
    assert!(e.starts_with("s.toml:3: disks.sda.kind: unknown kind 'floppy'"), "{e}");
}

#[test]
fn explicit_bio_beyond_end_and_unaligned() {
    let base = r#"[disks.sda]
kind = "sata"
size = "1MiB"
[workload]
type = "bios"
device = "sda"
[[workload.bio]]
op = "write"
sector = SECTOR
size = "SIZE"
"#;
    let e = err(&base.replace("SECTOR", "2040").replace("SIZE", "8KiB"), &[]);
    assert_eq!(e, "s.toml:9: workload.bio[0].sector: I/O beyond the end of sda: ends at sector 2056 of 2048");
    let e = err(&base.replace("SECTOR", "0").replace("SIZE", "1000"), &[]);
    assert!(e.starts_with("s.toml:10: workload.bio[0].size: sector 0 + 1000 bytes is not aligned"), "{e}");
}

#[test]
fn partition_past_disk_end() {
    let t = GOOD.replace("[workload]", "[disks.sda.partitions.sda1]\nstart = 2048\nsize = \"1GiB\"\n[workload]");
    let e = err(&t, &[]);
    assert!(e.contains("disks.sda.partitions.sda1.size: the partition ends at sector 2099200 beyond the disk's 2097152"), "{e}");
}

#[test]
fn kernel_option_overrides_the_file() {
    let sc = load("s.toml", GOOD, Some("7.2"), &[]).unwrap();
    assert_eq!(sc.profile.name, "7.2");
    let e = load("s.toml", GOOD, Some("4.4"), &[]).unwrap_err().to_string();
    assert_eq!(e, "--kernel: unknown kernel profile '4.4' (known: 5.8, 5.10, 5.13, 6.1, 6.12, 6.15, 7.2)");
}

/// GOOD with a `[disks.sda.model]` table holding `body` (from line 16).
fn with_model(body: &str) -> String {
    format!("{GOOD}[disks.sda.model]\n{body}\n")
}

#[test]
fn bad_service_model_values_name_the_key() {
    let e = err(&with_model("read_latency_us = -5"), &[]);
    assert!(e.starts_with("s.toml:16: disks.sda.model.read_latency_us: -5 is negative"), "{e}");
    let e = err(&with_model("streams = 100"), &[]);
    assert!(e.starts_with("s.toml:16: disks.sda.model.streams: 100 streams: at most 64 are tracked"), "{e}");
    let e = err(&with_model("media_write_bandwidth = 0"), &[]);
    assert!(e.starts_with("s.toml:16: disks.sda.model.media_write_bandwidth: must be positive"), "{e}");
    // Rotating-disk mechanics on an SSD preset.
    let e = err(&with_model("track_readahead = \"1MiB\""), &[]);
    assert!(e.contains("disks.sda.model.track_readahead: only for rotating disks"), "{e}");
    // A seek curve needs all five figures and a cylinder count.
    let e = err(&with_model("preset = \"hdd-7200\"\nseek_curve = { short_ms = 1, short_sqrt_ms = 0.1 }"), &[]);
    assert!(e.contains("disks.sda.model.seek_curve.boundary_cyl: missing"), "{e}");
    let curve = "seek_curve = { short_ms = 1, short_sqrt_ms = 0.1, boundary_cyl = 100, long_ms = 5, long_per_cyl_ms = 0.01 }";
    let e = err(&with_model(&format!("preset = \"hdd-7200\"\n{curve}")), &[]);
    assert!(e.contains("disks.sda.model.seek_curve: a seek curve counts cylinders: set cylinders too"), "{e}");
    load("s.toml", &with_model(&format!("preset = \"hdd-7200\"\ncylinders = 1000\n{curve}")), None, &[]).unwrap();
}

#[test]
fn old_model_keys_still_parse() {
    let body = "read_latency_us = 10\nwrite_latency_us = 5\nbandwidth = \"1GB\"\niops = 0\nparallelism = 4\ncommand_overhead_us = 80\nflush_latency_us = 100";
    load("s.toml", &with_model(body), None, &[]).unwrap();
}
