//! `[cgroups.NAME]` tables: io.max lines read as the kernel's tg_set_limit
//! reads them, weights stored, workloads and fio jobs placed in groups; bad
//! lines refused with the file, line and key.

use blkstack::scenario::cgroups::IoMax;
use blkstack::scenario::{load, WorkloadKind};

const BASE: &str = r#"kernel = "6.12"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.partitions.sda1]
start = 2048
size = "512MiB"
[disks.vda]
kind = "virtio"
size = "1GiB"
[cgroups.lim]
"io.max" = IOMAX
[workload]
type = "dd"
if = "/dev/vda"
of = "/dev/null"
bs = "1M"
count = 4
iflag = "direct"
cgroup = "lim"
"#;

fn with(io_max: &str) -> String {
    BASE.replace("IOMAX", io_max)
}

fn err(text: &str) -> String {
    match load("s.toml", text, None, &[]) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn io_max_lines_apply_in_turn_by_name_or_number() {
    // sda is the first sd disk (8:0), vda the first virtio disk (254:0).
    let s = load("s.toml", &with(r#"["vda rbps=10485760 wiops=1000", "8:0 riops=500", "254:0 wiops=max wbps=2097152"]"#), None, &[]).unwrap();
    let g = &s.cgroups[0];
    assert_eq!(g.name, "lim");
    assert_eq!(
        g.io_max,
        vec![
            IoMax { device: "vda".into(), bps: [10485760, 2097152], iops: [u32::MAX, u32::MAX] },
            IoMax { device: "sda".into(), bps: [u64::MAX; 2], iops: [500, u32::MAX] },
        ]
    );
    assert_eq!(s.workload.cgroup, 1);
}

#[test]
fn weights_are_stored() {
    let t = with(r#""vda riops=100""#).replace("[workload]", "\"io.bfq.weight\" = 200\n\"io.weight\" = [\"default 50\", \"sda 300\"]\n[workload]");
    let s = load("s.toml", &t, None, &[]).unwrap();
    let g = &s.cgroups[0];
    assert_eq!(g.bfq_weight.as_ref().unwrap().default, 200);
    let w = g.io_weight.as_ref().unwrap();
    assert_eq!((w.default, w.devices.clone()), (50, vec![("sda".to_string(), 300)]));
}

#[test]
fn bad_io_max_lines_name_the_line_and_key() {
    assert_eq!(err(&with(r#""vdz rbps=1000""#)), "s.toml:12: cgroups.lim.io.max: 'vdz rbps=1000': 'vdz' is not a scenario device (sda, sda1, vda)");
    let e = err(&with(r#""8:1 rbps=1000""#));
    assert!(e.starts_with("s.toml:12: cgroups.lim.io.max: '8:1 rbps=1000': sda1 is a partition"), "{e}");
    let e = err(&with(r#""9:9 rbps=1000""#));
    assert!(e.contains("9:9 is no scenario device (ENODEV)"), "{e}");
    let e = err(&with(r#"["vda rbps=1000", "vda rbs=5"]"#));
    assert!(e.starts_with("s.toml:12: cgroups.lim.io.max: 'vda rbs=5': 'rbs' is not an io.max key"), "{e}");
    assert!(err(&with(r#""vda rbps=0""#)).contains("ERANGE"));
    assert!(err(&with(r#""vda wbps=10M""#)).contains("EINVAL"));
    // 6.x refuses 1 ('val > 1'); 7.x takes it.
    assert!(err(&with(r#""vda riops=1""#)).contains("below 2"));
    load("s.toml", &with(r#""vda riops=1""#).replace("kernel = \"6.12\"", "kernel = \"7.2\""), None, &[]).unwrap();
}

#[test]
fn unknown_groups_and_files_are_refused() {
    let e = err(&with(r#""vda rbps=1000""#).replace("cgroup = \"lim\"", "cgroup = \"other\""));
    assert_eq!(e, "s.toml:20: workload.cgroup: 'other' is not a [cgroups] group (lim)");
    let e = err(&with(r#""vda rbps=1000""#).replace("[workload]", "\"io.min\" = \"vda rbps=1\"\n[workload]"));
    assert!(e.starts_with("s.toml:13: cgroups.lim.io.min: unknown key"), "{e}");
}

#[test]
fn fio_jobs_take_their_own_cgroup() {
    let t = with(r#""vda riops=100""#).replace(
        "[workload]\ntype = \"dd\"\nif = \"/dev/vda\"\nof = \"/dev/null\"\nbs = \"1M\"\ncount = 4\niflag = \"direct\"\ncgroup = \"lim\"\n",
        "[cgroups.other]\n[workload]\ntype = \"fio\"\ncgroup = \"other\"\njob = \"\"\"\n[a]\nfilename=vda\nrw=read\ndirect=1\nsize=1M\ncgroup=lim\n[b]\nfilename=vda\nrw=read\ndirect=1\nsize=1M\n\"\"\"\n",
    );
    let s = load("s.toml", &t, None, &[]).unwrap();
    let WorkloadKind::Jobs(jobs) = &s.workload.kind else { panic!("fio jobs") };
    assert_eq!(jobs.iter().map(|j| j.cgroup).collect::<Vec<_>>(), [1, 2]);
}
