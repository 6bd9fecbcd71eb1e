//! `run --json` shows md and dm geometry (docs/reports.md): values worked
//! out by hand from mdadm's and the kernel's rules (working in comments).

use serde_json::{json, Value};

/// The JSON summary of a scenario run with one 4 KiB read of `target`.
fn summary(stack: &str, disks: &[&str], target: &str) -> Value {
    let mut text = String::from("kernel = \"6.12\"\n");
    for d in disks {
        text += &format!("[disks.{d}]\nkind = \"sata\"\nsize = \"1GiB\"\n");
    }
    text += stack;
    text += &format!("[workload]\ntype = \"bios\"\ndevice = \"{target}\"\n[[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"4KiB\"\n");
    let sc = blkstack::scenario::load("geometry.toml", &text, None, &[]).unwrap();
    let mut e = sc.build();
    let st = e.run();
    blkstack::run::summary(&sc, &e, &st)
}

const EIGHT: [&str; 8] = ["sda", "sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh"];

#[test]
fn raid5_of_eight_disks_with_64k_chunks() {
    // mdadm ≥ 4.1, metadata 1.2, members of 1 GiB = 2097152 sectors, chunk
    // 64 KiB (two chunks = 256 sectors):
    //   bitmap space: 2097152 - 8 is not above 8 GiB → 4 KiB = 8 sectors;
    //   headroom 262144 halves while headroom·1024 > 2097152 (and half ≥ 256):
    //   262144 → 131072 → ... → 4096 → 2048 (2048·1024 = 2097152, stop);
    //   data offset 24 + 8 + 2048 = 2080 → rounded up to a MiB: 4096 sectors.
    //   room 2097152 - 4096 = 2093056 = 16352 chunks of 128: component 2093056.
    //   array: 7 data disks × 2093056 = 14651392 sectors.
    let v = summary("[md.md0]\nlevel = 5\nchunk = \"64KiB\"\nmembers = [\"sda\", \"sdb\", \"sdc\", \"sdd\", \"sde\", \"sdf\", \"sdg\", \"sdh\"]\n", &EIGHT, "md0");
    let md0 = &v["devices"]["md0"];
    assert_eq!(md0["size_bytes"], json!(14651392u64 * 512));
    let members: Vec<Value> =
        EIGHT.iter().enumerate().map(|(i, d)| json!({"device": d, "role": i, "data_offset": 4096, "data_sectors": 2093056})).collect();
    assert_eq!(
        md0["md"],
        json!({"level": "raid5", "layout": "left-symmetric", "layout_value": 2, "chunk_bytes": 65536, "raid_disks": 8,
               "component_sectors": 2093056, "members": members})
    );
    assert!(v["devices"]["sda"].get("md").is_none(), "only the array carries md geometry");
}

#[test]
fn raid10_offset_layout_name_and_word() {
    // o2: near 1, far 2, offset → 1 | 2 << 8 | 1 << 16 = 66049. Members as
    // above (data offset 4096, room 2093056); calc_sectors: 2093056/128 =
    // 16352 chunks / 2 far × 4 disks = 32704 array chunks, × 2 copies / 4
    // disks = 16352 chunks per member: dev_sectors 2093056.
    let v = summary("[md.md0]\nlevel = 10\nlayout = \"o2\"\nchunk = \"64KiB\"\nmembers = [\"sda\", \"sdb\", \"sdc\", \"sdd\"]\n", &EIGHT[..4], "md0");
    let md = &v["devices"]["md0"]["md"];
    assert_eq!((md["level"].as_str(), md["layout"].as_str(), md["layout_value"].as_u64()), (Some("raid10"), Some("o2"), Some(66049)));
    assert_eq!((md["component_sectors"].as_u64(), md["raid_disks"].as_u64()), (Some(2093056), Some(4)));
    assert_eq!(md["members"][3], json!({"device": "sdd", "role": 3, "data_offset": 4096, "data_sectors": 2093056}));
}

#[test]
fn raid1_has_no_chunk_or_layout() {
    // raid1: no chunk, so the headroom only follows the 0.1% rule: 2048
    // sectors as above, data offset 4096; room 2093056 rounded down to 64 KiB
    // (128 sectors) is itself.
    let v = summary("[md.md0]\nlevel = 1\nmembers = [\"sda\", \"sdb\"]\n", &EIGHT[..2], "md0");
    let md = &v["devices"]["md0"]["md"];
    assert_eq!((md["layout"].clone(), md["chunk_bytes"].as_u64()), (Value::Null, Some(0)));
    assert_eq!(md["component_sectors"].as_u64(), Some(2093056));
}

#[test]
fn dm_table_with_linear_and_striped_targets() {
    // As `dmsetup table` prints it, device names resolved to the scenario's.
    let table = "[dm.vg]\ntable = \"\"\"\n0 4096 striped 2 128 /dev/sdb 0 /dev/sdc 2048\n4096 1024 linear /dev/sda 8\n\"\"\"\n";
    let v = summary(table, &EIGHT[..3], "vg");
    assert_eq!(
        v["devices"]["vg"]["dm"],
        json!({"table": [
            {"start": 0, "length": 4096, "target": "striped", "stripes": 2, "chunk_sectors": 128,
             "devices": [{"device": "sdb", "offset": 0}, {"device": "sdc", "offset": 2048}]},
            {"start": 4096, "length": 1024, "target": "linear", "device": "sda", "offset": 8},
        ]})
    );
}
