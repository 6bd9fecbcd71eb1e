//! Stacked-device scenarios mdadm, dmsetup or the kernel would refuse:
//! each is one error naming the file, the line and the key.

use blkstack::scenario::load;

const DISKS: &str = r#"kernel = "6.12"
[disks.sda]
kind = "sata"
size = "64MiB"
[disks.sda.partitions.sda1]
start = 2048
size = "32MiB"
[disks.sdb]
kind = "sata"
size = "64MiB"
[disks.sdc]
kind = "sata"
size = "128MiB"
"#;

/// The error for DISKS followed by `rest` (lines of `rest` start at 14).
fn err(rest: &str) -> String {
    load("s.toml", &format!("{DISKS}{rest}"), None, &[]).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn members_must_exist_and_not_cycle() {
    let e = err("[md.md0]\nlevel = 1\nmembers = [\"sda\", \"sdx\"]\n");
    assert_eq!(e, "s.toml:16: md.md0.members: 'sdx' is not a scenario device (a disk, partition, md array or dm device)");
    let e = err("[md.md0]\nlevel = 1\nmembers = [\"md1\", \"sdb\"]\n[md.md1]\nlevel = 1\nmembers = [\"md0\", \"sdc\"]\n");
    assert_eq!(e, "s.toml:16: md.md0.members: 'md1' cannot be built before md0: stacked devices may not form a cycle");
    let e = err("[md.md0]\nlevel = 1\nmembers = []\n");
    assert_eq!(e, "s.toml:16: md.md0.members: an array needs at least one member");
}

#[test]
fn a_device_belongs_to_one_array() {
    let e = err("[md.md0]\nlevel = 1\nmembers = [\"sdb\", \"sdb\"]\n");
    assert_eq!(e, "s.toml:16: md.md0.members: sdb is already used by md0");
    let e = err("[md.md0]\nlevel = 1\nmembers = [\"sda1\", \"sdb\"]\n[md.md1]\nlevel = 1\nmembers = [\"sda\", \"sdc\"]\n");
    assert_eq!(e, "s.toml:19: md.md1.members: sda overlaps sda1, which md0 already uses");
    // dm devices share theirs (LVM maps several areas of one disk), but not with md.
    assert!(load("s.toml", &format!("{DISKS}[dm.a]\ntable = \"0 1024 linear /dev/sdb 0\"\n[dm.b]\ntable = \"0 1024 linear /dev/sdb 1024\"\n"), None, &[]).is_ok());
    let e = err("[dm.a]\ntable = \"0 1024 linear /dev/sdb 0\"\n[md.md0]\nlevel = 1\nmembers = [\"sdb\"]\n");
    assert_eq!(e, "s.toml:18: md.md0.members: sdb is already used by a dm device");
}

#[test]
fn level_chunk_and_layout_are_checked() {
    assert_eq!(err("[md.md0]\nlevel = 3\nmembers = [\"sdb\"]\n"), "s.toml:15: md.md0.level: not a modelled level (0, 1, 4, 5, 6 or 10)");
    assert!(err("[md.md0]\nlevel = 1\nchunk = \"64KiB\"\nmembers = [\"sdb\", \"sdc\"]\n").starts_with("s.toml:16: md.md0.chunk: raid1 has no chunk"));
    assert_eq!(err("[md.md0]\nlevel = 0\nchunk = \"3KiB\"\nmembers = [\"sdb\"]\n"), "s.toml:16: md.md0.chunk: 3072 bytes is not a positive multiple of 4 KiB");
    let e = err("[md.md0]\nlevel = 10\nlayout = \"x2\"\nmembers = [\"sdb\", \"sdc\"]\n");
    assert_eq!(e, "s.toml:16: md.md0.layout: 'x2' is not a raid10 layout (n2, f2, o2, n2f2, ... or the layout number)");
    // Three near copies on two members (raid10's setup_conf).
    let e = err("[md.md0]\nlevel = 10\nlayout = \"n3\"\nmembers = [\"sdb\", \"sdc\"]\n");
    assert_eq!(e, "s.toml:16: md.md0.layout: raid10 layout 0x103 makes 3 copies; it needs 2 to 2 (the member count)");
    // raid5 with a raid6 layout; raid6 with three members.
    assert!(err("[md.md0]\nlevel = 5\nlayout = \"left-symmetric-6\"\nmembers = [\"sdb\", \"sdc\"]\n").starts_with("s.toml:16: md.md0.layout: layout 18 is not a raid5 algorithm"));
    assert!(err("[md.md0]\nlevel = 6\nmembers = [\"sda1\", \"sdb\", \"sdc\"]\n").starts_with("s.toml:14: md.md0.members: raid6 needs at least 4 members"));
    // raid0 over 64 MiB and 128 MiB members has two zones of two and one member: no layout needed;
    // with three sizes the second zone has two members and the kernel asks for a layout.
    assert!(load("s.toml", &format!("{DISKS}[md.md0]\nlevel = 0\nmembers = [\"sdb\", \"sdc\"]\n"), None, &[]).is_ok());
    let e = err("[md.md0]\nlevel = 0\nmembers = [\"sda1\", \"sdb\", \"sdc\"]\n");
    assert!(e.starts_with("s.toml:14: md.md0.layout: a raid0 array with 3 zones needs a layout"), "{e}");
}

#[test]
fn data_offset_and_names() {
    let e = err("[md.md0]\nlevel = 1\ndata_offset = 131072\nmembers = [\"sdb\", \"sdc\"]\n");
    assert_eq!(e, "s.toml:16: md.md0.data_offset: sector 131072 leaves no room for data on sdb (131072 sectors)");
    assert_eq!(err("[md.home]\nlevel = 1\nmembers = [\"sdb\"]\n"), "s.toml:14: md.home: md arrays are named mdN (md0, md1, ...): the name gives the device number 9:N");
    assert_eq!(err("[dm.sdb]\ntable = \"0 8 linear /dev/sdc 0\"\n"), "s.toml:14: dm.sdb: a device of this name already exists");
    assert_eq!(err("[md.md0]\nlevel = 1\nmember = [\"sdb\"]\n"), "s.toml:14: md.md0.members: missing: the member devices, e.g. [\"sda\", \"sdb\"]");
    let e = err("[md.md0]\nlevel = 1\nmembers = [\"sdb\"]\nmetadta = \"1.2\"\n");
    assert_eq!(e, "s.toml:17: md.md0.metadta: unknown key (did you mean 'metadata'?)");
    assert!(err("[md.md0]\nlevel = 1\nmetadata = \"2.0\"\nmembers = [\"sdb\"]\n").starts_with("s.toml:16: md.md0.metadata: unknown metadata '2.0'"));
}

#[test]
fn dm_tables_are_checked_line_by_line() {
    // `table = """` is on line 15; the newline after """ is not part of the table, so its line 2 is line 17.
    let e = err("[dm.lv]\ntable = \"\"\"\n0 1024 linear /dev/sdb 0\n1024 0 linear /dev/sdc 0\n\"\"\"\n");
    assert_eq!(e, "s.toml:17: dm.lv.table: line 2 of the table: length: zero-length target");
    let e = err("[dm.lv]\ntable = \"0 1024 linear /dev/sdz 0\"\n");
    assert_eq!(e, "s.toml:15: dm.lv.table: 'sdz' is not a scenario device (a disk, partition, md array or dm device)");
    // The target needs 1024 sectors from 131000 on a 131072-sector disk.
    let e = err("[dm.lv]\ntable = \"0 1024 linear /dev/sdb 131000\"\n");
    assert_eq!(e, "s.toml:15: dm.lv.table: line 1 of the table: sdb too small for target: start=131000, len=1024, dev_size=131072");
    // Devices by number: sda is 8:0, sda1 8:1, sdb 8:16.
    let sc = load("s.toml", &format!("{DISKS}[dm.lv]\ntable = \"0 1024 linear 8:1 0\\n1024 1024 linear 8:16 0\"\n"), None, &[]).unwrap();
    assert_eq!(sc.stacked[0].lower_devices(), vec!["sda1", "sdb"]);
}

#[test]
fn stacked_queue_writes_and_workload_bounds() {
    let e = err("[md.md0]\nlevel = 1\nmembers = [\"sdb\"]\n[md.md0.queue]\nmax_sectors_kb = 2\n");
    assert_eq!(e, "s.toml:18: md.md0.queue.max_sectors_kb: 2 is below the logical block size (512 bytes) or one page (4 KiB)");
    let e = err("[md.md0]\nlevel = 1\nmembers = [\"sdb\"]\n[md.md0.queue]\nscheduler = \"none\"\n");
    assert_eq!(e, "s.toml:18: md.md0.queue.scheduler: unknown key");
    // md0 on sdb (131072 sectors): mdadm's raid1 headroom halves from 262144 while ·1024 exceeds the
    // size, to 128; 24 + 8 (bitmap) + 128 = 160, rounded up to 2048. 131072 − 2048 = 129024, a whole
    // number of 64 KiB (raid1's rounding). A write at 129024 is past the end.
    let w = "[workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"write\"\nsector = 129024\nsize = 4096\n";
    let e = err(&format!("[md.md0]\nlevel = 1\nmembers = [\"sdb\"]\n{w}"));
    assert_eq!(e, "s.toml:22: workload.bio[0].sector: I/O beyond the end of md0: ends at sector 129032 of 129024");
}
